"""The compiled kernel of the zoo's digests (numba, the optional extra ``relusym[fast]``): the bytes of the
relusym.nf/2 encoding of many equal-shape float networks, network after network, into one byte buffer.

Imported only by :mod:`relusym._zoo._digest_jit`, lazily, when numba is importable.  The kernel takes the common
case and flags every other network (the caller sends those to the numpy path): every neuron has a_i ≠ 0 and
v_i ≠ 0, no two neurons lie in one hyperplane class (no ties of whole rows, no opposite pairs), every row's
integers fit 63 bits (before the division by their gcd), the exact sums of M and e fit ``MAX_WORDS`` words of 32
bits, every entry finite.  Then each neuron is a kink class of its own with κ_i = |λ_i| v_i ≠ 0, and everything
is integers:

* **rows.**  Each entry x = o·2^s (o odd, read from the float64 bits); the row's primitive vector has the
  magnitudes (o_j / g)·2^(s_j − min s) with g the gcd of the odd parts (binary gcd: that of the first and last
  nonzero entries for all rows in lockstep, the others only in the rows where it is not 1), the signs of the
  row flipped where λ_i < 0; a row whose o_j·2^(s_j − min s) need more than 63 bits is flagged.
* **order.**  The rows sorted by their first entry's first 4 little-endian bytes (byte-swapped as a uint32 key);
  runs of equal keys sorted by the whole row (magnitudes entry by entry, then the sign bytes); equal rows: flagged.
  Up to ``_RANKS`` rows the keys are ranked by counting (n² compares in vector lanes, no allocation).
* **kinks.**  |o_λ|·o_v·2^(s_λ + s_v): a product of odd integers, already its 2-adic split.
* **M and e.**  Σ over the neurons with λ_i < 0 of v_i (a_i, b_i), plus c, exactly: :mod:`relusym._zoo._jit_sums`
  (float32 data in one branch-free pass of int64 sums; else 128-bit integers or base-2³² words), split (trailing
  zeros, odd part; its words in pw[q, e], entry by entry along the rows).
* **bytes.**  :mod:`relusym._zoo._jit_bytes` writes them.  All integer arithmetic is in int64 (numba turns a mix
  of uint64 and int64 into floats); a sort key alone is unsigned (uint32).

The per-network phases allocate nothing and are compiled without numba's reference counts (``flat``): each array
argument of a call or of an inlined helper would otherwise cost two atomic updates, more than some phases' work.
Beware numba's ``float()``: of a float32 scalar it stays float32 (a product of two would be rounded).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from relusym._zoo._jit_bytes import (
    encoded_size,
    flat,
    float_bits,
    gcd_with,
    inline,
    jit,
    leading_zeros,
    lockstep_gcds,
    nbytes,
    sha256_into,
    trailing_zeros,
    write_network,
)
from relusym._zoo._jit_sha import LANES, hash_lanes, lane_work, pad
from relusym._zoo._jit_sums import MAX_WORDS, add_product, affine, affine_work, split_words

__all__ = ["stack_bytes", "MAX_WORDS"]


_RANKS = 128  # rows sorted by counting ranks up to this many (n² compares), by argsort beyond
_M32 = 0xFFFFFFFF
_FRAC = (1 << 52) - 1


@inline
def _part(x: float) -> tuple[int, int, int, int, int, int]:
    """x = ±o·2^s as (o, s, sign, whether x is not finite, lo, hi): o odd, or o = s = 0 and no sign for 0; lo = s
    and hi = s + bitlen(o) (the lowest set bit and the top bit + 1 of |x|), pushed out of any minimum and maximum
    by 2^41 and 2^42 for 0; from x's bits and without branches on the data."""
    v = float_bits(x)
    ef = (v >> 52) & 0x7FF
    mant = (v & _FRAC) | (min(ef, 1) << 52)
    nz = mant != 0
    tz = trailing_zeros(mant | (1 << 62))
    s = (max(ef, 1) - 1075 + tz) * nz
    hi = max(ef, 1) - 1011 - leading_zeros(mant | 1) - ((1 - nz) << 42)  # s + bitlen(o) = e − 1075 + bitlen(mant)
    return mant >> tz, s, ((v >> 63) & 1) * nz, ef == 0x7FF, s + ((1 - nz) << 41), hi


@flat
def _read(
    A: Any, b: Any, V: Any, c: Any, bi: int, w: Any, v: Any, cv: Any, lam: Any, rw: Any
) -> tuple[bool, int, int, int, int]:
    """Network bi of the stack as odd integers times powers of two: W = (A | b) into w, V into v, c into cv;
    (whether every entry is finite, then the lowest set bit and the top bit + 1 of the nonzero entries of W and of
    V, as :func:`relusym._zoo._jit_sums.affine` takes them: at least 2^40 and at most −2^40 when all are 0).  One
    loop per array, entries written in place (2-D, no flattened views, reductions only: vector lanes).  On the
    way, per row i of A, what :func:`_rows` needs, as reductions of the same loop (no pass of its own): the index
    of its first and last nonzero entries in lam[i] (m: none) and rw[2, i] (−1), its lowest set bit in rw[3, i]
    (≥ 2^41: none); b's column is left to :func:`_rows` (in this loop it costs more than it saves)."""
    n, m = A.shape[1], A.shape[2]
    k = V.shape[1]
    wo, ws, wn = w
    vo, vs, vn = v
    co, cs, cn = cv
    bad = 0
    eW, tW, eV, tV = 1 << 40, -(1 << 40), 1 << 40, -(1 << 40)
    for i in range(n):  # A and b in two loops, the minima and maxima as selects: vector lanes
        rl, p, q = 1 << 42, m, -1
        for j in range(m):
            x, e, sn, f, lo, hi = _part(float(A[bi, i, j]))
            wo[i, j], ws[i, j], wn[i, j] = x, e, sn
            bad |= f
            eW, tW, rl = lo if lo < eW else eW, hi if hi > tW else tW, lo if lo < rl else rl
            jp, jq = j if x != 0 else m, j if x != 0 else -1
            p, q = jp if jp < p else p, jq if jq > q else q
        lam[i], rw[2, i], rw[3, i] = p, q, rl
    for i in range(n):
        wo[i, m], ws[i, m], wn[i, m], f, lo, hi = _part(float(b[bi, i]))
        bad |= f
        eW, tW = lo if lo < eW else eW, hi if hi > tW else tW
    for j in range(k):
        for i in range(n):
            vo[j, i], vs[j, i], vn[j, i], f, lo, hi = _part(float(V[bi, j, i]))
            bad |= f
            eV, tV = lo if lo < eV else eV, hi if hi > tV else tV
        co[j], cs[j], cn[j], f, lo, hi = _part(float(c[bi, j]))
        bad |= f
    return bad == 0, eW, tW, eV, tV


@flat
def _gcds(wo: Any, C: int, lam: Any, ga: Any, gb: Any) -> int:
    """The rows whose gcd so far (in ga, that of two entries) is not 1, listed in gb (u of them, returned: no
    branch per row), their gcds with the row's other entries (:func:`gcd_with`) into ga."""
    u = 0
    for i in range(ga.size):
        gb[u] = i
        u += ga[i] != 1
    for t in range(u):
        i = gb[t]
        g = ga[i]
        for j in range(lam[i] + 1, C):
            g = gcd_with(g, wo[i, j])
            if g == 1:
                break
        ga[i] = g
    return u


@flat
def _rows(w: Any, vo: Any, n: int, C: int, m: int, mag: Any, sg: Any, lam: Any, rw: Any) -> bool:
    """The primitive vectors of the rows (magnitudes in ``mag``, signs in ``sg``) and λ's index per neuron in
    ``lam`` (sign in its top bit: lam < 0 means λ_i < 0, index ~lam); False for a network the kernel leaves.
    From :func:`_read`'s per-row indices and lowest bits of A in lam and rw, with b's column.  The gcd g of a
    row's odd parts: that of its first and last nonzero ones, for all rows at once (:func:`lockstep_gcds`), then,
    only in the rows where it is not 1 (about one in five), with the others (:func:`_gcds`); in
    those rows, the division by g is a multiplication by its inverse modulo 2^64 (exact for multiples of the odd
    g; Newton's iteration, 4 steps from 5 bits: no 64-bit divisions)."""
    wo, ws, wn = w
    ga, gb, last, low, live = rw[0], rw[1], rw[2], rw[3], rw[4]
    for i in range(n):
        live[i] = 0
    for j in range(vo.shape[0]):
        for i in range(n):
            live[i] |= vo[j, i]
    bad = False
    for i in range(n):  # a neuron without λ (a = 0) or dead (v = 0); b's column
        x, rl = wo[i, m], low[i]
        low[i] = min(rl, ws[i, m] if x != 0 else rl)
        last[i] = m if x != 0 else last[i]
        bad |= (lam[i] >= m) | (live[i] == 0)
    if bad:
        return False
    for i in range(n):
        ga[i], gb[i] = wo[i, lam[i]], wo[i, last[i]]
    lockstep_gcds(ga, gb, n)
    u = _gcds(wo, C, lam, ga, gb)
    big = 0
    for i in range(n):
        p, lo = lam[i], low[i]
        flip = wn[i, p]
        lam[i] = ~p if flip else p
        for j in range(C):  # no branch on the data: vector lanes (0 has o = 0 and no sign)
            x = wo[i, j]
            d = ws[i, j] - lo if x != 0 else 0
            big |= x >> max(63 - d, 0)  # nonzero when x·2^d needs more than 63 bits
            mag[i, j], sg[i, j] = x << min(d, 63), wn[i, j] ^ (flip & (x != 0))
    for t in range(u):  # ÷ g: × g's inverse modulo 2^64 (3g ^ 2 is one to 5 bits; each step doubles them)
        i = gb[t]
        g = ga[i]
        x = (3 * g) ^ 2
        for _ in range(4):
            x *= 2 - g * x
        for j in range(C):
            mag[i, j] *= x
    return big == 0


def _key_typing(typingctx: Any, x: Any) -> Any:
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i64 = ir.IntType(64)
        swapped = builder.call(builder.module.declare_intrinsic("llvm.bswap", [i64]), [args[0]])
        return builder.trunc(builder.lshr(swapped, ir.Constant(i64, 32)), ir.IntType(32))

    return types.uint32(types.int64), codegen


_key: Any = intrinsic(_key_typing)
_key.__doc__ = """_key(x): the first 4 of the int64 x's 8 little-endian bytes read as a big-endian uint32 (keys
compare as those bytes do; LLVM's bswap)."""


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


@flat
def _keys(mag: Any, n: int, keys: Any, ranks: Any) -> None:
    """The rows' keys (the first 4 bytes of their first entry, as uint32) and, up to ``_RANKS`` rows, their order
    by the keys in ``ranks`` (each row's rank by counting: n² compares in vector lanes, no allocation; equal keys
    in any order, settled by :func:`_runs`)."""
    for i in range(n):
        keys[i] = _key(mag[i, 0])
    if n > _RANKS:
        return
    for i in range(n):
        ranks[i] = -1
    for i in range(n):
        x = keys[i]
        r = 0
        for j in range(n):
            r += keys[j] < x
        while ranks[r] >= 0:  # equal keys: the next free place
            r += 1
        ranks[r] = i


@flat
def _runs(mag: Any, sg: Any, C: int, keys: Any, order: Any) -> bool:
    """Each run of equal keys in ``order`` sorted by the whole rows' bytes (insertion: runs are short); False
    when two rows are equal (one class)."""
    n = order.size
    r0 = 0
    while r0 < n:
        r1 = r0 + 1
        while r1 < n and keys[order[r1]] == keys[order[r0]]:
            r1 += 1
        for u in range(r0 + 1, r1):
            x = order[u]
            v = u - 1
            while v >= r0:
                c = _compare(mag, sg, order[v], x, C)
                if c == 0:
                    return False
                if c < 0:
                    break
                order[v + 1] = order[v]
                v -= 1
            order[v + 1] = x
        r0 = r1
    return True


@jit
def _order(mag: Any, sg: Any, n: int, C: int, keys: Any, ranks: Any) -> Any:
    """The order of the rows by their bytes; empty when two rows are equal (one class).  Sorted by the first 4
    bytes of their first entry (uint32 keys; :func:`_keys`, np.argsort beyond ``_RANKS`` rows), then each run
    of equal keys by the whole rows (:func:`_runs`)."""
    _keys(mag, n, keys, ranks)
    order = ranks[:n] if n <= _RANKS else np.argsort(keys[:n])
    return order if _runs(mag, sg, C, keys, order) else order[:0]


@flat
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
            add_product(acc, x, y, 0, vn[j, i])
            split_words(acc, 5, ws[i, p] + vs[j, i], e, t, pn, plen, pw)


@jit
def stack_bytes(
    V: Any, A: Any, b: Any, c: Any, start: int, out: Any, offs: Any, flag: Any, sha: Any, digests: Any
) -> int:
    """The encodings of networks start, start + 1, … of the stack (V: B×k×n, A: B×n×m, b: B×n, c: B×k, float32
    or float64, C-contiguous) written one after the other into ``out`` from 0: network start + u's bytes are
    out[offs[u]:offs[u + 1]] (empty, and flag set, for a network the kernel leaves).  Returns the index of the
    first network not done (B when all are): the buffer is full, or (when none was done) too small for it, whose
    size is then offs[0].

    With ``sha`` (0, 0, 0) the bytes are left in ``out`` for the caller to hash.  Else each network's SHA-256
    goes into digests[bi] (B×32 bytes) while its bytes are still in the cache, and later networks overwrite them
    (offs then holds empty slices): with ``sha`` (1, 0, 0) by :mod:`relusym._zoo._jit_sha`, 16 networks at once
    (each network's bytes padded in place, the next network's after them; hashed when 16 are written, when the
    buffer is full, and at the end), with the addresses of OpenSSL's ``SHA256_Init``, ``_Update``, ``_Final``
    one network at a time."""
    B, n, m = A.shape
    k = V.shape[1]
    C = m + 1
    wo, ws, wn = np.empty((n, C), np.int64), np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    vo, vs, vn = np.empty((k, n), np.int64), np.empty((k, n), np.int64), np.empty((k, n), np.int64)
    co, cs, cn = np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.int64)
    mag, sg = np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    lam, keys, ranks = np.empty(n, np.int64), np.empty(n, np.uint32), np.empty(n, np.int64)
    rw = np.empty((5, n), np.int64)
    acc = np.zeros(MAX_WORDS + 2, np.int64)
    kin = (np.empty(n * k, np.int64), np.empty(n * k, np.int64), np.empty(n * k, np.int64),
           np.zeros((6, n * k), np.int64))  # fmt: skip
    aff = (np.empty(k * C, np.int64), np.empty(k * C, np.int64), np.empty(k * C, np.int64),
           np.zeros((MAX_WORDS + 2, k * C), np.int64))  # fmt: skip
    work = affine_work(n, k, C)
    together = sha[0] == 1  # 16 networks' SHA-256 at once
    lanes = lane_work()
    count = 0  # networks written and padded, not hashed yet (together)
    pos = 0
    for bi in range(start, B):
        u = bi - start
        offs[u] = pos
        offs[u + 1] = pos
        ok, eW, tW, eV, tV = _read(A, b, V, c, bi, (wo, ws, wn), (vo, vs, vn), (co, cs, cn), lam, rw)
        ok = ok and _rows((wo, ws, wn), vo, n, C, m, mag, sg, lam, rw)
        order = _order(mag, sg, n, C, keys, ranks) if ok else lam[:0]
        raw, cv, bounds = (A, b, V), (co, cs, cn), (eW, tW, eV, tV)
        if order.size == 0 or not affine(raw, bi, lam, (wo, ws, wn), (vo, vs, vn), cv, acc, aff, work, bounds):
            flag[bi] = True
            continue
        _kinks(order, lam, wo, ws, vo, vs, vn, acc, kin)
        size, w = encoded_size(mag, n, C, k, m, kin, aff)
        if together and count > 0 and pos + size + 80 > out.size:  # the written ones hashed: room from 0
            hash_lanes(out, count, lanes, digests)
            count, pos = 0, 0
            offs[u], offs[u + 1] = 0, 0
        if pos + size + 80 > out.size:  # 8 bytes for the last store's excess, 72 for SHA-256's padding
            if u == 0:
                offs[0] = size + 80
            return int(bi)
        end = write_network(out, pos, (k, m), (mag, sg), order, w, kin, aff)
        if together:
            blocks = pad(out, pos, end - pos)
            lanes[0][0, count], lanes[0][1, count], lanes[0][2, count] = pos, blocks, bi
            count += 1
            end = pos + 64 * blocks
            if count == LANES:
                hash_lanes(out, count, lanes, digests)
                count, end = 0, 0
            offs[u + 1] = offs[u]
        elif sha[0] != 0:
            sha256_into(sha, out, pos, end - pos, digests, bi)
            end = pos
            offs[u + 1] = end
        else:
            offs[u + 1] = end
        pos = end
    if count > 0:
        hash_lanes(out, count, lanes, digests)
    return int(B)
