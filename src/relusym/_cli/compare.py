"""The commands about two networks (and one on a box): ``equiv``, ``orbit``, ``align``, ``units``."""

from __future__ import annotations

import argparse
from typing import Any

from relusym._base.display import exact_and_approx
from relusym._cli.common import Result, counterexample_lines, domain_arg, is_deep, load, progress_flag
from relusym._core.network import Network
from relusym.errors import InvalidNetworkError

__all__ = ["cmd_equiv", "cmd_orbit", "cmd_align", "cmd_units", "equiv_on_box"]


def equiv_on_box(args: argparse.Namespace, net1: Network, net2: Network) -> Result:
    from relusym._bounded.equality import equivalent_on

    v = equivalent_on(net1, net2, domain_arg(args))
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
        lines += counterexample_lines(v.counterexample, " (inside the box)")
    return d, "\n".join(lines), 0 if v else 1


def cmd_equiv(args: argparse.Namespace) -> Result:
    net1, net2 = load(args.net1, args), load(args.net2, args)
    boxed = getattr(args, "box", None) is not None or getattr(args, "box_from", None) is not None
    if boxed and (args.atol is not None or args.rtol is not None):  # |f1 − f2| ≤ atol on the box?
        from relusym._cli.within import within_on_box

        return within_on_box(args, net1, net2, domain_arg(args))
    if is_deep(net1) or is_deep(net2):
        from relusym import _cli_deep

        return _cli_deep.equiv(args, net1, net2, domain_arg(args) if boxed else None)
    if boxed:
        return equiv_on_box(args, net1, net2)
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
        lines += counterexample_lines(v.counterexample)
    return d, "\n".join(lines), 0 if v else 1


def cmd_orbit(args: argparse.Namespace) -> Result:
    from relusym._core.group import find_symmetry

    net1, net2 = load(args.net1, args), load(args.net2, args)
    if (net1.m, net1.k) != (net2.m, net2.k):
        raise InvalidNetworkError(
            f"the networks have different shapes: (m, k) = {(net1.m, net1.k)} against {(net2.m, net2.k)}"
        )
    if is_deep(net1) or is_deep(net2):
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
    return _cli_deep.units(args, load(args.net, args), domain_arg(args))


def cmd_align(args: argparse.Namespace) -> Result:
    from relusym._tolerance.alignment import align

    net1, net2 = load(args.net1, args), load(args.net2, args)
    if is_deep(net1) or is_deep(net2):
        from relusym._api import align as align_any

        dal = align_any(net1, net2)
        worst = max(float(r.max(initial=0.0)) for r in dal.residuals)
        return dal.to_dict(), f"{dal} (largest residual {worst:.3g}; use --json for the permutations)", 0
    al = align(net1, net2, progress=progress_flag(args))
    d = al.to_dict()
    text = (
        f"matched {al.matched_fraction:.2%} of the neurons; "
        f"largest residual {float(max(al.residuals, default=0.0)):.3g} (use --json for the permutation)"
    )
    return d, text, 0
