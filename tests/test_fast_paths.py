"""The fast paths keep their certificates: counterexamples at sparse dyadic points verified by an independent
Fraction oracle, the exact sparse evaluation against the definition, the directly built minimal network
equivalent to the input and a function of ρ(θ) alone, NormalForm immutable, hashable and totally ordered."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym import Network, Symmetry, equivalent, normal_form, prune
from relusym._core.equivalence import sparse_evaluate
from relusym._core.network import NeuronType
from relusym._fibre.width import minimal_network

from oracles import eval_oracle
from strategies import float32_network


def lists(net: Network):
    return (
        [[Fraction(x) for x in row] for row in net.V.tolist()],
        [[Fraction(x) for x in row] for row in net.A.tolist()],
        [Fraction(x) for x in net.b.tolist()],
        [Fraction(x) for x in net.c.tolist()],
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["ulp", "noisy", "bias", "kink", "rational"]))
def test_counterexamples_are_verified_by_the_oracle(seed, how):
    rng = np.random.default_rng(seed)
    m, n, k = int(rng.integers(1, 7)), int(rng.integers(1, 40)), int(rng.integers(1, 4))
    net = float32_network(rng, m, n, k)
    V, A, b, c = (np.array(x, copy=True) for x in (net.V, net.A, net.b, net.c))
    i, j = int(rng.integers(n)), int(rng.integers(m))
    if how == "ulp":
        A[i, j] = np.nextafter(A[i, j], np.float32(np.inf))
        other = Network(V, A, b, c)
    elif how == "noisy":
        eps = 10.0 ** rng.uniform(-9, -3, size=A.shape)
        other = Network(V, (A * (1 + eps)).astype(np.float32), b, c)
    elif how == "bias":
        b[i] = np.nextafter(b[i], np.float32(-np.inf))
        other = Network(V, A, b, c)
    elif how == "kink":
        V[:, i] *= np.float32(1.5)
        other = Network(V, A, b, c)
    else:  # a rational network next to the float one: 30-digit denominators
        Vr, Ar, br, cr = lists(net)
        Ar[i][j] += Fraction(1, 10**30 + 7)
        other = Network(Vr, Ar, br, cr, m=m)
    v = equivalent(net, other)
    if not v:
        x = v.counterexample.x
        assert eval_oracle(*lists(net), x) != eval_oracle(*lists(other), x)
        assert v.counterexample.y1 == eval_oracle(*lists(net), x)
        assert v.counterexample.y2 == eval_oracle(*lists(other), x)
    else:  # e.g. the changed neuron is never active: the oracle agrees on a grid
        for t in range(-3, 4):
            x = [Fraction(t, 2)] * m
            assert eval_oracle(*lists(net), x) == eval_oracle(*lists(other), x)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_one_ulp_off_the_pivot_is_shown_on_the_fast_path(monkeypatch_module, seed):
    """A one-ulp change of a non-pivot weight a_ij moves û only in coordinate j: the two kinks coincide on
    {x_j = 0}, so the line through the crossing must move x_j.  The counterexample must come from the three
    dyadic points around the crossing, never from the general fallback, and be verified by the oracle."""
    rng = np.random.default_rng(seed)
    m, n, k = int(rng.integers(2, 40)), int(rng.integers(1, 60)), int(rng.integers(1, 4))
    net = float32_network(rng, m, n, k)
    A = np.array(net.A, copy=True)
    i, j = int(rng.integers(n)), int(rng.integers(1, m))  # column 0 is the pivot of a nonzero row
    A[i, j] = np.nextafter(A[i, j], np.float32(np.inf))
    other = Network(net.V, A, net.b, net.c)
    v = equivalent(net, other)
    if bool(v):  # the neuron carries no kink (v_i = 0 to float32): nothing to show
        assert not net.V[:, i].any()
        return
    x = v.counterexample.x
    assert eval_oracle(*lists(net), x) != eval_oracle(*lists(other), x)
    assert x[j] != 0


@pytest.fixture(scope="module")
def monkeypatch_module():
    """The general counterexample search made to fail, for the tests that must never reach it."""
    from relusym._core import equivalence as _equivalence

    mp = pytest.MonkeyPatch()

    def refuse(*args, **kwargs):
        raise AssertionError("reached the general counterexample search")

    mp.setattr(_equivalence, "_counterexample_general", refuse)
    yield mp
    mp.undo()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float16, np.float32, np.float64, object]))
def test_sparse_evaluation_is_exact(seed, dtype):
    rng = np.random.default_rng(seed)
    m, n, k = int(rng.integers(1, 6)), int(rng.integers(0, 12)), int(rng.integers(1, 3))
    arrays = [rng.standard_normal(s) for s in ((k, n), (n, m), (n,), (k,))]
    if dtype is object:
        net = Network(
            *[np.vectorize(lambda t: Fraction(t).limit_denominator(997), otypes=[object])(a) for a in arrays], m=m
        )
    else:
        net = Network(*[a.astype(dtype) for a in arrays], m=m)
    support = rng.choice(m, size=int(rng.integers(0, m + 1)), replace=False)
    x = {int(s): Fraction(int(rng.integers(-50, 50)), 1 << int(rng.integers(0, 40))) for s in support}
    dense = [x.get(i, Fraction(0)) for i in range(m)]
    assert sparse_evaluate(net, x) == eval_oracle(*lists(net), dense)


def planted(rng: np.random.Generator, m: int, n: int, k: int, scaled: bool = True) -> Network:
    """n classes; a fifth of them split into two neurons (the copy scaled by 4 when ``scaled``); dead neurons
    (and a constant neuron when ``scaled``)."""
    net = float32_network(rng, m, n, k)
    V, A, b = (np.array(x, copy=True) for x in (net.V, net.A, net.b))
    dup = rng.choice(n, size=max(1, n // 5), replace=False)
    V[:, dup] *= np.float32(0.5)
    s = np.float32(4 if scaled else 1)
    V = np.concatenate([V, V[:, dup] / s, rng.standard_normal((k, 3)).astype(np.float32)], axis=1)
    A = np.concatenate([A, A[dup] * s, np.zeros((3, m), dtype=np.float32)])
    b = np.concatenate([b, b[dup] * s, np.array([-1, 0, 2 if scaled else -2], dtype=np.float32)])
    return Network(V, A, b, net.c)


@pytest.mark.parametrize("seed", range(6))
def test_direct_minimal_network_is_equivalent_and_canonical(seed):
    rng = np.random.default_rng(seed)
    m, n, k = 6, 13 + seed, 3  # n ≤ k·m: the flip rows can be certified independent
    net = planted(rng, m, n, k)
    mn = minimal_network(net)
    small = mn.network
    assert small.n == mn.width == normal_form(net).N == n
    assert equivalent(net, small) and normal_form(small) == normal_form(net)
    assert mn.canonical
    wide = planted(rng, 2, 30, 1)  # n > k·m: flip sets may exist, so canonical is not claimed
    mw = minimal_network(wide)
    assert mw.width == 30 and not mw.canonical and mw.note and equivalent(wide, mw.network)
    # canonical: a function of ρ(θ) alone, so any symmetric copy prunes to the same parameters
    h = Symmetry.random(net.n, seed, dyadic=True, spread=3)
    assert prune(h.act(net), canonical=True).same_parameters(small)
    # θ's own float weights with keep_scales (single-neuron classes untouched, merged ones exact)
    plain = planted(rng, m, n, k, scaled=False)
    ks = minimal_network(plain, keep_scales=True).network
    assert ks.is_float and ks.A.dtype == np.float32 and ks.n == n and equivalent(plain, ks)
    assert {tuple(r) for r in ks.A.tolist()} <= {tuple(r) for r in plain.A.tolist()}
    ks2 = minimal_network(net, keep_scales=True).network  # merged scaled copies: exact, maybe not float32
    assert ks2.n == n and equivalent(net, ks2)


def test_normal_form_is_immutable_hashable_and_totally_ordered():
    rng = np.random.default_rng(1)
    nets = [float32_network(rng, 2, 3, 1) for _ in range(5)]
    nfs = [normal_form(x) for x in nets]
    with pytest.raises(AttributeError):
        nfs[0].K = ()
    with pytest.raises(AttributeError):
        del nfs[0].classes
    same = normal_form(Symmetry.random(3, 0, dyadic=True).act(nets[0]))
    assert same == nfs[0] and hash(same) == hash(nfs[0]) and len({same, nfs[0]}) == 1
    assert not (same < nfs[0]) and same <= nfs[0] and same >= nfs[0]
    order = sorted(nfs)
    keys = [(x.m, x.k, x.K, x.M, x.e) for x in order]
    assert keys == sorted(keys)  # the documented order: (m, k, K, M, e) in exact rationals
    for a in nfs:
        for b in nfs:
            assert (a < b) + (a == b) + (a > b) == 1
    assert NeuronType.HYPERPLANE == 2 and NeuronType(1) is NeuronType.CONSTANT


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float16, np.float32, np.float64, object]))
def test_class_hashes_from_the_symmetry_search_are_the_class_hashes(seed, dtype):
    # a "no" that goes on from the symmetry search to the normal forms derives the class hashes (of w / λ) from
    # the search's row hashes (of w / |λ|): the same hashes and classes as computed afresh, for negative λ,
    # zero entries, ties and opposite neurons
    from relusym._core.classes import hyperplane_classes
    from relusym._core.group import search_symmetry

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 40)), int(rng.integers(1, 6))
    A = rng.integers(-3, 4, size=(n, m)) * rng.choice([0.5, 1.0, 3.0, -2.0], size=(n, 1))
    A[rng.random((n, m)) < 0.3] = 0.0
    A[n // 2 :] = A[: n - n // 2] * rng.choice([-1.0, 2.0, -0.25], size=(n - n // 2, 1))
    b = rng.integers(-3, 4, size=n) * 1.0
    V = rng.integers(-2, 3, size=(2, n)) * 1.0
    if dtype is object:
        net = Network(*([[Fraction(x) / 7 for x in row] for row in X.tolist()] for X in (V, A)),
                      [Fraction(x) / 3 for x in b.tolist()], [0, 0], m=m)  # fmt: skip
    else:
        net = Network(V.astype(dtype), A.astype(dtype), b.astype(dtype), np.zeros(2, dtype), m=m)
    _, keys = search_symmetry(net, net)
    assert keys is not None
    fresh, derived = hyperplane_classes(net), hyperplane_classes(net, row_hashes=keys[0])
    assert np.array_equal(fresh.khash, derived.khash) and np.array_equal(fresh.label, derived.label)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from([1.0, -1.0, 0.5, 3.0, 2.0**-60, -(2.0**-60), 1e308, -1e308, 2.0**-1074, 0.0, -0.0, 7.25]),
            min_size=2,
            max_size=2,
        ),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.integers(0, 3), min_size=12, max_size=12),
)
def test_class_sums_are_exact(rows, labels):
    # the kinks are exact per-class sums of float products: summed in float64 with the error of each addition
    # checked (Knuth's TwoSum), in Fractions where one rounds or overflows; against Fraction sums
    from relusym._core.classes import _class_sums as _class_sums

    values = np.array(rows, dtype=np.float64)
    label = np.array(labels[: len(rows)], dtype=np.int64)
    N = int(label.max()) + 1
    sizes = np.bincount(label, minlength=N)
    got = _class_sums(values, label, N, sizes)
    want = [[sum((Fraction(values[i, r]) for i in range(len(rows)) if label[i] == c), Fraction(0)) for r in range(2)]
            for c in range(N)]  # fmt: skip
    assert [[Fraction(x) for x in row] for row in got.tolist()] == want


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float16, np.float32, np.float64]))
def test_class_keys_are_the_rounded_exact_hyperplanes(seed, dtype):
    # the float64 keys of û (computed a block of rows at a time) are the correctly rounded exact û = w / λ
    from relusym._core.classes import hyperplane_classes

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 300)), int(rng.integers(1, 5))
    A = rng.standard_normal((n, m)) * 2.0 ** rng.integers(-8, 9, size=(n, m))
    A[rng.random((n, m)) < 0.2] = 0.0
    A[np.all(A == 0, axis=1), 0] = -1.5
    net = Network(rng.standard_normal((2, n)).astype(dtype), A.astype(dtype), rng.standard_normal(n).astype(dtype),
                  np.zeros(2, dtype), m=m)  # fmt: skip
    h = hyperplane_classes(net)
    want = [[float(x) + 0.0 for x in h.u_exact(j)] for j in range(h.N_all)]
    assert h.keys.tolist() == want
