import sys

from cairn.server.cli.app import main

sys.exit(main())
