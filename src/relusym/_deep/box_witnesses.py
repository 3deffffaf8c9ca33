"""Crossing witnesses of unit statuses on a domain: for each hidden unit, an exact input of the domain where its
pre-activation is < 0 and one where it is > 0.  Candidates come from floats (samples of the box, its corners, and
sign-gradient ascent, :mod:`relusym._deep.witness`); a point is kept only after the unit is evaluated exactly there."""

from __future__ import annotations

import random as _random
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box, Polytope
from relusym._deep.bounds import ExactLayers, Point, Region, exact_preactivations, float_preactivations
from relusym._deep.witness import FloatNet, exact_point

__all__ = ["Witnesses", "sample_points", "polytope_point"]


def sample_points(dom: Box | Polytope, box: Region, count: int, rng: _random.Random) -> list[Point]:
    lo, hi = box
    m = len(lo)
    pts: list[Point] = [dom.interior_point()]
    if isinstance(dom, Polytope):
        return pts + [polytope_point(dom, rng) for _ in range(min(count, 256))]
    if m <= 10:
        pts += [tuple(hi[j] if c >> j & 1 else lo[j] for j in range(m)) for c in range(1 << m)]
    den = 1 << 20
    pts += [
        tuple(l + (h - l) * Fraction(rng.randint(0, den), den) for l, h in zip(lo, hi, strict=True))
        for _ in range(count)
    ]
    return pts


def polytope_point(dom: Polytope, rng: _random.Random) -> Point:
    """The interior point moved one random fraction (< 1) of the way to the boundary along a random direction.

    (``Polytope.random_interior`` draws a fraction per coordinate, which may leave the polytope.)"""
    x0 = dom.interior_point()
    d = tuple(Fraction(rng.randint(-8, 8), 8) for _ in x0)
    t = dom.step(x0, d)
    if t is None:
        return x0
    s = t * Fraction(rng.randint(1, 4095), 4096)
    return tuple(xi + s * di for xi, di in zip(x0, d, strict=True))


class Witnesses:
    """For each unit, an exact point of the domain where it is < 0 and one where it is > 0 (when found)."""

    def __init__(self, layers: ExactLayers) -> None:
        self.layers = layers
        n = layers.widths[1:-1]
        self.neg: list[list[tuple[Point, Fraction] | None]] = [[None] * w for w in n]
        self.pos: list[list[tuple[Point, Fraction] | None]] = [[None] * w for w in n]

    def crossing(self, ell: int, j: int) -> bool:
        return self.neg[ell][j] is not None and self.pos[ell][j] is not None

    def record(self, x: Point) -> list[list[Fraction]]:
        zs = exact_preactivations(self.layers, x)
        for ell in range(len(self.neg)):
            for j, z in enumerate(zs[ell]):
                if z < 0 and self.neg[ell][j] is None:
                    self.neg[ell][j] = (x, z)
                elif z > 0 and self.pos[ell][j] is None:
                    self.pos[ell][j] = (x, z)
        return zs

    def search(self, points: Sequence[Point]) -> None:
        """Evaluate the points in floats, choose a few that show new signs, and confirm them exactly."""
        if not points:
            return
        X = np.array([[float(v) for v in p] for p in points], dtype=np.float64)
        Z = float_preactivations(self.layers, X)[:-1]
        for i in sorted(self._choose(Z)):
            self.record(points[i])

    def _choose(self, Z: Sequence[np.ndarray]) -> set[int]:
        """Rows of the float pre-activations that show a sign not yet witnessed, a few per unit."""
        chosen: set[int] = set()
        for ell, Zl in enumerate(Z):
            if Zl.shape[1] == 0 or not len(Zl):
                continue
            amin, amax = np.argmin(Zl, axis=0), np.argmax(Zl, axis=0)
            for j in range(Zl.shape[1]):
                if self.neg[ell][j] is None and Zl[amin[j], j] < 0:
                    if not any(Zl[i, j] < 0 for i in chosen):
                        chosen.add(int(amin[j]))
                if self.pos[ell][j] is None and Zl[amax[j], j] > 0:
                    if not any(Zl[i, j] > 0 for i in chosen):
                        chosen.add(int(amax[j]))
        return chosen

    def search_box(self, box: Region, count: int, seed: int, deadline: Deadline) -> None:
        """Many uniform grid points of the box (and its corners) in one float pass, then sign-gradient ascent of
        each unit not yet seen with both signs from its best points; every kept point is confirmed exactly."""
        net = FloatNet(self.layers, box[0], box[1])
        U = net.samples(count, seed)
        Z = net.preactivations(U)[:-1]
        for i in sorted(self._choose(Z)):
            self.record(exact_point(box[0], box[1], U[i]))
        for ell, Zl in enumerate(Z):
            if deadline.expired():
                return
            starts, units, signs = [], [], []
            for j in range(Zl.shape[1]):
                if self.crossing(ell, j):
                    continue
                sg = 1 if self.pos[ell][j] is None else -1
                best = np.argsort(-sg * Zl[:, j])[:4]
                starts.append(U[best])
                units += [j] * len(best)
                signs += [sg] * len(best)
            if not units:
                continue
            V = net.ascend(np.concatenate(starts), ell, np.array(units), np.array(signs, dtype=np.float64))
            val = np.array(signs) * net.preactivations(V, ell)[ell][np.arange(len(units)), units]
            for r in np.argsort(-val):
                if val[r] <= 0:
                    break
                j = units[r]
                if not self.crossing(ell, j):
                    self.record(exact_point(box[0], box[1], V[r]))
