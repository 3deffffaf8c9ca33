"""Deep networks on a box (issue 22): unit statuses, pruning and equivalence, against exact grid oracles."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym import prune
from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers, exact_preactivations
from relusym._deep.box_check import check_certificate
from relusym._deep.box_decide import distance_on_deep, equivalent_on_deep, within_on_deep
from relusym._deep.box_prune import prune_on
from relusym._deep.mlp import MLP
from relusym._deep.status import unit_status
from relusym.errors import InvalidNetworkError


def _grid(box: Box, n: int) -> list[tuple[Fraction, ...]]:
    (a0, a1), (b0, b1) = box.lo, box.hi
    return [
        (a0 + (b0 - a0) * Fraction(i, n), a1 + (b1 - a1) * Fraction(k, n)) for i in range(n + 1) for k in range(n + 1)
    ]


def _random_net(seed: int) -> MLP:
    rng = np.random.default_rng(seed)
    shapes = [(5, 2), (4, 5), (3, 4), (2, 3)]
    return MLP([rng.integers(-3, 4, s).tolist() for s in shapes], [rng.integers(-3, 4, s[0]).tolist() for s in shapes])


def _check_against_grid(net: MLP, box: Box, n: int = 12) -> None:
    res = unit_status(net, box, budget=5)
    layers = ExactLayers.of(net)
    zs = [exact_preactivations(layers, x) for x in _grid(box, n)]
    for ell, lay in enumerate(res.certificates):
        for j, c in enumerate(lay):
            if c.status != "undecided":
                assert check_certificate(net, box, c)
            vals = [z[ell][j] for z in zs]
            if c.status == "dead":
                assert max(vals) <= 0 and c.bound is not None and c.bound <= 0
            elif c.status == "active":
                assert min(vals) >= 0 and c.bound is not None and c.bound >= 0
            elif c.status == "crossing":
                assert c.negative is not None and c.positive is not None
                assert box.contains(c.negative) and box.contains(c.positive)
                assert (
                    exact_preactivations(layers, c.negative)[ell][j]
                    < 0
                    < exact_preactivations(layers, c.positive)[ell][j]
                )


@pytest.mark.parametrize("seed", range(4))
def test_statuses_agree_with_exact_grid(seed: int) -> None:
    _check_against_grid(_random_net(seed), Box([-1, 0], [1, 2]))


def test_planted_units() -> None:
    # layer 2: unit 0 = σ(x0) + σ(x1) − 3, dead on [0,1]² (≤ −1) but active far outside;
    # unit 1 = σ(x0) + 1, active on the box; unit 2 = σ(x0 − 1/2 + x1/1000) − 1/1000·σ(x1)… crosses in a thin slab
    W1 = [[1, 0], [0, 1], [1000, 1]]
    b1 = [0, 0, -500]
    W2 = [[1, 1, 0], [1, 0, 0], [0, 0, 1]]
    b2 = [-3, 1, Fraction(-1, 1000)]
    net = MLP([W1, W2, [[1, 1, 1]]], [b1, b2, [0]])
    box = Box([0, 0], [1, 1])
    res = unit_status(net, box, budget=5)
    assert res.statuses[1] == ("dead", "active", "crossing")
    for lay in res.certificates:
        for c in lay:
            assert check_certificate(net, box, c)
    # dead only on the box: active at x = (4, 4)
    assert exact_preactivations(ExactLayers.of(net), (Fraction(4), Fraction(4)))[1][0] > 0
    _check_against_grid(net, box)


def test_prune_on_box_keeps_every_value_inside() -> None:
    box = Box([-1, 0], [1, 2])
    for seed in range(4):
        net = _random_net(seed)
        pruned = prune_on(net, box, budget=5)
        assert sum(pruned.network.hidden_widths) <= sum(net.hidden_widths)
        for x in _grid(box, 10):
            assert pruned.network.evaluate_exact(x) == net.evaluate_exact(x)


def test_prune_folds_dependent_active_units() -> None:
    # two active units with parallel-but-shifted rows: σ(x + 2) and σ(x + 3) on [0, 1] fold into one
    net = MLP([[[1], [1]], [[1, 2]]], [[2, 3], [0]])
    pruned = prune_on(net, Box(0, 1), budget=5)
    assert pruned.network.hidden_widths == (1,)
    for i in range(11):
        x = (Fraction(i, 10),)
        assert pruned.network.evaluate_exact(x) == net.evaluate_exact(x)


def test_equivalence_and_distance_on_box() -> None:
    box = Box([0, 0], [1, 1])
    a = MLP([[[1, 0], [0, 1]], [[1, 1]]], [[5, 5], [0]])  # active everywhere on the box: x0 + x1 + 10
    b = MLP([[[1, 1]], [[1]]], [[10], [0]])
    v = equivalent_on_deep(a, b, box, budget=5)
    assert v.status == "equal"
    c = MLP([[[1, 1]], [[1]]], [[11], [0]])
    v2 = equivalent_on_deep(a, c, box, budget=5)
    assert v2.status == "different" and v2.counterexample is not None
    assert box.contains(v2.counterexample.x, strict=True)
    assert a.evaluate_exact(v2.counterexample.x) != c.evaluate_exact(v2.counterexample.x)
    d = distance_on_deep(a, c, box, budget=5)
    assert d.lower == d.upper == 1 and d.kind == "exact"
    assert within_on_deep(a, c, box, 1).answer == "yes"
    assert within_on_deep(a, c, box, Fraction(1, 2)).answer == "no"


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf")])
def test_budget_refused(bad: float) -> None:
    with pytest.raises(InvalidNetworkError, match="budget"):
        unit_status(_random_net(0), Box(0, 1), budget=bad)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.fractions(Fraction(1, 8), Fraction(1, 1)))
def test_shrinking_the_box_never_makes_a_proved_unit_cross(seed: int, shrink: Fraction) -> None:
    net = _random_net(seed)
    big = Box([-1, 0], [1, 2])
    small = Box([-shrink, 1 - shrink], [shrink, 1 + shrink])
    sb, ss = unit_status(net, big, budget=2), unit_status(net, small, budget=2)
    for lb, ls in zip(sb.statuses, ss.statuses, strict=True):
        for a, b in zip(lb, ls, strict=True):
            if a in ("dead", "active"):
                assert b != "crossing"


# ----------------------------------------------------------------------------------------------------------
# the LP path: the triangle relaxation's exact dual proofs

# layer 1: a = σ(x0), b = σ(x1), c = σ(x0 + x1 − 1); on [0, 1]² the unit a + b − 2c − 101/100 is ≤ −1/100 (its
# maximum is on the line x0 + x1 = 1): interval arithmetic and the fixed-slope relaxation (c ≥ 0) give 99/100,
# the triangle LP (c ≥ x0 + x1 − 1) proves it dead.  The opposite unit is active.
_W1 = [[1, 0], [0, 1], [1, 1]]
_B1 = [0, 0, -1]


def _lp_net() -> MLP:
    W2 = [[1, 1, -2], [-1, -1, 2], [1, 1, 1]]
    b2 = [Fraction(-101, 100), Fraction(101, 100), Fraction(-1, 2)]
    return MLP([_W1, W2, [[1, 1, 1]]], [_B1, b2, [0]])


def _dual_value(net: MLP, cert: Any, region: tuple[tuple[Fraction, ...], tuple[Fraction, ...]], proof: Any) -> Fraction:
    """The Lagrangian dual objective B(μ) recomputed here with plain Fractions (first hidden layer's bounds by
    exact interval arithmetic on the region, which is exact for an affine layer)."""
    assert proof.layer == 1 and len(proof.mus) == 1
    lo, hi = region
    W1 = [[Fraction(v) for v in r] for r in net.weights[0].tolist()]
    b1 = [Fraction(v) for v in net.biases[0].tolist()]
    W2 = [[Fraction(v) for v in r] for r in net.weights[1].tolist()]
    b2 = [Fraction(v) for v in net.biases[1].tolist()]
    (mu,) = proof.multipliers()
    assert all(isinstance(v, Fraction) for v in mu) and len(mu) == len(b1)  # μ is free: any rationals are feasible
    sg, u = proof.sign, proof.unit
    lam = [sg * w for w in W2[u]]
    total = sg * b2[u] + sum((m * b for m, b in zip(mu, b1, strict=True)), Fraction(0))
    for i, row in enumerate(W1):
        l = b1[i] + sum((min(w * a, w * c) for w, a, c in zip(row, lo, hi, strict=True)), Fraction(0))
        h = b1[i] + sum((max(w * a, w * c) for w, a, c in zip(row, lo, hi, strict=True)), Fraction(0))
        cands = [l, h] + ([Fraction(0)] if l < 0 < h else [])
        total += max(lam[i] * max(z, Fraction(0)) - mu[i] * z for z in cands)
    lam_x = [sum((mu[i] * W1[i][q] for i in range(len(W1))), Fraction(0)) for q in range(len(lo))]
    total += sum((max(v * a, v * c) for v, a, c in zip(lam_x, lo, hi, strict=True)), Fraction(0))
    return Fraction(total)


def test_lp_proofs_are_exact_dual_bounds() -> None:
    net = _lp_net()
    box = Box([0, 0], [1, 1])
    res = unit_status(net, box, budget=10, search="box", cover_leaves=0)  # the LP path
    assert res.statuses[1][:2] == ("dead", "active")
    layers = ExactLayers.of(net)
    grid = [exact_preactivations(layers, x) for x in _grid(box, 16)]
    for unit, status in ((0, "dead"), (1, "active")):
        c = res.certificates[1][unit]
        assert c.method == "lp" and c.proofs and len(c.proofs) == len(c.regions)
        assert check_certificate(net, box, c)
        for region, proof in zip(c.regions, c.proofs, strict=True):
            if proof is None:
                continue
            assert proof.sign == (1 if status == "dead" else -1)
            value = _dual_value(net, c, region, proof)
            assert value == proof.value and value <= 0
        # the bound holds on the grid
        vals = [z[1][unit] for z in grid]
        assert max(vals) <= 0 if status == "dead" else min(vals) >= 0
    assert max(z[1][0] for z in grid) == Fraction(-1, 100)


def test_tampered_certificates_are_rejected() -> None:
    net = _lp_net()
    box = Box([0, 0], [1, 1])
    res = unit_status(net, box, budget=10, search="box", cover_leaves=0)  # the LP path
    c = res.certificates[1][0]
    i = next(k for k, p in enumerate(c.proofs) if p is not None)
    p = c.proofs[i]
    assert p is not None
    worse = [list(r) for r in p.mus]
    worse[0][0] += 1 << 20
    tampered = [
        replace(c, bound=c.bound - 1 if c.bound is not None else None),
        replace(c, proofs=c.proofs[:i] + (replace(p, value=p.value - 1),) + c.proofs[i + 1 :]),
        replace(c, proofs=c.proofs[:i] + (replace(p, mus=tuple(map(tuple, worse))),) + c.proofs[i + 1 :]),
        replace(c, proofs=c.proofs[:i] + (replace(p, sign=-1),) + c.proofs[i + 1 :]),
        replace(c, regions=c.regions[1:], proofs=c.proofs[1:]) if len(c.regions) > 1 else replace(c, regions=()),
        replace(c, status="active"),
    ]
    for t in tampered:
        assert not check_certificate(net, box, t)
    cross = next(x for lay in res.certificates for x in lay if x.status == "crossing")
    assert check_certificate(net, box, cross)
    assert not check_certificate(net, box, replace(cross, negative=cross.positive))


@settings(max_examples=10, deadline=None)
@given(
    st.integers(0, 10_000),
    st.lists(st.fractions(Fraction(-3), Fraction(3)), min_size=2, max_size=2),
    st.lists(st.fractions(Fraction(1, 16), Fraction(4)), min_size=2, max_size=2),
)
def test_units_the_reductions_remove_as_dead_are_dead_on_every_box(
    seed: int, corner: list[Fraction], sides: list[Fraction]
) -> None:
    # rule 2 of the ℝ^m reductions: a unit of layer ≥ 2 with w ≤ 0 and β ≤ 0 never fires; plant one
    net = _random_net(seed)
    W = [np.array(w.tolist(), dtype=object) for w in net.weights]
    b = [np.array(v.tolist(), dtype=object) for v in net.biases]
    W[1][2] = [-abs(int(v)) for v in W[1][2]]
    b[1][2] = -abs(int(b[1][2]))
    planted = MLP([w.tolist() for w in W], [v.tolist() for v in b])
    reduced = prune(planted)
    assert sum(reduced.hidden_widths) < sum(planted.hidden_widths)  # the planted unit is removed on ℝ^m
    box = Box(corner, [c + s for c, s in zip(corner, sides, strict=True)])
    res = unit_status(planted, box, budget=2)
    assert res.statuses[1][2] == "dead"
    assert check_certificate(planted, box, res.certificates[1][2])


# ----------------------------------------------------------------------------------------------------------
# equal on the box by the per-layer group once the box-dead units are removed


def _structural_copy(net: MLP, box: Box, seed: int) -> MLP:
    """Each hidden layer permuted and scaled by powers of two, plus a first-layer unit dead on the box only."""
    rng = np.random.default_rng(seed)
    W = [[[Fraction(v) for v in r] for r in w.tolist()] for w in net.weights]
    b = [[Fraction(v) for v in v_.tolist()] for v_ in net.biases]
    for ell in range(len(W) - 1):
        p = rng.permutation(len(W[ell]))
        s = [Fraction(2) ** int(e) for e in rng.integers(-2, 3, len(p))]
        W[ell] = [[v * s[i] for v in W[ell][p[i]]] for i in range(len(p))]
        b[ell] = [b[ell][p[i]] * s[i] for i in range(len(p))]
        W[ell + 1] = [[row[p[i]] / s[i] for i in range(len(p))] for row in W[ell + 1]]
    W[0].append([Fraction(1)] * net.m)
    b[0].append(-sum(box.hi, Fraction(0)) - 1)
    for row in W[1]:
        row.append(Fraction(5))
    return MLP(W, b)


@pytest.mark.parametrize("seed", range(3))
def test_structurally_equal_copies_are_equal_on_the_box(seed: int) -> None:
    from relusym._deep.box_decide import without_box_dead

    box = Box([-1, 0], [1, 2])
    net = _random_net(seed)
    other = _structural_copy(net, box, seed)
    # the planted unit fires outside the box: the copies differ on ℝ^m
    far = (Fraction(10), Fraction(10))
    assert net.evaluate_exact(far) != other.evaluate_exact(far)
    v = equivalent_on_deep(net, other, box, budget=5)
    assert v.status == "equal" and v.certificate is not None
    reduced, removed = without_box_dead(other, box)
    assert (1, len(other.weights[0]) - 1) in removed
    layers = ExactLayers.of(other)
    for x in _grid(box, 8):
        assert net.evaluate_exact(x) == other.evaluate_exact(x) == reduced.evaluate_exact(x)
        z = exact_preactivations(layers, x)
        assert all(z[ell - 1][j] <= 0 for ell, j in removed)
    # a copy with the planted unit's weight into layer 2 changed inside the box is not equal
    W = [w.tolist() for w in other.weights]
    W[0][-1] = [Fraction(0), Fraction(0)]
    bb = [v_.tolist() for v_ in other.biases]
    bb[0][-1] = Fraction(1)  # now active everywhere: adds 5 to every second-layer unit
    changed = MLP(W, bb)
    v2 = equivalent_on_deep(net, changed, box, budget=5)
    assert v2.status == "different" and v2.counterexample is not None
    assert box.contains(v2.counterexample.x, strict=True)
    assert net.evaluate_exact(v2.counterexample.x) != changed.evaluate_exact(v2.counterexample.x)


@pytest.mark.parametrize("seed", range(3))
def test_difference_bounds_are_sound(seed: int) -> None:
    from relusym._deep.bounds import certified_bounds
    from relusym._deep.box_decide import _Diff

    box = Box([-1, 0], [1, 2])
    net = _random_net(seed)
    rng = np.random.default_rng(seed)
    W = [[[Fraction(v) + Fraction(int(rng.integers(-2, 3)), 64) for v in r] for r in w.tolist()] for w in net.weights]
    near = MLP(W, [v.tolist() for v in net.biases])
    L1, L2 = ExactLayers.of(net), ExactLayers.of(near)
    diff = _Diff(L1, L2)
    grid = _grid(box, 12)
    gaps = [max(abs(p - q) for p, q in zip(net.evaluate_exact(x), near.evaluate_exact(x), strict=True)) for x in grid]
    for lo, hi in [(box.lo, box.hi), ((Fraction(0), Fraction(0)), (Fraction(1), Fraction(1)))]:
        t1, t2 = certified_bounds(L1, lo, hi, L1.hidden), certified_bounds(L2, lo, hi, L2.hidden)
        u = diff.bound(t1, t2, lo, hi)
        inside = [
            g for x, g in zip(grid, gaps, strict=True) if all(a <= v <= b for a, v, b in zip(lo, x, hi, strict=True))
        ]
        assert max(inside) <= u
    d = distance_on_deep(net, near, box, budget=3)
    assert max(gaps) <= d.upper and d.lower <= d.upper
    assert d.lower == max(
        abs(p - q) for p, q in zip(net.evaluate_exact(d.point), near.evaluate_exact(d.point), strict=True)
    )
