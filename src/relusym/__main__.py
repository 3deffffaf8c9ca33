import sys

from relusym.cli import script

sys.exit(script())
