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
from collections.abc import Iterable, Sequence
from fractions import Fraction
from math import gcd

import numpy as np

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
# batched encoders (zoo)
#
# The same blocks for G byte layouts at once: every row of an input describes one digest's sequence of L
# integers (all rows of a call have the same L and the same width w), so a block is a few columns of one uint8
# matrix.  Magnitudes are given as their little-endian bytes (a uint8 axis, at least w long), which is what
# ``x.astype("<u8").view(np.uint8)`` or ``digits.astype("<u2").view(np.uint8)`` gives for limbs or base-2¹⁶
# digits.  The zoo's stack digests (relusym/_zoo/_digest.py) build their bytes from these.

__all__ += ["byte_widths", "int_block_rows", "dyadic_block_rows", "odd_part_digits"]


def byte_widths(mag: np.ndarray) -> np.ndarray:
    """Bytes of each magnitude up to its last nonzero byte (0 for zero): ``mag`` is (..., nbytes) uint8,
    little-endian; the result has shape ``mag.shape[:-1]``.  The width of a block is max(1, max of these)."""
    nb = mag.shape[-1]
    nz = mag != 0
    last = nb - np.argmax(nz[..., ::-1], axis=-1)
    return np.where(nz.any(axis=-1), last, 0).astype(np.int64)


def int_block_rows(mag: np.ndarray, neg: np.ndarray, w: int) -> np.ndarray:
    """G integer blocks at once: ``mag`` (G, L, ≥ w) uint8 little-endian magnitudes (each below 2^(8w)), ``neg``
    (G, L) bool the signs; returns (G, 4 + L·w + ⌈L/8⌉) uint8, row g the bytes of :func:`int_block` of row g."""
    G, L = neg.shape
    head = np.broadcast_to(np.frombuffer(struct.pack("<I", w), dtype=np.uint8), (G, 4))
    body = (mag if mag.shape[2] == w else mag[:, :, :w]).reshape(G, L * w)
    signs = np.packbits(neg.astype(bool), axis=1, bitorder="little")
    return np.concatenate([head, body, signs], axis=1)


def dyadic_block_rows(t: np.ndarray, tneg: np.ndarray, p: np.ndarray, neg: np.ndarray, wt: int, wp: int) -> np.ndarray:
    """G rational blocks of dyadic rationals x = 2^t · p (p odd, or x = 0 with t = 0 and p = 0, so q = 1): ``t``
    (G, L, ≥ wt) and ``p`` (G, L, ≥ wp) uint8 the little-endian bytes of |t| and |p|, ``tneg`` and ``neg`` (G, L)
    their signs; ``wt`` and ``wp`` the widths of the t and p blocks.  Row g is :func:`rational_block` of row g's
    rationals."""
    G, L = neg.shape
    q = np.broadcast_to(
        np.frombuffer(struct.pack("<I", 1) + b"\x01" * L + b"\x00" * ((L + 7) // 8), dtype=np.uint8),
        (G, 4 + L + (L + 7) // 8),
    )
    return np.concatenate([int_block_rows(t, tneg, wt), int_block_rows(p, neg, wp), q], axis=1)


def odd_part_digits(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 2-adic split of nonnegative integers given as base-2¹⁶ digits: ``D`` (J, X) int64, digit j of number
    x in [0, 2¹⁶) with weight 2^(16 j) (one number per column).  Returns (s, P): s[x] the number of trailing
    zero bits of number x (−1 for zero) and P (J, X) the digits of number x shifted right by s[x] bits (its odd
    part; 0 for zero)."""
    J, X = D.shape
    s = np.full(X, -1, dtype=np.int64)
    P = np.zeros((J, X), dtype=np.int64)
    if X == 0 or J == 0:
        return s, P
    common = D[0] != 0  # the lowest digit is nonzero: shift by its trailing zeros only
    rare = np.nonzero(~common)[0]
    low = D[0] | ~common
    tz = ((low & -low).astype(np.float64).view(np.int64) >> 52) - 1023
    up = 16 - tz
    for j in range(J - 1):
        P[j] = (D[j] >> tz) | ((D[j + 1] << up) & 0xFFFF)
    P[J - 1] = D[J - 1] >> tz
    s[:] = tz
    if rare.size:  # a zero lowest digit: shift whole digits first (or the number is 0)
        Dr = D[:, rare]
        nz = Dr != 0
        j0 = np.argmax(nz, axis=0)
        lo = Dr[j0, np.arange(rare.size)]
        lo_bit = (lo & -lo) | (lo == 0)
        tzr = (lo_bit.astype(np.float64).view(np.int64) >> 52) - 1023
        idx = np.arange(J)[:, None] + j0[None, :]
        cur = np.take_along_axis(Dr, np.minimum(idx, J - 1), axis=0) * (idx < J)
        nxt = np.take_along_axis(Dr, np.minimum(idx + 1, J - 1), axis=0) * (idx + 1 < J)
        P[:, rare] = (cur >> tzr) | ((nxt << (16 - tzr)) & 0xFFFF)
        s[rare] = np.where(nz.any(axis=0), 16 * j0 + tzr, -1)
    return s, P
