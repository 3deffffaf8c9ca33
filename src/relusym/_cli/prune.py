"""``relusym prune``: the minimal network written exactly in the file's own format, or refused."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from relusym._cli.common import Result, check_output, domain_arg, is_deep, load, progress_flag
from relusym._core.network import Network

__all__ = ["cmd_prune"]


def cmd_prune(args: argparse.Namespace) -> Result:
    import numpy as np

    from relusym._base.display import decimal
    from relusym._fibre.width import minimal_network
    from relusym.errors import NotRepresentableError
    from relusym.io import format_of, save

    like_path = Path(args.net)
    # a model folder written to a name without a suffix (or to a folder): a folder like it
    folder_out = like_path.is_dir() and (not Path(args.output).suffix or Path(args.output).is_dir())
    if not folder_out:
        check_output(args.output, args.net)
    net = load(args.net, args)
    if like_path.is_dir():  # a model folder: its weights file is the layout to keep
        from relusym.io._folder_format import weights_file

        like_path = weights_file(like_path) or like_path
    fmt_in = format_of(like_path)
    fmt_out = fmt_in if folder_out else format_of(args.output, for_writing=True)
    like = str(like_path) if fmt_out.NAME == fmt_in.NAME and fmt_in.NAME != "folder" else None
    if folder_out:
        like = args.net
    boxed = getattr(args, "box", None) is not None or getattr(args, "box_from", None) is not None
    if is_deep(net) or boxed:
        from relusym import _cli_deep

        return _cli_deep.prune(args, net, like, domain_arg(args) if boxed else None)
    # float models: keep θ's own scales (the default of relusym.prune), so that single-neuron classes come back
    # as the same float weights; the writer then checks every entry against the file's dtype
    from relusym._base.progress import ticking

    with ticking(args.budget, desc="prune: width search", progress=progress_flag(args)):
        # an NNet file's decimals are its own scales too: kept, so that its rows come back as written
        own_scales = (net.is_float or fmt_out.NAME == "nnet") and fmt_out.NAME != "json"
        mn = minimal_network(net, budget=args.budget, keep_scales=own_scales)
    small = mn.network

    def write(network: Network) -> Any:
        return save(
            network,
            args.output,
            like=like,
            allow_rounding=args.allow_rounding,
            dtype=args.dtype,
            allow_unsafe_pickle=bool(getattr(args, "allow_unsafe_pickle", False)),
        )

    partial = None
    try:
        info = write(small)
    except NotRepresentableError as exc:
        # merges the file's float type cannot hold: the largest reduction it can, beside the full one (--dtype)
        if args.allow_rounding or args.dtype is not None or not net.is_float:
            raise
        from relusym._core.exact_reduction import exact_reduction

        dtype = np.result_type(net.V, net.A, net.b, net.c)
        partial = exact_reduction(net, dtype)
        if partial.network.n >= net.n:
            raise
        try:
            info = write(partial.network)
        except NotRepresentableError:
            raise exc from None
        text = (
            f"minimal width {small.n} (from n = {net.n}) needs merged weights that {dtype.name} cannot hold ({exc}); "
            f"wrote {args.output} ({info.format}) with the largest exact reduction in {dtype.name}: width "
            f"{partial.network.n}, exactly this network"
        )
        kept = [f"{i} and {j}" if i != j else f"{i} (constant)" for i, j in partial.unmerged]
        text += f"\nkept apart (their merge does not fit {dtype.name}): neurons {', '.join(kept)}"
        text += f"\nthe minimal network (width {small.n}): add --dtype float64"
        d = {
            "n": net.n,
            "width": partial.network.n,
            "minimal_width": small.n,
            "output": args.output,
            "canonical": False,
            "partial": partial.to_dict(),
            "write": info.to_dict(),
        }
        for note in info.notes:
            text += f"\nnote: {note}"
        return d, text, 0
    d = {"n": net.n, "width": small.n, "output": args.output, "canonical": mn.canonical, "write": info.to_dict()}
    text = f"minimal width {small.n} (from n = {net.n}); wrote {args.output} ({info.format})"
    if info.exact:
        text += ", exactly this network"
    else:
        text += (
            f"\nrounded {', '.join(info.rounded)} to the file's float type (--allow-rounding): the file holds a "
            f"nearby network, distance {decimal(info.distance or 0.0)} (largest entry change "
            f"{decimal(info.max_change or 0.0)})"
        )
    for note in info.notes:
        text += f"\nnote: {note}"
    if not mn.canonical and mn.note:
        text += f"\n(minimal, not the canonical minimal network: {mn.note})"
    return d, text, 0
