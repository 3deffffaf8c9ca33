"""Minimal width, configurations and the canonical minimal network (spec §5.1, §5.2, §6)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relusym import BudgetExceededError, Network, Symmetry, flip, normal_form
from relusym._core.analysis import Analysis, KinkData
from relusym._fibre.configurations import configurations, own_configuration
from relusym._fibre.width import (
    canonical_minimal_network,
    minimal_network,
    minimal_width,
    prune,
    width_search,
)

from fibre_helpers import NAMES, net_from_dict, plain, rank_q
from oracles import eval_oracle, oracle_m1_equal
from strategies import random_int_net, random_net_with_pair, small_networks

F = Fraction


# ---------------------------------------------------------------------------------------------------------
# the worked examples


@pytest.mark.parametrize("name", NAMES)
def test_width_of_examples(spec, name):
    ex = spec["networks"][name]
    net = net_from_dict(ex["network"])
    assert minimal_width(net) == ex["width"]
    small = prune(net)
    assert small.n == ex["width"]
    assert normal_form(small) == normal_form(net)
    if net.m == 1:
        assert oracle_m1_equal(plain(net), plain(small))


@pytest.mark.parametrize(
    "name, V, A, b, c",
    [
        ("E1", [[2, 1]], [[-1], [1]], [1, 0], [0]),
        ("E9", [[1, 2]], [[-1], [1]], [1, 0], [-1]),
        ("E13", [[3, 2, -1, 1]], [[0, 1], [1, 0], [1, 2], [-1, -2]], [0, 0, 0, 0], [0]),
    ],
)
def test_canonical_minimal_network_of_examples(spec, name, V, A, b, c):
    """E1, E9 and E13 CMNs exactly as printed in spec §9 (neurons in that order)."""
    small = prune(net_from_dict(spec["networks"][name]["network"]))
    assert small.same_parameters(Network(V, A, b, c))


def test_e12_cmn_is_one_of_its_four_orbits(spec):
    """E12's CMN is the third listed orbit representative {(2,1,0),(2,1,−1),(1,−1,1)}, c = −1, up to order."""
    small = prune(net_from_dict(spec["networks"]["E12"]["network"]))
    assert small.same_parameters(Network([[2, 1, 2]], [[1], [-1], [1]], [-1, 1, 0], [-1]))


def test_e8_affine_map_needs_four_neurons_but_each_component_two(spec):
    net = net_from_dict(spec["networks"]["E8"]["network"])
    assert minimal_width(net) == 4
    for r in range(2):
        comp = Network([net.V[r].tolist()], net.A, net.b, [net.c[r]])
        assert minimal_width(comp) == 2


def test_e9_minimal_network_has_no_spare_neurons(spec):
    """E9: all neurons active, no duplicates, yet width 2 < n = 3 (edge case 11)."""
    net = net_from_dict(spec["networks"]["E9"]["network"])
    mn = minimal_network(net)
    assert mn.width == 2 and mn.canonical
    assert not (np.asarray(mn.network.V == 0)).any()


# ---------------------------------------------------------------------------------------------------------
# an independent oracle for m = 1 (no normal form, no relusym linear algebra)


def _m1_width_oracle(V, A, b, c) -> int:
    """w(f) for m = 1 from exact evaluation only: f has breakpoints x_1 < … < x_N with slope jumps d_j ≠ 0
    (vectors), left slope s_L.  One neuron per breakpoint, right-facing (slope only to the right) or
    left-facing (slope −d_j only to the left), realizes f iff some set L of left-facing ones has −Σ_L d_j =
    s_L (then the offset is fixed by c).  Otherwise, if N ≥ 1, one breakpoint with both orientations absorbs
    any s_L (N + 1); with N = 0 the affine map s_L x + c needs 0 neurons (s_L = 0) or 2."""
    k = len(c)
    pts = sorted({-F(b[i]) / F(A[i][0]) for i in range(len(b)) if F(A[i][0]) != 0})
    probe = [pts[0] - 1] + pts + [pts[-1] + 1] if pts else [F(-1), F(0), F(1)]

    def f(x):
        return eval_oracle(V, A, b, c, [x])

    def slope(x0, x1):
        y0, y1 = f(x0), f(x1)
        return tuple((y1[r] - y0[r]) / (x1 - x0) for r in range(k))

    if not pts:
        s = slope(F(-1), F(1))
        return 0 if not any(s) else 2
    slopes = [slope(probe[0] - 1, probe[0])]
    for x0, x1 in itertools.pairwise(pts):
        slopes.append(slope(x0, x1))
    slopes.append(slope(probe[-1], probe[-1] + 1))
    jumps = [tuple(slopes[j + 1][r] - slopes[j][r] for r in range(k)) for j in range(len(pts))]
    jumps = [d for d in jumps if any(d)]
    N = len(jumps)
    sL = slopes[0]
    for mask in range(2**N):
        tot = [F(0)] * k
        for j in range(N):
            if (mask >> j) & 1:
                tot = [t - d for t, d in zip(tot, jumps[j], strict=True)]
        if tuple(tot) == sL:
            return N
    return N + 1 if N else 2


@pytest.mark.parametrize("k", [1, 2])
def test_width_against_m1_oracle(k):
    rng = random.Random(7 + k)
    for _ in range(120):
        n = rng.randint(0, 5)
        V, A, b, c = random_int_net(rng, 1, n, k, -2, 2)
        net = Network(V, A, b, c, m=1)
        w = minimal_width(net)
        assert w == _m1_width_oracle(V, A, b, c), (V, A, b, c)
        small = prune(net)
        assert small.n == w
        assert oracle_m1_equal((V, A, b, c), plain(small))


# ---------------------------------------------------------------------------------------------------------
# the configuration search against brute force


def _brute_configurations(kd: KinkData, max_cost: int):
    out = {}
    for labels in itertools.product(range(3), repeat=kd.N):  # 0 positive, 1 in S, 2 in P
        S = tuple(j for j in range(kd.N) if labels[j] == 1)
        P = tuple(j for j in range(kd.N) if labels[j] == 2)
        R = [list(kd.M[r]) for r in range(kd.k)]
        for j in S:
            for r in range(kd.k):
                for col in range(kd.m):
                    R[r][col] += kd.kappa[j][r] * kd.alpha[j][col]
        AP = [list(kd.alpha[u]) for u in P]
        wP = rank_q(AP) if AP else 0
        rho = rank_q(R + AP) - wP
        if len(P) + 2 * rho <= max_cost:
            out[(S, P)] = rho
    return out


def test_configurations_against_brute_force():
    rng = random.Random(3)
    for _ in range(60):
        net = random_net_with_pair(rng, 3, 3, 1, 0.5)  # opposite pairs and duplicates now and then
        kd = KinkData.of(net)
        for max_cost in range(0, 5):
            cs = configurations(kd, max_cost)
            assert cs.complete
            got = {(cfg.S, cfg.P): cfg.rho for cfg in cs.configurations}
            assert got == _brute_configurations(kd, max_cost)
            assert cs.count == len(got)


def test_own_configuration_is_admissible(spec):
    for name in NAMES:
        net = net_from_dict(spec["networks"][name]["network"])
        kd = KinkData.of(net)
        own = own_configuration(Analysis(net))
        assert own.rho <= own.extra
        assert kd.N + len(own.P) + 2 * own.rho <= net.n
        assert kd.rho(own.S, own.P) == own.rho


# ---------------------------------------------------------------------------------------------------------
# properties of prune


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_networks(), st.randoms(use_true_random=False))
def test_prune_properties(net, rnd):
    w = minimal_width(net)
    small = prune(net, canonical=True)
    assert small.n == w <= net.n
    assert normal_form(small) == normal_form(net)
    # idempotent, and a function of the normal form only (canonical)
    assert prune(small, canonical=True).same_parameters(small)
    h = Symmetry.random(net.n, rnd)
    assert prune(h.act(net), canonical=True).same_parameters(small)
    assert minimal_width(small) == w


def test_prune_of_flipped_network_is_the_same(spec):
    """CMN depends on the function only: E2 and its flip prune to the same network."""
    net = net_from_dict(spec["networks"]["E2"]["network"])
    assert prune(flip(net, [0, 1]), canonical=True).same_parameters(prune(net, canonical=True))


def test_prune_keeps_float_dtype_when_representable():
    net = Network(
        np.array([[1.0, 2.0, 0.0]], dtype=np.float32),
        np.array([[1.0], [-1.0], [3.0]], dtype=np.float32),
        np.array([0.0, 1.0, 2.0], dtype=np.float32),
        np.array([0.5], dtype=np.float32),
    )
    small = prune(net)
    assert small.n == 2
    assert small.V.dtype == np.float32 and small.A.dtype == np.float32
    assert normal_form(small) == normal_form(net)


def test_prune_widens_storage_only_where_the_dtype_cannot_hold_the_canonical_values():
    net = Network(
        np.array([[1.0]], dtype=np.float32),
        np.array([[3.0]], dtype=np.float32),
        np.array([1.0], dtype=np.float32),
    )
    small = prune(net, canonical=True)  # the row (3, 1) is already primitive: the same network, in float32
    assert small.A.dtype == np.float32 and small.same_parameters(net)
    # the row (2^-70, 2^70 | 0) becomes the primitive (1, 2^140 | 0), beyond float32's range: A widens to float64
    wide = Network(
        np.array([[1.0]], dtype=np.float32),
        np.array([[2.0**-70, 2.0**70]], dtype=np.float32),
        np.array([0.0], dtype=np.float32),
    )
    cw = prune(wide, canonical=True)
    assert cw.A.dtype == np.float64 and [F(x) for x in cw.A[0].tolist()] == [1, F(2) ** 140]
    for x in ((F(1), F(-1, 3)), (F(-5), F(2, 7)), (F(2) ** 100, F(-1, 2) ** 90)):
        assert cw.evaluate_exact(x) == wide.evaluate_exact(x)
    kept = prune(net)  # the default keeps the float weights: what `relusym prune` writes
    assert kept.is_float and kept.same_parameters(net)
    assert prune(net, keep_scales=True).same_parameters(kept)
    assert normal_form(kept) == normal_form(net)


def test_prune_zero_function_has_no_neurons():
    net = Network([[1, -1]], [[1], [1]], [0, 0], [3])
    small = prune(net)
    assert small.n == 0 and minimal_width(net) == 0
    assert normal_form(small) == normal_form(net)


# ---------------------------------------------------------------------------------------------------------
# budgets and large N


def test_large_class_a_width_is_immediate():
    rng = np.random.default_rng(0)
    net = Network(
        rng.standard_normal((1, 300)).astype(np.float32),
        rng.standard_normal((300, 1)).astype(np.float32),
        rng.standard_normal(300).astype(np.float32),
    )
    assert minimal_width(net, budget=600.0) == 300  # the certificate, not the speed (benchmarks time it)


def test_large_class_a_prune_fast_path_is_the_cmn():
    """For a large class-A network with certified trivial flips, prune normalizes and sorts θ; this is exactly
    the network of spec §6 built from KinkData for S = S_θ (the unique minimizer)."""
    rng = np.random.default_rng(5)
    m, n, k = 8, 70, 10
    net = Network(
        rng.standard_normal((k, n)).astype(np.float32),
        rng.standard_normal((n, m)).astype(np.float32),
        rng.standard_normal(n).astype(np.float32),
        rng.standard_normal(k).astype(np.float32),
    )
    mn = minimal_network(net)
    assert mn.canonical and mn.width == n
    kd = KinkData.of(net)
    own = own_configuration(Analysis(net))
    neurons, c = canonical_minimal_network(kd, own.configuration)
    ref = Network(
        [[v[r] for v, _, _ in neurons] for r in range(k)],
        [list(a) for _, a, _ in neurons],
        [bb for _, _, bb in neurons],
        list(c),
    )
    assert mn.network.same_parameters(ref)
    kept = prune(net, keep_scales=True)
    assert kept.is_float and kept.A.dtype == np.float32 and normal_form(kept) == normal_form(net)


def test_large_undecided_width_raises_budget_error():
    """Opposite pair plus 40 random classes with 60-bit kinks: w ∈ {N, N + 1} and deciding w = N is a subset
    sum that a zero budget cannot settle: minimal_width says so instead of guessing (budget 0, so the
    branch checked does not depend on the speed of the machine)."""
    rng = random.Random(1)
    n = 41
    V = [[rng.randint(2**58, 2**60) * rng.choice([-1, 1]) for _ in range(n)]]
    A = [[1]] * (n - 1) + [[-1]]
    b = [rng.randint(-(2**40), 2**40) for _ in range(n - 1)] + [0]
    b[0] = 0  # neuron 0 and the last one form an opposite pair on x = 0
    net = Network(V, A, b, m=1)
    ws = width_search(Analysis(net), budget=0.0)
    assert ws.width is None
    assert (ws.lower, ws.upper) == (ws.N, ws.N + 1) and ws.N == n - 1
    assert ws.undecided is not None and "subset-sum" in ws.undecided
    with pytest.raises(BudgetExceededError):
        minimal_width(net, budget=0.0)


def test_width_results_have_to_dict():
    """Every result object of the width search serializes to JSON-ready values."""
    import json

    e9 = Network([[1, 1, 1]], [[1], [-1], [1]], [0, 0, -1])
    ws = width_search(Analysis(e9))
    d = ws.to_dict()
    assert d["width"] == 2 and d["lower"] <= 2 <= d["upper"] and json.dumps(d)
    mn = minimal_network(e9)
    dm = mn.to_dict()
    assert dm["width"] == 2 and Network.from_dict(dm["network"]).same_parameters(mn.network) and json.dumps(dm)
