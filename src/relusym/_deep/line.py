"""Deep networks on a line, decided exactly: the breakpoints of a continuous piecewise-linear function of t ∈ ℝ.

On a line x = x0 + t·d a deep network is a continuous piecewise-linear function of t.  Its breakpoints are found
layer by layer: the pre-activations of layer 1 are affine in t (one zero each); a pre-activation of layer ℓ + 1 is
affine between consecutive breakpoints of layers ≤ ℓ, so its zeros are found from its exact values there (and on
the two unbounded pieces from one more point each).  Two such functions agree on the whole line iff they agree
at every breakpoint of either and at one point beyond each end (docs/math/deep.md): an exact decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from relusym._base.deadline import Deadline
from relusym._deep.rows import Row

__all__ = ["restrict_to_line", "breakpoints", "compare_on_line", "LineBudget"]


class LineBudget(Exception):
    """The breakpoint enumeration ran past its deadline or its point cap."""


def restrict_to_line(layers: list[list[Row]], x0: Sequence[Fraction], d: Sequence[Fraction]) -> list[list[Row]]:
    """The network t ↦ net(x0 + t·d) as layers with one input."""
    first = []
    for row in layers[0]:
        w, beta = row[:-1], row[-1]
        slope = sum((wi * di for wi, di in zip(w, d, strict=True) if wi and di), Fraction(0))
        offset = beta + sum((wi * xi for wi, xi in zip(w, x0, strict=True) if wi and xi), Fraction(0))
        first.append([slope, offset])
    return [first] + [[list(r) for r in rows] for rows in layers[1:]]


def _forward_1d(layers: list[list[Row]], t: Fraction, upto: int) -> list[Fraction]:
    """The pre-activations of layer ``upto`` (0-based) at t."""
    h = [t]
    for ell in range(upto + 1):
        z = []
        for row in layers[ell]:
            s = row[-1]
            for w, v in zip(row, h, strict=False):
                if w and v:
                    s += w * v
            z.append(s)
        if ell == upto:
            return z
        h = [v if v > 0 else Fraction(0) for v in z]
    return h


def breakpoints(
    layers: list[list[Row]], *, deadline: Deadline | None = None, max_points: int = 200_000
) -> list[Fraction]:
    """A sorted set of t containing every breakpoint of the one-input network ``layers`` (exact)."""
    S: set[Fraction] = set()
    for a, c in layers[0]:
        if a:
            S.add(-c / a)
    # the output layer (the last) is affine in the last hidden layer: it adds no breakpoint
    for ell in range(1, len(layers) - 1):
        pts = sorted(S)
        grid = [pts[0] - 1, *pts, pts[-1] + 1] if pts else [Fraction(0), Fraction(1)]
        values = []
        for t in grid:
            if deadline is not None and deadline.expired():
                raise LineBudget
            values.append(_forward_1d(layers, t, ell))
        for u in range(len(layers[ell])):
            z = [v[u] for v in values]
            for (p, zp), (q, zq) in zip(zip(grid, z, strict=True), zip(grid[1:], z[1:], strict=True), strict=False):
                if (zp < 0 < zq) or (zq < 0 < zp):
                    S.add(p + (q - p) * zp / (zp - zq))
            # the two unbounded pieces: z is affine there
            ends = (((grid[0], z[0]), (grid[1], z[1]), True), ((grid[-2], z[-2]), (grid[-1], z[-1]), False))
            for (p, zp), (q, zq), left in ends:
                slope = (zq - zp) / (q - p)
                if slope:
                    r = p - zp / slope
                    if (left and r <= grid[0]) or (not left and r >= grid[-1]):
                        S.add(r)
        if len(S) > max_points:
            raise LineBudget
    return sorted(S)


def compare_on_line(
    la: list[list[Row]], lb: list[list[Row]], *, deadline: Deadline | None = None
) -> tuple[Fraction | None, tuple[Fraction, ...]]:
    """(t, points): a t where the two one-input networks differ, or None when they agree on all of ℝ; ``points``
    are the points compared (every breakpoint of either and one beyond each end: the certificate of "agree")."""
    S = sorted(set(breakpoints(la, deadline=deadline)) | set(breakpoints(lb, deadline=deadline)))
    pts = [S[0] - 1, *S, S[-1] + 1] if S else [Fraction(0), Fraction(1)]
    L = len(la) - 1
    Lb = len(lb) - 1
    for t in pts:
        if deadline is not None and deadline.expired():
            raise LineBudget
        if _forward_1d(la, t, L) != _forward_1d(lb, t, Lb):
            return t, tuple(pts)
    return None, tuple(pts)
