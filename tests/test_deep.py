"""Deep networks (two or more hidden layers) against independent exact oracles: the MLP value, the reductions,
the normal form under the per-layer group, find_symmetry with hidden flips, and equivalent's three verdicts."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relusym
from relusym import MLP, Network
from relusym.errors import InvalidNetworkError

from deep_oracles import (
    add_flip_pair,
    add_junk,
    agree_1d,
    agree_on_lines,
    float_exact,
    forward,
    layers_of,
    permute_scale,
    to_mlp,
)
from strategies import random_layers


def _check_verdict(v, a, b, *, rng: random.Random) -> None:
    """Every certificate applied, every counterexample re-evaluated, by the test's own oracle."""
    la, lb = layers_of(a), layers_of(b)
    if v.status == "different":
        ce = v.counterexample
        assert forward(la, ce.x) == ce.y1 and forward(lb, ce.x) == ce.y2 and ce.y1 != ce.y2
    elif v.status == "equal":
        cert = v.certificate
        # the reductions keep the function (oracle on lines) ...
        for net, red in ((a, cert.reduced1), (b, cert.reduced2)):
            assert agree_on_lines(layers_of(net), layers_of(red), net.m, rng, count=3)
        # ... and the certificate maps one reduction onto the other exactly
        if cert.method == "symmetry":
            assert cert.symmetry.flips_valid(cert.reduced1)
            assert cert.symmetry.apply(cert.reduced1).same_parameters(cert.reduced2)
        elif cert.method == "line":
            assert a.m == 1 and all(forward(la, [t]) == forward(lb, [t]) for t in cert.points)
        # the oracle agrees
        if a.m == 1:
            assert agree_1d(la, lb)
        else:
            assert agree_on_lines(la, lb, a.m, rng)
    else:
        assert v.status == "undecided"
        with pytest.raises(ValueError, match="undecided"):
            bool(v)


# ----------------------------------------------------------------------------------------------------------
# the value


def test_mlp_value_shapes_evaluation_and_conversions() -> None:
    net = MLP([[[1, -2], [0, 1], [3, 1]], [[1, 1, 0], [0, -1, 2]], [["1/2", 3]]], [[0, 1, -1], [2, 0], [5]])
    assert net.widths == (2, 3, 2, 1) and net.depth == 2 and net.num_parameters == 9 + 8 + 3
    x = (Fraction(3, 7), Fraction(-2))
    assert net(x) == forward(layers_of(net), x)
    X = np.array([[0.25, -1.5], [3.0, 2.0]])
    assert np.allclose(net.evaluate(X), [[float(v) for v in forward(layers_of(net), r)] for r in X.tolist()])
    with pytest.raises(AttributeError):
        net.weights = ()  # type: ignore[misc]
    shallow = Network([[1, 2]], [[1], [-1]], [0, 1])
    back = MLP.from_network(shallow)
    assert back.depth == 1 and back.to_network() == shallow
    with pytest.raises(InvalidNetworkError, match="2 hidden layers"):
        net.to_network()
    assert MLP.from_dict(net.to_dict()) == net


@pytest.mark.parametrize(
    ("weights", "biases", "match"),
    [
        ([], None, "at least one affine layer"),
        ([[[1, 2]], [[1, 1]]], None, r"weights\[1\] has shape \(1, 2\) but layer 1 has 1 outputs"),
        ([[[1]], [[1]]], [[0], [0, 1]], r"biases\[1\] must have 1 entries"),
        ([[[float("nan")]], [[1]]], None, "NaN"),
        ([[[1]]], [[0], [0]], "1 weight matrices but 2 bias vectors"),
    ],
)
def test_mlp_refuses_bad_shapes_in_one_sentence(weights, biases, match) -> None:
    with pytest.raises(InvalidNetworkError, match=match):
        MLP(weights, biases)


def test_float_arrays_stay_float_and_read_exactly() -> None:
    W1 = np.array([[0.1, -0.2], [0.3, 0.7]], dtype=np.float32)
    net = MLP([W1, np.ones((2, 2), np.float32), np.ones((1, 2), np.float32)])
    assert net.is_float and net.weights[0].dtype == np.float32 and not net.weights[0].flags.writeable
    x = (Fraction(1, 3), Fraction(5))
    assert net(x) == forward(layers_of(net), x)  # 0.1f is its binary value, not 1/10


# ----------------------------------------------------------------------------------------------------------
# reductions


def test_prune_removes_each_reduction_and_keeps_the_function() -> None:
    rng = random.Random(7)
    for seed in range(30):
        rng.seed(seed)
        base = random_layers(rng, [2, 3, 3, 1])
        big = add_junk(base, rng)
        a = to_mlp(big)
        p = relusym.prune(a)
        assert all(x <= y for x, y in zip(p.widths, a.widths, strict=True))
        assert sum(p.hidden_widths) < sum(a.hidden_widths)
        assert agree_on_lines(layers_of(a), layers_of(p), 2, rng)
        for _ in range(5):
            x = (Fraction(rng.randint(-20, 20), 3), Fraction(rng.randint(-20, 20), 7))
            assert forward(layers_of(a), x) == forward(layers_of(p), x)


def test_prune_of_a_float_network_keeps_float_layers_it_does_not_touch() -> None:
    rng = np.random.default_rng(1)
    Ws = [rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((6, 8)).astype(np.float32)]
    Ws.append(rng.standard_normal((2, 6)).astype(np.float32))
    net = MLP(Ws, [rng.standard_normal(8).astype(np.float32), rng.standard_normal(6).astype(np.float32), None])
    p = relusym.prune(net)
    assert p.widths == net.widths and all(w.dtype == np.float32 for w in p.weights)
    assert p.same_parameters(net)


def test_a_network_that_reduces_to_a_constant() -> None:
    # layer 2 is dead on the orthant, so the output is the constant 7
    net = MLP([[[1], [-1]], [[-1, -2]], [[4]]], [[0, 0], [-1], [7]])
    p = relusym.prune(net)
    assert p.hidden_widths == (0, 0)
    assert p([Fraction(123)]) == (Fraction(7),)
    const = MLP([[[0]], [[0]], [[1]]], [[0], [0], [7]])
    v = relusym.equivalent(net, const)
    assert v.status == "equal" and v.certificate.method == "constant"


# ----------------------------------------------------------------------------------------------------------
# the normal form


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([[2, 3, 3, 1], [1, 4, 2, 2], [3, 2, 3, 2, 1]]))
def test_normal_form_is_invariant_under_the_per_layer_group_and_the_reductions(seed: int, widths) -> None:
    rng = random.Random(seed)
    base = random_layers(rng, widths)
    moved = permute_scale(add_junk(base, rng), rng)
    a, b = to_mlp(base), to_mlp(moved)
    assert relusym.normal_form(a) == relusym.normal_form(b)
    assert relusym.normal_form(a).digest() == relusym.normal_form(b).digest()


def test_normal_form_separates_and_digest_is_pinned() -> None:
    a = MLP([[[1], [-1]], [[1, 1]], [[2]]], [[0, 0], [-1], [0]])
    b = MLP([[[1], [-1]], [[1, 1]], [[3]]], [[0, 0], [-1], [0]])
    nfa = relusym.normal_form(a)
    assert nfa != relusym.normal_form(b)
    # the canonical text of docs/math/deep.md, hashed here independently
    import hashlib

    text = "relusym.mlp-nf/1\n1 2 1 1\n-1 0\n1 0\n1 1 -1\n2 0\n"
    assert nfa.digest() == hashlib.sha256(text.encode()).hexdigest()
    assert nfa.to_dict()["hidden"] == [[["-1", "0"], ["1", "0"]], [["1", "1", "-1"]]]


def test_float_and_exact_copies_have_one_digest() -> None:
    rng = np.random.default_rng(3)
    Ws = [rng.standard_normal((5, 3)), rng.standard_normal((4, 5)), rng.standard_normal((2, 4))]
    bs = [rng.standard_normal(5), rng.standard_normal(4), rng.standard_normal(2)]
    f64 = MLP(Ws, bs)
    exact = MLP([[[Fraction(v) for v in r] for r in W.tolist()] for W in Ws], [[Fraction(v) for v in b] for b in bs])
    assert relusym.normal_form(f64).digest() == relusym.normal_form(exact).digest()


def test_a_one_hidden_layer_mlp_gets_the_shallow_normal_form() -> None:
    net = Network([[1, 2]], [[1], [-1]], [0, 1])
    assert relusym.normal_form(MLP.from_network(net)) == relusym.normal_form(net)
    v = relusym.equivalent(MLP.from_network(net), net)
    assert bool(v) and isinstance(v, relusym.Verdict)


# ----------------------------------------------------------------------------------------------------------
# symmetries and flips


def test_find_symmetry_recovers_planted_permutations_and_scales() -> None:
    rng = random.Random(11)
    base = random_layers(rng, [3, 4, 5, 2])
    moved = permute_scale(base, rng)
    a, b = to_mlp(base), to_mlp(moved)
    h = relusym.find_symmetry(a, b)
    assert h is not None and not h.has_flips
    assert h.apply(a).same_parameters(b)
    b2 = to_mlp(random_layers(random.Random(12), [3, 4, 5, 2]))
    assert relusym.find_symmetry(a, b2) is None


@pytest.mark.parametrize("ell", [0, 1])
def test_hidden_flips_layer_by_layer(ell: int) -> None:
    for seed in range(12):
        rng = random.Random(seed)
        base, flipped = add_flip_pair(random_layers(rng, [2, 3, 3, 1]), rng, ell)
        a, b = to_mlp(base), to_mlp(flipped)
        assert agree_on_lines(layers_of(a), layers_of(b), 2, rng)  # the flip keeps the function (oracle)
        v = relusym.equivalent(a, b)
        _check_verdict(v, a, b, rng=rng)
        assert v.status == "equal"
        if v.certificate.method == "symmetry" and v.certificate.symmetry.has_flips:
            assert any(mv.flips for mv in v.certificate.symmetry.layers)


def test_an_invalid_flip_is_not_accepted() -> None:
    # flipping one unit whose column and row do not cancel changes the linear part
    a = MLP([[[1], [2]], [[1, 1]], [[1]]], [[0, -1], [0], [0]])
    b = MLP([[[-1], [2]], [[1, 1]], [[1]]], [[0, -1], [0], [0]])
    v = relusym.equivalent(a, b)
    _check_verdict(v, a, b, rng=random.Random(0))
    assert v.status == "different"


# ----------------------------------------------------------------------------------------------------------
# equivalence: three verdicts, never wrong


def _one_entry_changed(layers, rng: random.Random):
    out = [([list(r) for r in W], list(b)) for W, b in layers]
    ell = rng.randrange(len(out))
    W, b = out[ell]
    if rng.random() < 0.3:
        i = rng.randrange(len(b))
        b[i] += Fraction(rng.choice((-1, 1)), rng.choice((1, 3, 1 << 20)))
    else:
        i, j = rng.randrange(len(W)), rng.randrange(len(W[0]))
        W[i][j] += Fraction(rng.choice((-1, 1)), rng.choice((1, 3, 1 << 20)))
    return out


@pytest.mark.parametrize("m", [1, 2, 3])
def test_random_small_pairs_never_wrong(m: int) -> None:
    rng = random.Random(100 + m)
    undecided = total = 0
    for trial in range(60):
        depth = rng.choice((2, 3))
        widths = [m] + [rng.randint(1, 6) for _ in range(depth)] + [rng.randint(1, 2)]
        base = random_layers(rng, widths, den=rng.choice((1, 4)))
        kind = trial % 3
        if kind == 0:
            other = permute_scale(add_junk(base, rng), rng)
        elif kind == 1:
            other = _one_entry_changed(base, rng)
        else:
            base, other = add_flip_pair(base, rng, rng.randrange(depth))
        a, b = to_mlp(base, floats=trial % 2 == 0 and float_exact(base)), to_mlp(other)
        # m = 1 is decided completely: a generous budget, so that a loaded machine cannot turn it "undecided"
        v = relusym.equivalent(a, b, budget=300 if m == 1 else 5)
        _check_verdict(v, a, b, rng=rng)
        if kind == 0:
            assert v.status == "equal"
        if m == 1:
            assert v.status != "undecided"
            assert (v.status == "equal") == agree_1d(layers_of(a), layers_of(b))
        undecided += v.status == "undecided"
        total += 1
    assert undecided <= total // 10


def test_one_ulp_and_far_kink_changes_are_found() -> None:
    rng = np.random.default_rng(5)
    Ws = [rng.standard_normal((16, 5)).astype(np.float32), rng.standard_normal((12, 16)).astype(np.float32)]
    Ws.append(rng.standard_normal((3, 12)).astype(np.float32))
    bs = [rng.standard_normal(16).astype(np.float32), rng.standard_normal(12).astype(np.float32), None]
    a = MLP(Ws, bs)
    for ell, (i, j) in ((0, (3, 2)), (1, (7, 4)), (2, (1, 5))):
        W2 = [w.copy() for w in Ws]
        W2[ell][i, j] = np.nextafter(W2[ell][i, j], np.float32(np.inf))
        b = MLP(W2, bs)
        v = relusym.equivalent(a, b)
        assert v.status == "different", (ell, v)
        _check_verdict(v, a, b, rng=random.Random(0))
    # a first-layer unit whose kink lies far out: only x far from the origin tells the networks apart
    b1 = [x.copy() if x is not None else None for x in bs]
    far = Ws[0].copy()
    far[0] = np.float32(0)
    far[0, 0] = np.float32(1)
    b1[0][0] = np.float32(-1e6)
    b = MLP([far, Ws[1], Ws[2]], b1)
    c = MLP([far, Ws[1], Ws[2]], [b1[0], b1[1], np.array([0, 0, 1e-3], np.float32)])
    v = relusym.equivalent(b, c)
    assert v.status == "different"
    _check_verdict(v, b, c, rng=random.Random(0))


def test_bool_of_an_undecided_verdict_raises() -> None:
    # h1 = σ(x1) ≥ h2 = σ(x1 − 1), so the unit σ(h2 − h1) of layer 2 never fires on the image of layer 1 (it
    # would on the orthant): changing its outgoing weight keeps the function, which no reduction on ℝ^m proves
    a = MLP([[[1, 0], [1, 0]], [[-1, 1], [1, 0]], [[1, 1]]], [[0, -1], [0, 0], [0]])
    b = MLP([[[1, 0], [1, 0]], [[-1, 1], [1, 0]], [[5, 1]]], [[0, -1], [0, 0], [0]])
    rng = random.Random(0)
    assert agree_on_lines(layers_of(a), layers_of(b), 2, rng)
    v = relusym.equivalent(a, b, budget=2)
    assert v.status == "undecided" and v.equivalent is None and "no per-layer symmetry" in v.reason
    with pytest.raises(ValueError, match="undecided"):
        bool(v)
    assert v.to_dict()["status"] == "undecided"


def test_deep_against_shallow_and_refusals() -> None:
    shallow = Network([[1, 1]], [[1], [-1]], [0, 0])  # |x|
    deep = MLP([[[1], [-1]], [[1, 1]], [[1]]], [[0, 0], [0], [0]])  # σ(σ(x) + σ(−x)) = |x|
    v = relusym.equivalent(deep, shallow)
    assert v.status == "equal"  # m = 1: decided by the breakpoints
    _check_verdict(v, deep, relusym.MLP.from_network(shallow), rng=random.Random(0))
    with pytest.raises(InvalidNetworkError, match="different shapes"):
        relusym.equivalent(deep, MLP([[[1, 1]], [[1]], [[1]]]))
    with pytest.raises(InvalidNetworkError, match="budget"):
        relusym.equivalent(deep, deep, budget=float("nan"))
    with pytest.raises(InvalidNetworkError, match="tolerance"):
        relusym.equivalent(deep, deep, atol=0.1)


def test_align_recovers_a_noisy_deep_copy() -> None:
    rng = np.random.default_rng(21)
    w = [6, 20, 15, 3]
    Ws = [rng.standard_normal((w[i + 1], w[i])) for i in range(3)]
    bs = [rng.standard_normal(w[i + 1]) for i in range(3)]
    W2, b2 = [x.copy() for x in Ws], [x.copy() for x in bs]
    perms, scales = [], []
    for ell in range(2):
        n = w[ell + 1]
        perm, d = rng.permutation(n), 2.0 ** rng.integers(-2, 3, n)
        W2[ell] = (W2[ell] * d[:, None])[perm]
        b2[ell] = (b2[ell] * d)[perm]
        W2[ell + 1] = (W2[ell + 1] / d[None, :])[:, perm]
        perms.append(np.argsort(perm))
        scales.append(d)
    noisy = MLP(
        [x + 1e-7 * rng.standard_normal(x.shape) for x in W2], [x + 1e-7 * rng.standard_normal(x.shape) for x in b2]
    )
    al = relusym.align(MLP(Ws, bs), noisy)
    assert al.matched_fraction == 1.0
    for ell in range(2):
        assert np.array_equal(al.permutation(ell + 1), perms[ell])
        assert np.allclose(al.scales(ell + 1), scales[ell], rtol=1e-5)
    with pytest.raises(InvalidNetworkError, match="same widths"):
        relusym.align(MLP(Ws, bs), MLP(Ws[:1] + [np.ones((3, 20))], bs[:1] + [np.zeros(3)]))


def test_every_entry_point_takes_a_one_hidden_layer_mlp_and_refuses_deep_ones_where_it_must() -> None:
    shallow = MLP([[[1], [-1], [1]], [[1, 1, 1]]], [[0, 0, -1], [0]])
    net = shallow.to_network()
    assert relusym.minimal_width(shallow) == relusym.minimal_width(net) == 2
    assert relusym.fiber(shallow).width == 2
    assert relusym.stabilizer(shallow).order == relusym.stabilizer(net).order
    assert isinstance(relusym.prune(shallow), MLP) and relusym.prune(shallow).hidden_widths == (2,)
    deep = MLP([[[1], [-1]], [[1, 1]], [[1]]])
    for fn in (relusym.fiber, relusym.minimal_width, relusym.stabilizer):
        with pytest.raises(InvalidNetworkError, match="one hidden layer; this MLP has 2"):
            fn(deep)
