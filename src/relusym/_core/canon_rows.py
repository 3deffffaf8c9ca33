"""The canonical minimal network in integers: hidden rows as primitive integer vectors (docs/math/width.md).

Only positive rescaling (v, w) ↦ (v/s, s·w), s > 0, is a symmetry of a neuron, so a positive ray of rows
w = (a, b) ∈ ℚ^{m+1} has exactly one *primitive integer* representative: the integer vector P on the ray whose
entries have greatest common divisor 1.  The canonical minimal network gives every neuron that row, and its
output weight absorbs the scale.

For float data this needs no ``Fraction``: a row of floats is w = 2^e · M with M an integer vector (the odd
mantissas shifted over the row's smallest exponent e), so P = M / g with g = gcd(M) (odd) and w = g·2^e·P.
A class of neurons on one positive ray (w_i = t_i·P, t_i = g_i·2^{e_i} > 0) then has output weight
Σ_i t_i v_i = κ / |P_piv| (κ = Σ_i |λ_i| v_i, λ_i = t_i·P_piv the pivot entry of w_i): a dyadic rational whenever
the v_i are floats, computed here from integer mantissas (the odd part of |P_piv| divides κ's odd mantissa).
Every result is exact: an integer vector that does not fit in int64 is built from Python ints, and a value
float64 cannot hold is returned as a ``Fraction``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._core.rationals import coprime_fraction, fractions_from_parts
from relusym._exact.dtypes import exactly_in_dtype, float_or_inf
from relusym._exact.mantissas import float_parts

__all__ = [
    "primitive_rows",
    "pivots",
    "divide_by_pivots",
    "primitive_neuron",
    "float64_or_fractions",
    "assemble_exact",
    "BlockStore",
]


def primitive_rows(W: np.ndarray) -> np.ndarray:
    """The primitive integer vector on the positive ray of each row of the float matrix ``W`` (no zero rows).

    A row is w = 2^e · (o_j · 2^{s_j})_j with odd mantissas o_j and s_j ≥ 0 (e the row's smallest exponent), so its
    integer vector's gcd is g = gcd_j(o_j) (odd) and P = ((o_j / g) · 2^{s_j})_j: the row's own mantissas over one
    shared power of two.  Returned as float64 (every entry an integer held exactly) when every row's exponent
    spread fits, else as an object array with the rows that do not in Python ints."""
    if W.shape[0] == 0:
        return np.zeros(W.shape, dtype=np.float64)
    mx, ex = float_parts(W)
    nz = mx != 0
    big = np.iinfo(np.int64).max
    emin = np.where(nz, ex, big).min(axis=1)
    shift = np.where(nz, ex - emin[:, None], 0)
    q = mx // _row_gcd(mx)[:, None]
    with np.errstate(over="ignore"):
        P = np.ldexp(q.astype(np.float64), shift)  # exact: a 53-bit integer times a power of two, or inf
    wide = ~np.isfinite(P).all(axis=1)
    if not bool(wide.any()):
        return np.asarray(P)
    out = P.astype(object)
    for r in np.nonzero(wide)[0].tolist():  # an exponent spread beyond float64's range: Python ints
        out[r] = [int(x) << int(e) for x, e in zip(q[r].tolist(), shift[r].tolist(), strict=True)]
    return np.asarray(out)


def _row_gcd(M: np.ndarray) -> np.ndarray:
    """gcd of each row of an int64 matrix (1 for a zero row), column by column on the rows whose gcd is not yet
    1 (a row of real data reaches 1 within a few columns)."""
    g = np.abs(M[:, 0])
    for j in range(1, M.shape[1]):
        act = np.nonzero(g != 1)[0]
        if act.size == 0:
            break
        g[act] = np.gcd(g[act], M[act, j])
    return np.where(g == 0, 1, g)


def pivots(P: np.ndarray, m: int) -> np.ndarray:
    """The first nonzero entry of each row's first ``m`` entries (the a-part of (a, b)), same storage as P."""
    idx = np.argmax(P[:, :m] != 0, axis=1)
    return np.asarray(P[np.arange(P.shape[0]), idx])


def divide_by_pivots(kappa: np.ndarray, piv: np.ndarray) -> np.ndarray:
    """κ[r, :] / |piv[r]| exactly: float64 when float64 holds every quotient, else Fractions.

    ``kappa`` holds exact float64 values (or Fractions) and ``piv`` nonzero integers (float64 or Python ints).
    For float κ the quotients are dyadic when |piv| divides κ: the odd part of |piv| is divided out of κ's odd
    int64 mantissas and its power of two out of the exponents; any other case goes through Fractions."""
    if kappa.dtype != object and piv.dtype != object and kappa.size:
        po, pe = float_parts(np.abs(piv))
        mk, ek = float_parts(kappa)
        if bool((mk % po[:, None] == 0).all()):
            q = mk // po[:, None]
            e = np.where(q != 0, ek - pe[:, None], 0)
            with np.errstate(over="ignore", under="ignore"):
                out = np.ldexp(q.astype(np.float64), e)
            back_m, back_e = float_parts(out)
            if bool(np.isfinite(out).all() and (back_m == q).all() and (back_e == e).all()):
                return np.asarray(out)
            return fractions_from_parts(q, np.ones_like(q), e)
    out_o = np.empty(kappa.shape, dtype=object)
    for r in range(kappa.shape[0]):
        d = abs(int(piv[r]))
        out_o[r] = [Fraction(x) / d for x in kappa[r].tolist()]
    return float64_or_fractions(out_o)


def primitive_neuron(
    v: Sequence[Fraction], a: Sequence[Fraction], b: Fraction
) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction]:
    """The neuron (v, a, b) rescaled by the positive s with s·(a, b) primitive integer: (v/s, s·a, s·b)."""
    row = [Fraction(x) for x in (*a, b)]
    den = math.lcm(*(x.denominator for x in row))
    ints = [x.numerator * (den // x.denominator) for x in row]
    g = math.gcd(*ints)
    if den == 1 and g == 1:
        return tuple(v), tuple(row[:-1]), row[-1]
    s = Fraction(den, g)
    P = [Fraction(x // g) for x in ints]
    return tuple(x / s for x in v), tuple(P[:-1]), P[-1]


def float64_or_fractions(x: Any) -> np.ndarray:
    """An exact array (float, or an object array of Fractions or ints) as float64 when float64 holds every entry
    exactly, else as an object array of Fractions."""
    arr = np.asarray(x) if isinstance(x, np.ndarray) else np.asarray(x, dtype=object)
    if arr.dtype != object:
        return arr.astype(np.float64)
    flat = arr.ravel().tolist()
    got = []
    for v in flat:  # up to the first value float64 does not hold
        y = float_or_inf(v)
        if not math.isfinite(y) or Fraction(y) != v:
            break
        got.append(y)
    else:
        return np.array(got, dtype=np.float64).reshape(arr.shape)
    make = coprime_fraction
    out = [v if type(v) is Fraction else make(int(v), 1) for v in flat]
    return np.fromiter(out, dtype=object, count=len(out)).reshape(arr.shape)


def assemble_exact(V: Any, A: Any, b: Any, c: Any, m: int, like: Network) -> Network:
    """The Network of exact arrays (V, A, b, c) stored as the canonical minimal network is stored for a float
    network ``like``: all four in ``like``'s float dtype when it holds every entry; otherwise each array in float64
    when float64 holds every entry of it, else as Fractions.  Never rounded."""
    arrays = [float64_or_fractions(x) for x in (V, A, b, c)]
    if all(x.dtype != object for x in arrays):
        dtype = np.result_type(like.V, like.A, like.b, like.c)
        fits = [exactly_in_dtype(x, dtype) for x in arrays]
        if all(f is not None for f in fits):
            arrays = [f for f in fits if f is not None]
    return Network(*arrays, m=m)


class BlockStore:
    """An exact array filled block of rows by block, held in the narrowest storage that holds every value so far:
    the network's float ``dtype``, then float64, then Python objects (ints, floats and Fractions, made Fractions
    at the end).  Each block is checked as it comes, so no temporary is larger than a block."""

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.arr = np.empty(shape, dtype=dtype)
        self.dtype = np.dtype(dtype)
        self.tier = 0  # 0: dtype, 1: float64, 2: objects

    def put(self, s0: int, x: np.ndarray) -> None:
        """Rows s0… of the array: ``x`` float64 (exact values) or an object array of exact numbers."""
        if x.dtype == object:  # (a block with a wide row: its other columns may still be float64 values)
            x = float64_or_fractions(x)
        y: np.ndarray = x
        if x.dtype == object:
            if self.tier < 2:
                self.arr, self.tier = self.arr.astype(np.float64).astype(object), 2
        elif self.tier == 0:
            with np.errstate(over="ignore", under="ignore"):
                y = x.astype(self.dtype)
            if not bool((y.astype(np.float64) == x).all()):  # inf or a rounded value: not this dtype
                self.arr, self.tier, y = self.arr.astype(np.float64), 1, x
        self.arr[s0 : s0 + x.shape[0]] = y

    def final(self, narrow: bool) -> np.ndarray:
        """The array: in ``dtype`` when every entry fits it and ``narrow``, else float64 when that holds every
        entry, else Fractions."""
        if self.tier == 0:
            return self.arr if narrow else self.arr.astype(np.float64)
        if self.tier == 1:
            return self.arr
        flat = [v if type(v) is Fraction else Fraction(v) for v in self.arr.ravel().tolist()]
        return np.fromiter(flat, dtype=object, count=len(flat)).reshape(self.arr.shape)
