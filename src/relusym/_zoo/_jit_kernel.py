"""The compiled kernel of the zoo's digests (numba, the optional extra ``relusym[fast]``): the bytes of the
relusym.nf/2 encoding of many equal-shape float networks, network after network, into one byte buffer.

Imported only by :mod:`relusym._zoo._digest_jit`, lazily, when numba is importable.  The kernel takes the common
case and flags every other network (the caller sends those to the numpy path): every neuron has a_i ≠ 0 and
v_i ≠ 0, no two neurons lie in one hyperplane class (no ties of whole rows, no opposite pairs), every row's
integers fit 63 bits, the exact sums of M and e fit ``MAX_WORDS`` words of 32 bits, every entry finite.  Then each
neuron is a kink class of its own with κ_i = |λ_i| v_i ≠ 0, and everything is integers:

* **rows.**  Each entry x = o·2^s (o odd, read from the float64 bits); the row's primitive vector has the
  magnitudes (o_j / g)·2^(s_j − min s) with g the gcd of the odd parts (binary gcd), the signs of the row
  flipped where λ_i < 0.
* **order.**  The rows sorted by their first entry's little-endian bytes (byte-swapped as a uint64 key); runs of
  equal keys sorted by the whole row (magnitudes entry by entry, then the sign bytes); equal rows: flagged.
* **kinks.**  |o_λ|·o_v·2^(s_λ + s_v): a product of odd integers, already its 2-adic split.
* **M and e.**  Σ over the neurons with λ_i < 0 of v_i (a_i, b_i), plus c: every product o·o'·2^(s + s') added
  exactly into base-2³² words (int64, carried at the end), then split (trailing zeros, odd part).
* **bytes.**  Header, the hyperplane block, the rational blocks of κ, M and e, exactly as
  :mod:`relusym._core.digest` defines them.

All integer arithmetic is in int64 (numba turns a mix of uint64 and int64 into floats); a sort key alone is a
uint64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
from numba.cpython.unsafe import numbers as _unsafe

__all__ = ["stack_bytes", "MAX_WORDS"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(f: _F) -> _F:
    return cast(_F, numba.njit(cache=True, nogil=True)(f))


def _inline(f: _F) -> _F:
    """A helper of the inner loops, inlined into its callers by numba (a call that passes an array pays two
    atomic reference-count updates)."""
    return cast(_F, numba.njit(cache=True, nogil=True, inline="always")(f))


trailing_zeros: Any = _unsafe.trailing_zeros  # LLVM's cttz and ctlz (untyped for mypy)
leading_zeros: Any = _unsafe.leading_zeros
MAX_WORDS = 24  # 32-bit words of an exact sum of M or e (768 bits); more: the network is flagged
_M32 = 0xFFFFFFFF
_FRAC = (1 << 52) - 1
_MAGIC = np.frombuffer(b"relusym.nf/2\n", dtype=np.uint8).copy()


@_jit
def _decompose(x: Any, o: Any, s: Any, ng: Any) -> bool:
    """Each float64 of ``x`` as ±o·2^s (o odd, or 0 with s = 0), its sign in ng; False if one is not finite."""
    bits = x.view(np.int64)
    for t in range(bits.size):
        v = bits[t]
        ef = (v >> 52) & 0x7FF
        mant = v & _FRAC
        if ef == 0x7FF:
            return False
        e = -1074
        if ef != 0:
            mant |= 1 << 52
            e = ef - 1075
        if mant == 0:
            o[t], s[t], ng[t] = 0, 0, 0
        else:
            tz = trailing_zeros(mant)
            o[t], s[t], ng[t] = mant >> tz, e + tz, 1 if v < 0 else 0
    return True


@_inline
def _gcd_odd(a: int, b: int) -> int:
    """gcd of two odd positive integers (binary: differences of odd numbers, trailing zeros dropped)."""
    while a != b:
        if a > b:
            a -= b
            a >>= trailing_zeros(a)
        else:
            b -= a
            b >>= trailing_zeros(b)
    return a


@_inline
def _nbytes(x: int) -> int:
    """Bytes of |x| up to its last nonzero byte (0 for 0)."""
    if x < 0:
        x = -x
    if x == 0:
        return 0
    return int((64 - leading_zeros(x) + 7) >> 3)


@_jit
def _rows(wo: Any, ws: Any, wn: Any, vo: Any, n: int, C: int, m: int, mag: Any, sg: Any, lam: Any) -> bool:
    """The primitive vectors of the rows (magnitudes in ``mag``, signs in ``sg``) and λ's index per neuron in
    ``lam`` (sign in its top bit: lam < 0 means λ_i < 0, index ~lam); False for a network the kernel leaves."""
    k = vo.shape[0]
    for i in range(n):
        live = False
        for j in range(k):
            if vo[j, i] != 0:
                live = True
                break
        if not live:
            return False
        p = -1
        for j in range(m):
            if wo[i, j] != 0:
                p = j
                break
        if p < 0:
            return False
        lo = 1 << 40
        g = 0
        for j in range(C):
            if wo[i, j] != 0:
                lo = min(lo, ws[i, j])
                g = wo[i, j] if g == 0 else (_gcd_odd(g, wo[i, j]) if g != 1 else 1)
        flip = wn[i, p]
        lam[i] = ~p if flip else p
        for j in range(C):
            x = wo[i, j]
            if x == 0:
                mag[i, j], sg[i, j] = 0, 0
                continue
            q = x // g
            d = ws[i, j] - lo
            if d + 64 - leading_zeros(q) > 63:
                return False
            mag[i, j], sg[i, j] = q << d, wn[i, j] ^ flip
    return True


@_inline
def _swapped(x: int) -> np.uint64:
    """A magnitude's 8 little-endian bytes read as a big-endian uint64 (so keys compare as the bytes do)."""
    u = np.uint64(x)
    key = np.uint64(0)
    for t in range(8):
        key = (key << np.uint64(8)) | ((u >> np.uint64(8 * t)) & np.uint64(255))
    return key


@_inline
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


@_jit
def _order(mag: Any, sg: Any, n: int, C: int, keys: Any) -> Any:
    """The order of the rows by their bytes; empty when two rows are equal (one class)."""
    for i in range(n):
        keys[i] = _swapped(mag[i, 0])
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


@_inline
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


@_inline
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


@_inline
def _carry(acc: Any, NW: int) -> None:
    for q in range(NW - 1):
        acc[q + 1] += acc[q] >> 32
        acc[q] &= _M32


@_jit
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
        pw[e, u] = w
        if w != 0:
            top = 4 * u + _nbytes(w)
    t[e], pn[e], plen[e] = base + 32 * q0 + tz, 1 if neg else 0, top


@_jit
def _kinks(order: Any, lam: Any, wo: Any, ws: Any, vo: Any, vs: Any, vn: Any, acc: Any, out: Any) -> None:
    """κ of the classes in their order: |o_λ|·o_v·2^(s_λ + s_v), entry r·k + j of (t, sign, bytes, words)."""
    t, pn, plen, pw = out
    n, k = order.shape[0], vo.shape[0]
    for r in range(n):
        i = order[r]
        p = lam[i] if lam[i] >= 0 else ~lam[i]
        for j in range(k):
            for q in range(5):
                acc[q] = 0
            e = r * k + j
            if vo[j, i] == 0:
                t[e], pn[e], plen[e] = 0, 0, 0
                continue
            _add_product(acc, wo[i, p], vo[j, i], 0, vn[j, i])
            _split(acc, 5, ws[i, p] + vs[j, i], e, t, pn, plen, pw)


@_jit
def _grid(negs: Any, w: Any, v: Any, cv: Any) -> tuple[int, int]:
    """The exponent of the grid of the sums of M and e (the smallest exponent of a term) and the 32-bit words
    they need (a sign word included)."""
    wo, ws, _ = w
    vo, vs, _ = v
    co, cs, _ = cv
    k, C = vo.shape[0], wo.shape[1]
    big = 1 << 40
    lov, low, hiv, hiw = big, big, -big, -big
    for i in negs:
        for j in range(k):
            if vo[j, i] != 0:
                lov, hiv = min(lov, vs[j, i]), max(hiv, vs[j, i])
        for l_ in range(C):
            if wo[i, l_] != 0:
                low, hiw = min(low, ws[i, l_]), max(hiw, ws[i, l_])
    base, top = big, -big
    if lov < big and low < big:
        base, top = lov + low, hiv + hiw + 106
    for j in range(k):
        if co[j] != 0:
            base, top = min(base, cs[j]), max(top, cs[j] + 53)
    if base == big:
        base = top = 0
    NW = (top - base + 64 - leading_zeros(negs.size + 2)) // 32 + 3
    return base, NW


@_jit
def _affine(lam: Any, w: Any, v: Any, cv: Any, acc: Any, out: Any) -> bool:
    """M and e (entry j·C + l; e at l = m): Σ over the neurons with λ_i < 0 of v_ji·(a_i, b_i)_l, plus c_j at
    l = m, exactly; False when the sums need more than MAX_WORDS words."""
    wo, ws, wn = w
    vo, vs, vn = v
    co, cs, cn = cv
    t, pn, plen, pw = out
    n, C = wo.shape
    k = vo.shape[0]
    negs = np.nonzero(lam < 0)[0]
    base, NW = _grid(negs, w, v, cv)
    if NW > MAX_WORDS:
        return False
    S = negs.size
    go, gs, gn = np.empty((C, S), np.int64), np.empty((C, S), np.int64), np.empty((C, S), np.int64)
    for u in range(S):
        for l_ in range(C):
            go[l_, u], gs[l_, u], gn[l_, u] = wo[negs[u], l_], ws[negs[u], l_], wn[negs[u], l_]
    for j in range(k):
        xo, xs, xn = vo[j][negs], vs[j][negs] - base, vn[j][negs]
        for l_ in range(C):
            acc[:NW] = 0
            for u in range(S):
                if xo[u] != 0 and go[l_, u] != 0:
                    _add_product(acc, xo[u], go[l_, u], xs[u] + gs[l_, u], xn[u] ^ gn[l_, u])
            if l_ == C - 1 and co[j] != 0:
                _add(acc, co[j], cs[j] - base, cn[j])
            _split(acc, NW, base, j * C + l_, t, pn, plen, pw)
    return True


@_jit
def _widths(t: Any, plen: Any, e0: int, L: int, step: int) -> tuple[int, int]:
    """The widths of the t block and the p block of entries e0, e0 + step, … (L of them)."""
    wt, wp = 1, 1
    for u in range(L):
        e = e0 + u * step
        wt = max(wt, _nbytes(t[e]))
        wp = max(wp, plen[e])
    return wt, wp


@_inline
def _put(out: Any, pos: int, x: int, w: int) -> int:
    """|x| in w bytes, little-endian, at pos."""
    if x < 0:
        x = -x
    for u in range(w):
        out[pos + u] = (x >> (8 * u)) & 255
    return pos + w


@_inline
def _bits(out: Any, pos: int, L: int) -> int:
    """Zero the ⌈L/8⌉ bytes of a sign-bit field at pos; returns its end."""
    end = pos + (L + 7) // 8
    out[pos:end] = 0
    return end


@_jit
def _rational(out: Any, pos: int, ent: Any, e0: int, L: int, step: int, row: int, blk: int) -> int:
    """The rational block of entries e0 + (u // row)·blk + (u % row)·step, u < L (as in :func:`_widths` when
    row = L): the integer blocks of the t's, the p's and the q's (ones)."""
    t, pn, plen, pw = ent
    wt, wp = 1, 1
    for u in range(L):
        e = e0 + (u // row) * blk + (u % row) * step
        wt = max(wt, _nbytes(t[e]))
        wp = max(wp, plen[e])
    pos = _put(out, pos, wt, 4)
    sb = pos + L * wt
    end = _bits(out, sb, L)
    for u in range(L):
        e = e0 + (u // row) * blk + (u % row) * step
        pos = _put(out, pos, t[e], wt)
        if t[e] < 0:
            out[sb + (u >> 3)] |= 1 << (u & 7)
    pos = _put(out, end, wp, 4)
    sb = pos + L * wp
    end = _bits(out, sb, L)
    for u in range(L):
        e = e0 + (u // row) * blk + (u % row) * step
        for b in range(wp):
            out[pos + b] = (pw[e, b >> 2] >> (8 * (b & 3))) & 255 if b < plen[e] else 0
        pos += wp
        if pn[e]:
            out[sb + (u >> 3)] |= 1 << (u & 7)
    pos = _put(out, end, 1, 4)
    out[pos : pos + L] = 1
    return _bits(out, pos + L, L)


@_jit
def _size(mag: Any, n: int, C: int, k: int, m: int, kin: Any, aff: Any) -> tuple[int, int]:
    """(bytes of the encoding, width of the hyperplane block)."""
    w = 1
    for i in range(n):
        for j in range(C):
            w = max(w, _nbytes(mag[i, j]))
    size = 37 + 4 + n * C * w + (n * C + 7) // 8
    wt, wp = _widths(kin[0], kin[2], 0, n * k, 1)
    size += 12 + n * k * (wt + wp + 1) + 3 * ((n * k + 7) // 8)
    wt, wp = 1, 1
    for j in range(k):
        a, b = _widths(aff[0], aff[2], j * C, m, 1)
        wt, wp = max(wt, a), max(wp, b)
    size += 12 + k * m * (wt + wp + 1) + 3 * ((k * m + 7) // 8)
    wt, wp = _widths(aff[0], aff[2], m, k, C)
    size += 12 + k * (wt + wp + 1) + 3 * ((k + 7) // 8)
    return size, w


@_jit
def _write(out: Any, pos: int, head: Any, mag: Any, sg: Any, order: Any, w: int, kin: Any, aff: Any) -> int:
    n, C = mag.shape
    k, m = head
    out[pos : pos + 13] = _MAGIC
    pos = _put(out, pos + 13, m, 8)
    pos = _put(out, pos, k, 8)
    pos = _put(out, pos, n, 8)
    pos = _put(out, pos, w, 4)
    sb = pos + n * C * w
    end = _bits(out, sb, n * C)
    u = 0
    for r in range(n):
        i = order[r]
        for j in range(C):
            pos = _put(out, pos, mag[i, j], w)
            if sg[i, j]:
                out[sb + (u >> 3)] |= 1 << (u & 7)
            u += 1
    pos = _rational(out, end, kin, 0, n * k, 1, n * k, 0)
    pos = _rational(out, pos, aff, 0, k * m, 1, m, C)
    return _rational(out, pos, aff, m, k, C, k, 0)


@_jit
def stack_bytes(V: Any, A: Any, b: Any, c: Any, start: int, out: Any, offs: Any, flag: Any) -> int:
    """The encodings of networks start, start + 1, … of the stack (V: B×k×n, A: B×n×m, b: B×n, c: B×k, float32
    or float64, C-contiguous) written one after the other into ``out`` from 0: network start + u's bytes are
    out[offs[u]:offs[u + 1]] (empty, and flag set, for a network the kernel leaves).  Returns the index of the
    first network not done (B when all are): the buffer is full, or (when none was done) too small for it, whose
    size is then offs[0]."""
    B, n, m = A.shape
    k = V.shape[1]
    C = m + 1
    wf, vf, cf = np.empty(n * C), np.empty(k * n), np.empty(k)
    wo, ws, wn = np.empty((n, C), np.int64), np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    vo, vs, vn = np.empty((k, n), np.int64), np.empty((k, n), np.int64), np.empty((k, n), np.int64)
    co, cs, cn = np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.int64)
    mag, sg = np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    lam, keys = np.empty(n, np.int64), np.empty(n, np.uint64)
    acc = np.zeros(MAX_WORDS + 2, np.int64)
    kin = (np.empty(n * k, np.int64), np.empty(n * k, np.int64), np.empty(n * k, np.int64),
           np.zeros((n * k, 5), np.int64))  # fmt: skip
    aff = (np.empty(k * C, np.int64), np.empty(k * C, np.int64), np.empty(k * C, np.int64),
           np.zeros((k * C, MAX_WORDS), np.int64))  # fmt: skip
    pos = 0
    for bi in range(start, B):
        u = bi - start
        offs[u] = pos
        offs[u + 1] = pos
        for i in range(n):
            for j in range(m):
                wf[i * C + j] = A[bi, i, j]
            wf[i * C + m] = b[bi, i]
        for j in range(k):
            cf[j] = c[bi, j]
            for i in range(n):
                vf[j * n + i] = V[bi, j, i]
        ok = _decompose(wf, wo.reshape(-1), ws.reshape(-1), wn.reshape(-1))
        ok = ok and _decompose(vf, vo.reshape(-1), vs.reshape(-1), vn.reshape(-1)) and _decompose(cf, co, cs, cn)
        ok = ok and _rows(wo, ws, wn, vo, n, C, m, mag, sg, lam)
        order = _order(mag, sg, n, C, keys) if ok else lam[:0]
        if order.size == 0 or not _affine(lam, (wo, ws, wn), (vo, vs, vn), (co, cs, cn), acc, aff):
            flag[bi] = True
            continue
        _kinks(order, lam, wo, ws, vo, vs, vn, acc, kin)
        size, w = _size(mag, n, C, k, m, kin, aff)
        if pos + size > out.size:
            if u == 0:
                offs[0] = size
            return int(bi)
        pos = _write(out, pos, (k, m), mag, sg, order, w, kin, aff)
        offs[u + 1] = pos
    return int(B)
