"""``relusym census``: a sub-command of the one parser, with the options of :mod:`relusym.census._cli`."""

from __future__ import annotations

import argparse
from typing import Any

from relusym._cli.common import STREAMED, Result
from relusym.census._cli import HELP, add_arguments, run

__all__ = ["add_census_parser", "cmd_census"]


def add_census_parser(sub: Any) -> None:
    """Add ``census`` to the sub-commands ``sub`` of the ``relusym`` parser."""
    sp = sub.add_parser("census", help=HELP, description=HELP)
    add_arguments(sp)
    sp.set_defaults(func=cmd_census)


def cmd_census(args: argparse.Namespace) -> Result:
    """The census prints its own table or JSON object (its keys and its timings are its own)."""
    return STREAMED, "", run(args)
