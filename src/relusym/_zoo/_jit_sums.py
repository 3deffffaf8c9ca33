"""The exact sums of M and e of the zoo digests' compiled kernel (:mod:`relusym._zoo._jit_kernel`), and its
2-adic splits of wide integers.

M and e are Σ over the neurons with λ_i < 0 of v_i (a_i, b_i), plus c (entry j·C + l; e at l = m).  Every sum is
computed exactly, by one of three paths (:func:`affine` chooses):

* **float32 data**, below ``_GEMM`` products k·n·(m + 1) (odd parts below 2^24, every product v·w exact in
  float64; n < 2^11 then): one pass over all the rows,
  the λ_i ≥ 0 ones multiplied by 0, no branch on the data.  With K = e₀ + 52 (e₀ ≤ the lowest set bit of every
  product), each product z = v·w is cut exactly into h = trunc(z / 2^K) and (z − h·2^K) / 2^e₀, two int64
  integers (below 2^52 each, 2^63 with their sums), summed in int64 (vector lanes, any order is exact), then
  joined in one 128-bit integer (:func:`_add128`) and split with c_j (:func:`_sums_f32`).  Taken when the
  products span at most ``_F32_SPAN`` bits above e₀ less bitlen(n) and the entry at most ``_WIDE`` bits;
  the bounds are from every row, branch-free (looser than those of the negative rows alone, never wrong).
* **spans up to ``_WIDE`` bits**, below ``_GEMM`` products k·S·(m + 1) (S the neurons with λ_i < 0): each
  product of odd parts o_v·o_w (below 2^106) shifted to its offset and added into one 128-bit integer
  (:func:`_sums128`).
* **else** (wider, or many products): float64 limbs of both factors, their products summed exactly over the
  neurons (from ``_GEMM`` products by one BLAS product for every limb pair and all of M's rows at once,
  :func:`_gemm`), each sum added at its offset into one 128-bit integer when the entry spans at most ``_WIDE``
  bits (every float32 network of that size: :func:`_limb_sums128`, a pass per limb pair over all entries in
  vector lanes), else into base-2³² words (int64, carried at the end), then split (trailing zeros, odd part;
  its words in pw[q, e], entry by entry along the rows; without branches on the data where the sums are in
  128 bits, :func:`_split128`).

Imported only when numba is importable (the optional extra ``relusym[fast]``)."""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from relusym._zoo._jit_bytes import flat, inline, jit, leading_zeros, lshr, madd128, nbytes, trailing_zeros, ult

__all__ = ["affine", "affine_work", "add_product", "split_words", "MAX_WORDS"]

_LIMBS = 8  # float64 limbs of v (and half as many of (a, b): 96 bits) in the sums of M and e; more: flagged
_GEMM = 1024  # sums of M and e by BLAS (one dgemm per limb pair) from this many products k·S·(m + 1) per limb pair
_WIDE = 120  # sums of M and e spanning at most this many bits go through 128-bit integers
_F32_SPAN = 115  # float32 path: top − e₀ + bitlen(n) of the products at most this (the h sums below 2^63)
MAX_WORDS = 24  # 32-bit words of an exact sum of M or e (768 bits); more: the network is flagged
_M32 = 0xFFFFFFFF


@inline
def _add(acc: Any, p: int, off: int, neg: int) -> None:
    """acc += ±p·2^off in base-2³² words (0 ≤ p < 2^62, off ≥ 0)."""
    q = off >> 5
    r = off & 31
    a = (p & _M32) << r
    h = (p >> 32) << r
    if neg:
        acc[q] -= a & _M32
        acc[q + 1] -= (a >> 32) + (h & _M32)
        acc[q + 2] -= h >> 32
    else:
        acc[q] += a & _M32
        acc[q + 1] += (a >> 32) + (h & _M32)
        acc[q + 2] += h >> 32


@inline
def add_product(acc: Any, x: int, y: int, off: int, neg: int) -> None:
    """acc += ±x·y·2^off (x, y < 2^53): one product below 2^62, or four of 27-bit halves."""
    if x < (1 << 31) and y < (1 << 31):
        _add(acc, x * y, off, neg)
        return
    xl, xh = x & ((1 << 27) - 1), x >> 27
    yl, yh = y & ((1 << 27) - 1), y >> 27
    _add(acc, xl * yl, off, neg)
    _add(acc, xl * yh + xh * yl, off + 27, neg)  # each below 2^53: the sum below 2^54
    _add(acc, xh * yh, off + 54, neg)


@inline
def _carry(acc: Any, NW: int) -> None:
    for q in range(NW - 1):
        acc[q + 1] += acc[q] >> 32
        acc[q] &= _M32


@flat
def split_words(acc: Any, NW: int, base: int, e: int, t: Any, pn: Any, plen: Any, pw: Any) -> None:
    """The 2-adic split of 2^base · Σ acc[q]·2^(32 q) into entry e: t, the sign, the bytes of the odd part and
    its 32-bit words."""
    _carry(acc, NW)
    neg = acc[NW - 1] < 0
    if neg:
        for q in range(NW):
            acc[q] = -acc[q]
        _carry(acc, NW)
    q0 = 0
    while q0 < NW and acc[q0] == 0:
        q0 += 1
    if q0 == NW:
        t[e], pn[e], plen[e] = 0, 0, 0
        return
    tz = trailing_zeros(acc[q0])
    top = 0
    for u in range(NW - q0):
        hi = acc[q0 + u + 1] if q0 + u + 1 < NW else 0
        w = (acc[q0 + u] >> tz) | ((hi << (32 - tz)) & _M32)
        pw[u, e] = w
        if w != 0:
            top = 4 * u + nbytes(w)
    t[e], pn[e], plen[e] = base + 32 * q0 + tz, 1 if neg else 0, top


@inline
def _split128(hi: int, lo: int, base: int, e: int, t: Any, pn: Any, plen: Any, pw: Any) -> None:
    """The 2-adic split of 2^base · (hi, lo) (a 128-bit two's complement integer) into entry e, as
    :func:`split_words`, without branches on the data: the sign, the magnitude, its trailing zeros and its top
    byte by selects (branches on the sign and on the high word are mispredicted about half the time: at
    784-128-10 the entries' split took about 300 µs a network with them, 63 µs without)."""
    ng = hi >> 63  # −1 for a negative entry, else 0: the magnitude is (hi ^ ng, lo ^ ng) + (ng & 1)
    l2 = (lo ^ ng) - ng
    h2 = (hi ^ ng) + ((ng & 1) & (lo == 0))
    lnz = l2 != 0
    tl = min(trailing_zeros(l2), 63)
    th = min(trailing_zeros(h2), 63)
    lo3 = (lshr(l2, tl) | ((h2 << (63 - tl)) << 1)) if lnz else h2 >> th
    hi3 = h2 >> tl if lnz else 0
    zero = (l2 | h2) == 0
    t[e] = 0 if zero else base + (tl if lnz else 64 + th)
    pn[e] = 0 if zero else ng & 1
    plen[e] = 8 + ((71 - leading_zeros(hi3)) >> 3) if hi3 != 0 else (71 - leading_zeros(lo3)) >> 3
    pw[0, e], pw[1, e], pw[2, e], pw[3, e] = lo3 & _M32, lshr(lo3, 32), hi3 & _M32, hi3 >> 32


@inline
def _limb(o: int, d: int, lo: int, bits: int) -> int:
    """Bits lo … lo + bits − 1 of o·2^d (0 ≤ o < 2^53, d ≥ 0)."""
    sh = lo - d
    if sh >= 64 or -sh >= bits:
        return 0
    x = o >> sh if sh >= 0 else o << -sh
    return x & ((1 << bits) - 1)


@jit
def _span(idx: Any, S: int, o: Any, s: Any, axis: int) -> tuple[int, int]:
    """(lowest set bit, top bit + 1) of the nonzero o·2^s over the rows (axis 0) or columns (axis 1) idx[:S] of
    o; (2^40, −2^40) when all are 0."""
    lo, hi = 1 << 40, -(1 << 40)
    for u in range(S):
        for t in range(o.shape[1 - axis]):
            x, e = (o[idx[u], t], s[idx[u], t]) if axis == 0 else (o[t, idx[u]], s[t, idx[u]])
            if x != 0:
                lo, hi = min(lo, e), max(hi, e + 64 - leading_zeros(x))
    return lo, hi


@jit
def _fill(idx: Any, S: int, o: Any, s: Any, ng: Any, e0: int, L: int, bits: int, out: Any, axis: int) -> None:
    """out[l, …] = ± limb l (``bits`` bits) of the integers |x|·2^(−e0) of the rows (axis 0: out[l, u, t]) or
    columns (axis 1: out[l, t, u]) idx[:S] of (o, s, ng), as float64: shifts of one int64 when the integers
    fit 63 bits (``L·bits`` ≤ 63), else :func:`_limb` per limb."""
    T = o.shape[1 - axis]
    mask = (1 << bits) - 1
    for u in range(S):
        r = idx[u]
        for t in range(T):
            x, e, g = (o[r, t], s[r, t], ng[r, t]) if axis == 0 else (o[t, r], s[t, r], ng[t, r])
            sign = 1.0 - 2.0 * g
            if L * bits <= 63:
                z = x << max(min(e - e0, 63), 0)  # 0 stays 0 whatever its s
                for li in range(L):
                    f = sign * float((z >> (li * bits)) & mask)
                    if axis == 0:
                        out[li, u, t] = f
                    else:
                        out[li, t, u] = f
            else:
                for li in range(L):
                    f = sign * float(_limb(x, e - e0, li * bits, bits)) if x != 0 else 0.0
                    if axis == 0:
                        out[li, u, t] = f
                    else:
                        out[li, t, u] = f


@numba.njit(cache=True, nogil=True, fastmath=True)  # sums of integers below 2^52: exact in any order
def _products(XL: Any, YL: Any, P: Any, j: int, S: int, Lx: int, Ly: int) -> Any:
    """P[lx·Ly + ly, l] = Σ_u XL[lx, j, u]·YL[ly, u, l] over the S neurons: every product and partial sum an
    integer below 2^52, so float64 is exact."""
    C = YL.shape[2]
    P[: Lx * Ly, :C] = 0.0
    for lx in range(Lx):
        for ly in range(Ly):
            prow = P[lx * Ly + ly]  # 1-D contiguous rows: vectorized loops, four neurons a pass
            u = 0
            while u + 4 <= S:
                x0, x1, x2, x3 = XL[lx, j, u], XL[lx, j, u + 1], XL[lx, j, u + 2], XL[lx, j, u + 3]
                y0, y1, y2, y3 = YL[ly, u], YL[ly, u + 1], YL[ly, u + 2], YL[ly, u + 3]
                for l_ in range(C):
                    prow[l_] += (x0 * y0[l_] + x1 * y1[l_]) + (x2 * y2[l_] + x3 * y3[l_])
                u += 4
            for r in range(u, S):
                x, yrow = XL[lx, j, r], YL[ly, r]
                for l_ in range(C):
                    prow[l_] += x * yrow[l_]
    return P


@jit
def _fill_rows(idx: Any, S: int, o: Any, s: Any, ng: Any, e0: int, L: int, out: Any) -> None:
    """out[u, l, t] = ± limb l (24 bits) of the integer |x|·2^(−e0) of entry t of row idx[u] of (o, s, ng), as
    float64 (:func:`_fill`'s rows, laid out for one BLAS product: row u of the S × L·C matrix holds its L limbs
    one after the other); limb by limb along the row (vector lanes)."""
    T = o.shape[1]
    mask = (1 << 24) - 1
    for u in range(S):
        r = idx[u]
        for li in range(L):
            lo = 24 * li
            for t in range(T):
                x = o[r, t]
                sh = lo - (s[r, t] - e0)  # bits lo … lo + 23 of x·2^(s − e0): x >> sh (sh ≥ 0) or x << −sh
                z = (x >> min(sh, 63)) if sh >= 0 else (x << min(-sh, 63)) if -sh < 24 else 0
                out[u, li, t] = (1.0 - 2.0 * ng[r, t]) * float(z & mask)


@jit
def _gemm(XL: Any, YL: Any, S: int, Lx: int, Ly: int, R: Any) -> Any:
    """Every limb pair's sums over the S neurons in one BLAS product: XL (Lx, k, S) as an Lx·k × S matrix times YL
    (S, Ly, C) as S × Ly·C, into R (Lx·k × Ly·C, entry [lx·k + j, ly·C + l]): integers below 2^52, exact in any
    order."""
    k, C = XL.shape[1], YL.shape[2]
    X2 = XL.reshape((Lx * k, S))
    Y2 = YL.reshape((S, Ly * C))
    np.dot(X2, Y2, R)
    return R


@inline
def _add128(hi: int, lo: int, z: int, sh: int) -> tuple[int, int]:
    """The 128-bit two's complement integer (hi, lo) (lo's bits read unsigned) plus z·2^sh (z a signed int64,
    0 ≤ sh; the sum below 2^127 in magnitude, z = 0 where sh ≥ 128), by int64 shifts and an unsigned carry: no
    branch on the data, so that a loop of them runs in vector lanes (LLVM's vectors of i128, as in
    :func:`relusym._zoo._jit_bytes.madd128`, gave wrong sums when a loop of them was vectorized)."""
    if sh < 64:
        a, h = z << sh, (z >> 1) >> (63 - sh)
    else:
        a, h = 0, z << min(sh - 64, 63)
    x = lo + a
    return hi + h + ult(x, a), x


@jit
def _limb_sums128(R: Any, k: int, C: int, Lx: int, Ly: int, xb: int, off: int, acc: Any) -> None:
    """acc = (hi, lo) (each k·C int64, entry j·C + l) = Σ over the limb pairs of R's sums (:func:`_gemm`) at
    their offsets off + xb·lx + 24·ly (below 2^128 in two's complement: every entry of this path spans at most
    ``_WIDE`` bits), pass by pass: one offset a pass, so that each pass is shifts, adds and a carry in vector
    lanes."""
    hi, lo = acc
    for e in range(k * C):
        hi[e], lo[e] = 0, 0
    for lx in range(Lx):
        for ly in range(Ly):
            sh = off + xb * lx + 24 * ly
            for j in range(k):
                row = R[lx * k + j]
                for l_ in range(C):
                    e = j * C + l_
                    hi[e], lo[e] = _add128(hi[e], lo[e], int(row[ly * C + l_]), sh)


@flat
def _sums_f32(raw: Any, bi: int, lam: Any, cv: Any, out: Any, e0: int, base: int, xs: Any, hl: Any, acc: Any) -> None:
    """The entries of M and e of network bi of the float32 stack raw = (A, b, V) (:func:`affine`'s first path):
    each product z = v·w (exact in float64) cut into h = trunc(z·2^−K) and (z − h·2^K)·2^−e₀ (both exact
    integers), summed in int64, joined in 128 bits at base (in ``acc``) and split into ``out`` with c_j
    (:func:`_split_all`)."""
    A, b, V = raw
    n, m = A.shape[1], A.shape[2]
    k, C = V.shape[1], A.shape[2] + 1
    K = e0 + 52
    sK, uK, s0 = math.ldexp(1.0, -K), math.ldexp(1.0, K), math.ldexp(1.0, -e0)
    H, L = hl
    for j in range(k):
        for i in range(n):  # float64 (numba's float() of a float32 stays float32: a product of two would round)
            xs[i] = np.float64(V[bi, j, i]) if lam[i] < 0 else 0.0
        H[:C] = 0
        L[:C] = 0
        for i in range(n):
            x = xs[i]
            for l_ in range(m):
                z = x * np.float64(A[bi, i, l_])
                h = int(z * sK)
                H[l_] += h
                L[l_] += int((z - float(h) * uK) * s0)
        h_, l0 = 0, 0
        for i in range(n):  # the bias column apart: A's rows stay contiguous above
            z = xs[i] * np.float64(b[bi, i])
            h = int(z * sK)
            h_ += h
            l0 += int((z - float(h) * uK) * s0)
        H[m], L[m] = h_, l0
        ah, al = acc
        for l_ in range(C):  # int64 shifts and a carry, not madd128: this loop is vectorized
            hi, lo = _add128(0, 0, H[l_], K - base)
            ah[j * C + l_], al[j * C + l_] = _add128(hi, lo, L[l_], e0 - base)
    _split_all(acc, cv, out, k, C, base)


@jit
def affine_work(n: int, k: int, C: int) -> tuple[Any, ...]:
    """The scratch arrays of :func:`affine` for networks of n neurons, k outputs, C = m + 1 columns (allocated
    once per kernel call)."""
    return (
        np.empty((_LIMBS, k, n)),
        np.empty((_LIMBS // 2, n, C)),
        np.empty((_LIMBS * _LIMBS, C)),
        np.empty(n, np.int64),
        np.empty(n),
        (np.empty(C, np.int64), np.empty(C, np.int64)),
        np.empty(_LIMBS * k * (_LIMBS // 2) * C),
        (np.empty(k * C, np.int64), np.empty(k * C, np.int64)),
    )


@jit
def affine(raw: Any, bi: int, lam: Any, w: Any, v: Any, cv: Any, acc: Any, out: Any, work: Any, bounds: Any) -> bool:
    """M and e of network bi of the stack raw = (A, b, V) (entry j·C + l; e at l = m): Σ over the neurons with
    λ_i < 0 of v_ji·(a_i, b_i)_l, plus c_j at l = m, exactly, from the rows' odd parts and exponents w, v, cv
    (and the floats themselves for float32 data), and ``bounds``: the lowest set bit and the top bit + 1 of the
    nonzero entries of all of W, then of V (at least 2^40 and at most −2^40 when all are 0; the kernel's reader
    finds them in its pass); False when the sums need more than MAX_WORDS words or too many
    limbs.  The module's docstring describes the three paths.

    Beyond ``_WIDE`` bits, (a, b) on the grid 2^(e_W) of those rows is cut into float64 limbs of 24 bits, v on
    2^(e_V) into limbs of xb = 52 − 24 − bitlen(S) bits (S the neurons): every sum over the neurons of limb
    products is an exact float64 integer; those sums go into base-2³² words at their offsets, c_j too, and are
    split."""
    wo, ws, wn = w
    vo, vs, vn = v
    co, cs, cn = cv
    XL, YL, P, negs, xs, hl, RB, acc2 = work
    n, C = wo.shape
    k = vo.shape[0]
    nb = 64 - leading_zeros(n)
    if raw[0].itemsize == 4 and k * n * C < _GEMM:  # float32: bounds from every row, one branch-free pass
        eW, tW, eV, tV = bounds
        e0, base, top = eW + eV, eW + eV, tW + tV + nb
        for j in range(k):
            if co[j] != 0:
                base, top = min(base, cs[j]), max(top, cs[j] + 64 - leading_zeros(co[j]))
        if eW < (1 << 40) and eV < (1 << 40) and tW + tV + nb - e0 <= _F32_SPAN and top - base <= _WIDE:
            _sums_f32(raw, bi, lam, cv, out, e0, base, xs, hl, acc2)
            return True
    S = 0
    for i in range(n):
        if lam[i] < 0:
            negs[S] = i
            S += 1
    eW, tW = _span(negs, S, wo, ws, 0)
    eV, tV = _span(negs, S, vo, vs, 1)
    live = eW < (1 << 40) and eV < (1 << 40)
    base, top = (eV + eW, tV + tW + 64 - leading_zeros(S + 1)) if live else (1 << 40, -(1 << 40))
    for j in range(k):
        if co[j] != 0:
            base, top = min(base, cs[j]), max(top, cs[j] + 64 - leading_zeros(co[j]))
    if base == 1 << 40:
        base = top = 0
    NW = (top - base) // 32 + 3
    if NW > MAX_WORDS:
        return False
    if top - base <= _WIDE and k * S * C < _GEMM:  # every partial sum below 2^(top − base): 128 bits an entry
        _sums128(negs, S, w, v, cv, out, base)
        return True
    xb = 28 - (64 - leading_zeros(S + 1))
    Ly = (tW - eW + 23) // 24 if live else 0
    Lx = (tV - eV + xb - 1) // xb if live else 0
    if Ly > YL.shape[0] or Lx > XL.shape[0]:
        return False
    off = eV + eW - base
    NW = NW if top - base > _WIDE else 0  # 0: every partial sum below 2^(top − base + 1), one 128-bit integer
    if k * S * C < _GEMM:
        _fill(negs, S, wo, ws, wn, eW, Ly, 24, YL, 0)
        _fill(negs, S, vo, vs, vn, eV, Lx, xb, XL, 1)
        _limb_sums(XL, YL, P, P, False, cv, out, acc, S, Lx, Ly, xb, off, base, NW)
        return True
    Xg = XL.reshape(-1)[: Lx * k * S].reshape((Lx, k, S))  # the scratch laid out for one BLAS product
    Yg = YL.reshape(-1)[: S * Ly * C].reshape((S, Ly, C))
    _fill(negs, S, vo, vs, vn, eV, Lx, xb, Xg, 1)
    _fill_rows(negs, S, wo, ws, wn, eW, Ly, Yg)
    R = _gemm(Xg, Yg, S, Lx, Ly, RB[: Lx * k * Ly * C].reshape((Lx * k, Ly * C)))
    if NW:
        _limb_sums(Xg, Yg, P, R, True, cv, out, acc, S, Lx, Ly, xb, off, base, NW)
    else:
        _limb_sums128(R, k, C, Lx, Ly, xb, off, acc2)
        _split_all(acc2, cv, out, k, C, base)
    return True


@flat
def _split_all(acc: Any, cv: Any, out: Any, k: int, C: int, base: int) -> None:
    """Each entry of acc = (hi, lo) (:func:`_limb_sums128`, :func:`_sums_f32`), c_j added to e's first, split into
    ``out`` (:func:`_split128`)."""
    co, cs, cn = cv
    hi, lo = acc
    t, pn, plen, pw = out
    for j in range(k):
        if co[j] != 0:
            e = j * C + C - 1
            hi[e], lo[e] = madd128(hi[e], lo[e], co[j], 1, cs[j] - base, cn[j])
    for e in range(k * C):
        _split128(hi[e], lo[e], base, e, t, pn, plen, pw)


@jit
def _sums128(negs: Any, S: int, w: Any, v: Any, cv: Any, out: Any, base: int) -> None:
    """The entries of M and e (:func:`_affine`) when they span at most ``_WIDE`` bits: each product of odd parts
    o_v·o_w (below 2^106) shifted to its offset s_v + s_w − base and added to (or subtracted from) one 128-bit
    integer (:func:`madd128`), c_j too, then split into ``out``."""
    wo, ws, wn = w
    vo, vs, vn = v
    co, cs, cn = cv
    t, pn, plen, pw = out
    k, C = vo.shape[0], wo.shape[1]
    for j in range(k):
        for l_ in range(C):
            hi, lo = 0, 0
            for u in range(S):  # a 0 factor adds 0 whatever its shift
                i = negs[u]
                x, y = vo[j, i], wo[i, l_]
                hi, lo = madd128(hi, lo, x, y, vs[j, i] + ws[i, l_] - base, vn[j, i] ^ wn[i, l_])
            if l_ == C - 1:
                hi, lo = madd128(hi, lo, co[j], 1, cs[j] - base, cn[j])
            _split128(hi, lo, base, j * C + l_, t, pn, plen, pw)


@jit
def _limb_sums(
    XL: Any,
    YL: Any,
    P: Any,
    R: Any,
    gemm: bool,
    cv: Any,
    out: Any,
    acc: Any,
    S: int,
    Lx: int,
    Ly: int,
    xb: int,
    off: int,
    base: int,
    NW: int,
) -> None:
    """The entries of M and e from the limbs (:func:`affine`'s last path), split into ``out``: in one 128-bit
    integer each (:func:`madd128`) when ``NW`` is 0 (they span at most ``_WIDE`` bits), else in NW base-2³²
    words.  The float64 limb sums are exact integers below 2^53: from R (:func:`_gemm`'s layout) with ``gemm``,
    else from :func:`_products`, output by output."""
    co, cs, cn = cv
    t, pn, plen, pw = out
    k, C = XL.shape[1], YL.shape[2]
    for j in range(k):
        Pj = P if gemm else _products(XL, YL, P, j, S, Lx, Ly)
        for l_ in range(C):
            if NW == 0:
                hi, lo = 0, 0
                for lx in range(Lx):
                    for ly in range(Ly):
                        f = R[lx * k + j, ly * C + l_] if gemm else Pj[lx * Ly + ly, l_]
                        hi, lo = madd128(hi, lo, int(abs(f)), 1, off + xb * lx + 24 * ly, f < 0.0)
                if l_ == C - 1 and co[j] != 0:
                    hi, lo = madd128(hi, lo, co[j], 1, cs[j] - base, cn[j])
                _split128(hi, lo, base, j * C + l_, t, pn, plen, pw)
                continue
            for q in range(NW):
                acc[q] = 0
            for lx in range(Lx):
                for ly in range(Ly):
                    f = R[lx * k + j, ly * C + l_] if gemm else Pj[lx * Ly + ly, l_]
                    if f != 0.0:
                        _add(acc, int(abs(f)), off + xb * lx + 24 * ly, f < 0.0)
            if l_ == C - 1 and co[j] != 0:
                _add(acc, co[j], cs[j] - base, cn[j])
            split_words(acc, NW, base, j * C + l_, t, pn, plen, pw)
