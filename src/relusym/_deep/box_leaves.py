"""The exact bounds of one second-layer unit over many leaves at once (issue 22), for the covers of
:mod:`relusym._deep.box_cover`.

For each region r this computes exactly the value ``unit_bound(layers, lo_r, hi_r, t.lower, t.upper, 1, j, sign)``
with ``t = certified_bounds(layers, lo_r, hi_r, 0)`` (:mod:`relusym._deep.bounds`), the value the checker
recomputes leaf by leaf, but with the first layer's exact intervals of every leaf in one integer product and the
rest in integers over powers of two, without building a Fraction per entry.  The same rationals come out: the
first layer's interval is the exact range of an affine map, its outward rounding is the same integer formula,
and the float multipliers are the same elementwise operations on the same floats."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._deep.bounds import MU_BITS, ROUND_BITS, ExactLayers, Region, crown_multipliers
from relusym._exact.numbers import common_denominator

__all__ = ["second_layer_bounds"]


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


def _over(q: np.ndarray, e: int, E: int) -> np.ndarray:
    """q / 2^e as integers over 2^E (E ≥ e, E ≥ 0)."""
    return q * (1 << (E - e))


def second_layer_bounds(layers: ExactLayers, regions: Sequence[Region], j: int, sign: int) -> list[Fraction]:
    """For each region, the exact bound of z[1][j] that :func:`relusym._deep.bounds.unit_bound` gives from the
    region's :func:`certified_bounds` table of the first layer (upper for sign −1, lower for +1)."""
    N, m = len(regions), layers.m
    if not N:
        return []
    Q = common_denominator([v for r in regions for side in r for v in side])
    LO = np.array([[v.numerator * (Q // v.denominator) for v in r[0]] for r in regions], dtype=object).reshape(N, m)
    HI = np.array([[v.numerator * (Q // v.denominator) for v in r[1]] for r in regions], dtype=object).reshape(N, m)
    W = layers.Wi[0]
    Wp, Wn = np.where(W > 0, W, 0), np.where(W < 0, W, 0)
    up = HI.dot(Wp.T) + LO.dot(Wn.T)
    dn = LO.dot(Wp.T) + HI.dot(Wn.T)
    scale = Q * layers.D[0]
    bn = np.array([b.numerator for b in layers.bias[0]], dtype=object)
    bd = np.array([b.denominator for b in layers.bias[0]], dtype=object)
    den = bd * scale
    Lq, el = _round_rows(bn * scale + dn * bd, den, up=False)
    Uq, eu = _round_rows(bn * scale + up * bd, den, up=True)
    return [_one(layers, regions[r], Lq[r], el[r], Uq[r], eu[r], j, sign) for r in range(N)]


def _one(
    layers: ExactLayers, region: Region, Lq: np.ndarray, el: int, Uq: np.ndarray, eu: int, j: int, sign: int
) -> Fraction:
    E = max(el, eu, 0)
    Li, Ui = _over(Lq, el, E), _over(Uq, eu, E)  # the first layer's rounded bounds, integers over 2^E
    w = layers.Wi[1][j]
    wp, wn = np.where(w > 0, w, 0), np.where(w < 0, w, 0)
    hL, hU = np.maximum(Li, 0), np.maximum(Ui, 0)
    d1 = layers.D[1] * (1 << E)
    b1 = layers.bias[1][j]
    iu = b1 + Fraction(int((wp * hU + wn * hL).sum()), d1)
    il = b1 + Fraction(int((wp * hL + wn * hU).sum()), d1)
    if iu <= 0:
        return iu if sign < 0 else il
    sg = -sign
    v = _dual(layers, region, Li, Ui, E, el, eu, Lq, Uq, j, sg)
    return min(iu, v) if sign < 0 else max(il, -v)


def _mu(
    layers: ExactLayers, Lq: np.ndarray, el: int, Uq: np.ndarray, eu: int, j: int, sg: int
) -> tuple[np.ndarray, int]:
    """bounds._multipliers for the one target sg·z[1][j], then bounds.quantize (same float operations)."""
    lam = sg * layers.Wf[1][j]
    lf = np.ldexp(np.array([float(v) for v in Lq.tolist()]), -el)
    uf = np.ldexp(np.array([float(v) for v in Uq.tolist()]), -eu)
    mu = np.nan_to_num(crown_multipliers(lam, lf, uf), nan=0.0, posinf=0.0, neginf=0.0)
    big = float(np.max(np.abs(mu))) if mu.size else 0.0
    if not big or not math.isfinite(big):
        return np.zeros(mu.shape, dtype=object), 0
    s = MU_BITS - math.frexp(big)[1]
    M = np.empty(mu.shape, dtype=object)
    M[:] = [int(v) for v in np.rint(np.ldexp(mu, s)).tolist()]
    return M, s


def _dual(
    layers: ExactLayers,
    region: Region,
    Li: np.ndarray,
    Ui: np.ndarray,
    E: int,
    el: int,
    eu: int,
    Lq: np.ndarray,
    Uq: np.ndarray,
    j: int,
    sg: int,
) -> Fraction:
    """bounds.dual_bounds for the one target, through the first layer and the input box."""
    M, s = _mu(layers, Lq, el, Uq, eu, j, sg)
    Lam, lam_den = sg * layers.Wi[1][j], layers.D[1]
    lam = Lam * (1 << s) if s >= 0 else Lam
    Mx = M * lam_den if s >= 0 else M * lam_den * (1 << -s)
    best = np.maximum(lam * np.maximum(Li, 0) - Mx * Li, lam * np.maximum(Ui, 0) - Mx * Ui)
    inside = (Li < 0) & (Ui > 0)
    best = np.where(inside & (best < 0), 0, best)
    total = sg * layers.bias[1][j] + Fraction(int(best.sum()), lam_den * (1 << max(s, 0)) * (1 << E))
    bden = common_denominator(layers.bias[0])
    bi = np.array([b.numerator * (bden // b.denominator) for b in layers.bias[0]], dtype=object)
    total += Fraction(int(M.dot(bi)), bden) / Fraction(2) ** s
    Lx, x_den = M.dot(layers.Wi[0]), layers.D[0]
    if s >= 0:
        x_den *= 1 << s
    else:
        Lx = Lx * (1 << -s)
    lo, hi = region
    xd = common_denominator(list(lo) + list(hi))
    loi = np.array([v.numerator * (xd // v.denominator) for v in lo], dtype=object)
    hii = np.array([v.numerator * (xd // v.denominator) for v in hi], dtype=object)
    total += Fraction(int(np.maximum(Lx * loi, Lx * hii).sum()), x_den * xd)
    return total
