"""Covers that grow in rounds and the hunt in the open leaves of unclosed covers (issue 22), on planted units:
a second-layer unit dead on the box by a margin far below what the root's bounds see, and a third-layer unit
positive only in a thin slab; the oracles are exact evaluation on a rational grid and the slab's geometry."""

from __future__ import annotations

from fractions import Fraction

from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers, certified_bounds, exact_preactivations
from relusym._deep.box_check import check_certificate
from relusym._deep.box_cover import cover_units
from relusym._deep.box_split import Splitter, split_cover
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.mlp import MLP
from relusym._deep.status import DEAD, UnitCertificate
from relusym._deep.units_hunt import hunt_open_leaves
from relusym._deep.witness import FloatNet

BOX = Box([-1, -1], [1, 1])
EPS = Fraction(1, 512)
A, B = Fraction(1, 3), Fraction(-1, 5)  # the kinks, not dyadic: no bisection lands on them


def _tiny_margin() -> MLP:
    """z2 = |x − A| − (σ(x − A) + σ(2(A − x))/2) + |y − B| − (σ(y − B) + σ(3(B − y))/3) − EPS = −EPS on all of
    ℝ², while the root's interval and CROWN bounds see a positive maximum; a second unit with the other sign."""
    W0 = [[1, 0], [-1, 0], [1, 0], [-2, 0], [0, 1], [0, -1], [0, 1], [0, -3]]
    b0 = [-A, A, -A, 2 * A, -B, B, -B, 3 * B]
    half, third = Fraction(1, 2), Fraction(1, 3)
    W1 = [[1, 1, -1, -half, 1, 1, -1, -third], [-1, -1, 1, half, -1, -1, 1, third]]
    b1 = [-EPS, EPS]
    return MLP([W0, W1, [[1, 1]]], [b0, b1, [0]])


def test_planted_tiny_margin_is_proved_in_later_rounds() -> None:
    net = _tiny_margin()
    layers = ExactLayers.of(net)
    t = certified_bounds(layers, BOX.lo, BOX.hi)
    assert t.raw_upper[1][0] > 0 > t.raw_lower[1][1]  # the root's bounds leave both open
    proved = cover_units(layers, (BOX.lo, BOX.hi), Witnesses(layers), [(1, 0), (1, 1)], Deadline(120), max_leaves=4)
    got = {p.j: p for p in proved}
    assert set(got) == {0, 1}
    zs = [
        exact_preactivations(layers, (BOX.lo[0] + Fraction(i, 20), BOX.lo[1] + Fraction(k, 20)))
        for i in range(41)
        for k in range(41)
    ]
    for j, sign in ((0, -1), (1, 1)):
        p = got[j]
        assert p.sign == sign
        # more leaves than the first round's cap of 4: a later round closed the cover
        assert len(p.regions) > 4
        cert = UnitCertificate(2, j, DEAD if sign < 0 else "active", p.bound, "cover", p.regions)
        assert check_certificate(net, BOX, cert)
        vals = [z[1][j] for z in zs]
        if sign < 0:
            assert max(vals) == -EPS and -EPS <= p.bound <= 0
        else:
            assert min(vals) == EPS and 0 <= p.bound <= EPS


def _slab(delta: Fraction, eps: Fraction) -> MLP:
    """z3 = t − (delta − eps) with t = σ(delta − |x − A|): positive exactly where |x − A| < eps."""
    W0 = [[1, 0], [-1, 0]]
    b0 = [-A, A]
    return MLP([W0, [[-1, -1]], [[1]], [[1]]], [b0, [delta], [eps - delta], [0]])


def test_hunt_in_open_leaves_finds_a_thin_slab() -> None:
    eps, delta = Fraction(1, 4096), Fraction(1, 64)
    net = _slab(delta, eps)
    layers = ExactLayers.of(net)
    root = (BOX.lo, BOX.hi)
    wit = Witnesses(layers)
    wit.record((Fraction(-1), Fraction(0)))  # z3 = −delta + eps < 0 there
    assert wit.neg[2][0] is not None and wit.pos[2][0] is None
    fn = FloatNet(layers, root[0], root[1])
    sp, covers = split_cover(fn, [(2, 0, -1)], Deadline(60), 32, lambda u, e, j, s: False, Splitter(fn, 2, [0]))
    assert covers[0].open and not wit.crossing(2, 0)  # the slab keeps the cover open within 32 leaves
    hunt_open_leaves(wit, fn, root, sp, covers, Deadline(60))
    assert wit.crossing(2, 0)
    pos = wit.pos[2][0]
    assert pos is not None
    x, v = pos
    assert BOX.contains(x) and abs(x[0] - A) < eps  # the oracle: the slab's geometry
    assert v == exact_preactivations(layers, x)[2][0] > 0


def test_hunt_in_open_leaves_never_claims_a_dead_unit() -> None:
    # the tiny-margin unit has no positive point: whatever the hunt proposes is refused by exact evaluation
    net = _tiny_margin()
    layers = ExactLayers.of(net)
    root = (BOX.lo, BOX.hi)
    wit = Witnesses(layers)
    wit.record((Fraction(0), Fraction(0)))
    fn = FloatNet(layers, root[0], root[1])
    sp, covers = split_cover(fn, [(1, 0, -1)], Deadline(60), 8, lambda u, e, j, s: False, Splitter(fn, 1, [0]))
    assert covers[0].open
    hunt_open_leaves(wit, fn, root, sp, covers, Deadline(60))
    assert wit.pos[1][0] is None and not wit.crossing(1, 0)
    neg = wit.neg[1][0]
    assert neg is not None and neg[1] == -EPS
