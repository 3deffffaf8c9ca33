"""The lower end of the distance bracket on a box (issue 22): float gradient maximisers of the gap, read exactly."""

from __future__ import annotations

from fractions import Fraction

from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers
from relusym._deep.box_decide import distance_on_deep
from relusym._deep.box_gap import gap_maximisers
from relusym._deep.mlp import MLP

# a − b = σ(x0) − 2σ(x0 − 1/2): a tent of height 1/2 at x0 = 1/2, zero at every corner of [0, 1]²
A = MLP([[[1, 0], [1, 0]], [[1, -2]]], [[0, Fraction(-1, 2)], [0]])
B = MLP([[[1, 0]], [[0]]], [[0], [0]])
BOX = Box([0, 0], [1, 1])


def _gap(x: tuple[Fraction, ...]) -> Fraction:
    return max(abs(p - q) for p, q in zip(A.evaluate_exact(x), B.evaluate_exact(x), strict=True))


def test_the_ascent_climbs_to_a_peak_no_corner_shows() -> None:
    pts = gap_maximisers(ExactLayers.of(A), ExactLayers.of(B), BOX.lo, BOX.hi, samples=0, starts=4)
    assert pts and len(set(pts)) == len(pts)
    assert all(BOX.contains(x) for x in pts)
    best = max(_gap(x) for x in pts)
    assert Fraction(1, 2) - Fraction(1, 100) <= best <= Fraction(1, 2)  # the true maximum is 1/2


def test_distance_lower_is_attained_at_its_point_and_below_the_upper() -> None:
    d = distance_on_deep(A, B, BOX, budget=10)
    assert BOX.contains(d.point)
    assert _gap(d.point) == d.lower
    assert Fraction(1, 2) - Fraction(1, 100) <= d.lower <= Fraction(1, 2) <= d.upper
