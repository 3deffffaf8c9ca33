"""Exact rows of deep networks as dyadic integer arrays: the fast path of the reductions, the canonical form, its
digest and the alignment (docs/math/deep.md), giving exactly the answers of the Fraction reference.

A float, and every rational whose denominator is a power of two, is q·2^k with q an odd integer (or q = k = 0
for zero), one representation per value.  A layer's augmented rows [W | b] are held as two int64 arrays
(q, k) with |q| < 2^62 (:class:`Dyadic`), read from a float array by :func:`relusym._exact.mantissas.float_parts`
without a Python object per entry.  On such rows:

* the *primitive row* of a row (q_j·2^(k_j))_j is (q_j/g · 2^(k_j − k_min))_j with g the gcd of the odd |q_j| (odd
  itself) and k_min the smallest exponent of a nonzero entry; its scale is d = g·2^(k_min), again of the form
  odd·2^x.  Multiplying a column by such a scale multiplies the mantissas by an odd g (they stay odd) and adds
  x to the exponents, so every layer of the canonical form stays in this representation while the mantissas
  fit in 62 bits;
* two primitive rows are equal iff their (q, k) arrays are equal, and compare (lexicographically, as integer
  tuples) by the int64 keys (±(bit length + k), ±mantissa aligned to 62 bits) of :func:`order_rows`;
* the integers themselves (which can be far beyond 64 bits: a primitive row scales a bias next to weights of a
  very different size) are produced only for the digest text (:func:`render_rows`, vectorised where they fit in
  int64) and when someone reads them.

Whatever does not fit (a rational that is not dyadic, a mantissa of more than 62 bits) makes the functions here
return None, and the callers fall back on the Fraction reference; so do reductions, which are rare in trained
networks: :func:`reductions_apply` only detects them, with vectorised sign tests, zero tests and row hashes
verified exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._exact.mantissas import float_parts
from relusym._exact.numbers import is_float_array, to_fraction

__all__ = [
    "Dyadic",
    "Primitive",
    "dyadic_of_arrays",
    "dyadic_of_rows",
    "primitive_rows",
    "scale_columns",
    "order_rows",
    "int_rows",
    "render_rows",
    "render_rational_rows",
    "fraction_rows",
    "scale_fractions",
    "row_hashes",
    "reductions_apply",
    "equal_rows",
]

_MAX_BITS = 62  # |q| < 2^62: products of two checked mantissas and the sort keys stay in int64
_BIG = np.iinfo(np.int64).max


@dataclass(frozen=True, eq=False)
class Dyadic:
    """Exact values q·2^k entrywise: q an int64 array of odd integers (0 for a zero entry, with k = 0 there),
    |q| < 2^62, k an int64 array of the same shape.  The representation of a value is unique."""

    q: np.ndarray
    k: np.ndarray
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.q.shape)

    def primitive(self) -> Primitive:
        """The primitive rows (computed once per array)."""
        got = self._memo.get("primitive")
        if got is None:
            got = primitive_rows(self)
            self._memo["primitive"] = got
        assert isinstance(got, Primitive)
        return got


@dataclass(frozen=True, eq=False)
class Primitive:
    """Row i of a :class:`Dyadic` array is g[i]·2^x[i] times the primitive integer row ``rows`` [i] (g odd ≥ 1;
    a zero row is its own primitive row, with g = 1 and x = 0)."""

    rows: Dyadic
    g: np.ndarray
    x: np.ndarray


def _bit_length(a: np.ndarray) -> np.ndarray:
    """The bit length of each entry of a non-negative int64 array (0 for 0), exactly."""
    e = np.frexp(a.astype(np.float64))[1].astype(np.int64)  # one too large where the float rounded up
    over = (a > 0) & ((a >> np.maximum(e - 1, 0)) == 0)
    out: np.ndarray = e - over.astype(np.int64)
    return out


def dyadic_of_arrays(W: np.ndarray, b: np.ndarray) -> Dyadic | None:
    """The augmented rows [W | b] of a parameter pair (float arrays, or object arrays of exact rationals) as a
    :class:`Dyadic`; None when an entry is not dyadic or its odd part has more than 62 bits."""
    n = W.shape[0]
    if is_float_array(W) and is_float_array(b):
        M = np.empty((n, W.shape[1] + 1), dtype=np.float64)
        M[:, :-1] = W
        M[:, -1] = b
        q, k = float_parts(M)  # float64 mantissas: at most 53 bits
        return Dyadic(q, k)
    rows = [list(r) + [v] for r, v in zip(W.tolist(), b.tolist(), strict=True)]
    return _dyadic_of_values(rows, (n, W.shape[1] + 1))


def dyadic_of_rows(rows: Sequence[Sequence[Any]], width: int) -> Dyadic | None:
    """Augmented rows given as exact scalars (lists of Fractions), ``width`` entries each, as a :class:`Dyadic`
    (None as in :func:`dyadic_of_arrays`)."""
    return _dyadic_of_values(rows, (len(rows), width))


def _dyadic_of_values(rows: Sequence[Sequence[Any]], shape: tuple[int, int]) -> Dyadic | None:
    qs: list[int] = []
    ks: list[int] = []
    for r in rows:
        if len(r) != shape[1]:
            return None
        for v in r:
            f = v if type(v) is Fraction else to_fraction(v)
            num, den = f.numerator, f.denominator
            if den & (den - 1):
                return None  # not dyadic
            if num == 0:
                qs.append(0)
                ks.append(0)
                continue
            tz = (num & -num).bit_length() - 1
            odd = num >> tz
            if abs(odd).bit_length() > _MAX_BITS:
                return None
            qs.append(odd)
            ks.append(tz - (den.bit_length() - 1))
    q = np.array(qs, dtype=np.int64).reshape(shape)
    k = np.array(ks, dtype=np.int64).reshape(shape)
    return Dyadic(q, k)


def primitive_rows(D: Dyadic) -> Primitive:
    """The primitive integer row and the positive scale g·2^x of every row (see :class:`Primitive`)."""
    q, k = D.q, D.k
    n, c = q.shape
    if c == 0:
        one = np.ones(n, dtype=np.int64)
        return Primitive(D, one, np.zeros(n, dtype=np.int64))
    g = np.gcd.reduce(np.abs(q), axis=1)
    zero = g == 0
    nz = q != 0
    xmin = k.min(axis=1, where=nz, initial=_BIG)
    xmin[zero] = 0
    g[zero] = 1
    pq = q if bool((g == 1).all()) else q // g[:, None]
    pk = np.zeros_like(k)
    np.subtract(k, xmin[:, None], out=pk, where=nz)
    return Primitive(Dyadic(pq, pk), g, xmin)


def scale_columns(D: Dyadic, perm: np.ndarray, g: np.ndarray, x: np.ndarray) -> Dyadic | None:
    """The rows in the coordinates of the previous layer's new units: column s is old column perm[s] times
    g[s]·2^x[s] (g odd), the bias (last column) unchanged; None when a mantissa would reach 2^62."""
    n, c = D.q.shape
    cols = np.append(perm, c - 1)
    qs = D.q[:, cols]
    ks = D.k[:, cols]
    if not bool((g == 1).all()):
        if qs.size:
            top = _bit_length(np.abs(qs[:, :-1]).max(axis=0)) + _bit_length(g)
            if int(top.max(initial=0)) > _MAX_BITS:
                return None
        qs[:, :-1] *= g[None, :]
    if bool(x.any()):
        np.add(ks[:, :-1], x[None, :], out=ks[:, :-1], where=qs[:, :-1] != 0)
    return Dyadic(qs, ks)


def _sort_keys(D: Dyadic, cols: range) -> list[np.ndarray]:
    """Int64 keys, most significant first, that order rows as the integer tuples q·2^k of the columns ``cols``
    (each entry: ±(bit length + k), then ±(the mantissa shifted to 62 bits); zero gives (0, 0))."""
    keys: list[np.ndarray] = []
    for j in cols:
        q, k = D.q[:, j], D.k[:, j]
        a = np.abs(q)
        bl = _bit_length(a)
        s = np.sign(q)
        keys.append(s * (bl + k))
        keys.append(s * (a << np.where(a > 0, _MAX_BITS - bl, 0)))
    return keys


def order_rows(P: Dyadic) -> list[int]:
    """The stable order of the rows sorted as integer tuples (what ``sorted(range(n), key=rows.__getitem__)``
    gives), by int64 keys on the leading columns; ties there are ordered by the integer tuples themselves."""
    n, c = P.q.shape
    if n <= 1:
        return list(range(n))
    lead = range(min(c, 4))
    keys = _sort_keys(P, lead)
    if not keys:
        return list(range(n))
    order = np.lexsort(keys[::-1])
    Ks = np.stack(keys, axis=1)[order]
    if bool((Ks[1:] == Ks[:-1]).all(axis=1).any()):
        rows = int_rows(P)
        return sorted(range(n), key=rows.__getitem__)
    return [int(i) for i in order.tolist()]


def _fits(D: Dyadic) -> np.ndarray:
    """Whether each entry's integer q·2^k (k ≥ 0) fits in 62 bits."""
    out: np.ndarray = _bit_length(np.abs(D.q)) + D.k <= _MAX_BITS
    return out


def int_rows(P: Dyadic) -> list[tuple[int, ...]]:
    """The rows of an integer-valued :class:`Dyadic` (every k ≥ 0) as tuples of Python ints."""
    fits = _fits(P)
    if bool(fits.all()):
        return list(map(tuple, (P.q << P.k).tolist()))
    obj = (P.q << np.where(fits, P.k, 0)).astype(object)
    for i, j in np.argwhere(~fits).tolist():
        obj[i, j] = int(P.q[i, j]) << int(P.k[i, j])
    return list(map(tuple, obj.tolist()))


def fraction_rows(D: Dyadic) -> list[list[Fraction]]:
    """The rows as lists of Fractions (exact)."""
    out: list[list[Fraction]] = []
    for qr, kr in zip(D.q.tolist(), D.k.tolist(), strict=True):
        out.append([Fraction(q << k) if k >= 0 else Fraction(q, 1 << -k) for q, k in zip(qr, kr, strict=True)])
    return out


def scale_fractions(g: np.ndarray, x: np.ndarray) -> tuple[Fraction, ...]:
    """The scales g·2^x as Fractions."""
    return tuple(
        Fraction(gi << xi) if xi >= 0 else Fraction(gi, 1 << -xi) for gi, xi in zip(g.tolist(), x.tolist(), strict=True)
    )


# ----------------------------------------------------------------------------------------------------------
# the digest text: decimal integers without a Python object per entry

_P10 = 10 ** np.arange(1, 19, dtype=np.int64)
_TEN10 = np.int64(10**10)
_SPACE, _NEWLINE, _MINUS, _ZERO = 32, 10, 45, 48
_CHUNK = 1 << 16  # entries per block of the renderer (bounded working memory)


def _render_int64(a: np.ndarray, neg: np.ndarray, sep: np.ndarray) -> bytes:
    """The text of integers (magnitudes ``a`` < 10^19, signs ``neg``), each followed by its separator byte.

    The characters are laid out in a (N, 21) byte array (sign, 19 digits, separator), the bytes that are not
    part of the text left 0, and the text is what remains once the zero bytes are dropped."""
    N = a.shape[0]
    M = np.zeros((N, 21), dtype=np.uint8)
    M[:, 0] = np.where(neg, _MINUS, 0)
    M[:, 20] = sep
    hi = a // _TEN10
    more = hi > 0
    for x, col, count in ((a - hi * _TEN10).astype(np.float64), 19, 10), (hi.astype(np.float64), 9, 9):
        for d in range(count):  # both halves are below 2^53: exact in float64
            live = x > 0
            if col == 19:
                live |= more
                if d == 0:
                    live[:] = True  # the last digit is always written ("0" for zero)
            if not live.any():
                break
            y = np.floor(x * 0.1 + 0.05)  # x // 10: the error of x·0.1 is far below 0.05
            M[:, col - d] = ((x - 10.0 * y) + _ZERO) * live
            x = y
    return M.tobytes().replace(b"\x00", b"")


def render_rows(P: Dyadic) -> bytes:
    """The digest lines of integer rows q·2^k (k ≥ 0): each row's integers in decimal, separated by single
    spaces, each row ended by a newline (what ``" ".join(map(str, row)) + "\\n"`` gives, row after row)."""
    n, c = P.q.shape
    if n == 0:
        return b""
    if c == 0:
        return bytes(b"\n" * n)
    q = P.q.ravel()
    k = P.k.ravel()
    fits = _bit_length(np.abs(q)) + k <= _MAX_BITS
    sep = np.full(n * c, _SPACE, dtype=np.uint8)
    sep[c - 1 :: c] = _NEWLINE
    pieces: list[bytes] = []
    for s0 in range(0, n * c, _CHUNK):
        s1 = min(n * c, s0 + _CHUNK)
        qq, kk, ff = q[s0:s1], k[s0:s1], fits[s0:s1]
        v = qq << np.where(ff, kk, 0)
        a = np.where(ff, np.abs(v), 0)
        raw = _render_int64(a, ff & (v < 0), sep[s0:s1])
        big = np.flatnonzero(~ff)
        if big.size == 0:
            pieces.append(raw)
            continue
        # an entry beyond 62 bits was rendered as "0" plus its separator: splice its decimal text in
        nd = 1 + np.searchsorted(_P10, a, side="right") + (ff & (v < 0)) + 1
        ends = np.cumsum(nd)
        prev = 0
        for e in big.tolist():
            start = int(ends[e]) - 2
            pieces.append(raw[prev:start])
            pieces.append(str(int(qq[e]) << int(kk[e])).encode())
            prev = start + 1
        pieces.append(raw[prev:])
    return b"".join(pieces)


def render_rational_rows(D: Dyadic) -> bytes:
    """The digest lines of rational rows: each entry ``p/q`` in lowest terms (``p`` for an integer)."""
    lines = []
    for qr, kr in zip(D.q.tolist(), D.k.tolist(), strict=True):
        lines.append(" ".join(str(q << k) if k >= 0 else f"{q}/{1 << -k}" for q, k in zip(qr, kr, strict=True)))
    return "".join(line + "\n" for line in lines).encode()


# ----------------------------------------------------------------------------------------------------------
# hashes and exact comparisons of rows

_HASH_SEED = 0x5EED_D11E_2026


@functools.lru_cache(maxsize=16)
def _multipliers(width: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.Generator(np.random.PCG64(_HASH_SEED + width))
    R = rng.integers(0, 2**63, size=(2, width), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    R.setflags(write=False)
    return R[0], R[1]


def row_hashes(D: Dyadic) -> np.ndarray:
    """A 64-bit hash of each row (equal rows hash equally; callers verify candidates exactly)."""
    n, c = D.q.shape
    if n == 0 or c == 0:
        return np.zeros(n, dtype=np.uint64)
    R1, R2 = _multipliers(c)
    with np.errstate(over="ignore"):
        h: np.ndarray = np.ascontiguousarray(D.q).view(np.uint64) @ R1 + np.ascontiguousarray(D.k).view(np.uint64) @ R2
    return h


def equal_rows(A: Dyadic, ia: np.ndarray, B: Dyadic, ib: np.ndarray) -> np.ndarray:
    """Exactly, for each t: row ia[t] of A equals row ib[t] of B."""
    if ia.size == 0:
        return np.zeros(0, dtype=bool)
    out: np.ndarray = (A.q[ia] == B.q[ib]).all(axis=1) & (A.k[ia] == B.k[ib]).all(axis=1)
    return out


def _has_duplicate_rows(P: Dyadic) -> bool:
    """Whether two rows are exactly equal (hash candidates, verified)."""
    n = P.q.shape[0]
    if n < 2:
        return False
    h = row_hashes(P)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = np.flatnonzero(hs[1:] == hs[:-1])
    if same.size == 0:
        return False
    return bool(equal_rows(P, order[same], P, order[same + 1]).any())


def reductions_apply(layers: Sequence[Dyadic]) -> bool:
    """Whether any rule of :mod:`relusym._deep.reduce` applies to the augmented rows (constant, dead or affine
    on the orthant, positive duplicate, no output): exactly, with vectorised tests."""
    L = len(layers)
    for ell in range(L - 1):
        q = layers[ell].q
        nxt = layers[ell + 1].q
        if q.shape[0] == 0:
            continue
        w, beta = q[:, :-1], q[:, -1]
        if bool((~w.any(axis=1)).any()):
            return True  # constant
        if ell >= 1:
            if bool((q <= 0).all(axis=1).any()):
                return True  # dead on the orthant
            if bool(((beta > 0) & (w >= 0).all(axis=1)).any()):
                return True  # affine on the orthant
        if _has_duplicate_rows(layers[ell].primitive().rows):
            return True  # positive duplicate
        if bool((~nxt[:, :-1].any(axis=0)).any()):
            return True  # no output
    return False
