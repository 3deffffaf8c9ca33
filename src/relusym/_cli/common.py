"""What every command shares: reading a network (with its provenance), refusing an output path, the box of
``--box``/``--box-from``, file names as printable text, counterexample lines, the progress flag."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from relusym._base.arguments import one_line, progress_flag
from relusym._core.network import Network
from relusym.errors import InvalidNetworkError

__all__ = [
    "Result",
    "STREAMED",
    "load",
    "check_output",
    "display_path",
    "net_shape",
    "domain_arg",
    "is_deep",
    "counterexample_lines",
    "one_line",
    "progress_flag",
]

Result = tuple[dict[str, Any], str, int]
STREAMED: dict[str, Any] = {}  # a command that wrote its JSON itself (streamed) returns this object


def load(path: str, args: argparse.Namespace | None = None) -> Any:
    """Read a network; what reading assumed (a file recording no activation, a classifier read as logits) is
    kept on ``args`` for the report and the JSON ``inputs`` key."""
    from relusym.io import format_of, load_with_info

    kwargs: dict[str, Any] = {}
    if args is not None and getattr(args, "allow_unsafe_pickle", False):
        kwargs["allow_unsafe_pickle"] = True
        if Path(path).is_file() and format_of(path).NAME == "sklearn":
            print(
                f"relusym: warning: --allow-unsafe-pickle unpickles {path}, which runs any code it contains",
                file=sys.stderr,
            )
    net, info = load_with_info(path, **kwargs)
    if args is not None:
        args.load_infos = [*getattr(args, "load_infos", []), info]
    return net


def check_output(output: str, *inputs: str | None) -> None:
    """Refuse an unusable output path before anything is read or computed (the full path is named)."""
    from relusym._base import fileio

    fileio.check_output(output, tuple(i for i in inputs if i))


def display_path(path: str) -> str:
    """A file name as printable text: bytes that are not UTF-8 (kept by the OS as surrogates) shown as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def net_shape(net: Network) -> str:
    return f"m = {net.m} input(s), n = {net.n} neuron(s), k = {net.k} output(s)"


def domain_arg(args: argparse.Namespace) -> Any:
    """The box of ``--box LO:HI`` / ``--box FILE`` (JSON {"lo": [...], "hi": [...]}) or ``--box-from NET``."""
    from relusym._bounded.domain import Box

    if args.box is not None and args.box_from is not None:
        raise InvalidNetworkError("give either --box or --box-from, not both")
    if args.box_from is not None:
        from relusym.io import input_box

        return input_box(args.box_from)
    spec = args.box
    if Path(spec).is_file():
        from relusym.io._json_format import parse

        d = parse(Path(spec).read_text(encoding="utf-8"), spec)
        if not isinstance(d, dict) or "lo" not in d or "hi" not in d:
            raise InvalidNetworkError(f"{spec}: a box file must be a JSON object with keys 'lo' and 'hi'")
        return Box(d["lo"], d["hi"])
    lo, sep, hi = spec.partition(":")
    if not sep:
        raise InvalidNetworkError(f"--box {spec!r} is neither LO:HI (e.g. 0:1) nor an existing JSON file")
    return Box(lo, hi)


def is_deep(net: Any) -> bool:
    """A network with two or more hidden layers (``load`` returns a Network for one)."""
    return not isinstance(net, Network)


def counterexample_lines(ce: Any, where: str = "") -> list[str]:
    """The human lines of a verified counterexample: the point and the two exact values there."""
    from relusym._base.display import vector

    return [
        f"counterexample x = {vector(ce.x)}{where}",
        f"  ρ(θ1)(x) = {vector(ce.y1)}",
        f"  ρ(θ2)(x) = {vector(ce.y2)}",
    ]
