"""Multi-limb exact integers (values modulo 2**(56 L)), Kronecker packing of integer rows, and word packing.

A row of an exact integer matrix is packed into one integer (its coordinates, made primitive and
shifted into disjoint bit ranges), stored as limbs of 56 bits in int64 arrays, so that a subset
of rows sums to zero iff its packed sum is zero modulo 2**(56 L).  Vectorised addition, negation,
bit windows, hashing, exact equi-joins and all subset sums of such values serve the
meet-in-the-middle and the generalized-birthday searches.

When every coordinate, made primitive, is narrow (the sum of its absolute values below 2**62, as for
float32 weights), the rows are packed as *words* instead: one unsigned 64-bit word per coordinate,
added with wrap-around.  A subset sum is then known modulo 2**64 in each coordinate, and since its
absolute value is below 2**63 that residue determines it: it is zero iff the word is zero.  No carry
crosses words, so addition is one machine add per coordinate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relusym._exact.subsets import subset_sums_by_doubling

__all__ = [
    "PackedLimbs",
    "PackedWords",
    "bits_key",
    "join_equal",
    "limb_subset_sums",
    "limbs_add",
    "limbs_neg",
    "pack",
    "pack_words",
    "two_adic",
    "words_key",
]

_LB = 56  # bits per limb of the exact multi-limb integers
_LMASK = (1 << _LB) - 1


def _limbs_norm(a: np.ndarray) -> np.ndarray:
    """Carry-normalise (in place) nonnegative limbs, modulo 2**(56 L)."""
    L = a.shape[1]
    for j in range(L - 1):
        carry = a[:, j] >> _LB
        a[:, j] &= _LMASK
        a[:, j + 1] += carry
    a[:, L - 1] &= _LMASK
    return a


def limbs_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _limbs_norm(a + b)


def limbs_neg(a: np.ndarray) -> np.ndarray:
    out = _LMASK - a
    out[:, 0] += 1
    return _limbs_norm(out)


def _to_limbs(values: Sequence[int], L: int) -> np.ndarray:
    mod = 1 << (_LB * L)
    out = np.zeros((len(values), L), dtype=np.int64)
    for i, v in enumerate(values):
        v %= mod
        for j in range(L):
            out[i, j] = v & _LMASK
            v >>= _LB
    return out


def bits_key(a: np.ndarray, lo: int, width: int) -> np.ndarray:
    """Bits [lo, lo+width) of each multi-limb value (width <= 56)."""
    j, off = divmod(lo, _LB)
    au = a.view(np.uint64)
    key = au[:, j] >> np.uint64(off)
    if off + width > _LB and j + 1 < a.shape[1]:
        key = key | (au[:, j + 1] << np.uint64(_LB - off))  # wraps modulo 2**64: only low bits kept
    return (key & np.uint64((1 << width) - 1)).astype(np.int64)


_HASH_MULT = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93] * 64, dtype=np.uint64
)


def _hash_rows(a: np.ndarray) -> np.ndarray:
    h = np.zeros(a.shape[0], dtype=np.uint64)
    au = a.view(np.uint64)
    for j in range(a.shape[1]):
        h ^= au[:, j] * _HASH_MULT[j]
        h = (h ^ (h >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
    return h


def join_equal(a: np.ndarray, b: np.ndarray, max_pairs: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Pairs (i, j) with a[i] == b[j] (rows of limbs, compared exactly).

    Returns (total number of pairs, ia, ib) with at most ``max_pairs`` pairs listed; the total
    is computed from run lengths, without listing every pair.
    """
    e = np.zeros(0, dtype=np.int64)
    if a.shape[0] == 0 or b.shape[0] == 0:
        return 0, e, e
    ha = _hash_rows(a)
    hb = _hash_rows(b)
    order = np.argsort(ha, kind="stable")
    hs = ha[order]
    sa = a[order]
    same_hash = hs[1:] == hs[:-1]
    if np.any(same_hash & np.any(sa[1:] != sa[:-1], axis=1)):
        # a hash collision inside ``a``: sort exactly (lexicographically) instead
        order = np.lexsort(a.T[::-1])
        sa = a[order]
        new_run = np.concatenate([[True], np.any(sa[1:] != sa[:-1], axis=1)])
        hs = np.cumsum(new_run).astype(np.uint64)  # run ids as "hashes" of a
        run_rows = sa[new_run]
        # exact lookup of b's rows among the runs
        pos = np.zeros(len(b), dtype=np.int64)
        found = np.zeros(len(b), dtype=bool)
        keyed = {row.tobytes(): k for k, row in enumerate(run_rows)}
        for j in range(len(b)):
            k = keyed.get(b[j].tobytes())
            if k is not None:
                pos[j], found[j] = k + 1, True
        hb = np.where(found, pos, 0).astype(np.uint64)
    lo = np.searchsorted(hs, hb, side="left")
    hi = np.searchsorted(hs, hb, side="right")
    hit = np.flatnonzero(hi > lo)
    if hit.size == 0:
        return 0, e, e
    # runs of equal hashes hold equal rows (checked above): compare one representative
    eq = np.all(sa[lo[hit]] == b[hit], axis=1)
    hit = hit[eq]
    cnt = (hi - lo)[hit]
    total = int(cnt.sum())
    # list the first max_pairs pairs
    take = np.searchsorted(np.cumsum(cnt), max_pairs, side="left") + 1
    hit_l, cnt_l = hit[:take], cnt[:take]
    starts = np.cumsum(cnt_l) - cnt_l
    within = np.arange(int(cnt_l.sum())) - np.repeat(starts, cnt_l)
    ia = order[np.repeat(lo[hit_l], cnt_l) + within]
    ib = np.repeat(hit_l, cnt_l)
    return total, ia[:max_pairs], ib[:max_pairs]


def limb_subset_sums(z: np.ndarray) -> np.ndarray:
    """All 2**h subset sums of the h rows of limbs z; index = bitmask of the subset."""
    start = np.zeros((1, z.shape[1]), dtype=np.int64)
    return subset_sums_by_doubling(start, z, lambda t, y: limbs_add(t, y[None, :]))


def two_adic(v: int) -> int:
    return (v & -v).bit_length() - 1


@dataclass
class PackedLimbs:
    """Rows of an exact integer matrix packed (Kronecker) into one integer each.

    Σ_{i∈T} z_i == 0 (as integers) iff Σ_{i∈T} X[i, cols] == 0, and the packed value is known
    modulo 2**(56 L) with |Σ z| < 2**(bits-1) <= 2**(56 L - 1), so equality modulo 2**(56 L)
    decides it.
    """

    limbs: np.ndarray  # (s, L) int64
    bits: int  # total number of significant bits to cancel
    scaled: list[list[int]]  # per-row scaled coordinates (for estimates)


def pack(rows_exact: np.ndarray) -> PackedLimbs:
    s = rows_exact.shape[0]
    cols, widths = _primitive_columns(rows_exact)
    total = sum(widths) + 1
    L = max(1, -(-total // _LB))
    packed = [0] * s
    off = 0
    for c, w in zip(cols, widths, strict=True):
        for i in range(s):
            packed[i] += c[i] << off
        off += w
    scaled = [[c[i] for c in cols] for i in range(s)]
    return PackedLimbs(_to_limbs(packed, L), total, scaled)


def _primitive_columns(rows_exact: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """The nonzero columns divided by their largest common power of two, and their widths
    (bit length of the sum of absolute values, plus a sign bit): the layout of :func:`pack`."""
    s, r = rows_exact.shape
    cols: list[list[int]] = []
    for j in range(r):
        col = [int(x) for x in rows_exact[:, j]]
        nzv = [v for v in col if v]
        if not nzv:
            continue
        val = min(two_adic(v) for v in nzv)
        cols.append([v >> val for v in col])
    widths = [sum(abs(v) for v in c).bit_length() + 1 for c in cols]
    return cols, widths


@dataclass
class PackedWords:
    """Rows of an exact integer matrix as one uint64 word per (primitive) coordinate.

    Coordinate ``c`` of every subset sum has absolute value below 2**(widths[c] - 1) <= 2**62, so
    its residue modulo 2**64 (the wrapped word) is zero iff the coordinate is.  ``offsets`` place
    the coordinates in the same virtual bit string as :func:`pack` (coordinate ``c`` holds bits
    [offsets[c], offsets[c] + widths[c]), and one last vacuous bit), so that a bit window means the
    same thing in both packings.
    """

    words: np.ndarray  # (s, d) uint64
    widths: list[int]
    offsets: list[int]
    bits: int


def pack_words(rows_exact: np.ndarray) -> PackedWords | None:
    """The word packing of the rows, or None when some coordinate is too wide for one word."""
    cols, widths = _primitive_columns(rows_exact)
    if any(w > 63 for w in widths):
        return None
    s = rows_exact.shape[0]
    mod = 1 << 64
    words = np.zeros((s, len(cols)), dtype=np.uint64)
    for j, c in enumerate(cols):
        words[:, j] = np.array([v % mod for v in c], dtype=np.uint64)
    offsets = [sum(widths[:j]) for j in range(len(widths))]
    return PackedWords(words, widths, offsets, sum(widths) + 1)


def words_key(a: np.ndarray, pw: PackedWords, lo: int, width: int, negate: bool = False) -> np.ndarray:
    """Bits [lo, lo + width) of the virtual bit string of word-packed values (width <= 62), of their
    negatives when ``negate``."""
    out: np.ndarray | None = None
    shift = 0
    hi = lo + width
    for c, (off, w) in enumerate(zip(pw.offsets, pw.widths, strict=True)):
        a0, a1 = max(lo, off), min(hi, off + w)
        if a0 >= a1:
            continue
        col = np.negative(a[:, c]) if negate else a[:, c]  # wraps modulo 2**64
        piece = col >> np.uint64(a0 - off)
        piece &= np.uint64((1 << (a1 - a0)) - 1)
        if out is None:
            out = piece
        else:
            piece <<= np.uint64(shift)
            out |= piece
        shift += a1 - a0
    if out is None:
        return np.zeros(a.shape[0], dtype=np.int64)
    return out.view(np.int64)
