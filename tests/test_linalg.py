"""Tests of relusym.linalg: exact linear algebra over Q and ranks modulo a prime.

The oracles are independent: a small Fraction Gaussian elimination written here, numpy's float
rank on small integer matrices, and python-flint's own nmod_mat for ranks modulo p.
"""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym._exact import linalg as linalg
from relusym._exact import modular as modular

from oracles import rank_q

P = linalg.FAST_PRIMES[0]


def _rank_oracle(rows: list[list[Fraction]]) -> int:
    """Plain Gaussian elimination over Q."""
    return rank_q(rows)


def _low_rank(rng: np.random.Generator, r: int, c: int, k: int, lo: int = -3, hi: int = 4) -> np.ndarray:
    if k == 0 or r == 0 or c == 0:
        return np.zeros((r, c), dtype=np.int64)
    return rng.integers(lo, hi, (r, k)) @ rng.integers(lo, hi, (k, c))


small_int_matrices = st.integers(0, 7).flatmap(
    lambda r: st.integers(0, 7).flatmap(
        lambda c: st.lists(st.lists(st.integers(-4, 4), min_size=c, max_size=c), min_size=r, max_size=r).map(
            lambda rows: (rows, c)
        )
    )
)


@settings(max_examples=150, deadline=None)
@given(small_int_matrices)
def test_rank_against_oracles(mc: tuple[list[list[int]], int]) -> None:
    rows, c = mc
    expected = _rank_oracle([[Fraction(x) for x in r] for r in rows])
    assert linalg.rank(rows) == expected
    if rows and c:
        assert linalg.rank(np.array(rows)) == int(np.linalg.matrix_rank(np.array(rows, dtype=float)))
        assert linalg.rank_mod_p(rows) <= expected
        assert linalg.rank_mod_p(np.array(rows, dtype=np.int64)) == expected  # small entries: p never divides


@settings(max_examples=150, deadline=None)
@given(small_int_matrices, st.integers(1, 5))
def test_nullspace_rref_solve(mc: tuple[list[list[int]], int], den: int) -> None:
    rows, c = mc
    A = [[Fraction(x, den) for x in r] for r in rows]
    rk = _rank_oracle(A)
    basis = linalg.nullspace(A, c)
    assert len(basis) == c - rk
    for v in basis:
        assert len(v) == c
        assert all(sum(a * x for a, x in zip(r, v, strict=True)) == 0 for r in A)
    # basis vectors are independent: each has a 1 at its own free column, 0 at the others
    R, piv = linalg.rref(A, c)
    free = [j for j in range(c) if j not in piv]
    for v, f in zip(basis, free, strict=True):
        assert v[f] == 1
        assert all(v[g] == 0 for g in free if g != f)
    # rref: increasing pivots, unit pivots, zeros above/below, same row space
    assert piv == sorted(piv) and len(piv) == rk == len(R)
    for i, p in enumerate(piv):
        assert R[i][p] == 1
        assert all(R[j][p] == 0 for j in range(len(R)) if j != i)
        assert all(R[i][j] == 0 for j in range(p))
    if rows:
        assert _rank_oracle(A + [list(r) for r in R]) == rk
    # canonical: the nullspace depends only on the row space
    if rows:
        assert linalg.nullspace(list(reversed(A)) + A, c) == basis
        assert linalg.nullspace(R, c) == basis
    # solve: consistent right-hand side
    x0 = [Fraction(j - 1, 3) for j in range(c)]
    b = [sum(a * x for a, x in zip(r, x0, strict=True)) for r in A]
    x = linalg.solve(A, b)
    assert x is not None
    assert [sum(a * xi for a, xi in zip(r, x, strict=True)) for r in A] == b


def test_solve_inconsistent_and_edge_cases() -> None:
    assert linalg.solve([[1, 2], [2, 4]], [1, 3]) is None
    assert linalg.solve([[1, 2], [2, 4]], [1, 2]) == (Fraction(1), Fraction(0))
    assert linalg.solve([[0, 0]], [0]) == (Fraction(0), Fraction(0))
    assert linalg.solve([[0, 0]], [1]) is None
    assert linalg.rank([]) == 0
    assert linalg.rank(np.zeros((3, 0), dtype=np.int64)) == 0
    assert linalg.nullspace([], 3) == [
        (1, 0, 0),
        (0, 1, 0),
        (0, 0, 1),
    ]
    assert linalg.nullspace(np.zeros((2, 0), dtype=np.int64)) == []
    assert linalg.rref([], 2) == ([], [])
    assert linalg.rank([[0.5, 0.25], [1.0, 0.5]]) == 1  # floats are read exactly
    assert linalg.rank([[0.1, 0.2], [0.2, 0.4]]) == 1  # 0.2 is exactly twice 0.1 in binary
    assert linalg.rank([[0.1, 0.3], [1, 3]]) == 2  # but 0.3 is not exactly three times 0.1
    with pytest.raises(ValueError, match="rows of different lengths"):
        linalg.rank([[1, 2], [3]])
    with pytest.raises(ValueError, match="matrix entry is nan; NaN and infinities are not allowed"):
        linalg.rank([[float("nan")]])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10**6))
def test_inverse(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    A = [[Fraction(int(x), int(rng.integers(1, 4))) for x in row] for row in rng.integers(-5, 6, (n, n))]
    if _rank_oracle(A) < n:
        with pytest.raises(ValueError, match="matrix is singular"):
            linalg.inverse(A)
        return
    inv = linalg.inverse(A)
    for i in range(n):
        for j in range(n):
            assert sum(A[i][k] * inv[k][j] for k in range(n)) == (1 if i == j else 0)


def test_inverse_errors() -> None:
    with pytest.raises(ValueError, match=r"matrix of shape \(1, 3\) is not square"):
        linalg.inverse([[1, 2, 3]])
    with pytest.raises(ValueError, match="matrix is singular"):
        linalg.inverse([[1, 2], [2, 4]])
    assert linalg.inverse([]) == []


def test_rank_mod_p_is_a_lower_bound() -> None:
    p = P
    assert linalg.rank_mod_p([[p]], p) == 0 and linalg.rank([[p]]) == 1
    assert linalg.rank_mod_p([[p]], p=linalg.FAST_PRIMES[2]) == 1
    assert linalg.rank_mod_p([[p]]) == 1  # p=None retries with a second prime when not full
    M = [[p, 1], [0, p]]
    assert linalg.rank_mod_p(M, p) == 1 and linalg.rank(M) == 2
    big = [[2**200 + 1, 3], [5, 2**130]]
    assert linalg.rank_mod_p(big) == 2
    assert linalg.rank_mod_p(big, linalg.DEFAULT_PRIME) == 2  # flint nmod_mat path
    assert linalg.rank_mod_p([]) == 0
    with pytest.raises(ValueError, match="p=1048576 is not a prime"):
        linalg.rank_mod_p([[1]], p=1048576)  # not prime


@pytest.mark.parametrize("shape,k", [((40, 70), 25), ((70, 40), 40), ((130, 90), 60), ((3, 500), 2), ((300, 2), 2)])
def test_lu_mod_p_against_flint(shape: tuple[int, int], k: int) -> None:
    rng = np.random.default_rng(sum(shape) + k)
    r, c = shape
    M = _low_rank(rng, r, c, k, -50, 50)
    M[rng.integers(0, r)] = 0
    expected = int(flint.nmod_mat(r, c, np.mod(M, P).ravel().tolist(), P).rank())
    assert linalg.rank_mod_p(M, P) == expected
    assert linalg.rank_mod_p(M.T.copy(), P) == expected
    Y, lu = linalg.left_nullspace_mod_p(M, P)
    assert lu.rank == expected
    assert Y.shape == (r - expected, r)
    assert not np.any((Y.astype(object) @ M.astype(object)) % P)
    # rows of Y are independent: unit vectors on the non-pivot rows
    nonpiv = lu.perm[lu.rank :]
    assert np.array_equal(Y[:, nonpiv], np.eye(len(nonpiv), dtype=np.int64))
    # pivot columns: the lexicographically first independent columns mod p
    cols = list(lu.pivot_cols)
    sub = np.mod(M[:, cols], P).ravel().tolist()
    assert len(cols) == expected == int(flint.nmod_mat(r, len(cols), sub, P).rank())


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 90), st.integers(1, 90), st.integers(0, 90), st.integers(0, 10**6))
def test_lu_mod_p_random_shapes(r: int, c: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = min(k, r, c)
    M = _low_rank(rng, r, c, k, -(2**20), 2**20)
    # structured zeros stress the pivot search and the column skipping
    if seed % 3 == 0:
        M[:, rng.integers(0, c, size=c // 2)] = 0
    if seed % 5 == 0:
        M[rng.integers(0, r, size=r // 2)] = 0
    expected = int(flint.nmod_mat(r, c, np.mod(M, P).ravel().tolist(), P).rank())
    assert linalg.lu_mod_p(M, P).rank == expected
    assert linalg.lu_mod_p(M, P, stop_at_full_rank=True).rank == expected
    Y, _ = linalg.left_nullspace_mod_p(M, P)
    assert not np.any((Y.astype(object) @ M.astype(object)) % P)


def test_field_matmul_chunks_exactly() -> None:
    # a prime near 2**21 makes the inner-dimension chunking kick in (kmax about 2048)
    p = 2097143
    f = modular.Field(p)
    assert f.kmax < 5000
    rng = np.random.default_rng(0)
    a = rng.integers(-p, p + 1, (3, 5000))
    b = rng.integers(-p, p + 1, (5000, 4))
    got = np.mod(f.matmul(a.astype(float), b.astype(float)), p).astype(np.int64)
    want = np.mod(a.astype(object) @ b.astype(object), p).astype(np.int64)
    assert np.array_equal(got, want)


def test_residues_mod_p_inputs() -> None:
    rows = [[-1, 2**100], [3, -(2**70)]]
    res = linalg.residues_mod_p(rows, 97)
    assert res.tolist() == [[(-1) % 97, 2**100 % 97], [3, (-(2**70)) % 97]]
    assert linalg.residues_mod_p(np.array(rows, dtype=object), 97).tolist() == res.tolist()
    assert linalg.residues_mod_p(np.array([[-5, 7]], dtype=np.int32), 3).tolist() == [[1, 1]]
    with pytest.raises(TypeError):
        linalg.residues_mod_p([[Fraction(1, 2)]], 97)


def test_rank_mod_p_full_rank_medium() -> None:
    rng = np.random.default_rng(1)
    M = rng.integers(-(2**40), 2**40, size=(300, 500))
    assert linalg.rank_mod_p(M) == 300
    M[7] = 3 * M[3] - M[11]
    assert linalg.rank_mod_p(M) == 299
    assert linalg.rank_mod_p(M, linalg.DEFAULT_PRIME) == 299
