"""Exact rows of a deep network's layers: rationals, primitive integer rows, and positive scales.

A hidden unit of layer ℓ is the row (w, β) of the augmented matrix [W_ℓ | b_ℓ]; rescaling the unit by d > 0
multiplies the row by d and divides its outgoing column by d.  Every nonzero rational row is d·p for exactly one
*primitive* integer row p (integer entries with gcd 1) and one d > 0: p is the canonical representative of the
row up to positive scale, and two rows are positively parallel iff their primitive rows are equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._exact.numbers import to_fraction

__all__ = ["Row", "rational_rows", "primitive", "unsigned", "matrix_rows"]

Row = list[Fraction]


def matrix_rows(W: np.ndarray) -> list[Row]:
    """The rows of a parameter array (float or exact) as lists of Fractions."""
    if W.dtype == object:
        return [[v if type(v) is Fraction else to_fraction(v) for v in r] for r in W.tolist()]
    return [[Fraction(v) for v in r] for r in W.astype(np.float64).tolist()]


def rational_rows(W: np.ndarray, b: np.ndarray) -> list[Row]:
    """The augmented rows (W[i, :], b[i]) as lists of Fractions."""
    rows = matrix_rows(W)
    bias = [to_fraction(v) for v in b.tolist()]
    return [r + [bi] for r, bi in zip(rows, bias, strict=True)]


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
