"""Alignment of a noisy copy of a deep network (the tolerance mode; nothing here is exact).

Given θ1 and a copy θ2 ≈ g·θ1 whose hidden layers were permuted and positively rescaled and whose weights carry
noise, find g layer by layer: the rows of layer ℓ of θ1 are rewritten in the coordinates of θ2's layer ℓ − 1
(permuted, and divided by the scales found there), both sets of rows are normalised to unit length, matched by a
linear assignment on their distances (scipy's ``linear_sum_assignment``), and each unit's scale is the ratio of the
norms.  ``residuals`` are the distances of the matched unit rows; a unit is matched when its residual is at most
``tol``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._deep.mlp import MLP
from relusym._deep.symmetry import DeepSymmetry, LayerMove
from relusym._exact.numbers import as_float64
from relusym.errors import InvalidNetworkError

__all__ = ["DeepAlignment", "align_deep"]


@dataclass(frozen=True, eq=False)
class DeepAlignment:
    """The answer of :func:`relusym.align` for deep networks: ``symmetry`` (per-layer permutation and scales with
    g·θ1 ≈ θ2), ``residuals[ℓ−1][i]`` the distance of unit i of hidden layer ℓ to its partner (unit rows),
    ``matched_fraction`` the share of hidden units with residual ≤ ``tol``, and ``unmatched`` as (layer, unit)
    pairs (1-based layers)."""

    symmetry: DeepSymmetry
    residuals: tuple[np.ndarray, ...]
    matched_fraction: float
    unmatched: tuple[tuple[int, int], ...]
    tol: float

    def permutation(self, layer: int) -> np.ndarray:
        """The permutation of hidden layer ``layer`` (1-based): unit i of θ1 goes to slot ``permutation[i]``."""
        return np.asarray(self.symmetry.layers[layer - 1].perm, dtype=np.int64)

    def scales(self, layer: int) -> np.ndarray:
        return np.array([float(s) for s in self.symmetry.layers[layer - 1].scales], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layers": [
                {
                    "permutation": list(mv.perm),
                    "scales": [float(s) for s in mv.scales],
                    "residuals": [float(r) if math.isfinite(r) else None for r in res.tolist()],
                }
                for mv, res in zip(self.symmetry.layers, self.residuals, strict=True)
            ],
            "matched_fraction": self.matched_fraction,
            "unmatched": [list(p) for p in self.unmatched],
            "tol": self.tol,
        }

    def __str__(self) -> str:
        n = sum(len(r) for r in self.residuals)
        return f"alignment of {n} hidden units in {len(self.residuals)} layers: {self.matched_fraction:.1%} matched"


def align_deep(net1: MLP, net2: MLP, *, tol: float | None = None) -> DeepAlignment:
    """Per-layer permutations and positive scales g with g·θ1 ≈ θ2, for two MLPs of the same widths."""
    from scipy.optimize import linear_sum_assignment

    if net1.widths != net2.widths:
        raise InvalidNetworkError(f"align needs networks of the same widths, got {net1.widths} and {net2.widths}")
    if tol is not None and not (isinstance(tol, int | float) and tol >= 0 and math.isfinite(tol)):
        raise InvalidNetworkError(f"tol must be a non-negative number, got {tol!r}")
    tol_ = 1e-3 if tol is None else float(tol)
    L = len(net1.weights)
    slot = np.arange(net1.m)  # column j of θ1's current layer lives at column slot[j] of θ2's
    scale = np.ones(net1.m)  # and is divided by scale[j]
    moves: list[LayerMove] = []
    residuals: list[np.ndarray] = []
    unmatched: list[tuple[int, int]] = []
    for ell in range(L - 1):
        W1, b1 = as_float64(net1.weights[ell]), as_float64(net1.biases[ell])
        W2, b2 = as_float64(net2.weights[ell]), as_float64(net2.biases[ell])
        R1 = np.zeros((W1.shape[0], W2.shape[1] + 1))
        R1[:, slot] = W1 / scale[None, :]
        R1[:, -1] = b1
        R2 = np.concatenate([W2, b2[:, None]], axis=1)
        n1 = np.linalg.norm(R1, axis=1)
        n2 = np.linalg.norm(R2, axis=1)
        U1 = R1 / np.where(n1 > 0, n1, 1.0)[:, None]
        U2 = R2 / np.where(n2 > 0, n2, 1.0)[:, None]
        cost = np.sqrt(np.maximum(0.0, 2.0 - 2.0 * (U1 @ U2.T)))
        rows, cols = linear_sum_assignment(cost)
        perm = np.empty(len(rows), dtype=np.int64)
        perm[rows] = cols
        d = np.where(n1 > 0, n2[perm] / np.where(n1 > 0, n1, 1.0), 1.0)
        res = cost[np.arange(len(perm)), perm]
        residuals.append(res)
        unmatched += [(ell + 1, int(i)) for i in np.nonzero(res > tol_)[0].tolist()]
        moves.append(LayerMove(tuple(int(p) for p in perm), tuple(Fraction(float(x)) for x in d)))
        slot, scale = perm, d
    total = sum(len(r) for r in residuals)
    frac = 1.0 if total == 0 else 1.0 - len(unmatched) / total
    return DeepAlignment(DeepSymmetry(tuple(moves)), tuple(residuals), frac, tuple(unmatched), tol_)
