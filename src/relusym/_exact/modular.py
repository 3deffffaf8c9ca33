"""Exact rank computations modulo a prime, as certificates over Q (docs/math/fibres.md G-c,
docs/math/hidden-symmetries.md).

For a prime below :data:`BLAS_PRIME_LIMIT` the routines run a recursive, blocked LU decomposition whose inner
products are exact float64 BLAS products (all residues are kept below 2**21 in absolute value, and every
product is reduced before it could exceed 2**53); larger primes use flint's ``nmod_mat``.  A rank modulo p is a
*lower bound* of the rank over Q, so ``rank_mod_p(X) == X.shape[0]`` certifies that the rows of ``X`` are
linearly independent over Q.  :func:`nonsingular_mod_p` is a faster one-sided test of that kind for square
matrices of residues (from :func:`residues_mod_p`, :func:`dyadic_residues_mod_p` for float arrays,
:func:`matmul_mod_p`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Matrix = Any  # sequences of rows, or numpy arrays (the matrix argument type of the exact and modular routines)

__all__ = [
    "BLAS_PRIME_LIMIT",
    "batched_rank_mod_p",
    "DEFAULT_PRIME",
    "FAST_PRIMES",
    "LUModP",
    "dyadic_residues_mod_p",
    "left_nullspace_mod_p",
    "lu_mod_p",
    "matmul_mod_p",
    "nonsingular_mod_p",
    "rank_mod_p",
    "residues_mod_p",
    "Matrix",
]

#: A fixed 62-bit prime (2**62 - 57), used by :func:`rank_mod_p` when asked for a word-size prime.
DEFAULT_PRIME: int = 4611686018427387847
#: Primes just below 2**20: the default moduli of the fast (BLAS) modular routines.
FAST_PRIMES: tuple[int, ...] = (1048573, 1048571, 1048559, 1048549)
#: Primes below this limit use the float64-BLAS code path; larger ones use flint's ``nmod_mat``.
BLAS_PRIME_LIMIT: int = 1 << 21

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


class Field:
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
            return np.asarray(x)
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
    def __init__(self, a: np.ndarray, field: Field, stop_at_full: bool) -> None:
        self.a = a
        self.f = field
        self.rk = 0
        self.nrows = a.shape[0]
        self.perm = np.arange(a.shape[0])
        self.piv: list[int] = []
        self.stop_at_full = stop_at_full
        self.base = 16

    def full(self) -> bool:
        return bool(self.rk >= self.nrows)

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
    import flint

    if not (2 <= p < BLAS_PRIME_LIMIT) or not flint.fmpz(p).is_prime():
        raise ValueError(f"p={p} must be a prime below {BLAS_PRIME_LIMIT}")
    return lu_field(_as_field_array(int_rows, p), p, stop_at_full_rank)


def lu_field(a: np.ndarray, p: int, stop_at_full_rank: bool) -> LUModP:
    """:func:`lu_mod_p` of a float64 array of residues (|entries| <= p), factored in place."""
    st = _LUState(a, Field(p), stop_at_full_rank)
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
    import flint

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
    f = Field(p)
    cols = list(lu.pivot_cols)
    if rk:
        l11 = a[:rk][:, cols]
        l21 = a[rk:][:, cols]
        coef = f.solve_lower_right(l11, l21)  # row j = coef[j] · (pivot rows)
        coef = np.mod(-coef, p).astype(np.int64)
        out[:, lu.perm[:rk]] = coef
    out[np.arange(w), lu.perm[rk:]] = 1
    return out, lu


def dyadic_residues_mod_p(arr: np.ndarray, p: int) -> np.ndarray:
    """The image of a float16/32/64 array (dyadic rationals, read at their exact binary value) under the ring
    map Z[1/2] -> F_p, for an odd prime p < 2**21: a float64 array of integers of absolute value < p/2, the
    representation that :func:`matmul_mod_p` and :func:`nonsingular_mod_p` take."""
    f = Field(p)
    if arr.size == 0:
        return np.zeros(arr.shape)
    bits = 24 if arr.dtype in (np.float16, np.float32) else 53
    mant, ex = np.frexp(arr.astype(np.float64))
    e = ex.astype(np.int64) - bits
    emin = int(e.min())
    table = np.array([pow(2, x, p) for x in range(emin, int(e.max()) + 1)], dtype=np.float64)
    if bits == 24:  # mantissa < 2**24, table < p: the product is exact in float64
        return f.reduce(mant * 2.0**24 * table[e - emin])
    mant53 = (mant * 2.0**53).astype(np.int64) % p
    return f.reduce(mant53.astype(np.float64) * table[e - emin])


def matmul_mod_p(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """The product a @ b modulo a prime p < 2**21 of float64 residue arrays (|entries| <= p), reduced to
    absolute values <= p/2; exact float64 BLAS products."""
    return Field(p).matmul(a, b)


def nonsingular_mod_p(a: np.ndarray, p: int = FAST_PRIMES[0], *, block: int = 512) -> bool:
    """True only if the square float64 integer matrix ``a`` (|entries| < 2**50) is nonsingular modulo a prime
    p < 2**21; False means "not shown" (a leading block was singular: no pivoting across blocks).

    Blocked Schur complements: each diagonal block is inverted by recursive 2×2 blocking, the trailing matrix
    is updated by exact float64 BLAS products and reduced only when its entries could pass 2**51.  About twice
    as fast as :func:`lu_mod_p` on 4096 × 4096, where it certifies the rank of the flip matrix (docs/math/fibres.md).
    """
    f = Field(p)
    n = a.shape[0]
    g = f.reduce(np.array(a, dtype=np.float64))
    step = block * ((p + 1) // 2) ** 2  # the most one trailing update adds to an entry
    size = p
    for j0 in range(0, n, block):
        j1 = min(n, j0 + block)
        panel = f.reduce(g[j0:j1, j0:])
        inv = _inverse_mod_p(panel[:, : j1 - j0], f)
        if inv is None:
            return False
        if j1 < n:
            if size + step >= 1 << 51:
                f.reduce(g[j1:, j1:])
                size = p
            g[j1:, j1:] -= f.reduce(g[j1:, j0:j1]) @ f.matmul(inv, panel[:, j1 - j0 :])
            size += step
    return True


def _inverse_mod_p(a: np.ndarray, f: Field) -> np.ndarray | None:
    """Inverse of a square residue array (|entries| <= p/2) by recursive 2×2 blocking, flint below 33 rows;
    None when a leading block is singular."""
    import flint

    n, p = a.shape[0], f.p
    if n <= 32:
        try:
            inv = flint.nmod_mat(n, n, [int(x) % p for x in a.ravel().tolist()], p).inv()
        except ZeroDivisionError:
            return None
        return f.reduce(np.array([int(x) for x in inv.entries()], dtype=np.float64).reshape(n, n))
    h = n // 2
    x = _inverse_mod_p(a[:h, :h], f)
    if x is None:
        return None
    xb = f.matmul(x, a[:h, h:])
    si = _inverse_mod_p(f.reduce(a[h:, h:] - f.matmul(a[h:, :h], xb)), f)
    if si is None:
        return None
    sicx = f.matmul(si, f.matmul(a[h:, :h], x))
    return np.block([[f.reduce(x + f.matmul(xb, sicx)), f.reduce(-f.matmul(xb, si))], [-sicx, si]])


def batched_rank_mod_p(X: np.ndarray, p: int = 2147483647) -> np.ndarray:
    """Ranks modulo p of a batch of small matrices X (B × r × c, int64 entries in [0, p))."""
    X = X.copy()
    B, r, c = X.shape
    rank = np.zeros(B, dtype=np.int64)
    used = np.zeros((B, r), dtype=bool)
    for col in range(c):
        nz = (X[:, :, col] != 0) & ~used
        has = nz.any(axis=1)
        idx = np.nonzero(has)[0]
        if idx.size == 0:
            continue
        piv = np.argmax(nz[idx], axis=1)
        sub = X[idx]
        ar = np.arange(idx.size)
        prow = sub[ar, piv, :]
        pval = prow[:, col]
        f = sub[:, :, col]
        sub = (sub * pval[:, None, None] - f[:, :, None] * prow[:, None, :]) % p
        sub[ar, piv, :] = prow
        X[idx] = sub
        used[idx, piv] = True
        rank[idx] += 1
    return rank
