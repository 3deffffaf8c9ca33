"""Equality on a box of a deep network and its box-pruned copy (issue 22): the route through the two networks'
proved unit statuses (relusym._deep.box_equal), against exact grid oracles and the certificates' own checks."""

from __future__ import annotations

from fractions import Fraction

import pytest

from relusym._bounded.domain import Box
from relusym._deep import box_equal
from relusym._deep.bounds import ExactLayers, certified_bounds
from relusym._deep.box_check import check_certificate
from relusym._deep.box_prune import prune_on
from relusym._deep.decide import DeepVerdict
from relusym._deep.mlp import MLP

BOX = Box([0, 0], [1, 1])


def _net() -> MLP:
    """Layer 1: h0 = σ(x0 + x1), h1 = σ(x0 + x1 − 1/4), h2 = σ(x0 − 2) (zero on the box, not outside it).
    Layer 2: u = h0 − h1 + h2 − 1/2 is dead on the box (h0 − h1 ≤ 1/4 there) although its interval bound is
    positive (h0 up to 2, h1 from 0) and it fires outside the box (x0 = 4: u = 3/2); v = h0 − 1 crosses;
    w = h1 + h2 + 1 is active."""
    W1 = [[1, 1], [1, 1], [1, 0]]
    b1 = [0, Fraction(-1, 4), -2]
    W2 = [[1, -1, 1], [1, 0, 0], [0, 1, 1]]
    b2 = [Fraction(-1, 2), -1, 1]
    return MLP([W1, W2, [[3, 1, 2]]], [b1, b2, [0]])


def _grid(n: int) -> list[tuple[Fraction, Fraction]]:
    return [(Fraction(i, n), Fraction(j, n)) for i in range(n + 1) for j in range(n + 1)]


def _undecided_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the first stage (interval-dead symmetry, partition) answer "undecided", as it does on ACAS Xu."""
    monkeypatch.setattr(
        box_equal, "equivalent_on_deep", lambda a, b, d, budget, seed: DeepVerdict("undecided", "first stage off")
    )


def test_the_planted_unit_is_dead_on_the_box_only_by_a_proof_beyond_intervals() -> None:
    net = _net()
    layers = ExactLayers.of(net)
    t = certified_bounds(layers, BOX.lo, BOX.hi, relax=False)
    assert t.raw_upper[1][0] > 0  # interval arithmetic does not see it
    assert net.evaluate_exact((Fraction(4), Fraction(0))) != MLP(
        [net.weights[0], net.weights[1][1:], [net.weights[2][0][1:]]], [net.biases[0], net.biases[1][1:], net.biases[2]]
    ).evaluate_exact((Fraction(4), Fraction(0)))


def _check_equal(v: DeepVerdict, nets: tuple[MLP, MLP]) -> None:
    """The certificate applies: every proof the removals rest on re-checks exactly, each network's removed units
    are proved dead, and the symmetry maps one reduction onto the other."""
    assert v.status == "equal", v.reason
    cert = v.certificate
    assert cert is not None and cert.box_statuses
    for st, which in zip(cert.box_statuses, nets, strict=False):
        if st is None:
            continue
        for lay in st.certificates:
            for c in lay:
                if c.status != "undecided":
                    assert check_certificate(which, BOX, c)
    if cert.symmetry is not None:
        assert cert.symmetry.apply(cert.reduced1).same_parameters(cert.reduced2)


@pytest.mark.parametrize("route", ["partnered", "full"])
def test_a_network_equals_its_box_pruned_copy(monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    net = _net()
    pruned = prune_on(net, BOX, budget=10)
    assert (2, 0) in pruned.dead
    for x in _grid(16):  # the oracle: exact values on a grid of the box (the pruned network is equal there)
        assert pruned.network.evaluate_exact(x) == net.evaluate_exact(x)
    _undecided_first(monkeypatch)
    if route == "full":
        monkeypatch.setattr(box_equal, "_partnered", lambda *args: None)
    v = box_equal.equivalent_on_box(net, pruned.network, BOX, budget=20)
    _check_equal(v, (net, pruned.network))
    st = v.certificate.box_statuses[0] if v.certificate else None
    assert st is not None and st.statuses[1][0] == "dead"
    assert "dead" in v.to_dict()["certificate"]["box_statuses"][0]
    if route == "partnered":
        assert "without a partner" in v.reason


def test_a_planted_unit_dead_only_on_the_box_in_a_permuted_scaled_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second network: the first's units permuted and rescaled by positive factors, plus a unit planted in the
    second layer that is dead on the box by a proof beyond intervals (2u, with another output weight) and fires
    outside it.  Its direction is u's, held twice by the second network and once by the first, so u and both
    copies are left unpartnered; the partnered route proves the three dead and certifies "equal"."""
    net = _net()
    W1, b1 = [[Fraction(w) for w in r] for r in net.weights[0]], [Fraction(v) for v in net.biases[0]]
    W2, b2 = [[Fraction(w) for w in r] for r in net.weights[1]], [Fraction(v) for v in net.biases[1]]
    Wo = [[Fraction(w) for w in net.weights[2][0]]]
    perm, scale = [2, 0, 1], [Fraction(3), Fraction(1, 2), Fraction(5, 4)]
    nW1 = [[w * scale[i] for w in W1[p]] for i, p in enumerate(perm)]
    nb1 = [b1[p] * scale[i] for i, p in enumerate(perm)]
    nW2 = [[r[p] / scale[i] for i, p in enumerate(perm)] for r in W2]
    planted = [w * 2 for w in nW2[0]]  # 2·u: dead on the box exactly where u is
    nW2, nb2 = [nW2[1], planted, nW2[0], nW2[2]], [b2[1], b2[0] * 2, b2[0], b2[2]]
    nWo = [[Wo[0][1], Fraction(7), Wo[0][0], Wo[0][2]]]
    other = MLP([nW1, nW2, nWo], [nb1, nb2, net.biases[2]])
    assert other.evaluate_exact((Fraction(4), Fraction(0))) != net.evaluate_exact((Fraction(4), Fraction(0)))
    for x in _grid(16):
        assert other.evaluate_exact(x) == net.evaluate_exact(x)
    _undecided_first(monkeypatch)
    monkeypatch.setattr(box_equal, "prune_on", lambda *a, **k: pytest.fail("the full route was taken"))
    v = box_equal.equivalent_on_box(net, other, BOX, budget=20)
    _check_equal(v, (net, other))
    assert v.certificate is not None
    first, second = v.certificate.box_statuses
    assert first.statuses[1][0] == "dead" and second.statuses[1][1] == second.statuses[1][2] == "dead"


def test_removing_a_crossing_unit_is_never_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    net = _net()
    # drop v = h0 − 1 (it crosses on the box): the function changes inside the box
    cut = MLP(
        [net.weights[0], [net.weights[1][0], net.weights[1][2]], [[net.weights[2][0][0], net.weights[2][0][2]]]],
        [net.biases[0], [net.biases[1][0], net.biases[1][2]], net.biases[2]],
    )
    assert any(cut.evaluate_exact(x) != net.evaluate_exact(x) for x in _grid(8))
    for first_off in (False, True):
        if first_off:
            _undecided_first(monkeypatch)
        v = box_equal.equivalent_on_box(net, cut, BOX, budget=10)
        assert v.status != "equal"
        if v.status == "different":
            ce = v.counterexample
            assert ce is not None and BOX.contains(ce.x, strict=True)
            assert net.evaluate_exact(ce.x) == ce.y1 != ce.y2 == cut.evaluate_exact(ce.x)


@pytest.mark.slow
def test_acas_network_equals_its_box_pruned_copy() -> None:
    from pathlib import Path

    import relusym
    from relusym.io import input_box

    path = Path(__file__).parent / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.nnet"
    with pytest.warns(UserWarning):
        net = relusym.load(path)
    box = input_box(path)
    pruned = prune_on(net, box, budget=30)
    assert pruned.dead
    v = box_equal.equivalent_on_box(net, pruned.network, box, budget=60)
    assert v.status == "equal", v.reason
    assert "without a partner" in v.reason  # the partnered route: the 7 removed units' proofs only
