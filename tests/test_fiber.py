"""The fibre: genericity, flips, rigidity, orbits, width, strata, dimension and sampling (spec §3, §5)."""

from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relusym import Network, Symmetry, equivalent, find_symmetry, flip, normal_form
from relusym._core.analysis import Analysis, KinkData
from relusym._core.classes import hyperplane_classes
from relusym._fibre.fiber import fiber, flip_sets, flips_certified_absent, stratum_dimension
from relusym._fibre.genericity import generic_conditions

from fibre_helpers import NAMES, net_from_dict, plain, rank_q
from oracles import oracle_m1_equal
from strategies import random_int_net, random_net_with_pair, small_networks

F = Fraction


# ---------------------------------------------------------------------------------------------------------
# spec §9: every column of the table


@pytest.mark.parametrize("name", NAMES)
def test_fiber_matches_table(spec, name):
    ex = spec["networks"][name]
    fb = fiber(net_from_dict(ex["network"]))
    assert fb.generic == ex["generic"]
    assert fb.rigid == ex["rigid"]
    assert fb.width == ex["width"]
    assert fb.dimension == ex["fibre_dimension"]
    assert fb.orbits == ex["orbits"]
    if ex["flip_sets"] is None:
        assert not fb.class_a and fb.flips is None
    else:
        assert fb.class_a and fb.flips_complete
        assert len(fb.flips) == fb.flip_count == ex["flip_sets"]
    d = json.loads(json.dumps(fb.to_dict(), allow_nan=False))
    for key in ("generic", "rigid", "width", "dimension", "orbits", "flips", "strata"):
        assert key in d
    assert d["flips"] == (None if fb.flips is None else [list(T) for T in fb.flips])
    assert fb.report().count("\n") >= 5


def test_generic_reasons_name_the_failing_condition(spec):
    def reason(name):
        return fiber(net_from_dict(spec["networks"][name]["network"])).generic_reason

    assert reason("E2") == "G-c fails: flipping neurons [0, 1] leaves the function unchanged"
    assert reason("E7").startswith("G-c fails: flipping neurons [0, 1, 2]")
    assert reason("E3").startswith("G-b fails: neurons 0 and 1 lie on the same hyperplane")
    assert reason("E10").startswith("G-a fails: neuron 0 has a = 0 (a constant neuron)")
    assert reason("E5").startswith("G-a fails: neuron 2 has v = 0")
    assert reason("E1") == "G-a, G-b and G-c hold"
    assert fiber(net_from_dict(spec["networks"]["E15"]["network"])).conditions == {
        "G-a": True,
        "G-b": True,
        "G-c": True,
    }


def test_rigid_reasons(spec):
    def fb(name):
        return fiber(net_from_dict(spec["networks"][name]["network"]))

    assert fb("E4").rigidity["R3"] is False
    assert fb("E8").rigidity["R3"] is False
    assert fb("E12").rigidity == {"R1": True, "R2": True, "R3": True, "R4": True, "R5": False}
    assert fb("E13").rigidity["R5"] is False
    assert fb("E3").rigidity == {"R1": True, "R2": True, "R3": True, "R4": True, "R5": True}
    assert fb("E11").rigid and not fb("E11").generic
    assert fb("E5").rigid_reason.startswith("R1 fails")


def test_e12_fibre_is_four_free_orbits(spec):
    """E12: the four cost-1 configurations of spec §9, each one free orbit; samples land only in them."""
    net = net_from_dict(spec["networks"]["E12"]["network"])
    reps = [
        Network([[1, 1, 3]], [[1], [-1], [1]], [0, 0, -1], [0]),
        Network([[4, -2, 3]], [[1], [-1], [-1]], [0, 0, 1], [-3]),
        Network([[2, 2, 1]], [[1], [1], [-1]], [0, -1, 1], [-1]),
        Network([[2, 4, -1]], [[-1], [1], [-1]], [0, -1, 1], [1]),
    ]
    for r in reps:
        assert normal_form(r) == normal_form(net)
        assert oracle_m1_equal(plain(r), plain(net))
    for r1, r2 in itertools.combinations(reps, 2):
        assert find_symmetry(r1, r2) is None
    fb = fiber(net)
    assert fb.orbits == 4 and fb.dimension == 3 and len(fb.strata) == 4 and all(s.orbit for s in fb.strata)
    rnd = random.Random(5)
    seen = set()
    for _ in range(40):
        s = fb.sample(rnd)
        hits = [i for i, r in enumerate(reps) if find_symmetry(r, s) is not None]
        assert len(hits) == 1
        seen.add(hits[0])
    assert seen == {0, 1, 2, 3}


def test_e13_strata(spec):
    """E13: its own free orbit (dimension 4) and four 5-dimensional strata with one cancelling pair."""
    fb = fiber(net_from_dict(spec["networks"]["E13"]["network"]))
    dims = sorted(s.dimension for s in fb.strata)
    assert dims == [4, 5, 5, 5, 5]
    own = [s for s in fb.strata if s.own]
    assert len(own) == 1 and own[0].dimension == 4 and own[0].orbit and own[0].P == (0, 1)
    assert all(s.t == 1 and not s.P for s in fb.strata if s.dimension == 5)
    assert fb.width == 4 and fb.dimension == 5 and fb.orbits is None


@pytest.mark.parametrize("name, width, dim", [("E8", 4, 8), ("E14", 1, 7), ("E9", 2, 4), ("E5", 1, 5)])
def test_width_and_dimension_sentences(spec, name, width, dim):
    fb = fiber(net_from_dict(spec["networks"][name]["network"]))
    assert (fb.width, fb.dimension) == (width, dim)


def test_e9_fibre_has_isolated_orbits(spec):
    """E9 (n = 3 > w = 2): a 4-dimensional stratum (one spare neuron) and two isolated free orbits of
    dimension 3, θ's own among them; the local dimension at θ is 3 (spec §9)."""
    fb = fiber(net_from_dict(spec["networks"]["E9"]["network"]))
    assert sorted(s.dimension for s in fb.strata) == [3, 3, 4]
    assert [s.orbit for s in fb.strata if s.dimension == 3] == [True, True]
    assert [s.dimension for s in fb.strata if s.own] == [3]


def test_e8_stratum_is_refactorization(spec):
    fb = fiber(net_from_dict(spec["networks"]["E8"]["network"]))
    assert [(s.S, s.P, s.t, s.dimension) for s in fb.strata] == [((), (), 2, 8)]
    other = Network([[1, -1, 0, 0], [1, -1, 1, -1]], [[1, 0], [-1, 0], [-1, 1], [1, -1]], [5, -5, 0, 0], [-5, -5])
    assert normal_form(other) == normal_form(fb.net)


# ---------------------------------------------------------------------------------------------------------
# flip sets


def _brute_flips(V, A):
    n, k, m = len(A), len(V), len(A[0])
    out = []
    for r in range(n + 1):
        for T in itertools.combinations(range(n), r):
            if all(sum((F(V[a][i]) * F(A[i][c]) for i in T), F(0)) == 0 for a in range(k) for c in range(m)):
                out.append(T)
    return sorted(out, key=lambda T: (len(T), T))


def test_flip_sets_against_all_subsets():
    rng = random.Random(11)
    checked = 0
    while checked < 40:
        m, k = rng.randint(1, 2), rng.randint(1, 2)
        n = rng.randint(1, 9)
        V, A, b, c = random_int_net(rng, m, n, k, -2, 2)
        net = Network(V, A, b, c, m=m)
        ga, _, gb, _ = generic_conditions(Analysis(net))
        if not (ga and gb):  # not class A (the degenerate fibres are checked in tests/test_strata.py)
            continue
        fb = fiber(net)
        assert fb.class_a
        checked += 1
        expected = _brute_flips(V, A)
        assert fb.flips_complete
        assert sorted(fb.flips, key=lambda T: (len(T), T)) == expected
        assert fb.orbits == len(expected) == fb.flip_count
        assert fb.generic == (len(expected) == 1) == fb.rigid
        for T in fb.flips:  # every reported flip set is verified by flipping
            assert normal_form(flip(net, T)) == normal_form(net)


def test_flip_blocks_multiply():
    """Two independent groups of neurons with flips (disjoint supports): |𝒯| is the product."""
    V = [[1, 1, 2, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 1, 1, 3]]
    A = [[1, 0], [-1, 0], [1, 0], [-2, 0], [-1, 0], [0, 1], [0, -1], [0, 5]]
    b = list(range(1, 9))
    net = Network(V, A, b, [0, 0])
    fs = flip_sets(net)
    assert fs.complete
    assert sorted(fs.sets) == sorted(_brute_flips(V, A))
    assert fs.count == len(_brute_flips(V, A))


def test_rank_certificate_and_planted_flip():
    rng = np.random.default_rng(3)
    m, n, k = 12, 96, 10
    A = rng.standard_normal((n, m)).astype(np.float32)
    V = rng.standard_normal((k, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    net = Network(V, A, b)
    assert flips_certified_absent(Analysis(net))
    fb = fiber(net)
    assert fb.generic and fb.rigid and fb.orbits == 1 and fb.flips == ((),)
    # plant a flip: neuron 1 := (−v_0, a_0, b_1) so v_0 a_0ᵀ + v_1 a_1ᵀ = 0
    V2, A2 = V.copy(), A.copy()
    V2[:, 1] = -V[:, 0]
    A2[1] = A[0]
    planted = Network(V2, A2, b)
    assert not flips_certified_absent(Analysis(planted))
    fb2 = fiber(planted)
    assert fb2.class_a and fb2.generic is False and fb2.flips_complete
    assert fb2.flips == ((), (0, 1)) and fb2.orbits == 2
    assert normal_form(flip(planted, [0, 1])) == normal_form(planted)


def test_many_independent_flips_are_counted_exactly():
    """14 planted flip pairs (neuron 2j+1 = (−v_2j, a_2j, b')): |𝒯| = 2^14 is known exactly although the
    listing stops at max_sets; orbits = |𝒯| (Theorem B(ii))."""
    rng = np.random.default_rng(8)
    pairs, m, k = 14, 6, 4
    V = rng.integers(1, 9, size=(k, 2 * pairs)) * rng.choice([-1, 1], size=(k, 2 * pairs))
    A = rng.integers(1, 9, size=(2 * pairs, m)) * rng.choice([-1, 1], size=(2 * pairs, m))
    V[:, 1::2] = -V[:, 0::2]
    A[1::2] = A[0::2]
    b = np.arange(2 * pairs) + 1
    net = Network(V, A, b)
    fb = fiber(net)
    assert fb.class_a and fb.generic is False
    assert fb.flip_count == fb.orbits == 2**pairs
    assert not fb.flips_complete and len(fb.flips) == 4096
    assert fb.flips[1] == (0, 1)
    for T in fb.flips[:50]:
        assert normal_form(flip(net, T)) == normal_form(net)


def test_certificate_matches_exact_rank():
    rng = random.Random(2)
    for _ in range(15):
        m, k = rng.randint(3, 6), rng.randint(3, 6)
        n = rng.randint(1, m * k)
        V, A, b, c = random_int_net(rng, m, n, k, -1, 1)
        net = Network(V, A, b, c)
        X = [[F(V[a][i]) * F(A[i][col]) for a in range(k) for col in range(m)] for i in range(n)]
        full = rank_q(X) == n
        if flips_certified_absent(Analysis(net)):
            assert full
        if not full:
            assert not flips_certified_absent(Analysis(net))


# ---------------------------------------------------------------------------------------------------------
# invariance and sampling


def _summary(fb):
    return (
        fb.generic,
        fb.rigid,
        fb.class_a,
        fb.width,
        fb.dimension,
        fb.orbits,
        fb.flip_count,
        sorted((s.dimension, s.t, len(s.P)) for s in fb.strata),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_networks(), st.randoms(use_true_random=False))
def test_fiber_is_invariant_under_h(net, rnd):
    h = Symmetry.random(net.n, rnd)
    fb, fb2 = fiber(net), fiber(h.act(net))
    assert _summary(fb) == _summary(fb2)
    if fb.flips is not None:
        moved = {tuple(sorted(h.permutation[i] for i in T)) for T in fb.flips}
        assert moved == set(fb2.flips)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_networks(), st.randoms(use_true_random=False))
def test_samples_are_in_the_fibre(net, rnd):
    fb = fiber(net)
    nf = normal_form(net)
    for _ in range(4):
        s = fb.sample(rnd)
        assert s.n == net.n
        assert normal_form(s) == nf
        if net.m == 1:
            assert oracle_m1_equal(plain(net), plain(s))
        v = equivalent(net, s)
        assert v
        if fb.class_a:  # Theorem B(ii): every point is h·flip_T(θ) with T a flip set
            assert v.witness is not None and tuple(v.flips) in set(fb.flips)


def test_samples_leave_the_orbit_when_the_fibre_is_bigger(spec):
    for name in ("E2", "E4", "E5", "E8", "E9", "E10", "E12", "E13", "E14", "E16"):
        net = net_from_dict(spec["networks"][name]["network"])
        fb = fiber(net)
        rnd = random.Random(1)
        outside = sum(find_symmetry(net, fb.sample(rnd)) is None for _ in range(12))
        assert outside > 0, name
    for name in ("E1", "E3", "E6", "E11", "E15"):  # rigid: the fibre is the orbit
        net = net_from_dict(spec["networks"][name]["network"])
        fb = fiber(net)
        rnd = random.Random(1)
        assert all(find_symmetry(net, fb.sample(rnd)) is not None for _ in range(6))


# ---------------------------------------------------------------------------------------------------------
# dimension: closed forms and a numerical local-dimension cross-check


def test_dimension_closed_forms():
    """§5.5: any k with w = N gives N + (n − N)δ; k = 1 gives the three closed forms."""
    rng = random.Random(4)
    for _ in range(150):
        net = random_net_with_pair(rng, 3, 2, 0, 0.6)
        m, n, k = net.shape
        fb = fiber(net)
        N, w, D, delta = fb.N, fb.width, n - fb.N, max(m + 1, k + 1)
        assert fb.dimension >= n - sum(
            1 for i in range(n) if not any(net.V[:, i]) and not any(net.A[i]) and net.b[i] == 0
        )
        if fb.strata_complete:  # the empty (degenerate) types left out of the list never carry the maximum
            assert max(s.dimension for s in fb.strata) == fb.dimension
        if w == N:
            assert fb.dimension == N + D * delta
        if k == 1:
            expected = {N: N + D * (m + 1), N + 1: N + D * (m + 1) - m, N + 2: N + D * (m + 1) - 2 * m + 1}[w]
            assert fb.dimension == expected


def test_stratum_dimension_formula_values():
    # E8: N = 0, t = 2, ϱ = 2, k = m = 2 → 8;  E13 stratum with one cancelling pair → 5
    assert stratum_dimension(0, 4, 2, 2, 0, 0, 2, 2) == 8
    assert stratum_dimension(2, 4, 1, 2, 0, 0, 1, 1) == 5
    assert stratum_dimension(2, 4, 1, 2, 2, 2, 0, 0) == 4
    with pytest.raises(ValueError, match="not an admissible stratum"):
        stratum_dimension(2, 4, 1, 2, 0, 0, 1, 0)


def _type_local_dimension(net: Network) -> int | None:
    """dim Ω − rank J of the equations that keep θ's combinatorial type and its normal form: numerically (SVD
    of a finite-difference Jacobian), independent of the stratum formula.  None for boundary points."""
    m, n, k = net.shape
    hc = hyperplane_classes(net)
    nf = normal_form(net)
    Vq = [[F(x) for x in row] for row in net.V.tolist()]
    Aq = [[F(x) for x in row] for row in net.A.tolist()]
    bq = [F(x) for x in net.b.tolist()]
    kinds = []
    for i in range(n):
        v0 = not any(Vq[a][i] for a in range(k))
        a0 = not any(Aq[i])
        if v0:
            kinds.append("v0")
        elif a0:
            if bq[i] == 0:
                return None
            kinds.append("a0")
        else:
            kinds.append("h")
    groups: dict[int, list[int]] = {}
    for i in range(n):
        if kinds[i] == "h":
            groups.setdefault(int(hc.label[i]), []).append(i)
    Mq = [[float(x) for x in row] for row in nf.M]
    eq = [float(x) for x in nf.e]
    sign = {
        i: (1.0 if float(Aq[i][next(c for c in range(m) if Aq[i][c])]) > 0 else -1.0)
        for i in range(n)
        if kinds[i] == "h"
    }
    piv = {i: next(c for c in range(m) if Aq[i][c]) for i in range(n) if kinds[i] == "h"}
    kink = {int(j): [float(x) for x in hc.kappa_exact(j)] for j in range(hc.N_all)}
    uhat = {int(j): [float(x) for x in hc.u_exact(j)] for j in range(hc.N_all)}

    def g(x):
        V = x[: k * n].reshape(k, n)
        A = x[k * n : k * n + n * m].reshape(n, m)
        b = x[k * n + n * m : k * n + n * m + n]
        c = x[k * n + n * m + n :]
        out = []
        W = np.concatenate([A, b[:, None]], axis=1)
        for i in range(n):
            if kinds[i] == "v0":
                out += list(V[:, i])
            elif kinds[i] == "a0":
                out += list(A[i])
        for j, members in groups.items():
            p = piv[members[0]]
            if any(kink[j]):
                u = uhat[j]
                for i in members:
                    out += [W[i, col] - W[i, p] * u[col] for col in range(m + 1) if col != p]
            else:
                i0 = members[0]
                for i in members[1:]:
                    out += [W[i, col] * W[i0, p] - W[i0, col] * W[i, p] for col in range(m + 1) if col != p]
            tot = sum(sign[i] * W[i, p] * V[:, i] for i in members)
            out += list(tot - np.array(kink[j]))
        Mx = np.zeros((k, m))
        ex = c.copy()
        for i in range(n):
            if kinds[i] == "h" and sign[i] < 0:
                Mx += np.outer(V[:, i], A[i])
                ex += b[i] * V[:, i]
            if kinds[i] == "a0" and b[i] > 0:
                ex += b[i] * V[:, i]
        out += list((Mx - np.array(Mq)).ravel()) + list(ex - np.array(eq))
        return np.array(out, dtype=float)

    x0 = np.concatenate(
        [
            np.array(net.V, dtype=float).ravel(),
            np.array(net.A, dtype=float).ravel(),
            np.array(net.b, dtype=float),
            np.array(net.c, dtype=float),
        ]
    )
    assert np.allclose(g(x0), 0)
    h = 1e-6
    J = np.array([(g(x0 + h * e) - g(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)]).T
    sv = np.linalg.svd(J, compute_uv=False) if J.size else np.zeros(0)
    rank = int((sv > 1e-6 * max(1.0, sv.max(initial=0.0))).sum())
    return x0.size - rank


def _predicted_type_dimension(net: Network) -> int:
    """The stratum dimension of spec §5.5 for θ's own type, with the component s = rank of the extra classes'
    negative kinks, plus what each spare neuron adds (null v = 0: m + 1; a = 0: k + 1; duplicate: k + 1;
    a same-orientation cancelling class of r neurons: m + r + k(r − 1))."""
    m, n, k = net.shape
    hc = hyperplane_classes(net)
    kd = KinkData.of(normal_form(net))
    order = {}
    for j in range(hc.N_all):
        if hc.kink_mask[j]:
            order[j] = kd.N and [u for u, _ in normal_form(net).K].index(hc.u_exact(j))
    members: dict[int, list[int]] = {}
    for i in range(n):
        if hc.label[i] >= 0:
            members.setdefault(int(hc.label[i]), []).append(i)
    S, P, extra_s, spare = [], [], [], 0
    Vq = [[F(x) for x in row] for row in net.V.tolist()]
    for i in range(n):
        if hc.label[i] < 0:
            spare += (m + 1) if not any(Vq[a][i] for a in range(k)) else (k + 1)
    for j, mem in members.items():
        neg = [i for i in mem if hc.lam[i] < 0]
        pos = [i for i in mem if hc.lam[i] > 0]
        if j in order:
            if neg and pos:
                P.append(order[j])
                spare += (len(mem) - 2) * (k + 1)
            else:
                if neg:
                    S.append(order[j])
                spare += (len(mem) - 1) * (k + 1)
        elif neg and pos:
            s = [sum((abs(F(hc.lam[i])) * Vq[a][i] for i in neg), F(0)) for a in range(k)]
            extra_s.append(s)
            spare += (len(mem) - 2) * (k + 1)
        else:
            r = len(mem)
            spare += m + r + k * (r - 1)
    t = len(extra_s)
    wP = rank_q([list(kd.alpha[u]) for u in P]) if P else 0
    rho = kd.rho(tuple(sorted(S)), tuple(sorted(P)))
    s = rank_q([[extra_s[j][a] for j in range(t)] for a in range(k)]) if t else 0
    mbar = m - wP
    core = kd.N + len(P) + 2 * t + k * (len(P) - wP) + t * wP + (s - rho) * (k - s) + s * t + mbar * (t - s)
    return core + spare


@pytest.mark.slow
def test_local_dimension_matches_stratum_formula():
    """Numerical cross-check of §5.5 at sampled points: the dimension of the set of parameters keeping the
    sample's combinatorial type and normal form equals the stratum formula (with the sample's component s),
    and never exceeds the global fibre dimension."""
    rng = random.Random(9)
    checked = 0
    for _ in range(80):
        net = random_net_with_pair(rng, 2, 2, 1, 0.6)
        fb = fiber(net)
        for _ in range(3):
            s = fb.sample(rng)
            local = _type_local_dimension(s)
            if local is None:
                continue
            assert local == _predicted_type_dimension(s), (s, local)
            assert local <= fb.dimension
            checked += 1
    assert checked >= 120


def test_local_dimension_of_examples(spec):
    """Spec §9 local dimensions at θ itself (where θ is a smooth point of its type): E9 3, E13 4, E1 2, E8
    8."""
    for name, local in (("E1", 2), ("E2", 2), ("E8", 8), ("E9", 3), ("E12", 3), ("E13", 4)):
        assert _type_local_dimension(net_from_dict(spec["networks"][name]["network"])) == local, name


# ---------------------------------------------------------------------------------------------------------
# floats and budgets


def test_float_1_1000_1_is_not_generic():
    """§5.3 note: a random float32 1-1000-1 network has exact flip sets; fiber finds verified ones."""
    rng = np.random.default_rng(0)
    n = 1000
    net = Network(
        rng.standard_normal((1, n)).astype(np.float32),
        rng.standard_normal((n, 1)).astype(np.float32),
        rng.standard_normal(n).astype(np.float32),
    )
    fb = fiber(net, budget=600.0)  # generous: the result, not the speed, is under test
    assert fb.class_a and fb.generic is False and fb.rigid is False
    assert fb.width == n and fb.dimension == n
    assert fb.generic_reason.startswith("G-c fails: flipping neurons")
    assert fb.flip_count_lower_bound >= 2 and len(fb.flips) >= 2
    T = next(T for T in fb.flips if T)
    assert normal_form(flip(net, T)) == normal_form(net)
    s = fb.sample(random.Random(0))
    assert normal_form(s) == normal_form(net)
    d = json.loads(json.dumps(fb.to_dict(), allow_nan=False))
    assert d["generic"] is False and d["flip_count_estimate_log2"] > 100
    assert "G-c fails" in fb.report()


def test_flip_sets_with_no_budget_on_a_wide_network_say_so():
    """The passes over the neurons of a wide network read the clock: with budget 0 nothing is searched, and the
    answer says why (deterministic: the deadline has passed before the first neuron)."""
    rng = np.random.default_rng(3)
    n = 20_000
    net = Network(
        rng.standard_normal((1, n)).astype(np.float32),
        rng.standard_normal((n, 1)).astype(np.float32),
        rng.standard_normal(n).astype(np.float32),
    )
    fs = flip_sets(net, budget=0.0)
    assert fs.sets == ((),) and not fs.complete and fs.count is None and fs.trivial is None
    assert fs.undecided is not None and "ran out" in fs.undecided and "20000 neurons" in fs.undecided


@pytest.mark.slow
def test_fiber_keeps_its_budget_on_a_million_neurons():
    """Issue: ``fiber --budget 5`` took 80 s at m = 1, n = 10^6 (the passes over the neurons did not read the
    clock).  Bounded by CPU time, not wall time, so a loaded machine cannot fail it: a child process limited to 40 s
    of CPU (RLIMIT_CPU) must finish the whole analysis with a 2 s budget (it used about 3 s here)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import resource, numpy as np, relusym
        resource.setrlimit(resource.RLIMIT_CPU, (40, 40))
        rng = np.random.default_rng(0)
        n = 10**6
        net = relusym.Network(rng.standard_normal((1, n)).astype(np.float32),
                              rng.standard_normal((n, 1)).astype(np.float32),
                              rng.standard_normal(n).astype(np.float32))
        fb = relusym.fiber(net, budget=2)
        print(fb.width, fb.generic)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "1000000"


def test_budget_reports_undecided_instead_of_hanging():
    """With no time at all, deciding w = N for 30 random 60-bit kinks (a subset sum) is impossible: fiber
    reports the width and the dimension undecided, with the bounds N ≤ w ≤ N + 1 and the reason, instead of
    guessing (budget 0: the outcome does not depend on the speed of the machine)."""
    rng = random.Random(1)
    n = 30
    V = [[rng.randint(2**58, 2**60) * rng.choice([-1, 1]) for _ in range(n)]]
    A = [[1]] * (n - 1) + [[-1]]
    b = [rng.randint(-(2**40), 2**40) for _ in range(n - 1)] + [0]
    b[0] = 0
    net = Network(V, A, b, m=1)
    fb = fiber(net, budget=0.0)
    assert fb.generic is False
    assert fb.width is None and fb.dimension is None
    assert fb.undecided is not None and "undecided" in fb.undecided
    assert fb.width_bounds == (fb.N, fb.N + 1) and fb.N == n - 1
    assert not fb.strata_complete
    assert "minimal width undecided" in fb.report() and "undecided:" in fb.report()
