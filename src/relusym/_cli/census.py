"""``relusym census``: a sub-command of the one parser, with the options of :mod:`relusym.census._cli`.

The census package (its families, tables and their imports: about 50 ms) is imported only when the command line
is a census, or its help is shown: the sub-command's parser adds the census's options on its first use, so that
every other command starts without them."""

from __future__ import annotations

import argparse
from typing import Any

from relusym._cli.common import STREAMED, Result

__all__ = ["HELP", "add_census_parser", "cmd_census"]

HELP = "classify every network of a small integer grid and check the theorems"  # relusym.census._cli.HELP (tested)


class _CensusOptions(argparse.ArgumentParser):
    """A parser that adds the census's options (:func:`relusym.census._cli.add_arguments`) when it is first used:
    to parse, or to show its help or usage."""

    _census_ready = False

    def _census_options(self) -> None:
        if not self._census_ready:
            self._census_ready = True
            from relusym.census._cli import add_arguments

            add_arguments(self)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:  # how the sub-commands action parses
        self._census_options()
        return super().parse_known_args(*args, **kwargs)

    def format_help(self) -> str:
        self._census_options()
        return super().format_help()

    def format_usage(self) -> str:
        self._census_options()
        return super().format_usage()


_CLASSES: dict[type, type] = {}


def add_census_parser(sub: Any) -> None:
    """Add ``census`` to the sub-commands ``sub`` of the ``relusym`` parser (its options added on first use)."""
    sp = sub.add_parser("census", help=HELP, description=HELP)
    base = type(sp)
    if base not in _CLASSES:
        _CLASSES[base] = type(f"Census{base.__name__}", (_CensusOptions, base), {})
    sp.__class__ = _CLASSES[base]
    sp.set_defaults(func=cmd_census)


def cmd_census(args: argparse.Namespace) -> Result:
    """The census prints its own table or JSON object (its keys and its timings are its own)."""
    from relusym.census._cli import run

    return STREAMED, "", run(args)
