"""Branch and bound on the activation phases of earlier units, every leaf proved exactly (issue 22).

To prove sign·z[T][unit] ≤ 0 on a box B, given proved bounds l_k ≤ z_k ≤ u_k (k < T) on B: a *leaf* is a set
of phase fixes {(k, i, ±)} on units with l_ki < 0 < u_ki, and stands for the inputs of B where each fixed unit has
its phase (z_ki ≤ 0 for −, z_ki ≥ 0 for +).  On a leaf the bounds of a fixed unit are [l, 0] or [0, u], and the
triangle relaxation there is the exact graph of the ReLU (h = 0, or h = z): so the leaf's Lagrangian dual bound
(:func:`relusym._deep.lp.prove`, evaluated exactly with the leaf's bounds) is a valid bound of sign·z over the
leaf's inputs.  Every input of B has each unit's pre-activation ≤ 0 or ≥ 0, so the leaves of a split tree cover B;
``covers`` re-checks that from the fix sets alone.  A leaf whose relaxation is infeasible (no input has those
phases) is proved by the dual of the elastic LP (slacks of large cost on the equalities: its multipliers, scaled
Farkas multipliers, give an exact bound ≤ 0 like any others).

With every unstable earlier unit fixed, the leaf's LP is exact (the network is affine on the leaf), so the search
is complete up to float tolerance: either every leaf is proved, or a leaf's LP maximizer is an input where
sign·z > 0 (the caller checks it exactly).  The unit to split is the one whose triangle costs the LP most at its
multipliers: min(max(−μ l, 0), max((λ − μ) u, 0)), λ the unit's outgoing multiplier.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from relusym._base.deadline import Deadline
from relusym._deep.bounds import ExactLayers, Region, dual_bounds, interval_bounds, round_out
from relusym._deep.lp import DualProof, FloatLP, check_proof, prove

__all__ = [
    "Fix",
    "Leaf",
    "LayerProof",
    "TightBounds",
    "PhaseSearch",
    "apply_fixes",
    "covers",
    "check_leaf",
    "tighten",
    "tight_bounds",
]

Fix = tuple[int, int, int]  # (layer k, unit i, phase: +1 for z ≥ 0, −1 for z ≤ 0), layers 0-based
Bounds = Sequence[Sequence[Fraction]]

_ELASTIC = (1e4, 1e8)
_BITS = 40


# ----------------------------------------------------------------------------------------------------------
# bounds of the hidden layers tightened by the triangle LP, proved exactly (one batch of proofs per layer)


@dataclass(frozen=True)
class LayerProof:
    """Bounds of layer ``layer`` on the box, one per target r: sign_r · z(layer, unit_r) ≤ value_r (``signs``,
    ``units``, ``values``), by the Lagrangian with the multipliers of target r on layer k < ``layer`` equal to row
    r of ``mus`` (layer k) over 2 to the power ``shifts`` (layer k), evaluated on the tightened bounds of the
    earlier layers."""

    layer: int
    signs: tuple[int, ...]
    units: tuple[int, ...]
    mus: tuple[tuple[tuple[int, ...], ...], ...]
    shifts: tuple[int, ...]
    values: tuple[Fraction, ...]

    def evaluate(self, layers: ExactLayers, box: Region, lower: Bounds, upper: Bounds) -> list[Fraction]:
        T = self.layer
        qm = [
            (np.array([list(r) for r in M], dtype=object).reshape(len(self.units), layers.widths[k + 1]), s)
            for k, (M, s) in enumerate(zip(self.mus, self.shifts, strict=True))
        ]
        return dual_bounds(layers, T, self.signs, self.units, qm, box[0], box[1], lower[:T], upper[:T])


@dataclass(frozen=True)
class TightBounds:
    """Proved bounds of the layers 0 … len(lower) − 1 on ``box``: layer 0 from ``first`` (exact interval
    arithmetic on the box, or a polytope's exact LPs), each later layer from interval arithmetic on the previous
    one, cut by its :class:`LayerProof` (rounded outward to dyadic numbers).  :func:`tight_bounds` recomputes
    ``lower``/``upper`` from the proofs alone."""

    box: Region
    first: tuple[tuple[Fraction, ...], tuple[Fraction, ...]]
    proofs: tuple[LayerProof, ...]
    lower: tuple[tuple[Fraction, ...], ...]
    upper: tuple[tuple[Fraction, ...], ...]


def _layer(
    layers: ExactLayers,
    k: int,
    box: Region,
    lower: list[list[Fraction]],
    upper: list[list[Fraction]],
    proof: LayerProof | None,
) -> tuple[list[Fraction], list[Fraction]] | None:
    zero = Fraction(0)
    il, iu = interval_bounds(layers, k, [max(v, zero) for v in lower[k - 1]], [max(v, zero) for v in upper[k - 1]])
    if proof is not None:
        if proof.layer != k or len(proof.mus) != k or len(proof.shifts) != k:
            return None
        if any(sg not in (1, -1) or not 0 <= u < len(il) for sg, u in zip(proof.signs, proof.units, strict=True)):
            return None
        if any(len(M) != len(proof.units) for M in proof.mus):
            return None
        if any(len(r) != layers.widths[q + 1] for q, M in enumerate(proof.mus) for r in M):
            return None
        vals = proof.evaluate(layers, box, lower, upper) if proof.units else []
        if tuple(vals) != proof.values:
            return None
        for sg, u, v in zip(proof.signs, proof.units, vals, strict=True):
            if sg > 0:
                iu[u] = min(iu[u], v)
            else:
                il[u] = max(il[u], -v)
    return round_out(il, up=False), round_out(iu, up=True)


def tight_bounds(layers: ExactLayers, tb: TightBounds) -> tuple[list[list[Fraction]], list[list[Fraction]]] | None:
    """Recompute the bounds of ``tb`` from its proofs exactly (None when a proof does not evaluate to its value).

    The caller checks ``tb.first`` (the first layer's bounds on the domain)."""
    lower = [list(tb.first[0])]
    upper = [list(tb.first[1])]
    for k, proof in enumerate(tb.proofs, start=1):
        r = _layer(layers, k, tb.box, lower, upper, proof)
        if r is None:
            return None
        lower.append(r[0])
        upper.append(r[1])
    return lower, upper


def tighten(
    layers: ExactLayers,
    box: Region,
    first: tuple[Sequence[Fraction], Sequence[Fraction]],
    upto: int,
    deadline: Deadline,
    base: TightBounds | None = None,
) -> TightBounds:
    """Bounds of the layers 0 … upto with the triangle LP of every unit that interval arithmetic leaves unstable
    (the LP over the tightened earlier layers), proved exactly; layers already in ``base`` are reused."""
    f0 = (tuple(round_out(list(first[0]), up=False)), tuple(round_out(list(first[1]), up=True)))
    if base is not None and base.box == box:
        proofs = list(base.proofs)
        lower = [list(r) for r in base.lower]
        upper = [list(r) for r in base.upper]
        f0 = base.first
    else:
        proofs, lower, upper = [], [list(f0[0])], [list(f0[1])]
    lp = FloatLP(layers, box[0], box[1])
    for k in range(len(lower), upto + 1):
        zero = Fraction(0)
        il, iu = interval_bounds(layers, k, [max(v, zero) for v in lower[k - 1]], [max(v, zero) for v in upper[k - 1]])
        todo = [(j, sg) for j in range(len(il)) if il[j] < 0 < iu[j] for sg in (1, -1)]
        fl = [np.array([float(v) for v in r]) for r in lower]
        fu = [np.array([float(v) for v in r]) for r in upper]
        res = lp.solve_many(k, todo, fl, fu) if todo and not deadline.expired() else []
        keep = [(t, r) for t, r in zip(todo, res, strict=False) if r is not None]
        if keep:
            mus_rows = [np.stack([r[1][q] for _, r in keep]) for q in range(k)]
            Ms, shifts = [], []
            for M in mus_rows:
                M = np.nan_to_num(M, nan=0.0, posinf=0.0, neginf=0.0)
                big = float(np.max(np.abs(M))) if M.size else 0.0
                s = _BITS - math.frexp(big)[1] if big else 0
                Ms.append(tuple(tuple(int(v) for v in row) for row in np.rint(np.ldexp(M, s)).tolist()))
                shifts.append(s)
            proof = LayerProof(
                k,
                tuple(sg for (_, sg), _ in keep),
                tuple(j for (j, _), _ in keep),
                tuple(Ms),
                tuple(shifts),
                (),
            )
            vals = proof.evaluate(layers, box, lower, upper)
            proof = LayerProof(proof.layer, proof.signs, proof.units, proof.mus, proof.shifts, tuple(vals))
        else:
            proof = LayerProof(k, (), (), tuple(() for _ in range(k)), tuple(0 for _ in range(k)), ())
        r2 = _layer(layers, k, box, lower, upper, proof)
        assert r2 is not None
        proofs.append(proof)
        lower.append(r2[0])
        upper.append(r2[1])
    return TightBounds(box, f0, tuple(proofs), tuple(tuple(r) for r in lower), tuple(tuple(r) for r in upper))


@dataclass(frozen=True)
class Leaf:
    """One leaf of a phase split tree with its exact dual proof."""

    fixes: tuple[Fix, ...]
    proof: DualProof


def apply_fixes(
    lower: Bounds, upper: Bounds, fixes: Sequence[Fix]
) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """The bounds on the leaf: each fixed unit's interval cut at 0 on its phase's side."""
    lw = [list(r) for r in lower]
    up = [list(r) for r in upper]
    zero = Fraction(0)
    for k, i, ph in fixes:
        if ph > 0:
            lw[k][i] = max(lw[k][i], zero)
        else:
            up[k][i] = min(up[k][i], zero)
    return lw, up


def covers(fix_sets: Sequence[Sequence[Fix]]) -> bool:
    """Do the leaves cover every input?  Yes when one leaf has no fix left, or some unit is fixed in every leaf and
    the leaves of each of its two phases cover (with that fix removed)."""
    sets = []
    for fs in fix_sets:
        d: dict[tuple[int, int], int] = {}
        for k, i, ph in fs:
            if ph not in (1, -1) or d.get((k, i), ph) != ph:
                return False
            d[(k, i)] = ph
        sets.append(d)
    return _covers(sets)


def _covers(sets: list[dict[tuple[int, int], int]]) -> bool:
    if not sets:
        return False
    if any(not d for d in sets):
        return True
    common = set(sets[0])
    for d in sets[1:]:
        common &= set(d)
        if not common:
            return False
    v = min(common)
    for ph in (1, -1):
        part = [{key: p for key, p in d.items() if key != v} for d in sets if d[v] == ph]
        if not _covers(part):
            return False
    return True


def check_leaf(
    layers: ExactLayers, leaf: Leaf, box: Region, lower: Bounds, upper: Bounds, layer: int, unit: int, sign: int
) -> bool:
    """The leaf's proof recomputed exactly on the leaf's bounds (``lower``/``upper``: proved bounds on the box of
    the layers before ``layer``), proving sign·z ≤ its value ≤ 0."""
    p = leaf.proof
    if (p.layer, p.unit, p.sign) != (layer, unit, sign) or p.value > 0:
        return False
    for k, i, _ in leaf.fixes:
        if not (0 <= k < layer and 0 <= i < layers.widths[k + 1]):
            return False
    lw, up = apply_fixes(lower[:layer], upper[:layer], leaf.fixes)
    return check_proof(layers, p, box, lw, up)


class PhaseSearch:
    """Phase branch and bound for units of one box, on bounds proved once for the box (shared by the units)."""

    def __init__(self, layers: ExactLayers, box: Region, lower: Bounds, upper: Bounds) -> None:
        self.layers, self.box = layers, box
        self.lower = [list(r) for r in lower]
        self.upper = [list(r) for r in upper]
        self.fl = [np.array([float(v) for v in r]) for r in lower]
        self.fu = [np.array([float(v) for v in r]) for r in upper]
        self.lp = FloatLP(layers, box[0], box[1])
        self.lps = 0

    def _solve(
        self, T: int, unit: int, sign: int, fl: list[np.ndarray], fu: list[np.ndarray]
    ) -> tuple[float, list[np.ndarray], np.ndarray | None] | None:
        self.lps += 1
        r = self.lp.solve(T, unit, sign, fl, fu)
        if r is not None:
            return r
        for big in _ELASTIC:  # infeasible (or numerically troubled): the elastic LP always has a dual
            self.lps += 1
            r = self.lp.solve(T, unit, sign, fl, fu, elastic=big)
            if r is not None and r[0] <= 0:
                return r[0], r[1], None
        return None

    def run(
        self,
        T: int,
        unit: int,
        sign: int,
        deadline: Deadline,
        max_leaves: int,
        witness: Callable[[np.ndarray], bool],
        first: tuple[float, list[np.ndarray], np.ndarray] | None = None,
    ) -> tuple[Leaf, ...] | None:
        """Leaves covering the box, each proving sign·z[T][unit] ≤ value ≤ 0 exactly; None when a leaf's LP
        maximizer (given to ``witness``, which returns True to stop: the unit is settled otherwise) or the
        deadline or ``max_leaves`` stops the search.  ``first``: the root leaf's LP solution when the caller
        has it (:meth:`FloatLP.solve` on the same bounds; its maximizer was offered already)."""
        stack: list[tuple[Fix, ...]] = [()]
        done: list[Leaf] = []
        while stack:
            if deadline.expired() or len(done) + len(stack) > max_leaves:
                return None
            fixes = stack.pop()
            fl = [a.copy() for a in self.fl[:T]]
            fu = [a.copy() for a in self.fu[:T]]
            for k, i, ph in fixes:
                if ph > 0:
                    fl[k][i] = 0.0
                else:
                    fu[k][i] = 0.0
            r = first if first is not None and not fixes else self._solve(T, unit, sign, fl, fu)
            if r is None:
                return None
            opt, mus, x = r
            if x is not None and opt > 0 and (r is not first) and witness(x):
                return None
            if opt <= 0:
                lw, up = apply_fixes(self.lower[:T], self.upper[:T], fixes)
                proof = prove(self.layers, T, unit, sign, mus, self.box, lw, up)
                if proof.value <= 0:
                    done.append(Leaf(fixes, proof))
                    continue
            split = self._choose(T, unit, sign, mus, fl, fu)
            if split is None:
                return None  # every unit settled and still not proved: float trouble at the margin
            k, i = split
            stack.append((*fixes, (k, i, -1)))
            stack.append((*fixes, (k, i, 1)))
        return tuple(done)

    def _choose(
        self, T: int, unit: int, sign: int, mus: list[np.ndarray], fl: list[np.ndarray], fu: list[np.ndarray]
    ) -> tuple[int, int] | None:
        """The unstable unit whose triangle costs the bound most (ties and zero scores: the widest, earliest)."""
        best, arg, fallback, fb = 0.0, None, -1.0, None
        lam = sign * self.layers.Wf[T][unit]
        for k in range(T - 1, -1, -1):
            mu = mus[k]
            l, u = fl[k], fu[k]
            cross = (l < 0) & (u > 0)
            if cross.any():
                score = np.minimum(np.maximum(-mu * l, 0.0), np.maximum((lam - mu) * u, 0.0))
                score = np.where(cross, score, -1.0)
                i = int(np.argmax(score))
                if score[i] > best:
                    best, arg = float(score[i]), (k, i)
                width = np.where(cross, np.minimum(-l, u), -1.0)
                i2 = int(np.argmax(width))
                if width[i2] >= fallback:
                    fallback, fb = float(width[i2]), (k, i2)
            lam = mu @ self.layers.Wf[k]
        return arg if arg is not None else fb
