"""Symbolic difference bounds cut by CROWN's bounds of each network (issue 22, the distance bracket).

Oracles independent of relusym: for m = 1 the exact maximum of |Δ_i| over an interval from the outputs as
piecewise-linear functions (tests/deep_oracles.py); for m = 2 exact evaluation on a rational grid (a necessary
condition); exact evaluation at random rational points of random sub-boxes (hypothesis).  Float checks only for
the float proposer (it proves nothing).
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np

from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers, certified_bounds
from relusym._deep.box_decide import symbolic_upper
from relusym._deep.box_diff import (
    FloatPair,
    _axis,
    float_diff_bounds,
    gradient_enclosure,
    propose_partition,
    refine_partition,
)
from relusym._deep.box_diff_exact import ExactPair, exact_diff_bounds, exact_partition_values, refine_worst
from relusym._deep.diff_backsub import backsub_diff_bounds
from relusym._deep.witness import FloatNet

from deep_oracles import forward, output_gap, perturbed, to_mlp, true_max_gap_1d
from strategies import random_layers


def _pair(seed: int, m: int, widths: list[int], scale: Fraction):
    rng = random.Random(seed)
    la = random_layers(rng, [m, *widths], den=4)
    lb = perturbed(la, rng, scale)
    return la, lb, ExactPair(ExactLayers.of(to_mlp(la)), ExactLayers.of(to_mlp(lb)))


def output_difference(la, lb, x, out: int) -> Fraction:
    return forward(la, x)[out] - forward(lb, x)[out]


def _tables(P: ExactPair, lo, hi):
    return certified_bounds(P.L1, lo, hi, P.L1.hidden), certified_bounds(P.L2, lo, hi, P.L2.hidden)


def test_the_cut_bound_is_above_the_true_maximum_and_sometimes_tighter() -> None:
    tighter = 0
    for seed in range(10):
        la, lb, P = _pair(seed, 1, [5, 4, 3, 2], Fraction(1, 16))
        for lo, hi in [(Fraction(-3), Fraction(3)), (Fraction(-1, 3), Fraction(1, 5)), (Fraction(1), Fraction(9, 4))]:
            plain = exact_diff_bounds(P, [([lo], [hi])])[0]
            cut = exact_diff_bounds(P, [([lo], [hi])], [_tables(P, [lo], [hi])])[0]
            assert true_max_gap_1d(la, lb, lo, hi) <= cut
            tighter += cut < plain
    assert tighter  # the networks' own bounds do cut the forms somewhere


def test_the_cut_bound_is_above_every_grid_gap_in_two_dimensions() -> None:
    for seed in range(4):
        la, lb, P = _pair(200 + seed, 2, [6, 5, 4, 2], Fraction(1, 8))
        lo, hi = [Fraction(-2), Fraction(-1)], [Fraction(3, 2), Fraction(2)]
        u = exact_diff_bounds(P, [(lo, hi)], [_tables(P, lo, hi)])[0]
        grid = [
            (lo[0] + (hi[0] - lo[0]) * Fraction(i, 16), lo[1] + (hi[1] - lo[1]) * Fraction(j, 16))
            for i in range(17)
            for j in range(17)
        ]
        assert max(output_gap(la, lb, x) for x in grid) <= u


def test_the_float_twin_with_crown_tables_is_above_float_gaps() -> None:
    # the proposer proves nothing, but a float bound below a float gap would make it choose badly
    la, lb, P = _pair(5, 2, [8, 6, 4, 2], Fraction(1, 16))
    box = Box([-2, -2], [2, 2])
    nets = (FloatNet(P.L1, box.lo, box.hi), FloatNet(P.L2, box.lo, box.hi))
    FP = FloatPair(P.L1.Wf, P.L1.bf, P.L2.Wf, P.L2.bf, nets)
    rng = np.random.default_rng(1)
    ulo = rng.random((40, 2)) * 0.8
    uhi = ulo + rng.random((40, 2)) * 0.2
    cut = float_diff_bounds(FP, 4 * ulo - 2, 4 * uhi - 2, FP.crown(ulo, uhi)).upper
    for b in range(40):
        U = ulo[b] + (uhi[b] - ulo[b]) * rng.random((200, 2))
        g = np.abs(nets[0].preactivations(U)[-1] - nets[1].preactivations(U)[-1]).max()
        assert g <= cut[b] * (1 + 1e-9) + 1e-9
    # and it agrees with the exact cut bound up to float rounding
    ex = exact_diff_bounds(
        P,
        [
            ([Fraction(4 * v - 2) for v in a], [Fraction(4 * v - 2) for v in c])
            for a, c in zip(ulo[:6], uhi[:6], strict=True)
        ],
        [
            _tables(P, [Fraction(4 * v - 2) for v in a], [Fraction(4 * v - 2) for v in c])
            for a, c in zip(ulo[:6], uhi[:6], strict=True)
        ],
    )
    for f, e in zip(cut[:6], ex, strict=True):
        assert abs(f - float(e)) <= 1e-6 * (1 + abs(f))


def test_the_split_side_is_the_largest_smear_and_a_side_without_influence_is_never_split() -> None:
    widths = np.array([[1.0, 0.5, 0.25], [2.0**-10, 1.0, 1.0], [0.0, 1.0, 0.9]])
    assert _axis(np.array([2, 0, 0]), widths).tolist() == [2, 0, 1]  # the proposed side unless it is a point
    rng = random.Random(9)
    la = random_layers(rng, [3, 5, 3, 2], den=4)
    for W, _ in la[:1]:
        for row in W:
            row[2] = Fraction(0)  # neither network depends on x_2
    lb = perturbed(la, rng, Fraction(1, 8))
    for W, _ in lb[:1]:
        for row in W:
            row[2] = Fraction(0)
    L1, L2 = ExactLayers.of(to_mlp(la)), ExactLayers.of(to_mlp(lb))
    FP = FloatPair(L1.Wf, L1.bf, L2.Wf, L2.bf)
    ulo, uhi = propose_partition(FP, np.full(3, -1.0), np.full(3, 1.0), 0.0, 200, lambda: False)
    w = uhi - ulo
    assert len(ulo) > 50 and np.isclose(np.prod(w, axis=1).sum(), 1.0, rtol=0, atol=0)  # the boxes tile the box
    assert (w[:, 2] == 1.0).all()


def test_the_gradient_enclosure_holds_every_exact_derivative() -> None:
    for seed in range(6):
        la, lb, P = _pair(300 + seed, 2, [6, 5, 3], Fraction(1, 8))
        FP = FloatPair(P.L1.Wf, P.L1.bf, P.L2.Wf, P.L2.bf)
        rng = np.random.default_rng(seed)
        lo = rng.uniform(-2, 0, (8, 2))
        hi = lo + rng.uniform(0.1, 2, (8, 2))
        rec: list = []
        float_diff_bounds(FP, lo, hi, None, rec)
        for out in range(3):
            gl, gu = gradient_enclosure(FP, rec, np.full(8, out))
            for b in range(8):
                for _ in range(5):  # a random rational point of the box: Δ is affine near it (almost surely)
                    x = [Fraction(float(v)) for v in rng.uniform(lo[b], hi[b])]
                    h = Fraction(1, 2**40)
                    base = output_difference(la, lb, x, out)
                    for j in range(2):
                        y = list(x)
                        y[j] += h
                        d = float((output_difference(la, lb, y, out) - base) / h)
                        assert gl[b, j] - 1e-9 * (1 + abs(d)) <= d <= gu[b, j] + 1e-9 * (1 + abs(d))


def test_refining_the_worst_boxes_keeps_every_bound_sound_and_never_raises_one() -> None:
    la, lb, P = _pair(4, 1, [6, 5, 3, 2], Fraction(1, 16))
    lo, hi = [Fraction(-3)], [Fraction(3)]
    ulo = np.array([[i / 8] for i in range(8)])
    uhi = ulo + 1 / 8
    vals = exact_partition_values(P, lo, hi, ulo, uhi, lambda: False)
    better = refine_worst(P, lo, hi, ulo, uhi, vals, Fraction(0), lambda: False)
    assert all(b <= v for b, v in zip(better, vals, strict=True))
    for j, u in enumerate(better):
        a, b = lo[0] + 6 * Fraction(float(ulo[j, 0])), lo[0] + 6 * Fraction(float(uhi[j, 0]))
        assert true_max_gap_1d(la, lb, a, b) <= u
    assert refine_worst(P, lo, hi, ulo, uhi, vals, Fraction(0), lambda: True) == vals


def test_symbolic_upper_with_crown_is_sound() -> None:
    la, lb, P = _pair(12, 1, [6, 5, 4, 2], Fraction(1, 32))
    box = Box([-3], [3])
    u, boxes = symbolic_upper(P.L1, P.L2, box, Fraction(0), Deadline(3.0), crown=True)
    assert boxes >= 1 and true_max_gap_1d(la, lb, Fraction(-3), Fraction(3)) <= u


def test_the_back_substituted_float_bound_is_above_the_true_maximum_and_below_the_forward_one() -> None:
    # a float proposer (no proof): checked against the exact maximum in one dimension, up to float rounding
    below = 0
    for seed in range(8):
        la, lb, P = _pair(300 + seed, 1, [6, 5, 4, 2], Fraction(1, 16))
        box = Box([-3], [3])
        nets = (FloatNet(P.L1, box.lo, box.hi), FloatNet(P.L2, box.lo, box.hi))
        FP = FloatPair(P.L1.Wf, P.L1.bf, P.L2.Wf, P.L2.bf, nets)
        ulo = np.array([[0.0], [0.25], [0.5], [0.9]])
        uhi = np.array([[1.0], [0.5], [0.625], [1.0]])
        tables = FP.crown(ulo, uhi)
        bs = backsub_diff_bounds(FP, 6 * ulo - 3, 6 * uhi - 3, tables).upper
        fw = float_diff_bounds(FP, 6 * ulo - 3, 6 * uhi - 3, tables).upper
        for j in range(4):
            a, b = Fraction(6 * float(ulo[j, 0]) - 3), Fraction(6 * float(uhi[j, 0]) - 3)
            assert float(true_max_gap_1d(la, lb, a, b)) <= bs[j] * (1 + 1e-9) + 1e-9
        assert (bs <= fw).all()
        below += int((bs < fw * (1 - 1e-6)).sum())
    assert below  # back-substitution beats the forward forms somewhere


def test_a_refined_partition_tiles_its_starting_boxes_each_piece_inside_its_parent() -> None:
    la, lb, P = _pair(11, 2, [6, 4, 2], Fraction(1, 8))
    FP = FloatPair(P.L1.Wf, P.L1.bf, P.L2.Wf, P.L2.bf)
    lo, hi = np.full(2, -2.0), np.full(2, 2.0)
    start_lo = np.array([[0.0, 0.0], [0.5, 0.0], [0.0, 0.5]])
    start_hi = np.array([[0.5, 0.5], [1.0, 1.0], [0.5, 1.0]])
    ulo, uhi, par = refine_partition(FP, lo, hi, start_lo, start_hi, 0.0, 90, lambda: False)
    assert len(ulo) > 3 and (np.diff(par) >= 0).all()
    for p in range(3):
        mine = par == p
        assert (ulo[mine] >= start_lo[p]).all() and (uhi[mine] <= start_hi[p]).all()
        vol = np.prod(uhi[mine] - ulo[mine], axis=1).sum()
        assert vol == np.prod(start_hi[p] - start_lo[p])  # dyadic halvings: the volumes add up exactly


def test_the_refined_upper_bound_is_sound_however_the_deadline_cuts_it() -> None:
    la, lb, P = _pair(12, 2, [7, 5, 3], Fraction(1, 16))
    box = Box([Fraction(-2), Fraction(-2)], [Fraction(2), Fraction(2)])
    grid = [(Fraction(i, 4) - 2, Fraction(j, 4) - 2) for i in range(17) for j in range(17)]
    sampled = max(output_gap(la, lb, x) for x in grid)
    root = exact_diff_bounds(P, [(box.lo, box.hi)])[0]
    last = root
    for budget in (0.05, 0.3, 2.0):
        u, boxes = symbolic_upper(P.L1, P.L2, box, Fraction(0), Deadline(budget))
        assert sampled <= u <= root and boxes >= 1
        last = u
    assert last < root  # with time, the partition proves better than the root box
