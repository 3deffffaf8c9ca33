"""The compiled kernel of the zoo's digests (numba, the optional extra ``relusym[fast]``): the bytes of the
relusym.nf/2 encoding of many equal-shape float networks, network after network, into one byte buffer.

Imported only by :mod:`relusym._zoo._digest_jit`, lazily, when numba is importable.  The kernel takes the common
case and flags every other network (the caller sends those to the numpy path): every neuron has a_i ≠ 0 and
v_i ≠ 0, no two neurons lie in one hyperplane class (no ties of whole rows, no opposite pairs), every row's
integers fit 63 bits (before the division by their gcd), the exact sums of M and e fit ``MAX_WORDS`` words of 32
bits, every entry finite.  Then each neuron is a kink class of its own with κ_i = |λ_i| v_i ≠ 0, and everything
is integers:

* **rows.**  Each entry x = o·2^s (o odd, read from the float64 bits); the row's primitive vector has the
  magnitudes (o_j / g)·2^(s_j − min s) with g the gcd of the odd parts (binary gcd: that of the first two
  nonzero entries for all rows in lockstep, the others only in the rows where it is not 1), the signs of the
  row flipped where λ_i < 0; a row whose o_j·2^(s_j − min s) need more than 63 bits is flagged.
* **order.**  The rows sorted by their first entry's little-endian bytes (byte-swapped as a uint64 key); runs of
  equal keys sorted by the whole row (magnitudes entry by entry, then the sign bytes); equal rows: flagged.
  Up to ``_RANKS`` rows the keys are ranked by counting (n² compares in vector lanes, no allocation).
* **kinks.**  |o_λ|·o_v·2^(s_λ + s_v): a product of odd integers, already its 2-adic split.
* **M and e.**  Σ over the neurons with λ_i < 0 of v_i (a_i, b_i), plus c: float64 limbs of both factors, their
  products summed exactly over the neurons (:func:`_affine`; by BLAS for all of M's rows at once from ``_GEMM``
  products), each sum added at its offset into one 128-bit integer (two int64 words) when the entry spans at
  most ``_WIDE`` bits (float32 networks), else into base-2³² words (int64, carried at the end), then split
  (trailing zeros, odd part; its words in pw[q, e], entry by entry along the rows).
* **bytes.**  :mod:`relusym._zoo._jit_bytes` writes them.  All integer arithmetic is in int64 (numba turns a mix
  of uint64 and int64 into floats); a sort key alone is a uint64.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from relusym._zoo._jit_bytes import (
    encoded_size,
    float_bits,
    gcd_with,
    inline,
    jit,
    leading_zeros,
    lockstep_gcds,
    lshr,
    nbytes,
    sha256_into,
    trailing_zeros,
    ult,
    write_network,
)

__all__ = ["stack_bytes", "MAX_WORDS"]


_LIMBS = 8  # float64 limbs of v (and half as many of (a, b): 96 bits) in the sums of M and e; more: flagged
_RANKS = 128  # rows sorted by counting ranks up to this many (n² compares), by argsort beyond
_GEMM = 1024  # sums of M and e by BLAS (one dgemm per limb pair) from this many products k·S·(m + 1) per limb pair
_WIDE = 120  # sums of M and e spanning at most this many bits go through 128-bit integers
MAX_WORDS = 24  # 32-bit words of an exact sum of M or e (768 bits); more: the network is flagged
_M32 = 0xFFFFFFFF
_FRAC = (1 << 52) - 1


@inline
def _part(x: float) -> tuple[int, int, int, int]:
    """x = ±o·2^s as (o, s, sign, whether x is not finite): o odd, or o = s = 0 and no sign for 0; from x's bits
    and without branches on the data."""
    v = float_bits(x)
    ef = (v >> 52) & 0x7FF
    mant = (v & _FRAC) | (min(ef, 1) << 52)
    nz = mant != 0
    tz = trailing_zeros(mant | (1 << 62))
    return mant >> tz, (max(ef, 1) - 1075 + tz) * nz, ((v >> 63) & 1) * nz, ef == 0x7FF


@jit
def _read(A: Any, b: Any, V: Any, c: Any, bi: int, w: Any, v: Any, cv: Any) -> bool:
    """Network bi of the stack as odd integers times powers of two: W = (A | b) into w, V into v, c into cv;
    False when an entry is not finite.  One loop per array, entries written in place (2-D, no flattened views,
    no other reduction than the finiteness: vector lanes)."""
    n, m = A.shape[1], A.shape[2]
    k = V.shape[1]
    wo, ws, wn = w
    vo, vs, vn = v
    co, cs, cn = cv
    bad = 0
    for i in range(n):
        for j in range(m + 1):
            wo[i, j], ws[i, j], wn[i, j], f = _part(float(A[bi, i, j]) if j < m else float(b[bi, i]))
            bad |= f
    for j in range(k):
        for i in range(n):
            vo[j, i], vs[j, i], vn[j, i], f = _part(float(V[bi, j, i]))
            bad |= f
        co[j], cs[j], cn[j], f = _part(float(c[bi, j]))
        bad |= f
    return bad == 0


@jit
def _pairs(wo: Any, vo: Any, n: int, m: int, C: int, gs: Any, lam: Any) -> bool:
    """Per row i: λ's index (into lam), the odd parts of λ and of the next nonzero entry (into gs[0], gs[1];
    λ's twice when there is none) and the index after that (gs[2]); False for a dead or constant neuron."""
    for i in range(n):
        live = False
        for j in range(vo.shape[0]):
            live |= vo[j, i] != 0
        p = -1
        for j in range(m):
            if wo[i, j] != 0:
                p = j
                break
        if p < 0 or not live:
            return False
        q = p + 1
        while q < C and wo[i, q] == 0:
            q += 1
        gs[0, i] = wo[i, p]
        gs[1, i] = wo[i, q] if q < C else wo[i, p]
        gs[2, i] = q + 1
        lam[i] = p
    return True


@jit
def _rows(w: Any, vo: Any, n: int, C: int, m: int, mag: Any, sg: Any, lam: Any, gs: Any) -> bool:
    """The primitive vectors of the rows (magnitudes in ``mag``, signs in ``sg``) and λ's index per neuron in
    ``lam`` (sign in its top bit: lam < 0 means λ_i < 0, index ~lam); False for a network the kernel leaves.
    The gcd of a row's odd parts: that of λ's and the next nonzero one, for all rows at once
    (:func:`lockstep_gcds`), then, in the rows where it is not 1 (about one in five), with the others; the
    other gcds by one remainder each (:func:`gcd_with`)."""
    wo, ws, wn = w
    if not _pairs(wo, vo, n, m, C, gs, lam):
        return False
    ga, nx = gs[0], gs[2]
    lockstep_gcds(ga, gs[1], n)
    for i in range(n):
        p = lam[i]
        lo = 1 << 40
        for j in range(C):  # no branch: vector lanes
            lo = min(lo, ws[i, j] if wo[i, j] != 0 else 1 << 40)
        g = ga[i]
        for j in range(nx[i], C):
            if g == 1:
                break
            g = gcd_with(g, wo[i, j])
        flip = wn[i, p]
        lam[i] = ~p if flip else p
        big = 0
        for j in range(C):  # no branch on the data: vector lanes (0 has o = 0 and no sign)
            x = wo[i, j]
            d = ws[i, j] - lo if x != 0 else 0
            big |= x >> max(63 - d, 0)  # nonzero when x·2^d needs more than 63 bits
            mag[i, j], sg[i, j] = x << min(d, 63), wn[i, j] ^ (flip & (x != 0))
        if big != 0:
            return False
        if g != 1:
            for j in range(C):
                mag[i, j] //= g
    return True


@inline
def _swapped(x: int) -> np.uint64:
    """A magnitude's 8 little-endian bytes read as a big-endian uint64 (so keys compare as the bytes do)."""
    u = np.uint64(x)
    key = np.uint64(0)
    for t in range(8):
        key = (key << np.uint64(8)) | ((u >> np.uint64(8 * t)) & np.uint64(255))
    return key


@inline
def _compare(mag: Any, sg: Any, i: int, j: int, C: int) -> int:
    """−1, 0, 1 as row i's bytes (magnitudes, then signs) are below, equal to, above row j's."""
    for t in range(C):
        a, b = mag[i, t], mag[j, t]
        if a != b:
            d = trailing_zeros(a ^ b) & ~7  # the first differing byte, from the low end
            return -1 if ((a >> d) & 255) < ((b >> d) & 255) else 1
    for t in range(C):
        if sg[i, t] != sg[j, t]:
            return -1 if sg[i, t] < sg[j, t] else 1
    return 0


@jit
def _order(mag: Any, sg: Any, n: int, C: int, keys: Any, ranks: Any) -> Any:
    """The order of the rows by their bytes; empty when two rows are equal (one class)."""
    for i in range(n):
        keys[i] = _swapped(mag[i, 0])
    if n <= _RANKS:  # each row's rank by counting (n² compares in vector lanes, no allocation); ties by index
        order = ranks[:n]
        for i in range(n):
            x = keys[i]
            r = 0
            for j in range(n):
                r += (keys[j] < x) | ((keys[j] == x) & (j < i))
            order[r] = i
    else:
        order = np.argsort(keys[:n])
    r0 = 0
    while r0 < n:
        r1 = r0 + 1
        while r1 < n and keys[order[r1]] == keys[order[r0]]:
            r1 += 1
        for u in range(r0 + 1, r1):  # insertion sort of a run of equal first entries (short)
            x = order[u]
            v = u - 1
            while v >= r0:
                c = _compare(mag, sg, order[v], x, C)
                if c == 0:
                    return order[:0]
                if c < 0:
                    break
                order[v + 1] = order[v]
                v -= 1
            order[v + 1] = x
        r0 = r1
    return order


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
def _add_product(acc: Any, x: int, y: int, off: int, neg: int) -> None:
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


@jit
def _split(acc: Any, NW: int, base: int, e: int, t: Any, pn: Any, plen: Any, pw: Any) -> None:
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
def _add128(hi: int, lo: int, f: int, s: int) -> tuple[int, int]:
    """(hi, lo) + f·2^s in 128-bit two's complement (lo's bits read unsigned); |f| < 2^63, 0 ≤ s ≤ 126 and the
    sum below 2^127 in magnitude."""
    if s == 0:
        h, low = f >> 63, f
    elif s < 64:
        h, low = f >> (64 - s), f << s
    else:
        h, low = f << (s - 64), 0
    lo2 = lo + low
    return hi + h + ult(lo2, low), lo2


@inline
def _split128(hi: int, lo: int, base: int, e: int, t: Any, pn: Any, plen: Any, pw: Any) -> None:
    """The 2-adic split of 2^base · (hi, lo) (a 128-bit two's complement integer) into entry e, as
    :func:`_split`."""
    neg = hi < 0
    if neg:
        lo = -lo
        hi = ~hi + (lo == 0)
    if hi == 0 and lo == 0:
        t[e], pn[e], plen[e] = 0, 0, 0
        return
    if lo != 0:
        tz = trailing_zeros(lo)
        lo = lshr(lo, tz) | ((hi << (63 - tz)) << 1)
        hi = hi >> tz
    else:
        tz = 64 + trailing_zeros(hi)
        lo = hi >> (tz - 64)
        hi = 0
    t[e], pn[e] = base + tz, 1 if neg else 0
    plen[e] = 8 + ((71 - leading_zeros(hi)) >> 3) if hi != 0 else (71 - leading_zeros(lo)) >> 3
    pw[0, e], pw[1, e], pw[2, e], pw[3, e] = lo & _M32, lshr(lo, 32), hi & _M32, hi >> 32


@jit
def _kinks(order: Any, lam: Any, wo: Any, ws: Any, vo: Any, vs: Any, vn: Any, acc: Any, out: Any) -> None:
    """κ of the classes in their order: |o_λ|·o_v·2^(s_λ + s_v), entry r·k + j of (t, sign, bytes, words)."""
    t, pn, plen, pw = out
    n, k = order.shape[0], vo.shape[0]
    for r in range(n):
        i = order[r]
        p = lam[i] if lam[i] >= 0 else ~lam[i]
        for j in range(k):
            e = r * k + j
            if vo[j, i] == 0:
                t[e], pn[e], plen[e] = 0, 0, 0
                continue
            x, y = wo[i, p], vo[j, i]
            if x < (1 << 31) and y < (1 << 31):  # float32 data: the product in one int64, odd
                z = x * y
                t[e], pn[e], plen[e] = ws[i, p] + vs[j, i], vn[j, i], nbytes(z)
                pw[0, e], pw[1, e] = z & _M32, z >> 32
                continue
            for q in range(5):
                acc[q] = 0
            _add_product(acc, x, y, 0, vn[j, i])
            _split(acc, 5, ws[i, p] + vs[j, i], e, t, pn, plen, pw)


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
def _gemm(XL: Any, YL: Any, S: int, Lx: int, Ly: int) -> Any:
    """:func:`_products` for every j at once (Q[j] is its P), by BLAS: integers below 2^52, exact in any order."""
    k, C = XL.shape[1], YL.shape[2]
    Q = np.empty((k, Lx * Ly, C))
    for lx in range(Lx):
        X = np.ascontiguousarray(XL[lx, :, :S])
        for ly in range(Ly):
            R = np.dot(X, YL[ly][:S])
            for j in range(k):
                Q[j, lx * Ly + ly] = R[j]
    return Q


@jit
def _affine(lam: Any, w: Any, v: Any, cv: Any, acc: Any, out: Any, work: Any) -> bool:
    """M and e (entry j·C + l; e at l = m): Σ over the neurons with λ_i < 0 of v_ji·(a_i, b_i)_l, plus c_j at
    l = m, exactly; False when the sums need more than MAX_WORDS words or too many limbs.

    (a, b) on the grid 2^(e_W) of those rows is cut into float64 limbs of 24 bits, v on 2^(e_V) into limbs of
    xb = 52 − 24 − bitlen(S) bits (S the neurons): every sum over the neurons of limb products is an exact
    float64 integer; those sums go into one 128-bit integer (:func:`_add128`; every partial sum is below
    2^(top − base + 1)) or base-2³² words at their offsets, c_j too, and are split."""
    wo, ws, wn = w
    vo, vs, vn = v
    co, cs, cn = cv
    XL, YL, P, negs = work
    n, C = wo.shape
    k = vo.shape[0]
    S = 0
    for i in range(n):
        if lam[i] < 0:
            negs[S] = i
            S += 1
    eW, tW = _span(negs, S, wo, ws, 0)
    eV, tV = _span(negs, S, vo, vs, 1)
    live = eW < (1 << 40) and eV < (1 << 40)
    xb = 28 - (64 - leading_zeros(S + 1))
    Ly = (tW - eW + 23) // 24 if live else 0
    Lx = (tV - eV + xb - 1) // xb if live else 0
    if Ly > YL.shape[0] or Lx > XL.shape[0]:
        return False
    base, top = (eV + eW, tV + tW + 64 - leading_zeros(S + 1)) if live else (1 << 40, -(1 << 40))
    for j in range(k):
        if co[j] != 0:
            base, top = min(base, cs[j]), max(top, cs[j] + 64 - leading_zeros(co[j]))
    if base == 1 << 40:
        base = top = 0
    NW = (top - base) // 32 + 3
    if NW > MAX_WORDS:
        return False
    _fill(negs, S, wo, ws, wn, eW, Ly, 24, YL, 0)
    _fill(negs, S, vo, vs, vn, eV, Lx, xb, XL, 1)
    off = eV + eW - base
    Q = _gemm(XL, YL, S, Lx, Ly) if k * S * C >= _GEMM else np.empty((0, 0, 0))
    if top - base <= _WIDE:  # every partial sum below 2^(top − base + 1): two int64 words, no carries to chase
        _sums128(XL, YL, P, Q, cv, out, S, Lx, Ly, xb, off, base)
    else:
        _sums_words(XL, YL, P, Q, cv, out, acc, S, Lx, Ly, xb, off, base, NW)
    return True


@jit
def _sums128(
    XL: Any, YL: Any, P: Any, Q: Any, cv: Any, out: Any, S: int, Lx: int, Ly: int, xb: int, off: int, base: int
) -> None:
    """The entries of M and e from the limbs (:func:`_affine`) in 128-bit integers, split into ``out``."""
    co, cs, cn = cv
    t, pn, plen, pw = out
    k, C = XL.shape[1], YL.shape[2]
    for j in range(k):
        Pj = Q[j] if Q.shape[0] else _products(XL, YL, P, j, S, Lx, Ly)
        for l_ in range(C):
            hi, lo = 0, 0
            for lx in range(Lx):
                for ly in range(Ly):
                    hi, lo = _add128(hi, lo, int(Pj[lx * Ly + ly, l_]), off + xb * lx + 24 * ly)
            if l_ == C - 1 and co[j] != 0:
                hi, lo = _add128(hi, lo, -co[j] if cn[j] else co[j], cs[j] - base)
            _split128(hi, lo, base, j * C + l_, t, pn, plen, pw)


@jit
def _sums_words(
    XL: Any,
    YL: Any,
    P: Any,
    Q: Any,
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
    """The entries of M and e from the limbs (:func:`_affine`) in NW base-2³² words, split into ``out``."""
    co, cs, cn = cv
    t, pn, plen, pw = out
    k, C = XL.shape[1], YL.shape[2]
    for j in range(k):
        Pj = Q[j] if Q.shape[0] else _products(XL, YL, P, j, S, Lx, Ly)
        for l_ in range(C):
            for q in range(NW):
                acc[q] = 0
            for lx in range(Lx):
                for ly in range(Ly):
                    f = Pj[lx * Ly + ly, l_]
                    if f != 0.0:
                        _add(acc, int(abs(f)), off + xb * lx + 24 * ly, f < 0.0)
            if l_ == C - 1 and co[j] != 0:
                _add(acc, co[j], cs[j] - base, cn[j])
            _split(acc, NW, base, j * C + l_, t, pn, plen, pw)


@jit
def stack_bytes(
    V: Any, A: Any, b: Any, c: Any, start: int, out: Any, offs: Any, flag: Any, sha: Any, digests: Any
) -> int:
    """The encodings of networks start, start + 1, … of the stack (V: B×k×n, A: B×n×m, b: B×n, c: B×k, float32
    or float64, C-contiguous) written one after the other into ``out`` from 0: network start + u's bytes are
    out[offs[u]:offs[u + 1]] (empty, and flag set, for a network the kernel leaves).  Returns the index of the
    first network not done (B when all are): the buffer is full, or (when none was done) too small for it, whose
    size is then offs[0].

    With ``sha`` the addresses of OpenSSL's ``SHA256_Init``, ``_Update``, ``_Final`` (zeros: none), each network's bytes are hashed as soon as they
    are written (still in the cache), the digest into digests[bi] (B×32 bytes), and the next network's bytes
    overwrite them (offs then holds empty slices)."""
    B, n, m = A.shape
    k = V.shape[1]
    C = m + 1
    wo, ws, wn = np.empty((n, C), np.int64), np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    vo, vs, vn = np.empty((k, n), np.int64), np.empty((k, n), np.int64), np.empty((k, n), np.int64)
    co, cs, cn = np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.int64)
    mag, sg = np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    lam, keys, ranks = np.empty(n, np.int64), np.empty(n, np.uint64), np.empty(n, np.int64)
    gs = np.empty((3, n), np.int64)
    acc = np.zeros(MAX_WORDS + 2, np.int64)
    kin = (np.empty(n * k, np.int64), np.empty(n * k, np.int64), np.empty(n * k, np.int64),
           np.zeros((6, n * k), np.int64))  # fmt: skip
    aff = (np.empty(k * C, np.int64), np.empty(k * C, np.int64), np.empty(k * C, np.int64),
           np.zeros((MAX_WORDS + 2, k * C), np.int64))  # fmt: skip
    work = (
        np.empty((_LIMBS, k, n)),
        np.empty((_LIMBS // 2, n, C)),
        np.empty((_LIMBS * _LIMBS, C)),
        np.empty(n, np.int64),
    )
    em = np.arange(k * C).reshape(k, C)
    idx = (np.arange(n * C), np.arange(n * k), em[:, :m].copy().reshape(-1), em[:, m].copy(), np.empty(n * C, np.int64))
    pos = 0
    for bi in range(start, B):
        u = bi - start
        offs[u] = pos
        offs[u + 1] = pos
        ok = _read(A, b, V, c, bi, (wo, ws, wn), (vo, vs, vn), (co, cs, cn))
        ok = ok and _rows((wo, ws, wn), vo, n, C, m, mag, sg, lam, gs)
        order = _order(mag, sg, n, C, keys, ranks) if ok else lam[:0]
        if order.size == 0 or not _affine(lam, (wo, ws, wn), (vo, vs, vn), (co, cs, cn), acc, aff, work):
            flag[bi] = True
            continue
        _kinks(order, lam, wo, ws, vo, vs, vn, acc, kin)
        size, w = encoded_size(mag, n, C, k, m, kin, aff)
        if pos + size + 8 > out.size:  # 8 bytes for the last store's excess
            if u == 0:
                offs[0] = size
            return int(bi)
        end = write_network(out, pos, (k, m), (mag, sg), order, w, kin, aff, idx)
        if sha[0] != 0:
            sha256_into(sha, out, pos, end - pos, digests, bi)
            end = pos
        offs[u + 1] = end
        pos = end
    return int(B)
