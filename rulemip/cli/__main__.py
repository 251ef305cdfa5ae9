import sys

from rulemip.cli import main

sys.exit(main())
