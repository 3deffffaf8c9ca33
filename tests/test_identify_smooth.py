"""A smooth oracle is refused at once, before the search (relusym._identify.smooth); a ReLU network never is.

The oracle for "smooth" is the function itself (tanh, softplus, x ↦ x·sigmoid(1.702x), a quadratic form); the
oracle for "piecewise linear" is a ReLU network, including dense ones whose kinks lie closer than the test's
coarse steps along the line (4,096 neurons on one input, all output weights of one sign: smooth-looking at
steps above 2^-8)."""

from __future__ import annotations

import numpy as np
import pytest

import relusym
from relusym._identify.smooth import NotPiecewiseLinearError, smoothness
from relusym.errors import IdentificationError


def _net(seed: int, m: int, n: int, k: int, convex: bool = False):
    g = np.random.default_rng(seed)
    A = g.standard_normal((n, m))
    b = g.standard_normal(n) * 0.3
    V = g.standard_normal((k, n)) / np.sqrt(n)
    return A, b, np.abs(V) if convex else V


def _line(seed: int, m: int):
    g = np.random.default_rng(seed)
    d = g.standard_normal(m)
    return g.standard_normal(m) * 0.1, d / np.linalg.norm(d), g


SMOOTH = {
    "tanh": np.tanh,
    "softplus": lambda Z: np.logaddexp(Z, 0.0),
    "gelu": lambda Z: Z / (1.0 + np.exp(-1.702 * Z)),
    "square": np.square,
}


@pytest.mark.parametrize("act", sorted(SMOOTH))
def test_smooth_activations_are_refused_at_once_with_the_evidence(act):
    A, b, V = _net(1, 10, 16, 2)
    calls = []

    def oracle(X):
        calls.append(len(X))
        return SMOOTH[act](X @ A.T + b) @ V.T

    with pytest.raises(NotPiecewiseLinearError) as info:
        relusym.identify(oracle, 10, 2, rng=1)  # the default retries are not spent on it
    msg = str(info.value)
    assert "not piecewise linear" in msg and msg.count(". ") == 0  # one sentence
    assert isinstance(info.value, IdentificationError)  # callers catching the documented error still do
    assert sum(calls) < 2000  # refused from the first line's queries, not after a search


@pytest.mark.parametrize(
    "m,n,convex,dtype",
    [(10, 16, False, np.float64), (2, 64, True, np.float64), (1, 1024, True, np.float64), (1, 4096, True, np.float64),
     (2, 4096, True, np.float64), (784, 512, True, np.float64), (1, 4096, True, np.float32),
     (2, 4096, True, np.float32), (10, 16, False, np.float32)],
)  # fmt: skip
def test_relu_networks_are_never_refused(m, n, convex, dtype):
    A, b, V = (x.astype(dtype) for x in _net(n + m, m, n, 3, convex))
    floor = float(np.finfo(dtype).eps) if dtype == np.float32 else 2.0**-52

    def oracle(X):
        return np.maximum(X.astype(dtype) @ A.T + b, 0) @ V.T

    for seed in range(8):
        p, d, g = _line(seed, m)
        assert smoothness(oracle, p, d, 1.0, floor, g) is None


def test_a_relu_oracle_still_identifies_exactly_as_before():
    A, b, V = _net(3, 3, 6, 1)
    res = relusym.identify(lambda X: np.maximum(X @ A.T + b, 0) @ V.T, 3, 1, rng=2)
    assert res.network.n == 6
    X = np.random.default_rng(0).standard_normal((64, 3))
    assert np.allclose(res.network.evaluate(X), np.maximum(X @ A.T + b, 0) @ V.T, atol=1e-9)
