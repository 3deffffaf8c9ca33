"""Covers by input splitting (issue 22): float bounds over many boxes, witness hunting, and proofs of "dead" and
"active" by leaves each proved exactly, against exact grid oracles and the independent checker."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import relusym
from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers, Region, certified_bounds, exact_preactivations
from relusym._deep.box_check import check_certificate, check_certificates
from relusym._deep.box_cover import Proved, cover_units, hunt
from relusym._deep.box_split import FloatBounds
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.mlp import MLP
from relusym._deep.status import ACTIVE, DEAD, UnitCertificate, unit_status
from relusym._deep.witness import FloatNet

from deep_oracles import arrangement_vertices, third_layer_dead_net

BOX = Box([-1, 0], [1, 2])
DATA = Path(__file__).parent / "data" / "acasxu"


def _net(seed: int) -> MLP:
    rng = np.random.default_rng(seed)
    shapes = [(6, 2), (6, 6), (4, 6), (1, 4)]
    return MLP([rng.integers(-4, 5, s).tolist() for s in shapes], [rng.integers(-4, 5, s[0]).tolist() for s in shapes])


def _grid(box: Box, n: int) -> list[tuple[Fraction, ...]]:
    (a0, a1), (b0, b1) = box.lo, box.hi
    return [
        (a0 + (b0 - a0) * Fraction(i, n), a1 + (b1 - a1) * Fraction(k, n)) for i in range(n + 1) for k in range(n + 1)
    ]


def _open_units(layers: ExactLayers, box: Box) -> list[tuple[int, int]]:
    """Units the root box's exact bound table leaves undecided."""
    t = certified_bounds(layers, box.lo, box.hi)
    return [
        (ell, j)
        for ell in range(layers.hidden)
        for j in range(layers.widths[ell + 1])
        if t.raw_lower[ell][j] < 0 < t.raw_upper[ell][j]
    ]


def _cert(p: Proved) -> UnitCertificate:
    return UnitCertificate(p.ell + 1, p.j, DEAD if p.sign < 0 else ACTIVE, p.bound, "cover", p.regions)


@pytest.mark.parametrize("seed", [3, 10, 32])
def test_cover_proofs_agree_with_the_grid(seed: int) -> None:
    net = _net(seed)
    layers = ExactLayers.of(net)
    todo = _open_units(layers, BOX)
    proved = cover_units(layers, (BOX.lo, BOX.hi), Witnesses(layers), todo, Deadline(120))
    # these networks have units the root's bounds leave open and that are dead or active on the box
    assert proved and all(len(p.regions) > 1 for p in proved)
    zs = [exact_preactivations(layers, x) for x in _grid(BOX, 24)]  # the grid holds the box's vertices
    for p in proved:
        assert check_certificate(net, BOX, _cert(p))
        vals = [z[p.ell][p.j] for z in zs]
        if p.sign < 0:
            assert max(vals) <= p.bound <= 0
        else:
            assert min(vals) >= p.bound >= 0


def test_units_crossing_on_the_grid_are_never_proved() -> None:
    for seed in range(6):
        net = _net(seed)
        layers = ExactLayers.of(net)
        zs = [exact_preactivations(layers, x) for x in _grid(BOX, 16)]
        proved = cover_units(layers, (BOX.lo, BOX.hi), Witnesses(layers), _open_units(layers, BOX), Deadline(60))
        for p in proved:
            vals = [z[p.ell][p.j] for z in zs]
            assert not (min(vals) < 0 < max(vals))


def test_tampered_cover_certificates_are_rejected() -> None:
    net = _net(10)
    layers = ExactLayers.of(net)
    proved = cover_units(layers, (BOX.lo, BOX.hi), Witnesses(layers), _open_units(layers, BOX), Deadline(60))
    p = max(proved, key=lambda q: len(q.regions))
    c = _cert(p)
    assert check_certificate(net, BOX, c)
    assert not check_certificate(net, BOX, replace(c, regions=c.regions[1:]))  # a hole in the cover
    assert not check_certificate(net, BOX, replace(c, bound=p.bound + (1 if p.sign < 0 else -1)))
    whole = (tuple(BOX.lo), tuple(BOX.hi))  # overlaps the others: the volumes no longer add up
    assert not check_certificate(net, BOX, replace(c, regions=(whole,) + c.regions[1:]))


@pytest.mark.parametrize("seed", range(3))
def test_float_bounds_are_the_exact_bounds_in_floats(seed: int) -> None:
    net = _net(seed)
    layers = ExactLayers.of(net)
    fnet = FloatNet(layers, BOX.lo, BOX.hi)
    rng = np.random.default_rng(seed)
    a = rng.random((8, 2)) / 2
    L, U = a, a + rng.random((8, 2)) / 2
    fb = FloatBounds.of(fnet, L, U, layers.hidden - 1)
    for i in range(8):
        lo = tuple(x0 + (x1 - x0) * Fraction(float(u)) for x0, x1, u in zip(BOX.lo, BOX.hi, L[i], strict=True))
        hi = tuple(x0 + (x1 - x0) * Fraction(float(u)) for x0, x1, u in zip(BOX.lo, BOX.hi, U[i], strict=True))
        t = certified_bounds(layers, lo, hi)
        for ell in range(layers.hidden):
            for j in range(layers.widths[ell + 1]):
                for f, e in ((fb.lower[ell][i, j], t.raw_lower[ell][j]), (fb.upper[ell][i, j], t.raw_upper[ell][j])):
                    assert abs(f - float(e)) <= 1e-6 * max(1.0, abs(float(e)))
        # and they contain the values at points of the sub-box
        P = L[i] + (U[i] - L[i]) * rng.random((64, 2))
        Z = fnet.preactivations(P)
        for ell in range(layers.hidden):
            assert (Z[ell] >= fb.lower[ell][i] - 1e-9).all() and (Z[ell] <= fb.upper[ell][i] + 1e-9).all()


def test_hunt_finds_a_thin_slab() -> None:
    # layer 2, unit 0 = σ(1000·x0 + x1 − 500) − 1/1000: positive only on a slab of width about 1/1000
    net = MLP([[[1000, 1]], [[1]], [[1]]], [[-500], [Fraction(-1, 1000)], [0]])
    box = Box([0, 0], [1, 1])
    layers = ExactLayers.of(net)
    wit = Witnesses(layers)
    wit.record((Fraction(0), Fraction(0)))  # negative there
    assert not wit.crossing(1, 0)
    hunt(wit, FloatNet(layers, box.lo, box.hi), (box.lo, box.hi), [(1, 0)], Deadline(60))
    assert wit.crossing(1, 0)
    pos = wit.pos[1][0]
    assert pos is not None and box.contains(pos[0]) and exact_preactivations(layers, pos[0])[1][0] > 0


def test_unit_status_uses_covers_and_every_certificate_rechecks() -> None:
    net = _net(10)
    res = unit_status(net, BOX, budget=60)
    certs = [c for lay in res.certificates for c in lay]
    assert res.complete
    assert any(c.method == "cover" and len(c.regions) > 1 for c in certs)
    assert all(check_certificates(net, BOX, certs))
    off = unit_status(net, BOX, budget=60, cover_leaves=0)
    assert off.statuses == res.statuses  # the other searches agree where both decide


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_acas_network_on_a_small_sub_box() -> None:
    net = relusym.load(DATA / "ACASXU_run2a_1_1_batch_2000.nnet")
    assert isinstance(net, MLP)
    box = relusym.io.input_box(DATA / "ACASXU_run2a_1_1_batch_2000.nnet")
    assert isinstance(box, Box)
    # a sub-box of 1/64 of each side around a point inside
    lo = tuple(a + (b - a) * Fraction(21, 64) for a, b in zip(box.lo, box.hi, strict=True))
    hi = tuple(a + (b - a) * Fraction(22, 64) for a, b in zip(box.lo, box.hi, strict=True))
    sub = Box(lo, hi)
    res = unit_status(net, sub, budget=20, samples=512)
    certs = [c for lay in res.certificates for c in lay if c.status != "undecided"]
    assert len(certs) >= 290
    assert all(check_certificates(net, sub, certs))
    # the proofs against exact values at the sub-box's corners and centre
    layers = ExactLayers.of(net)
    pts = [tuple(hi[j] if c >> j & 1 else lo[j] for j in range(5)) for c in range(32)]
    pts.append(tuple((a + b) / 2 for a, b in zip(lo, hi, strict=True)))
    zs = [exact_preactivations(layers, x) for x in pts]
    for c in certs:
        vals = [z[c.layer - 1][c.unit] for z in zs]
        if c.status == DEAD:
            assert max(vals) <= 0
        elif c.status == ACTIVE:
            assert min(vals) >= 0


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_batched_second_layer_bounds_are_the_checkers_values() -> None:
    import random

    from relusym._deep.bounds import unit_bound
    from relusym._deep.box_leaves import FirstRows, second_layer_bounds

    cases: list[tuple[MLP, Box]] = [(_net(s), BOX) for s in (3, 10)]
    acas = relusym.load(DATA / "ACASXU_run2a_2_3_batch_2000.nnet")
    acas_box = relusym.io.input_box(DATA / "ACASXU_run2a_2_3_batch_2000.nnet")
    assert isinstance(acas, MLP) and isinstance(acas_box, Box)
    cases.append((acas, acas_box))
    rng = random.Random(0)
    for net, box in cases:
        layers = ExactLayers.of(net)
        regions = []
        for _ in range(12):
            d = rng.randint(0, 5)
            ks = [rng.randint(0, 2**d - 1) for _ in box.lo]
            lo = tuple(a + (b - a) * Fraction(k, 2**d) for a, b, k in zip(box.lo, box.hi, ks, strict=True))
            hi = tuple(a + (b - a) * Fraction(k + 1, 2**d) for a, b, k in zip(box.lo, box.hi, ks, strict=True))
            regions.append((lo, hi))
        shared: FirstRows = {}  # the first layer's rounded bounds, shared between units and calls
        for j in range(0, layers.widths[2], max(1, layers.widths[2] // 5)):
            for sign in (-1, 1):
                fast = second_layer_bounds(layers, regions, j, sign)
                part = regions[: 4 + j % 8]  # calls on overlapping sets of regions, the cache filled as they come
                assert second_layer_bounds(layers, part, j, sign, shared) == fast[: len(part)]
                for r, v in zip(regions, fast, strict=True):
                    t = certified_bounds(layers, r[0], r[1], 0)
                    assert v == unit_bound(layers, r[0], r[1], t.lower, t.upper, 1, j, sign)


def _acas_regions(box: Box, count: int, seed: int) -> list[tuple[tuple[Fraction, ...], tuple[Fraction, ...]]]:
    import random

    rng = random.Random(seed)
    regions = []
    for _ in range(count):
        d = rng.randint(1, 6)
        ks = [rng.randint(0, 2**d - 1) for _ in box.lo]
        lo = tuple(a + (b - a) * Fraction(k, 2**d) for a, b, k in zip(box.lo, box.hi, ks, strict=True))
        hi = tuple(a + (b - a) * Fraction(k + 1, 2**d) for a, b, k in zip(box.lo, box.hi, ks, strict=True))
        regions.append((lo, hi))
    return regions


def _leaf_by_leaf(layers: ExactLayers, regions: list[Region], ell: int, j: int, sign: int) -> list[Fraction]:
    from relusym._deep.bounds import unit_bound

    out = []
    for r in regions:
        t = certified_bounds(layers, r[0], r[1], ell - 1)
        out.append(unit_bound(layers, r[0], r[1], t.lower, t.upper, ell, j, sign))
    return out


@pytest.mark.parametrize("seed", [3, 10, 32])
def test_batched_deep_leaf_bounds_are_the_per_leaf_values_random_nets(seed: int) -> None:
    from relusym._deep.units_leaves import LeafTables, leaf_unit_bounds

    net = _net(seed)
    layers = ExactLayers.of(net)
    regions = _acas_regions(BOX, 10, seed) + [(tuple(BOX.lo), tuple(BOX.hi))]
    shared = LeafTables(layers)  # one cache across units and layers: the same values as a fresh one
    for ell in (1, 2, 3):
        for j in range(layers.widths[ell + 1]):
            for sign in (-1, 1):
                want = _leaf_by_leaf(layers, regions, ell, j, sign)
                assert leaf_unit_bounds(layers, regions, ell, j, sign) == want
                assert shared.unit_bounds(regions[::-1], ell, j, sign) == want[::-1]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_batched_deep_leaf_bounds_are_the_per_leaf_values_acas() -> None:
    from relusym._deep.units_leaves import LeafTables

    path = DATA / "ACASXU_run2a_2_3_batch_2000.nnet"
    net, box = relusym.load(path), relusym.io.input_box(path)
    assert isinstance(net, MLP) and isinstance(box, Box)
    layers = ExactLayers.of(net)
    regions = _acas_regions(box, 5, 7)
    tables = LeafTables(layers)
    for ell, j in ((2, 7), (5, 40)):
        for sign in (-1, 1):
            assert tables.unit_bounds(regions, ell, j, sign) == _leaf_by_leaf(layers, regions, ell, j, sign)


_vertices = arrangement_vertices


def test_planted_dead_unit_with_a_tiny_margin_in_the_third_layer() -> None:
    # layer 1: p = x0 + x1/2 twice (units 0, 1), q = x1 − x0/3, and a crossing unit r; layer 2: σ(p) + 2 by each
    # copy and σ(q) (all three ≥ 0 everywhere, so σ is the identity on them), and a crossing unit; layer 3, unit 0:
    # (σ(p) + 2) − (σ(p) + 2) − σ(q)/2 − ε ≤ −ε, equal to −ε wherever q ≤ 0.  Neither interval arithmetic nor
    # the triangle relaxation sees it (the two copies of σ(p) are relaxed independently): only a cover of thin
    # leaves along p = 0 proves it
    eps = Fraction(1, 64)  # the planted margin of third_layer_dead_net
    net = third_layer_dead_net()
    box = Box([-1, -1], [1, 1])
    layers = ExactLayers.of(net)
    assert certified_bounds(layers, box.lo, box.hi).raw_upper[2][0] > 0  # the root's exact bounds leave it open
    res = unit_status(net, box, budget=120, cover_leaves=2048)
    c = res.certificates[2][0]
    assert c.status == DEAD and c.method == "cover" and len(c.regions) > 8
    assert check_certificate(net, box, c)
    # the oracle: layer 3's unit 0 reads layer-2 units that never change sign, so it is affine on each cell of the
    # first layer's arrangement and its max over the box is at a vertex of that arrangement
    pts = _vertices(net, box) + _grid(box, 16)
    zs = [exact_preactivations(layers, x) for x in pts]
    assert all(z[1][u] >= 0 for z in zs for u in (0, 1, 3))
    top = max(z[2][0] for z in zs)
    assert top == -eps  # dead, with the margin ε exactly
    assert c.bound is not None and top <= c.bound <= 0


@pytest.mark.parametrize("seed", range(3))
def test_float_bounds_with_a_parents_hint_are_sound_and_no_looser(seed: int) -> None:
    # the splitter's bounds: each child box's relaxation on the units its parent's bounds leave unstable,
    # intersected with the parent's bounds; they must still contain every value on the child, and be at least as
    # tight as the parent's
    net = _net(seed)
    layers = ExactLayers.of(net)
    fnet = FloatNet(layers, BOX.lo, BOX.hi)
    rng = np.random.default_rng(seed)
    a = rng.random((8, 2)) / 2
    PL, PU = a, a + rng.random((8, 2)) / 2
    parent = FloatBounds.of(fnet, PL, PU, layers.hidden - 1)
    CL, CU = PL, (PL + PU) / 2  # the lower-left quarter of each parent
    last = np.zeros(layers.widths[-2], dtype=bool)
    last[0] = True
    child = FloatBounds.of(fnet, CL, CU, layers.hidden - 1, hint=(parent.lower, parent.upper), last=last)
    for i in range(8):
        P = CL[i] + (CU[i] - CL[i]) * rng.random((64, 2))
        Z = fnet.preactivations(P)
        for ell in range(layers.hidden):
            assert (Z[ell] >= child.lower[ell][i] - 1e-9).all() and (Z[ell] <= child.upper[ell][i] + 1e-9).all()
            assert (child.lower[ell][i] >= parent.lower[ell][i]).all()
            assert (child.upper[ell][i] <= parent.upper[ell][i]).all()


def test_public_unit_status_passes_cover_leaves() -> None:
    from relusym.errors import InvalidNetworkError

    net = _net(10)
    on = relusym.unit_status(net, BOX, budget=60)
    off = relusym.unit_status(net, BOX, budget=60, cover_leaves=0)
    assert any(c.method == "cover" for lay in on.certificates for c in lay)
    assert not any(c.method == "cover" for lay in off.certificates for c in lay)
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(InvalidNetworkError, match="cover_leaves"):
            relusym.unit_status(net, BOX, cover_leaves=bad)
