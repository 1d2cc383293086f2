import sys

from cairn.server.cli import main

sys.exit(main())
