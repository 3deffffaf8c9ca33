"""Normal-form digests of many equal-shape networks at once, without Python work per neuron.

The digest of θ is the SHA-256 of the canonical JSON of its normal form NF(θ) = (K, M, e) (see docs/zoo.md and
:meth:`relusym.NormalForm.digest`): the kink classes (û, κ_û) with κ_û ≠ 0 sorted
lexicographically by û, the linear part M = Σ_neg v_i a_iᵀ and the offset e = c + Σ_const b_i v_i + Σ_neg b_i v_i,
every number written as a reduced fraction ``"p/q"`` (or ``"p"``).  This module computes exactly the same text
for a stack of networks whose entries are all float32 values (float16, float32, or float64 holding float32
values: the usual case for model zoos), vectorized over the whole stack:

* **classes.**  û_i = (a_i, b_i)/λ_i (λ_i the first nonzero entry of a_i) is a vector of quotients of two
  24-bit-mantissa numbers.  Two distinct such quotients differ by a relative amount of at least 2⁻⁴⁸, so their
  correctly rounded float64 values differ: the float64 keys of û are equal exactly when the rationals are, and
  they sort in the same order.  Neurons are sorted (one batched lexicographic sort over the stack) and grouped
  by key; every grouped pair is then verified exactly by cross-multiplication (a_i λ_j = a_j λ_i, exact in
  float64 for float32 operands).
* **sums.**  κ_û, M and e are sums of products of two float32 numbers; each product is exact in float64, their
  sums are not.  They are summed exactly as integers: every term is cut into 32-bit limbs on a grid fixed per
  sum (its smallest ulp), limbs are added with float64 accumulations that stay below 2⁵³ (exact), and carries
  are propagated.  Nothing is rounded.
* **text.**  Numerators and denominators are formed from the integer mantissas (odd parts and powers of two,
  gcd of the odd parts) as int64.  The JSON of every network is written as rows of one byte matrix (a head row
  with M and e, one row per kink class): constant literal columns, decimal digits from a table of 4-digit
  groups, and a mask that drops the unused columns, so no Python code runs per number; the rare numbers that
  need more than 62 bits are written by Python integers and spliced in.  Each network's bytes are then hashed.

Networks outside the fast path (non-float32 entries, exact rationals, extreme exponent ranges, NaN) take the
single-network path ``normal_form(net).digest()``, which is the definition; the tests compare both on thousands of
networks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._network import Network
from .._normal_form import normal_form
from .._numbers import fraction_str
from ..errors import InvalidNetworkError

__all__ = ["StackDigests", "stack_digests", "network_digest"]

_L = 32
_BASE = float(2**_L)
_MAX_LIMBS = 14  # sums spanning more than ~440 bits go to the single-network path
_BIG = 1 << 40
_MAX_TERMS = 1 << 21  # float64 entries per sub-batch of the largest temporary


@dataclass(frozen=True)
class StackDigests:
    """Digests of a stack of networks.

    ``digest[i]`` is ``normal_form(θ_i).digest()`` (None when θ_i is invalid, with the reason in ``error[i]``);
    ``width[i]`` the minimal width when it follows without search (no hyperplane class carries neurons of both
    orientations: then it is the number of kink classes), else −1; ``fast[i]`` whether the vectorized path
    computed it."""

    digest: list[str | None]
    width: np.ndarray
    fast: np.ndarray
    error: list[str | None]


# ----------------------------------------------------------------------------------------------------------
# integers from floats


def _ctz(v: np.ndarray) -> np.ndarray:
    """Trailing zero bits of int64 entries (0 for 0)."""
    low = v & -v
    return np.where(v != 0, np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1, 0)


def _bitlen(v: np.ndarray) -> np.ndarray:
    """An upper bound on the bit length of |v| (exact below 2⁵³)."""
    return np.asarray(np.frexp(np.abs(v).astype(np.float64))[1].astype(np.int64))


def _odd_mantissa(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = mi · 2^E exactly, with mi an odd int64 (or 0, with E = 0)."""
    fr, ex = np.frexp(x)
    mi = (fr * 2.0**53).astype(np.int64)
    tz = _ctz(mi)
    mi = mi >> tz
    return mi, np.where(mi != 0, ex.astype(np.int64) - 53 + tz, 0)


# ----------------------------------------------------------------------------------------------------------
# exact sums


def _segment_sums(T: np.ndarray, seg: np.ndarray, S: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact sums of the rows of T (R × E float64, every entry exact) per segment id ``seg`` (in [0, S)).

    Returns (D, lo, ok): the sum of segment s, column j is Σ_l D[s, j, l]·2^(32 l + lo[s, j]), with the digits
    D[..., l] in [−2³¹, 2³¹) for l below the top one (so the sum is 0 iff all its digits are); ``ok[s]`` is False when
    a sum of segment s spans too many bits (that segment's values are then meaningless)."""
    R, E = T.shape
    if R == 0 or E == 0:
        return np.zeros((S, E, 1)), np.zeros((S, E), dtype=np.int64), np.ones(S, dtype=bool)
    if R > 1 and bool((seg[1:] < seg[:-1]).any()):
        order = np.argsort(seg, kind="stable")
        T, seg = T[order], seg[order]
    present, starts = np.unique(seg, return_index=True)
    ex = np.frexp(T)[1].astype(np.int64)
    nz = T != 0
    lo = np.full((S, E), _BIG, dtype=np.int64)
    lo[present] = np.minimum.reduceat(np.where(nz, ex - 53, _BIG), starts, axis=0)
    hi = np.full((S, E), -_BIG, dtype=np.int64)
    hi[present] = np.maximum.reduceat(np.where(nz, ex, -_BIG), starts, axis=0)
    empty = lo == _BIG
    lo[empty] = 0
    hi[empty] = 0
    cnt = np.bincount(seg, minlength=S)
    need = hi - lo + _bitlen(cnt)[:, None] + 1
    nl = -(-need // _L) + 1
    nl_seg = nl.max(axis=1)
    ok = nl_seg <= _MAX_LIMBS
    NL = int(nl_seg[ok].max()) if ok.any() else 1
    lo_safe = np.where(ok[:, None], lo, 0)
    absT = np.abs(T)
    sg = np.sign(T)
    sh = lo_safe[seg]
    D = np.zeros((S, E, NL))
    with np.errstate(over="ignore", invalid="ignore"):
        for l_ in range(NL):
            q = np.floor(np.ldexp(absT, (-(sh + _L * l_)).astype(np.int32)))
            d = np.fmod(q, _BASE) * sg
            d[~np.isfinite(d)] = 0.0
            D[present, :, l_] = np.add.reduceat(d, starts, axis=0)  # integers below 2⁵³: exact
    for l_ in range(NL - 1):  # balanced digits in [−2³¹, 2³¹): unique, so the sum is 0 iff every digit is
        carry = np.floor((D[..., l_] + _BASE / 2) / _BASE)
        D[..., l_] -= carry * _BASE
        D[..., l_ + 1] += carry
    return D, lo_safe, ok


# ----------------------------------------------------------------------------------------------------------
# the vectorized path


def _lex_order(hb: np.ndarray, U: np.ndarray) -> np.ndarray:
    """The order of the rows by (network, U lexicographically): a sort on the leading keys, completed by the
    full lexicographic sort only when two rows of one network agree on them."""
    lead = min(U.shape[1], 3)
    order = np.lexsort([U[:, j] for j in range(lead - 1, -1, -1)] + [hb])
    if lead < U.shape[1] and order.size > 1:
        hs, Us = hb[order], U[order, :lead]
        if bool(((hs[1:] == hs[:-1]) & (Us[1:] == Us[:-1]).all(axis=1)).any()):
            order = np.lexsort([U[:, j] for j in range(U.shape[1] - 1, -1, -1)] + [hb])
    return order


def _fast_batch(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Digests, widths (−1: needs search) and ok flags of a stack of float32-valued float64 networks."""
    B, n, m = A.shape
    k = V.shape[1]
    ok = np.ones(B, dtype=bool)
    Vt = V.transpose(0, 2, 1)  # B × n × k
    a_nz = A != 0
    has_a = a_nz.any(axis=2)
    has_v = (Vt != 0).any(axis=2)
    hyper = has_a & has_v
    const = ~has_a & has_v & (b > 0)
    piv = a_nz.argmax(axis=2)
    lam = np.take_along_axis(A, piv[..., None], axis=2)[..., 0]
    hb, hi = np.nonzero(hyper)
    lam_h = lam[hb, hi]
    W = np.concatenate([A[hb, hi], b[hb, hi][:, None]], axis=1)
    U = W / lam_h[:, None] + 0.0
    order = _lex_order(hb, U)
    hb, hi, lam_h, W, U = hb[order], hi[order], lam_h[order], W[order], U[order]
    R = hb.shape[0]
    if R:
        same = (hb[1:] == hb[:-1]) & (U[1:] == U[:-1]).all(axis=1)
        j = np.nonzero(same)[0] + 1
        if j.size:  # exact check of every grouped pair: w_j λ_i == w_i λ_j
            exact = (W[j] * lam_h[j - 1, None] == W[j - 1] * lam_h[j, None]).all(axis=1)
            ok[hb[j[~exact]]] = False
        new = np.concatenate([[True], ~same])
    else:
        new = np.zeros(0, dtype=bool)
    cls = np.cumsum(new) - 1
    first = np.nonzero(new)[0]
    C = first.shape[0]
    cls_net = hb[first]
    # kinks κ_û = Σ |λ_i| v_i per class
    Tk = np.abs(lam_h)[:, None] * Vt[hb, hi]
    Dk, lok, okk = _segment_sums(Tk, cls, C)
    ok[cls_net[~okk]] = False
    kmask = (Dk != 0).any(axis=(1, 2)) if C else np.zeros(0, dtype=bool)
    # width: no class with both orientations ⇒ the number of kink classes
    negr = lam_h < 0
    n_neg = np.bincount(cls, weights=negr, minlength=C)
    n_pos = np.bincount(cls, weights=~negr, minlength=C)
    width = np.bincount(cls_net[kmask], minlength=B).astype(np.int64)
    width[np.unique(cls_net[(n_neg > 0) & (n_pos > 0)])] = -1
    # M = Σ_neg v_i a_iᵀ (k × m), e = c + Σ_const b_i v_i + Σ_neg b_i v_i
    nb, ni = hb[negr], hi[negr]
    neg = np.zeros((B, n), dtype=bool)
    neg[nb, ni] = True
    res = _limb_matmul(V * neg[:, None, :], A) if n * k * m > 4096 else None
    if res is None:
        Tm = (Vt[nb, ni][:, :, None] * A[nb, ni][:, None, :]).reshape(-1, k * m)
        Dm, lom, okm = _segment_sums(Tm, nb, B)
    else:
        Dm, lom, okm = res
    cb, ci = np.nonzero(const)
    te = np.concatenate([c, b[cb, ci][:, None] * Vt[cb, ci], b[nb, ni][:, None] * Vt[nb, ni]])
    se = np.concatenate([np.arange(B), cb, nb])
    De, loe, oke = _segment_sums(te, se, B)
    ok &= okm & oke
    # text
    rep = first[kmask]
    counts = np.bincount(cls_net[kmask], minlength=B)
    digests = _write_digests(
        B,
        m,
        k,
        counts,
        _ratio_ints(W[rep], lam_h[rep]),
        _digit_ints(Dk[kmask], lok[kmask]),
        _digit_ints(Dm, lom),
        _digit_ints(De, loe),
    )
    return digests, width, ok


# ----------------------------------------------------------------------------------------------------------
# the JSON text as one byte matrix: a row per number (the literal before it, sign, numerator, '/', denominator)

Ints = tuple[np.ndarray, np.ndarray, dict[int, str]]  # numerators, denominators > 0, texts of the big ones

_P10 = 10 ** np.arange(19, dtype=np.int64)


def _ratio_ints(x: np.ndarray, lam: np.ndarray) -> Ints:
    """x[r, j] / lam[r] as reduced int64 fractions (float32-valued inputs, lam ≠ 0); entries that need more than
    62 bits are written with Python integers instead (flat index → text)."""
    mx, ex = _odd_mantissa(x)
    ml, el = _odd_mantissa(lam)
    ml, el = ml[:, None], el[:, None]
    g = np.gcd(mx.astype(np.int32), ml.astype(np.int32)).astype(np.int64)  # odd mantissas of float32: < 2²⁴
    num = (mx // g) * np.sign(ml)
    den = np.abs(ml) // g
    d = np.where(mx == 0, 0, ex - el)
    up = d >= 0
    fit = np.where(up, _bitlen(num) + d <= 62, _bitlen(den) - d <= 62)
    num = np.where(fit & up, num << np.where(fit & up, d, 0), np.where(fit, num, 0))
    den = np.where(fit & ~up, den << np.where(fit & ~up, -d, 0), np.where(fit, den, 1))
    big: dict[int, str] = {}
    for r, j in np.argwhere(~fit).tolist():
        big[r * x.shape[1] + j] = fraction_str(Fraction(float(x[r, j])) / Fraction(float(lam[r])))
    return num, den, big


_LB = 16  # limb bits of the exact matrix products: 16-bit limbs, products below 2³², n ≤ 2¹³ terms below 2⁴⁵


def _int_limbs(X: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """X (B × r × c, float32 values) as signed 16-bit limbs over one power of two per network:
    X[b] = Σ_p L[p, b] · 2^(16 p + e[b]) exactly (None when some network spans too many bits)."""
    B = X.shape[0]
    flat = X.reshape(B, -1)
    fr, ex = np.frexp(flat)
    nz = flat != 0
    e = np.where(nz, ex.astype(np.int64) - 24, _BIG).min(axis=1)
    top = np.where(nz, ex.astype(np.int64), -_BIG).max(axis=1)
    e = np.where(e == _BIG, 0, e)
    span = np.where(top == -_BIG, 0, top - e)
    P = max(1, int(-(-int(span.max(initial=0)) // _LB)))
    if P > 12:
        return None
    Y = np.ldexp(np.abs(X), (-e).astype(np.int32)[:, None, None])
    sg = np.sign(X)
    limbs = np.empty((P,) + X.shape)
    for p in range(P):
        limbs[p] = np.fmod(np.floor(np.ldexp(Y, -_LB * p)), 2.0**_LB) * sg
    return limbs, e


def _limb_matmul(V: np.ndarray, A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The exact products V[b] @ A[b] (k × m per network, flattened row-major) in the digit format of
    :func:`_segment_sums`, from float64 matrix products of 16-bit limbs (every partial sum is an integer below
    2⁵³, so BLAS computes them exactly in any order)."""
    B, k, n = V.shape
    m = A.shape[2]
    if n > 1 << 13:
        return None
    lv, la = _int_limbs(V), _int_limbs(A)
    if lv is None or la is None:
        return None
    Lv, ev = lv
    La, ea = la
    S = np.zeros((Lv.shape[0] + La.shape[0] + 1, B, k, m))
    for p in range(Lv.shape[0]):
        for q in range(La.shape[0]):
            S[p + q] += np.matmul(Lv[p], La[q])
    # base 2¹⁶ with balanced carries, then pairs of limbs as base-2³² digits
    for s_ in range(S.shape[0] - 1):
        carry = np.floor((S[s_] + 2.0 ** (_LB - 1)) / 2.0**_LB)
        S[s_] -= carry * 2.0**_LB
        S[s_ + 1] += carry
    if S.shape[0] % 2:
        S = np.concatenate([S, np.zeros((1,) + S.shape[1:])])
    D = (S[0::2] + S[1::2] * 2.0**_LB).reshape(S.shape[0] // 2, B, k * m).transpose(1, 2, 0)
    D = np.ascontiguousarray(D)
    for l_ in range(D.shape[2] - 1):  # balanced base-2³² digits, as _segment_sums returns them
        carry = np.floor((D[..., l_] + _BASE / 2) / _BASE)
        D[..., l_] -= carry * _BASE
        D[..., l_ + 1] += carry
    lo = np.repeat((ev + ea)[:, None], k * m, axis=1)
    return D, lo, np.ones(B, dtype=bool)


def _digit_ints(D: np.ndarray, lo: np.ndarray) -> Ints:
    """The exact sums of :func:`_segment_sums` as reduced int64 fractions (shape lo.shape); sums that need more
    than 62 bits are written with Python integers instead (flat index → text)."""
    NL = D.shape[-1]
    F = D.reshape(-1, NL)
    flo = lo.ravel()
    small = np.ones(F.shape[0], dtype=bool)
    if NL > 2:
        small &= (F[:, 2:] == 0).all(axis=1)
    d1 = F[:, 1] if NL > 1 else np.zeros(F.shape[0])
    small &= np.abs(d1) < 2.0**29
    val = np.where(small, d1, 0.0).astype(np.int64) * (1 << _L) + np.where(small, F[:, 0], 0.0).astype(np.int64)
    tz = _ctz(val)
    num = val >> tz
    E = np.where(val == 0, 0, flo + tz)
    fit_pos = (E >= 0) & (_bitlen(num) + E <= 62)
    fit_neg = (E < 0) & (-E <= 62)
    fit = small & (fit_pos | fit_neg)
    num = np.where(fit_pos, num << np.where(fit_pos, E, 0), np.where(fit, num, 0))
    den = np.left_shift(np.int64(1), np.where(fit_neg & fit, -E, 0))
    big: dict[int, str] = {}
    for i in np.nonzero(~fit)[0].tolist():
        v = sum(int(x) << (_L * l_) for l_, x in enumerate(F[i].tolist()))
        e = int(flo[i])
        big[i] = fraction_str(Fraction(v << e) if e >= 0 else Fraction(v, 1 << -e))
    return num.reshape(lo.shape), den.reshape(lo.shape), big


_T4 = np.frombuffer(b"".join(f"{i:04d}".encode() for i in range(10000)), dtype=np.uint32)


def _digit_cells(x: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Decimal digits of nonnegative int64s, right-aligned in 4·groups byte columns, and their digit counts."""
    cells = np.empty((x.shape[0], groups), dtype=np.uint32)
    y = x
    for g in range(groups - 1, -1, -1):
        y, r = np.divmod(y, 10000)
        cells[:, g] = _T4[r]
    nd = np.maximum(np.searchsorted(_P10, x, side="right"), 1)
    return cells.view(np.uint8), nd


Field = bytes | tuple[np.ndarray, np.ndarray, dict[int, str]] | tuple[bytes, np.ndarray]


def _render(R: int, fields: list[Field]) -> tuple[bytes, np.ndarray, list[tuple[int, str]]]:
    """R rows of JSON text, each the concatenation of ``fields``: literal bytes, optional literals (bytes, row
    mask), or number columns (numerators, denominators, {row: text} of numbers written by Python), each number
    quoted.  Returns the bytes of all rows, the row offsets (R + 1) and the (offset, text) splices."""
    widths: list[int] = []
    specs: list[tuple[str, Any]] = []
    for f in fields:
        if isinstance(f, bytes):
            specs.append(("lit", f))
            widths.append(len(f))
        elif isinstance(f[0], bytes):
            specs.append(("opt", f))
            widths.append(len(f[0]))
        else:
            num, den, big = f
            mag = np.abs(num)
            G = max(1, -(-int(np.searchsorted(_P10, max(int(mag.max(initial=0)), 1), side="right")) // 4))
            frac = den != 1
            dmax = max(int(den.max(initial=1)), 1)
            Gd = -(-int(np.searchsorted(_P10, dmax, side="right")) // 4) if frac.any() else 0
            specs.append(("num", (num, den, big, mag, frac, G, Gd)))
            widths.append(2 + 4 * G + (1 + 4 * Gd if Gd else 0) + 1)  # quote, sign, digits, '/' digits, quote
    Wt = sum(widths)
    mat = np.empty((R, Wt), dtype=np.uint8)
    mask = np.ones((R, Wt), dtype=bool)
    run = np.zeros(R, dtype=np.int64)  # bytes of each row so far
    o = 0
    splices: list[tuple[int, str]] = []
    pending: list[tuple[np.ndarray, np.ndarray, list[str]]] = []  # (rows, their offsets in the row, texts)
    for (kind, f), w in zip(specs, widths, strict=True):
        if kind == "lit":
            mat[:, o : o + w] = np.frombuffer(f, dtype=np.uint8)
            run += w
        elif kind == "opt":
            lit, rows = f
            mat[:, o : o + w] = np.frombuffer(lit, dtype=np.uint8)
            mask[:, o : o + w] = rows[:, None]
            run += w * rows
        else:
            num, den, big, mag, frac, G, Gd = f
            show = np.ones(R, dtype=bool)
            if big:
                rows_b = np.fromiter(big.keys(), dtype=np.int64, count=len(big))
                show[rows_b] = False
                pending.append((rows_b, run[rows_b] + 1, list(big.values())))
            mat[:, o] = ord('"')
            mat[:, o + 1] = ord("-")
            neg = (num < 0) & show
            mask[:, o + 1] = neg
            cells, nd = _digit_cells(mag, G)
            nd = nd * show
            c0 = o + 2
            mat[:, c0 : c0 + 4 * G] = cells
            mask[:, c0 : c0 + 4 * G] = _pattern(4 * G)[nd]
            run += 2 + neg + nd
            c1 = c0 + 4 * G
            if Gd:
                fs = frac & show
                mat[:, c1] = ord("/")
                mask[:, c1] = fs
                cells, ndd = _digit_cells(den, Gd)
                ndd = ndd * fs
                mat[:, c1 + 1 : c1 + 1 + 4 * Gd] = cells
                mask[:, c1 + 1 : c1 + 1 + 4 * Gd] = _pattern(4 * Gd)[ndd]
                run += fs + ndd
                c1 += 1 + 4 * Gd
            mat[:, c1] = ord('"')
        o += w
    text = mat[mask].tobytes()
    offs = np.concatenate([[0], np.cumsum(run)])
    for rows_b, within, texts in pending:
        splices += zip((offs[rows_b] + within).tolist(), texts, strict=True)
    splices.sort()
    return text, offs, splices


_PATTERNS: dict[int, np.ndarray] = {}


def _pattern(w: int) -> np.ndarray:
    """P[d] = the mask of the last d of w columns (d = 0..w)."""
    if w not in _PATTERNS:
        _PATTERNS[w] = np.arange(w) >= (w - np.arange(w + 1))[:, None]
    return _PATTERNS[w]


def _emit(h: Any, text: bytes, a: int, z: int, splices: list[tuple[int, str]], q: int) -> int:
    """Feed text[a:z] to the hash h with the splices that fall inside; returns the next splice index."""
    while q < len(splices) and splices[q][0] < z:
        at, t = splices[q]
        h.update(text[a:at])
        h.update(t.encode())
        a = at
        q += 1
    h.update(text[a:z])
    return q


def _write_digests(B: int, m: int, k: int, counts: np.ndarray, u: Ints, kap: Ints, M: Ints, e: Ints) -> list[str]:
    """The digests of the batch: the JSON text of each network written as rows of one byte matrix (a head row
    per network with M and e, a row per kink class), without Python work per number; the few numbers that need
    more than 62 bits are written by Python and spliced in."""
    head: list[Field] = [b'{"M":[']
    Mc, ec = _columns(M), _columns(e)
    for r in range(k):
        head.append(b"[" if r == 0 else b"],[")
        for j in range(m):
            if j:
                head.append(b",")
            head.append(Mc[r * m + j])
    head.append(b']],"e":[')
    for r in range(k):
        if r:
            head.append(b",")
        head.append(ec[r])
    head.append(f'],"k":{k},"kinks":['.encode())
    htext, hoffs, hsp = _render(B, head)
    C = int(counts.sum())
    cstart = np.concatenate([[0], np.cumsum(counts)])
    if C:
        q = np.arange(C) - np.repeat(cstart[:-1], counts)
        cls: list[Field] = [(b",", q > 0), b'{"hyperplane":[']
        uc, kc = _columns(u), _columns(kap)
        for j in range(m + 1):
            if j:
                cls.append(b",")
            cls.append(uc[j])
        cls.append(b'],"kink":[')
        for r in range(k):
            if r:
                cls.append(b",")
            cls.append(kc[r])
        cls.append(b"]}")
        ctext, coffs, csp = _render(C, cls)
    else:
        ctext, coffs, csp = b"", np.zeros(1, dtype=np.int64), []
    tail = f'],"m":{m}}}'.encode()
    hb, cb = hoffs.tolist(), coffs[cstart].tolist()
    sha = hashlib.sha256
    if not hsp and not csp:
        return [sha(htext[hb[i] : hb[i + 1]] + ctext[cb[i] : cb[i + 1]] + tail).hexdigest() for i in range(B)]
    out = []
    qh = qc = 0
    for i in range(B):
        h = sha()
        qh = _emit(h, htext, hb[i], hb[i + 1], hsp, qh)
        qc = _emit(h, ctext, cb[i], cb[i + 1], csp, qc)
        h.update(tail)
        out.append(h.hexdigest())
    return out


def _columns(x: Ints) -> list[tuple[np.ndarray, np.ndarray, dict[int, str]]]:
    """The columns of a 2-d Ints (rows × columns), each with its Python-written entries."""
    num, den, big = x
    cols = num.shape[1]
    split: list[dict[int, str]] = [{} for _ in range(cols)]
    for i, t in big.items():
        split[i % cols][i // cols] = t
    return [(num[:, j], den[:, j], split[j]) for j in range(cols)]


def network_digest(net: Network) -> str:
    """The single-network path (the definition): ``normal_form(net).digest()``."""
    return normal_form(net).digest()


def _as_float_stack(x: Any, name: str, ndim: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != ndim:
        raise InvalidNetworkError(f"{name} must have {ndim} dimensions (a leading batch axis), got shape {arr.shape}")
    return arr


def stack_digests(V: Any, A: Any, b: Any, c: Any) -> StackDigests:
    """Digests of the networks θ_i = (V[i], A[i], b[i], c[i]) of a stack (V: B×k×n, A: B×n×m, b: B×n, c: B×k).

    Float32-valued networks are done vectorized; the others one by one with ``normal_form(θ).digest()``.
    An invalid network (NaN, infinity) gets ``digest None`` and its error message."""
    V = _as_float_stack(V, "V", 3)
    A = _as_float_stack(A, "A", 3)
    b = _as_float_stack(b, "b", 2)
    c = _as_float_stack(c, "c", 2)
    B, n, m = A.shape
    k = V.shape[1]
    if V.shape != (B, k, n) or b.shape != (B, n) or c.shape != (B, k):
        raise InvalidNetworkError(
            f"inconsistent stack shapes: V {V.shape}, A {A.shape}, b {b.shape}, c {c.shape} "
            "(expected B×k×n, B×n×m, B×n, B×k)"
        )
    digest: list[str | None] = [None] * B
    error: list[str | None] = [None] * B
    width = np.full(B, -1, dtype=np.int64)
    fast = np.zeros(B, dtype=bool)
    floats = all(x.dtype.kind == "f" and x.dtype.itemsize <= 8 for x in (V, A, b, c))
    if floats and B and m > 0 and k > 0:
        with np.errstate(over="ignore", invalid="ignore"):
            good = np.ones(B, dtype=bool)
            for x in (V, A, b, c):
                x64 = x.reshape(B, -1).astype(np.float64)
                good &= np.isfinite(x64).all(axis=1) & (x64.astype(np.float32).astype(np.float64) == x64).all(axis=1)
        idx = np.nonzero(good)[0]
        per = max(1, _MAX_TERMS // max(1, n * (k * m + k + m + 2), 8 * (n * (m + 1 + k) + k * m + k + 1)))
        for s in range(0, idx.shape[0], per):
            sel = idx[s : s + per]
            d, w, okb = _fast_batch(
                V[sel].astype(np.float64),
                A[sel].astype(np.float64),
                b[sel].astype(np.float64),
                c[sel].astype(np.float64),
            )
            for t, i in enumerate(sel.tolist()):
                if okb[t]:
                    digest[i] = d[t]
                    width[i] = w[t]
                    fast[i] = True
    for i in np.nonzero(~fast)[0].tolist():
        try:
            net = Network(V[i], A[i], b[i], c[i])
            digest[i] = network_digest(net)
        except InvalidNetworkError as exc:
            error[i] = str(exc)
    return StackDigests(digest, width, fast, error)
