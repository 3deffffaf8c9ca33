"""Per-layer symmetries of deep ReLU networks, with the hidden flips that carry over layer by layer.

A :class:`DeepSymmetry` acts on an MLP hidden layer by hidden layer, from the first: in layer ℓ it first *flips*
the units of a set T (row (w_i, β_i) → (−w_i, −β_i), outgoing column unchanged, Σ_{i∈T} c_i β_i added to
b_{ℓ+1}), then scales unit i by d_i > 0 (row · d_i, outgoing column / d_i), then moves unit i to slot π(i).
Permutations and scales never change the function.  A flip keeps it exactly when Σ_{i∈T} c_i w_iᵀ = 0 (the
matrix n_{ℓ+1} × n_{ℓ−1}): σ(t) = σ(−t) + t, so the flipped units add Σ c_i (w_i·h + β_i), whose linear part
vanishes and whose constant the bias absorbs.  :meth:`DeepSymmetry.flips_valid` checks that condition exactly.

:func:`align_layers` works on dyadic integer arrays (:mod:`relusym._deep.dyadic`) when the rows fit: per layer, the
primitive rows of both networks (up to sign) are hashed, matched by their hashes in the order the reference picks
partners, and verified exactly.  Where the answer needs a flip (or a Fraction) it falls back on the Fraction
reference, :func:`align_layers_reference`; both give the same symmetry or the same mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.document import tagged
from relusym._deep.dyadic import Dyadic, equal_rows, row_hashes, scale_columns
from relusym._deep.mlp import MLP
from relusym._deep.reduce import rows_to_mlp
from relusym._deep.rows import ReducedLayers, Row, dyadic_layers, primitive, rational_rows, unsigned
from relusym.errors import InvalidNetworkError

__all__ = ["LayerMove", "DeepSymmetry", "Mismatch", "align_layers", "align_layers_reference", "apply_moves"]


@dataclass(frozen=True)
class LayerMove:
    """What a symmetry does to one hidden layer: flip ``flips``, scale unit i by ``scales[i]``, move unit i to
    slot ``perm[i]``."""

    perm: tuple[int, ...]
    scales: tuple[Fraction, ...]
    flips: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"perm": list(self.perm), "scales": [str(s) for s in self.scales], "flips": list(self.flips)}

    def inverse(self) -> LayerMove:
        """The move that undoes this one (flips commute with positive scales and are their own inverse)."""
        n = len(self.perm)
        inv = [0] * n
        for i, slot in enumerate(self.perm):
            inv[slot] = i
        return LayerMove(
            tuple(inv),
            tuple(1 / self.scales[inv[s]] for s in range(n)),
            tuple(sorted(self.perm[i] for i in self.flips)),
        )


@dataclass(frozen=True)
class DeepSymmetry:
    """A per-layer symmetry (with hidden flips) of deep networks of one architecture: ``layers[ℓ−1]`` acts on
    hidden layer ℓ.  ``apply(net)`` returns the image, exactly; ``flips_valid(net)`` says whether every flip keeps
    the function (permutations and positive scales always do)."""

    layers: tuple[LayerMove, ...]

    @property
    def has_flips(self) -> bool:
        return any(mv.flips for mv in self.layers)

    def apply(self, net: MLP) -> MLP:
        """The image of ``net``, exactly (entries become Fractions where a scale or a flip changes them)."""
        if net.hidden_widths != tuple(len(mv.perm) for mv in self.layers):
            raise InvalidNetworkError(
                f"the symmetry acts on hidden widths {tuple(len(mv.perm) for mv in self.layers)}, "
                f"the network has {net.hidden_widths}"
            )
        layers = [rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)]
        return rows_to_mlp(apply_moves(layers, self.layers), net.m)

    def flips_valid(self, net: MLP) -> bool:
        """True when each flip set T of layer ℓ satisfies Σ_{i∈T} c_i w_iᵀ = 0 where it is applied (exact)."""
        layers = [rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)]
        try:
            apply_moves(layers, self.layers, check=True)
        except _FlipInvalid:
            return False
        return True

    def inverse(self) -> DeepSymmetry:
        """h⁻¹: (h⁻¹·h)·θ = θ for every θ on which h's flips are valid."""
        return DeepSymmetry(tuple(mv.inverse() for mv in self.layers))

    def to_dict(self) -> dict[str, Any]:
        return tagged("relusym.mlp-symmetry/1", {"layers": [mv.to_dict() for mv in self.layers]})


class _FlipInvalid(Exception):
    pass


def _flip_sum_zero(rows: list[Row], nxt: list[Row], T: tuple[int, ...]) -> bool:
    """Σ_{i∈T} c_i w_iᵀ = 0 exactly, c_i the column i of ``nxt`` and w_i the row i of ``rows`` without its bias."""
    width = len(rows[0]) - 1 if rows else 0
    for r in nxt:
        for col in range(width):
            s = Fraction(0)
            for i in T:
                if r[i] and rows[i][col]:
                    s += r[i] * rows[i][col]
            if s:
                return False
    return True


def apply_moves(
    layers: list[list[Row]], moves: tuple[LayerMove, ...], *, check: bool = False, start: int = 0
) -> list[list[Row]]:
    """The moves applied to augmented rows, ``moves[0]`` to hidden layer ``start`` (0-based) and on (a new list;
    the input is not changed)."""
    work = [[list(r) for r in rows] for rows in layers]
    for ell, mv in enumerate(moves, start=start):
        rows, nxt = work[ell], work[ell + 1]
        if mv.flips:
            if check and not _flip_sum_zero(rows, nxt, mv.flips):
                raise _FlipInvalid
            for i in mv.flips:
                beta = rows[i][-1]
                if beta:
                    for r in nxt:
                        r[-1] += r[i] * beta
                rows[i] = [-v for v in rows[i]]
        for i, d in enumerate(mv.scales):
            if d != 1:
                rows[i] = [v * d for v in rows[i]]
                for r in nxt:
                    r[i] = r[i] / d
        order = [0] * len(rows)
        for i, slot in enumerate(mv.perm):
            order[slot] = i
        work[ell] = [rows[i] for i in order]
        work[ell + 1] = [[r[i] for i in order] + [r[-1]] for r in nxt]
    return work


@dataclass(frozen=True)
class Mismatch:
    """Where alignment stopped: the hidden layer (1-based; ``depth + 1`` for the output layer) and a unit of the
    first network there that has no partner (None when the layer's rows differ as a whole)."""

    layer: int
    unit: int | None
    why: str
    moves: tuple[LayerMove, ...] = ()


def _lone_units(
    ell: int, rows: list[Row], nxt: list[Row], lone: list[int], flips: list[int], other: int, moves: list[LayerMove]
) -> Mismatch:
    """Where units of layer ``ell`` (0-based) have no partner.  When they are all affine on the orthant
    (ℓ ≥ 2, row ≥ 0) and flipping them together with the sign-mismatched units is valid, the flip makes them
    dead on the orthant: the mismatch then carries that flip as its last move, for the caller to apply and
    reduce again."""
    where = f"unit {lone[0]} of layer {ell + 1} has no partner up to scale and sign" if lone else ""
    why = where or f"widths differ at layer {ell + 1}: {len(rows)} against {other}"
    if ell >= 1 and lone and all(v >= 0 for i in lone for v in rows[i]):
        T = tuple(sorted(flips + lone))
        if _flip_sum_zero(rows, nxt, T):
            flip = LayerMove(tuple(range(len(rows))), (Fraction(1),) * len(rows), T)
            return Mismatch(ell + 1, lone[0], why, (*moves, flip))
    return Mismatch(ell + 1, lone[0] if lone else None, why, tuple(moves))


def align_layers(a: list[list[Row]], b: list[list[Row]]) -> tuple[DeepSymmetry | None, Mismatch | None]:
    """A symmetry h (with flips where they are valid) such that h·a = b exactly, for two reduced networks given
    by their augmented rows; or None and where the alignment failed."""
    via = _align_canonical(a, b)
    if via is not None:
        return via, None
    fast = _align_arrays(a, b)
    return fast if fast is not None else align_layers_reference(a, b)


def _align_canonical(a: list[list[Row]], b: list[list[Row]]) -> DeepSymmetry | None:
    """The symmetry read off the canonical forms of two reduced networks, when both were computed (by the array
    path, on these very layers) and are equal; else None.

    The per-layer group acts freely on reduced networks (no two rows positively parallel, no zero row), so the
    symmetry h with h·a = b is unique: unit i of layer ℓ goes where b's unit at a's canonical slot of i is,
    scaled by the ratio of the two canonical scales; the reference's greedy matching finds the same h (every row
    meets its one same-signed partner, so no flip and no lone unit)."""
    if not (isinstance(a, ReducedLayers) and isinstance(b, ReducedLayers)):
        return None
    ca, cb = a.canonical, b.canonical
    if ca is None or cb is None or len(a) != len(ca.order) + 1 or len(b) != len(cb.order) + 1:
        return None
    if not (a.untouched() and b.untouched()) or ca.form != cb.form:
        return None
    moves = []
    for oa, sa, ob, sb in zip(ca.order, ca.scale, cb.order, cb.scale, strict=True):
        perm = [0] * len(oa)
        scales = [Fraction(0)] * len(oa)
        for slot, (i, j) in enumerate(zip(oa, ob, strict=True)):
            perm[i] = j
            scales[i] = sb[slot] / sa[slot]
        moves.append(LayerMove(tuple(perm), tuple(scales), ()))
    return DeepSymmetry(tuple(moves))


def _lead_sign(q: np.ndarray) -> np.ndarray:
    """The sign of each row's first nonzero entry (1 for a zero row)."""
    if q.shape[1] == 0:
        return np.ones(q.shape[0], dtype=np.int64)
    nz = q != 0
    first = q[np.arange(q.shape[0]), nz.argmax(axis=1)]
    return np.where(first < 0, -1, 1).astype(np.int64)


def _unsigned(D: Dyadic) -> tuple[Dyadic, np.ndarray]:
    P = D.primitive()
    s = _lead_sign(P.rows.q)
    return Dyadic(P.rows.q * s[:, None], P.rows.k), s


def _classes(U: Dyadic) -> tuple[dict[int, int], np.ndarray] | None:
    """{hash: first row with it} and, per row, that first row; None when rows of one hash differ (a collision)."""
    h = row_hashes(U).tolist()
    first: dict[int, int] = {}
    rep = np.array([first.setdefault(v, i) for i, v in enumerate(h)], dtype=np.intp)
    if not bool(equal_rows(U, np.arange(len(h)), U, rep).all()):
        return None
    return first, rep


def _ratio(num_g: int, num_x: int, den_g: int, den_x: int) -> Fraction:
    e = num_x - den_x
    return Fraction(num_g << max(e, 0), den_g << max(-e, 0))


def _align_arrays(a: list[list[Row]], b: list[list[Row]]) -> tuple[DeepSymmetry | None, Mismatch | None] | None:
    """:func:`align_layers_reference`'s answer computed on dyadic arrays, or None where it needs the reference."""
    if len(a) != len(b) or not a:
        return None
    A_layers, B_layers = dyadic_layers(a), dyadic_layers(b)
    if A_layers is None or B_layers is None or A_layers[0].shape[1] != B_layers[0].shape[1]:
        return None
    moves: list[LayerMove] = []
    cur = A_layers[0]
    for ell in range(len(a) - 1):
        B = B_layers[ell]
        if cur.shape[1] != B.shape[1]:
            return None
        UA, sa = _unsigned(cur)
        UB, sb = _unsigned(B)
        got = _classes(UB)
        if got is None:
            return None
        first_b, _ = got
        ha = row_hashes(UA).tolist()
        rep = np.array([first_b.get(v, -1) for v in ha], dtype=np.intp)
        has = np.flatnonzero(rep >= 0)
        match = np.zeros(len(ha), dtype=bool)
        match[has] = equal_rows(UA, has, UB, rep[has])
        partners: dict[int, list[tuple[int, int]]] = {}
        for j, (r, s) in enumerate(zip(got[1].tolist(), sb.tolist(), strict=True)):
            partners.setdefault(r, []).append((j, s))
        perm: list[int] = []
        flips: list[int] = []
        lone: list[int] = []
        for i, (r, s, ok) in enumerate(zip(rep.tolist(), sa.tolist(), match.tolist(), strict=True)):
            cands = partners.get(r) if ok else None
            if not cands:
                lone.append(i)
                continue
            pick = next((c for c in cands if c[1] == s), cands[0])
            cands.remove(pick)
            if pick[1] != s:
                flips.append(i)
            perm.append(pick[0])
        n_a, n_b = cur.shape[0], B.shape[0]
        if lone or n_a != n_b:
            if ell >= 1 and lone and bool((cur.q[lone] >= 0).all()):
                return None  # a flip may make these units dead on the orthant: the reference decides
            where = f"unit {lone[0]} of layer {ell + 1} has no partner up to scale and sign" if lone else ""
            why = where or f"widths differ at layer {ell + 1}: {n_a} against {n_b}"
            return None, Mismatch(ell + 1, lone[0] if lone else None, why, tuple(moves))
        if flips:
            return None
        pa, pb = cur.primitive(), B.primitive()
        gA, xA, gB, xB = pa.g.tolist(), pa.x.tolist(), pb.g.tolist(), pb.x.tolist()
        scales = tuple(_ratio(gB[j], xB[j], gA[i], xA[i]) for i, j in enumerate(perm))
        moves.append(LayerMove(tuple(perm), scales, ()))
        # the next layer in the new coordinates: slot perm[i] is column i times d_i / d_perm[i]
        inv = np.empty(n_a, dtype=np.intp)
        inv[np.array(perm, dtype=np.intp)] = np.arange(n_a)
        nxt = scale_columns(A_layers[ell + 1], inv, pa.g[inv], pa.x[inv] - pb.x)
        if nxt is None:
            return None
        if bool((pb.g != 1).any()):
            div = np.append(pb.g, 1)
            if bool((nxt.q % div[None, :] != 0).any()):
                return None  # not dyadic: the reference computes in Fractions
            nxt = Dyadic(nxt.q // div[None, :], nxt.k)
        cur = nxt
    out = B_layers[-1]
    if cur.shape != out.shape or not (np.array_equal(cur.q, out.q) and np.array_equal(cur.k, out.k)):
        why = "the output layers differ after aligning every hidden layer"
        return None, Mismatch(len(a), None, why, tuple(moves))
    return DeepSymmetry(tuple(moves)), None


def align_layers_reference(a: list[list[Row]], b: list[list[Row]]) -> tuple[DeepSymmetry | None, Mismatch | None]:
    """:func:`align_layers` in Fractions (the reference the array path agrees with)."""
    work = [[list(r) for r in rows] for rows in a]
    moves: list[LayerMove] = []
    for ell in range(len(work) - 1):
        rows, nxt = work[ell], work[ell + 1]
        partners: dict[tuple[int, ...], list[tuple[int, int, Fraction]]] = {}
        for j, row in enumerate(b[ell]):
            p, d = primitive(row)
            u, s = unsigned(p)
            partners.setdefault(u, []).append((j, s, d))
        perm: list[int] = []
        scales: list[Fraction] = []
        flips: list[int] = []
        lone: list[int] = []
        for i, row in enumerate(rows):
            p, d = primitive(row)
            u, s = unsigned(p)
            cands = partners.get(u)
            if not cands:
                lone.append(i)
                continue
            pick = next((c for c in cands if c[1] == s), cands[0])
            cands.remove(pick)
            j, sj, dj = pick
            if sj != s:
                flips.append(i)
            perm.append(j)
            scales.append(dj / d)
        if lone or len(rows) != len(b[ell]):
            return None, _lone_units(ell, rows, nxt, lone, flips, len(b[ell]), moves)
        if flips and not _flip_sum_zero(rows, nxt, tuple(flips)):
            why = (
                f"units {flips} of layer {ell + 1} match only after a flip, and flipping them changes the "
                "function's linear part"
            )
            return None, Mismatch(ell + 1, flips[0], why, tuple(moves))
        mv = LayerMove(tuple(perm), tuple(scales), tuple(flips))
        work = apply_moves(work, (mv,), start=ell)
        moves.append(mv)
    if work[-1] != b[-1]:
        why = "the output layers differ after aligning every hidden layer"
        return None, Mismatch(len(work), None, why, tuple(moves))
    return DeepSymmetry(tuple(moves)), None
