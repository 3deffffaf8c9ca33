"""Exact linear algebra over the rationals, and fast rank computations modulo a prime.

This is the only module of :mod:`relusym` that talks to ``python-flint``.

Matrices are given as sequences of rows whose entries are ``int``, :class:`fractions.Fraction`
(or anything :class:`fractions.Fraction` accepts exactly, including binary floats, read at their
exact binary value), or as numpy arrays (integer, float or object dtype).  Results are returned as
tuples of :class:`fractions.Fraction`.

Two families of functions live here:

* exact functions over Q (:func:`rank`, :func:`rref`, :func:`nullspace`, :func:`solve`,
  :func:`inverse`), backed by ``flint.fmpz_mat`` / ``flint.fmpq_mat``;
* modular functions (:func:`rank_mod_p`, :func:`lu_mod_p`, :func:`left_nullspace_mod_p`) for
  integer matrices.  For a prime below :data:`BLAS_PRIME_LIMIT` they run a recursive, blocked LU
  decomposition whose inner products are exact float64 BLAS products (all residues are kept
  below 2**21 in absolute value, and every product is reduced before it could exceed 2**53).  A
  rank modulo p is a *lower bound* of the rank over Q, so ``rank_mod_p(X) == X.shape[0]``
  certifies that the rows of ``X`` are linearly independent over Q.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Any

import flint
import numpy as np

__all__ = [
    "BLAS_PRIME_LIMIT",
    "DEFAULT_PRIME",
    "FAST_PRIMES",
    "LUModP",
    "inverse",
    "left_nullspace_mod_p",
    "lu_mod_p",
    "nullspace",
    "rank",
    "rank_mod_p",
    "residues_mod_p",
    "rref",
    "solve",
]

#: A fixed 62-bit prime (2**62 - 57), used by :func:`rank_mod_p` when asked for a word-size prime.
DEFAULT_PRIME: int = 4611686018427387847
#: Primes just below 2**20: the default moduli of the fast (BLAS) modular routines.
FAST_PRIMES: tuple[int, ...] = (1048573, 1048571, 1048559, 1048549)
#: Primes below this limit use the float64-BLAS code path; larger ones use flint's ``nmod_mat``.
BLAS_PRIME_LIMIT: int = 1 << 21

Matrix = Any  # sequences of rows, or numpy arrays


# --------------------------------------------------------------------------------------------
# conversions
# --------------------------------------------------------------------------------------------


def _to_fraction(x: Any) -> Fraction:
    """Convert one scalar exactly to a Fraction (floats at their exact binary value)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if not math.isfinite(f):
            raise ValueError(f"non-finite matrix entry {x!r}")
        return Fraction(f)
    if isinstance(x, Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    if isinstance(x, flint.fmpq):
        return Fraction(int(x.p), int(x.q))
    if isinstance(x, flint.fmpz):
        return Fraction(int(x))
    raise TypeError(f"cannot use {type(x).__name__} as an exact matrix entry")


def _rows_of(rows: Matrix, ncols: int | None = None) -> tuple[list[list[Fraction]], int, int]:
    """Return (entries as Fractions, nrows, ncols) of a matrix given as rows or numpy array."""
    if isinstance(rows, np.ndarray):
        if rows.ndim != 2:
            raise ValueError(f"expected a 2-d array, got shape {rows.shape}")
        r, c = rows.shape
        data = [[_to_fraction(x) for x in row] for row in rows.tolist()]
        return data, r, c
    data = [[_to_fraction(x) for x in row] for row in rows]
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
    if all(x.denominator == 1 for row in data for x in row):
        return flint.fmpz_mat(r, c, [int(x.numerator) for row in data for x in row])
    return flint.fmpq_mat(r, c, [flint.fmpq(x.numerator, x.denominator) for row in data for x in row])


def _frac(q: Any) -> Fraction:
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
    bb = [_to_fraction(x) for x in b]
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


# --------------------------------------------------------------------------------------------
# modular arithmetic
# --------------------------------------------------------------------------------------------


def residues_mod_p(int_rows: Matrix, p: int) -> np.ndarray:
    """The entries of an integer matrix reduced modulo ``p``, as an int64 array in ``[0, p)``.

    Accepts numpy integer arrays (vectorised), numpy object arrays and sequences of rows of
    Python ints (of any size; reduced exactly with Python arithmetic).
    """
    if p < 2 or p >= 1 << 63:
        raise ValueError("modulus must satisfy 2 <= p < 2**63")
    if isinstance(int_rows, np.ndarray) and int_rows.dtype.kind in "iu":
        arr = int_rows
        if arr.ndim != 2:
            raise ValueError(f"expected a 2-d array, got shape {arr.shape}")
        if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
            return np.mod(arr, np.uint64(p)).astype(np.int64)
        return np.mod(arr.astype(np.int64, copy=False), np.int64(p))
    if isinstance(int_rows, np.ndarray):
        if int_rows.ndim != 2:
            raise ValueError(f"expected a 2-d array, got shape {int_rows.shape}")
        obj = int_rows.astype(object, copy=False)
    else:
        lst = [list(row) for row in int_rows]
        if not lst:
            return np.zeros((0, 0), dtype=np.int64)
        if any(len(row) != len(lst[0]) for row in lst):
            raise ValueError("rows of different lengths")
        obj = np.empty((len(lst), len(lst[0])), dtype=object)
        for i, row in enumerate(lst):
            obj[i, :] = row
    for x in obj.flat:
        if not isinstance(x, (int, np.integer)):
            raise TypeError(f"integer matrix expected, found entry {x!r}")
    red = np.frompyfunc(lambda x: int(x) % p, 1, 1)(obj) if obj.size else obj
    return np.asarray(red, dtype=np.int64).reshape(obj.shape)


class _Field:
    """Arithmetic modulo a prime p < 2**21 on float64 arrays with exact BLAS products.

    Arrays hold integers of absolute value at most p (not necessarily reduced to [0, p)); zero
    residues are always represented by 0.0 exactly.
    """

    def __init__(self, p: int) -> None:
        if p >= BLAS_PRIME_LIMIT:
            raise ValueError("prime too large for the float64 path")
        self.p = p
        self.fp = float(p)
        self.pinv = 1.0 / p
        # |a|, |b| <= p  =>  |sum of kmax products| + p < 2**53
        self.kmax = max(1, ((1 << 53) - 4 * p) // (p * p))

    def reduce(self, x: np.ndarray) -> np.ndarray:
        """In place: x <- x - round(x / p) * p, for |x| < 2**53. Returns x."""
        q = np.multiply(x, self.pinv)
        np.rint(q, out=q)
        q *= self.fp
        x -= q
        return x

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Reduced product a @ b (entries of a, b of absolute value <= p)."""
        k = a.shape[1]
        if k <= self.kmax:
            return self.reduce(a @ b)
        out = np.zeros((a.shape[0], b.shape[1]))
        for s in range(0, k, self.kmax):
            out += self.reduce(a[:, s : s + self.kmax] @ b[s : s + self.kmax])
            self.reduce(out)
        return out

    def sub_matmul(self, c: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """In place: c <- reduce(c - a @ b)."""
        k = a.shape[1]
        if k == 0:
            return
        if k <= self.kmax:
            c -= a @ b
            self.reduce(c)
            return
        for s in range(0, k, self.kmax):
            c -= a[:, s : s + self.kmax] @ b[s : s + self.kmax]
            self.reduce(c)

    def inv_scalar(self, x: float) -> float:
        return float(pow(int(x) % self.p, -1, self.p))

    def inv_unit_lower(self, low: np.ndarray) -> np.ndarray:
        """Inverse of a unit lower triangular matrix (only the strictly lower part is read)."""
        s = low.shape[0]
        if s <= 64:
            # (I + N)^-1 = prod_k (I + (-N)^(2^k)) for the nilpotent strictly lower part N
            neg = self.reduce(-np.tril(low, -1))
            x = np.eye(s) + neg
            power = neg
            span = 2
            while span < s:
                power = self.matmul(power, power)
                x = self.matmul(x, np.eye(s) + power)
                span *= 2
            return x
        h = s // 2
        x11 = self.inv_unit_lower(low[:h, :h])
        x22 = self.inv_unit_lower(low[h:, h:])
        t = self.matmul(low[h:, :h], x11)
        x21 = self.matmul(x22, t)
        x = np.zeros((s, s))
        x[:h, :h] = x11
        x[h:, h:] = x22
        x[h:, :h] = -x21
        return x

    def solve_lower_left(self, low: np.ndarray, b: np.ndarray) -> np.ndarray:
        """X with L X = B for unit lower triangular L (strictly lower part read); O(s^2 w)."""
        s = low.shape[0]
        if s <= 64:
            return self.matmul(self.inv_unit_lower(low), b)
        h = s // 2
        x1 = self.solve_lower_left(low[:h, :h], b[:h])
        b2 = b[h:].copy()
        self.sub_matmul(b2, low[h:, :h], x1)
        x2 = self.solve_lower_left(low[h:, h:], b2)
        return np.concatenate([x1, x2], axis=0)

    def solve_lower_right(self, low: np.ndarray, b: np.ndarray) -> np.ndarray:
        """X with X L = B for unit lower triangular L (strictly lower part read); O(w s^2)."""
        s = low.shape[0]
        if s <= 64:
            return self.matmul(b, self.inv_unit_lower(low))
        h = s // 2
        x2 = self.solve_lower_right(low[h:, h:], b[:, h:])
        b1 = b[:, :h].copy()
        self.sub_matmul(b1, x2, low[h:, :h])
        x1 = self.solve_lower_right(low[:h, :h], b1)
        return np.concatenate([x1, x2], axis=1)


@dataclass(frozen=True)
class LUModP:
    """A row-pivoted LU decomposition ``P·M = L·U`` of an r×c integer matrix modulo a prime.

    * ``rank``: the rank modulo ``p``;
    * ``perm``: ``perm[t]`` is the original index of the row in position ``t`` (positions
      ``0..rank-1`` are the pivot rows, in the order they were found);
    * ``pivot_cols``: the pivot column of each pivot row (increasing);
    * ``complete``: False if the factorisation stopped early because all rows were pivots
      (then the columns after the last pivot were not processed);
    * ``lu``: float64 array whose entries below each pivot (in the pivot's column) are the
      multipliers of L (the U part is not maintained; only L and the rank are needed for the
      rank and the left nullspace).
    """

    p: int
    rank: int
    perm: np.ndarray
    pivot_cols: tuple[int, ...]
    complete: bool
    lu: np.ndarray


class _LUState:
    def __init__(self, a: np.ndarray, field: _Field, stop_at_full: bool) -> None:
        self.a = a
        self.f = field
        self.rk = 0
        self.nrows = a.shape[0]
        self.perm = np.arange(a.shape[0])
        self.piv: list[int] = []
        self.stop_at_full = stop_at_full
        self.base = 16

    def full(self) -> bool:
        return self.rk >= self.nrows

    def swap(self, i: int, j: int) -> None:
        if i != j:
            a = self.a
            tmp = a[i].copy()
            a[i] = a[j]
            a[j] = tmp
            self.perm[[i, j]] = self.perm[[j, i]]

    def base_case(self, c0: int, c1: int) -> None:
        """Unblocked elimination of the panel [c0, c1) on a contiguous copy, lazily reduced.

        Entries of the panel grow by at most p**2 per elimination step; a column is reduced when
        it becomes the pivot column, the pivot row when it is used, and the panel at the end.
        Row swaps are recorded and applied to the full rows afterwards.
        """
        a, f = self.a, self.f
        r0 = self.rk
        panel = np.array(a[r0:, c0:c1], order="F")  # always a copy
        height = panel.shape[0]
        swaps: list[tuple[int, int]] = []
        t = 0  # local rank
        for j in range(c1 - c0):
            if t >= height:
                break
            col = f.reduce(panel[t:, j])
            nz = np.flatnonzero(col)
            if nz.size == 0:
                continue
            i = t + int(nz[0])
            if i != t:
                tmp = panel[t].copy()
                panel[t] = panel[i]
                panel[i] = tmp
                swaps.append((t, i))
            rest = f.reduce(panel[t, j + 1 :])
            inv = f.inv_scalar(panel[t, j])
            below = panel[t + 1 :, j]
            below *= inv
            f.reduce(below)
            if rest.size and below.size:
                panel[t + 1 :, j + 1 :] -= np.multiply.outer(below, rest)
            self.piv.append(c0 + j)
            t += 1
        f.reduce(panel)
        for x, y in swaps:
            self.swap(r0 + x, r0 + y)
        a[r0:, c0:c1] = panel
        self.rk = r0 + t

    def factor(self, c0: int, c1: int) -> None:
        """Eliminate columns [c0, c1), already updated by all earlier pivots."""
        if c0 >= c1 or (self.stop_at_full and self.full()):
            return
        if c1 - c0 <= self.base:
            self.base_case(c0, c1)
            return
        mid = (c0 + c1) // 2
        r0 = self.rk
        self.factor(c0, mid)
        r1 = self.rk
        if self.stop_at_full and r1 >= self.nrows:
            return
        if r1 > r0:
            self.apply(r0, r1, mid, c1)
        self.factor(mid, c1)

    def apply(self, r0: int, r1: int, c0: int, c1: int) -> None:
        """Apply the pivots r0..r1-1 to the columns [c0, c1) (rows below r1: Schur complement).

        The Schur complement is A22 - L21 L11^-1 A12; the cheaper association is used.  The
        rows r0..r1-1 of these columns (the U part) are not maintained.
        """
        if r1 >= self.nrows:
            return
        a, f = self.a, self.f
        cols: Any = self.piv[r0:r1]
        if cols[-1] - cols[0] == len(cols) - 1:
            cols = slice(cols[0], cols[-1] + 1)
        l11 = a[r0:r1, cols]
        l21 = a[r1:, cols]
        a12 = a[r0:r1, c0:c1]
        blk = a[r1:, c0:c1]
        if self.nrows - r1 <= c1 - c0:
            f.sub_matmul(blk, f.solve_lower_right(l11, l21), a12)
        else:
            f.sub_matmul(blk, l21, f.solve_lower_left(l11, a12))


def _as_field_array(int_rows: Matrix, p: int) -> np.ndarray:
    res = residues_mod_p(int_rows, p)
    return res.astype(np.float64)


def lu_mod_p(int_rows: Matrix, p: int = FAST_PRIMES[0], *, stop_at_full_rank: bool = False) -> LUModP:
    """Row-pivoted LU decomposition of an integer matrix modulo a prime ``p < 2**21``.

    Columns are processed from left to right; the pivot of each column is the first row (in the
    current order) with a nonzero residue, so the pivot columns are the lexicographically first
    set of columns independent modulo ``p``.  With ``stop_at_full_rank`` the elimination stops as
    soon as every row is a pivot row.
    """
    if not (2 <= p < BLAS_PRIME_LIMIT) or not flint.fmpz(p).is_prime():
        raise ValueError(f"p={p} must be a prime below {BLAS_PRIME_LIMIT}")
    return _lu_field(_as_field_array(int_rows, p), p, stop_at_full_rank)


def _lu_field(a: np.ndarray, p: int, stop_at_full_rank: bool) -> LUModP:
    """:func:`lu_mod_p` of a float64 array of residues (|entries| <= p), factored in place."""
    st = _LUState(a, _Field(p), stop_at_full_rank)
    r, c = a.shape
    if r and c:
        # process the first min(r, c) columns, then the rest (early stop at full row rank)
        first = min(c, max(r, 1))
        st.factor(0, first)
        if first < c and not (stop_at_full_rank and st.full()):
            if st.rk:
                st.apply(0, st.rk, first, c)
            st.factor(first, c)
    complete = not (stop_at_full_rank and st.full() and (not st.piv or st.piv[-1] < c - 1))
    return LUModP(p, st.rk, st.perm, tuple(st.piv), complete, a)


def _rank_blas(int_rows: Matrix, p: int) -> int:
    res = residues_mod_p(int_rows, p)
    if res.size == 0:
        return 0
    if res.shape[0] > res.shape[1]:
        res = res.T
    return lu_mod_p(res, p, stop_at_full_rank=True).rank


def rank_mod_p(int_rows: Matrix, p: int | None = None) -> int:
    """Rank of an integer matrix modulo a prime ``p``; a lower bound of its rank over Q.

    ``int_rows`` is a numpy integer array or a sequence of rows of Python ints (big integers are
    reduced modulo ``p`` first).  So ``rank_mod_p(X) == X.shape[1]`` certifies full column rank
    and ``== X.shape[0]`` full row rank.

    * ``p`` below :data:`BLAS_PRIME_LIMIT`: recursive blocked LU with exact float64 BLAS
      products (a random 4096 x 7840 matrix takes about 3 s on one core);
    * larger ``p`` (up to 2**63): flint's ``nmod_mat`` (much slower for large matrices: about
      40 s for 4096 x 7840 with the 62-bit :data:`DEFAULT_PRIME`);
    * ``p=None``: the rank modulo ``FAST_PRIMES[0]``, and if that is not full, the maximum with
      the rank modulo ``FAST_PRIMES[1]``.  Each is a lower bound of the rational rank and, for
      matrices not built adversarially, equal to it with probability about ``1 - 1e-6``.
    """
    if p is None:
        res = residues_mod_p(int_rows, FAST_PRIMES[0])
        r = _rank_blas(res, FAST_PRIMES[0])
        if res.size and r < min(res.shape):
            r = max(r, _rank_blas(residues_mod_p(int_rows, FAST_PRIMES[1]), FAST_PRIMES[1]))
        return r
    if p < 2 or not flint.fmpz(p).is_prime():
        raise ValueError(f"p={p} is not a prime")
    if p < BLAS_PRIME_LIMIT:
        return _rank_blas(int_rows, p)
    if p >= 1 << 63:
        raise ValueError("p must be below 2**63")
    res = residues_mod_p(int_rows, p)
    if res.size == 0:
        return 0
    r, c = res.shape
    return int(flint.nmod_mat(r, c, res.ravel().tolist(), p).rank())


def left_nullspace_mod_p(int_rows: Matrix, p: int = FAST_PRIMES[0]) -> tuple[np.ndarray, LUModP]:
    """A basis of the left nullspace ``{y : yᵀ M ≡ 0 (mod p)}`` of an integer matrix ``M``.

    Returns ``(Y, lu)``: ``Y`` is an int64 array of shape ``(r - rank, r)`` with entries in
    ``[0, p)``, one row per non-pivot row ``j`` of the LU decomposition ``lu``: it is 1 at ``j``,
    0 at the other non-pivot rows, and expresses row ``j`` as a combination of pivot rows.
    """
    lu = lu_mod_p(int_rows, p)
    a = lu.lu
    r = a.shape[0]
    rk = lu.rank
    w = r - rk
    out = np.zeros((w, r), dtype=np.int64)
    if w == 0:
        return out, lu
    f = _Field(p)
    cols = list(lu.pivot_cols)
    if rk:
        l11 = a[:rk][:, cols]
        l21 = a[rk:][:, cols]
        coef = f.solve_lower_right(l11, l21)  # row j = coef[j] · (pivot rows)
        coef = np.mod(-coef, p).astype(np.int64)
        out[:, lu.perm[:rk]] = coef
    out[np.arange(w), lu.perm[rk:]] = 1
    return out, lu
