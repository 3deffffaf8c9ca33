"""Tests of relusym.flipsearch against brute force and exact Fraction arithmetic."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym._exact import linalg as linalg
from relusym._fibre import flipsearch as fs

P = linalg.FAST_PRIMES[0]


def brute_force(X: list[list[int]] | np.ndarray) -> list[tuple[int, ...]]:
    """All nonempty subsets with zero sum, by enumerating every subset (exact Python ints)."""
    rows = [[int(x) for x in r] for r in np.asarray(X, dtype=object)]
    n = len(rows)
    d = len(rows[0]) if rows else 0
    out = []
    sums = [[0] * d]
    for i in range(n):  # sums[mask] for masks over the first i rows
        sums = sums + [[a + b for a, b in zip(s, rows[i], strict=True)] for s in sums]
    for mask in range(1, 1 << n):
        if not any(sums[mask]):
            out.append(tuple(i for i in range(n) if (mask >> i) & 1))
    return sorted(out, key=lambda t: (len(t), t))


def exact_zero(V: np.ndarray, A: np.ndarray, T: tuple[int, ...]) -> bool:
    """Σ_{i∈T} v_i a_iᵀ == 0 with Fractions of the original (float or rational) weights."""

    k, m = V.shape[0], A.shape[1]
    return all(sum(_fr(V[j, i]) * _fr(A[i, l]) for i in T) == 0 for j in range(k) for l in range(m))


def check_against_brute(X: list[list[int]] | np.ndarray, **kw: object) -> fs.FlipSearch:
    res = fs.find_flip_sets(X, **kw)  # type: ignore[arg-type]
    expected = brute_force(X)
    assert res.complete
    assert res.count == len(expected)
    assert res.sets == expected
    assert res.count_lower_bound == len(expected)
    assert res.undecided is None
    return res


# --------------------------------------------------------------------------------------------
# exhaustive comparisons
# --------------------------------------------------------------------------------------------

instances = st.tuples(st.integers(1, 13), st.integers(1, 3), st.integers(1, 4), st.integers(0, 2**32 - 1))


@settings(max_examples=120, deadline=None)
@given(instances)
def test_random_small_instances_match_brute_force(inst: tuple[int, int, int, int]) -> None:
    n, d, spread, seed = inst
    rng = np.random.default_rng(seed)
    X = rng.integers(-spread, spread + 1, size=(n, d))
    # planted zero sums and zero rows
    if n >= 3 and seed % 2:
        i, j, k = rng.choice(n, 3, replace=False)
        X[k] = -(X[i] + X[j])
    if seed % 3 == 0:
        X[rng.integers(0, n)] = 0
    check_against_brute(X)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_big_and_adversarial_integers_match_brute_force(n: int, d: int, seed: int) -> None:
    """Entries divisible by the internal primes, and entries far beyond int64."""
    rng = np.random.default_rng(seed)
    factors = np.array([1, P, P * linalg.FAST_PRIMES[1], 2**80, 3**60, 2**1100 + 1], dtype=object)
    mult = rng.choice(factors, size=(n, d))
    X = rng.integers(-2, 3, size=(n, d)).astype(object) * mult
    if n >= 3:
        i, j, k = rng.choice(n, 3, replace=False)
        X[k] = -(X[i] + X[j])
    check_against_brute(X)


def test_blocks_and_count_formula() -> None:
    # block 1 lives in coordinate 0, block 2 in coordinate 1, plus two zero rows
    X = [
        [1, 0, 0],
        [2, 0, 0],
        [-3, 0, 0],
        [-1, 0, 0],  # block 1
        [0, 5, 0],
        [0, -5, 0],
        [0, 5, 0],  # block 2
        [0, 0, 0],
        [0, 0, 0],  # zero rows
        [7, 11, 1],  # independent of everything: in no flip set
    ]
    res = check_against_brute(X)
    assert res.zero_rows == (7, 8)
    assert len(res.blocks) == 2
    assert sorted(map(sorted, res.blocks)) == [[0, 1, 2, 3], [4, 5, 6]]
    # count = (c1 + 1)(c2 + 1) 2^z - 1 with the per-block counts
    c1 = len(brute_force([r for r in X[:4]]))
    c2 = len(brute_force([r for r in X[4:7]]))
    assert res.count == (c1 + 1) * (c2 + 1) * 4 - 1
    assert 9 not in {i for t in res.sets for i in t}


def test_duplicate_and_negated_rows_many_blocks() -> None:
    rng = np.random.default_rng(3)
    base = rng.integers(-(2**30), 2**30, size=(6, 8))
    X = np.concatenate([base, -base[:3], 2 * base[3:5]])  # rows i and i+6 cancel (i < 3)
    res = check_against_brute(X)
    assert res.count == 7 and len(res.blocks) == 5


def test_full_rank_and_trivial_cases() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(-(2**50), 2**50, size=(30, 40))
    res = fs.find_flip_sets(X)
    assert res.complete and res.count == 0 and res.sets == []
    assert "full row rank" in res.certificate
    assert res.rank == 30
    X[4] = 0
    X[9] = 0
    res = fs.find_flip_sets(X)
    assert res.complete and res.count == 3 and res.sets == [(4,), (9,), (4, 9)]
    # all rows zero, no rows, no columns
    assert fs.find_flip_sets(np.zeros((3, 2), dtype=np.int64)).count == 7
    assert fs.find_flip_sets(np.zeros((0, 2), dtype=np.int64)).count == 0
    assert fs.find_flip_sets(np.zeros((2, 0), dtype=np.int64)).count == 3


def test_max_sets_truncates_listing_but_counts_exactly() -> None:
    X = [[1]] * 6 + [[-1]] * 6  # zero sums: equal numbers of +1 and -1 rows
    expected = sum(math.comb(6, j) ** 2 for j in range(7)) - 1
    res = fs.find_flip_sets(X, max_sets=10)
    assert res.count == expected
    assert not res.complete
    assert len(res.sets) == 10 and res.count_lower_bound == expected
    assert all(fs.is_flip_set(X, t) for t in res.sets)
    assert "truncated" in (res.undecided or "")


def test_meet_in_the_middle_on_a_large_block() -> None:
    rng = np.random.default_rng(7)
    n = 34
    X = rng.integers(-(2**60), 2**60, size=(n, 1)).astype(object) * 2**40 + 1
    X[-1, 0] = -(X[0, 0] + X[5, 0] + X[17, 0])
    res = fs.find_flip_sets(X)
    assert res.complete and res.sets == [(0, 5, 17, 33)] and res.count == 1
    assert "meet-in-the-middle" in res.certificate
    # and with many solutions: small values
    X = [[1]] * 17 + [[-1]] * 17
    res = fs.find_flip_sets(X, max_sets=5)
    assert res.count == sum(math.comb(17, j) ** 2 for j in range(18)) - 1


def test_is_flip_set() -> None:
    X = [[1, 2], [-1, -2], [3, 4], [0, 0]]
    assert fs.is_flip_set(X, [0, 1])
    assert fs.is_flip_set(X, {3})
    assert fs.is_flip_set(X, [0, 1, 3])
    assert not fs.is_flip_set(X, [0, 2])
    assert not fs.is_flip_set(X, [])
    with pytest.raises(IndexError):
        fs.is_flip_set(X, [4])
    with pytest.raises(TypeError):
        fs.find_flip_sets([[Fraction(1, 2)]])


def test_to_dict_is_json() -> None:
    res = fs.find_flip_sets([[1], [-1], [0]])
    d = json.loads(json.dumps(res.to_dict()))
    assert d["count"] == 3 and d["complete"] and d["zero_rows"] == [2]
    assert sorted(map(tuple, d["sets"])) == sorted(res.sets)


# --------------------------------------------------------------------------------------------
# flip matrices of networks
# --------------------------------------------------------------------------------------------


def _fr(x: object) -> Fraction:
    if isinstance(x, (float, np.floating)):
        return Fraction(float(x))
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    assert isinstance(x, Fraction)
    return x


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from([np.float16, np.float32, np.float64, "fraction", "int"]),
    st.integers(1, 3),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(0, 2**32 - 1),
)
def test_flip_matrix_is_exact(dtype: object, k: int, n: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    if dtype == "fraction":

        def rand_frac() -> Fraction:
            return Fraction(int(rng.integers(-9, 10)), int(rng.integers(1, 9)))

        V = np.array([[rand_frac() for _ in range(n)] for _ in range(k)])
        A = np.array([[rand_frac() for _ in range(m)] for _ in range(n)])
    elif dtype == "int":
        V = rng.integers(-(2**40), 2**40, (k, n))
        A = rng.integers(-(2**40), 2**40, (n, m))
    else:
        emax = {np.float16: 3, np.float32: 30, np.float64: 250}[dtype]  # type: ignore[index]
        V = (rng.standard_normal((k, n)) * 10.0 ** rng.integers(-emax, emax + 1, (k, n))).astype(dtype)
        A = (rng.standard_normal((n, m)) * 10.0 ** rng.integers(-emax, emax + 1, (n, m))).astype(dtype)
        V[rng.random((k, n)) < 0.2] = 0
    X = fs.flip_matrix(V, A)
    F = fs.flip_factors(V, A)
    assert X.shape == (n, k * m) == F.shape
    assert F.scale > 0
    for i in range(n):
        for j in range(k):
            for l in range(m):
                assert Fraction(int(X[i, j * m + l])) == _fr(V[j, i]) * _fr(A[i, l]) * F.scale
    q = linalg.FAST_PRIMES[3]
    rows = np.arange(n)
    assert np.array_equal(F.residues(q, rows), np.mod(X.astype(object), q).astype(np.int64))
    assert np.array_equal(F.exact(rows), X.astype(object))
    assert np.array_equal(F.zero_mask(), ~np.any(X.astype(object) != 0, axis=1))


def test_flip_matrix_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\] is nan; NaN and infinities are not allowed"):
        fs.flip_matrix(np.array([[1.0, np.nan]]), np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"V is 1x3 but A is 2x1"):
        fs.flip_matrix(np.ones((1, 3)), np.ones((2, 1)))


def test_network_with_planted_flip_and_zero_neuron() -> None:
    """A float network with n <= km: generic except a neuron pair that cancels and a null neuron."""
    rng = np.random.default_rng(11)
    k, n, m = 3, 20, 8
    V = rng.standard_normal((k, n)).astype(np.float32)
    A = rng.standard_normal((n, m)).astype(np.float32)
    V[:, 5] = 2 * V[:, 3]
    A[5] = -0.5 * A[3]  # v_5 a_5ᵀ = -v_3 a_3ᵀ exactly (powers of two)
    V[:, 12] = 0
    res = fs.network_flip_sets(V, A)
    assert res.complete and res.count == 3
    assert res.sets == [(12,), (3, 5), (3, 5, 12)]
    assert all(exact_zero(V, A, t) for t in res.sets)
    assert fs.find_flip_sets(fs.flip_matrix(V, A)).sets == res.sets


def test_generic_float_network_has_no_flips() -> None:
    rng = np.random.default_rng(5)
    V = rng.standard_normal((10, 200)).astype(np.float32)
    A = rng.standard_normal((200, 30)).astype(np.float32)
    res = fs.network_flip_sets(V, A)
    assert res.complete and res.count == 0 and res.rank == 200


@pytest.mark.parametrize("shape", [(1, 100, 1), (1, 200, 1)])
def test_wide_float_network_has_hidden_flips(shape: tuple[int, int, int]) -> None:
    """Random float32 networks with n much larger than the bits of k·m exact products."""
    k, n, m = shape
    rng = np.random.default_rng(2024 + n)
    V = rng.standard_normal((k, n)).astype(np.float32)
    A = rng.standard_normal((n, m)).astype(np.float32)
    res = fs.network_flip_sets(V, A, budget=600.0, max_sets=3)  # generous: the result is under test
    assert res.sets, res.undecided
    assert not res.complete and res.count is None
    assert res.count_lower_bound >= len(res.sets)
    assert res.count_estimate_log2 is not None and res.count_estimate_log2 > 20
    for t in res.sets:
        assert len(t) >= 2 and list(t) == sorted(set(t))
        assert exact_zero(V, A, t)
    assert "generalized birthday" in res.certificate
    assert "not enumerated" in (res.undecided or "")


def test_budget_is_respected_when_nothing_is_found() -> None:
    """A block far beyond the k-tree's reach: the search gives up at the budget."""
    rng = np.random.default_rng(1)
    X = rng.integers(-(2**62), 2**62, size=(200, 3)).astype(object) * 2**100
    X += rng.integers(1, 2**40, size=(200, 3))
    res = fs.find_flip_sets(X, budget=1.0)
    assert not res.complete and res.count is None and res.sets == []
    assert res.undecided and "not enumerated" in res.undecided


def test_public_api_is_exported_by_the_package() -> None:
    """The package re-exports its public API (fiber.py and width.py import it from relusym._fibre.flipsearch)."""
    public = {"FlipFactors", "FlipSearch", "find_flip_sets", "flip_factors", "flip_matrix", "is_flip_set"}
    assert set(fs.__all__) == public | {"network_flip_sets"}
    for name in fs.__all__:
        assert getattr(fs, name).__module__.startswith("relusym._fibre.flipsearch")
