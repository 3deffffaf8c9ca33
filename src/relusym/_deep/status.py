"""Every hidden unit's status on a box or a polytope, decided exactly (issue 22).

A hidden unit of an MLP is, on a domain D,

* **dead**: its pre-activation is ≤ 0 at every input of D (proof: an exact upper bound ≤ 0);
* **active**: its pre-activation is ≥ 0 at every input of D (proof: an exact lower bound ≥ 0; the unit acts
  linearly on D);
* **crossing**: two exact rational inputs of D where it is < 0 and > 0, both checked by exact evaluation;
* **undecided**: neither was shown within the budget (the reason is given).

The proofs, in order (:mod:`relusym._deep.bounds`): exact interval arithmetic; the exact Lagrangian certificate
of the per-neuron (triangle) relaxation with multipliers proposed in floats; then branch and bound over the box
(bisecting the widest side), each leaf's bound recomputed exactly.  On a polytope the first layer's ranges are
exact linear programs, and the later bounds are taken over the polytope's bounding box (a bound over a superset is
a bound over D); the witnesses are points of the polytope.  Floats only propose points and multipliers.
"""

from __future__ import annotations

import random as _random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline, Stopwatch
from relusym._bounded.domain import Box, Polytope, as_domain
from relusym._deep.bab_phase import Fix, Leaf, PhaseSearch, TightBounds, tighten
from relusym._deep.bounds import (
    BoundTable,
    ExactLayers,
    Point,
    Region,
    certified_bounds,
)
from relusym._deep.box_witnesses import Witnesses, sample_points
from relusym._deep.lp import DualProof, FloatLP, prove
from relusym._deep.mlp import as_mlp
from relusym._deep.units_cells import CellLeaf, CellSearch, bisect, split_axis, unit_interval
from relusym._deep.witness import exact_point
from relusym._exact.numbers import fraction_str
from relusym.errors import InvalidNetworkError

__all__ = [
    "DEAD",
    "ACTIVE",
    "CROSSING",
    "UNDECIDED",
    "NOT_REQUESTED",
    "UnitCertificate",
    "UnitStatus",
    "unit_status",
    "first_layer_exact",
    "interval_unit",
    "bounding_box",
    "statuses_of",
]

DEAD, ACTIVE, CROSSING, UNDECIDED = "dead", "active", "crossing", "undecided"
NOT_REQUESTED = "not requested"  # the reason of a unit left out by unit_status(..., only=...)
_PHASE_SHARE = 0.3  # with search="box+phases": of a pending unit's time, the part left to the phase search
# the cover stage's share of the time left, and within it the witness hunt's and then the second layer's covers'
# shares of what is left when each starts.  On ACAS Xu (networks 1_1 to 1_4 and 3_3 to 3_6 at 13 s each) the
# second layer's covers prove the most units per second; the later layers' covers proved none and the per-unit LP
# search after the covers none (both end early when they give up, leaving the time to what follows)
_COVER_SHARE, _HUNT_SHARE, _SECOND_SHARE = 0.95, 0.15, 0.8
# after the second layer's covers, the walks' share of the time left to the stage (they end early: a few LPs a
# start, at most 16 starts a unit)
_WALK_SHARE = 0.5
# after the second layer's covers, the cell search's share of the stage's time left for the second-layer units
# the covers left (units_cells: LP leaves, far fewer than the covers' CROWN leaves; it ends when they are settled)
_CELLS_SHARE = 0.7
# the second layer's covers may use this many times ``cover_leaves`` leaves (the cell search follows them): on ACAS
# Xu (1_2, 1_3, 1_7) the covers that close do so within about 1,100 leaves, and the rounds up to 16,384 leaves took
# 4 to 5 s on the one unit each they could not close (the cell search proves it in 2 to 8 s alone)
_SECOND_WIDE = 16
_LONG_HUNT = (128, 400)  # the last hunt's starts per unit and steps per start
_SEARCHES = ("box", "phases", "box+phases")


@dataclass(frozen=True)
class UnitCertificate:
    """Why a unit has its status.

    dead/active: ``bound`` is the exact max (dead) or min (active) of the bounds proved over ``regions``, boxes
    that cover the domain (one region: the domain's box), ``method`` is ``"interval"``, ``"relaxation"``,
    ``"exact-lp"`` (first layer on a polytope), ``"branch-and-bound"`` or ``"cover"`` (the leaves of an input
    splitting, :mod:`relusym._deep.box_cover`: each region's bound is :func:`relusym._deep.bounds.unit_bound` from
    the region's exact table of the earlier layers).  crossing: ``negative``/``positive`` are
    exact points of the domain and ``values`` the exact pre-activations there (``method`` ``"walk"`` when the
    walk over linear regions, :mod:`relusym._deep.units_walk`, found the missing sign, else empty).
    undecided: ``reason``.
    method ``"cells"`` (:mod:`relusym._deep.units_cells`): ``regions``, ``phases`` and ``proofs`` are parallel,
    one entry a leaf: the inputs of ``regions[i]`` where the fixes ``phases[i]`` hold, proved by the exact dual
    proof ``proofs[i]`` on the region's exact table of the earlier layers with the fixes applied (None, with no
    fixes: the region's interval bound); the distinct regions tile the box and each region's fix sets cover it.
    ``proofs`` (method ``"lp"``), one per region or None: the exact dual certificate of the triangle relaxation
    (:class:`relusym._deep.lp.DualProof`, sign +1 for dead, −1 for active) that proves the region's bound from
    the region's exact interval/relaxation bounds of the earlier layers.
    method ``"phase-bab"`` (branch and bound on the phases of earlier units, :mod:`relusym._deep.bab_phase`):
    one region (the domain's box), ``phases[i]`` the fixes of leaf i and ``proofs[i]`` its exact dual proof on
    the leaf's bounds; the earlier layers' bounds are the box's bound table or, when ``tight`` is given, the
    LP-tightened bounds it proves."""

    layer: int
    unit: int
    status: str
    bound: Fraction | None = None
    method: str = ""
    regions: tuple[Region, ...] = ()
    negative: Point | None = None
    positive: Point | None = None
    values: tuple[Fraction, Fraction] | None = None
    reason: str = ""
    proofs: tuple[DualProof | None, ...] = ()
    phases: tuple[tuple[Fix, ...], ...] = ()
    tight: TightBounds | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"layer": self.layer, "unit": self.unit, "status": self.status}
        if self.bound is not None:
            d["bound"] = fraction_str(self.bound)
            d["method"] = self.method
            d["regions"] = len(self.regions)
            d["dual_proofs"] = sum(p is not None for p in self.proofs)
            if self.phases:
                d["phase_leaves"] = len(self.phases)
        if self.negative is not None and self.positive is not None and self.values is not None:
            d["negative"] = [fraction_str(v) for v in self.negative]
            d["positive"] = [fraction_str(v) for v in self.positive]
            d["values"] = [fraction_str(v) for v in self.values]
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass(frozen=True)
class UnitStatus:
    """The status of every hidden unit on a domain: ``statuses[ℓ][j]`` for hidden layer ℓ + 1 (0-based lists),
    with ``certificates`` of the same shape."""

    domain: Box | Polytope
    statuses: tuple[tuple[str, ...], ...]
    certificates: tuple[tuple[UnitCertificate, ...], ...]
    elapsed: float = field(default=0.0, compare=False)

    def counts(self) -> dict[str, int]:
        out = {DEAD: 0, ACTIVE: 0, CROSSING: 0, UNDECIDED: 0}
        for layer in self.statuses:
            for s in layer:
                out[s] += 1
        return out

    def units(self, status: str) -> list[tuple[int, int]]:
        """(layer, unit) pairs with that status, layers 1-based."""
        return [(ell + 1, j) for ell, lay in enumerate(self.statuses) for j, s in enumerate(lay) if s == status]

    @property
    def complete(self) -> bool:
        return all(s != UNDECIDED for lay in self.statuses for s in lay)

    def to_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain.to_dict(),
            "counts": self.counts(),
            "statuses": [list(lay) for lay in self.statuses],
            "certificates": [[c.to_dict() for c in lay] for lay in self.certificates],
        }

    def __str__(self) -> str:
        c = self.counts()
        return ", ".join(f"{v} {k}" for k, v in c.items())


def bounding_box(dom: Box | Polytope) -> tuple[Point, Point]:
    """The domain's box, or the bounding box of a polytope (exact linear programs); refused when unbounded."""
    if isinstance(dom, Box):
        return dom.lo, dom.hi
    lo, hi = [], []
    for j in range(dom.m):
        e = [Fraction(int(i == j)) for i in range(dom.m)]
        a, b = dom.range_of(e, Fraction(0))
        if a is None or b is None:
            raise InvalidNetworkError(f"the polytope is unbounded along coordinate {j}; unit statuses need a bound")
        lo.append(a)
        hi.append(b)
    return tuple(lo), tuple(hi)


# ----------------------------------------------------------------------------------------------------------
# the decision


def first_layer_exact(dom: Polytope, layers: ExactLayers) -> tuple[list[Fraction], list[Fraction]]:
    lo, hi = [], []
    for row in layers.rows[0]:
        a, b = dom.range_of(row[:-1], row[-1])
        assert a is not None and b is not None  # the polytope is bounded (checked by bounding_box)
        lo.append(a)
        hi.append(b)
    return lo, hi


def _table(
    layers: ExactLayers, box: Region, upto: int, first: tuple[list[Fraction], list[Fraction]] | None
) -> BoundTable:
    return certified_bounds(layers, box[0], box[1], upto, first=first)


interval_unit = unit_interval  # exact interval bounds of z[ell][j] from a table's bounds of layer ell − 1


class _Search:
    """Branch and bound for one unit: bisect the box until every leaf proves one side (interval arithmetic and
    the relaxation, then the triangle LP with an exact dual proof) or a witness shows the other sign; leaf tables
    are cached and shared between units."""

    def __init__(self, layers: ExactLayers, dom: Box | Polytope, root: Region, wit: Witnesses, deadline: Deadline):
        self.layers, self.dom, self.root, self.wit, self.deadline = layers, dom, root, wit, deadline
        self.cache: dict[Region, BoundTable] = {}
        self.first = first_layer_exact(dom, layers) if isinstance(dom, Polytope) else None

    def table(self, box: Region, upto: int) -> BoundTable:
        t = self.cache.get(box)
        if t is None or len(t.lower) <= upto:
            t = _table(self.layers, box, upto, self.first if box == self.root else None)
            self.cache[box] = t
        return t

    def _lp(self, box: Region, t: BoundTable, ell: int, j: int, sign: int) -> tuple[DualProof | None, int | None]:
        """The LP's exact dual proof of sign·z ≤ value on the box (None when the float optimum is not ≤ 0) and
        the coordinate to split next (the largest |λ_x,i|·(hi_i − lo_i) of the LP's multipliers)."""
        fl = [np.array([float(v) for v in lay]) for lay in t.lower]
        fu = [np.array([float(v) for v in lay]) for lay in t.upper]
        r = FloatLP(self.layers, box[0], box[1]).solve(ell, j, sign, fl, fu)
        if r is None:
            return None, None
        opt, mus, x = r
        width = np.array([float(b - a) for a, b in zip(box[0], box[1], strict=True)])
        axis = split_axis(self.layers, mus, fl, fu, width)
        lo = np.array([float(v) for v in box[0]])
        u = np.where(width > 0, (x - lo) / np.where(width > 0, width, 1.0), 0.0)
        pt = exact_point(box[0], box[1], u)
        if self.dom.contains(pt):
            self.wit.record(pt)
        if opt > 0:
            return None, axis
        return prove(self.layers, ell, j, sign, mus, box, t.lower, t.upper), axis

    def run(self, ell: int, j: int, max_leaves: int = 4096, deadline: Deadline | None = None) -> UnitCertificate | None:
        end = self.deadline if deadline is None else Deadline.at(min(deadline.end, self.deadline.end))
        stack = [self.root]
        dead: list[tuple[Region, Fraction, DualProof | None]] = []
        active: list[tuple[Region, Fraction, DualProof | None]] = []
        # the sign to prove: a point where the unit is < 0 rules out "active", one where it is > 0 "dead"
        sign = -1 if self.wit.pos[ell][j] is not None else 1
        while stack:
            if end.expired() or len(dead) + len(active) + len(stack) > max_leaves:
                return None
            box = stack.pop()
            axis = None
            if ell == 0:
                t = self.table(box, ell)
                il, iu = t.raw_lower[ell][j], t.raw_upper[ell][j]
            else:
                # the earlier layers' proved bounds, interval arithmetic for the unit, then the LP's dual proof
                t = self.table(box, ell - 1)
                il, iu = interval_unit(self.layers, t, ell, j)
            if iu <= 0:
                dead.append((box, iu, None))
                continue
            if il >= 0:
                active.append((box, il, None))
                continue
            if ell > 0:
                proof, axis = self._lp(box, t, ell, j, sign)
                if proof is not None and proof.value <= 0:
                    if sign > 0:
                        dead.append((box, proof.value, proof))
                    else:
                        active.append((box, -proof.value, proof))
                    continue
            if self.wit.crossing(ell, j):
                return _crossing_cert(self.wit, ell, j)
            centre = tuple((a + b) / 2 for a, b in zip(box[0], box[1], strict=True))
            if self.dom.contains(centre):
                self.wit.record(centre)
                if self.wit.crossing(ell, j):
                    return _crossing_cert(self.wit, ell, j)
            stack.extend(bisect(box, self.root, axis))
        for side, status in ((dead, DEAD), (active, ACTIVE)):
            other = active if side is dead else dead
            if side and not other:
                bound = max(b for _, b, _ in side) if status == DEAD else min(b for _, b, _ in side)
                proofs = tuple(p for _, _, p in side) if ell > 0 else ()
                how = "lp" if ell > 0 else "branch-and-bound"
                return UnitCertificate(ell + 1, j, status, bound, how, tuple(r for r, _, _ in side), proofs=proofs)
        return None


class _Phases:
    """The phase branch and bound of the units of a domain, on the root box's bounds (one search, shared)."""

    def __init__(
        self, layers: ExactLayers, dom: Box | Polytope, root: Region, wit: Witnesses, table: BoundTable, tight: bool
    ) -> None:
        self.layers, self.dom, self.root, self.wit, self.table = layers, dom, root, wit, table
        self.tight: TightBounds | None = None
        self.want_tight = tight
        self.search: PhaseSearch | None = None
        self.lo = np.array([float(v) for v in root[0]])
        self.width = np.array([float(b - a) for a, b in zip(root[0], root[1], strict=True)])

    def _searcher(self, ell: int, deadline: Deadline) -> PhaseSearch:
        if self.want_tight and (self.tight is None or len(self.tight.lower) < ell):
            first = (self.table.raw_lower[0], self.table.raw_upper[0])
            self.tight = tighten(self.layers, self.root, first, ell - 1, deadline, self.tight)
            self.search = None
        if self.search is None:
            if self.tight is not None:
                self.search = PhaseSearch(self.layers, self.root, self.tight.lower, self.tight.upper)
            else:
                self.search = PhaseSearch(self.layers, self.root, self.table.lower, self.table.upper)
        return self.search

    def _point(self, x: np.ndarray) -> None:
        u = np.where(self.width > 0, (x - self.lo) / np.where(self.width > 0, self.width, 1.0), 0.0)
        pt = exact_point(self.root[0], self.root[1], u)
        if self.dom.contains(pt):
            self.wit.record(pt)

    def run(self, ell: int, j: int, max_leaves: int, deadline: Deadline) -> UnitCertificate | None:
        ps = self._searcher(ell, deadline)
        for _ in range(2):
            if self.wit.crossing(ell, j):
                return _crossing_cert(self.wit, ell, j)
            sign = -1 if self.wit.pos[ell][j] is not None else 1
            side = self.wit.pos if sign > 0 else self.wit.neg

            def seen(x: np.ndarray, side: list[list[tuple[Point, Fraction] | None]] = side) -> bool:
                self._point(x)
                return side[ell][j] is not None

            leaves = ps.run(ell, j, sign, deadline, max_leaves, seen)
            if leaves is not None:
                return _phase_cert(ell, j, sign, leaves, self.root, self.tight)
            if side[ell][j] is None or deadline.expired():
                break
        return _crossing_cert(self.wit, ell, j) if self.wit.crossing(ell, j) else None


def _phase_cert(
    ell: int, j: int, sign: int, leaves: Sequence[Leaf], root: Region, tight: TightBounds | None
) -> UnitCertificate:
    vals = [lf.proof.value for lf in leaves]
    status, bound = (DEAD, max(vals)) if sign > 0 else (ACTIVE, -max(vals))
    return UnitCertificate(
        ell + 1,
        j,
        status,
        bound,
        "phase-bab",
        (root,),
        proofs=tuple(lf.proof for lf in leaves),
        phases=tuple(lf.fixes for lf in leaves),
        tight=tight,
    )


def _cells_units(
    cells: CellSearch,
    wit: Witnesses,
    certs: list[list[UnitCertificate]],
    units: Sequence[tuple[int, int]],
    deadline: Deadline,
    max_boxes: int,
) -> set[tuple[int, int]]:
    """The cell search for each unit in turn (an equal share of the time left each); the units proved, their
    certificates written into ``certs`` (a crossing found is left to the caller, in ``wit``)."""
    out = set()
    for i, (ell, j) in enumerate(units):
        found = None if deadline.expired() else cells.run(ell, j, deadline.sub(1 / (len(units) - i)), max_boxes)
        if found is not None:
            certs[ell][j] = _cells_cert(ell, j, *found)
            out.add((ell, j))
    return out


def _cells_cert(ell: int, j: int, sign: int, leaves: Sequence[CellLeaf]) -> UnitCertificate:
    worst = max(lf.value for lf in leaves)
    status, bound = (DEAD, worst) if sign > 0 else (ACTIVE, -worst)
    return UnitCertificate(
        ell + 1,
        j,
        status,
        bound,
        "cells",
        tuple(lf.region for lf in leaves),
        proofs=tuple(lf.proof for lf in leaves),
        phases=tuple(lf.fixes for lf in leaves),
    )


def _crossing_cert(wit: Witnesses, ell: int, j: int, how: str = "") -> UnitCertificate:
    neg, pos = wit.neg[ell][j], wit.pos[ell][j]
    assert neg is not None and pos is not None
    return UnitCertificate(ell + 1, j, CROSSING, method=how, negative=neg[0], positive=pos[0], values=(neg[1], pos[1]))


def _root_cert(t: BoundTable, ell: int, j: int, root: Region, polytope: bool) -> UnitCertificate | None:
    if t.raw_upper[ell][j] <= 0:
        how = "exact-lp" if polytope and ell == 0 else t.how_upper[ell][j]
        return UnitCertificate(ell + 1, j, DEAD, t.raw_upper[ell][j], how, (root,))
    if t.raw_lower[ell][j] >= 0:
        how = "exact-lp" if polytope and ell == 0 else t.how_lower[ell][j]
        return UnitCertificate(ell + 1, j, ACTIVE, t.raw_lower[ell][j], how, (root,))
    return None


def _cover_stage(
    layers: ExactLayers,
    root: Region,
    wit: Witnesses,
    certs: list[list[UnitCertificate]],
    pending: list[tuple[int, int]],
    deadline: Deadline,
    leaves: int,
    cells: CellSearch | None = None,
) -> list[tuple[int, int]]:
    """The witness hunt, the walks of :mod:`relusym._deep.units_walk`, the covers of
    :mod:`relusym._deep.box_cover` and, for the second layer's units the covers leave, the cell search of
    :mod:`relusym._deep.units_cells` (``cells``), for the pending units (with ``_COVER_SHARE`` of the time left);
    returns the units still pending."""
    from relusym._deep.box_cover import cover_units, hunt
    from relusym._deep.units_walk import walk_units
    from relusym._deep.witness import FloatNet

    until = deadline.sub(_COVER_SHARE)
    # the witness hunt first (a crossing found costs no cover), then the second layer's covers (their leaves are
    # proved in one batch, the cheapest proofs; the covers grow in rounds), then the later layers' covers with the
    # rest (on ACAS Xu their float bounds settle no leaf of most of them: they are given up within a second)
    net = FloatNet(layers, root[0], root[1])
    hunt(wit, net, root, pending, until.sub(_HUNT_SHARE))
    second = [(ell, j) for ell, j in pending if ell <= 1 and not wit.crossing(ell, j)]
    later = [(ell, j) for ell, j in pending if ell > 1 and not wit.crossing(ell, j)]
    proved = cover_units(layers, root, wit, second, until.sub(_SECOND_SHARE) if later else until, leaves, _SECOND_WIDE)
    # the second layer's units the covers left: the cell search (LP leaves finished by phase splitting)
    done = {(p.ell, p.j) for p in proved}
    left2 = [(ell, j) for ell, j in second if ell == 1 and (ell, j) not in done and not wit.crossing(ell, j)]
    if cells is not None and left2:
        done |= _cells_units(cells, wit, certs, left2, until.sub(_CELLS_SHARE) if later else until, leaves * 16)
    # then the walks over linear regions (units_walk: a local maximum of the missing sign, one LP a region) for the
    # later layers' units, whose covers rarely close: they end early, and a unit shown crossing costs no cover (the
    # second layer's covers go first: they prove the most units a second, and the walks would take their time)
    walked = set(walk_units(wit, net, root, later, until.sub(_WALK_SHARE)))
    later = [(ell, j) for ell, j in later if not wit.crossing(ell, j)]
    proved += cover_units(layers, root, wit, later, until, leaves) if later else []
    # what the covers left: a long hunt for the missing sign with the rest of the stage's time (on ACAS Xu it finds
    # the sign of about one unit in ten of those, a region no uniform sample and no short ascent hits)
    done |= {(p.ell, p.j) for p in proved}
    rest = [(ell, j) for ell, j in pending if (ell, j) not in done and not wit.crossing(ell, j)]
    walked |= set(walk_units(wit, net, root, [(ell, j) for ell, j in rest if ell <= 1], until))
    rest = [(ell, j) for ell, j in rest if not wit.crossing(ell, j)]
    hunt(wit, net, root, rest, until, starts=_LONG_HUNT[0], steps=_LONG_HUNT[1], seed=7)
    for p in proved:
        status = DEAD if p.sign < 0 else ACTIVE
        how = "cover" if p.ell > 0 else "branch-and-bound"
        certs[p.ell][p.j] = UnitCertificate(p.ell + 1, p.j, status, p.bound, how, p.regions)
    left = []
    for ell, j in pending:
        if wit.crossing(ell, j):
            certs[ell][j] = _crossing_cert(wit, ell, j, "walk" if (ell, j) in walked else "")
        elif certs[ell][j].status == UNDECIDED:
            left.append((ell, j))
    return left


def unit_status(
    net: Any,
    domain: Any,
    *,
    budget: float = 10.0,
    samples: int = 4096,
    seed: int = 0,
    max_leaves: int = 4096,
    search: str = "box",
    tighten_bounds: bool = False,
    cover_leaves: int = 256,
    only: Iterable[tuple[int, int]] | None = None,
) -> UnitStatus:
    """The status of every hidden unit of ``net`` on ``domain`` (a Box, a Polytope or a pair (lo, hi)), exact.

    ``samples`` random points (plus the centre and, for m ≤ 10, the corners of a box) propose the crossing
    witnesses, each confirmed by exact evaluation; ``budget`` seconds bound the branch and bound, ``max_leaves``
    the boxes (or phase leaves) it may open per unit.  ``search``: ``"box"`` (branch and bound on the input box),
    ``"phases"`` (on the phases of the earlier units, :mod:`relusym._deep.bab_phase`, each leaf's LP maximizer
    also a witness) or ``"box+phases"`` (the box first, then the phases with 30% of the unit's time); on ACAS Xu
    the input box alone settles the most units within a budget (``benchmarks/bench_deep_box.py --search``);
    ``tighten_bounds``: the phase search on bounds of the earlier layers tightened by LP (proved, and kept in the
    certificates; costly on deep networks).  On a box, before the box searches, the pending units get a long float
    search for their missing sign, walks over linear regions towards it (:mod:`relusym._deep.units_walk`, one LP
    a region; a crossing so found has method ``"walk"``) and covers by input splitting
    (:mod:`relusym._deep.box_cover`: at most ``cover_leaves`` leaves a unit, 16 times as many in the second layer,
    each leaf's bound exact; 0 turns the stage off); the second-layer units the covers leave go to the cell search
    (:mod:`relusym._deep.units_cells`, method ``"cells"``: sub-boxes each closed by its own exact table's interval
    bound, its triangle LP's exact dual proof or, when few earlier units are unstable on it, a phase branch and
    bound there).  Units left unproved are "undecided" with the reason.
    ``only``: the (layer, unit) pairs to classify (layers 1-based, as the certificates number them); the other
    units keep the cheap statuses (witnesses, the root's bound table) and are otherwise "undecided" with reason
    "not requested"."""
    clock = Stopwatch()
    deadline = Deadline(budget)
    if isinstance(cover_leaves, bool) or not isinstance(cover_leaves, int) or cover_leaves < 0:
        raise InvalidNetworkError(f"cover_leaves must be a non-negative integer, got {cover_leaves!r}")
    if search not in _SEARCHES:
        raise InvalidNetworkError(f"search must be one of {', '.join(_SEARCHES)}, got {search!r}")
    mlp = as_mlp(net)
    dom = as_domain(domain, mlp.m)
    layers = ExactLayers.of(mlp)
    wanted = _requested(layers, only)
    root = bounding_box(dom)
    rng = _random.Random(seed)
    wit = Witnesses(layers)
    if isinstance(dom, Box) and layers.hidden:
        wit.record(dom.interior_point())
        wit.search_box(root, max(0, int(samples)), seed, deadline)
    else:
        wit.search(sample_points(dom, root, max(0, int(samples)), rng))
    search_ = _Search(layers, dom, root, wit, deadline)
    table = search_.table(root, layers.hidden - 1) if layers.hidden else None
    certs: list[list[UnitCertificate]] = []
    pending: list[tuple[int, int]] = []
    for ell in range(layers.hidden):
        row: list[UnitCertificate] = []
        for j in range(layers.widths[ell + 1]):
            c = _crossing_cert(wit, ell, j) if wit.crossing(ell, j) else None
            if c is None and table is not None:
                c = _root_cert(table, ell, j, root, isinstance(dom, Polytope))
            if c is None and wanted is not None and (ell, j) not in wanted:
                c = UnitCertificate(ell + 1, j, UNDECIDED, reason=NOT_REQUESTED)
            if c is None:
                pending.append((ell, j))
                c = UnitCertificate(ell + 1, j, UNDECIDED, reason="pending")
            row.append(c)
        certs.append(row)
    cells = CellSearch(layers, root, wit, search_.table) if isinstance(dom, Box) else None
    if isinstance(dom, Box) and pending and cover_leaves > 0 and search != "phases":
        pending = _cover_stage(layers, root, wit, certs, pending, deadline, cover_leaves, cells)
    use_box, use_phases = search in ("box", "box+phases"), search in ("phases", "box+phases")
    phase = _Phases(layers, dom, root, wit, table, tighten_bounds) if use_phases and table is not None else None
    for i, (ell, j) in enumerate(pending):
        left = len(pending) - i
        share = deadline.sub(2 / left)
        c2 = _crossing_cert(wit, ell, j) if wit.crossing(ell, j) else None
        if c2 is None and use_box:
            first_part = share if phase is None or ell == 0 else share.sub(1 - _PHASE_SHARE)
            c2 = search_.run(ell, j, max_leaves, first_part)
        if c2 is None and phase is not None and ell > 0:
            c2 = _crossing_cert(wit, ell, j) if wit.crossing(ell, j) else phase.run(ell, j, max_leaves, share)
        if c2 is None:
            c2 = UnitCertificate(
                ell + 1,
                j,
                UNDECIDED,
                reason=f"neither a proof of one sign nor inputs of both signs within budget = {budget} s "
                f"and {max_leaves} boxes",
            )
        certs[ell][j] = c2
    return UnitStatus(
        dom,
        tuple(tuple(c.status for c in row) for row in certs),
        tuple(tuple(row) for row in certs),
        clock.elapsed(),
    )


def _requested(layers: ExactLayers, only: Iterable[tuple[int, int]] | None) -> set[tuple[int, int]] | None:
    """``only``'s (layer, unit) pairs (1-based layers) as 0-based (layer, unit) pairs; refused when out of range."""
    if only is None:
        return None
    out = set()
    for pair in only:
        try:
            ell, j = (int(v) for v in pair)
        except (TypeError, ValueError):
            raise InvalidNetworkError(f"only: expected (layer, unit) pairs, got {pair!r}") from None
        if not (1 <= ell <= layers.hidden and 0 <= j < layers.widths[ell]):
            raise InvalidNetworkError(
                f"only: no hidden unit ({ell}, {j}) (layers 1..{layers.hidden}, numbered as the certificates)"
            )
        out.add((ell - 1, j))
    return out


def statuses_of(result: UnitStatus) -> list[list[str]]:
    return [list(lay) for lay in result.statuses]
