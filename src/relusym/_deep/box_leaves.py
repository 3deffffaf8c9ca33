"""The exact bounds of one second-layer unit over many leaves at once (issue 22), for the covers of
:mod:`relusym._deep.box_cover`.

For each region r this computes exactly the value ``unit_bound(layers, lo_r, hi_r, t.lower, t.upper, 1, j, sign)``
with ``t = certified_bounds(layers, lo_r, hi_r, 0)`` (:mod:`relusym._deep.bounds`), the value the checker
recomputes leaf by leaf, but with the first layer's exact intervals of every leaf in one integer product and the
rest in integers over powers of two, without building a Fraction per entry.  The same rationals come out: the
first layer's interval is the exact range of an affine map, its outward rounding is the same integer formula,
and the float multipliers are the same elementwise operations on the same floats."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._deep.bounds import MU_BITS, ROUND_BITS, ExactLayers, Region, crown_multipliers
from relusym._exact.numbers import common_denominator

__all__ = ["FirstRows", "second_layer_bounds"]


def _round_rows(num: np.ndarray, den: np.ndarray, up: bool) -> tuple[np.ndarray, list[int]]:
    """Row by row, bounds.round_out of the values num/den: integers q and exponents e with value q / 2^e."""
    ceil_abs = -((-np.abs(num)) // den[None, :])
    qs, es = [], []
    for r in range(num.shape[0]):
        big = max(ceil_abs[r].tolist(), default=0)
        e = ROUND_BITS - int(big).bit_length()
        if e >= 0:
            t, d = num[r] * (1 << e), den
        else:
            t, d = num[r], den * (1 << -e)
        qs.append(-((-t) // d) if up else t // d)
        es.append(e)
    return np.array(qs, dtype=object).reshape(num.shape), es


# a region's rounded first-layer bounds: (Lq, el, Uq, eu), the bounds Lq/2^el ≤ z_0 ≤ Uq/2^eu
FirstRows = dict[Region, tuple[np.ndarray, int, np.ndarray, int]]


def second_layer_bounds(
    layers: ExactLayers, regions: Sequence[Region], j: int, sign: int, cache: FirstRows | None = None
) -> list[Fraction]:
    """For each region, the exact bound of z[1][j] that :func:`relusym._deep.bounds.unit_bound` gives from the
    region's :func:`certified_bounds` table of the first layer (upper for sign −1, lower for +1).  ``cache``: the
    regions' rounded first-layer bounds, shared between the units of one cover stage (filled here)."""
    N, m = len(regions), layers.m
    if not N:
        return []
    Q = common_denominator([v for r in regions for side in r for v in side])
    LO = np.array([[v.numerator * (Q // v.denominator) for v in r[0]] for r in regions], dtype=object).reshape(N, m)
    HI = np.array([[v.numerator * (Q // v.denominator) for v in r[1]] for r in regions], dtype=object).reshape(N, m)
    cache = {} if cache is None else cache
    new = [r for r in range(N) if regions[r] not in cache]
    if new:
        W = layers.Wi[0]
        Wp, Wn = np.where(W > 0, W, 0), np.where(W < 0, W, 0)
        lo, hi = LO[new], HI[new]
        up = hi.dot(Wp.T) + lo.dot(Wn.T)
        dn = lo.dot(Wp.T) + hi.dot(Wn.T)
        scale = Q * layers.D[0]
        bn = np.array([b.numerator for b in layers.bias[0]], dtype=object)
        bd = np.array([b.denominator for b in layers.bias[0]], dtype=object)
        den = bd * scale
        Lq, el = _round_rows(bn * scale + dn * bd, den, up=False)
        Uq, eu = _round_rows(bn * scale + up * bd, den, up=True)
        for q, r in enumerate(new):
            cache[regions[r]] = (Lq[q], el[q], Uq[q], eu[q])
    rows = [cache[r] for r in regions]
    Lq = np.array([t[0] for t in rows], dtype=object).reshape(N, -1)
    Uq = np.array([t[2] for t in rows], dtype=object).reshape(N, -1)
    return _unit_rows(layers, LO, HI, Q, Lq, [t[1] for t in rows], Uq, [t[3] for t in rows], j, sign)


def _pow2(e: np.ndarray) -> np.ndarray:
    """2^e (e ≥ 0, integers) as a column of Python integers."""
    return np.array([1 << int(v) for v in e.tolist()], dtype=object)[:, None]


def _unit_rows(
    layers: ExactLayers,
    LO: np.ndarray,
    HI: np.ndarray,
    Q: int,
    Lq: np.ndarray,
    el: list[int],
    Uq: np.ndarray,
    eu: list[int],
    j: int,
    sign: int,
) -> list[Fraction]:
    """Every leaf at once (one row a leaf): the leaf's interval bound of z[1][j] from its rounded first-layer bounds
    Lq/2^el ≤ z_0 ≤ Uq/2^eu, then, where that leaves the unit open, the Lagrangian bound with CROWN's multipliers
    for the one target quantized row by row (bounds._multipliers and bounds.quantize: the same float operations
    on the same floats), in integers over per-row powers of two; the same rationals as leaf by leaf."""
    N = Lq.shape[0]
    ela, eua = np.array(el, dtype=np.int64), np.array(eu, dtype=np.int64)
    E = np.maximum(np.maximum(ela, eua), 0)
    Li, Ui = Lq * _pow2(E - ela), Uq * _pow2(E - eua)  # integers over 2^E (row by row)
    w = layers.Wi[1][j]
    wp, wn = np.where(w > 0, w, 0), np.where(w < 0, w, 0)
    hL, hU = np.maximum(Li, 0), np.maximum(Ui, 0)
    d1, b1 = layers.D[1], layers.bias[1][j]
    up_n, dn_n = (hU * wp + hL * wn).sum(axis=1), (hL * wp + hU * wn).sum(axis=1)
    iu = [b1 + Fraction(int(up_n[r]), d1 << int(E[r])) for r in range(N)]
    il = [b1 + Fraction(int(dn_n[r]), d1 << int(E[r])) for r in range(N)]
    out = [iu[r] if sign < 0 else il[r] for r in range(N)]
    rows = [r for r in range(N) if iu[r] > 0]
    if not rows:
        return out
    sg = -sign  # the target is sg·z ≤ …: the upper bound for sign −1, minus the lower bound for sign +1
    R = np.array(rows)
    # the float multipliers, row by row as bounds._multipliers / quantize compute them
    lf = np.ldexp(Lq[R].astype(np.float64), -ela[R][:, None])
    uf = np.ldexp(Uq[R].astype(np.float64), -eua[R][:, None])
    mu = np.nan_to_num(crown_multipliers(sg * layers.Wf[1][j][None, :], lf, uf), nan=0.0, posinf=0.0, neginf=0.0)
    big = np.max(np.abs(mu), axis=1) if mu.shape[1] else np.zeros(len(R))
    zero = (big == 0) | ~np.isfinite(big)
    s = np.where(zero, 0, MU_BITS - np.frexp(np.where(zero, 1.0, big))[1]).astype(np.int64)
    M = np.where(zero[:, None], 0.0, np.rint(np.ldexp(mu, s[:, None]))).astype(np.int64).astype(object)
    sp, sn = np.maximum(s, 0), np.maximum(-s, 0)
    lam = (sg * layers.Wi[1][j])[None, :] * _pow2(sp)
    Mx = M * d1 * _pow2(sn)
    li, ui = Li[R], Ui[R]
    best = np.maximum(lam * np.maximum(li, 0) - Mx * li, lam * np.maximum(ui, 0) - Mx * ui)
    best = np.where((li < 0) & (ui > 0) & (best < 0), 0, best)
    bsum = best.sum(axis=1)
    bden = common_denominator(layers.bias[0])
    bi = np.array([b.numerator * (bden // b.denominator) for b in layers.bias[0]], dtype=object)
    mb = M.dot(bi)
    Lx = M.dot(layers.Wi[0]) * _pow2(sn)  # over D_0·2^max(s, 0)
    xs = np.maximum(Lx * LO[R], Lx * HI[R]).sum(axis=1)  # the regions over Q
    d0 = layers.D[0]
    for q, r in enumerate(rows):
        sq = int(s[q])
        v = (
            sg * b1
            + Fraction(int(bsum[q]), (d1 << int(sp[q])) << int(E[r]))
            + Fraction(int(mb[q]), bden) / Fraction(2) ** sq
            + Fraction(int(xs[q]), (d0 << int(sp[q])) * Q)
        )
        out[r] = min(iu[r], v) if sign < 0 else max(il[r], -v)
    return out
