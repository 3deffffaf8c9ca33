"""Dead/active proofs by input splitting whose leaves are finished by phase splitting ("cells", issue 22).

To prove sign·z[T][unit] ≤ 0 on a box (sign +1: dead, −1: active), the box is bisected depth first.  On each
sub-box B the bounds of the layers before T are B's own exact bound table (:func:`relusym._deep.bounds.
certified_bounds` on B, far tighter than the root's on a small B), and B is closed by the first of:

* interval arithmetic of the unit from that table (no multipliers);
* optimised slopes (:func:`relusym._deep.alpha.alpha_proof`, about the triangle LP's optimum without a solve):
  their multipliers' exact dual proof when their float bound is below 0; when it is not and the phase search
  below cannot run, B is bisected by their multipliers without an LP;
* the triangle LP on B, its float multipliers rounded to dyadics and the Lagrangian bound evaluated exactly
  (:func:`relusym._deep.lp.prove`);
* when at most ``max_unstable`` earlier units are unstable on B (a small sub-box is crossed by few of the
  network's bends): the phase branch and bound of :mod:`relusym._deep.bab_phase` on B and B's table, at most
  ``phase_leaves`` leaves.  With every unstable unit of B fixed the network is affine on the leaf and the LP is
  exact, so a margin however thin is closed by a finite tree, and a leaf's positive LP maximizer is a point of the
  other sign (the candidate is evaluated exactly).

Otherwise B is bisected across the side that carries most of the LP's relaxation gap (``split_axis``).  Every
LP maximizer is offered as a crossing witness (kept only after exact evaluation).

The certificate (method ``"cells"``) is a list of leaves, three parallel tuples: ``regions[i]`` (a sub-box),
``phases[i]`` (fixes of earlier units, empty for a whole sub-box) and ``proofs[i]`` (the exact dual proof on the
region's table with the fixes applied, or None for the region's interval bound).  The checker
(:mod:`relusym._deep.box_check`) recomputes every region's table, checks that the distinct regions tile the box,
that the fix sets of each region cover it (:func:`relusym._deep.bab_phase.covers`) and every leaf's bound.
Floats choose the splits, the multipliers and the points; none of them is trusted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from relusym._base.deadline import Deadline
from relusym._deep.alpha import alpha_proof
from relusym._deep.bab_phase import Fix, PhaseSearch
from relusym._deep.bounds import BoundTable, ExactLayers, Region, interval_bounds
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.lp import DualProof, FloatLP, prove
from relusym._deep.witness import GRID, FloatNet, exact_point

__all__ = ["CellLeaf", "CellSearch", "bisect", "split_axis", "unit_interval", "MAX_UNSTABLE", "PHASE_LEAVES"]

MAX_UNSTABLE = 16  # a sub-box goes to the phase search when at most so many earlier units are unstable on it
PHASE_LEAVES = 64  # the phase search's leaves on one sub-box (more: the sub-box is bisected instead)

TableOf = Callable[[Region, int], BoundTable]


@dataclass(frozen=True)
class CellLeaf:
    """One leaf: the inputs of ``region`` where every fix holds; ``value`` bounds sign·z there (≤ 0), by
    ``proof`` (None: the region's interval bound, no fixes)."""

    region: Region
    fixes: tuple[Fix, ...]
    proof: DualProof | None
    value: Fraction


def unit_interval(layers: ExactLayers, t: BoundTable, ell: int, j: int) -> tuple[Fraction, Fraction]:
    """Exact interval bounds of z[ell][j] (ell ≥ 1) from the table's rounded bounds of layer ell − 1."""
    zero = Fraction(0)
    lo = [max(v, zero) for v in t.lower[ell - 1]]
    hi = [max(v, zero) for v in t.upper[ell - 1]]
    one = ExactLayers([layers.rows[ell][j : j + 1]], len(lo))
    il, iu = interval_bounds(one, 0, lo, hi)
    return il[0], iu[0]


def bisect(box: Region, root: Region, axis: int | None = None) -> tuple[Region, Region]:
    """The two halves of ``box`` across ``axis`` (the widest side relative to the root's when None, or when the
    side is already 4096 times narrower than the root's)."""
    lo, hi = box
    j = axis
    if j is None or hi[j] <= lo[j] or (hi[j] - lo[j]) * 4096 < root[1][j] - root[0][j]:
        j = max(range(len(lo)), key=lambda t: (hi[t] - lo[t]) / (root[1][t] - root[0][t]))
    mid = (lo[j] + hi[j]) / 2
    return (lo, hi[:j] + (mid,) + hi[j + 1 :]), (lo[:j] + (mid,) + lo[j + 1 :], hi)


def split_axis(
    layers: ExactLayers,
    mus: Sequence[np.ndarray],
    fl: Sequence[np.ndarray],
    fu: Sequence[np.ndarray],
    width: np.ndarray,
) -> int:
    """The input coordinate to bisect: each unsettled earlier unit's relaxation gap (|μ|·(−l·u/(u − l)), the
    height of its triangle weighted by its multiplier) shared among the inputs by their interval influence on it
    (|W| products times the widths)."""
    score = np.zeros(len(width))
    S = np.diag(width)
    for k, mu in enumerate(mus):
        S = np.abs(layers.Wf[k]) @ S
        l, u = fl[k], fu[k]
        cross = (l < 0) & (u > 0)
        if not cross.any():
            continue
        gap = np.abs(mu[cross]) * (-l[cross] * u[cross] / (u[cross] - l[cross]))
        share = S[cross] / np.maximum(S[cross].sum(axis=1, keepdims=True), 1e-300)
        score += gap @ share
    return int(np.argmax(score)) if score.any() else int(np.argmax(width))


class CellSearch:
    """The search of the module docstring for units of one box; ``table(region, upto)`` gives a region's exact
    bound table of layers 0 … upto (cached by the caller and shared between units)."""

    def __init__(
        self,
        layers: ExactLayers,
        root: Region,
        wit: Witnesses,
        table: TableOf,
        max_unstable: int = MAX_UNSTABLE,
        phase_leaves: int = PHASE_LEAVES,
        alpha: bool = True,
    ) -> None:
        self.layers, self.root, self.wit, self.table = layers, root, wit, table
        self.alpha = alpha
        self.max_unstable, self.phase_leaves = max_unstable, phase_leaves
        self.lo = np.array([float(v) for v in root[0]])
        self.width = np.array([float(b - a) for a, b in zip(root[0], root[1], strict=True)])
        self.net = FloatNet(layers, root[0], root[1])

    def _offer(self, x: np.ndarray, ell: int, j: int, sign: int) -> None:
        """A float input (original coordinates) as a witness candidate for sign·z[ell][j] > 0: its grid point,
        evaluated exactly when the floats give it that sign there (an LP maximizer of a relaxation rarely has it,
        and the exact evaluation of the whole network is the dearer part)."""
        u = np.where(self.width > 0, (x - self.lo) / np.where(self.width > 0, self.width, 1.0), 0.0)
        u = np.clip(np.rint(u * GRID), 0, GRID) / GRID
        if sign * self.net.preactivations(u[None, :], ell)[ell][0, j] > 0:
            self.wit.record(exact_point(self.root[0], self.root[1], u))

    def run(self, ell: int, j: int, deadline: Deadline, max_boxes: int = 4096) -> tuple[int, list[CellLeaf]] | None:
        """(sign, leaves) proving sign·z[ell][j] ≤ 0 on the box (ell ≥ 1, 0-based), the sign the witnesses leave
        possible; None when the deadline or ``max_boxes`` sub-boxes stop the search, or when a witness of the
        other sign is found (``wit.crossing(ell, j)`` then holds)."""
        sign = -1 if self.wit.pos[ell][j] is not None else 1
        side = self.wit.pos if sign > 0 else self.wit.neg
        stack = [self.root]
        leaves: list[CellLeaf] = []
        boxes = 0
        while stack:
            if deadline.expired() or boxes >= max_boxes:
                return None
            box = stack.pop()
            boxes += 1
            done = self._box(box, ell, j, sign, deadline)
            if side[ell][j] is not None:
                return None
            if isinstance(done, list):
                leaves += done
            else:
                stack.extend(bisect(box, self.root, done))
        return sign, leaves

    def _box(self, box: Region, ell: int, j: int, sign: int, deadline: Deadline) -> list[CellLeaf] | int | None:
        """The leaves closing ``box``, or the axis to bisect it across (None: the widest)."""
        t = self.table(box, ell - 1)
        il, iu = unit_interval(self.layers, t, ell, j)
        v = iu if sign > 0 else -il
        if v <= 0:
            return [CellLeaf(box, (), None, v)]
        fl = [np.array([float(q) for q in r]) for r in t.lower[:ell]]
        fu = [np.array([float(q) for q in r]) for r in t.upper[:ell]]
        unstable = sum(int(np.count_nonzero((a < 0) & (b > 0))) for a, b in zip(fl, fu, strict=True))
        if self.alpha:
            # optimised slopes first (alpha.py: about the LP's optimum, without a solve); a box they leave open with
            # too many unstable units for the phase search is split by their multipliers, its centre offered
            val, amus, p = alpha_proof(self.layers, ell, j, sign, box, t.lower[:ell], t.upper[:ell], fl, fu)
            if p is not None and p.value <= 0:
                return [CellLeaf(box, (), p, p.value)]
            if unstable > self.max_unstable:
                lo, hi = (np.array([float(q) for q in c]) for c in box)
                self._offer((lo + hi) / 2, ell, j, sign)
                return split_axis(self.layers, amus, fl, fu, hi - lo)
        r = FloatLP(self.layers, box[0], box[1]).solve(ell, j, sign, fl, fu)
        if r is None:
            return None
        opt, mus, x = r
        if opt > 0:
            self._offer(x, ell, j, sign)
        else:
            p = prove(self.layers, ell, j, sign, mus, box, t.lower[:ell], t.upper[:ell])
            if p.value <= 0:
                return [CellLeaf(box, (), p, p.value)]
        if unstable <= self.max_unstable:
            side = self.wit.pos if sign > 0 else self.wit.neg

            def seen(x: np.ndarray) -> bool:
                self._offer(x, ell, j, sign)
                return side[ell][j] is not None

            ps = PhaseSearch(self.layers, box, t.lower[:ell], t.upper[:ell])
            found = ps.run(ell, j, sign, deadline, self.phase_leaves, seen, first=r)
            if found is not None:
                return [CellLeaf(box, lf.fixes, lf.proof, lf.proof.value) for lf in found]
        width = np.array([float(b - a) for a, b in zip(box[0], box[1], strict=True)])
        return split_axis(self.layers, mus, fl, fu, width)
