"""``relusym plot`` and ``relusym report``: figures and HTML pages (matplotlib imported on use)."""

from __future__ import annotations

import argparse

from relusym._cli.common import Result, check_output, display_path, is_deep, load, progress_flag

__all__ = ["cmd_plot", "cmd_report"]


def cmd_plot(args: argparse.Namespace) -> Result:
    from relusym.plot import plot_to_file

    check_output(args.output, args.net, args.net2)
    nets = [load(p, args) for p in ([args.net] + ([args.net2] if args.net2 else []))]
    if any(is_deep(n) for n in nets):
        from relusym._deep.mlp import as_mlp
        from relusym._plots.deep import deep_plot_to_file

        labels = [display_path(args.net)] + ([display_path(args.net2)] if args.net2 else [])
        deep_plot_to_file([as_mlp(n) for n in nets], args.output, labels)
        return {"output": args.output}, f"wrote {args.output}", 0
    plot_to_file(nets, args.output, labels=[display_path(args.net)] + ([display_path(args.net2)] if args.net2 else []))
    return {"output": args.output}, f"wrote {args.output}", 0


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
