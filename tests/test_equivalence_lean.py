"""``equivalent``'s orbit search keeps a network's A and b apart (no concatenated [A | b] copy): its hashes are
those of the whole rows, its matches are verified exactly part by part, and its verdicts and witnesses are
checked against the networks themselves (h·θ1 == θ2 exactly) and against exact evaluation at rational points."""

from __future__ import annotations

import tracemalloc
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relusym import Network, Symmetry, equivalent
from relusym._core.group import _neuron_arrays, _scale_keys, find_symmetry, stabilizer
from relusym._exact.hashing import float_key, row_hash

from oracles import eval_oracle, exact_lists


def _whole_row_hashes(net: Network) -> np.ndarray:
    """The old definition: row_hash of the float keys of [A | b] / |w_q| over the concatenated rows."""
    A, b, Vt = _neuron_arrays(net)
    W = np.concatenate([np.asarray(A, dtype=object), np.asarray(b, dtype=object).reshape(-1, 1)], axis=1)
    W = np.array([[Fraction(x) for x in row] for row in W.tolist()], dtype=object).reshape(W.shape)
    norm = []
    for row in W.tolist():
        nz = [x for x in row if x != 0]
        norm.append(abs(nz[0]) if nz else Fraction(1))
    return row_hash(float_key(W / np.array(norm, dtype=object)[:, None]))


def _net(rng: np.random.Generator, m: int, n: int, k: int, dtype: type) -> Network:
    A = rng.standard_normal((n, m)) * 2.0 ** rng.integers(-6, 7, size=(n, m))
    b = rng.standard_normal(n)
    A[rng.random((n, m)) < 0.3] = 0.0
    b[rng.random(n) < 0.3] = 0.0
    V = rng.standard_normal((k, n))
    V[:, rng.random(n) < 0.2] = 0.0
    return Network(*(x.astype(dtype) for x in (V, A, b, rng.standard_normal(k))))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 4),
    n=st.integers(0, 9),
    k=st.integers(1, 3),
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
)
def test_split_hashes_equal_whole_row_hashes_and_witnesses_are_exact(seed, m, n, k, dtype):
    rng = np.random.default_rng(seed)
    net = _net(rng, m, n, k, dtype)
    sk = _scale_keys(*_neuron_arrays(net))
    assert np.array_equal(sk.w_hash, _whole_row_hashes(net))
    h = Symmetry.random(n, int(rng.integers(0, 2**31)), dyadic=True, spread=3) if n else Symmetry.identity(0)
    moved = h.act(net)
    g = find_symmetry(net, moved)
    assert g is not None and g.act(net).same_parameters(moved)
    v = equivalent(net, moved)
    assert bool(v) and v.witness is not None and v.witness.act(net).same_parameters(moved)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), where=st.sampled_from(["a", "b"]))
def test_a_change_in_a_or_in_b_alone_is_seen(seed, n, where):
    """A copy that differs from h·θ in one entry of A or of b only: no witness, and a counterexample at which the
    two networks differ in exact arithmetic."""
    rng = np.random.default_rng(seed)
    net = _net(rng, 2, n, 1, np.float64)
    moved = Symmetry.random(n, seed % 1000, dyadic=True, spread=2).act(net)
    V, A, b, c = (np.array(x, dtype=np.float64) for x in (moved.V, moved.A, moved.b, moved.c))
    i = int(rng.integers(0, n))
    if where == "a":
        A[i, 0] = A[i, 0] + 0.5 if A[i, 0] != 0 else 0.75
    else:
        b[i] = b[i] + 0.5
    other = Network(V, A, b, c)
    g = find_symmetry(net, other)
    if g is not None:  # only where the change keeps the row proportional: a row (a, 0 | 0) stays a multiple
        assert g.act(net).same_parameters(other)
        assert np.count_nonzero(np.r_[A[i], b[i]]) == 1
    v = equivalent(net, other)
    if not v:  # the change can leave the function unchanged (a dead neuron): then "equal" with its reason
        x = v.counterexample.x
        assert eval_oracle(*exact_lists(net.V, net.A, net.b, net.c), x) != eval_oracle(*exact_lists(V, A, b, c), x)


def test_rational_networks_and_stabilizers_take_the_same_keys():
    net = Network(
        [[Fraction(1, 3), Fraction(1, 6), -1]], [[1, Fraction(2, 7)], [2, Fraction(4, 7)], [0, 0]], [1, 2, Fraction(5)]
    )
    sk = _scale_keys(*_neuron_arrays(net))
    assert np.array_equal(sk.w_hash, _whole_row_hashes(net))
    st_ = stabilizer(net)
    assert st_.blocks == ((0, 1),)
    for g in st_.generators:
        assert g.act(net).same_parameters(net)


def test_the_orbit_search_allocates_no_copy_of_the_weights():
    """A structural check (not a timing): the search's temporaries stay well below one copy of A."""
    rng = np.random.default_rng(5)
    net = _net(rng, 64, 2048, 4, np.float32)
    moved = Symmetry.random(net.n, 7, dyadic=True, spread=3).act(net)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        v = equivalent(net, moved)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert bool(v) and v.witness is not None and v.witness.act(net).same_parameters(moved)
    assert peak < np.asarray(net.A).nbytes
