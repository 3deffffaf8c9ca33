"""Float proposals of inputs where a hidden unit has a given sign, on a box (issue 22).

Nothing here proves anything: the points are dyadic rationals of the box (lo + (hi − lo)·k/2^20), proposed by
many uniform samples evaluated in one batched float pass, and by projected (sub)gradient ascent of ±z_unit from
the best samples; :mod:`relusym._deep.status` keeps a point only after evaluating the unit exactly there.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._deep.bounds import ExactLayers

__all__ = ["GRID", "FloatNet", "exact_point"]

GRID = 1 << 20  # the points' grid: lo + (hi − lo)·k / GRID


def exact_point(lo: Sequence[Fraction], hi: Sequence[Fraction], u: np.ndarray) -> tuple[Fraction, ...]:
    """The grid point of the box nearest to lo + (hi − lo)·u (u ∈ [0, 1]^m, clipped)."""
    k = np.clip(np.rint(np.asarray(u, dtype=np.float64) * GRID), 0, GRID).astype(np.int64).tolist()
    return tuple(a + (b - a) * Fraction(int(t), GRID) for a, b, t in zip(lo, hi, k, strict=True))


class FloatNet:
    """The network in floats with its input box mapped to [0, 1]^m."""

    def __init__(self, layers: ExactLayers, lo: Sequence[Fraction], hi: Sequence[Fraction]) -> None:
        flo = np.array([float(v) for v in lo])
        fhi = np.array([float(v) for v in hi])
        self.W = [w.copy() for w in layers.Wf]
        self.b = [b.copy() for b in layers.bf]
        self.b[0] = self.b[0] + self.W[0] @ flo
        self.W[0] = self.W[0] * (fhi - flo)[None, :]
        self.m = layers.m

    def preactivations(self, U: np.ndarray, upto: int | None = None) -> list[np.ndarray]:
        out = []
        H = U
        last = len(self.W) - 1 if upto is None else upto
        for k in range(last + 1):
            Z = H @ self.W[k].T + self.b[k]
            out.append(Z)
            H = np.maximum(Z, 0.0)
        return out

    def samples(self, count: int, seed: int) -> np.ndarray:
        """``count`` uniform grid points of [0, 1]^m, with the 2^m corners first when m ≤ 10."""
        rng = np.random.default_rng(seed)
        U = rng.integers(0, GRID + 1, size=(count, self.m)) / GRID
        if self.m <= 10:
            corners = ((np.arange(1 << self.m)[:, None] >> np.arange(self.m)[None, :]) & 1).astype(np.float64)
            U = np.concatenate([corners, U])
        return np.asarray(U)

    def ascend(
        self,
        U0: np.ndarray,
        layer: int,
        units: np.ndarray,
        signs: np.ndarray,
        steps: int = 150,
        *,
        box: tuple[np.ndarray, np.ndarray] | None = None,
        step0: float = 0.05,
        floor: float = 1e-4,
    ) -> np.ndarray:
        """Projected sign-gradient ascent of signs[r]·z[layer][units[r]] from the rows of U0 (one target per row),
        in [0, 1]^m or, with ``box`` = (lo, hi) (one row per target), each row in its own box with steps a
        fraction of that box's sides (``step0`` at the start, decreasing linearly, plus ``floor``)."""
        U = U0.copy()
        n = len(units)
        rows = np.arange(n)
        lo, hi = box if box is not None else (0.0, 1.0)
        width = hi - lo
        for s in range(steps):
            H = U
            masks = []
            for k in range(layer + 1):
                Z = H @ self.W[k].T + self.b[k]
                masks.append(Z > 0)
                H = np.maximum(Z, 0.0)
            G = np.zeros((n, self.W[layer].shape[0]))
            G[rows, units] = signs
            for k in range(layer, -1, -1):
                if k < layer:
                    G = G * masks[k]
                G = G @ self.W[k]
            step = step0 * (1.0 - s / steps) + floor
            U = np.clip(U + step * width * np.sign(G), lo, hi)
        return U
