"""Integers from floats, vectorized over a stack of networks (the arithmetic of :mod:`relusym._zoo._digest`):
each float as an odd integer times a power of two read from its bits, leading bits, row gcds, and exact sums held
as base-2^16 digits (split, shifted and normalized without Python integers).  Every function is exact on finite
float32/float64 input."""

from __future__ import annotations

import numpy as np

from relusym._core.digest import odd_part_digits

__all__ = [
    "DIGIT",
    "BIG",
    "MASK",
    "odd_parts",
    "top_bit",
    "bit_length",
    "exponent_field",
    "log2_pow2",
    "u64_bytes",
    "row_gcd",
    "shift_limbs",
    "digits",
    "normalize",
    "split_digits",
    "split_words",
]

DIGIT = 16  # bits per digit of the exact sums
BIG = 1 << 40  # the exponent given to 0 (below every exponent of a finite float)
FRAC = (1 << 52) - 1
MASK = (1 << DIGIT) - 1


def odd_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = o · 2^s exactly, o an odd integer (|o| < 2⁵³; int32 below 2²⁴ for float32 input), or o = 0 and
    s = BIG (2²⁹ for float32 input) for x = 0 (finite float32 or float64 input), from the bits of x."""
    if x.dtype == np.float32:
        b32 = x.view(np.int32)
        e32 = (b32 >> 23) & 0xFF
        m32 = (b32 & 0x7FFFFF) | (np.minimum(e32, 1) << 23)
        z32 = m32 == 0
        low32 = (m32 & -m32) | z32
        tz32 = (low32.astype(np.float32).view(np.int32) >> 23) - 127
        o32 = m32 >> tz32
        sm32 = b32 >> 31
        return (o32 ^ sm32) - sm32, np.maximum(e32, 1) - 150 + tz32 + z32 * ((1 << 29) + 149)
    bits = x.view(np.int64)
    ef = (bits >> 52) & 0x7FF
    mant = (bits & FRAC) | (np.minimum(ef, 1) << 52)
    zero = mant == 0
    low = (mant & -mant) | zero
    tz = (low.astype(np.float64).view(np.int64) >> 52) - 1023
    o = mant >> tz
    sm = bits >> 63
    return (o ^ sm) - sm, np.maximum(ef, 1) - 1075 + tz + zero * (BIG + 1074)


def exponent_field(f: np.ndarray) -> np.ndarray:
    """The biased exponent field of float64 values (0 for 0), read from their bits: for a normal f ≠ 0,
    2^(field − 1023) ≤ |f| < 2^(field − 1022) (np.frexp's exponent is field − 1022; np.frexp goes through a
    scalar libm call per entry)."""
    return np.asarray((f.view(np.int64) >> 52) & 0x7FF)


def top_bit(x: np.ndarray) -> np.ndarray:
    """Exponent of the leading bit of each x (−BIG for 0)."""
    ex = exponent_field(x.astype(np.float64)) - 1023
    return np.where(x != 0, ex, -BIG)


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bit lengths of nonnegative int64 entries below 2⁵³ (0 for 0): exact in float64, the bit length is the
    exponent field less 1022."""
    return np.asarray(np.maximum(exponent_field(x.astype(np.float64)) - 1022, 0))


def log2_pow2(x: np.ndarray) -> np.ndarray:
    """log2 of integer powers of two below 2^64 (any integer dtype; −1023 for 0), exactly: a power of two is a
    float64."""
    return exponent_field(x.astype(np.float64)) - 1023


def u64_bytes(x: np.ndarray) -> np.ndarray:
    """Bytes of each uint64 entry up to its last nonzero byte (0 for 0), exactly."""
    hi = (x >> np.uint64(32)).astype(np.int64)
    lo = (x & np.uint64(0xFFFFFFFF)).astype(np.int64)
    bl = np.where(hi > 0, 32 + bit_length(hi), bit_length(lo))
    return (bl + 7) >> 3


def row_gcd(x: np.ndarray) -> np.ndarray:
    """gcd of each row of a nonnegative int64 matrix, column by column on the rows not yet at 1."""
    g = x[:, 0].copy()
    rows = np.arange(x.shape[0])
    for j in range(1, x.shape[1]):
        rows = rows[g[rows] != 1]
        if rows.size == 0:
            break
        g[rows] = np.gcd(g[rows], x[rows, j])
    return g


def shift_limbs(q: np.ndarray, d: np.ndarray, L: int) -> np.ndarray:
    """q · 2^d as L little-endian 64-bit limbs (q < 2⁵³ and d ≥ 0 int64 arrays of one shape, q·2^d < 2^(64 L))."""
    if L == 1:
        one: np.ndarray = (q << d).astype("<u8")[..., None]
        return one
    qu = q.astype(np.uint64)
    li = d >> 6
    r = (d & 63).astype(np.uint64)
    lo = qu << r
    hi = (qu >> np.minimum(np.uint64(64) - r, np.uint64(63))) * (r > 0)
    out = np.zeros(q.shape + (L,), dtype="<u8")
    for l_ in range(L):
        out[..., l_] = lo * (li == l_) | hi * (li + 1 == l_)
    return out


def digits(o: np.ndarray, sh: np.ndarray, P: int, axis: int, out: np.ndarray | None = None) -> np.ndarray:
    """Base-2¹⁶ digits of o · 2^sh (o int64 with |o| < 2⁵³, sh ≥ 0; any sh for o = 0), as a float64 array
    with a new axis of length P at position ``axis``: o·2^sh = Σ_p D[..p..]·2^(16 p) and |D| ≤ 2¹⁶ (o·2^sh must
    stay below 2^(16 P) in magnitude); written into ``out`` when given."""
    if out is None:
        out = np.empty(o.shape[:axis] + (P,) + o.shape[axis:])
    at = (slice(None),) * axis
    if P * DIGIT <= 62:  # in one int64: digits in [0, 2¹⁶) below a signed top digit
        y = o << np.minimum(sh, 63)
        for p in range(P - 1):
            out[at + (p,)] = (y >> (DIGIT * p)) & MASK
        out[at + (P - 1,)] = y >> (DIGIT * (P - 1))
        return out
    sm = o >> 63
    a = (o ^ sm) - sm
    for p in range(P):
        r = DIGIT * p - sh
        d = ((a << np.clip(-r, 0, DIGIT)) >> np.clip(r, 0, 63)) & MASK
        out[at + (p,)] = (d ^ sm) - sm
    return out


def normalize(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact integers Σ_j S[j]·2^(16 j) (S (J, X) float64 with integer entries below 2⁵³) as magnitudes in
    digits [0, 2¹⁶) (int64 (J, X)) and signs; the top digit must stay unused by the magnitudes."""
    J = S.shape[0]
    D = S.astype(np.int64)
    for j in range(J - 1):
        D[j + 1] += D[j] >> DIGIT
        D[j] &= MASK
    neg = D[J - 1] < 0
    if neg.any():  # −S: negate the digits and carry again
        D *= 1 - 2 * neg.astype(np.int64)
        for j in range(J - 1):
            D[j + 1] += D[j] >> DIGIT
            D[j] &= MASK
    return D, neg


def split_digits(S: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 2-adic splits of the exact dyadic numbers 2^base · Σ_j S[j] 2^(16 j) (S (J, X)): (t, bytes of |p|
    (X, 2J) little-endian, p < 0, bytes used by |p|)."""
    D, neg = normalize(S)
    s, P = odd_part_digits(D)
    nz = s >= 0
    t = np.where(nz, base + s, 0)
    J = D.shape[0]
    top = ((P != 0) * np.arange(J)[:, None]).max(axis=0)
    width = (2 * top + 1 + (P[top, np.arange(P.shape[1])] > 255)) * nz
    return t, np.ascontiguousarray(P.T).astype("<u2").view(np.uint8), neg & nz, width


WORD = 32  # bits per word of split_words
WMASK = (1 << WORD) - 1


def split_words(
    terms: list[tuple[np.ndarray, int]], base: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`words_split` of every column, a slice of ``_COLUMNS`` columns at a time: the temporaries stay small
    (in cache, and below the allocator's threshold for fresh pages from the kernel)."""
    X = base.shape[0]
    if X <= _COLUMNS:
        return words_split([(a.reshape(-1), s) for a, s in terms], base)
    parts = [
        words_split([(a.reshape(-1)[x0 : x0 + _COLUMNS], s) for a, s in terms], base[x0 : x0 + _COLUMNS])
        for x0 in range(0, X, _COLUMNS)
    ]
    nb = max(p[1].shape[1] for p in parts)
    pb = np.zeros((X, nb), dtype=np.uint8)
    for x0, p in zip(range(0, X, _COLUMNS), parts, strict=True):
        pb[x0 : x0 + p[1].shape[0], : p[1].shape[1]] = p[1]
    t, neg, width = (np.concatenate([p[i] for p in parts]) for i in (0, 2, 3))
    return t, pb, neg, width


_COLUMNS = 4096


def words_split(
    terms: list[tuple[np.ndarray, int]], base: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 2-adic splits of the exact dyadic numbers 2^base · Σ_(a, s) a·2^s over ``terms`` (int64 arrays a of one
    shape X, |a| < 2⁵³, offsets s ≥ 0, at most 64 terms): (t, bytes of |p| (X, 4·words) little-endian, p < 0,
    bytes used by |p|).  The sum is held in base-2³² words (int64): a·2^s adds its low 32 bits shifted into
    word s div 32 (below 2³²) and the rest into the next word (below 2⁵³), then one carry pass."""
    X = base.shape[0]
    hi = max(s for _, s in terms) + 53 + len(terms).bit_length()  # |sum| < 2^hi
    if hi <= 126:
        return _split128(terms, base)
    NW = max(hi // WORD + 1, max(s // WORD for _, s in terms) + 2)  # the top word signed
    Wd = np.zeros((NW, X), dtype=np.int64)
    for a, s in terms:
        a = a.reshape(-1)
        q, r = divmod(s, WORD)
        low = (a & WMASK) << r  # below 2^63
        Wd[q] += low & WMASK
        Wd[q + 1] += (low >> WORD) + ((a >> WORD) << r)
    _carry(Wd)
    neg = Wd[NW - 1] < 0
    if neg.any():  # −S: negate the words and carry again
        Wd *= 1 - 2 * neg.astype(np.int64)
        _carry(Wd)
    nzw = Wd != 0
    live = nzw.any(axis=0)
    if bool((nzw[0] | ~live).all()):  # the usual case: every lowest set bit in the lowest word
        j0 = np.zeros(X, dtype=np.int64)
        sh = Wd
    else:
        j0 = np.zeros(X, dtype=np.int64)  # the lowest nonzero word (an argmax over axis 0 goes column by column)
        for j in range(NW - 1, 0, -1):
            j0[nzw[j]] = j
        j0[nzw[0]] = 0
        Wx = np.concatenate([Wd, np.zeros((1, X), dtype=np.int64)])
        idx = np.minimum(j0[None, :] + np.arange(NW)[:, None], NW)
        sh = np.take_along_axis(Wx, idx, axis=0)  # the words moved down by j0 (zeros above)
    low = sh[0] | ~live
    tz = log2_pow2(low & -low)
    P = sh >> tz  # then by tz bits
    P[:-1] |= (sh[1:] << (WORD - tz)) & WMASK
    cols = np.arange(X)
    top = np.zeros(X, dtype=np.int64)  # the highest nonzero word of p
    for j in range(1, NW):
        top[P[j] != 0] = j
    ptop = P[top, cols]
    width = (WORD // 8 * top + (bit_length(ptop) + 7) // 8) * live
    pb = np.ascontiguousarray(P.astype("<u4").T).view(np.uint8)
    t = np.where(live, base + WORD * j0 + tz, 0)
    return t, pb, neg & live, width


def _carry(Wd: np.ndarray) -> None:
    """Carry base-2³² words in place: every word but the top in [0, 2³²), the top signed."""
    for j in range(Wd.shape[0] - 1):
        Wd[j + 1] += Wd[j] >> WORD
        Wd[j] &= WMASK


_U64 = np.uint64


def _ctz64(x: np.ndarray) -> np.ndarray:
    """Trailing zeros of nonzero uint64 entries (64 for 0): the exponent of the lowest set bit, a power of two
    that float64 holds exactly, read from its bits."""
    low = (x & (_U64(0) - x)).astype(np.float64)
    return np.where(x != 0, (low.view(np.int64) >> 52) - 1023, 64)


def _split128(
    terms: list[tuple[np.ndarray, int]], base: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`words_split` for sums below 2^126 in magnitude: the sum held as a 128-bit two's complement pair
    (hi int64, lo uint64); a·2^s adds a's bits shifted into lo (mod 2^64, the carry from the wrap-around) and
    the rest, sign-extended, into hi.  Then the magnitude, its trailing zeros and the odd part as two uint64
    words (X × 16 bytes, little-endian)."""
    X = base.shape[0]
    lo = np.zeros(X, dtype=np.uint64)
    hi = np.zeros(X, dtype=np.int64)
    for a, s in terms:
        a = a.reshape(-1)
        if s >= 64:  # |a|·2^(s−64) < 2^62: all of it in hi
            hi += a << (s - 64)
            continue
        add = a.view(np.uint64) << _U64(s)
        lo += add
        hi += (a >> (64 - s) if s else a >> 63) + (lo < add)  # lo < add: the sum wrapped around
    neg = hi < 0
    if neg.any():  # −(hi·2^64 + lo) = (−hi − 1)·2^64 + (2^64 − lo), or −hi·2^64 when lo = 0
        np.negative(hi, out=hi, where=neg)
        hi -= neg & (lo != 0)
        np.subtract(_U64(0), lo, out=lo, where=neg)
    hu = hi.view(np.uint64)
    nz = lo != 0
    live = nz | (hu != 0)
    low_words = np.where(nz, lo, hu)  # lo = 0: the words moved down by one first
    high_words = np.where(nz, hu, _U64(0))
    c = _ctz64(low_words)
    tz = c + 64 * ~nz  # 128 for 0
    r = np.minimum(c, 63).astype(np.uint64)  # the shift within the words
    p0 = (low_words >> r) | np.where(r > 0, high_words << (_U64(64) - r), _U64(0))
    p1 = high_words >> r
    pb = np.empty((X, 2), dtype="<u8")
    pb[:, 0], pb[:, 1] = p0, p1
    up = p1 != 0
    width = u64_bytes(np.where(up, p1, p0)) + 8 * up
    t = np.where(live, base + tz, 0)
    return t, pb.view(np.uint8), neg & live, width
