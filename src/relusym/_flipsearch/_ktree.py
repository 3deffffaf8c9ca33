"""Generalized-birthday (Wagner k-tree) search for flip sets in a large block, and a count estimate.

Randomized: the packed exact rows of the block are split into 2**levels groups whose subset sums
are merged pairwise, cancelling a window of packed bits per level and all bits at the root.  It
finds flip sets when there are many and proves nothing otherwise; every found set is verified
exactly.  :func:`log2_count_estimate` estimates the number of zero subset sums (local central
limit theorem).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from relusym._flipsearch._exact import IntMatrix, verify_sets
from relusym._flipsearch._limbs import bits_key, join_equal, limb_subset_sums, limbs_add, limbs_neg, pack, two_adic

__all__ = []


@dataclass(frozen=True)
class _KTreeConfig:
    """A complete binary merge tree: 2**levels leaves, each the 2**group subset sums of a group
    of ``group`` elements; lists are capped at about 2**logsize entries; the merges of level
    t+1 cancel the packed bits ``windows[t] = (lo, width)``; the root matches all bits."""

    levels: int
    group: int
    logsize: int
    windows: tuple[tuple[int, int], ...]
    bits: int
    log2_expected: float
    cost: float

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


def _ktree_config(profiles: dict[int, _Profile], bmax: int, mem_entries: float) -> _KTreeConfig | None:
    """Cheapest tree expecting >= 8 solutions (else the one expecting the most)."""
    s_max = max(profiles)
    best: _KTreeConfig | None = None
    fallback: _KTreeConfig | None = None
    for levels in range(1, 16):
        if 1 << levels > s_max:
            break
        for group in range(1, bmax + 1):
            size = group << levels
            if size > s_max:
                break
            prof = profiles.get(size)
            if prof is None:
                continue
            for b in range(max(group, 8), bmax + 1):
                a = group
                lo = 0
                windows: list[tuple[int, int]] = []
                for _ in range(1, levels):
                    a2 = min(2 * a, b)
                    width = _window(prof, lo, 2 * a - a2) if 2 * a > a2 else 0
                    windows.append((lo, width))
                    lo += width
                    a = a2
                rest = float(prof.cum[prof.bits] - prof.cum[lo])
                log2e = 2 * a - rest
                nodes = (1 << levels) - 1
                if nodes * (1 << b) > mem_entries:
                    break
                cost = float((1 << levels) * (1 << group) + nodes * (1 << b))
                cfg = _KTreeConfig(levels, group, b, tuple(windows), prof.bits, log2e, cost)
                if log2e >= 3:
                    if best is None or cost < best.cost:
                        best = cfg
                    break  # larger b only costs more
                if fallback is None or (log2e, -cost) > (fallback.log2_expected, -fallback.cost):
                    fallback = cfg
    return best if best is not None else fallback


def _sorted_join(ku: np.ndarray, kv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (i, j) with ku[i] == kv[j]."""
    ou = np.argsort(ku, kind="stable")
    ov = np.argsort(kv, kind="stable")
    su = ku[ou]
    sv = kv[ov]
    left = np.searchsorted(su, sv, side="left")
    right = np.searchsorted(su, sv, side="right")
    cnt = right - left
    tot = int(cnt.sum())
    if tot == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    jv = np.repeat(ov, cnt)
    starts = np.cumsum(cnt) - cnt
    within = np.arange(tot, dtype=np.int64) - np.repeat(starts, cnt)
    iu = ou[np.repeat(left, cnt) + within]
    return iu, jv


class _KTree:
    def __init__(self, z: np.ndarray, cfg: _KTreeConfig, rng: np.random.Generator) -> None:
        self.z = z
        self.cfg = cfg
        self.rng = rng
        self.cap = 1 << (cfg.logsize + 1)
        self.leaf_elems: dict[int, np.ndarray] = {}
        self.ptrs: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def merge(self, node: int, u: np.ndarray, v: np.ndarray, lo: int, width: int) -> np.ndarray:
        if width == 0:
            iu = np.repeat(np.arange(len(u), dtype=np.int64), len(v))
            iv = np.tile(np.arange(len(v), dtype=np.int64), len(u))
        else:
            iu, iv = _sorted_join(bits_key(u, lo, width), bits_key(limbs_neg(v), lo, width))
        if len(iu) > self.cap:
            pick = np.sort(self.rng.choice(len(iu), size=self.cap, replace=False))
            iu, iv = iu[pick], iv[pick]
        self.ptrs[node] = (iu.astype(np.int32), iv.astype(np.int32))
        return limbs_add(u[iu], v[iv])

    def run(self, perm: np.ndarray, deadline: float, max_pairs: int) -> list[np.ndarray] | None:
        cfg = self.cfg
        g = cfg.group

        def build(node: int, level: int, leaf0: int) -> np.ndarray | None:
            if time.monotonic() > deadline:
                return None
            if level == 0:
                elems = perm[leaf0 * g : (leaf0 + 1) * g]
                self.leaf_elems[node] = elems
                return limb_subset_sums(self.z[elems])
            half = 1 << (level - 1)
            u = build(2 * node, level - 1, leaf0)
            if u is None:
                return None
            v = build(2 * node + 1, level - 1, leaf0 + half)
            if v is None:
                return None
            lo, width = cfg.windows[level - 1]
            return self.merge(node, u, v, lo, width)

        top = cfg.levels
        u = build(2, top - 1, 0)
        if u is None:
            return None
        v = build(3, top - 1, 1 << (top - 1))
        if v is None:
            return None
        _, ia, ib = join_equal(u, limbs_neg(v), max_pairs + 1)
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


def _valuation_order(rows_exact: np.ndarray) -> np.ndarray:
    """Elements sorted by decreasing 2-adic valuation (min over coordinates, then sum).

    Float data have most of their low-order bits in a few elements of small magnitude; leaving
    those out shrinks the number of bits the search has to cancel.
    """
    s = rows_exact.shape[0]
    keys = []
    for i in range(s):
        vs = [two_adic(int(x)) for x in rows_exact[i] if int(x)]
        keys.append((-(min(vs) if vs else 1 << 30), -sum(vs), i))
    keys.sort()
    return np.array([k[2] for k in keys], dtype=np.int64)


def _profiles(rows_ordered: np.ndarray, sizes: Iterable[int]) -> dict[int, _Profile]:
    """Packed layouts (see pack) of the first ``size`` rows, for each requested size."""
    s, r = rows_ordered.shape
    want = sorted({x for x in sizes if 1 <= x <= s})
    out: dict[int, _Profile] = {}
    sums = [0] * r
    sq = [0.0] * r
    vmin = [1 << 30] * r
    k = 0
    for i in range(s):
        for j in range(r):
            x = int(rows_ordered[i, j])
            if x:
                sums[j] += abs(x)
                sq[j] += float(x) ** 2
                vmin[j] = min(vmin[j], two_adic(x))
        if k < len(want) and want[k] == i + 1:
            k += 1
            ent: list[float] = []
            for j in range(r):
                if not sums[j]:
                    continue
                width = (sums[j] >> vmin[j]).bit_length() + 1
                log2sd = 0.5 * math.log2(sq[j]) - 1 - vmin[j]
                eff = min(width, max(1, math.ceil(log2sd + 2.05)))
                ent += [1.0] * eff + [0.0] * (width - eff)
            ent.append(0.0)
            cum = np.concatenate([[0.0], np.cumsum(ent)])
            out[i + 1] = _Profile(len(ent), cum)
    return out


def ktree_search(
    M: IntMatrix,
    gidx: np.ndarray,
    rows_exact: np.ndarray,
    max_sets: int,
    deadline: float,
    rng: np.random.Generator,
    bmax: int = 20,
    mem_entries: float = 6e7,
    min_log2_expected: float = -10.0,
) -> tuple[list[tuple[int, ...]], str]:
    """Generalized-birthday (Wagner k-tree) search for zero sums among the block's rows.

    A randomized search: it finds flip sets when there are many, and proves nothing otherwise.
    """
    s = len(gidx)
    order = _valuation_order(rows_exact)
    sizes = {g << lv for lv in range(1, 16) for g in range(1, bmax + 1) if g << lv <= s}
    cfg = _ktree_config(_profiles(rows_exact[order], sizes), bmax, mem_entries)
    if cfg is None:
        return [], "k-tree: block too small"
    if cfg.log2_expected < min_log2_expected:
        return [], (
            f"k-tree: out of reach, {cfg.bits} bits to cancel with {cfg.size} of {s} elements; the best tree"
            f" (2^{cfg.levels} lists of <= 2^{cfg.logsize}) expects 2^{cfg.log2_expected:.0f} solutions"
            " per round; not run"
        )
    sub = order[: cfg.size]
    pk = pack(rows_exact[sub])
    if pk.bits != cfg.bits:
        raise AssertionError("packed layout differs from the plan")
    found: set[tuple[int, ...]] = set()
    rounds = 0
    while time.monotonic() < deadline and len(found) < max_sets:
        rounds += 1
        perm = rng.permutation(cfg.size)
        kt = _KTree(pk.limbs, cfg, rng)
        sols = kt.run(perm, deadline, max_sets - len(found))
        if sols is None:
            break
        cand = sorted({tuple(sorted(int(g) for g in gidx[sub[sol]])) for sol in sols} - found)
        for t, ok in zip(cand, verify_sets(M, cand), strict=True):
            if ok and len(found) < max_sets:
                found.add(t)
        if found and cfg.log2_expected >= 3:
            break
    info = (
        f"k-tree: {cfg.size} of {s} elements, {pk.bits} bits, 2^{cfg.levels} lists of 2^{cfg.group}"
        f" subsets capped at 2^{cfg.logsize}, expected 2^{cfg.log2_expected:.0f} solutions per round,"
        f" {rounds} round(s)"
    )
    return sorted(found, key=lambda t: (len(t), t)), info


def log2_count_estimate(rows_exact: np.ndarray) -> float | None:
    """Heuristic log2 of the number of zero subset sums (local central limit theorem)."""
    s, r = rows_exact.shape
    if s == 0:
        return None
    cols = []
    for j in range(r):
        col = [int(x) for x in rows_exact[:, j]]
        if any(col):
            g = 0
            for v in col:
                g = math.gcd(g, v)
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
