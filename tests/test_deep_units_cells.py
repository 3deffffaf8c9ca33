"""Input splitting finished by phase splitting ("cells", issue 22): proofs of "dead" and "active" whose leaves are
sub-boxes, each closed by its interval bound, its triangle LP's exact dual proof or a phase branch and bound on the
sub-box; against exact oracles (a rational grid plus the vertices of the first layer's arrangement) on planted
units, and the independent checker (tampered certificates rejected)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box
from relusym._deep.bounds import BoundTable, ExactLayers, Region, certified_bounds, exact_preactivations
from relusym._deep.box_check import check_certificate
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.mlp import MLP
from relusym._deep.status import ACTIVE, CROSSING, DEAD, UnitCertificate, unit_status
from relusym._deep.units_cells import CellLeaf, CellSearch

from deep_oracles import arrangement_vertices, third_layer_dead_net

BOX = Box([-1, -1], [1, 1])
ROOT: Region = (BOX.lo, BOX.hi)
EPS = Fraction(1, 512)
A, B = Fraction(1, 3), Fraction(-1, 5)  # kinks that no bisection lands on


def _search(layers: ExactLayers, wit: Witnesses, **kw: int | bool) -> CellSearch:
    cache: dict[Region, BoundTable] = {}

    def table(r: Region, upto: int) -> BoundTable:
        t = cache.get(r)
        if t is None or len(t.lower) <= upto:
            t = cache[r] = certified_bounds(layers, r[0], r[1], upto)
        return t

    return CellSearch(layers, ROOT, wit, table, **kw)


def _cert(ell: int, j: int, sign: int, leaves: Sequence[CellLeaf]) -> UnitCertificate:
    worst = max(lf.value for lf in leaves)
    return UnitCertificate(
        ell + 1,
        j,
        DEAD if sign > 0 else ACTIVE,
        worst if sign > 0 else -worst,
        "cells",
        tuple(lf.region for lf in leaves),
        proofs=tuple(lf.proof for lf in leaves),
        phases=tuple(lf.fixes for lf in leaves),
    )


def _grid(box: Box, n: int) -> list[tuple[Fraction, ...]]:
    (a0, a1), (b0, b1) = box.lo, box.hi
    return [
        (a0 + (b0 - a0) * Fraction(i, n), a1 + (b1 - a1) * Fraction(k, n)) for i in range(n + 1) for k in range(n + 1)
    ]


_vertices = arrangement_vertices


def _dead_on_the_box() -> MLP:
    """Second layer, unit 0: |x − A| − (σ(x − A) + σ(2(A − x))/2) + |y − B| − (σ(y − B) + σ(3(B − y))/3) − EPS
    + 4σ(x − 1): −EPS on the box (x ≤ 1), positive for x > 1 + EPS/4; unit 1 is its negative (active on the box).
    The root's interval and CROWN bounds see neither."""
    W0 = [[1, 0], [-1, 0], [1, 0], [-2, 0], [0, 1], [0, -1], [0, 1], [0, -3], [1, 0]]
    b0 = [-A, A, -A, 2 * A, -B, B, -B, 3 * B, -1]
    half, third = Fraction(1, 2), Fraction(1, 3)
    W1 = [[1, 1, -1, -half, 1, 1, -1, -third, 4], [-1, -1, 1, half, -1, -1, 1, third, -4]]
    return MLP([W0, W1, [[1, 1]]], [b0, [-EPS, EPS], [0]])


@pytest.mark.parametrize("alpha", [False, True])
def test_planted_dead_and_active_units_with_a_tiny_margin(alpha: bool) -> None:
    net = _dead_on_the_box()
    layers = ExactLayers.of(net)
    t = certified_bounds(layers, BOX.lo, BOX.hi)
    assert t.raw_upper[1][0] > 0 > t.raw_lower[1][1]  # the root's bounds leave both open
    wit = Witnesses(layers)
    wit.record((Fraction(0), Fraction(0)))  # z = −EPS < 0 (unit 0) and EPS > 0 (unit 1) there
    pts = _grid(BOX, 40) + _vertices(net, BOX)
    zs = [exact_preactivations(layers, x)[1] for x in pts]
    assert max(z[0] for z in zs) == -EPS and min(z[1] for z in zs) == EPS  # the oracle: dead and active by EPS
    assert exact_preactivations(layers, (1 + EPS, Fraction(0)))[1][0] > 0  # not dead outside the box
    for j, sign in ((0, 1), (1, -1)):
        found = _search(layers, wit, alpha=alpha).run(1, j, Deadline(60))
        assert found is not None and found[0] == sign
        c = _cert(1, j, sign, found[1])
        assert check_certificate(net, BOX, c)
        assert c.bound is not None and (-EPS <= c.bound <= 0 if sign > 0 else 0 <= c.bound <= EPS)


def _third_layer_dead() -> MLP:
    """Third layer, unit 0: (σ(p) + 2) − (σ(p) + 2) − σ(q)/2 − ε with p = x + y/2 twice and q = y − x/3: ≤ −ε on
    the box, equal to −ε where q ≤ 0; the two copies of σ(p) are relaxed independently, so no single LP sees it."""
    return third_layer_dead_net()


@pytest.mark.parametrize("max_unstable", [0, 8])
def test_third_layer_tiny_margin_by_boxes_or_by_phases(max_unstable: int) -> None:
    net = _third_layer_dead()
    layers = ExactLayers.of(net)
    assert certified_bounds(layers, BOX.lo, BOX.hi).raw_upper[2][0] > 0
    wit = Witnesses(layers)
    found = _search(layers, wit, max_unstable=max_unstable).run(2, 0, Deadline(60))
    assert found is not None and found[0] == 1
    c = _cert(2, 0, 1, found[1])
    assert check_certificate(net, BOX, c)
    phased = sum(1 for f in c.phases if f)
    # with max_unstable 0 no phase is ever fixed; with 8 the root's 4 + 4 unstable units go to the phase search
    assert (phased == 0) if max_unstable == 0 else (phased > 0 and len(set(c.regions)) == 1)
    # the oracle: the unit reads layer-2 units that never change sign, so it is affine on each cell of the first
    # layer's arrangement: its max over the box is at a vertex of that arrangement
    zs = [exact_preactivations(layers, x) for x in _vertices(net, BOX) + _grid(BOX, 16)]
    top = max(z[2][0] for z in zs)
    assert top == Fraction(-1, 64)
    assert c.bound is not None and top <= c.bound <= 0


def test_thin_slab_crossing_found_by_a_phase_leaf() -> None:
    # z3 = σ(δ − |x − A|) − (δ − ε): positive exactly where |x − A| < ε, a slab no sample is likely to hit
    eps, delta = Fraction(1, 4096), Fraction(1, 64)
    net = MLP([[[1, 0], [-1, 0]], [[-1, -1]], [[1]], [[1]]], [[-A, A], [delta], [eps - delta], [0]])
    layers = ExactLayers.of(net)
    wit = Witnesses(layers)
    wit.record((Fraction(-1), Fraction(0)))
    assert wit.pos[2][0] is None
    assert _search(layers, wit).run(2, 0, Deadline(60)) is None  # stopped by the witness
    assert wit.crossing(2, 0)
    pos = wit.pos[2][0]
    assert pos is not None and abs(pos[0][0] - A) < eps and pos[1] > 0


def _net(seed: int) -> MLP:
    rng = np.random.default_rng(seed)
    shapes = [(6, 2), (6, 6), (4, 6), (1, 4)]
    return MLP([rng.integers(-4, 5, s).tolist() for s in shapes], [rng.integers(-4, 5, s[0]).tolist() for s in shapes])


@pytest.mark.parametrize("alpha", [False, True])
@pytest.mark.parametrize("seed", [3, 10])
def test_random_networks_agree_with_the_grid(seed: int, alpha: bool) -> None:
    net = _net(seed)
    layers = ExactLayers.of(net)
    t = certified_bounds(layers, BOX.lo, BOX.hi)
    todo = [
        (ell, j)
        for ell in (1, 2)
        for j in range(layers.widths[ell + 1])
        if t.raw_lower[ell][j] < 0 < t.raw_upper[ell][j]
    ]
    wit = Witnesses(layers)
    pts = _grid(BOX, 24) + _vertices(net, BOX)
    zs = [wit.record(x) for x in pts]
    search = _search(layers, wit, alpha=alpha)
    proved = 0
    for ell, j in todo:
        vals = [z[ell][j] for z in zs]
        found = search.run(ell, j, Deadline(30), 512)
        if found is None:
            continue
        assert not (min(vals) < 0 < max(vals))  # never a proof of a unit the grid shows crossing
        c = _cert(ell, j, *found)
        assert check_certificate(net, BOX, c)
        assert c.bound is not None
        assert (max(vals) <= c.bound <= 0) if c.status == DEAD else (min(vals) >= c.bound >= 0)
        proved += 1
    assert proved or not todo


def test_tampered_cells_certificates_are_rejected() -> None:
    net = _third_layer_dead()
    layers = ExactLayers.of(net)
    found = _search(layers, Witnesses(layers), max_unstable=2).run(2, 0, Deadline(60))
    assert found is not None
    c = _cert(2, 0, 1, found[1])
    assert check_certificate(net, BOX, c)
    n = len(c.regions)
    assert n > 2
    # a hole: one leaf dropped (a region left out, or a phase leaf missing from a region's fix sets)
    for i in (0, n - 1):
        drop = replace(
            c,
            regions=c.regions[:i] + c.regions[i + 1 :],
            phases=c.phases[:i] + c.phases[i + 1 :],
            proofs=c.proofs[:i] + c.proofs[i + 1 :],
        )
        assert not check_certificate(net, BOX, drop)
    assert not check_certificate(net, BOX, replace(c, bound=c.bound - 1 if c.bound is not None else None))
    assert not check_certificate(net, BOX, replace(c, status=ACTIVE))
    k = next(i for i, p in enumerate(c.proofs) if p is not None)
    p = c.proofs[k]
    assert p is not None
    bad = replace(p, value=p.value - Fraction(1, 3))  # a proof whose value is not its multipliers' bound
    assert not check_certificate(net, BOX, replace(c, proofs=c.proofs[:k] + (bad,) + c.proofs[k + 1 :]))
    whole = ROOT  # a region overlapping the others
    assert not check_certificate(net, BOX, replace(c, regions=(whole,) + c.regions[1:]))
    # a leaf claiming the interval bound (no proof) where the interval does not prove it
    assert not check_certificate(net, BOX, replace(c, regions=(ROOT,), phases=((),), proofs=(None,)))
    phased = [i for i, f in enumerate(c.phases) if f]
    if phased:  # a fix flipped: the fix sets of that region no longer cover it, or the leaf's proof fails
        i = phased[0]
        (k0, i0, ph), *rest = c.phases[i]
        flip = ((k0, i0, -ph), *rest)
        assert not check_certificate(net, BOX, replace(c, phases=c.phases[:i] + (flip,) + c.phases[i + 1 :]))


def test_unit_status_hands_second_layer_leftovers_to_the_cells() -> None:
    net = _dead_on_the_box()
    res = unit_status(net, BOX, budget=60, samples=64, cover_leaves=1)
    c0, c1 = res.certificates[1]
    assert (c0.status, c1.status) == (DEAD, ACTIVE)
    assert CROSSING not in (c0.status, c1.status)
    # the second layer's covers (at most 16 leaves here) cannot close a margin of 1/512: the cells do
    assert (c0.method, c1.method) == ("cells", "cells")
    assert all(check_certificate(net, BOX, c) for c in (c0, c1))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_acas_second_layer_units_on_a_sub_box() -> None:
    import relusym

    path = Path(__file__).parent / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.nnet"
    net = relusym.load(path)
    box = relusym.io.input_box(path)
    assert isinstance(net, MLP) and isinstance(box, Box)
    # a sub-box of 1/8 of each side: the second-layer units its root table leaves open, proved or shown crossing
    lo = tuple(a + (b - a) * Fraction(3, 8) for a, b in zip(box.lo, box.hi, strict=True))
    hi = tuple(a + (b - a) * Fraction(4, 8) for a, b in zip(box.lo, box.hi, strict=True))
    sub = Box(lo, hi)
    layers = ExactLayers.of(net)
    root: Region = (sub.lo, sub.hi)
    t = certified_bounds(layers, sub.lo, sub.hi, 1)
    todo = [j for j in range(layers.widths[2]) if t.raw_lower[1][j] < 0 < t.raw_upper[1][j]]
    wit = Witnesses(layers)
    pts = [tuple(hi[q] if c >> q & 1 else lo[q] for q in range(5)) for c in range(32)]
    pts.append(tuple((a + b) / 2 for a, b in zip(lo, hi, strict=True)))
    zs = [wit.record(x) for x in pts]
    cache: dict[Region, BoundTable] = {}

    def table(r: Region, upto: int) -> BoundTable:
        if r not in cache or len(cache[r].lower) <= upto:
            cache[r] = certified_bounds(layers, r[0], r[1], upto)
        return cache[r]

    search = CellSearch(layers, root, wit, table)
    settled = 0
    for j in todo:
        if wit.crossing(1, j):
            continue
        found = search.run(1, j, Deadline(60), 2048)
        if found is None:
            continue
        c = _cert(1, j, *found)
        assert check_certificate(net, sub, c)
        vals = [z[1][j] for z in zs]
        assert c.bound is not None
        assert (max(vals) <= c.bound <= 0) if c.status == DEAD else (min(vals) >= c.bound >= 0)
        settled += 1
    assert settled >= 1  # (units 15 and 34 are proved dead, by phase leaves on one sub-box each)
