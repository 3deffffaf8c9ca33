"""Exact rows of a deep network's layers: rationals, primitive integer rows, and positive scales.

A hidden unit of layer ℓ is the row (w, β) of the augmented matrix [W_ℓ | b_ℓ]; rescaling the unit by d > 0
multiplies the row by d and divides its outgoing column by d.  Every nonzero rational row is d·p for exactly one
*primitive* integer row p (integer entries with gcd 1) and one d > 0: p is the canonical representative of the
row up to positive scale, and two rows are positively parallel iff their primitive rows are equal.

:func:`rational_rows` returns an :class:`ArrayRows`: a list of the rows that keeps the arrays they come from and
builds its Fractions only when it is read, so that the array fast paths (:mod:`relusym._deep.dyadic`) of the
reductions, the canonical form and the alignment never create a Fraction per entry.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._exact.numbers import to_fraction

__all__ = [
    "Row",
    "ArrayRows",
    "ReducedLayers",
    "rational_rows",
    "primitive",
    "unsigned",
    "matrix_rows",
    "dyadic_layers",
]

Row = list[Fraction]


def matrix_rows(W: np.ndarray) -> list[Row]:
    """The rows of a parameter array (float or exact) as lists of Fractions."""
    if W.dtype == object:
        return [[v if type(v) is Fraction else to_fraction(v) for v in r] for r in W.tolist()]
    return [[Fraction(v) for v in r] for r in W.astype(np.float64).tolist()]


def _fraction_rows(W: np.ndarray, b: np.ndarray) -> list[Row]:
    rows = matrix_rows(W)
    bias = [to_fraction(v) for v in b.tolist()]
    return [r + [bi] for r, bi in zip(rows, bias, strict=True)]


def rational_rows(W: np.ndarray, b: np.ndarray) -> list[Row]:
    """The augmented rows (W[i, :], b[i]) as lists of Fractions (an :class:`ArrayRows`: built when first read)."""
    return ArrayRows(W, b)


_FILL = threading.Lock()  # one thread builds an ArrayRows' Fractions; the others wait for them


def _filled(name: str) -> Callable[..., Any]:
    method = getattr(list, name)

    def run(self: ArrayRows, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        for arg in args:  # list's C methods read another list's storage directly: build it first
            if isinstance(arg, ArrayRows):
                arg._fill()
        return method(self, *args, **kwargs)

    run.__name__ = name
    run.__doc__ = method.__doc__
    return run


class ArrayRows(list[Row]):
    """The augmented rows of one layer, a list of lists of Fractions built on first use from the layer's arrays
    ``weight`` and ``bias``, which it keeps (with their :class:`relusym._deep.dyadic.Dyadic` form, once computed)
    for the array fast paths.  It behaves as the plain list in every respect but the time it takes; its length
    is known without building it; a copy or a pickle of it is a plain list."""

    __slots__ = ("weight", "bias", "_built", "_dyadic")

    weight: np.ndarray
    bias: np.ndarray
    _built: bool
    _dyadic: list[Any]

    def __init__(self, weight: np.ndarray, bias: np.ndarray, dyadic: list[Any] | None = None) -> None:
        super().__init__()
        self.weight = weight
        self.bias = bias
        self._built = False
        self._dyadic = dyadic if dyadic is not None else []

    def _fill(self) -> None:
        if not self._built:
            with _FILL:
                if not self._built:
                    list.extend(self, _fraction_rows(self.weight, self.bias))
                    self._built = True

    @property
    def untouched(self) -> bool:
        """True while nobody has read (or changed) the rows: they are exactly the arrays' values."""
        return not self._built

    def dyadic(self) -> Any:
        """The :class:`relusym._deep.dyadic.Dyadic` form of the arrays (None when they do not fit), computed once
        and shared with the copies made by :meth:`sibling`."""
        if not self._dyadic:
            from relusym._deep.dyadic import dyadic_of_arrays

            self._dyadic.append(dyadic_of_arrays(self.weight, self.bias))
        return self._dyadic[0]

    def sibling(self) -> ArrayRows:
        """A fresh, unbuilt ArrayRows over the same (read-only) arrays."""
        return ArrayRows(self.weight, self.bias, self._dyadic)

    def __len__(self) -> int:
        return list.__len__(self) if self._built else int(self.weight.shape[0])

    def __copy__(self) -> list[Row]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Row]:
        return [list(r) for r in self]

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))


for _name in (
    "__getitem__", "__setitem__", "__delitem__", "__iter__", "__reversed__", "__contains__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__mul__", "__rmul__",
    "__iadd__", "__imul__", "__repr__", "append", "extend", "insert", "pop", "remove", "index", "count",
    "sort", "reverse", "copy", "clear",
):  # fmt: skip
    setattr(ArrayRows, _name, _filled(_name))


class ReducedLayers(list[list[Row]]):
    """The layers of a network the array fast path found reduced (a plain list of :class:`ArrayRows`), with room
    for its canonical form once computed (``canonical``), which the alignment of two such networks reuses."""

    __slots__ = ("canonical",)

    canonical: Any

    def __init__(self, layers: Sequence[list[Row]]) -> None:
        super().__init__(layers)
        self.canonical = None

    def untouched(self) -> bool:
        """Whether every layer is still an unread :class:`ArrayRows` (so a stored canonical form is theirs)."""
        return all(isinstance(rows, ArrayRows) and rows.untouched for rows in self)


def dyadic_layers(layers: Sequence[Sequence[Row]], m: int | None = None) -> list[Any] | None:
    """The :class:`relusym._deep.dyadic.Dyadic` form of every layer (``m`` inputs, when known), or None when one
    does not fit.  An unread :class:`ArrayRows` is read from its arrays (no Fraction made); other rows entry by
    entry."""
    from relusym._deep.dyadic import dyadic_of_rows

    out = []
    width = m
    if width is None and layers and not isinstance(layers[0], ArrayRows) and layers[0]:
        width = len(layers[0][0]) - 1
    for rows in layers:
        if isinstance(rows, ArrayRows) and rows.untouched:
            D = rows.dyadic()
        else:
            if width is None:
                return None  # plain first layer: its width is not known when it has no rows
            D = dyadic_of_rows(rows, width + 1)
        if D is None:
            return None
        width = D.shape[0]
        out.append(D)
    return out


def primitive(row: Sequence[Fraction]) -> tuple[tuple[int, ...], Fraction]:
    """(p, d) with row = d·p, p a primitive integer row and d > 0; the zero row gives ((0, …), 1)."""
    den = 1
    for q in row:
        if q.denominator != 1:
            den = math.lcm(den, q.denominator)
    ints = [q.numerator * (den // q.denominator) for q in row]
    g = math.gcd(*ints) if ints else 0
    if g == 0:
        return tuple(0 for _ in ints), Fraction(1)
    return tuple(v // g for v in ints), Fraction(g, den)


def unsigned(p: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """(±p with its first nonzero entry positive, the sign ±1 that was removed): the row up to nonzero scale."""
    for v in p:
        if v:
            return (p, 1) if v > 0 else (tuple(-x for x in p), -1)
    return p, 1
