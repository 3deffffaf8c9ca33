"""Optimised slopes (α-CROWN) for the Lagrangian bound of the triangle relaxation, proposed in floats (issue 22).

Nothing here proves anything.  CROWN's back-substitution bounds σ on an unstable unit (l < 0 < u) from above by
its chord (slope u/(u − l)) and from below by a line α·z; CROWN takes α ∈ {0, 1}, but every α ∈ [0, 1] gives a
valid linear bound.  For a target c·z_T the back-substitution with the slopes α gives multipliers μ_k (k < T) of
the Lagrangian bound B(μ) of :func:`relusym._deep.bounds.dual_bounds`: μ_k = λ_k⁺·chord + λ_k⁻·α_k (λ_{k−1} =
μ_k W_k, λ_{T−1} = c W_T).  Here the α's of each target (each row, each box of a batch) are optimised by projected
gradient descent (Adam, clipped to [0, 1]) on the float value of B; the best μ seen is returned.  Since B(μ) is a
valid bound for ANY μ, the exact evaluation of B at these μ (rounded to dyadics) is a proof whatever the floats
did: the float optimisation only chooses which valid bound is computed.

At fixed bounds of the earlier layers the optimum over α is the triangle LP's optimum; the gain over the LP is
its price (a few dozen batched matrix products, for many targets and boxes at once, instead of one HiGHS solve a
target) and, through :func:`alpha_table`, bounds of the intermediate layers that are optimised too.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._deep.bounds import ExactLayers, Region, dual_bounds, quantize, target_rows
from relusym._deep.lp import DualProof, prove

__all__ = ["STEPS", "alpha_bound", "alpha_table", "alpha_dual", "alpha_proof"]

STEPS = 24  # projected-gradient steps per optimisation
_LR = 0.25  # Adam's step on α (α ∈ [0, 1])
_B1, _B2, _EPS = 0.9, 0.999, 1e-8


def _forward(
    W: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    T: int,
    Lam0: np.ndarray,
    c0: np.ndarray,
    lower: Sequence[np.ndarray],
    upper: Sequence[np.ndarray],
    L: np.ndarray,
    U: np.ndarray,
    alpha: list[np.ndarray],
    grad: bool,
) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray] | None]:
    """B(μ(α)) for every row (shape (..., n)), the multipliers μ_k (..., n, w_k) and, when ``grad``, dB/dα_k.

    ``Lam0`` (..., n, w_{T−1}): λ_{T−1}; ``c0`` (..., n): the constant term; ``lower``/``upper`` [k] (..., 1, w_k):
    the bounds of layer k; ``L``/``U`` (..., 1, m): the box."""
    total = c0.copy()
    Lam = Lam0
    saved = []
    mus: list[np.ndarray] = [np.empty(0)] * T
    for k in range(T - 1, -1, -1):
        lk, uk = lower[k], upper[k]
        cross = (lk < 0) & (uk > 0)
        act = lk >= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            chord = np.where(cross, uk / np.where(cross, uk - lk, 1.0), 0.0)
        s_up = np.where(act, 1.0, chord)
        s_lo = np.where(act, 1.0, np.where(cross, alpha[k], 0.0))
        pos = Lam > 0
        mu = np.where(pos, Lam * s_up, Lam * s_lo)
        # the chord's intercept: λ⁺·chord·(−l) on a crossing unit (the lower line through 0 adds nothing)
        icpt = np.where(cross, -chord * lk, 0.0)
        total = total + (np.where(pos, Lam, 0.0) * icpt).sum(axis=-1) + mu @ b[k]
        mus[k] = mu
        saved.append((k, pos, s_up, s_lo, icpt, cross, Lam))
        Lam = mu @ W[k]
    total = total + np.maximum(Lam * L, Lam * U).sum(axis=-1)
    if not grad:
        return total, mus, None
    grads: list[np.ndarray] = [np.empty(0)] * T
    gLam = np.where(Lam >= 0, U, L)  # d/dλ of max(λ lo, λ hi)
    for k, pos, s_up, s_lo, icpt, cross, Lam_k in reversed(saved):
        gmu = gLam @ W[k].T + b[k]
        grads[k] = np.where(cross & ~pos, gmu * Lam_k, 0.0)
        gLam = gmu * np.where(pos, s_up, s_lo) + np.where(pos, icpt, 0.0)
    return total, mus, grads


def alpha_bound(
    W: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    T: int,
    C: np.ndarray,
    lower: Sequence[np.ndarray],
    upper: Sequence[np.ndarray],
    L: np.ndarray,
    U: np.ndarray,
    steps: int = STEPS,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The least float bound B found of each target C[r]·z_T (layer T ≥ 1) on each box, and its multipliers.

    ``C`` (n, w_T) or (N, n, w_T); ``lower``/``upper`` [k] (N, w_k) the bounds of layers k < T on each box;
    ``L``/``U`` (N, m) the boxes.  Returns the bounds (N, n) and μ_k (N, n, w_k).  Starts from CROWN's slopes
    (α = 1 where u > −l, else 0), so the result is never above CROWN's."""
    N = L.shape[0]
    Cb = np.broadcast_to(C, (N,) + C.shape[-2:])
    Lam0 = Cb @ W[T]
    c0 = Cb @ b[T]
    lo = [v[:, None, :] for v in lower[:T]]
    up = [v[:, None, :] for v in upper[:T]]
    Lx, Ux = L[:, None, :], U[:, None, :]
    n = Cb.shape[1]
    alpha = [np.broadcast_to((up[k] > -lo[k]).astype(np.float64), (N, n, lo[k].shape[-1])).copy() for k in range(T)]
    m1 = [np.zeros_like(a) for a in alpha]
    m2 = [np.zeros_like(a) for a in alpha]
    best, best_mu, _ = _forward(W, b, T, Lam0, c0, lo, up, Lx, Ux, alpha, False)
    for it in range(1, steps + 1):
        val, mus, grads = _forward(W, b, T, Lam0, c0, lo, up, Lx, Ux, alpha, True)
        better = val < best
        if better.any():
            best = np.where(better, val, best)
            best_mu = [np.where(better[..., None], mu, bm) for mu, bm in zip(mus, best_mu, strict=True)]
        assert grads is not None
        for k in range(T):
            g = grads[k]
            m1[k] = _B1 * m1[k] + (1 - _B1) * g
            m2[k] = _B2 * m2[k] + (1 - _B2) * g * g
            step = _LR * (m1[k] / (1 - _B1**it)) / (np.sqrt(m2[k] / (1 - _B2**it)) + _EPS)
            alpha[k] = np.clip(alpha[k] - step, 0.0, 1.0)
    val, mus, _ = _forward(W, b, T, Lam0, c0, lo, up, Lx, Ux, alpha, False)
    better = val < best
    best = np.where(better, val, best)
    best_mu = [np.where(better[..., None], mu, bm) for mu, bm in zip(mus, best_mu, strict=True)]
    return best, best_mu


def alpha_table(
    W: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    L: np.ndarray,
    U: np.ndarray,
    upto: int,
    steps: int = STEPS,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Float bounds (N, w_k) of the layers 0 … upto on each box (N, m): interval arithmetic, then for every unit
    the interval bounds leave unstable, the α-optimised bound (on the α-optimised bounds of the earlier layers).
    A proposal: the exact tables recompute every bound."""
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    for T in range(upto + 1):
        lo_h, hi_h = (L, U) if T == 0 else (np.maximum(lower[-1], 0.0), np.maximum(upper[-1], 0.0))
        Wp, Wn = np.maximum(W[T], 0.0), np.minimum(W[T], 0.0)
        il = lo_h @ Wp.T + hi_h @ Wn.T + b[T]
        iu = hi_h @ Wp.T + lo_h @ Wn.T + b[T]
        if T > 0:
            n = W[T].shape[0]
            C = np.concatenate([np.eye(n), -np.eye(n)])
            val, _ = alpha_bound(W, b, T, C, lower, upper, L, U, steps)
            iu = np.minimum(iu, val[:, :n])
            il = np.maximum(il, -val[:, n:])
        lower.append(il)
        upper.append(iu)
    return lower, upper


def alpha_dual(
    layers: ExactLayers,
    T: int,
    signs: Sequence[int],
    units: Sequence[int],
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    lower: Sequence[Sequence[Fraction]],
    upper: Sequence[Sequence[Fraction]],
    steps: int = STEPS,
) -> list[Fraction]:
    """EXACT upper bounds of sign·z[T][unit] (T ≥ 1) on the box [lo, hi] from proved bounds lower/upper of the layers
    before T: the Lagrangian bound :func:`relusym._deep.bounds.dual_bounds` at the multipliers :func:`alpha_bound`
    proposes (rounded to dyadics).  Valid whatever the floats did: any multipliers give a valid bound."""
    C = target_rows(layers, T, signs, units)
    fl = [np.array([[float(v) for v in lay]]) for lay in lower[:T]]
    fu = [np.array([[float(v) for v in lay]]) for lay in upper[:T]]
    L = np.array([[float(v) for v in lo]])
    U = np.array([[float(v) for v in hi]])
    _, mus = alpha_bound(layers.Wf, layers.bf, T, C, fl, fu, L, U, steps)
    qm = [quantize(np.nan_to_num(mu[0], nan=0.0, posinf=0.0, neginf=0.0)) for mu in mus]
    return dual_bounds(layers, T, signs, units, qm, lo, hi, lower[:T], upper[:T])


def alpha_proof(
    layers: ExactLayers,
    T: int,
    unit: int,
    sign: int,
    box: Region,
    lower: Sequence[Sequence[Fraction]],
    upper: Sequence[Sequence[Fraction]],
    fl: Sequence[np.ndarray],
    fu: Sequence[np.ndarray],
    steps: int = STEPS,
) -> tuple[float, list[np.ndarray], DualProof | None]:
    """The float bound of sign·z[T][unit] on ``box`` with the optimised slopes, its multipliers μ_k (one vector a
    layer k < T) and, when that bound is below 0, the exact dual proof at those μ (:func:`relusym._deep.lp.prove`,
    the same kind as the triangle LP's), given proved bounds lower/upper of the layers before T (``fl``/``fu``:
    the same in floats)."""
    C = np.zeros((1, layers.widths[T + 1]))
    C[0, unit] = sign
    L = np.array([[float(v) for v in box[0]]])
    U = np.array([[float(v) for v in box[1]]])
    val, mus = alpha_bound(layers.Wf, layers.bf, T, C, [v[None] for v in fl], [v[None] for v in fu], L, U, steps)
    mu1 = [np.nan_to_num(mu[0, 0], nan=0.0, posinf=0.0, neginf=0.0) for mu in mus]
    v = float(val[0, 0])
    return v, mu1, (prove(layers, T, unit, sign, mu1, box, lower, upper) if v < 0 else None)
