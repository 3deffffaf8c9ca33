"""``python -m relusym.census``: the census command line (relusym.census._cli)."""

from __future__ import annotations

import sys

from relusym.census._cli import main

__all__: list[str] = []

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
