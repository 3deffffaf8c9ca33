"""The canonical form of a deep ReLU network under the per-layer group, and its digest (docs/math/deep.md).

The per-layer group G acts on an MLP by permuting and positively rescaling the units of each hidden layer.  On a
reduced network (no constant, dead-on-the-orthant, duplicate or output-less unit: :mod:`relusym._deep.reduce`)
the rows of each hidden layer are pairwise not positively parallel, so the following choice is unique:

1. layer 1: replace every row (w, β) by its primitive integer row p = (w, β)/d (d > 0) and multiply the unit's
   outgoing column by d (the function is unchanged); sort the units by p (lexicographically);
2. layer ℓ ≥ 2: the columns of the rows now refer to the sorted, rescaled units of layer ℓ − 1; do the same;
3. the output layer keeps the rows it has then, exactly.

The sequence (P_1, …, P_{L−1}, [W_L | b_L]) is the normal form: equal for two reduced networks iff one is the
image of the other under G (every step picks the one representative of its orbit).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._deep.dyadic import (
    Dyadic,
    fraction_rows,
    int_rows,
    order_rows,
    render_rational_rows,
    render_rows,
    scale_columns,
    scale_fractions,
)
from relusym._deep.mlp import MLP
from relusym._deep.reduce import Reduced, reduce_layers
from relusym._deep.rows import ReducedLayers, Row, dyadic_layers, primitive, rational_rows

__all__ = ["DeepNormalForm", "Canonical", "canonicalize", "canonicalize_reference", "deep_normal_form", "DIGEST_SCHEME"]

DIGEST_SCHEME = "relusym.mlp-nf/1"


class DeepNormalForm:
    """The normal form of a deep ReLU network (two or more hidden layers) under the per-layer group.

    ``widths`` are the reduced widths (m, n_1, …, n_{L−1}, k); ``hidden[ℓ−1]`` is the tuple of primitive integer
    rows of hidden layer ℓ in canonical order (each of length n_{ℓ−1} + 1, the bias last); ``output`` the exact
    rows of [W_L | b_L] in the canonical coordinates.  Two networks of the same depth have equal normal forms
    iff their reductions lie in one orbit of the per-layer group (then they compute the same function).

    A form computed by the array fast path keeps its rows as dyadic arrays
    (:class:`relusym._deep.dyadic.Dyadic`) and builds ``hidden`` and ``output`` only when they are read; equality
    and the digest are then computed on the arrays (the same answers, byte for byte)."""

    __slots__ = ("widths", "_hidden", "_output", "_arrays", "_digest")

    widths: tuple[int, ...]
    _hidden: tuple[tuple[tuple[int, ...], ...], ...] | None
    _output: tuple[tuple[Fraction, ...], ...] | None
    _arrays: tuple[tuple[Dyadic, ...], Dyadic] | None
    _digest: list[str]

    def __init__(
        self,
        widths: tuple[int, ...],
        hidden: tuple[tuple[tuple[int, ...], ...], ...],
        output: tuple[tuple[Fraction, ...], ...],
        _digest: list[str] | None = None,
    ) -> None:
        object.__setattr__(self, "widths", tuple(widths))
        object.__setattr__(self, "_hidden", hidden)
        object.__setattr__(self, "_output", output)
        object.__setattr__(self, "_arrays", None)
        object.__setattr__(self, "_digest", _digest if _digest is not None else [])

    @classmethod
    def from_arrays(cls, widths: tuple[int, ...], hidden: Sequence[Dyadic], output: Dyadic) -> DeepNormalForm:
        """The form whose hidden layers are the primitive integer rows ``hidden`` (dyadic arrays with k ≥ 0) and
        whose output rows are ``output``."""
        form = cls.__new__(cls)
        object.__setattr__(form, "widths", tuple(widths))
        object.__setattr__(form, "_hidden", None)
        object.__setattr__(form, "_output", None)
        object.__setattr__(form, "_arrays", (tuple(hidden), output))
        object.__setattr__(form, "_digest", [])
        return form

    def __reduce__(self) -> tuple[Any, ...]:
        return (DeepNormalForm, (self.widths, self.hidden, self.output))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: DeepNormalForm is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: DeepNormalForm is immutable")

    @property
    def hidden(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        if self._hidden is None:
            assert self._arrays is not None
            object.__setattr__(self, "_hidden", tuple(tuple(int_rows(P)) for P in self._arrays[0]))
        assert self._hidden is not None
        return self._hidden

    @property
    def output(self) -> tuple[tuple[Fraction, ...], ...]:
        if self._output is None:
            assert self._arrays is not None
            object.__setattr__(self, "_output", tuple(tuple(r) for r in fraction_rows(self._arrays[1])))
        assert self._output is not None
        return self._output

    @property
    def depth(self) -> int:
        return len(self._arrays[0]) if self._arrays is not None else len(self.hidden)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeepNormalForm):
            return NotImplemented
        if self.widths != other.widths:
            return False
        if self._arrays is not None and other._arrays is not None:
            (h1, o1), (h2, o2) = self._arrays, other._arrays
            return len(h1) == len(h2) and all(_same(x, y) for x, y in zip((*h1, o1), (*h2, o2), strict=True))
        return (self.hidden, self.output) == (other.hidden, other.output)

    def __hash__(self) -> int:
        return hash(self.digest())

    def digest(self) -> str:
        """SHA-256 of the canonical text (scheme ``relusym.mlp-nf/1``): the same on every machine and format.

        The text is the scheme name, the widths, then each hidden row's integers and each output entry as
        ``p/q`` in lowest terms, separated by spaces, a newline after each row (see docs/math/deep.md)."""
        if not self._digest:
            h = hashlib.sha256()
            h.update(f"{DIGEST_SCHEME}\n{' '.join(map(str, self.widths))}\n".encode())
            if self._arrays is not None:
                for P in self._arrays[0]:
                    h.update(render_rows(P))
                h.update(render_rational_rows(self._arrays[1]))
            else:
                for rows in self.hidden:
                    for r in rows:
                        h.update((" ".join(map(str, r)) + "\n").encode())
                for out_row in self.output:
                    h.update((" ".join(_q(v) for v in out_row) + "\n").encode())
            self._digest.append(h.hexdigest())
        return self._digest[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "relusym.mlp-normal-form/1",
            "scheme": DIGEST_SCHEME,
            "digest": self.digest(),
            "widths": list(self.widths),
            "hidden": [[[str(v) for v in r] for r in rows] for rows in self.hidden],  # exact: strings, as everywhere
            "output": [[_q(v) for v in r] for r in self.output],
        }

    def __repr__(self) -> str:
        return f"DeepNormalForm(widths={self.widths}, digest={self.digest()[:16]}…)"


def _same(x: Dyadic, y: Dyadic) -> bool:
    return x.shape == y.shape and bool(np.array_equal(x.q, y.q)) and bool(np.array_equal(x.k, y.k))


def _q(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


@dataclass(frozen=True)
class Canonical:
    """The normal form together with the map from the reduced network to it: for each hidden layer, ``order[s]``
    is the reduced unit placed at slot s and ``scale[s]`` the d > 0 it was divided by."""

    form: DeepNormalForm
    order: tuple[tuple[int, ...], ...]
    scale: tuple[tuple[Fraction, ...], ...]
    reduced: Reduced


def canonicalize(red: Reduced) -> Canonical:
    """The normal form of a reduced network, with the permutation and scales that reach it.

    Computed on dyadic integer arrays (:mod:`relusym._deep.dyadic`) when every entry is a dyadic rational that
    fits (every float network, and exact ones of that kind), else by :func:`canonicalize_reference`: the same
    result either way."""
    fast = _canonicalize_arrays(red)
    if fast is None:
        return canonicalize_reference(red)
    if isinstance(red.layers, ReducedLayers) and red.layers.untouched():
        red.layers.canonical = fast  # for align_layers, which reads the symmetry off two equal forms
    return fast


def _canonicalize_arrays(red: Reduced) -> Canonical | None:
    layers = dyadic_layers(red.layers, red.m)
    if layers is None:
        return None
    hidden: list[Dyadic] = []
    orders: list[tuple[int, ...]] = []
    scales: list[tuple[Fraction, ...]] = []
    perm = np.arange(red.m)
    g = np.ones(red.m, dtype=np.int64)
    x = np.zeros(red.m, dtype=np.int64)
    for ell, D in enumerate(layers):
        T = D if ell == 0 else scale_columns(D, perm, g, x)
        if T is None:
            return None
        if ell == len(layers) - 1:
            widths = (red.m,) + tuple(E.shape[0] for E in layers)
            return Canonical(DeepNormalForm.from_arrays(widths, hidden, T), tuple(orders), tuple(scales), red)
        P = T.primitive()
        order = order_rows(P.rows)
        perm = np.array(order, dtype=np.intp)
        g, x = P.g[perm], P.x[perm]
        hidden.append(Dyadic(P.rows.q[perm], P.rows.k[perm]))
        orders.append(tuple(order))
        scales.append(scale_fractions(g, x))
    return None


def canonicalize_reference(red: Reduced) -> Canonical:
    """:func:`canonicalize` in Fractions (the reference the array path agrees with)."""
    layers = red.layers
    L = len(layers)
    hidden: list[tuple[tuple[int, ...], ...]] = []
    orders: list[tuple[int, ...]] = []
    scales: list[tuple[Fraction, ...]] = []
    perm: list[int] = list(range(red.m))
    colscale: list[Fraction] = [Fraction(1)] * red.m
    for ell in range(L - 1):
        rows = [_transformed(r, perm, colscale) for r in layers[ell]]
        prim = [primitive(r) for r in rows]
        order = sorted(range(len(rows)), key=lambda i: prim[i][0])
        hidden.append(tuple(prim[i][0] for i in order))
        orders.append(tuple(order))
        scales.append(tuple(prim[i][1] for i in order))
        perm, colscale = list(order), [prim[i][1] for i in order]
    output = tuple(tuple(_transformed(r, perm, colscale)) for r in layers[-1])
    widths = (red.m,) + tuple(len(rows) for rows in layers)
    form = DeepNormalForm(widths, tuple(hidden), output)
    return Canonical(form, tuple(orders), tuple(scales), red)


def _transformed(row: Row, perm: list[int], colscale: list[Fraction]) -> list[Fraction]:
    """The row in the coordinates of the previous layer's canonical units: column s is old column perm[s] times
    the scale of that unit; the bias stays last."""
    return [row[j] * d for j, d in zip(perm, colscale, strict=True)] + [row[-1]]


def deep_normal_form(net: MLP) -> Canonical:
    """Reduce, then canonicalize (the layers read exactly)."""
    layers = [rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)]
    return canonicalize(reduce_layers(layers, net.m))
