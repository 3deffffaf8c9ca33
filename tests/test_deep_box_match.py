"""The proposal of unpartnered units (relusym._deep.box_match) against planted removals under the per-layer group."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym._deep.box_match import unpartnered_units
from relusym._deep.mlp import MLP


def _random_mlp(rng: np.random.Generator, widths: list[int]) -> MLP:
    """Gaussian float weights (exact at their binary values): rows pairwise non-proportional almost surely, even
    restricted to one column and the bias."""
    Ws = [rng.normal(size=(widths[i + 1], widths[i])) for i in range(len(widths) - 1)]
    bs = [rng.normal(size=widths[i + 1]) for i in range(len(widths) - 1)]
    return MLP([W.astype(object) for W in Ws], [b.astype(object) for b in bs])


def _transform(net: MLP, rng: np.random.Generator, drop: list[set[int]]) -> MLP:
    """Drop the units ``drop[ℓ]`` of each hidden layer, then permute and rescale the rest by positive rationals
    (the per-layer group): the oracle for which units lose their partner."""
    Ws = [np.array(W, dtype=object) for W in net.weights]
    bs = [np.array(b, dtype=object) for b in net.biases]
    for ell, gone in enumerate(drop):
        keep = [j for j in range(Ws[ell].shape[0]) if j not in gone]
        Ws[ell], bs[ell] = Ws[ell][keep], bs[ell][keep]
        Ws[ell + 1] = Ws[ell + 1][:, keep]
        perm = rng.permutation(len(keep))
        scale = np.array([Fraction(int(rng.integers(1, 9)), int(rng.integers(1, 9))) for _ in keep], dtype=object)
        Ws[ell], bs[ell] = Ws[ell][perm] * scale[:, None], bs[ell][perm] * scale
        Ws[ell + 1] = Ws[ell + 1][:, perm] / scale[None, :]
    return MLP(Ws, bs)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 6), min_size=1, max_size=3))
def test_the_dropped_units_are_exactly_the_unpartnered_ones(seed: int, hidden: list[int]) -> None:
    rng = np.random.default_rng(seed)
    net = _random_mlp(rng, [3, *hidden, 2])
    drop = [set(rng.choice(w, size=int(rng.integers(0, w)), replace=False).tolist()) for w in hidden]
    other = _transform(net, rng, drop)
    left1, left2 = unpartnered_units(net, other)
    assert sorted(left1) == sorted((ell + 1, j) for ell, gone in enumerate(drop) for j in gone)
    assert left2 == []
    back1, back2 = unpartnered_units(other, net)
    assert back1 == [] and sorted(back2) == sorted(left1)


def test_different_depths_or_inputs_propose_nothing() -> None:
    rng = np.random.default_rng(0)
    a, b = _random_mlp(rng, [2, 3, 1]), _random_mlp(rng, [2, 3, 3, 1])
    assert unpartnered_units(a, b) == ([], [])
    assert unpartnered_units(a, _random_mlp(rng, [3, 3, 1])) == ([], [])


def test_a_changed_row_loses_its_partner_and_its_successors_keep_theirs() -> None:
    rng = np.random.default_rng(1)
    net = _random_mlp(rng, [2, 4, 3, 1])
    Ws = [np.array(W, dtype=object) for W in net.weights]
    Ws[0][2, 0] += 0.5  # unit 2 of the first hidden layer now computes another function
    left1, left2 = unpartnered_units(net, MLP(Ws, net.biases))
    assert left1 == [(1, 2)] and left2 == [(1, 2)]
