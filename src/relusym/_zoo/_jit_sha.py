"""SHA-256 of 16 messages at once, for the zoo digests' compiled kernel (:mod:`relusym._zoo._jit_kernel`).

The kernel writes the relusym.nf/2 bytes of up to ``LANES`` networks one after the other into its buffer, each
followed by SHA-256's padding (:func:`pad`), then :func:`hash_lanes` runs FIPS 180-4's compression on all of them
in lockstep: message i in lane i of 32-bit vectors (LLVM vector IR written out by :func:`_compress`, one block of
every lane per call; a lane whose message has fewer blocks keeps its state).  Hashing one message after another
is a chain of dependent rounds; 16 independent lanes fill the vector units instead (on this project's x86 machine
the rotations are single AVX-512 instructions and the three-input functions one ``vpternlogd`` each): 1.6–2.0 µs
for a 3,544-byte message against 3.7–4.2 µs for one call of hashlib's OpenSSL (SHA-NI) on it, measured side by
side.  The digests are those of :mod:`hashlib` (the tests compare random lengths up to 5,000 bytes and the
padding's boundaries 55, 56, 63, 64, 65, 119, 120 and 128, in groups of 1 to 16 messages).

Imported only when numba is importable (the optional extra ``relusym[fast]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from relusym._zoo._jit_bytes import flat, inline, jit

__all__ = ["LANES", "hash_lanes", "lane_work", "pad"]

LANES = 16  # messages hashed together (two 256-bit vectors per step on AVX-512 machines: two dependency chains)

_K = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip
_H0 = np.array(
    [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19], np.uint32
)


def _transpose(builder: Any, rows: list[Any]) -> list[Any]:
    """The N×N transpose of N vectors of N lanes (N a power of two) by shuffles: for s = N/2, …, 1 the rows i and
    i + s (i without the bit s) exchange their blocks of s lanes."""
    n = len(rows)
    r = list(rows)
    vt = rows[0].type
    s = n // 2
    while s >= 1:
        first = ir.Constant(ir.VectorType(ir.IntType(32), n), [p if not p & s else n + p - s for p in range(n)])
        second = ir.Constant(ir.VectorType(ir.IntType(32), n), [p + s if not p & s else n + p for p in range(n)])
        for i in range(n):
            if not i & s:
                j = i + s
                r[i], r[j] = builder.shuffle_vector(r[i], r[j], first), builder.shuffle_vector(r[i], r[j], second)
        s //= 2
    assert all(x.type == vt for x in r)
    return r


def _declare(module: Any, fnty: Any, name: str) -> Any:
    """The LLVM function ``name`` of ``module`` (an intrinsic), declared when it is not yet."""
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)


def _compress_typing(typingctx: Any, buf: Any, offs: Any, state: Any, live: Any) -> Any:
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i32, i64 = ir.IntType(32), ir.IntType(64)
        v = ir.VectorType(i32, LANES)
        vp = v.as_pointer()
        data = [context.make_array(t)(context, builder, a).data for t, a in zip(signature.args, args, strict=True)]
        base = builder.bitcast(data[0], ir.IntType(8).as_pointer())
        op, sp, lp = builder.bitcast(data[1], i64.as_pointer()), builder.bitcast(data[2], vp), data[3]
        fshr = _declare(builder.module, ir.FunctionType(v, [v, v, v]), f"llvm.fshr.v{LANES}i32")
        bswap = _declare(builder.module, ir.FunctionType(v, [v]), f"llvm.bswap.v{LANES}i32")

        def const(x: int) -> Any:
            return ir.Constant(v, [x & 0xFFFFFFFF] * LANES)

        def rotr(x: Any, s: int) -> Any:
            return builder.call(fshr, [x, x, const(s)])

        xor, add, and_ = builder.xor, builder.add, builder.and_
        # the block of each lane: 16 big-endian words at buf[offs[l]:], as LANES/16 vectors per lane, transposed
        # so that vector t holds word t of every lane
        per = 16 // LANES  # LANES is 8 or 16
        rows: list[list[Any]] = [[] for _ in range(per)]
        for lane in range(LANES):
            p = builder.gep(base, [builder.load(builder.gep(op, [ir.Constant(i32, lane)]))])
            for q in range(per):
                x = builder.load(builder.bitcast(builder.gep(p, [ir.Constant(i32, 4 * LANES * q)]), vp), align=1)
                rows[q].append(builder.call(bswap, [x]))
        W = [w for q in range(per) for w in _transpose(builder, rows[q])]
        for t in range(16, 64):
            x, y = W[t - 15], W[t - 2]
            s0 = xor(xor(rotr(x, 7), rotr(x, 18)), builder.lshr(x, const(3)))
            s1 = xor(xor(rotr(y, 17), rotr(y, 19)), builder.lshr(y, const(10)))
            W.append(add(add(W[t - 16], s0), add(W[t - 7], s1)))
        S = [builder.load(builder.gep(sp, [ir.Constant(i32, j)]), align=4) for j in range(8)]
        a, b, c, d, e, f, g, h = S
        for t in range(64):
            s1 = xor(xor(rotr(e, 6), rotr(e, 11)), rotr(e, 25))
            ch = xor(and_(e, f), and_(builder.not_(e), g))
            t1 = add(add(add(h, s1), add(ch, const(_K[t]))), W[t])
            s0 = xor(xor(rotr(a, 2), rotr(a, 13)), rotr(a, 22))
            maj = xor(xor(and_(a, b), and_(a, c)), and_(b, c))
            h, g, f, e, d, c, b, a = g, f, e, add(d, t1), c, b, a, add(t1, add(s0, maj))
        mask = ir.Constant(v, ir.Undefined)
        for lane in range(LANES):
            x = builder.load(builder.gep(lp, [ir.Constant(i32, lane)]))
            mask = builder.insert_element(mask, builder.trunc(x, i32), ir.Constant(i32, lane))
        on = builder.icmp_signed("!=", mask, ir.Constant(v, [0] * LANES))
        for j, x in enumerate((a, b, c, d, e, f, g, h)):
            builder.store(builder.select(on, add(S[j], x), S[j]), builder.gep(sp, [ir.Constant(i32, j)]), align=4)
        return context.get_dummy_value()

    return types.void(buf, offs, state, live), codegen


_compress: Any = intrinsic(_compress_typing)
_compress.__doc__ = """_compress(buf, offs, state, live): one SHA-256 compression in each of the LANES lanes: the
64-byte block at buf[offs[l]:] into lane l's state (state: uint32[8·LANES], word j of lane l at j·LANES + l),
kept unchanged in the lanes where live[l] is 0 (buf uint8, offs int64[LANES], live int64[LANES])."""


@inline
def pad(buf: Any, pos: int, size: int) -> int:
    """SHA-256's padding after the message buf[pos:pos + size] (0x80, zeros, its length in bits as 8 big-endian
    bytes: up to 72 bytes after it, to a multiple of 64); returns its number of 64-byte blocks."""
    blocks = (size + 72) >> 6
    end = pos + 64 * blocks
    buf[pos + size] = 0x80
    for q in range(pos + size + 1, end - 8):
        buf[q] = 0
    bits = size * 8
    for j in range(8):
        buf[end - 1 - j] = (bits >> (8 * j)) & 255
    return blocks


@jit
def lane_work() -> tuple[Any, Any]:
    """Scratch arrays of :func:`hash_lanes`: lanes (int64, rows: the messages' starts, blocks, digest rows, the
    current offsets, whether live) and the state (uint32)."""
    return np.zeros((5, LANES), np.int64), np.zeros(8 * LANES, np.uint32)


@flat
def hash_lanes(buf: Any, count: int, work: Any, digests: Any) -> None:
    """SHA-256 of the ``count`` ≤ LANES padded messages (:func:`pad`) at buf[start_l:start_l + 64·blocks_l] into
    digests[row_l] (32 bytes each), lane l's start, blocks and row in work[0][0, l], [1, l], [2, l]."""
    lanes, state = work
    for j in range(8):
        for lane in range(LANES):
            state[j * LANES + lane] = _H0[j]
    most = 0
    for lane in range(count):
        most = max(most, lanes[1, lane])
    for t in range(most):
        for lane in range(LANES):
            on = lane < count and t < lanes[1, lane]
            lanes[4, lane] = on
            lanes[3, lane] = lanes[0, lane] + 64 * t if on else lanes[0, 0]
        _compress(buf, lanes[3], state, lanes[4])
    for lane in range(count):
        r = lanes[2, lane]
        for j in range(8):
            x = state[j * LANES + lane]
            digests[r, 4 * j], digests[r, 4 * j + 1] = x >> 24, (x >> 16) & 255
            digests[r, 4 * j + 2], digests[r, 4 * j + 3] = (x >> 8) & 255, x & 255
