"""Float proposals of inputs where two networks are far apart on a box (issue 22): the lower end of the distance
bracket.  Nothing here proves anything; :mod:`relusym._deep.box_decide` evaluates the proposed points exactly.

Projected sign-gradient ascent of s·(y1_i − y2_i) for every output i and sign s, from many starts at once (the
best of many uniform samples and random points), with the gradient of each network through its activation
pattern at the point (a product of masked weight matrices).  Points are dyadic grid points of the box."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from relusym._deep.bounds import ExactLayers
from relusym._deep.witness import FloatNet, exact_point

__all__ = ["gap_maximisers"]

Point = tuple[Fraction, ...]


def _grad(net: FloatNet, U: np.ndarray, outs: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """signs[r]·y[outs[r]] at each row of U and its gradient in U."""
    H = U
    masks = []
    last = len(net.W) - 1
    for k in range(last):
        Z = H @ net.W[k].T + net.b[k]
        masks.append(Z > 0)
        H = np.maximum(Z, 0.0)
    Y = H @ net.W[last].T + net.b[last]
    rows = np.arange(len(U))
    G = np.zeros((len(U), net.W[last].shape[0]))
    G[rows, outs] = signs
    for k in range(last, -1, -1):
        if k < last:
            G = G * masks[k]
        G = G @ net.W[k]
    return signs * Y[rows, outs], G


def _ascend(
    n1: FloatNet, n2: FloatNet, V: np.ndarray, o: np.ndarray, sg: np.ndarray, steps: int, step0: float
) -> np.ndarray:
    """The best iterate of each row of projected sign-gradient ascent of sg·(y1_o − y2_o)."""
    best_v, best_val = V.copy(), np.full(len(V), -np.inf)
    for t in range(steps + 1):
        y1, g1 = _grad(n1, V, o, sg)
        y2, g2 = _grad(n2, V, o, sg)
        better = y1 - y2 > best_val
        best_v[better], best_val[better] = V[better], (y1 - y2)[better]
        step = step0 * (1.0 - t / steps) + 1e-6
        V = np.clip(V + step * np.sign(g1 - g2), 0.0, 1.0)
    return best_v


def gap_maximisers(
    L1: ExactLayers,
    L2: ExactLayers,
    lo: Point,
    hi: Point,
    *,
    samples: int = 4096,
    starts: int = 16,
    steps: int = 200,
    seed: int = 0,
    top: int = 8,
    step0: tuple[float, ...] = (0.02, 0.005, 0.001),
) -> list[Point]:
    """Up to ``top`` exact grid points of the box where the float gap max_i |y1_i − y2_i| is largest after the
    ascents (one per initial step in ``step0``, in unit coordinates; distinct points, best first).  The gap
    peaks in thin slivers between the two networks' activation patterns, so small steps find more than large."""
    n1, n2 = FloatNet(L1, lo, hi), FloatNet(L2, lo, hi)
    k = n1.W[-1].shape[0]
    U = n1.samples(samples, seed)
    D = n1.preactivations(U)[-1] - n2.preactivations(U)[-1]
    rng = np.random.default_rng(seed)
    S, outs, signs = [], [], []
    for i in range(k):
        for s in (1.0, -1.0):
            best = np.argsort(-s * D[:, i])[: starts // 2]
            S.append(np.concatenate([U[best], rng.random((starts - len(best), n1.m))]))
            outs += [i] * starts
            signs += [s] * starts
    V0 = np.concatenate(S)
    o, sg = np.array(outs), np.array(signs)
    V = np.concatenate([_ascend(n1, n2, V0, o, sg, steps, s0) for s0 in step0])
    gap = np.max(np.abs(n1.preactivations(V)[-1] - n2.preactivations(V)[-1]), axis=1)
    out: list[Point] = []
    for r in np.argsort(-gap):
        x = exact_point(lo, hi, V[r])
        if x not in out:
            out.append(x)
        if len(out) >= top:
            break
    return out
