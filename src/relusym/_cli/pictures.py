"""``relusym plot`` and ``relusym report``: figures and HTML pages (matplotlib imported on use).

The window of ``plot``: ``--xlim LO:HI`` (m = 1), or ``--box``/``--domain LO:HI|FILE`` or ``--box-from NET`` (the
networks drawn on that box, m ≤ 2); by default :func:`relusym.plot.auto_domain` (where the function changes).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from relusym._cli.common import Result, check_output, display_path, domain_arg, is_deep, load, progress_flag
from relusym._exact.numbers import to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["cmd_plot", "cmd_report", "interval_arg", "plot_window"]

Window = tuple[tuple[float, float], ...]


def interval_arg(spec: str, name: str) -> tuple[float, float]:
    """``LO:HI`` (exact decimals or rationals, LO < HI, both finite in float64) as a float interval."""
    lo_s, sep, hi_s = spec.partition(":")
    bad = f"{name} must be LO:HI with LO < HI (e.g. {name}=-5:5), got {spec!r}"
    if not sep:
        raise InvalidNetworkError(bad)
    try:
        lo_q, hi_q = to_fraction(lo_s, name), to_fraction(hi_s, name)
        lo, hi = float(lo_q), float(hi_q)
    except (InvalidNetworkError, OverflowError, ZeroDivisionError):
        raise InvalidNetworkError(bad) from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi or not lo_q < hi_q:
        raise InvalidNetworkError(bad)
    return lo, hi


def plot_window(args: argparse.Namespace, m: int) -> Window | None:
    """The window asked for on the command line, or None for the default."""
    boxed = args.box is not None or args.box_from is not None
    if args.xlim is not None and boxed:
        raise InvalidNetworkError("give either --xlim or --box/--box-from, not both")
    if args.xlim is not None:
        if m != 1:
            raise InvalidNetworkError(
                f"--xlim sets the x range of the graph of an m = 1 network, and these networks have m = {m} inputs "
                "(give --box for m = 2)"
            )
        return (interval_arg(args.xlim, "--xlim"),)
    if not boxed:
        return None
    if m > 2:
        raise InvalidNetworkError(
            f"--box and --box-from draw networks of m ≤ 2 inputs on the box, and these have m = {m} (an m > 2 "
            "network is drawn on a plane through the origin)"
        )
    from relusym._bounded.domain import as_domain

    box = as_domain(domain_arg(args), m)
    try:
        window = tuple((float(lo), float(hi)) for lo, hi in zip(box.lo, box.hi, strict=True))  # type: ignore[union-attr]
    except OverflowError:
        window = ()
    if not all(math.isfinite(v) for iv in window for v in iv) or not all(lo < hi for lo, hi in window):
        raise InvalidNetworkError("the box to draw must have finite bounds that float64 tells apart")
    return window


def cmd_plot(args: argparse.Namespace) -> Result:
    from relusym.plot import plot_to_file

    check_output(args.output, args.net, args.net2)
    nets = [load(p, args) for p in ([args.net] + ([args.net2] if args.net2 else []))]
    window = plot_window(args, nets[0].m)
    labels = [display_path(args.net)] + ([display_path(args.net2)] if args.net2 else [])
    fig: Any
    if any(is_deep(n) for n in nets):
        from relusym._deep.mlp import as_mlp
        from relusym._plots.deep import deep_plot_to_file

        fig = deep_plot_to_file([as_mlp(n) for n in nets], args.output, labels, domain=window)
    else:
        fig = plot_to_file(nets, args.output, labels=labels, domain=window)
    ax = fig.axes[0]
    planar = nets[0].m == 2 or (nets[0].m > 2 and not any(is_deep(n) for n in nets))  # else a graph over a line
    drawn = [list(ax.get_xlim())] + ([list(ax.get_ylim())] if planar else [])
    return {"output": args.output, "window": drawn}, f"wrote {args.output}", 0


def cmd_report(args: argparse.Namespace) -> Result:
    from relusym.report import report_to_file

    check_output(args.output, args.net)
    net = load(args.net, args)
    notes = [n for info in getattr(args, "load_infos", []) for n in info.notes]
    if is_deep(net):
        from relusym._plots.deep import deep_report_to_file

        deep_report_to_file(net, args.output, name=display_path(args.net), notes=notes)
        return {"output": args.output}, f"wrote {args.output}", 0
    report_to_file(net, args.output, name=display_path(args.net), progress=progress_flag(args), notes=notes)
    return {"output": args.output}, f"wrote {args.output}", 0
