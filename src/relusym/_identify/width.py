"""Float mode: the orientations of the recovered neurons that absorb the linear part, within the measured precision.

A recovered function f(x) = Σ_u κ_u σ(α̂_u·x + β̂_u) + M x + e is realized by its N kink classes alone (width
N, the least possible) exactly when some set S of classes, each carried by a negatively oriented neuron, has

    Σ_{u ∈ S} κ_u α̂_uᵀ = −M                                               (docs/math/width.md, cost 0)

(flipping neuron u adds κ_u α̂_uᵀ to the linear part: σ(t) − σ(−t) = t).  With the columns X_u = vec(κ_u α̂_uᵀ)
this is X s = −vec(M) for s ∈ {0, 1}^N: a subset sum in k·m dimensions.  Recovered values are known only up to
the measured precision, so the search is for every s with ‖X s + vec(M)‖ ≤ tol.

The search is the nullspace enumeration of the exact flip search (:mod:`relusym._fibre.flipsearch`), over the
reals: a column-pivoted QR of X picks r well-conditioned pivot columns P (r its numerical rank); for each of the
2^(N − r) choices of the free entries s_F the pivot entries are determined, s_P = X_P⁺ (t − X_F s_F), and a
candidate is kept when they round to 0/1 within a quarter and the whole residual is within tol.  The sums over
the free columns are formed by doubling (:func:`relusym._exact.subsets.subset_sums_by_doubling`, the one home
of subset sums).  When k·m ≥ N (generic: r = N) there is a single candidate, the least-squares solution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relusym._base.deadline import Deadline
from relusym._exact.subsets import subset_sums_by_doubling

__all__ = ["OrientationSearch", "absorbing_orientations"]

_LOW_BITS = 16  # free entries enumerated by one doubling table (2^16 rows)
MAX_FREE = 26  # at most 2^26 choices of the free entries are enumerated
_MAX_KEEP = 64  # candidates kept, best residual first


@dataclass(frozen=True)
class OrientationSearch:
    """The 0/1 vectors s found with ‖X s − t‖ ≤ tol (best first, at most 64), the numerical rank r of X, and
    ``complete``: whether every s was examined (else ``reason`` says why not)."""

    solutions: tuple[np.ndarray, ...]
    rank: int
    complete: bool
    reason: str | None = None


def absorbing_orientations(X: np.ndarray, t: np.ndarray, tol: float, deadline: Deadline) -> OrientationSearch:
    """Every s ∈ {0, 1}^N with ‖X s − t‖ ≤ tol (X: d × N, t: d), by enumerating the free entries of a
    column-pivoted QR of X (see the module docstring)."""
    from scipy.linalg import qr

    d, N = X.shape
    if N == 0:
        sols = (np.zeros(0, dtype=np.int64),) if float(np.linalg.norm(t)) <= tol else ()
        return OrientationSearch(sols, 0, True)
    _Q, R, piv = qr(X, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    # a pivot column counts when the precision cannot move the pivot entries by a quarter: s_P = X_P⁺(…) errs by
    # about tol / σ_min(X_P), and |R_ii| bounds σ_min from above (within a small factor)
    r = int(np.sum(diag > 64.0 * tol))
    free = N - r
    if free > MAX_FREE:
        return OrientationSearch(
            (),
            r,
            False,
            f"2^{free} orientations of the {free} recovered neurons beyond the numerical rank {r} of the flip "
            f"matrix (k·m = {d}) were not enumerated (at most 2^{MAX_FREE})",
        )
    P, F = piv[:r], piv[r:]
    W = np.linalg.pinv(X[:, P]) if r else np.zeros((0, d))
    c0 = W @ t
    C = W @ X[:, F] if r else np.zeros((0, free))
    lo = min(free, _LOW_BITS)
    hi = free - lo
    # the low free entries: every sum of the columns −C_j by doubling (row index = bitmask)
    table = subset_sums_by_doubling(np.zeros((1, r)), (-C[:, j] for j in range(lo)), lambda s, y: s + y[None, :])
    bits_lo = ((np.arange(1 << lo)[:, None] >> np.arange(lo)[None, :]) & 1).astype(np.int64)
    found: list[tuple[float, np.ndarray]] = []
    for h in range(1 << hi):
        if h and deadline.expired():
            return OrientationSearch(
                tuple(s for _, s in sorted(found, key=lambda q: q[0])),
                r,
                False,
                f"the search over 2^{free} orientations ran past the budget after {h << lo} of them",
            )
        bh = np.array([(h >> i) & 1 for i in range(hi)], dtype=np.int64)
        base = c0 - C[:, lo:] @ bh if hi else c0
        vals = base[None, :] + table
        rnd = np.rint(vals)
        ok = np.all((np.abs(vals - rnd) <= 0.25) & ((rnd == 0) | (rnd == 1)), axis=1)
        for q in np.flatnonzero(ok).tolist():
            s = np.zeros(N, dtype=np.int64)
            s[P] = rnd[q].astype(np.int64)
            s[F[:lo]] = bits_lo[q]
            s[F[lo:]] = bh
            res = float(np.linalg.norm(X @ s - t))
            if res <= tol:
                found.append((res, s))
        if len(found) > 4 * _MAX_KEEP:
            found = sorted(found, key=lambda q: q[0])[:_MAX_KEEP]
    found.sort(key=lambda q: q[0])
    return OrientationSearch(tuple(s for _, s in found[:_MAX_KEEP]), r, True)
