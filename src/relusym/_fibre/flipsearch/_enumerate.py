"""Exhaustive search of the flip sets of one block: nullspace enumeration and meet in the middle.

A block of rows with a small left nullspace (dimension ``w``) is searched over the 2**w vectors of
that nullspace modulo p whose entries are 0/1; a block of few rows is searched by meet in the
middle over the exactly packed rows.  Both verify every candidate exactly and count exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from relusym._base.deadline import Deadline
from relusym._exact import modular as modular
from relusym._fibre.flipsearch._exact import IntMatrix, combos_zero, verify_sets
from relusym._fibre.flipsearch._limbs import PackedLimbs, join_equal, limb_subset_sums, limbs_neg

__all__ = ["BlockResult", "enumerate_nullspace", "mitm"]


@dataclass
class BlockResult:
    sets: list[tuple[int, ...]] = field(default_factory=list)  # global indices, verified
    count: int | None = None  # exact number of nonempty per-block flip sets, if known
    complete: bool = False  # sets is the whole per-block family
    method: str = ""
    note: str | None = None
    log2_estimate: float | None = None


def enumerate_nullspace(
    M: IntMatrix,
    gidx: np.ndarray,
    free_pos: np.ndarray,
    dep_pos: np.ndarray,
    coef: np.ndarray,
    p: int,
    max_sets: int,
    deadline: Deadline,
) -> BlockResult | None:
    """All 0/1 vectors of the block's nullspace mod p (basis: unit on ``free_pos``, ``coef`` on
    ``dep_pos``), each verified exactly.  Returns None if the deadline passes."""
    w = len(free_pos)
    s = len(gidx)
    field_ = modular.Field(p)
    cf = coef.astype(np.float64)
    cands: list[np.ndarray] = []
    chunk = 1 << 14
    bit_w = np.arange(w, dtype=np.int64)
    for start in range(1, 1 << w, chunk):
        if w > 12 and deadline.expired():
            return None
        ids = np.arange(start, min(start + chunk, 1 << w), dtype=np.int64)
        bits = ((ids[:, None] >> bit_w[None, :]) & 1).astype(np.float64)
        vals = field_.reduce(bits @ cf) if len(dep_pos) else np.zeros((len(ids), 0))
        ok = np.all((vals == 0) | (vals == 1), axis=1)
        for r in np.flatnonzero(ok):
            y = np.zeros(s, dtype=np.int64)
            y[free_pos] = bits[r].astype(np.int64)
            if len(dep_pos):
                y[dep_pos] = vals[r].astype(np.int64)
            cands.append(y)
    res = BlockResult(method="nullspace enumeration")
    if not cands:
        res.count, res.complete = 0, True
        return res
    C = np.array(cands, dtype=np.int64)
    good = np.zeros(len(C), dtype=bool)
    for s0 in range(0, len(C), 4096):
        if s0 and deadline.expired():
            return None
        good[s0 : s0 + 4096] = combos_zero(M, gidx, C[s0 : s0 + 4096])
    G = C[good]
    res.count = int(len(G))
    res.sets = [tuple(int(g) for g in gidx[np.flatnonzero(row)]) for row in G[:max_sets]]
    res.complete = len(G) <= max_sets
    return res


def mitm(
    M: IntMatrix,
    gidx: np.ndarray,
    packed: PackedLimbs,
    exact_on_all_columns: bool,
    max_sets: int,
    deadline: Deadline,
) -> BlockResult:
    """Meet-in-the-middle over the packed exact integers of a block."""
    s = len(gidx)
    z = packed.limbs
    s1 = s // 2
    a = limb_subset_sums(z[:s1])
    b = limbs_neg(limb_subset_sums(z[s1:]))
    listed_cap = max(4 * max_sets, 1024)
    total, ia, ib = join_equal(a, b, listed_cap + 1)
    total -= 1  # the empty set
    keep = ~((ia == 0) & (ib == 0))
    ia, ib = ia[keep], ib[keep]
    cand: list[tuple[int, ...]] = []
    for x, y in zip(ia.tolist(), ib.tolist(), strict=True):
        members = [i for i in range(s1) if (x >> i) & 1] + [s1 + i for i in range(s - s1) if (y >> i) & 1]
        cand.append(tuple(int(g) for g in gidx[members]))
    res = BlockResult(method="meet-in-the-middle")
    if exact_on_all_columns:
        res.count = total
        ver = verify_sets(M, cand[:max_sets])
        if not all(ver):  # cannot happen: packing is exact
            raise AssertionError("meet-in-the-middle produced a non-flip set")
        res.sets = sorted(cand[:max_sets], key=lambda t: (len(t), t))
        res.complete = total <= max_sets
        return res
    # candidates vanish on a spanning set of columns only: verify them all
    if total > len(cand):
        res.count = None
        res.note = f"{total} candidate sets (zero on {packed.bits}-bit packed columns) not all verified"
    ver = verify_sets(M, cand) if not deadline.expired() else [False] * len(cand)
    good = [t for t, ok in zip(cand, ver, strict=True) if ok]
    if total <= len(cand):
        res.count = len(good)
        res.complete = len(good) <= max_sets
    res.sets = sorted(good, key=lambda t: (len(t), t))[:max_sets]
    return res
