"""Alignment of a noisy, permuted, positively rescaled copy of a network (the float-tolerance mode of
docs/math/realization.md
item 14): the symmetry h ∈ H_n that best maps θ1 onto θ2, found by nearest-neighbour matching of normalised
hyperplanes (``scipy.spatial.cKDTree``), never by an n×n assignment problem.  Nothing here is exact."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from relusym._base.progress import progress_bar
from relusym._core.group import Symmetry
from relusym._core.network import Network
from relusym._tolerance.approx import CHUNK, check_compatible, project, projector, row_dist, unique_rows
from relusym.errors import InvalidNetworkError

__all__ = ["Alignment", "align"]


@dataclass(frozen=True, eq=False)
class Alignment:
    """The answer of :func:`align`.

    ``symmetry``: h ∈ H_n with h·θ1 ≈ θ2 (neuron i of θ1 goes to slot ``permutation[i]`` with scale
    ``scales[i]``); ``residuals[i]``: the distance between neuron i and its partner in the scale-invariant
    coordinates (unit hyperplane ŵ = w/‖w‖, output weight v·‖w‖ over a common scale), 0 for dead pairs;
    ``unmatched``: neurons of θ1 whose partner is not a confident match; ``reversed``: neurons matched to their
    partner's opposite orientation (v, w) ↦ (−v, −w), which no element of H_n realizes; ``matched_fraction``:
    the share of neurons that are neither.
    """

    symmetry: Symmetry
    residuals: np.ndarray
    matched_fraction: float
    unmatched: tuple[int, ...]
    reversed: tuple[int, ...]
    tol: float | None

    @property
    def permutation(self) -> np.ndarray:
        return np.asarray(self.symmetry.permutation, dtype=np.int64)

    @property
    def scales(self) -> np.ndarray:
        return np.array([float(s) for s in self.symmetry.scales], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "relusym.alignment/1",
            "permutation": [int(p) for p in self.symmetry.permutation],
            "scales": [float(s) for s in self.symmetry.scales],
            "residuals": [float(r) if math.isfinite(r) else None for r in self.residuals.tolist()],
            "matched_fraction": self.matched_fraction,
            "unmatched": list(self.unmatched),
            "reversed": list(self.reversed),
            "tol": self.tol,
        }

    def __str__(self) -> str:
        return (
            f"alignment of {len(self.residuals)} neurons: {self.matched_fraction:.1%} matched, "
            f"{len(self.unmatched)} unmatched, {len(self.reversed)} reversed"
        )


def _match(
    F1: np.ndarray, F2: np.ndarray, *, flips: bool, rounds: int = 4, k0: int = 4
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A one-to-one matching of rows of F1 to rows of F2 by nearest neighbours (greedy on distance, exact
    duplicates of F2 handled as one point with a capacity).  Returns (partner, distance, flipped) per row of
    F1, partner −1 where no match was found."""
    from scipy.spatial import cKDTree

    n1, n2 = len(F1), len(F2)
    partner = np.full(n1, -1, dtype=np.int64)
    dist = np.full(n1, np.inf)
    flipped = np.zeros(n1, dtype=bool)
    if n1 == 0 or n2 == 0:
        return partner, dist, flipped
    Q = projector(F1.shape[1])
    uniq, inv = unique_rows(F2)
    order = np.argsort(inv, kind="stable")
    starts = np.searchsorted(inv[order], np.arange(len(uniq)))
    cap = np.bincount(inv, minlength=len(uniq))
    used = np.zeros(len(uniq), dtype=np.int64)
    G1 = project(F1, Q)
    Gu = project(uniq, Q)
    for rnd in range(rounds):
        left = np.flatnonzero(partner < 0)
        open_g = np.flatnonzero(used < cap)
        if len(left) == 0 or len(open_g) == 0:
            break
        kk = 1 if rnd == 0 else min(len(open_g), k0 << (2 * (rnd - 1)))
        tree = cKDTree(Gu[open_g])
        _, idx = tree.query(G1[left], k=kk)
        ci = np.repeat(left, kk)
        cg = open_g[np.asarray(idx).reshape(-1)]
        cd = row_dist(F1, ci, uniq, cg)
        cf = np.zeros(len(ci), dtype=bool)
        if flips:
            # opposite orientations, searched only closer than the best same-orientation candidate (a
            # projection never increases distances, so that bound loses nothing and keeps the search short)
            best = cd.reshape(len(left), kk).min(axis=1)
            found = _query_bounded(tree, -G1[left], best)
            ok = found >= 0
            fi, fg = left[ok], open_g[found[ok]]
            ci = np.concatenate([ci, fi])
            cg = np.concatenate([cg, fg])
            cd = np.concatenate([cd, row_dist(F1, fi, uniq, fg, -1.0)])
            cf = np.concatenate([cf, np.ones(len(fi), dtype=bool)])
        srt = np.lexsort((cf, cd))
        ci, cg, cd, cf = ci[srt], cg[srt], cd[srt], cf[srt]
        # fast path: every row's best candidate, accepted at once where the group has room for all of them
        _, first_of_i = np.unique(ci, return_index=True)
        bi, bg = ci[first_of_i], cg[first_of_i]
        demand = np.bincount(bg, minlength=len(uniq))
        ok = demand[bg] <= (cap - used)[bg]
        take = first_of_i[ok]
        if len(take):
            _assign(ci[take], cg[take], cd[take], cf[take], partner, dist, flipped, used, order, starts)
        # greedy for the rest, in order of distance
        rest = np.isin(ci, bi[~ok]) & (partner[ci] < 0)
        for i, g, d_, f in zip(ci[rest].tolist(), cg[rest].tolist(), cd[rest].tolist(), cf[rest].tolist(), strict=True):
            if partner[i] >= 0 or used[g] >= cap[g]:
                continue
            partner[i] = order[starts[g] + used[g]]
            dist[i], flipped[i] = d_, f
            used[g] += 1
    left = np.flatnonzero(partner < 0)
    if 0 < len(left) <= 2000:
        # a few leftovers (many near-duplicates): an optimal assignment among them
        from scipy.optimize import linear_sum_assignment
        from scipy.spatial.distance import cdist

        grp = inv[order]
        free = order[np.arange(n2) - starts[grp] >= used[grp]]
        D = cdist(F1[left], F2[free])
        Df = cdist(F1[left], -F2[free]) if flips else D + np.inf
        r, c = linear_sum_assignment(np.minimum(D, Df))
        partner[left[r]] = free[c]
        dist[left[r]] = np.minimum(D, Df)[r, c]
        flipped[left[r]] = Df[r, c] < D[r, c]
    return partner, dist, flipped


def _query_bounded(tree: Any, X: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Index of each row's nearest neighbour in ``tree`` strictly closer than ``bounds[row]``, −1 if none.
    (cKDTree takes one scalar bound per query, so rows are grouped by the power of two above their bound.)"""
    out = np.full(len(X), -1, dtype=np.int64)
    pos = bounds > 0
    expo = np.full(len(X), np.inf)
    fin = pos & np.isfinite(bounds)
    expo[fin] = np.ceil(np.log2(bounds[fin]))
    for val in np.unique(expo[pos]):
        rows = np.flatnonzero(pos & (expo == val))
        ub = float(2.0**val) if np.isfinite(val) else np.inf
        d, idx = tree.query(X[rows], k=1, distance_upper_bound=ub)
        ok = np.isfinite(d)
        out[rows[ok]] = np.asarray(idx)[ok]
    return out


def _assign(
    i: np.ndarray,
    g: np.ndarray,
    d: np.ndarray,
    f: np.ndarray,
    partner: np.ndarray,
    dist: np.ndarray,
    flipped: np.ndarray,
    used: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
) -> None:
    """Give row i the next free member of group g (groups are runs of ``order`` starting at ``starts``)."""
    srt = np.argsort(g, kind="stable")
    i, g, d, f = i[srt], g[srt], d[srt], f[srt]
    # rank of each assignment inside its group
    _, first = np.unique(g, return_index=True)
    rank = np.arange(len(g)) - np.repeat(first, np.diff(np.append(first, len(g))))
    partner[i] = order[starts[g] + used[g] + rank]
    dist[i] = d
    flipped[i] = f
    np.add.at(used, g, 1)


def _rows(F: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """F[idx], without a copy when idx is every row in order."""
    return F if len(idx) == len(F) else F[idx]


def _separation(F: np.ndarray) -> np.ndarray:
    """For each row, the distance to its nearest *different* row, estimated: the full distance to the nearest
    different row in a 6-dimensional projection (an upper bound of the true separation, cheap to find since
    k-nearest-neighbour queries with k ≥ 2 are slow in more dimensions), inf when there is none."""
    from scipy.spatial import cKDTree

    n = len(F)
    out = np.full(n, np.inf)
    if n < 2:
        return out
    Q = projector(F.shape[1], 6)
    uniq, inv = unique_rows(F)
    if len(uniq) < 2:
        return out
    G = project(uniq, Q)
    _, idx = cKDTree(G).query(G, k=2)
    own = np.arange(len(uniq))
    # the nearest other row: the second neighbour, or the first when a projected tie put the row itself second
    other = np.where(idx[:, 0] == own, idx[:, 1], idx[:, 0])
    sep_u = row_dist(uniq, own, uniq, other)
    return np.asarray(sep_u[inv])


def align(net1: Network, net2: Network, *, tol: float | None = None, progress: bool | None = None) -> Alignment:
    """Align a noisy, permuted, positively rescaled copy: an h ∈ H_n with h·θ1 ≈ θ2.

    Each neuron is put in scale-invariant coordinates: its hyperplane w = (a, b) normalised to ‖w‖ = 1
    (orientation kept: only positive scalings are symmetries) and its output weight v·‖w‖ (divided by one
    common scale, the RMS over both networks).  Neurons are matched by nearest-neighbour search with
    ``scipy.spatial.cKDTree`` (not an n×n assignment): the output-weight coordinates break ties between
    neurons on the same hyperplane, exact duplicates are matched as a group.  The scales are
    d_i = ‖w_π(i)‖/‖w_i‖, so that without noise h·θ1 = θ2 (exactly when the scales are powers of two).

    Dead neurons (v = 0, or a = 0 and b ≤ 0) are matched among themselves (by the same coordinates, so
    without noise the planted pairing is found).  A neuron whose best partner has the opposite orientation
    (−v, −w) is reported in ``flips``.  With ``tol`` a pair counts as matched when its residual is ≤ tol;
    without it, when the residual is below half the neuron's distance to its nearest other neuron of θ1 (the
    hyperplane separation).  Widths, inputs and outputs must agree.  ``progress`` shows the stage that runs
    (a bar on stderr when it is a terminal, by default; ``False`` never).
    """
    with progress_bar(total=3, desc="align: scale-invariant coordinates", unit="stage", progress=progress) as bar:
        return _align(net1, net2, tol, bar)


def _align(net1: Network, net2: Network, tol: float | None, bar: Any) -> Alignment:
    """:func:`align`, reporting its stages to ``bar``."""
    check_compatible(net1, net2, "align")
    if net1.n != net2.n:
        raise InvalidNetworkError(
            f"align: the networks have different widths n = {net1.n} and {net2.n}; prune them first"
        )
    if tol is not None and not (tol >= 0):
        raise InvalidNetworkError(f"align: tol must be ≥ 0, got {tol!r}")
    n = net1.n
    V1, A1, b1, _ = net1.to_float(np.float64)
    V2, A2, b2, _ = net2.to_float(np.float64)
    step = max(1, CHUNK * 16 // max(1, net1.m))

    def wnorm(A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """‖(a_i, b_i)‖, computed the same way for every row (so a power-of-two scaling scales it exactly)."""
        sq = np.empty(len(b))
        for s0 in range(0, len(b), step):
            blk = A[s0 : s0 + step]
            sq[s0 : s0 + step] = np.add.reduce(blk * blk, axis=1)
        return np.asarray(np.sqrt(sq + b * b))

    def dead(V: np.ndarray, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(~np.any(V != 0, axis=0) | (~np.any(A != 0, axis=1) & (b <= 0)))

    w1, w2 = wnorm(A1, b1), wnorm(A2, b2)
    d1, d2 = dead(V1, A1, b1), dead(V2, A2, b2)
    t1 = np.linalg.norm(V1, axis=0) * w1
    t2 = np.linalg.norm(V2, axis=0) * w2
    live_t = np.concatenate([t1[~d1], t2[~d2]])
    s = float(np.sqrt(np.mean(live_t**2))) if len(live_t) else 1.0
    s = s if s > 0 else 1.0

    def features(V: np.ndarray, A: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Rows (a/‖w‖, b/‖w‖, v·‖w‖/s), filled block by block (no n×(m+1+k) temporaries)."""
        m = A.shape[1]
        F = np.empty((len(b), m + 1 + V.shape[0]))
        safe = np.where(w > 0, w, 1.0)
        for s0 in range(0, len(b), step):
            sl = slice(s0, s0 + step)
            np.divide(A[sl], safe[sl, None], out=F[sl, :m])
            F[sl, m] = b[sl] / safe[sl]
            F[sl, m + 1 :] = V[:, sl].T * (w[sl] / s)[:, None]
        return F

    F1, F2 = features(V1, A1, b1, w1), features(V2, A2, b2, w2)
    del A1, A2
    bar.update(1)
    bar.set_description_str("align: nearest-neighbour matching")
    perm = np.full(n, -1, dtype=np.int64)
    resid = np.full(n, np.inf)
    flip = np.zeros(n, dtype=bool)
    confident = np.zeros(n, dtype=bool)
    for is_dead in (False, True):
        i1 = np.flatnonzero(d1 == is_dead)
        i2 = np.flatnonzero(d2 == is_dead)
        p, dist, fl = _match(_rows(F1, i1), _rows(F2, i2), flips=not is_dead)
        ok = p >= 0
        perm[i1[ok]] = i2[p[ok]]
        resid[i1[ok]] = 0.0 if is_dead else dist[ok]
        flip[i1[ok]] = fl[ok]
        if is_dead:
            confident[i1[ok]] = True
    bar.update(1)
    bar.set_description_str("align: separations and scales")
    # leftovers (live vs dead counts differ): pair arbitrarily, in index order
    free2 = np.setdiff1d(np.arange(n), perm[perm >= 0])
    left1 = np.flatnonzero(perm < 0)
    perm[left1] = free2[: len(left1)]
    live1 = ~d1
    if tol is not None:
        confident |= live1 & (resid <= tol)
    else:
        sep = _separation(_rows(F1, np.flatnonzero(live1)))
        conf_live = resid[live1] <= 0.5 * sep
        confident[np.flatnonzero(live1)[conf_live]] = True
    confident[left1] = False
    with np.errstate(divide="ignore", invalid="ignore"):
        scales = np.where((w1 > 0) & (w2[perm] > 0), w2[perm] / np.where(w1 > 0, w1, 1.0), 1.0)
    scales = np.where(np.isfinite(scales) & (scales > 0), scales, 1.0)
    flips_idx = tuple(int(i) for i in np.flatnonzero(flip & confident))
    unmatched = tuple(int(i) for i in np.flatnonzero(~confident))
    h = Symmetry(perm.tolist(), scales.tolist())
    frac = (n - len(unmatched) - len(flips_idx)) / n if n else 1.0
    return Alignment(h, resid, float(frac), unmatched, flips_idx, tol)
