"""Symbolic difference intervals (issue 22): the exact upper bound of max |f1 − f2| on a box, and its float twin.

Oracles, all independent of relusym: for m = 1 the exact maximum of |Δ_i| over an interval, from the outputs as
piecewise-linear functions (tests/deep_oracles.py: the maximum of a PWL function over an interval is at an end or
a breakpoint, so this oracle is the true maximum); for m = 2 exact evaluation on a rational grid plus the box's
corners (a necessary condition only: the grid does not prove the maximum); hypothesis on random perturbed pairs
and random sub-boxes, at random exact points.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers, certified_bounds
from relusym._deep.box_decide import distance_on_deep, symbolic_upper, within_on_deep
from relusym._deep.box_diff import FloatPair, float_diff_bounds, propose_partition
from relusym._deep.box_diff_exact import ExactPair, exact_diff_bounds, exact_partition_bound, int_dot, limbs

from deep_oracles import output_gap, perturbed, to_mlp, true_max_gap_1d
from strategies import random_layers


def _pair(seed: int, m: int, widths: list[int], scale: Fraction):
    rng = random.Random(seed)
    la = random_layers(rng, [m, *widths], den=4)
    lb = perturbed(la, rng, scale)
    return la, lb, ExactPair(ExactLayers.of(to_mlp(la)), ExactLayers.of(to_mlp(lb)))


def test_the_bound_is_above_the_true_maximum_in_one_dimension() -> None:
    closes = 0
    for seed in range(12):
        la, lb, P = _pair(seed, 1, [4, 3, 2], Fraction(1, 16))
        for lo, hi in [(Fraction(-2), Fraction(2)), (Fraction(-1, 3), Fraction(1, 5)), (Fraction(1), Fraction(7, 4))]:
            u = exact_diff_bounds(P, [([lo], [hi])])[0]
            true = true_max_gap_1d(la, lb, lo, hi)
            assert true <= u
            closes += u <= true + Fraction(1, 10**9)
    assert closes  # on some intervals every unit is stable and the bound is the maximum up to rounding


def test_the_bound_is_above_every_grid_gap_in_two_dimensions() -> None:
    for seed in range(6):
        la, lb, P = _pair(100 + seed, 2, [5, 4, 2], Fraction(1, 8))
        box = ([Fraction(-1), Fraction(-1, 2)], [Fraction(3, 2), Fraction(1)])
        u = exact_diff_bounds(P, [box])[0]
        grid = [
            (
                box[0][0] + (box[1][0] - box[0][0]) * Fraction(i, 16),
                box[0][1] + (box[1][1] - box[0][1]) * Fraction(j, 16),
            )
            for i in range(17)
            for j in range(17)
        ]
        assert max(output_gap(la, lb, x) for x in grid) <= u


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 3), st.data())
def test_sound_on_random_sub_boxes(seed: int, m: int, data: st.DataObject) -> None:
    la, lb, P = _pair(seed, m, [3, 3, 2], Fraction(1, 2) ** data.draw(st.integers(1, 8)))
    rng = random.Random(seed)
    boxes = []
    for _ in range(3):
        lo = [Fraction(rng.randint(-8, 4), 4) for _ in range(m)]
        hi = [a + Fraction(rng.randint(0, 8), 4) for a in lo]
        boxes.append((lo, hi))
    bounds = exact_diff_bounds(P, boxes)
    # and cut by both networks' exact bound tables on each box (CROWN's, certified)
    tables = [
        (certified_bounds(P.L1, lo, hi, P.L1.hidden), certified_bounds(P.L2, lo, hi, P.L2.hidden)) for lo, hi in boxes
    ]
    cut = exact_diff_bounds(P, boxes, tables)
    for (lo, hi), u, c in zip(boxes, bounds, cut, strict=True):
        for _ in range(8):
            x = [a + (b - a) * Fraction(rng.randint(0, 64), 64) for a, b in zip(lo, hi, strict=True)]
            assert output_gap(la, lb, x) <= min(u, c)


def test_the_float_proposer_matches_the_exact_bound() -> None:
    la, lb, P = _pair(7, 2, [6, 5, 3], Fraction(1, 32))
    L1, L2 = P.L1, P.L2
    FP = FloatPair(L1.Wf, L1.bf, L2.Wf, L2.bf)
    rng = np.random.default_rng(0)
    lo = rng.integers(-8, 0, (20, 2)) / 4
    hi = lo + rng.integers(1, 8, (20, 2)) / 4
    fl = float_diff_bounds(FP, lo, hi).upper
    ex = exact_diff_bounds(
        P, [([Fraction(v) for v in a], [Fraction(v) for v in b]) for a, b in zip(lo, hi, strict=True)]
    )
    for f, e in zip(fl, ex, strict=True):
        assert abs(f - float(e)) <= 1e-9 * (1 + abs(f))


def test_a_proposed_partition_covers_the_box_and_its_bound_is_sound() -> None:
    la, lb, P = _pair(3, 2, [6, 4, 2], Fraction(1, 16))
    FP = FloatPair(P.L1.Wf, P.L1.bf, P.L2.Wf, P.L2.bf)
    lo, hi = [Fraction(-2), Fraction(-2)], [Fraction(2), Fraction(2)]
    ulo, uhi = propose_partition(FP, np.array([-2.0, -2.0]), np.array([2.0, 2.0]), 0.0, 64, lambda: False)
    assert len(ulo) == 64 and np.isclose(np.prod(uhi - ulo, axis=1).sum(), 1.0, rtol=0, atol=0)
    root = exact_diff_bounds(P, [(lo, hi)])[0]
    bound, done = exact_partition_bound(P, lo, hi, ulo, uhi, root, lambda: False)
    assert done == 64 and bound <= root
    grid = [(Fraction(i, 4) - 2, Fraction(j, 4) - 2) for i in range(17) for j in range(17)]
    assert max(output_gap(la, lb, x) for x in grid) <= bound
    # an expired clock leaves every box with the root's bound
    assert exact_partition_bound(P, lo, hi, ulo, uhi, root, lambda: True) == (root, 0)


def test_symbolic_upper_in_the_distance_and_the_verifiers_question() -> None:
    la, lb, P = _pair(11, 2, [6, 4, 2], Fraction(1, 64))
    a, b = to_mlp(la), to_mlp(lb)
    box = Box([-1, -1], [1, 1])
    root = exact_diff_bounds(P, [(box.lo, box.hi)])[0]
    u, boxes = symbolic_upper(P.L1, P.L2, box, Fraction(0), Deadline(3.0))
    assert boxes >= 1 and u <= root
    grid = [(Fraction(i, 8) - 1, Fraction(j, 8) - 1) for i in range(17) for j in range(17)]
    assert max(output_gap(la, lb, x) for x in grid) <= u
    d = distance_on_deep(a, b, box, budget=3)
    assert d.lower == output_gap(la, lb, d.point) <= d.upper <= root  # however much time each phase had
    # the ε-question at ε = the whole box's symbolic bound: "yes" from the first exact bound, whatever the clock
    v = within_on_deep(a, b, box, root, budget=3)
    assert v.answer == "yes" and v.upper <= root
    assert within_on_deep(a, b, box, d.lower / 2, budget=3).answer == "no"


def test_the_bracket_closes_on_an_affine_piece() -> None:
    # every hidden unit active on the box: both networks are affine there, the maximum is at a corner
    la = [([[Fraction(1), Fraction(2)], [Fraction(-1), Fraction(1)]], [Fraction(10), Fraction(10)]), ([[1, 1]], [0])]
    lb = [
        ([[Fraction(1), Fraction(2)], [Fraction(-1), Fraction(5, 4)]], [Fraction(10), Fraction(21, 2)]),
        ([[1, 1]], [0]),
    ]
    a, b = to_mlp(la), to_mlp(lb)
    box = Box([0, 0], [1, 1])
    d = distance_on_deep(a, b, box, budget=3)
    true = max(output_gap(la, lb, (Fraction(i), Fraction(j))) for i in (0, 1) for j in (0, 1))
    assert d.kind == "exact" and d.lower == d.upper == true
    P = ExactPair(ExactLayers.of(a), ExactLayers.of(b))
    u = exact_diff_bounds(P, [(box.lo, box.hi)])[0]
    assert true <= u <= true + Fraction(1, 10**9)  # the relaxation is exact on it, up to the outward rounding


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 7), st.integers(1, 5), st.integers(1, 130), st.integers(1, 130), st.data())
def test_the_digit_products_are_the_exact_integer_products(
    r: int, n: int, c: int, wbits: int, sbits: int, data: st.DataObject
) -> None:
    ints = st.integers(-(1 << wbits), 1 << wbits)
    W = np.array(data.draw(st.lists(st.lists(ints, min_size=n, max_size=n), min_size=r, max_size=r)), dtype=object)
    ints = st.integers(-(1 << sbits), 1 << sbits)
    S = np.array(data.draw(st.lists(st.lists(ints, min_size=c, max_size=c), min_size=n, max_size=n)), dtype=object)
    Wl = limbs(W)
    assert all(abs(int(v)) < 1 << 24 for d in Wl for v in d.ravel())
    assert (int_dot(Wl, S) == W.dot(S)).all()
