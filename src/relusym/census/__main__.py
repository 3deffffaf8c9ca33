"""``python -m relusym.census``: the same command as ``relusym census`` (the sub-command of the one parser, with
its global flags, its error path and its exit codes)."""

from __future__ import annotations

import sys

from relusym.cli import main

__all__: list[str] = []

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(["census", *sys.argv[1:]]))
