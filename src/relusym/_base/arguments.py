"""The argparse parser of relusym's command lines: a usage error is one sentence on standard error and exit 2, as
every other refusal of the command line."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["OneLineArgumentParser", "one_line", "progress_flag"]


def one_line(text: str) -> str:
    """``text`` on one line (whitespace runs become one space), at most 600 characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= 600 else line[:599] + "…"


def progress_flag(args: argparse.Namespace) -> bool | None:
    """The ``progress=`` of a command's options: ``False`` with ``--quiet``; else ``None`` (a bar only when
    stderr is a terminal)."""
    return False if getattr(args, "quiet", False) else None


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse with usage errors as one sentence on stderr (exit 2), like every other refusal of relusym."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")
