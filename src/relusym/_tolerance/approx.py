"""The float-tolerance mode (docs/math/normal-form.md (floats and the tolerance mode)): approximate equivalence, a
distance between realized functions,
(the alignment of noisy copies is in :mod:`relusym.alignment`).

Nothing here is exact and nothing here is used by the exact decisions (``equivalent``, ``normal_form``): this
mode is explicit, with ``atol``/``rtol`` arguments.  **Tolerance equality is not transitive**: θ1 ≈ θ2 and
θ2 ≈ θ3 do not imply θ1 ≈ θ3.

Tolerances.  Each quantity is compared in its own units, with τ = atol + rtol·scale:

* hyperplanes, rescaled so that ‖a‖₂ = 1 (w = (a, b)/‖a‖): two are the same unoriented hyperplane when
  min(‖w − w′‖, ‖w + w′‖) ≤ atol + rtol·max(‖w‖, ‖w′‖);
* kinks (k-vectors ‖a_i‖·v_i summed per hyperplane cluster): scale = max(‖c₁‖, ‖c₂‖, maxᵢ ‖v_i‖·‖(a_i, b_i)‖),
  the largest single term of either network;
* the affine part (M, e): scale = ‖c₁‖ + ‖c₂‖ + Σᵢ ‖v_i‖·‖(a_i, b_i)‖ over the neurons of both networks, which
  bounds |ρ(θ1)(x)| + |ρ(θ2)(x)| on the unit ball and absorbs the rounding that accumulates in these sums.

Nearest-neighbour searches use ``scipy.spatial.cKDTree``, after an orthonormal projection to at most 12
dimensions when the points have more coordinates (a projection never increases distances, so no close pair is
lost; candidates are then checked with their full coordinates).  No n×n matrix is ever formed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym.errors import InvalidNetworkError

__all__ = [
    "ApproxVerdict",
    "equivalent_approx",
    "distance",
    "CHUNK",
    "check_compatible",
    "project",
    "projector",
    "row_dist",
    "unique_rows",
]

NOT_TRANSITIVE = "tolerance equality is not transitive: θ1 ≈ θ2 and θ2 ≈ θ3 do not imply θ1 ≈ θ3"
_PROJ_DIM = 12
CHUNK = 1 << 16


# ----------------------------------------------------------------------------------------------------------
# nearest-neighbour helpers


def projector(dim: int, to: int = _PROJ_DIM) -> np.ndarray | None:
    """An orthonormal dim×to matrix (fixed seed), or None when dim ≤ to."""
    if dim <= to:
        return None
    rng = np.random.default_rng(0x5EED)
    q, _ = np.linalg.qr(rng.standard_normal((dim, to)))
    return np.ascontiguousarray(q)


def project(P: np.ndarray, Q: np.ndarray | None) -> np.ndarray:
    return P if Q is None else P @ Q


def row_dist(X: np.ndarray, i: np.ndarray, Y: np.ndarray, j: np.ndarray, sign: np.ndarray | float = 1.0) -> np.ndarray:
    """‖X[i] − sign·Y[j]‖ for index arrays i, j (chunked, so no big temporary)."""
    out = np.empty(len(i), dtype=np.float64)
    sgn = np.broadcast_to(np.asarray(sign, dtype=np.float64), (len(i),))
    step = max(1, CHUNK * 16 // max(1, X.shape[1]))
    for s in range(0, len(i), step):
        sl = slice(s, s + step)
        D = X[i[sl]] - sgn[sl, None] * Y[j[sl]]
        out[sl] = np.sqrt(np.einsum("ij,ij->i", D, D))
    return out


def unique_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique rows, index of each row's unique row), as ``np.unique(X, axis=0, return_inverse=True)`` gives,
    but by hashing row bytes (much faster for wide rows), and without a copy when all rows differ.  X must be a
    float64 array owned by the caller: -0.0 is turned into 0.0 in place.  Hash collisions are checked."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    np.add(X, 0.0, out=X)  # -0.0 + 0.0 = 0.0
    n = len(X)
    if n == 0:
        return X, np.zeros(0, dtype=np.int64)
    keys = np.fromiter((hash(r.tobytes()) for r in X), dtype=np.int64, count=n)
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    if len(first) == n:
        return X, np.arange(n, dtype=np.int64)  # no equal hashes: no duplicates
    inv = inv.ravel().astype(np.int64)
    first = first.astype(np.int64)
    multi = np.flatnonzero(np.bincount(inv)[inv] > 1)
    same = np.ones(len(multi), dtype=bool)
    step = max(1, CHUNK * 16 // max(1, X.shape[1]))
    for s in range(0, len(multi), step):
        rows = multi[s : s + step]
        same[s : s + step] = np.all(X[rows] == X[first[inv[rows]]], axis=1)
    if not same.all():  # a hash collision: give the odd rows groups of their own
        bad = multi[~same]
        inv[bad] = len(first) + np.arange(len(bad))
        first = np.concatenate([first, bad])
    return X[first], inv


def _close_pairs(P: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """All pairs (p, q), p ≠ q, of rows of P with ‖P_p − P_q‖ ≤ atol + rtol·max(‖P_p‖, ‖P_q‖) (an (N, 2) int
    array, each pair once).  Rows are grouped by the power of two above their norm, so that a few rows of large
    norm do not widen the search radius for all the others."""
    from scipy.spatial import cKDTree

    if len(P) < 2 or not (atol >= 0 and rtol >= 0):
        return np.zeros((0, 2), dtype=np.int64)
    norms = np.linalg.norm(P, axis=1)
    Q = projector(P.shape[1])
    G = project(P, Q)
    tree = cKDTree(G)
    expo = np.ceil(np.log2(np.maximum(norms, np.finfo(np.float64).tiny)))
    found: list[np.ndarray] = []
    for val in np.unique(expo):
        rows = np.flatnonzero(expo == val)
        radius = atol + rtol * float(2.0**val)
        sub = cKDTree(G[rows])
        sdm = sub.sparse_distance_matrix(tree, radius, output_type="ndarray")
        p, q = rows[sdm["i"].astype(np.int64)], sdm["j"].astype(np.int64)
        # keep each pair once, from the side with the larger norm (ties: the smaller index)
        keep = (p != q) & ((norms[q] < norms[p]) | ((norms[q] == norms[p]) & (p < q)))
        found.append(np.stack([p[keep], q[keep]], axis=1))
    pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
    if len(pairs):
        d = row_dist(P, pairs[:, 0], P, pairs[:, 1])
        pairs = pairs[d <= atol + rtol * np.maximum(norms[pairs[:, 0]], norms[pairs[:, 1]])]
    return pairs


def _components(n: int, pairs: np.ndarray) -> np.ndarray:
    """Connected-component label of each of n nodes (labels ordered by smallest member)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if n == 0:
        return np.zeros(0, dtype=np.int64)
    g = (
        coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
        if len(pairs)
        else coo_matrix((n, n))
    )
    _, lab = connected_components(g, directed=False)
    # relabel so that label order follows the smallest member
    first = np.full(lab.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, lab, np.arange(n))
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.asarray(rank[lab].astype(np.int64))


def _cluster_signed(W: np.ndarray, atol: float, rtol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cluster the unoriented hyperplanes given by the rows of W (‖a‖ = 1): rows p, q are linked when
    min(‖W_p − W_q‖, ‖W_p + W_q‖) ≤ atol + rtol·max(‖W_p‖, ‖W_q‖); clusters are the connected components.

    Rather than choosing a sign for each row (unstable when the leading coordinate is near zero), the search
    runs over the 2N points ±W, so either orientation is found by a plain nearest-neighbour query.  Returns
    (cluster label per row, first row of each cluster, orientation ±1 of each row relative to that first row).
    """
    N = len(W)
    uniq, inv = unique_rows(np.concatenate([W, -W]))
    upairs = _close_pairs(uniq, atol, rtol)
    rep = np.full(len(uniq), 2 * N, dtype=np.int64)
    np.minimum.at(rep, inv, np.arange(2 * N))  # one point (the first) per unique row
    pa, pb = rep[upairs[:, 0]], rep[upairs[:, 1]]
    same = np.stack([np.arange(2 * N), rep[inv]], axis=1)  # points on one unique row: the same hyperplane
    allp = np.concatenate([np.stack([pa, pb], axis=1), same]) % max(N, 1)
    allp = allp[allp[:, 0] != allp[:, 1]]
    lab = _components(N, allp)
    C = int(lab.max()) + 1 if N else 0
    first = np.full(C, N, dtype=np.int64)
    np.minimum.at(first, lab, np.arange(N))
    orient = np.where(np.einsum("ij,ij->i", W, W[first[lab]]) >= 0, 1.0, -1.0)
    return lab, first, orient


# ----------------------------------------------------------------------------------------------------------
# tolerance equivalence


@dataclass(frozen=True)
class ApproxVerdict:
    """The answer of :func:`equivalent_approx`: truthy iff ρ(θ1) ≈ ρ(θ2) within the tolerances.

    ``max_kink_mismatch``: the largest ‖κ_C‖₂ over hyperplane clusters of the difference network;
    ``max_affine_mismatch``: max(‖M‖_F, ‖e‖₂) of its affine part; ``matched``: (i, j) pairs of neurons of θ1
    and θ2 on the same hyperplane (paired in index order inside each cluster); ``clusters``: every hyperplane
    cluster as (neurons of θ1, neurons of θ2); ``tol_*`` and ``scale_*``: the tolerances used and their
    scales (see the module docstring); ``note``: tolerance equality is not transitive.
    """

    equivalent: bool
    max_kink_mismatch: float
    max_affine_mismatch: float
    matched: tuple[tuple[int, int], ...]
    clusters: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    tol_kink: float
    tol_affine: float
    scale_kink: float
    scale_affine: float
    atol: float
    rtol: float
    note: str = NOT_TRANSITIVE

    def __bool__(self) -> bool:
        return self.equivalent

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "relusym.approx-verdict/1",
            "equivalent": self.equivalent,
            "max_kink_mismatch": self.max_kink_mismatch,
            "max_affine_mismatch": self.max_affine_mismatch,
            "tol_kink": self.tol_kink,
            "tol_affine": self.tol_affine,
            "scale_kink": self.scale_kink,
            "scale_affine": self.scale_affine,
            "atol": self.atol,
            "rtol": self.rtol,
            "matched": [list(p) for p in self.matched],
            "clusters": [[list(a), list(b)] for a, b in self.clusters],
            "note": self.note,
        }

    def __str__(self) -> str:
        word = "approximately equivalent" if self.equivalent else "not approximately equivalent"
        return (
            f"{word}: max kink mismatch {self.max_kink_mismatch:.3g} (tolerance {self.tol_kink:.3g}), "
            f"affine mismatch {self.max_affine_mismatch:.3g} (tolerance {self.tol_affine:.3g}); {self.note}"
        )


@dataclass(frozen=True, eq=False)
class _Decomposition:
    """The tolerance decomposition of the difference network θ1 ⊖ θ2 (docs/math/normal-form.md on clusters)."""

    kinks: np.ndarray  # C × k, κ per cluster
    M: np.ndarray  # k × m
    e: np.ndarray  # k
    clusters: list[tuple[tuple[int, ...], tuple[int, ...]]]
    scale_kink: float
    scale_affine: float


def check_compatible(net1: Network, net2: Network, what: str) -> None:
    if not isinstance(net1, Network) or not isinstance(net2, Network):
        raise InvalidNetworkError(f"{what} needs two Networks")
    if net1.m != net2.m:
        raise InvalidNetworkError(f"{what}: the networks have different input sizes m = {net1.m} and {net2.m}")
    if net1.k != net2.k:
        raise InvalidNetworkError(f"{what}: the networks have different output sizes k = {net1.k} and {net2.k}")


def _decompose(net1: Network, net2: Network, atol: float, rtol: float) -> _Decomposition:
    if not (atol >= 0 and rtol >= 0 and math.isfinite(atol) and math.isfinite(rtol)):
        raise InvalidNetworkError(f"atol and rtol must be finite and ≥ 0, got atol={atol!r}, rtol={rtol!r}")
    V1, A1, b1, c1 = net1.to_float(np.float64)
    V2, A2, b2, c2 = net2.to_float(np.float64)
    n1, m = A1.shape
    V = np.concatenate([V1, -V2], axis=1)
    A = np.concatenate([A1, A2], axis=0)
    b = np.concatenate([b1, b2])
    c = c1 - c2
    vnorm = np.linalg.norm(V, axis=0)
    anorm = np.linalg.norm(A, axis=1)
    wnorm = np.hypot(anorm, b)
    terms = vnorm * wnorm
    scale_kink = float(max(np.linalg.norm(c1), np.linalg.norm(c2), terms.max(initial=0.0)))
    scale_affine = float(np.linalg.norm(c1) + np.linalg.norm(c2) + terms.sum())
    e = c.copy()
    const = (anorm == 0) & (vnorm > 0) & (b > 0)
    if const.any():
        e += V[:, const] @ b[const]
    hyp = np.flatnonzero((anorm > 0) & (vnorm > 0))
    k = V.shape[0]
    M = np.zeros((k, m))
    if len(hyp) == 0:
        return _Decomposition(np.zeros((0, k)), M, e, [], scale_kink, scale_affine)
    r = anorm[hyp]
    W = np.concatenate([A[hyp], b[hyp, None]], axis=1) / r[:, None]
    kv = V[:, hyp].T * r[:, None]  # N × k, each neuron's kink ‖a‖·v on its unit hyperplane
    lab, first, orient = _cluster_signed(W, atol, rtol)
    C = len(first)
    kinks = np.zeros((C, k))
    np.add.at(kinks, lab, kv)
    opp = orient < 0
    if opp.any():
        idx = hyp[opp]
        M += V[:, idx] @ A[idx]
        e += V[:, idx] @ b[idx]
    order = np.argsort(lab, kind="stable")
    bounds = np.flatnonzero(np.diff(lab[order])) + 1
    clusters = []
    for grp in np.split(hyp[order], bounds):
        g = np.sort(grp)
        clusters.append((tuple(int(i) for i in g[g < n1]), tuple(int(i) - n1 for i in g[g >= n1])))
    return _Decomposition(kinks, M, e, clusters, scale_kink, scale_affine)


def equivalent_approx(net1: Network, net2: Network, *, atol: float = 0.0, rtol: float = 1e-9) -> ApproxVerdict:
    """ρ(θ1) ≈ ρ(θ2) within tolerance (docs/math/normal-form.md (floats and the tolerance mode)): build the difference
    network θ1 ⊖ θ2, rescale every
    neuron to ‖a_i‖₂ = 1, cluster unoriented hyperplanes, orient each cluster by its first member (opposite
    members move v_i(a_i·x + b_i) into the affine part, docs/math/normal-form.md), and require every cluster kink and
    the
    affine part (M, e) to be within tolerance.  The widths may differ.  Not transitive (see ``note``)."""
    check_compatible(net1, net2, "equivalent_approx")
    d = _decompose(net1, net2, float(atol), float(rtol))
    max_kink = float(np.linalg.norm(d.kinks, axis=1).max(initial=0.0))
    max_aff = float(max(np.linalg.norm(d.M), np.linalg.norm(d.e)))
    tol_kink = atol + rtol * d.scale_kink
    tol_aff = atol + rtol * d.scale_affine
    matched: list[tuple[int, int]] = []
    for g1, g2 in d.clusters:
        matched.extend(zip(g1, g2, strict=False))
    return ApproxVerdict(
        equivalent=bool(max_kink <= tol_kink and max_aff <= tol_aff),
        max_kink_mismatch=max_kink,
        max_affine_mismatch=max_aff,
        matched=tuple(sorted(matched)),
        clusters=tuple(d.clusters),
        tol_kink=float(tol_kink),
        tol_affine=float(tol_aff),
        scale_kink=d.scale_kink,
        scale_affine=d.scale_affine,
        atol=float(atol),
        rtol=float(rtol),
    )


@dataclass(frozen=True, eq=False)
class _Classes:
    """One network's approximate normal form: unit hyperplanes U (‖â‖ = 1, sign fixed so that the largest
    |â_j| is positive), kinks K, affine part (M, e)."""

    U: np.ndarray  # C × (m+1)
    K: np.ndarray  # C × k
    M: np.ndarray  # k × m
    e: np.ndarray  # k


def _classes(
    V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray, atol: float, rtol: float, drop: float
) -> _Classes:
    k, m = V.shape[0], A.shape[1]
    vnorm = np.linalg.norm(V, axis=0)
    anorm = np.linalg.norm(A, axis=1)
    e = c.astype(np.float64).copy()
    const = (anorm == 0) & (vnorm > 0) & (b > 0)
    if const.any():
        e += V[:, const] @ b[const]
    M = np.zeros((k, m))
    hyp = np.flatnonzero((anorm > 0) & (vnorm > 0))
    if len(hyp) == 0:
        return _Classes(np.zeros((0, m + 1)), np.zeros((0, k)), M, e)
    r = anorm[hyp]
    W = np.concatenate([A[hyp], b[hyp, None]], axis=1) / r[:, None]
    kv = V[:, hyp].T * r[:, None]
    lab, first, orient = _cluster_signed(W, atol, rtol)
    U = W[first]
    lead = np.argmax(np.abs(U[:, :m]), axis=1)
    sign = np.where(U[np.arange(len(U)), lead] >= 0, 1.0, -1.0)
    U = U * sign[:, None]
    o = orient * sign[lab]
    opp = hyp[o < 0]
    if len(opp):
        M += V[:, opp] @ A[opp]
        e += V[:, opp] @ b[opp]
    K = np.zeros((len(first), k))
    np.add.at(K, lab, kv)
    keep = np.linalg.norm(K, axis=1) > drop
    return _Classes(U[keep], K[keep], M, e)


def _mutual_nn(U1: np.ndarray, U2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mutual nearest neighbours between two sets of unoriented hyperplanes: (i, j, sign) with U1_i ≈ sign·U2_j."""
    from scipy.spatial import cKDTree

    if len(U1) == 0 or len(U2) == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0)
    Q = projector(U1.shape[1])
    C1, C2 = len(U1), len(U2)

    def nn(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Index into ±Y (0..2|Y|-1) of each row of X's nearest neighbour (in the projection: k = 1 queries are
        fast in a KD-tree, k ≥ 2 are not)."""
        Ypm = np.concatenate([Y, -Y])
        _, idx = cKDTree(project(Ypm, Q)).query(project(X, Q), k=1)
        return np.asarray(idx, dtype=np.int64).reshape(len(X))

    j_of = nn(U1, U2)
    i_of = nn(U2, U1)
    i = np.arange(C1)
    j = j_of % C2
    mutual = (i_of[j] % C1) == i
    sign = np.where(j_of < C2, 1.0, -1.0)
    return i[mutual], j[mutual], sign[mutual]


def distance(net1: Network, net2: Network, *, atol: float = 0.0, rtol: float = 1e-9) -> float:
    """A scale-aware distance between ρ(θ1) and ρ(θ2), invariant under the symmetries of either network.

    Each network is reduced to an approximate normal form (docs/math/normal-form.md on float data: neurons rescaled to
    ‖a_i‖ = 1, its own hyperplanes clustered with ``atol``/``rtol`` as in :func:`equivalent_approx`): unit
    hyperplanes ŵ (‖â‖ = 1), kinks κ and an affine part (M, e).  The hyperplanes of θ1 and θ2 are paired as
    mutual nearest neighbours (either orientation; turning a class over moves κ(â·x + b̂) into the affine
    part, docs/math/normal-form.md), and a pair is kept when that is cheaper than leaving both unmatched.  Then::

        d = ( Σ_pairs [ ‖κ − κ′‖·‖ŵ‖ + min(‖κ‖, ‖κ′‖)·‖ŵ − ŵ′‖ ]  +  Σ_unpaired ‖κ‖·‖ŵ‖
              + ‖M − M′‖_F + ‖e − e′‖₂ ) / S

    with S = ‖c₁‖ + ‖c₂‖ + Σ_i ‖v_i‖·‖(a_i, b_i)‖ over both networks (0/0 = 0).  Each term bounds the size of
    the corresponding part of ρ(θ1) − ρ(θ2) on the unit ball, so d is dimensionless, unchanged when both
    networks' outputs are scaled by one factor, varies continuously with small perturbations of the weights,
    and is 0 (up to float rounding) iff the networks are exactly equivalent.  It is a pseudo-distance for
    ranking and thresholds, not a metric.
    """
    check_compatible(net1, net2, "distance")
    if not (atol >= 0 and rtol >= 0 and math.isfinite(atol) and math.isfinite(rtol)):
        raise InvalidNetworkError(f"atol and rtol must be finite and ≥ 0, got atol={atol!r}, rtol={rtol!r}")
    V1, A1, b1, c1 = net1.to_float(np.float64)
    V2, A2, b2, c2 = net2.to_float(np.float64)
    t1 = np.linalg.norm(V1, axis=0) * np.hypot(np.linalg.norm(A1, axis=1), b1)
    t2 = np.linalg.norm(V2, axis=0) * np.hypot(np.linalg.norm(A2, axis=1), b2)
    S = float(np.linalg.norm(c1) + np.linalg.norm(c2) + t1.sum() + t2.sum())
    if S == 0:
        return 0.0
    drop = atol + rtol * float(max(t1.max(initial=0.0), t2.max(initial=0.0)))
    p = _classes(V1, A1, b1, c1, atol, rtol, drop)
    q = _classes(V2, A2, b2, c2, atol, rtol, drop)
    i, j, sign = _mutual_nn(p.U, q.U)
    U2 = q.U[j] * sign[:, None]
    K1, K2 = p.K[i], q.K[j]
    n1u, n2u = np.linalg.norm(p.U[i], axis=1), np.linalg.norm(q.U[j], axis=1)
    k1, k2 = np.linalg.norm(K1, axis=1), np.linalg.norm(K2, axis=1)
    cost = np.linalg.norm(K1 - K2, axis=1) * n1u + np.minimum(k1, k2) * np.linalg.norm(p.U[i] - U2, axis=1)
    keep = cost < k1 * n1u + k2 * n2u
    M2, e2 = q.M.copy(), q.e.copy()
    flip = keep & (sign < 0)
    if flip.any():
        # κ′σ(ŵ′·x̃) = κ′σ(−ŵ′·x̃) + κ′(ŵ′·x̃): turn θ2's class over to θ1's orientation
        m = A1.shape[1]
        M2 += K2[flip].T @ q.U[j[flip], :m]
        e2 += K2[flip].T @ q.U[j[flip], m]
    unpaired = float(
        np.sum(np.linalg.norm(p.K, axis=1) * np.linalg.norm(p.U, axis=1))
        + np.sum(np.linalg.norm(q.K, axis=1) * np.linalg.norm(q.U, axis=1))
        - np.sum((k1 * n1u + k2 * n2u)[keep])
    )
    num = float(cost[keep].sum()) + max(unpaired, 0.0) + float(np.linalg.norm(p.M - M2) + np.linalg.norm(p.e - e2))
    return num / S
