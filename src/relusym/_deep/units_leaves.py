"""The exact bound of one unit of any layer over many leaves at once (issue 22), for the covers of
:mod:`relusym._deep.box_cover` and their checker.

For each region r, :func:`leaf_unit_bounds` computes exactly the value

    ``unit_bound(layers, lo_r, hi_r, t.lower, t.upper, ell, j, sign)`` with ``t = certified_bounds(layers, lo_r,
    hi_r, ell − 1)``

(:mod:`relusym._deep.bounds`), leaf by leaf the same rationals, but with the exact arithmetic of every leaf of a
batch in one integer computation: the leaves' rounded bounds are integers over one power of two per layer, each
layer's multipliers integers over one power of two (a leaf's own quantized integers shifted left), so every
Lagrangian term of every target of every leaf is an entry of one object array of Python integers, and the
products λ_{k−1} = μ_k W_k of all targets of all leaves are one integer matrix product.  Scaling numerators and
denominators by the same positive integer changes neither a rational nor a comparison, so the maxima chosen and
the sums are those of :func:`relusym._deep.bounds.dual_bounds`.  The float multipliers are computed leaf by leaf
by the very functions :func:`certified_bounds` calls (``bounds.crown_back_substitution``, then the rounding of
``bounds.quantize``) on the same floats (a leaf's rounded bound q / 2^e is exactly ``float(Fraction)``), so they
are the same numbers.  Tests compare the values with the per-leaf computation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from relusym._deep.bounds import (
    MU_BITS,
    ROUND_BITS,
    ExactLayers,
    Region,
    crown_back_substitution,
    exact_matmul,
)
from relusym._exact.numbers import common_denominator

__all__ = ["leaf_unit_bounds", "LeafTables", "CHUNK"]

CHUNK = 48  # leaves per exact batch (memory: targets × width Python integers per array)

# a layer's rounded bounds for every leaf of a batch: value[i, u] = q[i, u] / 2^e[i]
Rounded = tuple[np.ndarray, np.ndarray]


def _round_rows(num: np.ndarray, den: np.ndarray, up: bool) -> Rounded:
    """Row by row (one row a leaf), bounds.round_out of the values num/den (den > 0, broadcast against num)."""
    ceil_abs = -((-np.abs(num)) // den)
    qs, es = [], []
    for r in range(num.shape[0]):
        big = max(ceil_abs[r].tolist(), default=0)
        e = ROUND_BITS - int(big).bit_length()
        d = den[r] if den.ndim == 2 else den
        if e >= 0:
            t = num[r] * (1 << e)
        else:
            t, d = num[r], d * (1 << -e)
        qs.append(-((-t) // d) if up else t // d)
        es.append(e)
    return np.array(qs, dtype=object).reshape(num.shape), np.array(es, dtype=np.int64)


def _common(q: np.ndarray, e: np.ndarray, E: int) -> np.ndarray:
    """q[i] / 2^e[i] as integers over 2^E (E ≥ every e)."""
    sh = np.array([1 << int(E - v) for v in e.tolist()], dtype=object)
    return np.asarray(q * sh[:, None])


def _floats(q: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The rounded bounds as floats, exactly float(Fraction(q, 2^e)) (|q| ≤ 2^ROUND_BITS)."""
    return np.asarray(np.ldexp(q.astype(np.float64), -e[:, None]))


def _quantize(mu: np.ndarray) -> tuple[np.ndarray, int]:
    """bounds.quantize with int64 integers (|M| ≤ 2^MU_BITS)."""
    big = float(np.max(np.abs(mu))) if mu.size else 0.0
    if not big or not math.isfinite(big):
        return np.zeros(mu.shape, dtype=np.int64), 0
    s = MU_BITS - math.frexp(big)[1]
    return np.rint(np.ldexp(mu, s)).astype(np.int64), s


@dataclass
class _Targets:
    """The targets sign·z[T][unit] of the leaves of a batch: ``leaf[r]``, ``sign[r]``, ``unit[r]`` per row."""

    leaf: np.ndarray
    sign: np.ndarray
    unit: np.ndarray


class _Batch:
    """A batch of leaves: their boxes and the rounded bounds of the layers computed so far."""

    def __init__(self, layers: ExactLayers, regions: Sequence[Region]) -> None:
        self.layers = layers
        self.regions = regions
        self.N = len(regions)
        self.lower: list[Rounded] = []
        self.upper: list[Rounded] = []
        m = layers.m
        self.xd = common_denominator([v for r in regions for side in r for v in side])
        xd = self.xd
        self.LO = np.array([[v.numerator * (xd // v.denominator) for v in r[0]] for r in regions], dtype=object)
        self.HI = np.array([[v.numerator * (xd // v.denominator) for v in r[1]] for r in regions], dtype=object)
        self.LO, self.HI = self.LO.reshape(self.N, m), self.HI.reshape(self.N, m)

    # -- interval arithmetic ------------------------------------------------------------------------------

    def interval(self, T: int, rows: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact interval bounds of layer T (its units ``rows``, default all) for every leaf: (lower numerators,
        upper numerators, denominators per unit), values num / den."""
        layers = self.layers
        pick = list(range(layers.widths[T + 1])) if rows is None else list(rows)
        W = layers.Wi[T][pick]
        Wp, Wn = np.where(W > 0, W, 0), np.where(W < 0, W, 0)
        if T == 0:
            L, U, scale = self.LO, self.HI, self.xd * layers.D[0]
        else:
            (lq, le), (uq, ue) = self.lower[T - 1], self.upper[T - 1]
            E = max(int(le.max()), int(ue.max()), 0)
            L = np.maximum(_common(lq, le, E), 0)
            U = np.maximum(_common(uq, ue, E), 0)
            scale = (1 << E) * layers.D[T]
        up = _dot(U, Wp.T) + _dot(L, Wn.T)
        dn = _dot(L, Wp.T) + _dot(U, Wn.T)
        bn = np.array([layers.bias[T][u].numerator for u in pick], dtype=object)
        bd = np.array([layers.bias[T][u].denominator for u in pick], dtype=object)
        return bn * scale + dn * bd, bn * scale + up * bd, bd * scale

    # -- the Lagrangian certificate ----------------------------------------------------------------------

    def multipliers(self, T: int, tg: _Targets) -> list[tuple[np.ndarray, int]]:
        """Per layer k < T, the quantized multipliers of every target (rows), shifted to one exponent S_k: μ =
        M / 2^S_k; each leaf's own multipliers are those of bounds.crown_back_substitution + quantize on its targets."""
        layers = self.layers
        fl = [_floats(*b) for b in self.lower[:T]]
        fu = [_floats(*b) for b in self.upper[:T]]
        R = len(tg.leaf)
        per: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(T)]
        rows_of: list[np.ndarray] = []
        for i in range(self.N):
            rows = np.nonzero(tg.leaf == i)[0]
            rows_of.append(rows)
            if not len(rows):
                for k in range(T):
                    per[k].append((np.zeros((0, layers.widths[k + 1]), dtype=np.int64), 0))
                continue
            C = np.zeros((len(rows), layers.widths[T + 1]))
            C[np.arange(len(rows)), tg.unit[rows]] = tg.sign[rows]
            mus = crown_back_substitution(layers, T, C, [f[i] for f in fl], [f[i] for f in fu])
            for k in range(T):
                per[k].append(_quantize(mus[k]))
        out = []
        for k in range(T):
            S = max(s for _, s in per[k])
            M = np.zeros((R, layers.widths[k + 1]), dtype=object)
            for i, (Mi, s) in enumerate(per[k]):
                if len(rows_of[i]):
                    M[rows_of[i]] = Mi.astype(object) * (1 << (S - s))
            out.append((M, S))
        return out

    def dual(self, T: int, tg: _Targets) -> tuple[np.ndarray, int]:
        """bounds.dual_bounds for every target of every leaf: numerators over one denominator."""
        layers = self.layers
        mus = self.multipliers(T, tg)
        R = len(tg.leaf)
        terms: list[tuple[np.ndarray, int]] = []
        bden = common_denominator(layers.bias[T])
        bT = np.array([b.numerator * (bden // b.denominator) for b in layers.bias[T]], dtype=object)
        terms.append((tg.sign.astype(object) * bT[tg.unit], bden))
        Lam = layers.Wi[T][tg.unit] * tg.sign.astype(object)[:, None]
        lam_den = layers.D[T]
        for k in range(T - 1, -1, -1):
            M, s = mus[k]
            (lq, le), (uq, ue) = self.lower[k], self.upper[k]
            E = max(int(le.max()), int(ue.max()), 0)
            Li = _common(lq, le, E)[tg.leaf]
            Ui = _common(uq, ue, E)[tg.leaf]
            lam = Lam * (1 << s) if s >= 0 else Lam
            Mx = M * lam_den if s >= 0 else M * (lam_den * (1 << -s))
            best = np.maximum(lam * np.maximum(Li, 0) - Mx * Li, lam * np.maximum(Ui, 0) - Mx * Ui)
            inside = (Li < 0) & (Ui > 0)
            best = np.where(inside & (best < 0), 0, best)
            sums = best.sum(axis=1) if best.shape[1] else np.zeros(R, dtype=object)
            terms.append((sums, lam_den * (1 << max(s, 0)) * (1 << E)))
            kd = common_denominator(layers.bias[k])
            bk = np.array([b.numerator * (kd // b.denominator) for b in layers.bias[k]], dtype=object)
            mb = M.dot(bk) if M.shape[1] else np.zeros(R, dtype=object)
            terms.append((mb, kd * (1 << s)) if s >= 0 else (mb * (1 << -s), kd))
            Lam, lam_den = exact_matmul(M, layers.Wi[k]), layers.D[k]
            if s >= 0:
                lam_den *= 1 << s
            else:
                Lam = Lam * (1 << -s)
        lo, hi = self.LO[tg.leaf], self.HI[tg.leaf]
        terms.append((np.maximum(Lam * lo, Lam * hi).sum(axis=1), lam_den * self.xd))
        den = 1
        for _, d in terms:
            den = den * d // math.gcd(den, d)
        num = np.zeros(R, dtype=object)
        for t, d in terms:
            num = num + t * (den // d)
        return num, den

    # -- the table ---------------------------------------------------------------------------------------

    def layer(self, T: int) -> None:
        """Layer T's bounds as certified_bounds computes them (interval, then the relaxation for the units with a
        positive interval upper bound), rounded outward, for every leaf."""
        ln, un, den = self.interval(T)
        Dl = Du = den
        if T > 0:
            leaf, unit = np.nonzero(un > 0)
            if len(leaf):
                n = len(leaf)
                tg = _Targets(
                    np.concatenate([leaf, leaf]),
                    np.concatenate([np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)]),
                    np.concatenate([unit, unit]),
                )
                order = np.argsort(tg.leaf, kind="stable")  # each leaf's targets: its units up, then down
                tg = _Targets(tg.leaf[order], tg.sign[order], tg.unit[order])
                vn, vd = self.dual(T, tg)
                Dl = np.array(np.broadcast_to(den, ln.shape), dtype=object)
                Du = Dl.copy()
                ln, un = ln.copy(), un.copy()
                for sg, num, D, val in ((1, un, Du, vn), (-1, ln, Dl, -vn)):
                    pick = tg.sign == sg
                    i, u, v = tg.leaf[pick], tg.unit[pick], val[pick]
                    # the relaxation's value v / vd where it is tighter (below the upper, above the lower bound)
                    better = (v * D[i, u] < num[i, u] * vd) if sg > 0 else (v * D[i, u] > num[i, u] * vd)
                    better = better.astype(bool)
                    num[i[better], u[better]] = v[better]
                    D[i[better], u[better]] = vd
        self.lower.append(_round_rows(ln, Dl, up=False))
        self.upper.append(_round_rows(un, Du, up=True))


def _dot(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    if A.shape[1] == 0:
        return np.zeros((A.shape[0], B.shape[1]), dtype=object)
    return exact_matmul(A, B)


def _final(b: _Batch, ell: int, j: int, sign: int) -> list[Fraction]:
    """unit_bound's last step for every leaf of the batch (its table of the layers before ``ell`` complete)."""
    ln, un, den = b.interval(ell, [j])
    d = int(den[0])
    need = np.nonzero(un[:, 0] > 0)[0]
    vals: dict[int, Fraction] = {}
    if len(need):
        sg = -sign  # the target sg·z ≤ …: the upper bound for sign −1, minus the lower bound for sign +1
        tg = _Targets(need, np.full(len(need), sg, dtype=np.int64), np.full(len(need), j, dtype=np.int64))
        vn, vd = b.dual(ell, tg)
        vals = {int(i): Fraction(int(v), vd) for i, v in zip(need.tolist(), vn.tolist(), strict=True)}
    out = []
    for i in range(b.N):
        il, iu = Fraction(int(ln[i, 0]), d), Fraction(int(un[i, 0]), d)
        if i not in vals:
            out.append(iu if sign < 0 else il)
        else:
            out.append(min(iu, vals[i]) if sign < 0 else max(il, -vals[i]))
    return out


class LeafTables:
    """The rounded bound tables of many leaves (what :func:`certified_bounds` gives each), computed in batches
    and kept, so the leaves shared by several units' covers are computed once."""

    def __init__(self, layers: ExactLayers) -> None:
        self.layers = layers
        # region → per layer (lower q, lower e, upper q, upper e)
        self.rows: dict[Region, list[tuple[np.ndarray, int, np.ndarray, int]]] = {}

    def _batch(self, regions: Sequence[Region], upto: int) -> _Batch:
        """A batch of regions whose layers 0 … upto are all in the cache."""
        b = _Batch(self.layers, regions)
        for k in range(upto + 1):
            rs = [self.rows[r][k] for r in regions]
            b.lower.append((np.array([x[0] for x in rs], dtype=object), np.array([x[1] for x in rs], dtype=np.int64)))
            b.upper.append((np.array([x[2] for x in rs], dtype=object), np.array([x[3] for x in rs], dtype=np.int64)))
        return b

    def ensure(self, regions: Sequence[Region], upto: int) -> None:
        """Compute the layers 0 … upto of every region's table not yet known that far."""
        for k in range(upto + 1):
            todo = list(dict.fromkeys(r for r in regions if len(self.rows.get(r, ())) <= k))
            for c in range(0, len(todo), CHUNK):
                part = todo[c : c + CHUNK]
                b = self._batch(part, k - 1)
                b.layer(k)
                (lq, le), (uq, ue) = b.lower[k], b.upper[k]
                for i, r in enumerate(part):
                    self.rows.setdefault(r, []).append((lq[i], int(le[i]), uq[i], int(ue[i])))

    def unit_bounds(self, regions: Sequence[Region], ell: int, j: int, sign: int) -> list[Fraction]:
        """:func:`leaf_unit_bounds` with the tables kept."""
        if ell < 1:
            raise ValueError("leaf_unit_bounds needs a unit of the second hidden layer or later (ell ≥ 1)")
        self.ensure(regions, ell - 1)
        out: list[Fraction] = []
        for c in range(0, len(regions), CHUNK):
            out += _final(self._batch(regions[c : c + CHUNK], ell - 1), ell, j, sign)
        return out


def leaf_unit_bounds(layers: ExactLayers, regions: Sequence[Region], ell: int, j: int, sign: int) -> list[Fraction]:
    """For each region, the exact bound of z[ell][j] (ell ≥ 1) that :func:`relusym._deep.bounds.unit_bound`
    gives from the region's :func:`certified_bounds` table of the layers before it (upper for sign −1, lower for
    +1), the leaves computed in batches of :data:`CHUNK`."""
    return LeafTables(layers).unit_bounds(regions, ell, j, sign)
