"""Generic and rigid parameters (docs/math/fibres.md): the conditions G-a and G-b of genericity (G-c, the absence
of hidden flips, is :mod:`relusym.flips`), and the verdict of the rigidity conditions R1–R5, each with the
sentence that explains which condition fails and why.
"""

from __future__ import annotations

import numpy as np

from relusym._core.analysis import Analysis
from relusym._core.classes import HyperplaneClasses
from relusym._exact.numbers import fraction_str, to_fraction
from relusym._fibre.configurations import ConfigurationSet, OwnConfiguration

__all__: list[str] = ["configuration_r5", "generic_conditions", "rigidity_verdict"]


# ----------------------------------------------------------------------------------------------------------
# genericity (docs/math/fibres.md)


def generic_conditions(an: Analysis) -> tuple[bool, str, bool, str]:
    """(G-a holds, why not; G-b holds, why not) for docs/math/fibres.md."""
    net, hc = an.net, an.classes
    Vt_nz = np.asarray(net.V != 0).any(axis=0) if net.n else np.zeros(0, dtype=bool)
    A_nz = np.asarray(net.A != 0).any(axis=1) if net.n else np.zeros(0, dtype=bool)
    ga_reason = ""
    bad_v = np.nonzero(~Vt_nz)[0]
    bad_a = np.nonzero(~A_nz)[0]
    if bad_v.size:
        ga_reason = f"G-a fails: neuron {int(bad_v[0])} has v = 0 (a null neuron)"
    elif bad_a.size:
        i = int(bad_a[0])
        kind = "a constant neuron" if to_fraction(net.b[i]) > 0 else "a null neuron"
        ga_reason = f"G-a fails: neuron {i} has a = 0 ({kind})"
    ga = not ga_reason
    # G-b: some two rows w_i, w_j proportional (rank < 2)
    gb_reason = ""
    zero_a = bad_a.tolist()
    if len(zero_a) >= 2:
        gb_reason = f"G-b fails: neurons {zero_a[0]} and {zero_a[1]} both have a = 0, so (a, b) are proportional"
    else:
        lab = hc.row_label  # the classes of all rows w_i with a_i ≠ 0, whatever v_i
        seen: dict[int, int] = {}
        for i in range(net.n):
            li = int(lab[i])
            if li < 0:
                continue
            if li in seen:
                j = seen[li]
                mu = to_fraction(hc.lam[i]) / to_fraction(hc.lam[j])
                gb_reason = (
                    f"G-b fails: neurons {j} and {i} lie on the same hyperplane (w_{i} = {fraction_str(mu)}·w_{j})"
                )
                break
            seen[li] = i
        if not gb_reason and len(zero_a) == 1:
            i = zero_a[0]
            if to_fraction(net.b[i]) == 0:
                other = 0 if i != 0 else 1
                if net.n >= 2:
                    gb_reason = f"G-b fails: neuron {i} has w = (a, b) = 0, proportional to every w_{other}"
    return ga, ga_reason, not gb_reason, gb_reason


# ----------------------------------------------------------------------------------------------------------
# rigidity (docs/math/fibres.md)


def configuration_r5(admissible: ConfigurationSet, own: OwnConfiguration, width: int, n: int) -> tuple[bool, str]:
    """R5 of docs/math/fibres.md from the complete configuration search: w = n and θ's configuration is the only one of
    minimal cost."""
    if width == n and admissible.count == 1:
        return True, "R1–R5 hold: θ's configuration is the unique one of minimal cost"
    if width < n:
        return False, f"R5 fails: the minimal width is {width} < n = {n}"
    other = next(c for c in admissible.configurations if (c.S, c.P) != (own.S, own.P))
    return False, (
        f"R5 fails: another configuration of minimal cost, S = {list(other.S)}, "
        f"P = {list(other.P)} (classes in NF order), t = {other.rho}, realizes the function "
        "with n neurons outside θ's orbit"
    )


def rigidity_verdict(
    hc: HyperplaneClasses, ga_reason: str, rigidity: dict[str, bool | None], r5_reason: str
) -> tuple[bool | None, str]:
    """Whether the fibre is one free H_n-orbit (docs/math/fibres.md), and why: the first of R1–R4 that fails, else
    R5."""
    if rigidity["R1"] is False:
        return False, "R1 fails: " + ga_reason.split(": ", 1)[1]
    if rigidity["R2"] is False:
        i, j = _same_oriented(hc)
        return False, (
            f"R2 fails: neurons {i} and {j} lie on the same oriented hyperplane, so O3 moves kink between them"
        )
    if rigidity["R3"] is False:
        return False, "R3 fails: an opposite pair has cancelling kinks, so O6 translates it"
    if rigidity["R4"] is False:
        return False, "R4 fails: the normals of the opposite pairs are dependent, so O5 moves them"
    return rigidity["R5"], r5_reason


def _same_oriented(hc: HyperplaneClasses) -> tuple[int, int]:
    seen: dict[tuple[int, bool], int] = {}
    for i in range(hc.net.n):
        if hc.label[i] >= 0:
            key = (int(hc.label[i]), bool(hc.lam[i] < 0))
            if key in seen:
                return seen[key], i
            seen[key] = i
    raise AssertionError("no two neurons on the same oriented hyperplane")  # pragma: no cover
