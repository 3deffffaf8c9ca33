"""The byte writer of the zoo digests' compiled kernel (:mod:`relusym._zoo._jit_kernel`), and the numba tools both
share: the relusym.nf/2 encoding of one network (header, the hyperplane block, the rational blocks of κ, M and
e, exactly as :mod:`relusym._core.digest` defines them) from its integers, with unaligned 8-byte stores (each
field's excess bytes are overwritten by the next field) and sign bits packed without branches on the data.

Imported only when numba is importable (the optional extra ``relusym[fast]``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.core import cpu as _cpu
from numba.cpython.unsafe import numbers as _unsafe
from numba.extending import intrinsic

__all__ = [
    "jit",
    "flat",
    "inline",
    "trailing_zeros",
    "leading_zeros",
    "float_bits",
    "lshr",
    "ult",
    "madd128",
    "nbytes",
    "encoded_size",
    "write_network",
    "sha256_into",
    "gcd_odd",
    "gcd_with",
    "lockstep_gcds",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def _stamp() -> tuple[tuple[str, float, int], ...]:
    """The modification times and sizes of the kernel's four source files."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for name in ("_jit_bytes.py", "_jit_sums.py", "_jit_sha.py", "_jit_kernel.py"):
        try:
            st = os.stat(os.path.join(here, name))
        except OSError:
            out.append((name, 0.0, -1))
        else:
            out.append((name, st.st_mtime, st.st_size))
    return tuple(out)


_STAMP = _stamp()


def _stamped(d: _F) -> _F:
    """``d`` with its numba cache keyed by all four kernel files, not only its own.  numba keeps a cached
    function valid while its own file's time and size are unchanged, and its compiled code includes the helpers it
    calls from the other files; a change to one of those would otherwise load stale code (numba's private
    ``IndexDataCacheFile._source_stamp``; without it, numba's own stamp)."""
    cache_file = getattr(getattr(d, "_cache", None), "_cache_file", None)
    if cache_file is not None and hasattr(cache_file, "_source_stamp"):
        cache_file._source_stamp = _STAMP
    return d


def jit(f: _F) -> _F:
    """numba's compiled function, cached on disk (a later process loads it), without the GIL."""
    return _stamped(cast(_F, numba.njit(cache=True, nogil=True)(f)))


_NRT_FLAG = hasattr(_cpu.CPUTargetOptions, "_nrt")  # numba's private option of :func:`flat`


def flat(f: _F) -> _F:
    """numba's compiled function without reference counts (numba's private ``_nrt`` flag off, numba ≥ 0.59 has
    it): for a function that allocates nothing and whose helpers are inlined.  With them, each array argument of
    an inlined helper and each array unpacked from a tuple pays an atomic increment and decrement (a call into
    numba's runtime), which the byte writer would pay dozens of times a network.  A numba without the flag gets
    :func:`jit` (the same results, with the reference counts)."""
    if not _NRT_FLAG:
        return jit(f)
    return _stamped(cast(_F, cast(Any, numba.njit)(cache=True, nogil=True, _nrt=False)(f)))  # _nrt: not in stubs


def inline(f: _F) -> _F:
    """A helper of the inner loops, inlined into its callers by numba (a call that passes an array pays two
    atomic reference-count updates)."""
    return _stamped(cast(_F, numba.njit(cache=True, nogil=True, inline="always")(f)))


trailing_zeros: Any = _unsafe.trailing_zeros  # LLVM's cttz and ctlz (untyped for mypy)
_alloca_once: Any = cgutils.alloca_once  # numba's helpers below untyped for mypy too
_UniTuple: Any = types.UniTuple
leading_zeros: Any = _unsafe.leading_zeros


def _bitcast_codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
    return builder.bitcast(args[0], ir.IntType(64))


def _bitcast_typing(typingctx: Any, x: Any) -> Any:
    return types.int64(types.float64), _bitcast_codegen


float_bits: Any = intrinsic(_bitcast_typing)
float_bits.__doc__ = """float_bits(x): the bits of the float64 x as an int64."""


def _lshr_typing(typingctx: Any, x: Any, s: Any) -> Any:
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.lshr(args[0], args[1])

    return types.int64(types.int64, types.int64), codegen


def _ult_typing(typingctx: Any, x: Any, y: Any) -> Any:
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.zext(builder.icmp_unsigned("<", args[0], args[1]), ir.IntType(64))

    return types.int64(types.int64, types.int64), codegen


def _madd128_typing(typingctx: Any, hi: Any, lo: Any, x: Any, y: Any, sh: Any, neg: Any) -> Any:
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i128 = ir.IntType(128)
        wide = [builder.zext(a, i128) for a in args[:5]]
        acc = builder.or_(builder.shl(wide[0], ir.Constant(i128, 64)), wide[1])
        p = builder.shl(builder.mul(wide[2], wide[3]), builder.and_(wide[4], ir.Constant(i128, 127)))
        acc = builder.select(builder.trunc(args[5], ir.IntType(1)), builder.sub(acc, p), builder.add(acc, p))
        h = builder.trunc(builder.lshr(acc, ir.Constant(i128, 64)), ir.IntType(64))
        return context.make_tuple(builder, signature.return_type, [h, builder.trunc(acc, ir.IntType(64))])

    i64 = types.int64
    return _UniTuple(i64, 2)(i64, i64, i64, i64, i64, i64), codegen


lshr: Any = intrinsic(_lshr_typing)
lshr.__doc__ = """lshr(x, s): the int64 x's bits shifted right by s (0 ≤ s ≤ 63), zeros shifted in (x read unsigned)."""
ult: Any = intrinsic(_ult_typing)
madd128: Any = intrinsic(_madd128_typing)
madd128.__doc__ = """madd128(hi, lo, x, y, s, neg): the 128-bit two's complement integer (hi, lo) (lo's bits
read unsigned) plus x·y·2^(s mod 128), minus it when neg's low bit is set, wrapping modulo 2^128 (LLVM's i128:
a multiply, a shift and an add or subtract, no branches); x, y ≥ 0."""
ult.__doc__ = """ult(x, y): 1 when the int64 x < y read as unsigned 64-bit integers, else 0."""


def _sha_typing(typingctx: Any, fns: Any, src: Any, pos: Any, n: Any, dst: Any, row: Any) -> Any:
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i8p = ir.IntType(8).as_pointer()
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        ctx = _alloca_once(builder, ir.ArrayType(i64, 16))  # a SHA256_CTX (112 bytes), in the entry block
        cp = builder.bitcast(ctx, i8p)
        init, update, final = (builder.extract_value(args[0], q) for q in range(3))
        sa = context.make_array(signature.args[1])(context, builder, args[1])
        da = context.make_array(signature.args[4])(context, builder, args[4])
        f_init = builder.inttoptr(init, ir.FunctionType(i32, [i8p]).as_pointer())
        f_update = builder.inttoptr(update, ir.FunctionType(i32, [i8p, i8p, i64]).as_pointer())
        f_final = builder.inttoptr(final, ir.FunctionType(i32, [i8p, i8p]).as_pointer())
        sp = builder.gep(builder.bitcast(sa.data, i8p), [args[2]])
        dp = builder.gep(builder.bitcast(da.data, i8p), [builder.mul(args[5], ir.Constant(i64, 32))])
        builder.call(f_init, [cp])
        builder.call(f_update, [cp, sp, args[3]])
        builder.call(f_final, [dp, cp])
        return context.get_dummy_value()

    sig = types.void(_UniTuple(types.int64, 3), src, types.int64, types.int64, dst, types.int64)
    return sig, codegen


sha256_into: Any = intrinsic(_sha_typing)
sha256_into.__doc__ = """sha256_into(fns, src, pos, n, dst, row): OpenSSL's low-level ``SHA256_Init``,
``SHA256_Update`` and ``SHA256_Final`` (their addresses in the tuple ``fns``) on src[pos:pos + n] (a uint8 array)
with a context on the stack, the 32 bytes of the digest into dst[row] (a C-contiguous uint8 array of rows of 32
bytes).  Not the one-shot ``SHA256``: OpenSSL 3 looks the algorithm up by name on each call of that one (about
1 µs).  The addresses are an argument, not constants of the compiled code, so that numba's cache stays valid
from process to process."""


@inline
def nbytes(x: int) -> int:
    """Bytes of |x| up to its last nonzero byte (0 for 0)."""
    if x < 0:
        x = -x
    if x == 0:
        return 0
    return int((64 - leading_zeros(x) + 7) >> 3)


@inline
def gcd_odd(a: int, b: int) -> int:
    """gcd of two odd positive integers (binary, without branches on the data: the difference's odd part and
    the smaller of the two)."""
    while a != b:
        d = a - b
        b = min(a, b)
        a = abs(d) >> trailing_zeros(d)
    return a


@flat
def lockstep_gcds(ga: Any, gb: Any, n: int) -> None:
    """ga[i] = gcd(ga[i], gb[i]) for odd positive pairs, all rows in lockstep: passes of 8 binary-gcd steps over
    every row, each row's steps in registers (vector lanes, no branch on the data; a finished pair (a, a) stays
    put), until every pair is finished (each step halves a·b: at most 106 steps for 53-bit odd parts)."""
    while True:
        done = True
        for i in range(n):
            a, b = ga[i], gb[i]
            for _ in range(8):
                d = a - b
                ad = abs(d)
                a, b = (ad >> trailing_zeros(ad | (1 << 62))) if d != 0 else a, min(a, b)
            ga[i], gb[i] = a, b
            done &= a == b
        if done:
            return


@inline
def gcd_with(g: int, x: int) -> int:
    """gcd(g, x) for odd positive g and x ≥ 0: one remainder, then the binary gcd of two numbers below g (g is
    small when it is not 1: the binary gcd of g and a large x would take a step per bit of x)."""
    r = x % g
    if r == 0:
        return g
    return gcd_odd(g, r >> trailing_zeros(r))


def _store_codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
    ary = context.make_array(signature.args[0])(context, builder, args[0])
    ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(64).as_pointer())
    builder.store(context.cast(builder, args[2], signature.args[2], types.int64), ptr, align=1)
    return context.get_dummy_value()


def _store_typing(typingctx: Any, arr: Any, pos: Any, val: Any) -> Any:
    return types.void(arr, pos, val), _store_codegen


_store: Any = intrinsic(_store_typing)


_ONES = 0x0101010101010101  # eight bytes of 1: the q's of a rational block
_MAGIC = (int.from_bytes(b"relusym.", "little"), int.from_bytes(b"nf/2\n", "little"))  # 13 bytes, two stores


@inline
def _widths(t: Any, plen: Any, blk: Any) -> tuple[int, int]:
    """The widths of the t block and the p block of the entries of ``blk`` (e0, R, Lr, stride: the entries
    e0 + r·stride + l for r < R, l < Lr, in that order): the bytes of the OR of the |t| (its top bit is the
    largest one's) and the largest p length, reductions without branches."""
    e0, R, Lr, stride = blk
    ot, wp = 0, 1
    for r in range(R):
        e = e0 + r * stride
        for u in range(Lr):
            x = t[e + u]
            ot |= x if x >= 0 else -x
            wp = max(wp, plen[e + u])
    return max(nbytes(ot), 1), wp


@inline
def _blocks(n: int, C: int, k: int, m: int) -> tuple[Any, Any, Any]:
    """The entries of the rational blocks of κ (all n·k, in one run), of M (k rows of m, C apart) and of e (the
    last entry of each of the k rows of C), as ``blk`` tuples (e0, R, Lr, stride)."""
    return (0, 1, n * k, 0), (0, k, m, C), (m, k, 1, C)


@inline
def _push(acc: int, nb: int, v: int, c: int) -> tuple[int, int, int, int]:
    """A bit field under construction (its nb < 64 pending bits in ``acc``, least significant first) with the
    c ≤ 64 bits v appended: (the word to store at the field's current 8 bytes, the new pending bits, their
    count, 1 when the word is full: the next word's turn).  The caller stores the word every time (a store
    rather than a branch on the data); without arrays, so that it costs no reference counts."""
    word = acc | (v << nb)
    nb += c
    full = nb >> 6
    nb &= 63
    rest = lshr(lshr(v, (c - nb - 1) & 63), 1)  # v's bits past a full word: a shift by c − nb ∈ [1, 64]
    return word, rest if full else word, nb, full


@inline
def _sign_bits(out: Any, pos: int, vals: Any, blk: Any, below: bool) -> int:
    """The bits [vals[e] < 0] (``below``) or [vals[e] != 0] of the entries e of ``blk``, packed at pos, least
    significant bit first: up to 64 of a run at a time (an OR of shifted bits, vector lanes), appended to the
    field (:func:`_push`); returns the end (the last store's excess is overwritten by the next field)."""
    e0, R, Lr, stride = blk
    acc, nb, h = 0, 0, 0
    for r in range(R):
        e = e0 + r * stride
        for q in range((Lr + 63) >> 6):  # not range(0, Lr, 64): numba's stepped range is slow
            c0 = q << 6
            c = min(Lr - c0, 64)
            v = 0
            for u in range(c):
                x = vals[e + c0 + u]
                v |= ((x < 0) if below else (x != 0)) << u
            word, acc, nb, full = _push(acc, nb, v, c)
            _store(out, pos + 8 * h, word)
            h += full
    _store(out, pos + 8 * h, acc)
    return int(pos + (R * Lr + 7) // 8)


@flat
def _wide(out: Any, pos: int, wp: int, pw: Any, plen: Any, blk: Any) -> None:
    """The p block's magnitudes when some p has more than 8 bytes: 8 at a time, entry after entry."""
    e0, R, Lr, stride = blk
    for r in range(R):
        for u in range(Lr):
            e = e0 + r * stride + u
            rest = plen[e]
            at = pos + (r * Lr + u) * wp
            for ch in range((wp + 7) >> 3):
                x = pw[2 * ch, e] | (pw[2 * ch + 1, e] << 32) if rest > 0 else 0
                if rest < 8:
                    x &= (1 << (8 * max(rest, 0))) - 1
                _store(out, at + 8 * ch, x)
                rest -= 8


@inline
def _rational(out: Any, pos: int, ent: Any, blk: Any, wt: int, wp: int) -> int:
    """The rational block of the entries of ``blk`` (widths wt, wp from :func:`_widths`): the integer blocks
    of the t's, the p's and the q's (ones).  Magnitudes first (8-byte stores, each overwriting the last one's
    excess), then the sign bits; the q's ones and zero signs by 8-byte stores too (no slices: a view each)."""
    t, pn, plen, pw = ent
    e0, R, Lr, stride = blk
    L = R * Lr
    _store(out, pos, wt)
    pos += 4
    for r in range(R):
        for u in range(Lr):
            x = t[e0 + r * stride + u]
            _store(out, pos + (r * Lr + u) * wt, -x if x < 0 else x)
    end = _sign_bits(out, pos + L * wt, t, blk, True)
    _store(out, end, wp)
    pos = end + 4
    if wp <= 8:  # one store per p (its words beyond plen may be stale: masked off)
        for r in range(R):
            for u in range(Lr):
                e = e0 + r * stride + u
                rest = plen[e]
                keep = ((1 << (8 * min(rest, 7))) - 1) | -(rest >= 8)
                _store(out, pos + (r * Lr + u) * wp, (pw[0, e] | (pw[1, e] << 32)) & keep)
    else:
        _wide(out, pos, wp, pw, plen, blk)
    end = _sign_bits(out, pos + L * wp, pn, blk, False)
    _store(out, end, 1)
    pos = end + 4
    for u in range((L + 7) >> 3):
        _store(out, pos + 8 * u, _ONES)
    pos += L
    nz = (L + 7) >> 3
    for u in range((nz + 7) >> 3):
        _store(out, pos + 8 * u, 0)
    return int(pos + nz)


@flat
def encoded_size(mag: Any, n: int, C: int, k: int, m: int, kin: Any, aff: Any) -> tuple[int, Any]:
    """(bytes of the encoding, its widths for :func:`write_network`: the hyperplane block's w, then (wt, wp) of
    the rational blocks of κ, M and e)."""
    om = 0
    every = mag.reshape(n * C)  # one run (vector lanes; rows of a few entries each are not)
    for u in range(n * C):
        om |= every[u]  # magnitudes ≥ 0: the OR's top bit is the largest one's
    w = max(nbytes(om), 1)
    bk, bm, be = _blocks(n, C, k, m)
    tk, pk = _widths(kin[0], kin[2], bk)
    tm, pm = _widths(aff[0], aff[2], bm)
    te, pe = _widths(aff[0], aff[2], be)
    size = 41 + n * C * w + (n * C + 7) // 8
    for L, wt, wp in ((n * k, tk, pk), (k * m, tm, pm), (k, te, pe)):
        size += 12 + L * (wt + wp + 1) + 3 * ((L + 7) // 8)
    return size, (w, tk, pk, tm, pm, te, pe)


@flat
def write_network(out: Any, pos: int, head: Any, rows: Any, order: Any, w: Any, kin: Any, aff: Any) -> int:
    """The bytes of one network at pos (its size and widths ``w`` from :func:`encoded_size`); returns the end.
    One call per network: everything below is inlined (a call that passes arrays pays atomic reference-count
    updates)."""
    mag, sg = rows
    n, C = mag.shape
    k, m = head
    wh = w[0]
    _store(out, pos, _MAGIC[0])
    _store(out, pos + 8, _MAGIC[1])
    _store(out, pos + 13, m)
    _store(out, pos + 21, k)
    _store(out, pos + 29, n)
    _store(out, pos + 37, wh)
    pos += 41
    for r in range(n):
        i = order[r]
        for j in range(C):
            _store(out, pos + (r * C + j) * wh, mag[i, j])
    pos += n * C * wh
    acc, nb, h = 0, 0, 0  # the sign bits in block order: up to 64 of a row at a time (as in :func:`_sign_bits`)
    for r in range(n):
        i = order[r]
        for q in range((C + 63) >> 6):
            c0 = q << 6
            c = min(C - c0, 64)
            v = 0
            for u in range(c):
                v |= sg[i, c0 + u] << u
            word, acc, nb, full = _push(acc, nb, v, c)
            _store(out, pos + 8 * h, word)
            h += full
    _store(out, pos + 8 * h, acc)
    pos += (n * C + 7) // 8
    bk, bm, be = _blocks(n, C, k, m)
    pos = _rational(out, pos, kin, bk, w[1], w[2])
    pos = _rational(out, pos, aff, bm, w[3], w[4])
    return _rational(out, pos, aff, be, w[5], w[6])
