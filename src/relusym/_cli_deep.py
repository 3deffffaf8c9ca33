"""The command line's answers for deep networks (two or more hidden layers): canon, equiv, orbit and prune.

Part of the front end: it renders what :mod:`relusym._deep` computes, and holds no mathematics.  Exit codes as
for one hidden layer, plus 4 for "undecided" (``relusym equiv``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from relusym._base.display import exact_and_approx, vector
from relusym._deep.mlp import MLP, as_mlp
from relusym.errors import InvalidNetworkError

__all__ = ["UNDECIDED_EXIT", "canon", "equiv", "orbit", "prune", "units"]

UNDECIDED_EXIT = 4

Result = tuple[dict[str, Any], str, int]


def _widths_text(net: MLP) -> str:
    return f"widths {_w(net)} ({net.depth} hidden layers)"


def canon(args: argparse.Namespace, net: MLP) -> Result:
    from relusym._deep.canonical import deep_normal_form

    can = deep_normal_form(net)
    nf = can.form
    d = nf.to_dict()
    d["reductions"] = [s.to_dict() for s in can.reduced.steps]
    d["inputs"] = [info.to_dict() for info in getattr(args, "load_infos", [])]
    if args.output:
        if Path(args.output).suffix.lower() != ".json":
            raise InvalidNetworkError(f"{args.output}: the normal form of a deep network is written as .json")
        from relusym._base.fileio import atomic_write

        payload = (json.dumps(d, indent=1) + "\n").encode()
        atomic_write(args.output, lambda fh: fh.write(payload))
    if args.json:
        return d, "", 0
    kinds: dict[str, int] = {}
    for s in can.reduced.steps:
        kinds[s.kind] = kinds.get(s.kind, 0) + 1
    done = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
    lines = [
        f"normal form of {args.net} ({_widths_text(net)}) under the per-layer group",
        f"reduced widths {'-'.join(map(str, nf.widths))} (reductions: {done})",
    ]
    for ell, rows in enumerate(nf.hidden, start=1):
        lines.append(f"hidden layer {ell}: {len(rows)} unit(s), primitive integer rows (bias last)")
        shown = rows if args.all else rows[:3]
        lines += [f"  {vector(list(r), limit=None if args.all else 8)}" for r in shown]
        if len(shown) < len(rows):
            lines.append(f"  … {len(rows) - len(shown)} more (use --all or --json)")
    lines.append(f"output layer: {len(nf.output)} row(s) of [W_L | b_L]")
    if args.output:
        lines.append(f"wrote the normal form to {args.output}")
    lines.append(f"digest {nf.digest()} (scheme relusym.mlp-nf/1)")
    return d, "\n".join(lines), 0


def equiv(args: argparse.Namespace, net1: Any, net2: Any, box: Any = None) -> Result:
    from relusym._deep.decide import equivalent_deep

    if box is not None:
        return _equiv_on_box(args, net1, net2, box)
    if args.atol is not None or args.rtol is not None:
        raise InvalidNetworkError(
            "--atol/--rtol on all of ℝ^m are for one-hidden-layer networks; for deep networks give a box too "
            "(--box or --box-from, with --atol)"
        )
    v = equivalent_deep(net1, net2, budget=args.budget)
    d = v.to_dict()
    d["mode"] = "exact"
    head = {"equal": "EQUIVALENT", "different": "NOT equivalent", "undecided": "UNDECIDED"}[v.status]
    lines = [f"{head}: {v.reason}"]
    cert = v.certificate
    if cert is not None:
        if cert.steps1 or cert.steps2:
            lines.append(
                f"reductions: {len(cert.steps1)} on {args.net1} (widths {_w(cert.reduced1)}), "
                f"{len(cert.steps2)} on {args.net2} (widths {_w(cert.reduced2)})"
            )
        if cert.symmetry is not None:
            lines += _symmetry_lines(cert.symmetry)
        if cert.method == "line":
            lines.append(f"checked at the {len(cert.points)} breakpoints of both and beyond both ends (m = 1)")
    if v.counterexample is not None:
        ce = v.counterexample
        lines += [f"counterexample x = {vector(ce.x)}", f"  NET1(x) = {vector(ce.y1)}", f"  NET2(x) = {vector(ce.y2)}"]
    if v.status == "undecided":
        lines.append(f"exit {UNDECIDED_EXIT}: undecided (equality of deep ReLU networks is coNP-hard; see docs)")
    code = {"equal": 0, "different": 1}.get(v.status, UNDECIDED_EXIT)
    return d, "\n".join(lines), code


def _equiv_on_box(args: argparse.Namespace, net1: Any, net2: Any, box: Any) -> Result:
    from relusym._deep.box_equal import equivalent_on_box

    v = equivalent_on_box(net1, net2, box, budget=args.budget)
    d = v.to_dict()
    d["mode"] = "box"
    heads = {"equal": "EQUIVALENT on the box", "different": "NOT equivalent on the box", "undecided": "UNDECIDED"}
    lines = [f"{heads[v.status]}: {v.reason}"]
    if v.counterexample is not None:
        ce = v.counterexample
        lines += [f"counterexample x = {vector(ce.x)} (inside the box)", f"  NET1(x) = {vector(ce.y1)}"]
        lines.append(f"  NET2(x) = {vector(ce.y2)}")
    return d, "\n".join(lines), {"equal": 0, "different": 1}.get(v.status, UNDECIDED_EXIT)


def units(args: argparse.Namespace, net: Any, box: Any) -> Result:
    from relusym._api import unit_status

    st = unit_status(net, box, budget=args.budget)
    d = st.to_dict()
    c = st.counts()
    lines = [
        f"units of {args.net} on the box: {c['dead']} dead, {c['active']} active, {c['crossing']} crossing, "
        f"{c['undecided']} undecided (every dead/active proof and crossing witness checked exactly)"
    ]
    for ell, lay in enumerate(st.statuses, start=1):
        lines.append(
            f"  layer {ell}: "
            + ", ".join(f"{lay.count(s)} {s}" for s in ("dead", "active", "crossing", "undecided") if lay.count(s))
        )
    return d, "\n".join(lines), 0


def _w(net: MLP) -> str:
    return "-".join(map(str, net.widths))


def _symmetry_lines(sym: Any, limit: int = 12) -> list[str]:
    lines = ["per-layer symmetry: unit j → slot π(j), scaled by d_j" + (", after the flips" if sym.has_flips else "")]
    for ell, mv in enumerate(sym.layers, start=1):
        if mv.flips:
            lines.append(f"  layer {ell}: flip {list(mv.flips)} (σ(t) − σ(−t) = t)")
        if len(mv.perm) <= limit:
            pairs = ", ".join(
                f"{j}→{p} d={exact_and_approx(s)}" for j, (p, s) in enumerate(zip(mv.perm, mv.scales, strict=True))
            )
            lines.append(f"  layer {ell}: {pairs}")
        else:
            lines.append(f"  layer {ell}: {len(mv.perm)} units (use --json for the permutation and scales)")
    return lines


def orbit(args: argparse.Namespace, net1: Any, net2: Any) -> Result:
    from relusym._api import find_symmetry

    a, b = as_mlp(net1), as_mlp(net2)
    h = find_symmetry(a, b)
    d: dict[str, Any] = {"in_orbit": h is not None, "symmetry": h.to_dict() if h is not None else None}
    if h is None:
        why = (
            "different widths"
            if a.widths != b.widths
            else "no per-layer permutation, scaling and valid flip maps NET1 to NET2"
        )
        return d, f"NOT in the same orbit ({why})", 1
    return d, "\n".join(["in the same orbit: NET2 = h·NET1", *_symmetry_lines(h)]), 0


def prune(args: argparse.Namespace, net: Any, like: str | None, box: Any = None) -> Result:
    from relusym._base.display import decimal
    from relusym._deep.reduce import reduce_mlp
    from relusym.io import save

    big = as_mlp(net)
    d: dict[str, Any] = {}
    if box is not None:
        from relusym._deep.box_prune import prune_on

        bp = prune_on(big, box, budget=args.budget)
        small, steps = bp.network, bp.steps
        d.update(dead_on_box=[list(p) for p in bp.dead], folded_on_box=[list(p) for p in bp.folded])
        d["statuses"] = bp.statuses.counts()
        where = f", equal to it on the box ({len(bp.dead)} unit(s) dead there, {len(bp.folded)} folded)"
    else:
        small, red = reduce_mlp(big)
        steps, where = red.steps, ""
    out: Any = small.to_network() if small.depth == 1 else small
    info = save(out, args.output, like=like, allow_rounding=args.allow_rounding, dtype=args.dtype)
    d.update(
        widths=list(small.widths),
        from_widths=list(big.widths),
        reductions=[s.to_dict() for s in steps],
        output=args.output,
        write=info.to_dict(),
    )
    text = f"reduced widths {_w(small)} (from {_w(big)}, {len(steps)} reduction(s){where}); "
    text += f"wrote {args.output} ({info.format})"
    if info.exact:
        text += ", exactly this network"
    else:
        text += (
            f"\nrounded {', '.join(info.rounded)} to the file's float type (--allow-rounding): distance "
            f"{decimal(info.distance or 0.0)} (largest entry change {decimal(info.max_change or 0.0)})"
        )
    for note in info.notes:
        text += f"\nnote: {note}"
    return d, text, 0
