"""The float-tolerance mode: equivalent_approx, distance, align (spec §10 item 14)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relusym import equivalent
from relusym._core.group import Symmetry
from relusym._core.network import Network
from relusym._core.operations import flip
from relusym._tolerance.alignment import align
from relusym._tolerance.approx import distance, equivalent_approx
from relusym.errors import InvalidNetworkError

from strategies import gaussian_network

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def planted(
    net: Network, rng: np.random.Generator, sigma: float, noise: float, *, dyadic: bool = False
) -> tuple[Network, np.ndarray, np.ndarray]:
    """A permuted, positively rescaled (log-normal σ, or powers of two) copy with relative Gaussian noise."""
    V, A, b, c = net.to_float()
    n = net.n
    perm = rng.permutation(n)
    if dyadic:
        d = 2.0 ** rng.integers(-6, 7, n).astype(float)
    else:
        d = np.exp(sigma * rng.standard_normal(n))
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    V2, A2, b2 = (V / d)[:, inv], (A * d[:, None])[inv], (b * d)[inv]
    if noise:
        V2 = V2 * (1 + noise * rng.standard_normal(V2.shape))
        A2 = A2 * (1 + noise * rng.standard_normal(A2.shape))
        b2 = b2 * (1 + noise * rng.standard_normal(b2.shape))
    return Network(V2, A2, b2, c), perm, d


def feature_separation(net: Network) -> float:
    """Smallest distance between two neurons in align's scale-invariant coordinates (brute force)."""
    V, A, b, _ = net.to_float()
    W = np.concatenate([A, b[:, None]], axis=1)
    w = np.linalg.norm(W, axis=1)
    T = V.T * w[:, None]
    s = np.sqrt(np.mean(np.sum(T**2, axis=1)))
    F = np.concatenate([W / w[:, None], T / s], axis=1)
    D = np.linalg.norm(F[:, None] - F[None], axis=2) + np.diag(np.full(len(F), np.inf))
    return float(D.min())


# ----------------------------------------------------------------------------------------------------------
# align


@SETTINGS
@given(m=st.integers(1, 6), n=st.integers(1, 30), k=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_align_exact_recovery_without_noise(m, n, k, seed):
    rng = np.random.default_rng(seed)
    net1 = gaussian_network(rng, m, n, k)
    net2, perm, d = planted(net1, rng, 0, 0, dyadic=True)
    al = align(net1, net2)
    assert al.symmetry.act(net1) == net2  # exact: power-of-two scales
    assert list(al.symmetry.permutation) == perm.tolist()
    assert [float(s) for s in al.symmetry.scales] == d.tolist()
    assert al.matched_fraction == 1.0 and not al.unmatched and not al.reversed
    assert not al.residuals.any()


@SETTINGS
@given(
    m=st.integers(1, 6),
    n=st.integers(2, 30),
    k=st.integers(1, 3),
    sigma=st.sampled_from([0.0, 1.0, 3.0]),
    log_noise=st.floats(-8, -3),
    seed=st.integers(0, 2**32 - 1),
)
def test_align_recovers_planted_symmetry_below_separation(m, n, k, sigma, log_noise, seed):
    rng = np.random.default_rng(seed)
    noise = 10.0**log_noise
    net1 = gaussian_network(rng, m, n, k)
    net2, perm, d = planted(net1, rng, sigma, noise)
    al = align(net1, net2)
    # relative noise ε moves each coordinate by about ε·(its size): well below half the separation, the
    # nearest neighbour is the planted partner
    if 20 * noise * np.sqrt(m + k + 1) < feature_separation(net1):
        assert list(al.symmetry.permutation) == perm.tolist()
        np.testing.assert_allclose(al.scales, d, rtol=100 * noise * np.sqrt(m + 1))
        assert al.matched_fraction == 1.0
    assert sorted(al.symmetry.permutation) == list(range(n))


def test_align_log_normal_scales_no_noise():
    rng = np.random.default_rng(1)
    net1 = gaussian_network(rng, 5, 200, 2)
    net2, perm, d = planted(net1, rng, 3.0, 0.0)
    al = align(net1, net2)
    assert list(al.symmetry.permutation) == perm.tolist()
    np.testing.assert_allclose(al.scales, d, rtol=1e-12)
    assert al.matched_fraction == 1.0
    assert max(al.residuals) < 1e-12


def test_align_dead_neurons_and_duplicates():
    rng = np.random.default_rng(2)
    V = rng.standard_normal((2, 12))
    A = rng.standard_normal((12, 3))
    b = rng.standard_normal(12)
    V[:, 0] = 0  # dead: v = 0
    A[1] = 0
    b[1] = -1  # dead: a = 0, b ≤ 0
    A[2], b[2], V[:, 2] = 0, 0, 0  # inactive
    A[4], b[4], V[:, 4] = A[3], b[3], V[:, 3]  # a duplicate
    A[5], b[5], V[:, 5] = 2 * A[3], 2 * b[3], V[:, 3] * 3  # same hyperplane, other output weight
    A[6], b[6] = 0, 2.0  # a constant neuron
    net1 = Network(V, A, b, rng.standard_normal(2))
    net2, perm, _ = planted(net1, rng, 0, 0, dyadic=True)
    al = align(net1, net2)
    assert al.symmetry.act(net1) == net2
    assert al.matched_fraction == 1.0 and not al.unmatched
    # the dead neurons of θ2 may be moved anywhere; they still count as matched
    V2 = np.array(net2.V, copy=True)
    V2[:, perm[0]] = 0
    V2[:, perm[7]] = 0  # neuron 7 dies in θ2 only
    al = align(net1, Network(V2, net2.A, net2.b, net2.c))
    assert 7 in al.unmatched
    assert sorted(al.symmetry.permutation) == list(range(12))


def test_align_reports_hidden_flips():
    rng = np.random.default_rng(3)
    net1 = gaussian_network(rng, 3, 10, 2)
    net2 = flip(net1, [4])  # (v, a, b) ↦ (v, −a, −b) plus an output-bias change: not a flip of orientation only
    V, A, b, c = net1.to_float()
    V[:, 4], A[4], b[4] = -V[:, 4], -A[4], -b[4]  # the opposite neuron (−v, −w)
    al = align(net1, Network(V, A, b, c))
    assert al.reversed == (4,)
    assert al.matched_fraction == pytest.approx(0.9)
    assert list(al.symmetry.permutation) == list(range(10))
    assert align(net1, net2).unmatched == (4,)


def test_align_to_dict_and_errors():
    rng = np.random.default_rng(4)
    net1 = gaussian_network(rng, 2, 5, 1)
    net2, perm, _ = planted(net1, rng, 1.0, 1e-6)
    d = align(net1, net2, tol=1e-3).to_dict()
    json.dumps(d)
    assert d["permutation"] == perm.tolist() and len(d["scales"]) == 5 and len(d["residuals"]) == 5
    assert align(net1, net2, tol=0.0).matched_fraction < 1.0
    with pytest.raises(InvalidNetworkError, match="widths"):
        align(net1, gaussian_network(rng, 2, 6, 1))
    with pytest.raises(InvalidNetworkError, match="input sizes"):
        align(net1, gaussian_network(rng, 3, 5, 1))


def test_align_large_high_dimensional():
    rng = np.random.default_rng(5)
    net1 = gaussian_network(rng, 100, 3000, 4)
    net2, perm, d = planted(net1, rng, 3.0, 1e-6)
    al = align(net1, net2)
    assert np.array_equal(al.permutation, perm)
    assert al.matched_fraction == 1.0


# ----------------------------------------------------------------------------------------------------------
# equivalent_approx and distance


def test_float32_rounding_is_approx_equal_not_exactly_equal():
    rng = np.random.default_rng(6)
    net64 = gaussian_network(rng, 4, 20, 2)
    net32 = Network(*[x.astype(np.float32) for x in net64.to_float()])
    assert not equivalent(net64, net32)
    v = equivalent_approx(net64, net32, rtol=1e-6)
    assert v and v.max_kink_mismatch > 0
    assert sorted(v.matched) == [(i, i) for i in range(20)]
    assert not equivalent_approx(net64, net32)  # the default rtol = 1e-9 sees float32 rounding
    json.dumps(v.to_dict())
    assert "not transitive" in v.note


def test_perturbed_kink_is_detected():
    rng = np.random.default_rng(7)
    net1 = gaussian_network(rng, 3, 15, 1)
    net2, _, _ = planted(net1, rng, 2.0, 0.0)
    assert equivalent_approx(net1, net2)
    V, A, b, c = net2.to_float()
    V[0, 3] *= 1 + 1e-4
    v = equivalent_approx(net1, Network(V, A, b, c), rtol=1e-6)
    assert not v
    assert v.max_kink_mismatch > v.tol_kink
    A[5] *= 1 + 1e-4  # a hyperplane moved: two unmatched kinks
    v = equivalent_approx(net1, Network(V, A, b, c), rtol=1e-6)
    assert not v and any(not g1 or not g2 for g1, g2 in v.clusters)


def test_opposite_orientations_and_affine_part():
    # σ(x) − σ(−x) = x: no kink, M = 1
    ident = Network([[1, -1]], [[1], [-1]], [0, 0])
    ident2 = Network([[2, -2]], [["1/2"], ["-1/2"]], [0, 0])
    assert equivalent_approx(ident, ident2)
    assert not equivalent_approx(ident, Network([[1, -1]], [[1], [-1]], [0, "1/1000"]), rtol=1e-6)
    # σ(x) + σ(−x) = |x| is not x
    assert not equivalent_approx(ident, Network([[1, 1]], [[1], [-1]], [0, 0]))


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 3),
    n=st.integers(1, 5),
    k=st.integers(1, 2),
    kind=st.sampled_from(["symmetry", "flip", "random"]),
)
def test_approx_agrees_with_exact_on_integer_networks(seed, m, n, k, kind):
    r = random.Random(seed)
    rng = np.random.default_rng(seed)

    def net() -> Network:
        return Network(
            rng.integers(-3, 4, (k, n)), rng.integers(-3, 4, (n, m)), rng.integers(-3, 4, n), rng.integers(-3, 4, k)
        )

    net1 = net()
    if kind == "symmetry":
        net2 = Symmetry.random(n, r).act(net1)
    elif kind == "flip":
        net2 = flip(net1, [i for i in range(n) if r.random() < 0.5])
    else:
        net2 = net()
    assert bool(equivalent_approx(net1, net2)) == bool(equivalent(net1, net2))
    if equivalent(net1, net2):
        assert distance(net1, net2) < 1e-12


def test_tolerance_equality_is_not_transitive():
    def one(v: float) -> Network:
        return Network([[v]], [[1.0]], [0.0])

    n1, n2, n3 = one(1.0), one(1.0008), one(1.0016)
    assert equivalent_approx(n1, n2, rtol=1e-3)
    assert equivalent_approx(n2, n3, rtol=1e-3)
    assert not equivalent_approx(n1, n3, rtol=1e-3)


def test_widths_may_differ():
    net1 = Network([[1, 1]], [[1], [1]], [0, 0])
    net2 = Network([[2]], [[1]], [0])
    assert equivalent_approx(net1, net2) and distance(net1, net2) == 0.0


def test_distance_properties():
    rng = np.random.default_rng(8)
    net1 = gaussian_network(rng, 4, 30, 2)
    net2, _, _ = planted(net1, rng, 2.0, 0.0)
    assert distance(net1, net2) < 1e-14
    ds = [distance(net1, planted(net1, np.random.default_rng(9), 2.0, eps)[0]) for eps in (1e-8, 1e-5, 1e-2)]
    assert ds[0] < ds[1] < ds[2] < 0.1
    assert 1e-9 < ds[0] < 1e-7  # continuous: of the order of the noise, not a jump at the tolerance
    other = gaussian_network(rng, 4, 30, 2)
    assert distance(net1, other) > 0.3
    assert distance(net1, other) == pytest.approx(distance(other, net1), rel=0.2)
    # scale-aware: scaling the outputs of both networks by one factor changes nothing
    V1, A1, b1, c1 = net1.to_float()
    V2, A2, b2, c2 = other.to_float()
    scaled = distance(Network(7 * V1, A1, b1, 7 * c1), Network(7 * V2, A2, b2, 7 * c2))
    assert scaled == pytest.approx(distance(net1, other), rel=1e-9)
    with pytest.raises(InvalidNetworkError, match="different input sizes"):
        distance(net1, gaussian_network(rng, 5, 30, 2))
