"""Per-layer symmetries of deep ReLU networks, with the hidden flips that carry over layer by layer.

A :class:`DeepSymmetry` acts on an MLP hidden layer by hidden layer, from the first: in layer ℓ it first *flips*
the units of a set T (row (w_i, β_i) → (−w_i, −β_i), outgoing column unchanged, Σ_{i∈T} c_i β_i added to
b_{ℓ+1}), then scales unit i by d_i > 0 (row · d_i, outgoing column / d_i), then moves unit i to slot π(i).
Permutations and scales never change the function.  A flip keeps it exactly when Σ_{i∈T} c_i w_iᵀ = 0 (the
matrix n_{ℓ+1} × n_{ℓ−1}): σ(t) = σ(−t) + t, so the flipped units add Σ c_i (w_i·h + β_i), whose linear part
vanishes and whose constant the bias absorbs.  :meth:`DeepSymmetry.flips_valid` checks that condition exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from relusym._deep.mlp import MLP
from relusym._deep.reduce import rows_to_mlp
from relusym._deep.rows import Row, primitive, rational_rows, unsigned
from relusym.errors import InvalidNetworkError

__all__ = ["LayerMove", "DeepSymmetry", "align_layers", "apply_moves"]


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
        return {"format": "relusym.mlp-symmetry/1", "layers": [mv.to_dict() for mv in self.layers]}


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
