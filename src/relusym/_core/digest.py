"""The digest of a normal form: its definition (scheme ``relusym.nf/2``) and the reference computation.

The digest is the SHA-256 (hex) of a byte string that depends only on NF(θ) = (K, M, e), hence only on the
function ρ(θ).  The bytes are built from integers only, so that a float network's digest can be computed from
its integer mantissas in numpy while a rational network's is computed from Fractions, with the same result.

Integers.  An *integer block* encodes a finite sequence of integers x_1 … x_L as

    u32(w) ‖ |x_1| … |x_L| ‖ signs

where w = max(1, max_i ⌈bitlen(|x_i|) / 8⌉) is the common width in bytes, each |x_i| is written as w bytes,
little-endian, and ``signs`` is the bit sequence [x_i < 0] packed eight to a byte, least significant bit first
(``numpy.packbits(..., bitorder="little")``), ⌈L/8⌉ bytes.  u32 and u64 are little-endian unsigned integers.

Rationals.  Every rational x ≠ 0 is written uniquely as x = 2^t · p / q with p, q odd, q > 0 and gcd(p, q) = 1
(its *2-adic split*); 0 is written (t, p, q) = (0, 0, 1).  A *rational block* of x_1 … x_L is the three integer
blocks of the t's, the p's and the q's, in this order.  A float (or any dyadic rational) has q = 1 and a small
t, so float data stays in machine integers.

Kink classes.  The class of û (the hyperplane normalised so that the first nonzero entry of its normal is 1) is
represented by the *primitive integer vector* ŵ ∈ ℤ^(m+1) on the ray of û: the unique integer vector with
gcd 1 and ŵ = û · d for some d > 0.  For a float neuron w_i = (a_i, b_i) it is the vector of integer mantissas
of w_i divided by their gcd, with the sign of λ_i (the first nonzero entry of a_i) removed.

The bytes.  With N the number of kink classes,

    b"relusym.nf/2\\n" ‖ u64(m) ‖ u64(k) ‖ u64(N)
    ‖ integer block of ŵ_1 … ŵ_N    (N·(m+1) integers, row after row)
    ‖ rational block of κ_1 … κ_N   (N·k rationals, the kinks of the classes in the same order)
    ‖ rational block of M           (k·m rationals, row-major)
    ‖ rational block of e           (k rationals)

where the classes are ordered by the byte string of their row of the hyperplane block — its (m+1)·w magnitude
bytes followed by its m+1 sign bytes (0 or 1) — compared lexicographically.  This order is canonical (it depends
only on the set of classes) and is *not* the exact lexicographic order of û that ``NormalForm.K`` uses: the
digest is a fingerprint, not a sorted listing.

This module holds the definition in executable form (:func:`reference_digest`, from exact rationals, written
for clarity rather than speed) and the encoders the fast paths share; ``NormalForm.digest`` and the zoo's
batched digests must agree with it on every network.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from math import gcd
from typing import Any

import numpy as np

from relusym._exact.mantissas import float_parts

__all__ = [
    "DIGEST_SCHEME",
    "DIGEST_MAGIC",
    "digest_header",
    "int_block",
    "rational_block",
    "two_adic",
    "primitive_vector",
    "reference_digest_bytes",
    "reference_digest",
    "u64_block",
    "i64_block",
    "ones_block",
    "dyadic_block",
    "float_block",
    "digits_block",
    "hyperplane_block",
    "hyperplane_parts",
    "byte_widths",
    "odd_part_digits",
]

DIGEST_SCHEME = "relusym.nf/2"
DIGEST_MAGIC = b"relusym.nf/2\n"


def digest_header(m: int, k: int, N: int) -> bytes:
    """The first bytes hashed: the scheme, then m, k and the number of kink classes N."""
    return DIGEST_MAGIC + struct.pack("<QQQ", m, k, N)


def _width(values: Sequence[int]) -> int:
    return max([1] + [(abs(x).bit_length() + 7) // 8 for x in values])


def _signs(values: Sequence[int]) -> bytes:
    out = bytearray((len(values) + 7) // 8)
    for i, x in enumerate(values):
        if x < 0:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def int_block(values: Sequence[int]) -> bytes:
    """The integer block of ``values``: u32(w), the magnitudes in w bytes little-endian, the packed signs."""
    w = _width(values)
    return struct.pack("<I", w) + b"".join(abs(x).to_bytes(w, "little") for x in values) + _signs(values)


def two_adic(x: Fraction | int) -> tuple[int, int, int]:
    """The 2-adic split (t, p, q) of x: x = 2^t · p / q with p, q odd, q > 0, gcd(p, q) = 1; (0, 0, 1) for 0."""
    x = Fraction(x)
    p, q = x.numerator, x.denominator
    if p == 0:
        return (0, 0, 1)
    tp = (p & -p).bit_length() - 1
    tq = (q & -q).bit_length() - 1
    return (tp - tq, p >> tp, q >> tq)


def rational_block(values: Iterable[Fraction | int]) -> bytes:
    """The rational block of ``values``: the integer blocks of their 2-adic splits' t, p and q."""
    splits = [two_adic(x) for x in values]
    return b"".join(int_block([s[i] for s in splits]) for i in range(3))


def primitive_vector(u: Sequence[Fraction | int]) -> list[int]:
    """The primitive integer vector on the ray of u (gcd 1, a positive multiple of u); u must be nonzero."""
    fr = [Fraction(x) for x in u]
    d = 1
    for x in fr:
        d = d * x.denominator // gcd(d, x.denominator)
    ints = [int(x * d) for x in fr]
    g = 0
    for n in ints:
        g = gcd(g, n)
    if g == 0:
        raise ValueError("primitive_vector of the zero vector")
    return [n // g for n in ints]


def _row_key(row: Sequence[int], w: int) -> bytes:
    return b"".join(abs(x).to_bytes(w, "little") for x in row) + bytes(1 if x < 0 else 0 for x in row)


def reference_digest_bytes(
    m: int,
    k: int,
    K: Sequence[tuple[Sequence[Fraction | int], Sequence[Fraction | int]]],
    M: Sequence[Sequence[Fraction | int]],
    e: Sequence[Fraction | int],
) -> bytes:
    """The bytes the digest hashes, from the normal form (K, M, e) in exact rationals (the definition).

    ``K`` lists the kink classes (û, κ) with κ ≠ 0, in any order; ``M`` is k×m and ``e`` has k entries."""
    rows = [(primitive_vector(u), [Fraction(x) for x in kappa]) for u, kappa in K]
    w = _width([x for r, _ in rows for x in r])
    rows.sort(key=lambda rk: _row_key(rk[0], w))
    hyper = [x for r, _ in rows for x in r]
    kinks = [x for _, kap in rows for x in kap]
    flatM = [x for row in M for x in row]
    return (
        digest_header(m, k, len(rows))
        + int_block(hyper)
        + rational_block(kinks)
        + rational_block(flatM)
        + rational_block(list(e))
    )


def reference_digest(
    m: int,
    k: int,
    K: Sequence[tuple[Sequence[Fraction | int], Sequence[Fraction | int]]],
    M: Sequence[Sequence[Fraction | int]],
    e: Sequence[Fraction | int],
) -> str:
    """SHA-256 (hex) of :func:`reference_digest_bytes`: the digest's definition, computed from Fractions."""
    return hashlib.sha256(reference_digest_bytes(m, k, K, M, e)).hexdigest()


# ----------------------------------------------------------------------------------------------------------
# single-network fast encoders
#
# The same bytes as above, from numpy arrays of integers: magnitudes as uint64 (or as base-2^16 digits when
# they are wider), signs as booleans.  A float x is the dyadic rational p · 2^t with p its odd integer mantissa
# (``relusym._exact.mantissas.float_parts``), so its 2-adic split is (t, p, 1) with no division at all.


def _sign_bytes(neg: np.ndarray) -> bytes:
    return np.packbits(np.ascontiguousarray(neg, dtype=bool).ravel(), bitorder="little").tobytes()


def u64_block(mag: np.ndarray, neg: np.ndarray) -> bytes:
    """The integer block of the integers with magnitudes ``mag`` (uint64) and signs ``neg`` (True: negative;
    it must be False where the magnitude is 0)."""
    mag = np.ascontiguousarray(mag, dtype="<u8").ravel()
    w = max(1, (int(mag.max(initial=0)).bit_length() + 7) // 8)
    raw = mag.view(np.uint8).reshape(-1, 8)[:, :w]
    return struct.pack("<I", w) + raw.tobytes() + _sign_bytes(neg)


def i64_block(x: np.ndarray) -> bytes:
    """The integer block of an int64 array (flattened in C order)."""
    x = np.asarray(x, dtype=np.int64)
    return u64_block(np.abs(x).astype(np.uint64), x < 0)


def ones_block(L: int) -> bytes:
    """The integer block of L ones: the q's of L dyadic rationals."""
    return struct.pack("<I", 1) + b"\x01" * L + bytes((L + 7) // 8)


def dyadic_block(p: np.ndarray, t: np.ndarray) -> bytes:
    """The rational block of p · 2^t (int64 arrays, p odd or 0, t = 0 where p = 0): their 2-adic splits are
    (t, p, 1)."""
    return i64_block(t) + i64_block(p) + ones_block(int(np.size(p)))


def float_block(x: np.ndarray) -> bytes:
    """The rational block of a float array at its exact binary value (flattened in C order)."""
    p, t = float_parts(np.asarray(x))
    return dyadic_block(p, t)


def _ctz16(d: np.ndarray) -> np.ndarray:
    """Trailing zeros of nonzero integers below 2^16 (int64), exact through float64."""
    return np.asarray(np.frexp((d & -d).astype(np.float64))[1].astype(np.int64) - 1)


def digits_block(neg: np.ndarray, D: np.ndarray, t0: np.ndarray) -> bytes:
    """The rational block of the dyadic rationals ±(Σ_s D[s] · 2^(16 s)) · 2^t0, from normalized base-2^16
    digits D (S × L, int64 in [0, 2^16), see ``relusym._exact.mantissas.normalize_digits``), signs ``neg`` and exponent
    offsets t0 (L).  The 2-adic split takes out the trailing zeros z: t = t0 + z and p = magnitude / 2^z, a
    shift of the digits by z (whole digits, then bits)."""
    S, L = D.shape
    nz = (D != 0).any(axis=0)
    first = np.argmax(D != 0, axis=0)
    cols = np.arange(L)
    low = np.where(nz, D[first, cols], 1)
    c = _ctz16(low)
    t = np.where(nz, t0 + 16 * first + c, 0)
    idx = np.minimum(first[None, :] + np.arange(S + 1)[:, None], S)
    Dx = np.concatenate([D, np.zeros((1, L), dtype=D.dtype)])
    sh = np.take_along_axis(Dx, idx, axis=0)  # the digits moved down by ``first`` (zeros above)
    P = (sh[:-1] >> c) | ((sh[1:] << (16 - c)) & 0xFFFF)  # then by c bits
    raw = np.ascontiguousarray(P.T.astype("<u2")).view(np.uint8)  # L × 2S little-endian bytes
    top = int(np.nonzero(raw.any(axis=0))[0].max(initial=0)) + 1
    p_block = struct.pack("<I", top) + raw[:, :top].tobytes() + _sign_bytes(neg & nz)
    return i64_block(t) + p_block + ones_block(L)


def _odd(x: np.ndarray) -> np.ndarray:
    """The odd parts of nonnegative uint64 integers (0 stays 0): x shifted right by its trailing zeros."""
    low = (x & (~x + np.uint64(1))).astype(np.float64)  # the lowest set bit, a power of two (exact)
    return np.asarray(x >> np.maximum(np.frexp(low)[1] - 1, 0).astype(np.uint64))


def _row_gcd(mag: np.ndarray) -> np.ndarray:
    """The odd part of the gcd of each row of a nonnegative uint64 matrix (no row all zero): the gcd of the odd
    parts of the entries, column by column and only for the rows where it is still above 1 (for most rows two
    or three columns decide); the last few rows at once."""
    g = _odd(mag[:, 0])
    active = np.nonzero(g != 1)[0]
    for c in range(1, mag.shape[1]):
        if active.size == 0:
            break
        if c == 8:
            g[active] = np.gcd.reduce(_odd(mag[active]), axis=1)
            break
        ga = np.gcd(g[active], _odd(mag[active, c]))
        g[active] = ga
        active = active[ga != 1]
    return g


def _le_bytes(vals: np.ndarray, w: int) -> np.ndarray:
    """uint64 values (each below 2^(8w)) as their w low bytes each, little-endian, in one new contiguous array
    (never a view of ``vals``, which the caller may overwrite while a consumer still reads the result): a
    record of fields of 4, 2 and 1 bytes at offsets 0, 4, 6 (those that w needs), each assigned the value
    shifted down by its offset (the assignment keeps the low bytes)."""
    v = np.ascontiguousarray(vals, dtype=np.uint64).ravel()
    if w == 8:
        return v.astype("<u8", copy=True)
    fields, off = [], 0
    for size in (4, 2, 1):
        if w - off >= size:
            fields.append((f"f{off}", f"<u{size}", off))
            off += size
    out = np.empty(v.shape, dtype=np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields],
                                            "offsets": [f[2] for f in fields], "itemsize": w}))  # fmt: skip
    for name, _, o in fields:
        out[name] = v >> np.uint64(8 * o) if o else v
    return out


_ROWS = 128  # rows per chunk of the hyperplane encoder: its working set stays in cache
_PRECISION = {2: 11, 4: 24, 8: 53}  # significand bits of float16, float32, float64
_KEYS = 2  # leading entries of each row kept by the encoder's first pass (its sort keys)


def hyperplane_block(A: np.ndarray, b: np.ndarray, rows: np.ndarray, flip: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The hyperplane block of the rows w_i = (A[i], b[i]), i in ``rows`` (float arrays, a_i ≠ 0), each
    multiplied by −1 where ``flip`` (λ_i < 0), and the order of the rows in it (see :func:`hyperplane_parts`)."""
    order, parts = hyperplane_parts(A, b, rows, flip)
    return b"".join(bytes(p) for p in parts), order


def hyperplane_parts(
    A: np.ndarray, b: np.ndarray, rows: np.ndarray, flip: np.ndarray
) -> tuple[np.ndarray, Iterator[Any]]:
    """The hyperplane block of :func:`hyperplane_block` as the order of the rows (row keys ascending) and an
    iterator over buffers whose concatenation is the block; the buffers are packed as the iterator runs (so a
    consumer in another thread can hash them while the caller does other work), each a new object.

    Row i's primitive vector is its integer vector over one power of two divided by the gcd of its entries.  A
    first pass reads the rows a chunk at a time (in cache, in memory order): each row's integers over 2^e0
    (:func:`_row_range`), the 2-part of their gcd from their bitwise or, the odd part from :func:`_row_gcd`.  It
    keeps only the exponent E of the primitive vector's unit (e0 plus the 2-part), the odd gcd G, the largest
    entry (for the block's width w) and the first two entries, byte-swapped so that comparing them as integers
    compares their little-endian bytes: the order of the block is the order of the rows' magnitude bytes and,
    among rows with equal magnitudes, of their sign bytes, and for entries below 2^(8w) it is the same in w or
    in 8 bytes an entry (the padding bytes are zero).  The keys decide it almost always; rows that tie on them
    are computed whole and ordered by :func:`_row_order`, in the places their keys give them.  A second pass
    recomputes the rows in block order, |w_i| / 2^E / G exactly, and packs them in w bytes an entry: the matrix
    of all rows is never written.  Rows whose integers need 64 bits or more (float64 rows with a wide spread of
    exponents, subnormals beside huge entries) go through :func:`_wide_rows`, and then the block is built
    whole (:func:`_block_with_wide_rows`)."""
    N, m = rows.shape[0], A.shape[1]
    C = m + 1
    if N == 0:
        return np.zeros(0, dtype=np.int64), iter([struct.pack("<I", 1)])
    prec = max(_PRECISION[A.dtype.itemsize], _PRECISION[b.dtype.itemsize])
    if A.dtype.itemsize == 2:
        A = A.astype(np.float32)  # exact
    perm = np.argsort(rows, kind="stable")  # the first pass reads the rows in memory order
    R = rows[perm]
    E = np.zeros(N, dtype=np.int64)
    G = np.ones(N, dtype=np.uint64)
    top = np.zeros(N, dtype=np.uint64)
    keys = np.zeros((N, _KEYS), dtype=np.uint64)
    wide = np.zeros(N, dtype=bool)
    buf = np.empty((min(N, _ROWS), C), dtype=np.uint64)
    for s0 in range(0, N, _ROWS):
        s1 = min(N, s0 + _ROWS)
        F, bb, e0, high = _row_range(A[R[s0:s1]], b[R[s0:s1]], prec)
        at = np.arange(s0, s1)
        over = np.frexp(high)[1] - e0 > 63
        if over.any():
            wide[s0:s1] = over
            ok = ~over
            F, bb, e0, high, at = F[ok], bb[ok], e0[ok], high[ok], at[ok]
        V = buf[: at.shape[0]]
        _row_integers(F, bb, e0, V)
        low_bit = np.bitwise_or.reduce(V, axis=1)
        low_bit &= ~low_bit + np.uint64(1)
        shift = np.frexp(low_bit.astype(np.float64))[1] - 1
        g = _row_gcd(V)
        E[at], G[at] = e0 + shift, g
        su = shift.astype(np.uint64)
        top[at] = (np.ldexp(high, -e0).astype(np.uint64) >> su) // g
        keys[at] = ((V[:, :_KEYS] >> su[:, None]) // g[:, None]).byteswap()
    w = max(1, (int(top.max()).bit_length() + 7) // 8)
    if wide.any():
        return _block_with_wide_rows(A, b, R, perm, flip, E, G, wide, w)
    pos = np.lexsort(keys.T[::-1])  # positions in R, in block order (the first key most significant)
    k = keys[pos]
    tie = np.zeros(N, dtype=bool)
    tie[1:] = (k[1:] == k[:-1]).all(axis=1)
    tie[:-1] |= tie[1:]
    if tie.any():  # rows equal on their keys: ordered by their whole bytes, in the places of their keys
        slots = np.nonzero(tie)[0]
        vals, neg = _primitive_rows(A, b, R[pos[slots]], E[pos[slots]], G[pos[slots]], flip[perm[pos[slots]]])
        sub = _row_order(vals.view(np.dtype((np.void, 8 * C))).ravel(), vals, neg)
        pos = pos.copy()
        pos[slots] = pos[slots][sub]
    order = perm[pos]
    neg_all = np.empty((N, C), dtype=bool)

    def parts() -> Iterator[Any]:
        yield struct.pack("<I", w)
        out = np.empty((min(N, _ROWS), C), dtype=np.uint64)
        for s0 in range(0, N, _ROWS):
            s1 = min(N, s0 + _ROWS)
            at = pos[s0:s1]
            V = out[: s1 - s0]
            _primitive_rows(A, b, R[at], E[at], G[at], flip[order[s0:s1]], V, neg_all[s0:s1])
            yield _le_bytes(V, w)
        yield _sign_bytes(neg_all)

    return order, parts()


def _row_range(A: np.ndarray, b: np.ndarray, prec: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For the rows (A, b): (|A|, |b| in float64, e0, high): every entry of row i is a multiple of 2^e0[i] (the
    exponent of its smallest nonzero magnitude less the precision), and high[i] is its largest magnitude."""
    F = np.abs(A)
    bb = np.abs(b).astype(np.float64)
    low = F.min(axis=1)
    gaps = np.nonzero(low == 0)[0]
    if gaps.size:  # rows with a zero entry: their smallest nonzero magnitude
        low[gaps] = F[gaps].min(axis=1, initial=np.inf, where=F[gaps] > 0)
    low = np.minimum(low.astype(np.float64), np.where(bb > 0, bb, np.inf))
    high = np.maximum(F.max(axis=1).astype(np.float64), bb)
    return F, bb, np.frexp(low)[1].astype(np.int64) - prec, high


def _row_integers(F: np.ndarray, bb: np.ndarray, e: np.ndarray, out: np.ndarray) -> None:
    """out (uint64, R × (m+1)) = the magnitudes (F, bb) over 2^e[i] row by row, integers below 2^63 (F may be
    overwritten).  The scaling by a power of two is exact, in float32 when F is float32 and 2^-e is one."""
    m = F.shape[1]
    big = int(np.abs(e).max(initial=0))
    if F.dtype.itemsize <= 4 and big <= 120:
        np.multiply(F, np.ldexp(np.float32(1), -e).astype(np.float32)[:, None], out=F)
    elif big > 1000:  # 2^-e itself is beyond the float64 range
        F = np.ldexp(F.astype(np.float64), -e[:, None])
    else:
        F = np.multiply(F, np.ldexp(1.0, -e)[:, None], dtype=np.float64)
    out.view(np.int64)[:, :m] = F
    out[:, m] = np.ldexp(bb, -e)


def _primitive_rows(
    A: np.ndarray,
    b: np.ndarray,
    rows: np.ndarray,
    E: np.ndarray,
    G: np.ndarray,
    flip: np.ndarray,
    vals: np.ndarray | None = None,
    neg: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The primitive vectors of the rows (A[rows], b[rows]) flipped where ``flip``, given the exponent E of
    their unit and their odd gcd G (from the first pass of :func:`hyperplane_parts`): magnitudes (uint64, into
    ``vals``) and signs (into ``neg``)."""
    m = A.shape[1]
    if vals is None or neg is None:
        vals = np.empty((rows.shape[0], m + 1), dtype=np.uint64)
        neg = np.empty((rows.shape[0], m + 1), dtype=bool)
    Ar, br = A[rows], b[rows].astype(np.float64)
    sgn = np.where(flip, -1.0, 1.0)
    np.less(Ar * sgn.astype(Ar.dtype)[:, None], 0, out=neg[:, :m])  # a zero of either sign is not negative
    np.less(br * sgn, 0, out=neg[:, m])
    _row_integers(np.abs(Ar), np.abs(br), E, vals)
    odd = np.nonzero(G != 1)[0]
    if odd.size:
        vals[odd] //= G[odd, None]
    return vals, neg


def _block_with_wide_rows(
    A: np.ndarray,
    b: np.ndarray,
    R: np.ndarray,
    perm: np.ndarray,
    flip: np.ndarray,
    E: np.ndarray,
    G: np.ndarray,
    wide: np.ndarray,
    w: int,
) -> tuple[np.ndarray, Iterator[Any]]:
    """:func:`hyperplane_parts` when some rows (``wide``, positions in R) need 64 bits or more: every row is
    computed whole, the others by :func:`_primitive_rows`, those by :func:`_wide_rows`, all written in the
    common width, and ordered by :func:`_row_order`."""
    N, C = R.shape[0], A.shape[1] + 1
    narrow, wr = np.nonzero(~wide)[0], np.nonzero(wide)[0]
    vals, neg_n = _primitive_rows(A, b, R[narrow], E[narrow], G[narrow], flip[perm[narrow]])
    W = np.concatenate([A[R[wr]].astype(np.float64), b[R[wr]].astype(np.float64)[:, None]], axis=1)
    magw, ww = _wide_rows(W)
    w = max(w, ww)
    mag = np.zeros((N, C, w), dtype=np.uint8)
    mag[narrow, :, : min(w, 8)] = vals.view(np.uint8).reshape(-1, C, 8)[:, :, : min(w, 8)]
    mag[wr, :, :ww] = magw.reshape(-1, C, ww)
    mag = mag.reshape(N, C * w)
    neg = np.empty((N, C), dtype=bool)
    neg[narrow] = neg_n
    neg[wr] = ((W < 0) ^ flip[perm[wr], None]) & (W != 0)
    pos = _row_order(mag.view(np.dtype((np.void, C * w))).ravel(), mag, neg)
    return perm[pos], iter([struct.pack("<I", w), mag[pos], _sign_bytes(neg[pos])])


def _wide_rows(W: np.ndarray) -> tuple[np.ndarray, int]:
    """Magnitude bytes (N × C·w, w bytes per entry little-endian) of the primitive vectors of rows too wide for
    64 bits: entry = q · 2^s with q = odd mantissa / row gcd (below 2^53), written, chunk by chunk of rows, as
    the 64-bit words q · 2^(s mod 64) and its overflow at word s div 64 of a zeroed slot of ⌈w/8⌉ + 1 words,
    whose first w bytes are the entry."""
    N, C = W.shape
    mant, ex = float_parts(W)
    nz = mant != 0
    emin = np.where(nz, ex, np.iinfo(np.int64).max).min(axis=1)
    q = np.abs(mant).astype(np.uint64)
    q //= _row_gcd(q)[:, None]
    s = np.where(nz, ex - emin[:, None], 0)
    bits = np.frexp(q.astype(np.float64))[1].astype(np.int64) + s
    w = max(1, (int(np.where(nz, bits, 0).max()) + 7) // 8)
    slots = -(-w // 8) + 1
    out = np.empty((N, C * w), dtype=np.uint8)
    rows = max(1, 2**20 // (C * slots))  # about 8 MB of words per chunk
    for r0 in range(0, N, rows):
        qc, sc = q[r0 : r0 + rows].ravel(), s[r0 : r0 + rows].ravel()
        words = np.zeros((qc.size, slots), dtype="<u8")
        at, sh = sc >> 6, (sc & 63).astype(np.uint64)
        idx = np.arange(qc.size)
        words[idx, at] = qc << sh
        words[idx, at + 1] = np.where(sh > 0, qc >> ((np.uint64(64) - sh) & np.uint64(63)), np.uint64(0))
        out[r0 : r0 + rows] = words.view(np.uint8)[:, :w].reshape(-1, C * w)
    return out, w


def _row_order(keys: np.ndarray, mag: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The order of the rows by their magnitude bytes ``keys`` (a void view of the rows of ``mag``) and, among
    rows with equal magnitudes (rare: classes such as (1, 2) and (1, −2)), by their sign bytes."""
    order = np.argsort(keys, kind="stable")
    first = mag[order, 0]
    cand = np.nonzero(first[1:] == first[:-1])[0]
    if cand.size:
        same = [t for t in cand.tolist() if np.array_equal(mag[order[t]], mag[order[t + 1]])]
        if same:
            order = order.copy()
            t = 0
            while t < len(same):
                s0 = e0 = same[t]
                while t + 1 < len(same) and same[t + 1] == e0 + 1:
                    t += 1
                    e0 += 1
                grp = order[s0 : e0 + 2].tolist()
                order[s0 : e0 + 2] = sorted(grp, key=lambda i: neg[i].astype(np.uint8).tobytes())
                t += 1
    return order


# ----------------------------------------------------------------------------------------------------------
# helpers of the zoo's batched digests (relusym/_zoo/_digest.py, which builds the same bytes for many networks)
#
# Magnitudes are given as their little-endian bytes (a uint8 axis), which is what ``x.astype("<u8").view(np.uint8)``
# or ``digits.astype("<u2").view(np.uint8)`` gives for limbs or base-2¹⁶ digits.


def byte_widths(mag: np.ndarray) -> np.ndarray:
    """Bytes of each magnitude up to its last nonzero byte (0 for zero): ``mag`` is (..., nbytes) uint8,
    little-endian; the result has shape ``mag.shape[:-1]``.  The width of a block is max(1, max of these)."""
    nb = mag.shape[-1]
    nz = mag != 0
    last = nb - np.argmax(nz[..., ::-1], axis=-1)
    return np.where(nz.any(axis=-1), last, 0).astype(np.int64)


def odd_part_digits(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 2-adic split of nonnegative integers given as base-2¹⁶ digits: ``D`` (J, X) int64, digit j of number
    x in [0, 2¹⁶) with weight 2^(16 j) (one number per column).  Returns (s, P): s[x] the number of trailing
    zero bits of number x (−1 for zero) and P (J, X) the digits of number x shifted right by s[x] bits (its odd
    part; 0 for zero)."""
    J, X = D.shape
    if X == 0 or J == 0:
        return np.full(X, -1, dtype=np.int64), np.zeros((J, X), dtype=np.int64)
    nz = D != 0
    live = nz.any(axis=0)
    j0 = np.argmax(nz, axis=0)  # the lowest nonzero digit
    S = D
    step = 1
    while step < J:  # shift every number down by j0 whole digits: by 1, 2, 4, … where j0 has that bit
        move = (j0 & step) != 0
        if move.any():
            S = S.copy() if S is D else S
            S[:-step] = np.where(move, S[step:], S[:-step])
            S[-step:] *= ~move
        step <<= 1
    low = S[0] | ~live
    tz = ((low & -low).astype(np.float64).view(np.int64) >> 52) - 1023  # then by the trailing zero bits
    P = S >> tz
    P[:-1] |= (S[1:] << (16 - tz)) & 0xFFFF
    return np.where(live, 16 * j0 + tz, -1), P
