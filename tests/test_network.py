"""Network validation, exact reading of numbers, evaluation (spec §1.1, interfaces.md "Numbers")."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relusym import InvalidNetworkError, Network
from relusym._exact.numbers import fraction_str, to_fraction

from oracles import eval_oracle

F = Fraction


def test_numbers_are_read_exactly():
    assert to_fraction("0.1") == F(1, 10)
    assert to_fraction("-3/7") == F(-3, 7)
    assert to_fraction(" 2e-3 ") == F(1, 500)
    assert to_fraction(0.1) == F(3602879701896397, 36028797018963968)
    assert to_fraction(np.float32(0.1)) == F(13421773, 134217728)
    assert to_fraction(np.float16(0.1)) == F(np.float16(0.1).item())
    assert to_fraction(10**30) == F(10**30)
    assert fraction_str(F(-3, 7)) == "-3/7" and fraction_str(F(4)) == "4"


@pytest.mark.parametrize(
    "bad, match",
    [
        (float("nan"), "NaN"),
        (float("inf"), "NaN and infinities"),
        ("abc", "not a rational"),
        ("1/0", "zero denominator"),
        (True, "boolean"),
        (None, "not a number"),
        ("nan", "NaN"),
    ],
)
def test_bad_scalars(bad, match):
    with pytest.raises(InvalidNetworkError, match=match):
        to_fraction(bad, "V[0, 1]")


def test_validation_messages_name_the_argument_and_shape():
    with pytest.raises(InvalidNetworkError, match=r"V must be k×n with n = 2"):
        Network([[1, 2, 3]], [[1], [1]], [0, 0])
    with pytest.raises(InvalidNetworkError, match=r"b must have n = 2"):
        Network([[1, 2]], [[1], [1]], [0])
    with pytest.raises(InvalidNetworkError, match=r"c must have k = 1"):
        Network([[1, 2]], [[1], [1]], [0, 0], [0, 0])
    with pytest.raises(InvalidNetworkError, match=r"A\[1, 0\] is nan"):
        Network([[1, 2]], np.array([[1.0], [np.nan]]), [0, 0])
    with pytest.raises(InvalidNetworkError, match="ragged"):
        Network([[1, 2]], [[1, 2], [1]], [0, 0])
    with pytest.raises(InvalidNetworkError, match="m must be given"):
        Network([[]], [], [])
    with pytest.raises(InvalidNetworkError, match="m = 0"):
        Network([[1]], np.zeros((1, 0)), [0])
    with pytest.raises(InvalidNetworkError, match="k = 0"):
        Network(np.zeros((0, 1)), [[1]], [0])
    with pytest.raises(InvalidNetworkError, match="m = 3 was given"):
        Network([[1]], [[1, 2]], [0], m=3)
    with pytest.raises(InvalidNetworkError, match=r"V\[0, 1\] is 'x'"):
        Network([[1, "x"]], [[1], [1]], [0, 0])
    with pytest.raises(InvalidNetworkError, match="2-dimensional"):
        Network([1, 2], [[1], [1]], [0, 0])


def test_n_zero_is_an_affine_network():
    net = Network([[], []], [], [], [1, "1/2"], m=3)
    assert net.shape == (3, 0, 2)
    assert net.evaluate_exact([1, 2, 3]) == (F(1), F(1, 2))
    assert Network.from_dict(net.to_dict()).same_parameters(net)


def test_immutable_and_does_not_alias_user_arrays():
    A = np.array([[1.0], [2.0]])
    net = Network([[1.0, 1.0]], A, [0.0, 0.0])
    A[0, 0] = 5.0
    assert net.A[0, 0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        net.A[0, 0] = 3.0
    with pytest.raises(AttributeError):
        net.V = None  # type: ignore[misc]


def test_floats_stay_floats_and_exact_values_are_kept():
    net = Network(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.zeros(3, np.float32))
    assert net.is_float and net.A.dtype == np.float32 and net.c.dtype == np.float32
    ints = Network([[1, 2]], [[1], [-1]], [0, 1])
    assert ints.is_float  # small integers are stored exactly as float64
    big = Network([[10**20]], [[1]], [0])
    assert big.V[0, 0] == F(10**20) and not big.is_float


def test_exact_and_float_evaluation_agree_with_the_definition():
    V, A, b, c = [[1, F(-2, 3)], [0, 5]], [[1, 2], [F(-1, 2), 3]], [F(1, 3), -1], [F(1, 7), 0]
    net = Network(V, A, b, c)
    for x in ([0, 0], [F(1, 2), F(-1, 3)], [3, 1], [-2, 5]):
        assert net.evaluate_exact(x) == eval_oracle(V, A, b, c, x)
        assert np.allclose(
            net.evaluate(np.array([[float(t) for t in x]]))[0], [float(t) for t in eval_oracle(V, A, b, c, x)]
        )
    assert net([F(1, 2), F(-1, 3)]) == eval_oracle(V, A, b, c, [F(1, 2), F(-1, 3)])
    with pytest.raises(InvalidNetworkError, match="x must have m = 2"):
        net.evaluate_exact([1])


def test_dict_round_trip_reads_json_decimals_exactly():
    net = Network.from_dict({"V": [[0.1, "1/3"]], "A": [[1], [-1]], "b": [0, "1/2"]})
    assert net.V[0, 0] == F(1, 10)
    assert Network.from_dict(net.to_dict()).same_parameters(net)
    with pytest.raises(InvalidNetworkError, match="no 'A'"):
        Network.from_dict({"V": [[1]], "b": [0]})
    with pytest.raises(InvalidNetworkError, match="unknown network format"):
        Network.from_dict({"format": "other/2", "V": [[1]], "A": [[1]], "b": [0]})


@pytest.mark.parametrize(
    "dtype, spread", [(np.float16, 4), (np.float32, 3), (np.float32, 30), (np.float64, 1), (np.float64, 200)]
)
def test_exact_matvec_of_floats_against_fractions(dtype, spread):
    from relusym._exact.mantissas import exact_matvec_float

    rng = np.random.default_rng(int(spread) + np.dtype(dtype).itemsize)
    for _ in range(25):
        n, m = (int(v) for v in rng.integers(1, 20, size=2))
        M = (rng.standard_normal((n, m)) * np.exp(rng.uniform(-spread, spread, size=(n, m)))).astype(dtype)
        M[rng.random((n, m)) < 0.2] = 0
        X = [
            int(v) * 7 ** int(p)
            for v, p in zip(rng.integers(-(2**40), 2**40, size=m), rng.integers(0, 30, size=m), strict=True)
        ]
        S, e = exact_matvec_float(M, X)
        for i in range(n):
            exact = sum((F(float(M[i, j])) * X[j] for j in range(m)), F(0))
            assert exact == F(S[i]) * F(2) ** int(e[i])


def test_exact_evaluation_of_float_networks_matches_fractions():
    rng = np.random.default_rng(3)
    for dtype in (np.float16, np.float32, np.float64):
        net = Network(
            rng.standard_normal((2, 30)).astype(dtype),
            rng.standard_normal((30, 5)).astype(dtype),
            rng.standard_normal(30).astype(dtype),
            rng.standard_normal(2).astype(dtype),
        )
        x = [F(int(rng.integers(-50, 50)), int(rng.integers(1, 30))) for _ in range(5)]
        assert net.evaluate_exact(x) == net.to_fractions().evaluate_exact(x)
