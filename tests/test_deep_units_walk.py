"""The walk over linear regions (issue 22): a unit positive only in a thin wedge of the box that uniform samples
and sign-gradient ascent miss is found crossing, its witness checked exactly; a unit dead on the box is never
claimed; the region's affine maps agree with the network.  Oracles: exact evaluation at rational points and the
wedge's geometry."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np

from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers, exact_preactivations
from relusym._deep.box_check import check_certificate
from relusym._deep.box_cover import hunt
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.mlp import MLP
from relusym._deep.status import CROSSING, DEAD, unit_status
from relusym._deep.units_walk import region_maps, walk, walk_units
from relusym._deep.witness import FloatNet

BOX = Box([-1, -1], [1, 1])
ROOT = (BOX.lo, BOX.hi)
K, C, B = 2000, Fraction(19, 20), Fraction(-1, 5)
THIRD = Fraction(1, 3)


def _wedge() -> MLP:
    """z (layer 2, unit 0) = x0 − K·|x1 − B − (x0 − 1)/3| − C: positive only where x0 > C and x1 is within
    (x0 − C)/K of the ridge, a wedge of width ≤ 5·10⁻⁵ ending at the edge point (1, B) (not a grid point)."""
    W0 = [[-THIRD, 1], [THIRD, -1], [1, 0]]
    b0 = [THIRD - B, B - THIRD, 1]
    return MLP([W0, [[-K, -K, 1]], [[1]]], [b0, [-1 - C], [0]])


def _in_wedge(x: tuple[Fraction, ...]) -> bool:
    return x[0] - K * abs(x[1] - B - (x[0] - 1) / 3) - C > 0


def _seen_negative(layers: ExactLayers) -> Witnesses:
    wit = Witnesses(layers)
    wit.record((Fraction(0), Fraction(0)))
    assert wit.neg[1][0] is not None and wit.pos[1][0] is None
    return wit


def test_walk_finds_a_thin_wedge_that_ascent_misses() -> None:
    net = _wedge()
    layers = ExactLayers.of(net)
    fn = FloatNet(layers, ROOT[0], ROOT[1])
    wit = _seen_negative(layers)
    wit.search_box(ROOT, 4096, 0, Deadline(60))
    hunt(wit, fn, ROOT, [(1, 0)], Deadline(60), starts=64, steps=400, seed=7)
    assert wit.pos[1][0] is None  # uniform samples, their ascent and the long hunt all miss the wedge
    assert walk_units(wit, fn, ROOT, [(1, 0)], Deadline(60)) == [(1, 0)]
    pos = wit.pos[1][0]
    assert pos is not None
    x, v = pos
    assert BOX.contains(x) and _in_wedge(x)  # the oracle: the wedge's geometry
    assert v == exact_preactivations(layers, x)[1][0] > 0


def test_unit_status_certifies_the_wedge_crossing() -> None:
    net = _wedge()
    st = unit_status(net, BOX, budget=10)
    cert = st.certificates[1][0]
    assert cert.status == CROSSING
    assert cert.positive is not None and _in_wedge(cert.positive)
    assert check_certificate(net, BOX, cert)
    # tampered: the positive point moved just outside the wedge (its value recomputed, so only the sign is wrong)
    assert cert.positive is not None and cert.negative is not None and cert.values is not None
    out = (cert.positive[0], cert.positive[1] + Fraction(1, 1000))
    assert not _in_wedge(out)
    z_out = exact_preactivations(ExactLayers.of(net), out)[1][0]
    bad = type(cert)(2, 0, CROSSING, negative=cert.negative, positive=out, values=(cert.values[0], z_out))
    assert not check_certificate(net, BOX, bad)


def test_walk_never_claims_a_unit_dead_on_the_box() -> None:
    # the wedge lowered by 1/10 more than its height: z ≤ 1 − C − 1/10 < 0 on the box (its ridge rises past x0 = 1)
    W0 = [[-THIRD, 1], [THIRD, -1], [1, 0]]
    net = MLP([W0, [[-K, -K, 1]], [[1]]], [[THIRD - B, B - THIRD, 1], [-1 - C - Fraction(1, 10)], [0]])
    layers = ExactLayers.of(net)
    assert exact_preactivations(layers, (Fraction(2), B + THIRD))[1][0] > 0  # dead only on the box: positive outside
    fn = FloatNet(layers, ROOT[0], ROOT[1])
    wit = _seen_negative(layers)
    assert walk_units(wit, fn, ROOT, [(1, 0)], Deadline(60)) == []
    assert wit.pos[1][0] is None
    for _ in range(20):
        assert walk(fn, np.random.default_rng(1).random(2), 1, 0, 1.0) is None
    st = unit_status(net, BOX, budget=10)
    assert st.statuses[1][0] == DEAD and check_certificate(net, BOX, st.certificates[1][0])


def test_region_maps_agree_with_exact_evaluation() -> None:
    rng = random.Random(5)
    for _ in range(10):
        widths = [2, 4, 3, 3, 1]
        Ws = [
            [[Fraction(rng.randint(-4, 4), 2) for _ in range(a)] for _ in range(b)]
            for a, b in zip(widths, widths[1:], strict=False)
        ]
        bs = [[Fraction(rng.randint(-4, 4), 4) for _ in range(b)] for b in widths[1:]]
        layers = ExactLayers.of(MLP(Ws, bs))
        fn = FloatNet(layers, ROOT[0], ROOT[1])
        u = np.array([rng.randint(0, 64) / 64 for _ in range(2)])
        As, cs, phases = region_maps(fn, u, 3)
        x = tuple(a + (b - a) * Fraction(float(t)) for a, b, t in zip(ROOT[0], ROOT[1], u, strict=True))
        zs = exact_preactivations(layers, x)
        for k in range(4):
            got = As[k] @ u + cs[k]
            assert np.allclose(got, [float(z) for z in zs[k]], atol=1e-9)
            if k < 3:
                assert [bool(p) for p in phases[k]] == [z > 0 for z in zs[k]]
