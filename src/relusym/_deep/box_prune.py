"""Certified lossless pruning of a deep ReLU network on a box or polytope (issue 22).

On a domain D, with every unit's status proved by :func:`relusym._deep.status.unit_status`:

* a **dead** unit (pre-activation ≤ 0 on D) outputs 0 at every input of D: its row and its column of the next
  layer are removed;
* an **active** unit u (pre-activation ≥ 0 on D) outputs z_u = w_u·h + β_u there.  It is folded when its weight
  row is a linear combination of the weight rows of the *other active units of its layer that are kept*:
  w_u = Σ_v α_v w_v gives z_u = Σ_v α_v z_v + γ with γ = β_u − Σ_v α_v β_v, and since every such v is active on
  D, z_v = σ(z_v) there, so c_u σ(z_u) = Σ_v α_v c_u σ(z_v) + γ c_u on D: the column of each v gains α_v c_u,
  the next layer's bias gains γ c_u, and u is removed (α found by exact Gaussian elimination).  This is exactly
  what a plain MLP can absorb: an active unit whose row is independent of the others adds an affine map of the
  previous layer's output to the next pre-activation, which no other unit carries, and is kept.
  (With one hidden layer this keeps at most m active units per layer.)

Removing or folding changes no pre-activation of any remaining unit at any input of D, so the statuses stay
valid while the layers are processed one after another.  Then the four reductions that hold on all of ℝ^m
(:mod:`relusym._deep.reduce`) are applied.  The result equals the original at every input of D.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from relusym._bounded.domain import as_domain
from relusym._deep.mlp import MLP, as_mlp
from relusym._deep.reduce import Reduction, reduce_layers, rows_to_mlp
from relusym._deep.rows import Row, rational_rows
from relusym._deep.status import ACTIVE, DEAD, UnitStatus, unit_status

__all__ = ["BoxPruned", "prune_on", "prune_with"]


@dataclass(frozen=True)
class BoxPruned:
    """The pruned network, equal to the original on ``statuses.domain``: ``dead`` and ``folded`` list the
    (layer, unit) pairs removed on the domain (layers 1-based, units as in the original), ``steps`` the ℝ^m
    reductions applied afterwards, ``statuses`` the proofs they rest on."""

    network: MLP
    dead: tuple[tuple[int, int], ...]
    folded: tuple[tuple[int, int], ...]
    steps: tuple[Reduction, ...]
    statuses: UnitStatus

    def to_dict(self) -> dict[str, Any]:
        return {
            "widths": list(self.network.widths),
            "dead": [list(p) for p in self.dead],
            "folded": [list(p) for p in self.folded],
            "reductions": [s.to_dict() for s in self.steps],
            "statuses": self.statuses.counts(),
        }


class _Span:
    """An exact basis (row echelon form) of weight rows, each with its combination of the original rows."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.basis: list[tuple[int, list[Fraction], dict[int, Fraction]]] = []

    def express(self, w: list[Fraction]) -> tuple[dict[int, Fraction] | None, list[Fraction], dict[int, Fraction]]:
        """(α with w = Σ α_v w_v, or None; the reduced vector and its combination)."""
        r = list(w)
        combo: dict[int, Fraction] = {}
        for piv, vec, comb in self.basis:
            if r[piv]:
                f = r[piv] / vec[piv]
                r = [a - f * b for a, b in zip(r, vec, strict=True)]
                for k, c in comb.items():
                    combo[k] = combo.get(k, Fraction(0)) + f * c
        if any(r):
            return None, r, combo
        return combo, r, combo

    def add(self, unit: int, r: list[Fraction], combo: dict[int, Fraction]) -> None:
        piv = next(i for i, v in enumerate(r) if v)
        comb = {k: -c for k, c in combo.items()}
        comb[unit] = comb.get(unit, Fraction(0)) + 1
        self.basis.append((piv, r, comb))


def _drop(layers: list[list[Row]], ell: int, i: int) -> None:
    del layers[ell][i]
    for r in layers[ell + 1]:
        del r[i]


def prune_on(net: Any, domain: Any, *, budget: float = 10.0, seed: int = 0) -> BoxPruned:
    """A network equal to ``net`` at every input of ``domain`` (Box, Polytope or (lo, hi)), with the units that
    the exact statuses prove removable there removed (dead units; active units folded as the module says), then
    reduced by the rules that hold on all of ℝ^m.  Undecided or crossing units are kept."""
    mlp = as_mlp(net)
    dom = as_domain(domain, mlp.m)
    return prune_with(mlp, unit_status(mlp, dom, budget=budget, seed=seed))


def prune_with(mlp: MLP, st: UnitStatus, units: Collection[tuple[int, int]] | None = None) -> BoxPruned:
    """:func:`prune_on` with the statuses already proved (``st``, of ``mlp`` on ``st.domain``): only the units
    they prove dead or active are touched, and of those only ``units`` ((layer, unit) pairs, layers from 1) when
    given."""

    def proved(ell: int, j: int, status: str) -> bool:
        return st.statuses[ell][j] == status and (units is None or (ell + 1, j) in units)

    layers = [rational_rows(W, b) for W, b in zip(mlp.weights, mlp.biases, strict=True)]
    dead: list[tuple[int, int]] = []
    folded: list[tuple[int, int]] = []
    for ell in range(len(layers) - 1):
        ids = list(range(len(layers[ell])))
        # dead units: output 0 on the domain
        for pos in range(len(ids) - 1, -1, -1):
            if proved(ell, ids[pos], DEAD):
                dead.append((ell + 1, ids[pos]))
                _drop(layers, ell, pos)
                del ids[pos]
        # active units: fold those whose weight row lies in the span of the other kept active rows
        span = _Span(len(layers[ell][0]) - 1 if layers[ell] else 0)
        pos = 0
        while pos < len(ids):
            if not proved(ell, ids[pos], ACTIVE):
                pos += 1
                continue
            row = layers[ell][pos]
            alpha, r, combo = span.express(row[:-1])
            if alpha is None:
                span.add(ids[pos], r, combo)
                pos += 1
                continue
            gamma = row[-1]
            where = {u: ids.index(u) for u in alpha}
            for u, a in alpha.items():
                gamma -= a * layers[ell][where[u]][-1]
            for nr in layers[ell + 1]:
                cu = nr[pos]
                if cu:
                    for u, a in alpha.items():
                        nr[where[u]] += a * cu
                    nr[-1] += gamma * cu
            folded.append((ell + 1, ids[pos]))
            _drop(layers, ell, pos)
            del ids[pos]
    red = reduce_layers(layers, mlp.m)
    out = rows_to_mlp(red.layers, mlp.m, like=mlp)
    return BoxPruned(out, tuple(sorted(dead)), tuple(sorted(folded)), red.steps, st)
