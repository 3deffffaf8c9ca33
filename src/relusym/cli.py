"""The ``relusym`` command line (interfaces.md, "Command line").  It parses arguments, calls the API and renders
results; no mathematics lives here.  Exit codes: 0 yes/ok, 1 no (not equivalent, not in orbit), 2 unusable
input (nothing is written then), 3 internal error, 4 undecided (``equiv`` of deep networks)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from relusym import __version__
from relusym._base.display import exact_and_approx
from relusym._core.network import Network
from relusym.errors import BudgetExceededError, InvalidNetworkError, UnsupportedModelError

__all__ = ["main"]

Result = tuple[dict[str, Any], str, int]
_STREAMED: dict[str, Any] = {}  # a command that wrote its JSON itself (streamed) returns this object


def _load(path: str, args: argparse.Namespace | None = None) -> Any:
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


def _check_output(output: str, *inputs: str | None) -> None:
    """Refuse an unusable output path before anything is read or computed (the full path is named)."""
    from relusym._base.fileio import check_output

    check_output(output, tuple(i for i in inputs if i))


def _display(path: str) -> str:
    """A file name as printable text: bytes that are not UTF-8 (kept by the OS as surrogates) shown as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _fmt_net_shape(net: Network) -> str:
    return f"m = {net.m} input(s), n = {net.n} neuron(s), k = {net.k} output(s)"


# ----------------------------------------------------------------------------------------------------------
# commands


def cmd_canon(args: argparse.Namespace) -> Result:
    from relusym._base.display import rows_summary, vector
    from relusym._core.nf_export import export_normal_form, write_canon_json
    from relusym._core.normal_form import normal_form

    net = _load(args.net, args)
    if _deep(net):
        from relusym import _cli_deep

        return _cli_deep.canon(args, net)
    nf = normal_form(net)
    if args.output:
        export_normal_form(nf, args.output, net.n)
    if args.json:  # streamed: kinks, M and e only with --full or when small (see relusym._core.nf_export)
        inputs = [info.to_dict() for info in getattr(args, "load_infos", [])]
        write_canon_json(nf, sys.stdout.buffer, net.n, full=True if args.full else None, extra={"inputs": inputs})
        sys.stdout.flush()
        return _STREAMED, "", 0
    limit = None if args.all else 8
    lines = [
        f"normal form of {args.net} ({_fmt_net_shape(net)})",
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


def _domain_arg(args: argparse.Namespace) -> Any:
    """The box of ``--box LO:HI`` / ``--box FILE`` (JSON {"lo": [...], "hi": [...]}) or ``--box-from NET``."""
    from relusym._bounded.domain import Box

    if args.box is not None and args.box_from is not None:
        raise InvalidNetworkError("give either --box or --box-from, not both")
    if args.atol is not None or args.rtol is not None:
        raise InvalidNetworkError(
            "--box and --box-from decide exactly and do not combine with --atol or --rtol: drop the tolerance to "
            "decide equality on the box, or drop the box to compare within the tolerance everywhere"
        )
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


def _exact_box(args: argparse.Namespace) -> Any:
    """The box of ``--box``/``--box-from`` for the deep commands, which take ``--atol`` beside it (the
    verifiers' question |f1 − f2| ≤ atol on the box)."""
    return _domain_arg(argparse.Namespace(**{**vars(args), "atol": None, "rtol": None}))


def _cmd_equiv_domain(args: argparse.Namespace, net1: Network, net2: Network) -> Result:
    from relusym._bounded.equality import equivalent_on

    v = equivalent_on(net1, net2, _domain_arg(args))
    d = v.to_dict()
    d["mode"] = "domain"
    dom = v.domain
    where = f"on the box {dom!r}" if len(dom.lo) <= 6 else f"on a box in ℝ^{len(dom.lo)}"  # type: ignore[union-attr]
    lines = [f"{'EQUIVALENT' if v else 'NOT equivalent'} {where}: {v.reason}"]
    cert = v.certificate
    for side, name in ((0, args.net1), (1, args.net2)):
        lines.append(
            f"  {name}: {len(cert.crossing[side])} neuron(s) cross the box, {len(cert.affine[side])} are affine "
            f"on it, {len(cert.zero[side])} are zero on it"
        )
    if v.counterexample is not None:
        lines += _counterexample_lines(v.counterexample, " (inside the box)")
    return d, "\n".join(lines), 0 if v else 1


def _deep(net: Any) -> bool:
    """A network with two or more hidden layers (``load`` returns a Network for one)."""
    return not isinstance(net, Network)


def cmd_equiv(args: argparse.Namespace) -> Result:
    net1, net2 = _load(args.net1, args), _load(args.net2, args)
    boxed = getattr(args, "box", None) is not None or getattr(args, "box_from", None) is not None
    if _deep(net1) or _deep(net2):
        from relusym import _cli_deep

        return _cli_deep.equiv(args, net1, net2, _exact_box(args) if boxed else None)
    if boxed:
        return _cmd_equiv_domain(args, net1, net2)
    if args.atol is not None or args.rtol is not None:
        from relusym._tolerance.approx import equivalent_approx

        kw: dict[str, float] = {}
        if args.atol is not None:
            kw["atol"] = args.atol
        if args.rtol is not None:
            kw["rtol"] = args.rtol
        av = equivalent_approx(net1, net2, **kw)
        d = av.to_dict()
        d["equivalent"] = bool(av)
        d["mode"] = "tolerance"
        text = (
            f"{'equivalent' if av else 'NOT equivalent'} within tolerance "
            f"(largest kink mismatch {av.max_kink_mismatch:.3g}, affine mismatch {av.max_affine_mismatch:.3g}); "
            "tolerance equality is not transitive"
        )
        return d, text, 0 if av else 1
    from relusym._core.equivalence import equivalent

    v = equivalent(net1, net2)
    d = v.to_dict()
    d["mode"] = "exact"
    lines = [f"{'EQUIVALENT' if v else 'NOT equivalent'}: {v.reason}"]
    if v.flips:
        lines.append(
            f"hidden symmetry: flip the neurons {list(v.flips)} of {args.net1} "
            "(σ(t) − σ(−t) = t), then apply the symmetry below"
        )
    if v.witness is not None:
        w = v.witness
        if w.n <= 30:
            lines.append("symmetry h: neuron j of NET1 → slot π(j), scaled by d_j")
            for j, (p, s) in enumerate(zip(w.permutation, w.scales, strict=True)):
                lines.append(f"  {j} → {p}   d = {exact_and_approx(s)}")
        else:
            lines.append(f"symmetry h ∈ H_{w.n} found (use --json to see the permutation and scales)")
    if v.counterexample is not None:
        lines += _counterexample_lines(v.counterexample)
    return d, "\n".join(lines), 0 if v else 1


def _counterexample_lines(ce: Any, where: str = "") -> list[str]:
    """The human lines of a verified counterexample: the point and the two exact values there."""
    from relusym._base.display import vector

    return [
        f"counterexample x = {vector(ce.x)}{where}",
        f"  ρ(θ1)(x) = {vector(ce.y1)}",
        f"  ρ(θ2)(x) = {vector(ce.y2)}",
    ]


def cmd_orbit(args: argparse.Namespace) -> Result:
    from relusym._core.group import find_symmetry

    net1, net2 = _load(args.net1, args), _load(args.net2, args)
    if (net1.m, net1.k) != (net2.m, net2.k):
        raise InvalidNetworkError(
            f"the networks have different shapes: (m, k) = {(net1.m, net1.k)} against {(net2.m, net2.k)}"
        )
    if _deep(net1) or _deep(net2):
        from relusym import _cli_deep

        return _cli_deep.orbit(args, net1, net2)
    h = find_symmetry(net1, net2)
    d: dict[str, Any] = {"in_orbit": h is not None, "symmetry": h.to_dict() if h is not None else None}
    if h is None:
        why = "different widths" if net1.n != net2.n else "no h in H_n maps NET1 to NET2"
        return d, f"NOT in the same H_n-orbit ({why})", 1
    lines = ["in the same H_n-orbit: NET2 = h·NET1"]
    if h.n <= 30:
        for j, (p, s) in enumerate(zip(h.permutation, h.scales, strict=True)):
            lines.append(f"  {j} → {p}   d = {exact_and_approx(s)}")
    return d, "\n".join(lines), 0


def cmd_units(args: argparse.Namespace) -> Result:
    from relusym import _cli_deep

    if args.box is None and args.box_from is None:
        raise InvalidNetworkError("units needs a box: --box LO:HI, --box FILE or --box-from NET")
    return _cli_deep.units(args, _load(args.net, args), _exact_box(args))


def cmd_stabilizer(args: argparse.Namespace) -> Result:
    from relusym._core.group import stabilizer

    net = _load(args.net, args)
    st = stabilizer(net)
    return st.to_dict(), str(st), 0


def cmd_fiber(args: argparse.Namespace) -> Result:
    from relusym._fibre.fiber import fiber

    net = _load(args.net, args)
    fb = fiber(net, budget=args.budget, progress=_progress_flag(args))
    return fb.to_dict(timing=getattr(args, "timings", False)), fb.report(), 0


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
        _check_output(args.output, args.net)
    net = _load(args.net, args)
    if like_path.is_dir():  # a model folder: its weights file is the layout to keep
        from relusym.io._folder_format import weights_file

        like_path = weights_file(like_path) or like_path
    fmt_in = format_of(like_path)
    fmt_out = fmt_in if folder_out else format_of(args.output, for_writing=True)
    like = str(like_path) if fmt_out.NAME == fmt_in.NAME and fmt_in.NAME != "folder" else None
    if folder_out:
        like = args.net
    boxed = getattr(args, "box", None) is not None or getattr(args, "box_from", None) is not None
    if _deep(net) or boxed:
        from relusym import _cli_deep

        return _cli_deep.prune(args, net, like, _exact_box(args) if boxed else None)
    # float models: keep θ's own scales (the default of relusym.prune), so that single-neuron classes come back
    # as the same float weights; the writer then checks every entry against the file's dtype
    from relusym._base.progress import ticking

    with ticking(args.budget, desc="prune: width search", enabled=_progress_flag(args)):
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
            "width": partial.network.n,
            "minimal_width": small.n,
            "n": net.n,
            "output": args.output,
            "canonical": False,
            "partial": partial.to_dict(),
            "write": info.to_dict(),
        }
        for note in info.notes:
            text += f"\nnote: {note}"
        return d, text, 0
    d = {"width": small.n, "n": net.n, "output": args.output, "canonical": mn.canonical, "write": info.to_dict()}
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


def cmd_align(args: argparse.Namespace) -> Result:
    from relusym._tolerance.alignment import align

    net1, net2 = _load(args.net1, args), _load(args.net2, args)
    if _deep(net1) or _deep(net2):
        from relusym._api import align as align_any

        dal = align_any(net1, net2)
        worst = max(float(r.max(initial=0.0)) for r in dal.residuals)
        return dal.to_dict(), f"{dal} (largest residual {worst:.3g}; use --json for the permutations)", 0
    al = align(net1, net2, progress=_progress_flag(args))
    d = al.to_dict()
    text = (
        f"matched {al.matched_fraction:.2%} of the neurons; "
        f"largest residual {float(max(al.residuals, default=0.0)):.3g} (use --json for the permutation)"
    )
    return d, text, 0


def cmd_plot(args: argparse.Namespace) -> Result:
    from relusym.plot import plot_to_file

    _check_output(args.output, args.net, args.net2)
    nets = [_load(p, args) for p in ([args.net] + ([args.net2] if args.net2 else []))]
    if any(_deep(n) for n in nets):
        from relusym._deep.mlp import as_mlp
        from relusym._plots.deep import deep_plot_to_file

        labels = [_display(args.net)] + ([_display(args.net2)] if args.net2 else [])
        deep_plot_to_file([as_mlp(n) for n in nets], args.output, labels)
        return {"output": args.output}, f"wrote {args.output}", 0
    plot_to_file(nets, args.output, labels=[_display(args.net)] + ([_display(args.net2)] if args.net2 else []))
    return {"output": args.output}, f"wrote {args.output}", 0


def cmd_report(args: argparse.Namespace) -> Result:
    from relusym.report import report_to_file

    _check_output(args.output, args.net)
    net = _load(args.net, args)
    notes = [n for info in getattr(args, "load_infos", []) for n in info.notes]
    if _deep(net):
        from relusym._plots.deep import deep_report_to_file

        deep_report_to_file(net, args.output, name=_display(args.net), notes=notes)
        return {"output": args.output}, f"wrote {args.output}", 0
    report_to_file(net, args.output, name=_display(args.net), progress=_progress_flag(args), notes=notes)
    return {"output": args.output}, f"wrote {args.output}", 0


def _load_oracle(spec: str) -> Any:
    """``module:function`` (a module on the import path, or a .py file) to a callable."""
    import importlib
    import importlib.util

    mod_name, sep, fn_name = spec.rpartition(":")
    if not sep or not mod_name or not fn_name:
        raise InvalidNetworkError(f"--oracle must be MODULE:FUNCTION (or path/to/file.py:FUNCTION), got {spec!r}")
    if mod_name.endswith(".py"):
        path = Path(mod_name)
        if not path.is_file():
            raise InvalidNetworkError(f"--oracle: no such file {mod_name!r}")
        loader_spec = importlib.util.spec_from_file_location(path.stem, path)
        if loader_spec is None or loader_spec.loader is None:  # pragma: no cover - a .py file always has one
            raise InvalidNetworkError(f"--oracle: cannot import {mod_name!r}")
        module = importlib.util.module_from_spec(loader_spec)
        loader_spec.loader.exec_module(module)
    else:
        if "" not in sys.path:
            sys.path.insert(0, "")
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise InvalidNetworkError(f"--oracle: cannot import module {mod_name!r} ({exc})") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise InvalidNetworkError(f"--oracle: {mod_name!r} has no callable {fn_name!r}")
    return fn


def cmd_identify(args: argparse.Namespace) -> Result:
    from relusym._identify.identify import identify
    from relusym.io import save

    if args.inputs < 1 or args.outputs < 1:
        raise InvalidNetworkError("--inputs and --outputs must be positive integers")
    _check_output(args.output)
    oracle = _load_oracle(args.oracle)
    res = identify(
        oracle,
        args.inputs,
        args.outputs,
        exact=args.exact,
        budget=args.budget,
        max_queries=args.max_queries,
        rng=args.seed,
        progress=False if args.quiet else None,
        scale=args.scale,
    )
    save(res.network, args.output)
    d = res.to_dict()
    d["output"] = args.output
    return d, res.report() + f"\nwrote {args.output}", 0


# ----------------------------------------------------------------------------------------------------------
# relusym zoo (model zoos at scale; pyarrow and dask imported on use)


def _cmd_zoo(args: argparse.Namespace) -> Result:
    import time

    from relusym.zoo import scan_zoo

    if args.workers is not None and args.workers < 1:
        raise InvalidNetworkError(f"--workers must be at least 1, got {args.workers}")
    _check_output(args.output, args.source)
    t0 = time.monotonic()
    try:
        res = scan_zoo(
            args.source,
            args.output,
            workers=args.workers,
            scheduler=args.scheduler,
            dask_local=args.dask_local,
            atol=args.atol,
            rtol=args.rtol,
            fibre=not args.no_fibre,
            budget=args.budget,
            chunk_size=args.chunk_size,
            files_per_chunk=args.files_per_chunk,
            resume=args.resume,
            progress=False if args.quiet else None,
        )
    except KeyboardInterrupt:
        return {"interrupted": True}, "interrupted: the finished chunks are kept; rerun with --resume to go on", 130
    s = res.summary
    lines = [
        f"{s['networks']} network(s) from {args.source} in {time.monotonic() - t0:.1f} s: {s['ok']} ok, "
        f"{s['errors']} error(s), {s['distinct_functions']} distinct function(s)",
        f"exact duplicate groups (same function): {len(s['exact_duplicate_groups'])}",
    ]
    if s.get("skipped_files"):
        lines.insert(1, f"skipped {s['skipped_files']} file(s) that are not model files by their suffix")
    for g in s["exact_duplicate_groups"][:20]:
        shown = ", ".join(g["sources"][:6]) + (", ..." if g["size"] > 6 else "")
        lines.append(f"  group {g['group']} ({g['size']}): {shown}")
    if len(s["exact_duplicate_groups"]) > 20:
        lines.append(f"  … and {len(s['exact_duplicate_groups']) - 20} more groups (see the summary file)")
    tol = s["tolerance"]
    lines.append(
        f"near-duplicate groups (atol = {tol['atol']:g}, rtol = {tol['rtol']:g}; not transitive): "
        f"{len(s['near_duplicate_groups'])}"
    )
    for g in s["near_duplicate_groups"][:20]:
        shown = ", ".join(g["sources"][:6]) + (", ..." if g["size"] > 6 else "")
        lines.append(f"  cluster {g['cluster']} ({g['size']}, {g['distinct_digests']} functions): {shown}")
    if len(s["near_duplicate_groups"]) > 20:
        lines.append(f"  … and {len(s['near_duplicate_groups']) - 20} more clusters (see the summary file)")
    if s["fibre_types"] is not None:
        lines.append("fibre types: " + (", ".join(f"{c} {v}" for c, v in s["fibre_types"].items()) or "none"))
        lines.append("generic: " + (", ".join(f"{c} {v}" for c, v in s["generic"].items()) or "none"))
    lines.append("minimal widths: " + (", ".join(f"{w}: {v}" for w, v in s["widths"].items()) or "none"))
    for e in s["error_rows"][:20]:
        lines.append(f"  error {e['source']}: {e['error']}")
    if len(s["error_rows"]) > 20:
        lines.append(f"  … and {len(s['error_rows']) - 20} more error rows (see the table)")
    lines.append(f"wrote {res.output} and {res.summary_path}")
    return s, "\n".join(lines), 0


def _add_zoo_parser(add: Callable[[str, Callable[[argparse.Namespace], Result], str], argparse.ArgumentParser]) -> None:
    sp = add("zoo", _cmd_zoo, "digests, duplicate groups, near-duplicates, widths and fibre types of a model zoo")
    sp.add_argument("source", metavar="SOURCE", help="folder, stacked shard (.npz/.safetensors) or Parquet table")
    sp.add_argument("-o", "--output", required=True, metavar="OUT.parquet", help="the table to write")
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, metavar="N", help="a local process pool of N workers")
    where.add_argument("--dask-local", type=int, default=None, metavar="N", help="a Dask LocalCluster of N workers")
    where.add_argument("--scheduler", default=None, metavar="ADDR", help="an existing Dask scheduler (tcp://host:port)")
    sp.add_argument("--atol", type=float, default=0.0, help="near-duplicates: absolute tolerance (default 0)")
    sp.add_argument("--rtol", type=float, default=1e-9, help="near-duplicates: relative tolerance (default 1e-9)")
    sp.add_argument("--budget", type=float, default=1.0, help="seconds per network for the hard searches (default 1)")
    sp.add_argument("--no-fibre", action="store_true", help="skip the fibre analysis (generic, type, flips)")
    sp.add_argument("--chunk-size", type=int, default=4096, help="networks per task for shards and tables")
    sp.add_argument("--files-per-chunk", type=int, default=256, help="model files per task for folders")
    sp.add_argument("--resume", action="store_true", help="keep the finished chunks of an interrupted run")
    # --quiet comes with every command (see _add_edge_options)


# ----------------------------------------------------------------------------------------------------------


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse with usage errors as one sentence on stderr (exit 2), like every other refusal of relusym."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {_one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineArgumentParser(
        prog="relusym",
        description="Exact symmetries of ReLU networks: x ↦ V·σ(Ax + b) + c, and deep ones of any number of hidden "
        "layers. Networks are read from relusym JSON, NPZ, PyTorch, safetensors, ONNX, Keras, Flax, scikit-learn and "
        "NNet files and Hugging Face-style folders.",
    )
    p.add_argument("--version", action="version", version=f"relusym {__version__}")
    p.add_argument("--debug", action="store_true", help="print the traceback of any error (also after the command)")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no warnings (also after the command)")
    p.add_argument(
        "--limit",
        action="append",
        metavar="NAME=VALUE",
        help="change an input limit, e.g. --limit max_digits=5000 (see docs/reference/io.md; also RELUSYM_LIMITS)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], Result], help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print one JSON object instead of a report")
        _add_edge_options(sp)
        sp.set_defaults(func=fn)
        return sp

    sp = add("canon", cmd_canon, "the normal form NF = (K, M, e): a complete invariant of the function")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("--all", action="store_true", help="print every kink class and M in full")
    sp.add_argument("--full", action="store_true", help="with --json: include kinks, M and e however large")
    sp.add_argument(
        "-o", "--output", metavar="OUT", default=None, help="also write the full normal form (.json, .npz, .parquet)"
    )

    sp = add("equiv", cmd_equiv, "decide whether two networks compute the same function, with a certificate")
    sp.add_argument("net1", metavar="NET1")
    sp.add_argument("net2", metavar="NET2")
    sp.add_argument("--atol", type=float, default=None, help="tolerance mode: absolute tolerance")
    sp.add_argument("--rtol", type=float, default=None, help="tolerance mode: relative tolerance")
    sp.add_argument(
        "--box",
        default=None,
        metavar="LO:HI|FILE",
        help="decide equality on a box only: LO:HI for every coordinate (negative bounds too: --box -1:1), or a JSON "
        'file {"lo": [...], "hi": [...]}',
    )
    sp.add_argument("--box-from", default=None, metavar="NET", help="decide on the input box of an NNet file")
    sp.add_argument(
        "--budget", type=float, default=5.0, help="deep networks: seconds for the search for a difference (default 5)"
    )

    sp = add("orbit", cmd_orbit, "decide whether NET2 = h·NET1 for a permutation-and-positive-scaling h")
    sp.add_argument("net1", metavar="NET1")
    sp.add_argument("net2", metavar="NET2")

    sp = add("units", cmd_units, "every hidden unit's status on a box: dead, active or crossing, proved exactly")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("--box", default=None, metavar="LO:HI|FILE", help="the box (as for equiv)")
    sp.add_argument("--box-from", default=None, metavar="NET", help="the input box of an NNet file")
    sp.add_argument("--budget", type=float, default=10.0, help="seconds for the proofs (default 10)")

    sp = add("stabilizer", cmd_stabilizer, "the stabilizer of a network in H_n (Theorem 2)")
    sp.add_argument("net", metavar="NET")

    sp = add("fiber", cmd_fiber, "the fibre: generic or not, rigidity, hidden flips, strata, dimension, width")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("--budget", type=float, default=10.0, help="seconds for the hard searches (default 10)")

    sp = add("prune", cmd_prune, "write the canonical minimal network (fewest neurons, same function)")
    sp.add_argument("net", metavar="NET")
    sp.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output file; its suffix chooses the format (NET's own layout when the formats agree)",
    )
    sp.add_argument("--budget", type=float, default=10.0, help="seconds for the width search (default 10)")
    sp.add_argument(
        "--box",
        default=None,
        metavar="LO:HI|FILE",
        help="also remove what is provably dead on this box (and fold what is provably active): the written network "
        "equals NET on the box only",
    )
    sp.add_argument("--box-from", default=None, metavar="NET", help="the same on the input box of an NNet file")
    sp.add_argument(
        "--allow-rounding",
        action="store_true",
        help="write a float file even when the minimal network is not exactly representable (the output says "
        "how far the written network is)",
    )
    sp.add_argument(
        "--dtype",
        choices=("float16", "bfloat16", "float32", "float64"),
        default=None,
        help="write every array in this float type (float64 keeps a float16/bfloat16 model's pruned network exact)",
    )

    sp = add("align", cmd_align, "align a noisy, permuted, rescaled copy NET2 onto NET1")
    sp.add_argument("net1", metavar="NET1")
    sp.add_argument("net2", metavar="NET2")

    sp = add("plot", cmd_plot, "draw the network (m = 1 graph, m = 2 arrangement, m > 2 slice)")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("net2", metavar="NET2", nargs="?")
    sp.add_argument("-o", "--output", required=True, metavar="FIG", help="figure file (.png, .svg, .pdf)")

    sub.add_parser(
        "census",
        help="classify every network of a small integer grid and check the theorems (relusym census --help)",
        add_help=False,
    )

    sp = add("identify", cmd_identify, "recover a network of minimal width from queries to a black-box function")
    sp.add_argument("--oracle", required=True, metavar="MODULE:FUNCTION", help="the function to query (a batch "
                    "of float64 inputs (B, m) -> outputs (B, k); with --exact a list of tuples of Fractions -> "
                    "lists of k rationals)")  # fmt: skip
    sp.add_argument("--inputs", type=int, required=True, metavar="M", help="number of inputs m")
    sp.add_argument("--outputs", type=int, required=True, metavar="K", help="number of outputs k")
    sp.add_argument("-o", "--output", required=True, metavar="OUT", help="where to write the recovered network")
    sp.add_argument("--exact", action="store_true", help="the oracle is exact (rational in, rational out)")
    sp.add_argument("--budget", type=float, default=600.0, help="seconds (default 600)")
    sp.add_argument("--max-queries", type=int, default=None, help="a cap on oracle evaluations")
    sp.add_argument("--scale", type=float, default=1.0, help="size of the input region searched first (default 1)")
    sp.add_argument("--seed", type=int, default=0, help="seed of the random lines (default 0)")

    sp = add("report", cmd_report, "a self-contained HTML report: normal form, stabilizer, fibre, plots")
    sp.add_argument("net", metavar="NET")
    sp.add_argument("-o", "--output", required=True, metavar="HTML")

    _add_zoo_parser(add)
    return p


# ----------------------------------------------------------------------------------------------------------
# the one error path: input problems → one sentence, exit 2; anything else → "internal error", exit 3; a closed
# stdout → quiet exit with the command's code; Ctrl-C → quiet exit 130; SIGTERM → 143 (temporaries removed)

_GLOBAL_FLAGS = ("--debug", "--quiet")


def _split_globals(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Take ``--debug``, ``--quiet`` and ``--limit NAME=VALUE`` from anywhere before ``--`` (so that they work
    before or after the command, census included)."""
    opts: dict[str, Any] = {"debug": False, "quiet": False, "limits": []}
    rest: list[str] = []
    it = iter(range(len(argv)))
    for i in it:
        a = argv[i]
        if a == "--":
            rest.extend(argv[i:])
            break
        if a in _GLOBAL_FLAGS:
            opts[a[2:]] = True
        elif a == "--limit" and i + 1 < len(argv):
            opts["limits"].append(argv[i + 1])
            next(it, None)
        elif a.startswith("--limit="):
            opts["limits"].append(a.split("=", 1)[1])
        else:
            rest.append(a)
    return opts, rest


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= 600 else line[:599] + "…"


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    try:
        print(f"warning: {_one_line(str(message))}", file=sys.stderr)
    except (OSError, ValueError):
        pass


def _on_signal(signum: int, frame: Any) -> None:
    """SIGTERM/SIGINT: remove the temporary files of writes in progress, then exit at once, quietly.  Nothing is
    imported here: the signal may come while ``relusym._base.fileio`` itself is being imported (its functions not yet
    defined), and then no write has begun and there is nothing to remove."""
    remove = getattr(sys.modules.get(f"{__package__}._base.fileio"), "remove_temporaries", None)
    if remove is not None:
        remove()
    os._exit(128 + signum)


def _install_handlers(quiet: bool) -> Callable[[], None]:
    """Signal handlers, the one-line warning format and --quiet, for the duration of one main() call; returns
    the function that puts back what was there (main() may be called from a program or a test)."""
    import signal
    import warnings

    from relusym._base import progress as _progress

    saved: list[tuple[int, Any]] = []
    for sig, handler in (
        (signal.SIGTERM, _on_signal),
        (signal.SIGINT, _on_signal),
        # a file-size limit then fails the write (EFBIG: one sentence) instead of killing the process
        (getattr(signal, "SIGXFSZ", None), signal.SIG_IGN),
    ):
        if sig is None:
            continue
        try:
            saved.append((sig, signal.signal(sig, handler)))
        except (ValueError, OSError):  # not the main thread: leave them
            pass
    saved_warnings = warnings.catch_warnings()  # restores the filters and showwarning on __exit__
    saved_warnings.__enter__()
    warnings.showwarning = _show_warning
    # what reading assumed is printed once, as a note after the answer (load_with_info): not again as a warning
    warnings.filterwarnings("ignore", message=r".*no activation is recorded \(weights only\)")
    if quiet:
        _progress.silence(True)
        warnings.simplefilter("ignore")

    def restore() -> None:
        for sig, handler in saved:
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError, TypeError):
                pass
        saved_warnings.__exit__(None, None, None)
        if quiet:
            _progress.silence(False)

    return restore


def _input_error(exc: BaseException) -> str | None:
    """The sentence for an exception that means "this input (or output path) cannot be used", else None."""
    from relusym.errors import OutputError

    if isinstance(exc, InvalidNetworkError | UnsupportedModelError | BudgetExceededError | OutputError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError):
        return f"this command needs the package {exc.name!r}, which is not installed"
    if isinstance(exc, OverflowError):  # an exact value (or a kink computed from it) beyond float range
        return (
            "the network holds a value (or a kink computed from its values) beyond the range of floating point, "
            "which this command works in; the exact commands (canon, equiv, orbit, stabilizer, fiber, prune -o "
            "x.json) decide it exactly"
        )
    if isinstance(exc, OSError) and exc.errno is not None:
        name = exc.filename if isinstance(exc.filename, str) else os.fsdecode(exc.filename or b"")
        return f"{exc.strerror or exc}{': ' + name if name else ''}"
    return None


_NEGATIVE_BOX = re.compile(r"^-[0-9.]")


def _negative_box(argv: list[str]) -> list[str]:
    """``--box -1:1`` as ``--box=-1:1``: argparse would take a value starting with '-' for an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--box" and i + 1 < len(argv) and _NEGATIVE_BOX.match(argv[i + 1]):
            out.append(f"--box={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def _run(argv: list[str]) -> tuple[str, argparse.Namespace | None, Result]:
    if argv[:1] == ["census"]:
        from relusym.census import main as census_main

        code = census_main(argv[1:])
        return "census", None, ({}, "", code)
    parser = build_parser()
    args = parser.parse_args(_negative_box(argv))
    if not getattr(args, "func", None):
        parser.print_help()
        return "", None, ({}, "", 2)
    data, text, code = args.func(args)
    return args.command, args, (data, text, code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts, argv = _split_globals(argv)
    restore = _install_handlers(bool(opts["quiet"]))
    # numbers are bounded by the input limits (relusym._base.limits), so Python's own guard against converting huge
    # integers to and from text would only turn a raised --limit max_digits into an internal error
    get_digits = getattr(sys, "get_int_max_str_digits", None)
    digits = get_digits() if get_digits is not None else None
    if digits is not None:
        sys.set_int_max_str_digits(0)
    try:
        return _main(argv, opts)
    finally:
        restore()
        if digits is not None:
            sys.set_int_max_str_digits(digits)


def _main(argv: list[str], opts: dict[str, Any]) -> int:
    debug = bool(opts["debug"])
    for stream in (sys.stdout, sys.stderr):  # file names that are not UTF-8 are printed as \xNN, never a crash
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    command = next((a for a in argv if not a.startswith("-")), "")
    try:
        from relusym._base import limits as _limits

        lim = _limits.current()
        for spec in opts["limits"]:
            lim = _limits.from_spec(spec, lim)
        with _limits.limits(lim):  # --limit: for this call only
            command, args, (data, text, code) = _run(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, its message already printed)
        code = exc.code if isinstance(exc.code, int) else 2
        return 2 if code == 1 else code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 2
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        sentence = _input_error(exc)
        prefix = f"relusym {command}: " if command else "relusym: "
        if sentence is not None:
            print(prefix + _one_line(sentence), file=sys.stderr)
            return 2
        hint = "" if debug else "; rerun with --debug for the traceback"
        print(
            prefix + f"internal error: {type(exc).__name__}: {_one_line(str(exc))[:300]} (this is a bug in relusym"
            f"{hint})",
            file=sys.stderr,
        )
        return 3
    try:
        if args is not None and data is not _STREAMED:
            _print_result(args, data, text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. relusym canon net.json | head -1: the reader is gone, the answer stands
        _quiet_stdout()
    return code


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final flush stays silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


# ----------------------------------------------------------------------------------------------------------
# output every command shares: the JSON schema key, the inputs' provenance, timings only on request


def _add_edge_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--quiet", action="store_true", help="no progress bars (they appear only on a terminal)")
    sp.add_argument("--timings", action="store_true", help="include run times in --json output")
    sp.add_argument(
        "--allow-unsafe-pickle",
        action="store_true",
        help="read scikit-learn/joblib pickles and object .npy files, which RUNS CODE from the file",
    )


def _progress_flag(args: argparse.Namespace) -> bool | None:
    """``False`` with ``--quiet``; else ``None``: a bar only when stderr is a terminal."""
    return False if getattr(args, "quiet", False) else None


_TIMING_KEYS = ("elapsed_seconds", "elapsed", "seconds", "timings")


def _without_timings(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_timings(v) for k, v in obj.items() if k not in _TIMING_KEYS}
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


def _print_result(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    """One JSON object (``"schema": "relusym.<command>/1"``, byte-for-byte deterministic: no timings unless
    ``--timings``) or the human report, followed by what reading assumed."""
    inputs = [info.to_dict() for info in getattr(args, "load_infos", [])]
    if args.json:
        out: dict[str, Any] = {"schema": f"relusym.{args.command}/1"}
        out.update(data if getattr(args, "timings", False) else _without_timings(data))
        out["inputs"] = inputs
        print(json.dumps(out, default=str, ensure_ascii=False))
        return
    notes = [f"note: {info['source']}: {note}" for info in inputs for note in info["notes"]]
    print("\n".join([text, *notes]) if notes else text)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
