"""Proofs of "dead" and "active" on a box by covers of leaves, without per-unit linear programs (issue 22).

For the units still pending after the root's bound table and the witnesses: a long float search for the missing
sign (projected gradient from many starts, batched over units and starts), then input splitting in floats
(:func:`relusym._deep.box_split.split_cover`, many units and sub-boxes at once) to find, for each unit, a cover of
the box by leaves on which its bound has one sign; then every leaf's bound is proved EXACTLY, one exact bound
table per leaf (:func:`relusym._deep.bounds.certified_bounds`, shared by every unit the leaf serves).  A unit is
proved when each leaf of its cover is proved; the certificate is the list of leaves (regions covering the box)
with the worst exact bound, re-checked by :func:`relusym._deep.box_check.check_certificates`.  Floats only choose
the leaves and the points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from relusym._base.deadline import Deadline
from relusym._deep.bounds import BoundTable, ExactLayers, Region, certified_bounds, unit_bound
from relusym._deep.box_leaves import FirstRows, second_layer_bounds
from relusym._deep.box_split import Splitter, split_cover
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.units_hunt import hunt_open_leaves
from relusym._deep.units_leaves import LeafTables
from relusym._deep.witness import FloatNet, exact_point

__all__ = ["Proved", "cover_units", "hunt"]

_CHUNK = 96  # leaves proved between two looks at the deadline
_HUNT_BATCH = 8  # the witness hunt's starts per unit between two looks at the deadline (for 150 steps a start)
_SPLIT_SHARE = 0.7  # of a layer's time, the float splitting's share (the exact proofs of its covers after)
_REPAIRS, _REPAIR_LEAVES = 4, 64  # rounds of bisecting the leaves an exact bound refutes, and at most so many
_GROWTH = 2  # the factor by which a layer's cap on a cover's leaves grows from one round to the next


@dataclass(frozen=True)
class Proved:
    """A unit proved dead (``sign`` −1: z ≤ ``bound`` ≤ 0) or active (+1: z ≥ ``bound`` ≥ 0) on every region."""

    ell: int
    j: int
    sign: int
    bound: Fraction
    regions: tuple[Region, ...]


def hunt(
    wit: Witnesses,
    net: FloatNet,
    root: Region,
    units: Sequence[tuple[int, int]],
    deadline: Deadline,
    starts: int = 32,
    steps: int = 150,
    seed: int = 1,
) -> None:
    """For each unit seen with one sign only, projected sign-gradient search for the other sign from ``starts``
    random points of the box (batched by layer, ``_HUNT_BATCH`` starts a unit at a time, fewer for longer
    ascents, so the deadline is looked at as often); the best point of each unit is confirmed exactly."""
    rng = np.random.default_rng(seed)
    by_layer: dict[int, list[int]] = {}
    for ell, j in units:
        if not wit.crossing(ell, j):
            by_layer.setdefault(ell, []).append(j)
    # a few starts per unit at a time, every layer in turn, the deadline looked at in between
    batch = max(1, _HUNT_BATCH * 150 // max(1, steps))
    for first in range(0, starts, batch):
        for ell in sorted(by_layer):
            if deadline.expired():
                return
            js = by_layer[ell] = [j for j in by_layer[ell] if not wit.crossing(ell, j)]
            if not js:
                continue
            signs = np.array([1.0 if wit.pos[ell][j] is None else -1.0 for j in js])
            k = min(batch, starts - first)
            U0 = rng.random((len(js) * k, net.m))
            tu = np.repeat(np.array(js), k)
            ts = np.repeat(signs, k)
            V = net.ascend(U0, ell, tu, ts, steps=steps)
            val = ts * net.preactivations(V, ell)[ell][np.arange(len(tu)), tu]
            for q, j in enumerate(js):
                block = val[q * k : (q + 1) * k]
                best = int(np.argmax(block))
                if block[best] > 0 and not wit.crossing(ell, j):
                    wit.record(exact_point(root[0], root[1], V[q * k + best]))


def _region(root: Region, lo: np.ndarray, hi: np.ndarray) -> Region:
    """The exact sub-box of ``root`` with unit coordinates [lo, hi] (dyadic floats, read exactly)."""
    a = tuple(r0 + (r1 - r0) * Fraction(float(u)) for r0, r1, u in zip(root[0], root[1], lo, strict=True))
    b = tuple(r0 + (r1 - r0) * Fraction(float(u)) for r0, r1, u in zip(root[0], root[1], hi, strict=True))
    return a, b


class _Tables:
    """Exact bound tables of the leaves, computed once per leaf (for the deepest layer asked so far)."""

    def __init__(self, layers: ExactLayers) -> None:
        self.layers = layers
        self.cache: dict[Region, BoundTable] = {}
        self.batched = LeafTables(layers)  # the leaves of later layers, in batches (relusym._deep.units_leaves)
        self.first: FirstRows = {}  # the leaves' rounded first-layer bounds, for the second layer's (box_leaves)

    def get(self, r: Region, upto: int) -> BoundTable:
        t = self.cache.get(r)
        if t is None or len(t.lower) <= upto:
            t = certified_bounds(self.layers, r[0], r[1], upto)
            self.cache[r] = t
        return t

    def unit(self, r: Region, ell: int, j: int, sign: int) -> Fraction:
        """The unit's exact bound on the region (upper for sign −1, lower for +1): the first layer's from the
        table, a later layer's by :func:`unit_bound` from the table of the layers before it (shared)."""
        if ell == 0:
            t = self.get(r, 0)
            return t.raw_upper[0][j] if sign < 0 else t.raw_lower[0][j]
        t = self.get(r, ell - 1)
        return unit_bound(self.layers, r[0], r[1], t.lower, t.upper, ell, j, sign)


def _wider(ell: int, second: int) -> int:
    """How many times ``max_leaves`` a unit of layer ``ell`` may use: ``second`` in the second layer, whose leaves
    are cheap to prove (:mod:`relusym._deep.box_leaves`, about 0.3 ms a leaf; on ACAS Xu its covers need 100 to
    10,000 leaves), else 1."""
    return second if ell == 1 else 1


def cover_units(
    layers: ExactLayers,
    root: Region,
    wit: Witnesses,
    units: Sequence[tuple[int, int]],
    deadline: Deadline,
    max_leaves: int = 256,
    second: int = 64,
) -> list[Proved]:
    """Prove as many of ``units`` (layer, unit; 0-based layers) dead or active on the box ``root`` as the deadline
    allows, layer by layer (the floats bound only the layers needed); every leaf's bound is exact.  A unit's cover
    may use ``max_leaves`` leaves, ``second`` times as many in the second layer (its leaves are proved in one
    batch), reached in rounds of ``max_leaves``, twice, four times … as many."""
    net = FloatNet(layers, root[0], root[1])
    tables = _Tables(layers)
    out: list[Proved] = []
    by_layer: dict[int, list[int]] = {}
    for ell, j in units:
        by_layer.setdefault(ell, []).append(j)
    for ell, js in sorted(by_layer.items()):
        if deadline.expired():
            break
        # the layer's units share one splitter, so leaves opened for one unit serve the others; the covers grow
        # in rounds of a larger cap each (the leaves of a round are kept), so the units with small covers are
        # proved before the hard ones take the time
        sp = Splitter(net, ell, js)
        top = max_leaves * _wider(ell, second)
        cap = min(max_leaves, top)
        while not deadline.expired():
            out += _cover_round(tables, net, sp, root, wit, ell, js, cap, deadline)
            done = {p.j for p in out if p.ell == ell}
            js = [j for j in js if j not in done and not wit.crossing(ell, j)]
            if not js or cap >= top:
                break
            cap = min(cap * _GROWTH, top)
    return out


def _cover_round(
    tables: _Tables,
    net: FloatNet,
    sp: Splitter,
    root: Region,
    wit: Witnesses,
    ell: int,
    js: Sequence[int],
    cap: int,
    deadline: Deadline,
) -> list[Proved]:
    """One round of :func:`cover_units` for the units ``js`` of layer ``ell``: covers of at most ``cap`` leaves
    in floats (the splitting stops with time left to prove them), then each closed cover proved exactly, the
    smallest first."""
    todo = [j for j in js if not wit.crossing(ell, j)]
    want = [1 if wit.pos[ell][j] is not None else -1 if wit.neg[ell][j] is not None else 0 for j in todo]

    def offer(u: np.ndarray, e: int, j: int, sign: int) -> bool:
        wit.record(exact_point(root[0], root[1], u))
        return wit.crossing(e, j)

    sp, covers = split_cover(
        net, [(ell, j, w) for j, w in zip(todo, want, strict=True)], deadline.sub(_SPLIT_SHARE), cap, offer, sp
    )
    # the covers left open may be of units that cross in a thin region: look there first
    hunt_open_leaves(wit, net, root, sp, [cv for cv in covers if cv.open], deadline)
    out: list[Proved] = []
    for cv in sorted(covers, key=lambda c: len(c.dead) + len(c.active)):  # the cheapest proofs first
        if deadline.expired():
            break
        if cv.open or wit.crossing(ell, cv.j) or (cv.dead and cv.active) or not (cv.dead or cv.active):
            continue
        p = _prove(tables, sp, root, ell, cv.j, -1 if cv.dead else 1, cv.dead or cv.active, deadline)
        if p is not None:
            out.append(p)
    return out


def _bounds(
    tables: _Tables, regions: Sequence[Region], ell: int, j: int, sign: int, deadline: Deadline
) -> list[Fraction] | None:
    """Each region's exact bound of the unit (None when the deadline passes)."""
    if ell == 1:  # the second layer: every leaf at once, the same values (box_leaves)
        return second_layer_bounds(tables.layers, regions, j, sign, tables.first)
    if ell > 1:  # later layers: the leaves' tables in batches, the same values (units_leaves)
        vals: list[Fraction] = []
        for c in range(0, len(regions), _CHUNK):
            if deadline.expired():
                return None
            vals += tables.batched.unit_bounds(regions[c : c + _CHUNK], ell, j, sign)
        return vals
    return [tables.unit(r, ell, j, sign) for r in regions]


def _bisect(r: Region, root: Region) -> tuple[Region, Region]:
    """The two halves of a region across its widest side relative to the root's (dyadic sub-boxes stay dyadic)."""
    lo, hi = r
    t = max(range(len(lo)), key=lambda q: (hi[q] - lo[q]) / (root[1][q] - root[0][q]))
    mid = (lo[t] + hi[t]) / 2
    return (lo, hi[:t] + (mid,) + hi[t + 1 :]), (lo[:t] + (mid,) + lo[t + 1 :], hi)


def _prove(
    tables: _Tables, sp: Splitter, root: Region, ell: int, j: int, sign: int, leaves: Sequence[int], deadline: Deadline
) -> Proved | None:
    """Each leaf's exact bound of the unit; a leaf whose exact bound has the wrong sign (the floats were a hair
    too optimistic there) is bisected and its halves proved instead, for a few rounds; None when some still
    fail."""
    regions = [_region(root, sp.L[i], sp.U[i]) for i in leaves]
    vals = _bounds(tables, regions, ell, j, sign, deadline)
    for _ in range(_REPAIRS + 1):
        if vals is None:
            return None
        bad = {i for i, v in enumerate(vals) if (v > 0 if sign < 0 else v < 0)}
        if not bad:
            worst = max(vals) if sign < 0 else min(vals)
            return Proved(ell, j, sign, worst, tuple(regions))
        if len(bad) > _REPAIR_LEAVES or deadline.expired():
            return None
        halves = [h for i in sorted(bad) for h in _bisect(regions[i], root)]
        more = _bounds(tables, halves, ell, j, sign, deadline)
        if more is None:
            return None
        regions = [r for i, r in enumerate(regions) if i not in bad] + halves
        vals = [v for i, v in enumerate(vals) if i not in bad] + more
    return None
