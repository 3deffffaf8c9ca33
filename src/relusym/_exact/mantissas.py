"""Floats as integers: the mantissas and exponents of float arrays (:func:`float_parts`, :func:`integer_matrix`,
:func:`row_integers`), and exact products of float matrices through float64 BLAS on integer limbs (as base-2^16
digits, :func:`exact_matmul_digits`, or as Python ints, :func:`exact_matmul_float`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from relusym._exact.numbers import FLOAT_DTYPES, common_denominator, fractions_of
from relusym.errors import UnsupportedModelError

__all__ = [
    "digits_to_ints",
    "exact_matmul",
    "exact_matmul_digits",
    "exact_matmul_float",
    "exact_matvec_float",
    "float_parts",
    "integer_matrix",
    "normalize_digits",
    "row_integers",
]


def integer_matrix(arr: np.ndarray) -> tuple[np.ndarray, Fraction]:
    """Write ``arr`` exactly as ``ints * scale``: an object array of Python ints and one positive rational."""
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=object), Fraction(1)
    if arr.dtype in FLOAT_DTYPES:
        # the whole array as one row: odd mantissas over a single power of two
        mi, shift, emin, _ = _row_mantissas(arr.reshape(1, -1))
        out = np.empty(arr.shape, dtype=object)
        out.ravel()[:] = [i << s for i, s in zip(mi.ravel().tolist(), shift.ravel().tolist(), strict=True)]
        return out, Fraction(2) ** int(emin[0])
    fr = fractions_of(arr)
    den = common_denominator(fr.ravel().tolist())
    out = np.empty(arr.shape, dtype=object)
    out.ravel()[:] = [v.numerator * (den // v.denominator) for v in fr.ravel().tolist()]
    return out, Fraction(1, den)


def exact_matmul(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The exact product ``X @ Y`` as an object array of Fractions (Python-int arithmetic)."""
    if X.shape[1] == 0:
        out = np.empty((X.shape[0], Y.shape[1]), dtype=object)
        out.fill(Fraction(0))
        return out
    xi, xs = integer_matrix(X)
    yi, ys = integer_matrix(Y)
    prod = xi.dot(yi)
    s = xs * ys
    out = np.empty(prod.shape, dtype=object)
    out.ravel()[:] = [Fraction(int(v)) * s for v in prod.ravel().tolist()]
    return out


_LIMB = 20


_LIMB_MASK = (1 << _LIMB) - 1


def _int_limbs(values: list[int]) -> np.ndarray:
    """Signed base-2^20 limbs of Python ints, as a float64 array of shape (L, len(values)) (exact)."""
    mags = [abs(v) for v in values]
    L = max(1, -(-max((v.bit_length() for v in mags), default=1) // _LIMB))
    out = np.zeros((L, len(values)))
    for j, (v, a) in enumerate(zip(values, mags, strict=True)):
        sgn = -1.0 if v < 0 else 1.0
        l_ = 0
        while a:
            out[l_, j] = sgn * (a & _LIMB_MASK)
            a >>= _LIMB
            l_ += 1
    return out


def _row_mantissas(M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row of a float matrix as integers over a common power of two: M[i, j] = mi[i, j] · 2^(shift[i, j]
    + emin[i]), with odd (or zero) int64 mantissas mi and shift ≥ 0; width = bit length of mi · 2^shift."""
    mant, expo = np.frexp(M.astype(np.float64))
    mi = (mant * 2.0**53).astype(np.int64)
    expo = expo.astype(np.int64) - 53
    nz = mi != 0
    low = np.where(nz, np.abs(mi), 1)
    low = low & -low
    tz = np.round(np.log2(low.astype(np.float64))).astype(np.int64)
    mi = np.where(nz, mi >> tz, 0)
    expo = np.where(nz, expo + tz, 0)
    big = np.iinfo(np.int64).max
    emin = np.where(nz, expo, big).min(axis=1) if M.shape[1] else np.zeros(M.shape[0], dtype=np.int64)
    emin = np.where(nz.any(axis=1), emin, 0) if M.shape[1] else emin
    shift = np.where(nz, expo - emin[:, None], 0)
    bits = np.frexp(np.abs(mi).astype(np.float64))[1].astype(np.int64)
    width = np.where(nz, shift + bits, 0)
    return mi, shift, emin, width


def row_integers(M: np.ndarray) -> list[list[int]]:
    """Each row of a float matrix as Python ints over one power of two per row (ratios within a row are exact)."""
    if M.shape[0] == 0:
        return []
    mi, shift, _, width = _row_mantissas(M)
    if M.shape[1] == 0:
        return [[] for _ in range(M.shape[0])]
    if int(width.max()) <= 62:
        return (mi << shift).tolist()  # type: ignore[no-any-return]
    return [
        [int(a) << int(s) for a, s in zip(ra, rs, strict=True)]
        for ra, rs in zip(mi.tolist(), shift.tolist(), strict=True)
    ]


def exact_matvec_float(M: np.ndarray, X: list[int]) -> tuple[list[int], np.ndarray]:
    """M @ X exactly, for a float matrix M (taken at its exact binary value) and a vector of Python ints.

    Returns (S, e) with (M @ X)_i = S_i · 2^e_i.  Each row of M is written as integer limbs of 20 bits
    (M[i, j] = Σ_l limb_l · 2^(20 l + e_i)), so every float64 product of two limbs is below 2^40 and every
    dot product over at most 8192 columns is exact; the partial sums are combined in Python ints."""
    n, m = M.shape
    if n == 0:
        return [], np.zeros(0, dtype=np.int64)
    mi, shift, emin, width = _row_mantissas(M)
    L = max(1, int(-(-int(width.max()) // _LIMB)))
    sgn = np.sign(mi).astype(np.float64)
    amag = np.abs(mi)
    Xl = _int_limbs(X)
    acc = [0] * n
    col_chunks = [(s, min(m, s + 8192)) for s in range(0, m, 8192)]
    fits = int(width.max()) <= 62
    full = (amag << shift) if fits else None  # the whole row as one int64 when it fits
    for l_ in range(L):
        lo = _LIMB * l_
        if full is not None:
            limb = (full >> lo) & _LIMB_MASK
        else:
            # bits [lo, lo + 20) of amag · 2^shift
            right = lo - shift  # shift the mantissa right by this much (left when negative)
            r_pos = np.clip(right, 0, 63)
            r_neg = np.clip(-right, 0, 63)
            limb = np.where(right >= 0, amag >> r_pos, amag << r_neg) & _LIMB_MASK
            limb = np.where((right <= -_LIMB) | (right >= 63), 0, limb)
        Ml = sgn * limb.astype(np.float64)
        if not Ml.any():
            continue
        for lx in range(Xl.shape[0]):
            part = np.zeros(n)
            for s, t in col_chunks:
                part += Ml[:, s:t] @ Xl[lx, s:t]
            sh = _LIMB * (l_ + lx)
            for i, v in enumerate(part.tolist()):
                if v:
                    acc[i] += int(v) << sh
    return acc, emin


def float_parts(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mant, exp) with M = mant · 2^exp exactly, entrywise: mant an odd int64 (0 for a zero entry, exp then
    0).  The one float → (odd mantissa, exponent) decomposition."""
    mant, expo = np.frexp(M.astype(np.float64))
    mi = (mant * 2.0**53).astype(np.int64)
    ex = expo.astype(np.int64) - 53
    low = mi & -mi
    tz = np.where(mi != 0, np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1, 0)
    mi >>= tz
    return mi, np.where(mi != 0, ex + tz, 0)


def _row_scales(M: np.ndarray) -> tuple[np.ndarray, int]:
    """Per row: the smallest exponent of a nonzero entry, and the largest bit width of an entry as an integer
    over 2^emin (the number of bits the row needs)."""
    mi, ex = float_parts(M)
    nz = mi != 0
    big = np.iinfo(np.int64).max
    emin = np.where(nz, ex, big).min(axis=1, initial=big)
    emin = np.where(emin == big, 0, emin)
    bits = np.frexp(np.abs(mi).astype(np.float64))[1].astype(np.int64)
    top = np.where(nz, ex + bits, emin[:, None]).max(axis=1, initial=0)
    return emin, int((top - emin).max(initial=1))


def _row_scales_blocked(M: np.ndarray, rows: int = 64) -> tuple[np.ndarray, int]:
    """:func:`_row_scales` on blocks of rows (small working sets)."""
    parts = [_row_scales(M[s : s + rows]) for s in range(0, M.shape[0], rows)]
    if not parts:
        return np.zeros(0, dtype=np.int64), 1
    return np.concatenate([p[0] for p in parts]), max(p[1] for p in parts)


def _limbs_over(M: np.ndarray, emin: np.ndarray, L: int) -> np.ndarray:
    """Signed 20-bit limbs of M over 2^emin per row: M[i, j] = Σ_l out[l, i, j] · 2^(20 l + emin[i])."""
    mi, ex = float_parts(M)
    shift = np.where(mi != 0, ex - emin[:, None], 0)
    sgn = np.sign(mi).astype(np.float64)
    amag = np.abs(mi)
    out = np.empty((L,) + M.shape)
    for l_ in range(L):
        right = _LIMB * l_ - shift
        r_pos = np.clip(right, 0, 63)
        r_neg = np.clip(-right, 0, 63)
        limb = np.where(right >= 0, amag >> r_pos, amag << r_neg) & _LIMB_MASK
        limb = np.where((right <= -_LIMB) | (right >= 63), 0, limb)
        out[l_] = sgn * limb.astype(np.float64)
    return out


def exact_matmul_float(X: np.ndarray, Y: np.ndarray, block: int = 512) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X @ Y exactly for float matrices (at their exact binary values), through float64 BLAS on 20-bit limbs.

    Returns (P, ex, ey) with (X @ Y)[r, c] = P[r, c] · 2^(ex[r] + ey[c]), P an object array of Python ints.
    Each row of X and each column of Y is written as integers over its own power of two and split into limbs of
    20 bits, so every limb product is below 2^40: a block dot product over at most ``block`` ≤ 8192 terms is
    exact in float64 and the sum over blocks exact in int64 (below 2^63 for fewer than 2^23 terms).  The inner
    dimension is cut into blocks to keep working sets small; only the final combination of the limb products
    uses Python integers (one per output entry and limb pair)."""
    R, n = X.shape
    C = Y.shape[1]
    P = np.zeros((R, C), dtype=object)
    if R == 0 or C == 0 or n == 0:
        return P, np.zeros(R, dtype=np.int64), np.zeros(C, dtype=np.int64)
    digits = exact_matmul_digits(X, Y)  # the vectorized core; the limbs below remain for extreme spreads
    if digits is not None:
        D, ex, ey = digits
        neg, D = normalize_digits(D)
        P.ravel()[:] = digits_to_ints(neg, D)
        return P, ex, ey
    block = max(1, min(block, 8192))
    if n >= 1 << 23:  # pragma: no cover - beyond the int64 accumulation bound
        raise UnsupportedModelError(
            f"a product over {n} hidden neurons: the exact float product handles fewer than 2^23"
        )
    YT = np.ascontiguousarray(Y.T)
    ex, wx = _row_scales(X)
    ey, wy = _row_scales_blocked(YT)
    Lx, Ly = max(1, -(-wx // _LIMB)), max(1, -(-wy // _LIMB))
    acc = np.zeros((Lx + Ly - 1, R, C), dtype=np.int64)
    for s in range(0, n, block):
        Xp = _limbs_over(X[:, s : s + block], ex, Lx)
        Yp = _limbs_over(YT[:, s : s + block], ey, Ly)
        w = Xp.shape[2]
        prod = (Xp.reshape(Lx * R, w) @ Yp.reshape(Ly * C, w).T).reshape(Lx, R, Ly, C)  # one BLAS call
        for lx in range(Lx):
            for ly in range(Ly):
                acc[lx + ly] += prod[lx, :, ly, :].astype(np.int64)
    for t in range(acc.shape[0]):
        if acc[t].any():
            P += acc[t].astype(object) * (1 << (_LIMB * t))
    return P, ex, ey


# ----------------------------------------------------------------------------------------------------------
# exact float matrix products as base-2^16 digit arrays (the vectorized core of exact_matmul_float)
_PRECISION = {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}


_DIGIT = 16


_DIGIT_MASK = (1 << _DIGIT) - 1


def _scaled_lines(X: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """X as integer-valued floats over one power of two per line: X = S · 2^e along ``axis`` (axis 1: one e
    per row, axis 0: one per column), exactly, with |S| < 2^width.  A float of precision p and frexp exponent
    E is a multiple of 2^(E − p), so e is the smallest such exponent of a nonzero entry of the line.  S is
    float32 when X is float16 or float32 and S stays in the float32 range (the scaling by a power of two is
    exact), else float64; None when the widths exceed 960 bits (S would leave the float64 range)."""
    e, widths = _line_scales(np.abs(X), axis, _PRECISION[X.dtype])
    width = int(widths.max(initial=0))
    if width > 960:
        return None
    big = int(np.abs(e).max(initial=0))
    shape = (1, -1) if axis == 0 else (-1, 1)
    if big > 1000:  # 2^-e itself is beyond the float64 range: scale entry by entry
        return np.ldexp(X.astype(np.float64), -e.reshape(shape)), e, max(width, 1)
    dt = np.float32 if X.dtype.itemsize <= 4 and width <= 120 and big <= 120 else np.float64
    scale = np.ldexp(1.0, -e).astype(dt)  # a power of two: the product below is exact
    return X.astype(dt, copy=False) * scale.reshape(shape), e, max(width, 1)


def _limbs(S: np.ndarray, L: int, bits: int, out: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Integer-valued floats S = Σ_l limbs[l] · 2^(bits·l) exactly, as float64 limbs: limbs[0 … L−2] in
    [0, 2^bits), the top one signed (|S| < 2^(bits·L) gives |top| ≤ 2^bits).  Each step is exact in S's
    dtype (bits ≤ 24 for float32): a power-of-two scaling, a floor, and a difference whose exact value is an
    integer below 2^bits.  With ``out`` (L float64 arrays of S's shape) the limbs are written there."""
    limbs = []
    lo, hi = S.dtype.type(2.0**-bits), S.dtype.type(2.0**bits)
    for _ in range(L - 1):
        Q = S * lo
        np.floor(Q, out=Q)
        D = Q * hi
        np.subtract(S, D, out=D)
        limbs.append(D)
        S = Q
    limbs.append(S)
    if out is None:
        return [x.astype(np.float64, copy=False) for x in limbs]
    for dst, x in zip(out, limbs, strict=True):
        dst[...] = x
    return out


def _add_shifted(D: np.ndarray, a: np.ndarray, pos: int) -> None:
    """D += a · 2^pos in base-2^16 digits (int64 a, |a| < 2^63; the digits stay unnormalized)."""
    q, r = divmod(pos, _DIGIT)
    for j in range(3):
        D[q + j] += ((a >> (_DIGIT * j)) & _DIGIT_MASK) << r
    D[q + 3] += (a >> (3 * _DIGIT)) << r


def _line_scales(ab: np.ndarray, axis: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """For |X| along ``axis``: (e, width) per line, X = S · 2^e with |S| < 2^width (see :func:`_scaled_lines`)."""
    top = np.frexp(ab.max(axis=axis).astype(np.float64))[1].astype(np.int64)
    low = ab.min(axis=axis, initial=np.inf, where=ab > 0).astype(np.float64)
    zero = np.isinf(low)
    e = np.where(zero, 0, np.frexp(np.where(zero, 1.0, low))[1].astype(np.int64) - p)
    return e, np.where(zero, 0, top - e)


_BLOCK = 8192  # inner terms per block of exact_matmul_digits (few BLAS calls); 13 bits of headroom


_SUB_ENTRIES = 2**18  # limb entries per BLAS call of exact_matmul_digits (2 MB of float64: in cache)


_HEADROOM = (_BLOCK - 1).bit_length()


def exact_matmul_digits(
    X: np.ndarray, Y: np.ndarray, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """X @ Y[rows] exactly for float matrices (Y itself without ``rows``), as digits: the product's entry
    (r, c) is Σ_t D[t, r, c] · 2^(16 t + ex[r] + ey[c]), D an int64 array of unnormalized signed digits (see
    :func:`normalize_digits`); None when a row of X or a column of Y spans more than 960 bits.

    Rows of X and columns of Y are scaled to integers over one power of two each (:func:`_scaled_lines`) and
    split into limbs of xb and yb bits (:func:`_limbs`) with xb + yb + 13 ≤ 53, so the dot product of limbs over
    a block of 8192 inner terms is an integer of at most 53 bits, exact in float64 BLAS; the block products are
    added into int64 accumulators, which are combined into the digits.  Y (the wide side: k×n times n×m) gets
    the fewer, wider limbs (at most 24 bits when they are split in float32), read block by block of rows."""
    R, n = X.shape
    C = Y.shape[1]
    if R == 0 or C == 0 or n == 0:
        return np.zeros((1, R, C), dtype=np.int64), np.zeros(R, dtype=np.int64), np.zeros(C, dtype=np.int64)
    if X.dtype not in _PRECISION or Y.dtype not in _PRECISION:
        return None
    sx = _scaled_lines(X, 1)
    if sx is None:
        return None
    SX, ex, wx = sx
    SX = SX.astype(np.float64, copy=False)  # the small side: its limbs may be wider than float32 holds
    py = _PRECISION[Y.dtype]
    blocks = [(s0, min(n, s0 + _BLOCK)) for s0 in range(0, n, _BLOCK)]

    def part(s0: int, s1: int) -> np.ndarray:
        return Y[s0:s1] if rows is None else Y[rows[s0:s1]]

    top = np.full(C, np.iinfo(np.int64).min)
    low = np.full(C, np.iinfo(np.int64).max)
    kept = part(*blocks[0]) if len(blocks) == 1 else None  # one block: gathered once
    for s0, s1 in blocks:  # the column scales, block by block
        e_b, w_b = _line_scales(np.abs(kept if kept is not None else part(s0, s1)), 0, py)
        nz = w_b > 0
        top = np.where(nz, np.maximum(top, e_b + w_b), top)
        low = np.where(nz, np.minimum(low, e_b), low)
    used = top > np.iinfo(np.int64).min
    ey = np.where(used, low, 0)
    wy = max(1, int(np.where(used, top - ey, 0).max()))
    big = int(np.abs(ey).max())
    if wy > 960:
        return None
    f32 = Y.dtype.itemsize <= 4 and wy <= 120 and big <= 120
    Ly = -(-wy // (24 if f32 else 53 - _HEADROOM - 16))
    yb = -(-wy // Ly)
    xb = 53 - _HEADROOM - yb
    Lx = -(-wx // xb)
    XL = np.stack(_limbs(SX, Lx, xb)).reshape(Lx * R, n)
    scale = np.ldexp(1.0, -ey).astype(np.float32 if f32 else np.float64) if big <= 1000 else None
    T = -(-(xb * Lx + yb * Ly + n.bit_length() + 2) // _DIGIT) + 5
    D = np.zeros((T, R, C), dtype=np.int64)
    acc = np.zeros((Lx, Ly, R, C), dtype=np.int64)
    sub = max(1, min(n, _BLOCK, _SUB_ENTRIES // (Ly * C)))  # rows of Y per BLAS call: the limbs stay in cache
    YL = np.empty((sub, Ly, C))  # the limbs of a sub-block side by side: one BLAS call per sub-block
    prod = np.zeros((Lx * R, Ly * C))
    for t, (s0, s1) in enumerate(blocks):
        Yb = kept if kept is not None else part(s0, s1)
        prod[:] = 0.0
        for u0 in range(0, s1 - s0, sub):
            u1 = min(s1 - s0, u0 + sub)
            if scale is None:  # 2^-e itself is beyond the float64 range: scale entry by entry
                S = np.ldexp(Yb[u0:u1].astype(np.float64), -ey[None, :])
            else:
                S = Yb[u0:u1].astype(scale.dtype, copy=False) * scale[None, :]
            B = u1 - u0
            _limbs(S, Ly, yb, out=[YL[:B, ly] for ly in range(Ly)])
            # integers of at most 53 bits, and so are their sums over the block (8192 terms at most): exact
            prod += XL[:, s0 + u0 : s0 + u1] @ YL[:B].reshape(B, Ly * C)
        acc += prod.reshape(Lx, R, Ly, C).transpose(0, 2, 1, 3).astype(np.int64)
        if t % 512 == 511 or s1 == n:  # below 2^62 in every accumulator
            for lx in range(Lx):
                for ly in range(Ly):
                    _add_shifted(D, acc[lx, ly], xb * lx + yb * ly)
            acc[:] = 0
    return D, ex, ey


def normalize_digits(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unnormalized signed base-2^16 digits (T, …) of integers P → (negative, magnitude digits in [0, 2^16)).

    Carries propagate upwards (arithmetic shifts: floor division); the integer is negative iff the final carry
    is −1, and then its magnitude is the two's complement of the digits."""
    D = D.copy()
    carry = np.zeros(D.shape[1:], dtype=np.int64)
    for t in range(D.shape[0]):
        v = D[t] + carry
        D[t] = v & _DIGIT_MASK
        carry = v >> _DIGIT
    if bool((carry > 0).any()) or bool((carry < -1).any()):  # pragma: no cover - T has room for every carry
        raise AssertionError("digit array too short")
    neg = carry < 0
    if bool(neg.any()):
        Dn = D[:, neg]
        Dn ^= _DIGIT_MASK
        c = np.ones(Dn.shape[1:], dtype=np.int64)
        for t in range(Dn.shape[0]):
            v = Dn[t] + c
            Dn[t] = v & _DIGIT_MASK
            c = v >> _DIGIT
        D[:, neg] = Dn
    return neg, D


def digits_to_ints(neg: np.ndarray, D: np.ndarray) -> list[int]:
    """The Python ints of normalized digits (flattened entries, C order)."""
    T = D.shape[0]
    raw = np.ascontiguousarray(D.reshape(T, -1).T.astype("<u2")).tobytes()
    step = 2 * T
    out = [int.from_bytes(raw[i * step : (i + 1) * step], "little") for i in range(len(raw) // step)]
    return [-v if ng else v for v, ng in zip(out, neg.ravel().tolist(), strict=True)]
