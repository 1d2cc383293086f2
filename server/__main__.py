import sys

from cairn.server.cli.main import main

sys.exit(main())
