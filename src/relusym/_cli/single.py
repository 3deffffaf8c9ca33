"""The commands about one network: ``canon``, ``stabilizer``, ``fiber``."""

from __future__ import annotations

import argparse
import sys

from relusym._cli.common import STREAMED, Result, is_deep, load, net_shape, progress_flag

__all__ = ["cmd_canon", "cmd_stabilizer", "cmd_fiber"]


def cmd_canon(args: argparse.Namespace) -> Result:
    from relusym._base.display import rows_summary, vector
    from relusym._cli.canon_json import write_canon
    from relusym._core.nf_export import export_normal_form
    from relusym._core.normal_form import normal_form

    net = load(args.net, args)
    if is_deep(net):
        from relusym import _cli_deep

        return _cli_deep.canon(args, net)
    nf = normal_form(net)
    if args.output:
        export_normal_form(nf, args.output, net.n)
    if args.json:  # streamed: kinks, M and e only with --full or when small (see relusym._cli.canon_json)
        inputs = [info.to_dict() for info in getattr(args, "load_infos", [])]
        sys.stdout.flush()
        write_canon(nf, sys.stdout.buffer, net.n, full=True if args.full else None, inputs=inputs)
        sys.stdout.flush()
        return STREAMED, "", 0
    limit = None if args.all else 8
    lines = [
        f"normal form of {args.net} ({net_shape(net)})",
        f"{nf.N} kink class(es), each a hyperplane û = (α̂, β̂) with its kink κ:",
    ]
    shown = nf.K if args.all else nf.K_head(10)
    rows = [f"  û = {vector(u, limit=limit)}: κ = {vector(kap, limit=limit)}" for u, kap in shown]
    if len(shown) < nf.N:
        rows.append(f"… {nf.N - len(shown)} more (use --all or --json)")
    lines += rows
    m_rows = [f"  {vector(r, limit=limit)}" for r in nf.M]
    lines.append(f"M ({net.k}×{net.m}, the affine part's matrix):")
    lines += rows_summary(m_rows, limit=None if args.all else 5)
    lines.append(f"e = {vector(nf.e, limit=limit)}")
    if args.output:
        lines.append(f"wrote the full normal form to {args.output}")
    lines.append(f"digest {nf.digest()}")
    return {}, "\n".join(lines), 0


def cmd_stabilizer(args: argparse.Namespace) -> Result:
    from relusym._core.group import stabilizer

    net = load(args.net, args)
    st = stabilizer(net)
    return st.to_dict(), str(st), 0


def cmd_fiber(args: argparse.Namespace) -> Result:
    from relusym._fibre.fiber import fiber

    net = load(args.net, args)
    fb = fiber(net, budget=args.budget, progress=progress_flag(args))
    return fb.to_dict(timing=getattr(args, "timings", False)), fb.report(), 0
