"""Strata of degenerate fibres (docs/math/strata.md): every type (S, P, t) of a fibre point is listed, each with
a witness and its dimension, against oracles written in the tests: a brute-force enumeration of realization
types over small rational hidden layers and the exact rank of the tangent space of the realization equations
(tests/oracles.py, no relusym code)."""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relusym import Network, equivalent, fiber, normal_form
from relusym._fibre.flips import FlipSets
from relusym.census import brute_force_types, classify

from fibre_helpers import NAMES, net_from_dict, plain
from oracles import brute_types, nf_data, oracle_m1_equal, point_type_q, tangent_dimension_q
from strategies import planted_networks

F = Fraction

E5 = Network([[2, 1, 0]], [[1], [2], [0]], [1, 2, 0])  # 4σ(x + 1) with an inactive third neuron
E5_POINT = Network([[4, 1, F(-1, 2)]], [[1], [-1], [-2]], [1, -1, -2])  # the point of the issue
SIGMA_X1 = Network([[1, 0, 0, 0]], [[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]], [0, 0, 0, 0])  # σ(x₁), Ω(3,4,1)
ZERO_143 = Network([[0] * 4] * 3, [[0]] * 4, [0] * 4, m=1)  # f = 0 in Ω(1,4,3)


def _classes(net: Network) -> list[tuple[Fraction, ...]]:
    return sorted(nf_data(*plain(net))[0])


def _check_strata(net: Network, fb=None, *, samples: int = 0, rnd: random.Random | None = None) -> dict:
    """The checks every fibre must pass, with the oracles: complete; the listed types are the brute-force
    types; every witness realizes f (oracle NF) with its type, and its exact tangent dimension is the
    stratum's; the top dimension is the global one; θ's own type is marked.  Returns {type: dimension}."""
    fb = fb if fb is not None else fiber(net)
    classes = _classes(net)
    target = nf_data(*plain(net))
    assert fb.strata_complete, fb.undecided
    listed = {s.key: s.dimension for s in fb.strata}
    assert len(listed) == len(fb.strata) == fb.strata_count
    assert set(listed) == brute_types(*plain(net))
    for s in fb.strata:
        w = s.witness
        assert w is not None and w.shape == net.shape
        assert nf_data(*plain(w)) == target
        assert point_type_q(*plain(w), classes) == s.key
        if not fb.class_a:
            assert s.tangent_checked and tangent_dimension_q(*plain(w)) == s.dimension, s
    assert max(listed.values()) == fb.dimension
    assert [s.key for s in fb.strata if s.own] == [point_type_q(*plain(net), classes)]
    rnd = rnd or random.Random(0)
    for _ in range(samples):
        p = fb.sample(rnd)
        assert nf_data(*plain(p)) == target
        typ = point_type_q(*plain(p), classes)
        assert typ in listed
        if not fb.class_a:  # a random point of a piece of its stratum: never above the stratum's dimension
            assert tangent_dimension_q(*plain(p)) <= listed[typ]
    return listed


# ---------------------------------------------------------------------------------------------------------
# the three networks of the issue


def test_e5_point_with_both_orientations_is_in_a_listed_stratum():
    """E5's fibre contains (4,1,1), (1,−1,−1), (−1/2,−2,−2): class x = −1 carried by a positive neuron and two
    negative ones whose kinks (and linear parts) cancel: type (∅, {0}, 0), of dimension 4 (the tangent rank)."""
    assert equivalent(E5, E5_POINT)
    assert oracle_m1_equal(plain(E5), plain(E5_POINT))
    assert point_type_q(*plain(E5_POINT), _classes(E5)) == ((), (0,), 0)
    listed = _check_strata(E5, samples=30)
    assert listed[((), (0,), 0)] == tangent_dimension_q(*plain(E5_POINT)) == 4
    fb = fiber(E5_POINT)
    own = [s for s in fb.strata if s.own]
    assert len(own) == 1 and own[0].key == ((), (0,), 0) and own[0].pinned and not own[0].orbit
    assert {s.key: s.dimension for s in fb.strata} == listed


def test_sigma_x1_in_omega_341():
    listed = _check_strata(SIGMA_X1, samples=30)
    assert ((), (0,), 0) in listed
    assert listed[((), (0,), 1)] == 6  # not 7: the extra class's negative kink cannot vanish with 2 neurons


def test_zero_in_omega_143():
    listed = _check_strata(ZERO_143, samples=30)
    assert ((), (), 1) in listed  # one class, two positive and two negative neurons, each side cancelling
    assert listed[((), (), 2)] == 9  # not 10
    assert listed[((), (), 0)] == fiber(ZERO_143).dimension == 16


# ---------------------------------------------------------------------------------------------------------
# E1–E16


@pytest.mark.parametrize("name", NAMES)
def test_spec_example_strata(spec, name):
    net = net_from_dict(spec["networks"][name]["network"])
    fb = fiber(net)
    listed = _check_strata(net, fb, samples=12, rnd=random.Random(name))
    assert fb.dimension == spec["networks"][name]["fibre_dimension"]
    assert len(listed) >= 1


@pytest.mark.parametrize("net", [E5, SIGMA_X1, ZERO_143], ids=["E5", "sigma", "zero"])
def test_sample_reaches_every_stratum(net):
    fb = fiber(net)
    classes = _classes(net)
    rnd = random.Random(7)
    seen = {point_type_q(*plain(fb.sample(rnd)), classes) for _ in range(40 * len(fb.strata))}
    assert seen == {s.key for s in fb.strata}


def test_spec_examples_samples_reach_every_stratum(spec):
    for name in NAMES:
        net = net_from_dict(spec["networks"][name]["network"])
        fb = fiber(net)
        classes = _classes(net)
        rnd = random.Random(3)
        seen = {point_type_q(*plain(fb.sample(rnd)), classes) for _ in range(30 * len(fb.strata))}
        assert seen == {s.key for s in fb.strata}, name


# ---------------------------------------------------------------------------------------------------------
# a property over random networks with planted degeneracies


def _planted_property(net: Network, rnd: random.Random) -> None:
    fb = fiber(net)
    _check_strata(net, fb, samples=6, rnd=rnd)
    # fiber(p) marks p's own stratum, for p anywhere in the fibre
    p = fb.sample(rnd)
    fp = fiber(p)
    own = [s.key for s in fp.strata if s.own]
    assert own == [point_type_q(*plain(p), _classes(net))]
    assert {s.key for s in fp.strata} == {s.key for s in fb.strata}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(planted_networks(), st.randoms(use_true_random=False))
def test_planted_degeneracies(net, rnd):
    _planted_property(net, rnd)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(planted_networks(max_n=5), st.randoms(use_true_random=False))
def test_planted_degeneracies_many(net, rnd):
    _planted_property(net, rnd)


def test_census_brute_force_agrees_with_the_test_oracle():
    """The census's brute force (relusym.census) and the tests' (tests/oracles.py) are separate codes."""
    for net in (E5, SIGMA_X1, ZERO_143, Network([[1, 1, 2]], [[1, 0], [-1, 0], [1, 1]], [0, 0, 1], [1])):
        assert brute_force_types(net) == brute_types(*plain(net))


# ---------------------------------------------------------------------------------------------------------
# the Fiber as a value


def test_fiber_is_a_frozen_hashable_value(spec):
    net = net_from_dict(spec["networks"]["E13"]["network"])
    fb1, fb2 = fiber(net), fiber(net)
    assert fb1 == fb2 and hash(fb1) == hash(fb2) and len({fb1, fb2}) == 1
    assert fb1 != fiber(net_from_dict(spec["networks"]["E9"]["network"]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fb1.width = 3  # type: ignore[misc]
    assert json.dumps(fb1.to_dict()) == json.dumps(fb2.to_dict())
    assert "elapsed_seconds" not in fb1.to_dict() and "elapsed_seconds" in fb1.to_dict(timing=True)
    e2 = fiber(net_from_dict(spec["networks"]["E2"]["network"]))
    assert isinstance(e2.flip_sets, FlipSets) and e2.flips == e2.flip_sets.sets and e2.class_a
    assert e2.flip_count == e2.flip_sets.count == 2 and fb1.flip_sets is None and not fb1.class_a
    assert e2.to_dict()["flip_sets"] == e2.flip_sets.to_dict()
    names = {f.name for f in dataclasses.fields(fb1)}
    assert not names & {"flips", "flips_complete", "flip_count", "flip_count_lower_bound", "class_a"}


def test_fiber_json_is_byte_identical(tmp_path, spec):
    path = tmp_path / "e5.json"
    path.write_text(json.dumps(spec["networks"]["E5"]["network"]))
    cmd = [sys.executable, "-m", "relusym", "fiber", str(path), "--json"]
    out1 = subprocess.run(cmd, capture_output=True, check=True).stdout
    out2 = subprocess.run(cmd, capture_output=True, check=True).stdout
    assert out1 == out2 and json.loads(out1)["strata_complete"] is True
    for key in ("generic", "rigid", "width", "dimension", "orbits", "flips"):
        assert key in json.loads(out1)


@pytest.mark.parametrize("rng", [0, np.random.default_rng(1), random.Random(2), None])
def test_rng_rule(rng):
    fb = fiber(E5)
    p = fb.sample(rng)
    assert normal_form(p) == normal_form(E5)
    cat, _, failures, stats = classify(E5, samples=2, rng=rng)
    assert not failures and stats["samples"] == 2 and stats["strata_checks"] == 1


def test_same_seed_same_sample():
    fb = fiber(ZERO_143)
    assert fb.sample(5) == fb.sample(5)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert fb.sample(g1) == fb.sample(g2)
