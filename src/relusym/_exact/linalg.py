"""Exact linear algebra over the rationals, and fast rank computations modulo a prime.

This module and :mod:`relusym.modular` are the only ones of :mod:`relusym` that talk to ``python-flint``; both
import it inside the functions that use it (it takes about a quarter of ``import relusym`` otherwise).

Matrices are given as sequences of rows whose entries are ``int``, :class:`fractions.Fraction`
(or anything :class:`fractions.Fraction` accepts exactly, including binary floats, read at their
exact binary value), or as numpy arrays (integer, float or object dtype).  Results are returned as
tuples of :class:`fractions.Fraction`.

The exact functions over Q (:func:`rank`, :func:`rref`, :func:`nullspace`, :func:`solve`, :func:`inverse`) are
backed by ``flint.fmpz_mat`` / ``flint.fmpq_mat``.  The rank certificates modulo a prime live in
:mod:`relusym.modular` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._exact.modular import (
    BLAS_PRIME_LIMIT,
    DEFAULT_PRIME,
    FAST_PRIMES,
    LUModP,
    Matrix,
    dyadic_residues_mod_p,
    left_nullspace_mod_p,
    lu_mod_p,
    matmul_mod_p,
    nonsingular_mod_p,
    rank_mod_p,
    residues_mod_p,
)
from relusym._exact.numbers import to_fraction

__all__ = [
    "BLAS_PRIME_LIMIT",
    "DEFAULT_PRIME",
    "FAST_PRIMES",
    "LUModP",
    "dyadic_residues_mod_p",
    "inverse",
    "left_nullspace_mod_p",
    "lu_mod_p",
    "matmul_mod_p",
    "nonsingular_mod_p",
    "nullspace",
    "rank",
    "rank_mod_p",
    "residues_mod_p",
    "rref",
    "solve",
]


# --------------------------------------------------------------------------------------------
# conversions
# --------------------------------------------------------------------------------------------


def _rows_of(rows: Matrix, ncols: int | None = None) -> tuple[list[list[Fraction]], int, int]:
    """Return (entries as Fractions, nrows, ncols) of a matrix given as rows or numpy array."""
    if isinstance(rows, np.ndarray):
        if rows.ndim != 2:
            raise ValueError(f"expected a 2-d array, got shape {rows.shape}")
        r, c = rows.shape
        data = [[to_fraction(x, "matrix entry") for x in row] for row in rows.tolist()]
        return data, r, c
    data = [[to_fraction(x, "matrix entry") for x in row] for row in rows]
    r = len(data)
    if r == 0:
        c = 0 if ncols is None else ncols
    else:
        c = len(data[0])
        if any(len(row) != c for row in data):
            raise ValueError("rows of different lengths")
    if ncols is not None and c != ncols:
        raise ValueError(f"matrix has {c} columns, expected {ncols}")
    return data, r, c


def _flint_matrix(data: list[list[Fraction]], r: int, c: int) -> Any:
    """An fmpz_mat when all entries are integers, otherwise an fmpq_mat."""
    import flint

    if all(x.denominator == 1 for row in data for x in row):
        return flint.fmpz_mat(r, c, [int(x.numerator) for row in data for x in row])
    return flint.fmpq_mat(r, c, [flint.fmpq(x.numerator, x.denominator) for row in data for x in row])


def _frac(q: Any) -> Fraction:
    import flint

    if isinstance(q, flint.fmpq):
        return Fraction(int(q.p), int(q.q))
    return Fraction(int(q))


# --------------------------------------------------------------------------------------------
# exact functions over Q
# --------------------------------------------------------------------------------------------


def rank(rows: Matrix) -> int:
    """Exact rank over Q of a matrix (0 for a matrix with no rows or no columns)."""
    data, r, c = _rows_of(rows)
    if r == 0 or c == 0:
        return 0
    return int(_flint_matrix(data, r, c).rank())


def rref(rows: Matrix, ncols: int | None = None) -> tuple[list[tuple[Fraction, ...]], list[int]]:
    """Reduced row echelon form over Q.

    Returns ``(R, pivots)``: the nonzero rows of the reduced row echelon form (each a tuple of
    Fractions; the entry in column ``pivots[i]`` of row ``i`` is 1 and all other rows are 0 there)
    and the list of pivot columns in increasing order.  ``ncols`` gives the number of columns of
    a matrix with no rows.
    """
    import flint

    data, r, c = _rows_of(rows, ncols)
    if r == 0 or c == 0:
        return [], []
    m = flint.fmpq_mat(r, c, [flint.fmpq(x.numerator, x.denominator) for row in data for x in row])
    red, rk = m.rref()
    out: list[tuple[Fraction, ...]] = []
    pivots: list[int] = []
    for i in range(int(rk)):
        row = tuple(_frac(red[i, j]) for j in range(c))
        out.append(row)
        pivots.append(next(j for j, x in enumerate(row) if x != 0))
    return out, pivots


def nullspace(rows: Matrix, ncols: int | None = None) -> list[tuple[Fraction, ...]]:
    """A basis of the right nullspace ``{x : rows · x = 0}`` over Q, in canonical form.

    With ``R, P = rref(rows)`` there is one basis vector per non-pivot column ``f`` (in
    increasing order of ``f``): it is 1 at ``f``, ``-R[i][f]`` at the pivot column ``P[i]`` and 0
    elsewhere.  The basis therefore depends only on the row space of ``rows``; the support of
    each vector is a circuit of the matroid of the nullspace (a *fundamental circuit*).
    ``ncols`` gives the number of columns of a matrix with no rows.
    """
    data, r, c = _rows_of(rows, ncols)
    if c == 0:
        return []
    red, pivots = rref(data, c) if r else ([], [])
    pivot_set = set(pivots)
    basis: list[tuple[Fraction, ...]] = []
    for f in range(c):
        if f in pivot_set:
            continue
        vec = [Fraction(0)] * c
        vec[f] = Fraction(1)
        for i, p in enumerate(pivots):
            vec[p] = -red[i][f]
        basis.append(tuple(vec))
    return basis


def solve(A_rows: Matrix, b: Sequence[Any]) -> tuple[Fraction, ...] | None:
    """One solution ``x`` of ``A x = b`` over Q, or ``None`` if the system is inconsistent.

    The returned solution is the one whose non-pivot (free) coordinates are 0.
    """
    data, r, c = _rows_of(A_rows)
    bb = [to_fraction(x, "matrix entry") for x in b]
    if len(bb) != r:
        raise ValueError(f"right-hand side has length {len(bb)}, expected {r}")
    if r == 0:
        return tuple(Fraction(0) for _ in range(c))
    aug = [row + [bi] for row, bi in zip(data, bb, strict=True)]
    red, pivots = rref(aug, c + 1)
    if pivots and pivots[-1] == c:
        return None
    x = [Fraction(0)] * c
    for i, p in enumerate(pivots):
        x[p] = red[i][c]
    return tuple(x)


def inverse(rows: Matrix) -> list[tuple[Fraction, ...]]:
    """The inverse over Q of a square invertible matrix (``ValueError`` if singular / not square)."""
    import flint

    data, r, c = _rows_of(rows)
    if r != c:
        raise ValueError(f"matrix of shape ({r}, {c}) is not square")
    if r == 0:
        return []
    m = flint.fmpq_mat(r, c, [flint.fmpq(x.numerator, x.denominator) for row in data for x in row])
    try:
        inv = m.inv()
    except ZeroDivisionError as exc:
        raise ValueError("matrix is singular") from exc
    return [tuple(_frac(inv[i, j]) for j in range(c)) for i in range(r)]
