"""Keys, hashes and proportionality of float rows, exactly: a float's key that equals exactly when the values do,
row hashes invariant under positive scaling, and the exact test of two rows being proportional (error-free
products by Veltkamp splitting where the exponents allow, Fractions otherwise).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from relusym._exact.numbers import fractions_of, is_float_array, products_exact

__all__ = ["exact_float", "exact_products", "float_key", "quotient_row_hashes", "row_hash", "rows_proportional"]

_SPLIT = 134217729.0  # 2**27 + 1 (Veltkamp)


_SAFE_LO, _SAFE_HI = 2.0**-450, 2.0**450


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's error-free product: a·b = p + e exactly, p = fl(a·b) (valid in the safe exponent range)."""
    p = a * b
    ca = _SPLIT * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLIT * b
    bh = cb - (cb - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _in_safe_range(x: np.ndarray) -> bool:
    ax = np.abs(x)
    nz = ax[ax != 0]
    return bool(nz.size == 0 or (nz.min() >= _SAFE_LO and nz.max() <= _SAFE_HI))


def exact_float(arr: np.ndarray) -> np.ndarray:
    """A small exact-view array as float64 (exact), or unchanged when it holds Fractions."""
    return arr if arr.dtype == object else arr.astype(np.float64)


def _safe_float(q: Any) -> float:
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def float_key(arr: np.ndarray) -> np.ndarray:
    """The float64 value of each entry, correctly rounded (so equal rationals give equal floats), with -0.0
    turned into 0.0.  Used only for hashing and ordering candidates; exactness is checked separately."""
    if arr.dtype == object:
        out = np.array([_safe_float(v) for v in arr.ravel().tolist()], dtype=np.float64).reshape(arr.shape)
    else:
        out = arr.astype(np.float64)
    out += 0.0
    return out


_HASH_SEED = 0x5EED_2604_14037


@functools.lru_cache(maxsize=32)
def _hash_multipliers(width: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(_HASH_SEED))
    R = rng.integers(0, 2**63, size=width, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    R.setflags(write=False)
    return R


def row_hash(F: np.ndarray, offset: int = 0) -> np.ndarray:
    """A 64-bit hash of each row of a float64 array (of float keys): Σ_j bits(F_ij)·R_{offset+j} mod 2^64.

    Equal rows always hash equally; unequal rows rarely do, and callers verify candidates exactly."""
    if F.shape[0] == 0:
        return np.zeros(0, dtype=np.uint64)
    R = _hash_multipliers(offset + F.shape[1])[offset:]
    with np.errstate(over="ignore"):
        return np.asarray(np.ascontiguousarray(F).view(np.uint64) @ R)


_QUOTIENT_ROWS = 128  # rows per block of quotient_row_hashes


@np.errstate(over="ignore")  # keys beyond float range become ±inf: still equal for equal rationals
def quotient_row_hashes(X: np.ndarray, d: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """:func:`row_hash` of the float keys of X[rows[i]] / d[i] (default rows: all, in order) for float X and d:
    the correctly rounded float64 quotients of the exact operands, −0.0 as 0.0, divided and hashed a block of
    rows at a time (in cache: no temporary of the whole matrix)."""
    n = d.shape[0]
    out = np.empty(n, dtype=np.uint64)
    buf = np.empty((min(n, _QUOTIENT_ROWS), X.shape[1]))
    for s0 in range(0, n, _QUOTIENT_ROWS):
        s1 = min(n, s0 + _QUOTIENT_ROWS)
        F = np.divide(X[s0:s1] if rows is None else X[rows[s0:s1]], d[s0:s1, None], out=buf[: s1 - s0])
        F += 0.0  # -0.0 -> 0.0
        out[s0:s1] = row_hash(F)
    return out


def rows_proportional(
    X1: np.ndarray, s2: np.ndarray, X2: np.ndarray, s1: np.ndarray, rows2: np.ndarray | None = None
) -> np.ndarray:
    """Exactly, for each row i: X1[i]·s2[i] == X2[r]·s1[i] (all columns), r = rows2[i] (default i).

    Float inputs whose entries fit in float32 are multiplied in float64 (exact); other floats use error-free
    products (the pair (fl(x·y), error) is a canonical exact representation of x·y); Fractions otherwise."""
    n = X1.shape[0]
    if n == 0:
        return np.zeros(0, dtype=bool)
    if rows2 is not None and not (is_float_array(X2) and products_exact(X1, X2, s1, s2)):
        X2 = X2[rows2]
        rows2 = None
    if not all(is_float_array(x) for x in (X1, X2, s1, s2)):
        X1, X2, s1, s2 = (fractions_of(x) for x in (X1, X2, s1, s2))
        return np.array([bool(np.all(X1[i] * s2[i] == X2[i] * s1[i])) for i in range(n)], dtype=bool)
    fast = products_exact(X1, X2, s1, s2)
    if not fast and not all(_in_safe_range(x) for x in (X1, X2, s1, s2)):
        X1, X2, s1, s2 = (fractions_of(x) for x in (X1, X2, s1, s2))
        return np.array([bool(np.all(X1[i] * s2[i] == X2[i] * s1[i])) for i in range(n)], dtype=bool)
    s1 = s1.astype(np.float64)
    s2 = s2.astype(np.float64)
    m = X1.shape[1]
    out = np.empty(n, dtype=bool)
    chunk = 64
    b1 = np.empty((chunk, m))
    b2 = np.empty((chunk, m))
    eq = np.empty((chunk, m), dtype=bool)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        r = stop - start
        if fast:
            np.multiply(X1[start:stop], s2[start:stop, None], out=b1[:r])
            x2 = X2[start:stop] if rows2 is None else X2[rows2[start:stop]]
            np.multiply(x2, s1[start:stop, None], out=b2[:r])
            np.equal(b1[:r], b2[:r], out=eq[:r])
        else:
            p1, e1 = _two_product(X1[start:stop].astype(np.float64), s2[start:stop, None])
            p2, e2 = _two_product(X2[start:stop].astype(np.float64), s1[start:stop, None])
            eq[:r] = (p1 == p2) & (e1 == e2)
        out[start:stop] = eq[:r].all(axis=1)
    return out


def exact_products(X: np.ndarray, s: np.ndarray) -> np.ndarray:
    """X[i, :]·s[i] exactly: float64 when the products are exact in float64, else Fractions."""
    if is_float_array(X) and is_float_array(s) and products_exact(X, s):
        return X * s.astype(np.float64)[:, None]
    return np.asarray(fractions_of(X) * fractions_of(s)[:, None])
