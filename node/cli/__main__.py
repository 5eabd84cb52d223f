import sys

from node.cli import main

sys.exit(main())
