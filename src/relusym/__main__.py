import sys

from relusym.cli import main

sys.exit(main())
