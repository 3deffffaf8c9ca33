"""The digest's definition for the zoo's batched digests: ``reference_digest`` (scheme relusym.nf/2, from
Fractions) of the exact normal form, for one network and for every network of a stack; and the stacks the
numpy path's tests (tests/test_zoo_digest.py) and the compiled kernel's (tests/test_zoo_jit.py) share."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

import relusym
from relusym import Network, normal_form
from relusym._core.digest import reference_digest


def expected_digest(net: Network) -> str:
    """The definition from the exact normal form (what ``normal_form(net).digest()`` returns under relusym.nf/2)."""
    nf = normal_form(net)
    return reference_digest(nf.m, nf.k, nf.K, nf.M, nf.e)


def stack_definition(V: Any, A: Any, b: Any, c: Any) -> list[str | None]:
    """``expected_digest`` of every network of the stack (V[i], A[i], b[i], c[i]); None where ``Network`` refuses it."""
    out: list[str | None] = []
    for i in range(A.shape[0]):
        try:
            out.append(expected_digest(Network(V[i], A[i], b[i], c[i])))
        except relusym.InvalidNetworkError:
            out.append(None)
    return out


def structured_stack(
    rng: np.random.Generator, B: int, m: int, n: int, k: int, dtype: Any, spread: int
) -> tuple[np.ndarray, ...]:
    """B networks m-n-k of ``dtype`` with exponents spread over ±spread and, neuron by neuron, ties (a scaled
    copy of an earlier neuron), opposite pairs, cancelling kinks, hidden-flip pairs (v_j a_j + v_i a_i = 0),
    dead and constant neurons, zero entries; every fourth network is a permuted copy of another, each neuron
    rescaled by a power of two (the same function unless rounding to ``dtype`` loses bits)."""
    A = rng.standard_normal((B, n, m)) * 2.0 ** rng.integers(-spread, spread + 1, size=(B, n, m))
    b = rng.standard_normal((B, n)) * 2.0 ** rng.integers(-spread, spread + 1, size=(B, n))
    V = rng.standard_normal((B, k, n)) * 2.0 ** rng.integers(-(spread // 2), spread // 2 + 1, size=(B, k, n))
    c = rng.standard_normal((B, k))
    A[rng.random((B, n, m)) < 0.15] = 0.0
    b[rng.random((B, n)) < 0.1] = 0.0
    V[rng.random((B, k, n)) < 0.1] = 0.0
    if dtype != np.float64:  # the structure below must be exact in dtype
        A, b, V, c = (x.astype(dtype).astype(np.float64) for x in (A, b, V, c))
    kinds = ["none", "tie", "opposite", "cancel", "flip", "dead", "constant", "null"]
    for t in range(B):
        for i in range(1, n):
            how = kinds[int(rng.integers(0, len(kinds)))]
            j = int(rng.integers(0, i))
            s = 2.0 ** int(rng.integers(-3, 4))
            if how == "tie":
                A[t, i], b[t, i] = A[t, j] * s, b[t, j] * s
            elif how == "opposite":
                A[t, i], b[t, i] = -A[t, j] * s, -b[t, j] * s
            elif how == "cancel":  # the same hyperplane, the opposite kink: the class's κ sums to 0
                A[t, i], b[t, i], V[t, :, i] = A[t, j] * s, b[t, j] * s, -V[t, :, j] / s
            elif how == "flip":  # v_i a_i = −v_j a_j on the opposite orientation
                A[t, i], b[t, i], V[t, :, i] = -A[t, j] * s, -b[t, j] * s, -V[t, :, j] / s
            elif how == "dead":
                V[t, :, i] = 0.0
            elif how == "constant":
                A[t, i] = 0.0
            elif how == "null":
                A[t, i], b[t, i] = 0.0, -abs(b[t, i])
    for t in range(3, B, 4):  # a copy of network t−3: neurons permuted, each rescaled by a power of two
        perm = rng.permutation(n)
        sc = 2.0 ** rng.integers(-4, 5, size=n)
        A[t], b[t], V[t], c[t] = A[t - 3][perm] * sc[:, None], b[t - 3][perm] * sc, V[t - 3][:, perm] / sc, c[t - 3]
    with np.errstate(over="ignore"):
        return tuple(x.astype(dtype) for x in (V, A, b, c))


def dense_stack(
    rng: np.random.Generator, B: int, m: int, n: int, k: int, spread: int, ints: bool = True
) -> tuple[np.ndarray, ...]:
    """B random float32 networks whose entries have exponents spread over ±spread, every tenth network's entries
    small integers times one power of two (row gcds above 1, common powers of two), zeros in b and in a beyond its
    first entry and in V (no neuron dead)."""
    A = rng.standard_normal((B, n, m)) * 2.0 ** rng.integers(-spread, spread + 1, size=(B, n, m))
    b = rng.standard_normal((B, n)) * 2.0 ** rng.integers(-spread, spread + 1, size=(B, n))
    V = rng.standard_normal((B, k, n)) * 2.0 ** rng.integers(-spread, spread + 1, size=(B, k, n))
    c = rng.standard_normal((B, k))
    for t in range(0, B if ints else 0, 10):
        g = 2.0 ** int(rng.integers(-20, 20))
        A[t] = rng.choice([3, 9, 15, -6, 12, 45, -30, 27], size=(n, m)) * g
        b[t] = rng.choice([0, 3, -9, 6], size=n) * g
    if m > 1:
        A[:, :, 1:][rng.random((B, n, m - 1)) < 0.1] = 0.0
    b[rng.random((B, n)) < 0.1] = 0.0
    V[rng.random((B, k, n)) < 0.1] = 0.0
    V[:, 0, :][(V == 0).all(axis=1)] = 1.5
    return tuple(x.astype(np.float32) for x in (V, A, b, c))


# the hypothesis arguments of a structured stack (``@given(**STRUCTURED)``) and the stack they stand for
STRUCTURED = {
    "seed": st.integers(0, 2**32 - 1),
    "m": st.integers(1, 4),
    "n": st.integers(0, 8),
    "k": st.integers(1, 3),
    "dtype": st.sampled_from([np.float16, np.float32, np.float64]),
    "wide": st.booleans(),
}


def structured_case(seed: int, m: int, n: int, k: int, dtype: Any, wide: bool) -> tuple[np.ndarray, ...]:
    """Eight networks of :func:`structured_stack`, exponents spread per dtype (wider when ``wide``)."""
    spread = {np.float16: 5, np.float32: 50 if wide else 8, np.float64: 110 if wide else 20}[dtype]
    return structured_stack(np.random.default_rng(seed), 8, m, n, k, dtype, spread)
