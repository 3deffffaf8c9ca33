"""Generalized-birthday (Wagner k-tree) search for flip sets in a large block, and a count estimate.

Randomized: the packed exact rows of the block are split into 2**levels groups whose subset sums
are merged pairwise, cancelling a window of packed bits per level and all bits at the root.  It
finds flip sets when there are many and proves nothing otherwise; every found set is verified
exactly.  :func:`log2_count_estimate` estimates the number of zero subset sums (local central
limit theorem).

The rows are packed as one 64-bit word per coordinate when every coordinate fits (float32 and
float16 weights), else as multi-limb integers; the tree (depth, group size, list sizes) is the one
with the least expected work until a first solution under an entropy model of the packed bits, and
the windows themselves are chosen from the data as the tree is built.  The search stops at the
first round that finds a verified set: one flip set already decides genericity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from relusym._base.deadline import Deadline
from relusym._exact.subsets import subset_sums_by_doubling
from relusym._fibre.flipsearch._exact import IntMatrix, verify_sets
from relusym._fibre.flipsearch._limbs import (
    PackedLimbs,
    PackedWords,
    bits_key,
    limb_subset_sums,
    limbs_add,
    limbs_neg,
    pack,
    pack_words,
    two_adic,
    words_key,
)

__all__ = ["ktree_search", "log2_count_estimate"]

# The plan's expected number of solutions rests on a heuristic entropy model that is off by a few
# bits either way; trees are scored as if they expected 2**_MARGIN times fewer solutions than planned.
_MARGIN = 2.0


@dataclass(frozen=True)
class _KTreeConfig:
    """A complete binary merge tree: 2**levels leaves, each the 2**group subset sums of a group
    of ``group`` elements; lists are capped at about 2**logsize entries; the merges of level
    t+1 cancel the packed bits ``windows[t] = (lo, width)``; the root matches all bits."""

    levels: int
    group: int
    logsize: float
    windows: tuple[tuple[int, int], ...]
    bits: int
    log2_expected: float
    cost: float
    sizes: tuple[float, ...] = ()  # planned log2 list sizes per level, leaves first

    @property
    def size(self) -> int:
        return self.group << self.levels


@dataclass(frozen=True)
class _Profile:
    """Layout of the packed integers of the first ``size`` elements.

    ``cum[k]`` is the (heuristic) entropy of the packed bits [0, k): the low bits of each
    coordinate of a subset sum are close to uniform (1 bit each), the top bits (above about
    log2 of the standard deviation of the sums) are nearly determined (0 bits each).
    """

    bits: int
    cum: np.ndarray  # float64, length bits + 1


def _window(prof: _Profile, lo: int, need: float) -> int:
    """Smallest width w (<= 56) such that the entropy of bits [lo, lo+w) reaches ``need``, then
    extended over the following zero-entropy bits."""
    target = prof.cum[lo] + need - 1e-9
    hi = int(np.searchsorted(prof.cum, target, side="left"))
    hi = min(max(hi, lo), prof.bits)
    while hi < prof.bits and prof.cum[hi + 1] - prof.cum[hi] < 1e-9 and hi - lo < 56:
        hi += 1
    return min(hi - lo, 56)


def _merge_plan(
    prof: _Profile, levels: int, group: int, b: float, top: float | None = None
) -> tuple[list[tuple[int, int]], list[float], float]:
    """Windows, log2 list sizes per level (leaves first) and log2 expected solutions of one tree
    whose lists at level t hold at most 2**min(b + t - 1, top) entries (``top`` defaults to b: one
    size throughout)."""
    a = float(group)
    lo = 0
    windows: list[tuple[int, int]] = []
    sizes = [a]
    for t in range(1, levels):
        a2 = min(2 * a, b + t - 1, b if top is None else top)
        width = _window(prof, lo, 2 * a - a2) if 2 * a > a2 else 0
        windows.append((lo, width))
        lo += width
        a = a2
        sizes.append(a)
    rest = float(prof.cum[prof.bits] - prof.cum[lo])
    return windows, sizes, 2 * a - rest


def _tree_cost(levels: int, sizes: list[float]) -> float:
    """Work of one round, in list entries: the leaves' subset sums (cheap, one add each), every
    merge (its two inputs sorted, its output built) and the root join.  An entry of a list of more
    than 2**16 entries counts a little more per doubling (measured: the gathers of a join leave the
    processor's caches)."""

    def entries(log2size: float) -> float:
        return float(2.0 ** (log2size + 0.3 * max(0.0, log2size - 16)))

    cost = 0.25 * (1 << levels) * entries(sizes[0])
    for t in range(1, levels):
        cost += (1 << (levels - t)) * (2 * entries(sizes[t - 1]) + entries(sizes[t]))
    return cost + 2 * entries(sizes[-1])


def _log2_success(log2e: float) -> float:
    """log2 of 1 - exp(-E), the chance of at least one solution when E = 2**log2e are expected."""
    if log2e < -30:
        return log2e
    return math.log2(-math.expm1(-(2.0 ** min(log2e, 60.0))))


class _Planner:
    """The search of :func:`_ktree_config`: the trees scored, and the best score so far, which prunes the rest."""

    def __init__(self, profiles: dict[int, _Profile], mem_entries: float) -> None:
        self.profiles, self.mem_entries, self.best = profiles, mem_entries, math.inf
        self.found: list[tuple[float, _KTreeConfig]] = []

    def plan(self, levels: int, group: int, b: float, top: float) -> tuple[float, float, _KTreeConfig] | None:
        """The tree's score, log2 E and config; None when it needs too much memory or costs more than the best."""
        sizes = [float(group)]
        for t in range(1, levels):
            sizes.append(min(2 * sizes[-1], b + t - 1, top))
        if sum((1 << (levels - t)) * 2.0 ** sizes[t] for t in range(1, levels)) > self.mem_entries:
            return None
        cost = _tree_cost(levels, sizes)
        if math.log2(cost) >= self.best:
            return None
        prof = self.profiles[group << levels]
        windows, sizes, log2e = _merge_plan(prof, levels, group, b, top)
        cfg = _KTreeConfig(levels, group, b, tuple(windows), prof.bits, log2e, cost, tuple(sizes))
        return math.log2(cost) - _log2_success(log2e - _MARGIN), log2e, cfg

    def record(self, got: tuple[float, float, _KTreeConfig]) -> bool:
        """Keep a scored tree; True when it expects plenty of solutions (bigger lists would only cost more)."""
        self.found.append((got[0], got[2]))
        self.best = min(self.best, got[0])
        return got[1] - _MARGIN > 8

    def list_sizes(self, levels: int, group: int, bmax: int) -> None:
        """Score the trees of one depth and group, from the smallest lists up, until they stop paying."""
        for b in range(max(group, 8), bmax + 1):
            first = self.plan(levels, group, b, b)
            if first is None or self.record(first):  # bigger lists cost more, or are not needed
                break
            for top in range(b + 1, min(bmax, b + levels - 2) + 1):
                got = self.plan(levels, group, b, top)
                if got is None or self.record(got):
                    break


def _ktree_config(profiles: dict[int, _Profile], bmax: int, mem_entries: float) -> _KTreeConfig | None:
    """The tree with the least expected work until a first solution: the cost of a round divided
    by the chance 1 - exp(-E) that a round finds one (E its expected number of solutions).

    List sizes are whole powers of two: a merge cancels whole bits, and a list thinned by sampling
    loses as much as a bit not cancelled.  Every level's list size adds as much to the expected number
    of solutions (log2 E = 2·group + Σ_t log2 |list at level t| - bits), but a level costs its number
    of nodes times its list size, so the lists may double from level to level (each level then costs
    the same) up to a top size, which tunes E by single bits at the price of the few top nodes."""
    s_max, planner = max(profiles), _Planner(profiles, mem_entries)
    for levels in range(1, 16):
        if 1 << levels > s_max:
            break
        for group in range(1, bmax + 1):
            if group << levels > s_max:
                break
            if (group << levels) in profiles:
                planner.list_sizes(levels, group, bmax)
    return min(planner.found, key=lambda sc: sc[0])[1] if planner.found else None


def _sorted_join(
    ku: np.ndarray, kv: np.ndarray, width: int = 63, limit: int | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """All pairs (i, j) with ku[i] == kv[j], for nonnegative int64 keys below 2**width; None when
    there are more than ``limit`` of them (counted before they are listed), or, for wide keys, more
    than ``limit + len(kv)`` pairs of equal hashes.

    Keys wider than needed to tell the entries apart are first hashed to two bits more than
    log2 max(len(ku), len(kv)), the pairs of equal hashes are listed, and those whose keys differ are
    dropped.
    """
    nu, nv = len(ku), len(kv)
    h = max(nu, nv).bit_length() + 2
    if width <= h:
        return _narrow_join(ku, kv, width, limit)
    mult = np.uint64(0x9E3779B97F4A7C15)
    shift = np.uint64(64 - h)
    hu = ((ku.view(np.uint64) * mult) >> shift).view(np.int64)
    hv = ((kv.view(np.uint64) * mult) >> shift).view(np.int64)
    joined = _narrow_join(hu, hv, h, None if limit is None else limit + nv)
    if joined is None:
        return None
    iu, iv = joined
    same = np.flatnonzero(np.take(ku, iu) == np.take(kv, iv))
    if limit is not None and len(same) > limit:
        return None
    return np.take(iu, same), np.take(iv, same)


def _narrow_join(ku: np.ndarray, kv: np.ndarray, width: int, limit: int | None) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_sorted_join` for keys below 2**width with 2**width at most a few times len(ku).

    ``ku`` is sorted together with its indices (one int64 sort of key and index side by side, much
    faster than an argsort); the run of equal keys that each ``kv[j]`` meets is read from a table of
    run starts and lengths indexed by the key.  The pairs come out in the order of ``kv``.
    """
    nu, nv = len(ku), len(kv)
    e = np.zeros(0, dtype=np.int64)
    if nu == 0 or nv == 0:
        return e, e
    ib = nu.bit_length()
    imask = np.int64((1 << ib) - 1)
    su = ku << np.int64(ib)
    su |= np.arange(nu, dtype=np.int64)
    su.sort()
    ou = su & imask
    su >>= np.int64(ib)
    # one table entry per key present: where its run starts in the sorted ``ku``, and its length
    starts = np.flatnonzero(su[1:] != su[:-1])
    starts += 1
    starts = np.concatenate([np.zeros(1, dtype=np.int64), starts])
    lens = np.diff(starts, append=nu)
    table = np.zeros(1 << width, dtype=np.int64)
    table[np.take(su, starts)] = (starts << np.int64(ib + 1)) | lens
    packed = np.take(table, kv)
    cnt = packed & np.int64((1 << (ib + 1)) - 1)
    left = packed >> np.int64(ib + 1)
    tot = int(cnt.sum())
    if tot == 0:
        return e, e
    if limit is not None and tot > limit:
        return None
    ends = np.cumsum(cnt)
    # jv[k] = the j whose run of pairs holds position k: the number of runs ending at or before k
    jv = np.cumsum(np.bincount(ends[:-1], minlength=tot)[:tot])
    pos = np.take(left - ends + cnt, jv)
    pos += np.arange(tot, dtype=np.int64)
    return np.take(ou, pos), jv


def _root_join(a: np.ndarray, b: np.ndarray, max_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``max_pairs`` pairs (i, j) with a[i] == b[j] exactly (rows of uint64 words): a join on a
    62-bit hash of the rows, then an exact comparison of the rows of each candidate pair."""
    joined = _sorted_join(_hash62(a), _hash62(b), 62)
    assert joined is not None
    iu, iv = joined
    if len(iu):
        same = np.all(np.take(a, iu, axis=0) == np.take(b, iv, axis=0), axis=1)
        iu, iv = iu[same], iv[same]
    return iu[:max_pairs], iv[:max_pairs]


def _hash62(a: np.ndarray) -> np.ndarray:
    """A 62-bit hash of each row of uint64 words (equal rows, equal hashes)."""
    h = np.zeros(a.shape[0], dtype=np.uint64)
    for j in range(a.shape[1]):
        h = (h ^ a[:, j]) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return (h >> np.uint64(2)).view(np.int64)


class _WordValues:
    """Subset sums as word-packed values (:class:`~relusym._fibre.flipsearch._limbs.PackedWords`)."""

    def __init__(self, pw: PackedWords) -> None:
        self.pw = pw
        self.rows = pw.words

    def low_zeros(self, elems: np.ndarray) -> int:
        """How many low bits of the virtual bit string vanish in every element (so in every sum)."""
        if not self.pw.widths or not len(elems):
            return 0
        bits = int(np.bitwise_or.reduce(np.take(self.rows[:, 0], elems)))
        width = self.pw.widths[0]
        return width if bits == 0 else min(width, (bits & -bits).bit_length() - 1)

    def sums(self, elems: np.ndarray) -> np.ndarray:
        start = np.zeros((1, self.rows.shape[1]), dtype=np.uint64)
        return subset_sums_by_doubling(start, np.take(self.rows, elems, axis=0), lambda t, y: t + y[None, :])

    def key(self, a: np.ndarray, lo: int, width: int, negate: bool) -> np.ndarray:
        return words_key(a, self.pw, lo, width, negate)

    def combine(self, u: np.ndarray, iu: np.ndarray, v: np.ndarray, iv: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.take(u, iu, axis=0)
        out += np.take(v, iv, axis=0)  # wraps modulo 2**64
        return out

    def root(self, u: np.ndarray, v: np.ndarray, max_pairs: int) -> tuple[np.ndarray, np.ndarray]:
        return _root_join(u, np.negative(v), max_pairs)


class _LimbValues:
    """Subset sums as multi-limb Kronecker-packed integers (:class:`~relusym._fibre.flipsearch._limbs.PackedLimbs`)."""

    def __init__(self, pk: PackedLimbs) -> None:
        self.rows = pk.limbs

    def low_zeros(self, elems: np.ndarray) -> int:
        """How many low bits of the packed integers vanish in every element (so in every sum)."""
        bits = int(np.bitwise_or.reduce(np.take(self.rows[:, 0], elems))) if len(elems) else 0
        return 0 if bits == 0 else (bits & -bits).bit_length() - 1

    def sums(self, elems: np.ndarray) -> np.ndarray:
        return limb_subset_sums(np.take(self.rows, elems, axis=0))

    def key(self, a: np.ndarray, lo: int, width: int, negate: bool) -> np.ndarray:
        return bits_key(limbs_neg(a) if negate else a, lo, width)

    def combine(self, u: np.ndarray, iu: np.ndarray, v: np.ndarray, iv: np.ndarray) -> np.ndarray:
        return limbs_add(np.take(u, iu, axis=0), np.take(v, iv, axis=0))

    def root(self, u: np.ndarray, v: np.ndarray, max_pairs: int) -> tuple[np.ndarray, np.ndarray]:
        return _root_join(u.view(np.uint64), limbs_neg(v).view(np.uint64), max_pairs)


class _KTree:
    """One round of the tree: leaves are the subset sums of disjoint groups of elements, each merge
    keeps the pairs of its children whose sum vanishes on a window of bits, the root keeps the pairs
    whose sum vanishes.

    The windows are chosen from the data: a merge starts at the lowest bit not yet cancelled in both
    children (both sums vanish below it, so the window's bits of the sum are the sum of the windows'
    bits, without carries) and takes the narrowest window that leaves about the planned number of
    pairs, widening it when the bits it meets are less random than uniform (low bits that are zero
    in every element of a group, top bits that the magnitudes nearly determine)."""

    def __init__(self, values: _WordValues | _LimbValues, cfg: _KTreeConfig, rng: np.random.Generator) -> None:
        self.values = values
        self.cfg = cfg
        self.rng = rng
        self.leaf_elems: dict[int, np.ndarray] = {}
        self.ptrs: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def merge(
        self, node: int, u: np.ndarray, lo_u: int, v: np.ndarray, lo_v: int, log2_target: float
    ) -> tuple[np.ndarray, int]:
        lo = min(lo_u, lo_v)
        target = round(2.0**log2_target)
        nu, nv = len(u), len(v)
        span = max(0, min(56, self.cfg.bits - lo))
        # the narrowest window that leaves at most the target (if its bits are uniform): a bit more
        # cancelled is worth as much as twice the entries, so lists are never thinned by sampling
        # while a wider window can do it
        w = min(span, max(0, math.ceil(math.log2(max(1, nu * nv) / target))))
        joined: tuple[np.ndarray, np.ndarray] | None = None
        if w > 0:
            vals = self.values
            while joined is None:
                ku, kv = vals.key(u, lo, w, False), vals.key(v, lo, w, True)
                joined = _sorted_join(ku, kv, w, None if w >= span else 2 * target)
                if joined is None:
                    w += 1
            iu, iv = joined
        elif nu * nv <= 2 * target:  # every pair
            iu = np.repeat(np.arange(nu, dtype=np.int64), nv)
            iv = np.tile(np.arange(nv, dtype=np.int64), nu)
        else:  # no bit left to cancel (every sum already vanishes): random pairs, without listing all
            pick = np.unique(self.rng.integers(0, nu * nv, size=2 * target))
            iu, iv = pick // nv, pick % nv
        if len(iu) > 2 * target:  # keep a random sample of about 2 target pairs
            keep = np.flatnonzero(self.rng.random(len(iu)) < 2 * target / len(iu))
            iu, iv = np.take(iu, keep), np.take(iv, keep)
        self.ptrs[node] = (iu.astype(np.int32), iv.astype(np.int32))
        return self.values.combine(u, iu, v, iv), lo + w

    def run(self, perm: np.ndarray, deadline: Deadline, max_pairs: int) -> list[np.ndarray] | None:
        cfg = self.cfg
        g = cfg.group

        def build(node: int, level: int, leaf0: int) -> tuple[np.ndarray, int] | None:
            if deadline.expired():
                return None
            if level == 0:
                elems = perm[leaf0 * g : (leaf0 + 1) * g]
                self.leaf_elems[node] = elems
                return self.values.sums(elems), self.values.low_zeros(elems)
            half = 1 << (level - 1)
            u = build(2 * node, level - 1, leaf0)
            if u is None:
                return None
            v = build(2 * node + 1, level - 1, leaf0 + half)
            if v is None:
                return None
            return self.merge(node, u[0], u[1], v[0], v[1], cfg.sizes[level])

        top = cfg.levels
        u = build(2, top - 1, 0)
        if u is None:
            return None
        v = build(3, top - 1, 1 << (top - 1))
        if v is None:
            return None
        ia, ib = self.values.root(u[0], v[0], max_pairs + 1)
        out: list[np.ndarray] = []
        for x, y in zip(ia.tolist(), ib.tolist(), strict=True):
            members = self.recover(2, top - 1, x) + self.recover(3, top - 1, y)
            if members:
                out.append(np.array(sorted(members), dtype=np.int64))
        return out

    def recover(self, node: int, level: int, idx: int) -> list[int]:
        if level == 0:
            elems = self.leaf_elems[node]
            return [int(elems[e]) for e in range(len(elems)) if (idx >> e) & 1]
        iu, iv = self.ptrs[node]
        left = self.recover(2 * node, level - 1, int(iu[idx]))
        return left + self.recover(2 * node + 1, level - 1, int(iv[idx]))


def _valuation_order(rows_exact: np.ndarray, deadline: Deadline | None = None) -> np.ndarray | None:
    """Elements sorted by decreasing 2-adic valuation (min over coordinates, then sum).

    Float data have most of their low-order bits in a few elements of small magnitude; leaving
    those out shrinks the number of bits the search has to cancel.  None when ``deadline`` passes first.
    """
    s = rows_exact.shape[0]
    keys = []
    for i in range(s):
        if i % 4096 == 4095 and deadline is not None and deadline.expired():
            return None
        vs = [two_adic(int(x)) for x in rows_exact[i] if int(x)]
        keys.append((-(min(vs) if vs else 1 << 30), -sum(vs), i))
    keys.sort()
    return np.array([k[2] for k in keys], dtype=np.int64)


def _profiles(
    rows_ordered: np.ndarray, sizes: Iterable[int], deadline: Deadline | None = None
) -> dict[int, _Profile] | None:
    """Packed layouts (see pack) of the first ``size`` rows, for each requested size.

    The entropy of coordinate ``j`` is that of a uniformly random subset sum read in units of its
    lowest bit: near a normal law with mean mu = Σx/2 and variance sd² = Σx²/4, the chance that it
    takes one given value near the mean is about exp(-mu²/2sd²)/(sd sqrt(2π)), so its low
    log2(sd sqrt(2π)) + mu²/(2 sd² ln 2) bits count as uniform (1 bit each) and the bits above as
    determined.  None when ``deadline`` passes first.
    """
    s, r = rows_ordered.shape
    want = sorted({x for x in sizes if 1 <= x <= s})
    out: dict[int, _Profile] = {}
    sums = [0] * r
    tot = [0] * r
    sq = [0] * r
    vmin = [1 << 30] * r
    k = 0
    half_log2_2pi = 0.5 * math.log2(2 * math.pi)
    for i in range(s):
        if i % 4096 == 4095 and deadline is not None and deadline.expired():
            return None
        for j in range(r):
            x = int(rows_ordered[i, j])
            if x:
                sums[j] += abs(x)
                tot[j] += x
                sq[j] += x * x
                vmin[j] = min(vmin[j], two_adic(x))
        if k < len(want) and want[k] == i + 1:
            k += 1
            ent: list[float] = []
            for j in range(r):
                if not sums[j]:
                    continue
                width = (sums[j] >> vmin[j]).bit_length() + 1
                log2sd = 0.5 * math.log2(sq[j]) - 1 - vmin[j]
                z2 = float(Fraction(tot[j] * tot[j], sq[j]))  # (mu/sd)²
                bits = max(1.0, log2sd + half_log2_2pi + z2 / (2 * math.log(2)))
                ones = min(width, int(bits))
                frac = [bits - ones] if ones < width else []
                ent += [1.0] * ones + frac + [0.0] * (width - ones - len(frac))
            ent.append(0.0)
            cum = np.concatenate([[0.0], np.cumsum(ent)])
            out[i + 1] = _Profile(len(ent), cum)
    return out


def ktree_search(
    M: IntMatrix,
    gidx: np.ndarray,
    rows_exact: np.ndarray,
    max_sets: int,
    deadline: Deadline,
    rng: np.random.Generator,
    bmax: int = 20,
    mem_entries: float = 6e7,
    min_log2_expected: float = -10.0,
) -> tuple[list[tuple[int, ...]], str]:
    """Generalized-birthday (Wagner k-tree) search for zero sums among the block's rows.

    A randomized search: it finds flip sets when there are many, and proves nothing otherwise.
    Rounds (fresh random groups) repeat until one yields a verified set, ``max_sets`` are found, or
    the deadline passes; the sets of that first successful round are returned, so a caller that only
    needs one (genericity) is not kept waiting for more.  Returns the sets and a line describing the
    tree.
    """
    s = len(gidx)
    order = _valuation_order(rows_exact, deadline)
    sizes = {g << lv for lv in range(1, 16) for g in range(1, bmax + 1) if g << lv <= s}
    profiles = None if order is None else _profiles(rows_exact[order], sizes, deadline)
    if order is None or profiles is None:
        return [], f"k-tree: the budget ran out while ordering the {s} elements; not run"
    cfg = _ktree_config(profiles, bmax, mem_entries)
    if cfg is None:
        return [], "k-tree: block too small"
    if cfg.log2_expected < min_log2_expected:
        return [], (
            f"k-tree: out of reach, {cfg.bits} bits to cancel with {cfg.size} of {s} elements; the best tree"
            f" (2^{cfg.levels} lists of <= 2^{cfg.logsize:g}) expects 2^{cfg.log2_expected:.0f} solutions"
            " per round; not run"
        )
    sub = order[: cfg.size]
    pw = pack_words(rows_exact[sub])
    values: _WordValues | _LimbValues
    if pw is not None:
        values, bits, kind = _WordValues(pw), pw.bits, "word"
    else:
        pk = pack(rows_exact[sub])
        values, bits, kind = _LimbValues(pk), pk.bits, "limb"
    if bits != cfg.bits:
        raise AssertionError("packed layout differs from the plan")
    found: set[tuple[int, ...]] = set()
    rounds = 0
    while not deadline.expired() and len(found) < max_sets:
        rounds += 1
        perm = rng.permutation(cfg.size)
        kt = _KTree(values, cfg, rng)
        sols = kt.run(perm, deadline, max_sets - len(found))
        if sols is None:
            break
        cand = sorted({tuple(sorted(int(g) for g in gidx[sub[sol]])) for sol in sols} - found)
        for t, ok in zip(cand, verify_sets(M, cand), strict=True):
            if ok and len(found) < max_sets:
                found.add(t)
        if found:
            break
    info = (
        f"k-tree: {cfg.size} of {s} elements, {bits} bits ({kind}-packed), 2^{cfg.levels} lists of 2^{cfg.group}"
        f" subsets, lists of 2^{cfg.sizes[1] if len(cfg.sizes) > 1 else cfg.logsize:g}"
        f"..2^{cfg.sizes[-1]:g}, expected 2^{cfg.log2_expected:.0f} solutions per round,"
        f" {rounds} round(s)"
    )
    return sorted(found, key=lambda t: (len(t), t)), info


def log2_count_estimate(rows_exact: np.ndarray, deadline: Deadline | None = None) -> float | None:
    """Heuristic log2 of the number of zero subset sums (local central limit theorem); None when ``deadline``
    passes first."""
    s, r = rows_exact.shape
    if s == 0:
        return None
    cols = []
    for j in range(r):
        if deadline is not None and deadline.expired():
            return None
        col = [int(x) for x in rows_exact[:, j]]
        if any(col):
            g = math.gcd(*col)
            cols.append([v // g for v in col])
    if not cols:
        return float(s)
    rr = len(cols)
    if rr > 64:
        return None
    # work with coordinates rescaled by a power of two to stay within float range
    shifts = [max(0, max(abs(v) for v in c).bit_length() - 900) for c in cols]
    Z = np.array([[float(c[i] >> sh) for c, sh in zip(cols, shifts, strict=True)] for i in range(s)])
    cov = 0.25 * (Z.T @ Z)
    sign, logdet = np.linalg.slogdet(cov)
    if sign <= 0:
        return None
    mu = 0.5 * Z.sum(axis=0)
    quad = float(mu @ np.linalg.solve(cov, mu))
    log2 = s - 0.5 * (rr * math.log2(2 * math.pi) + logdet / math.log(2) + 2 * sum(shifts))
    log2 -= 0.5 * quad / math.log(2)
    return float(log2)
