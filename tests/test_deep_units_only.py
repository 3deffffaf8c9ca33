"""``unit_status(..., only=...)`` (issue 22): the requested units are classified as in a full run, the others keep
only their cheap statuses; every status is checked against an exact grid and the independent checker."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import relusym
from relusym._bounded.domain import Box
from relusym._deep.bounds import ExactLayers, exact_preactivations
from relusym._deep.box_check import check_certificates
from relusym._deep.mlp import MLP
from relusym._deep.status import NOT_REQUESTED, UNDECIDED, unit_status
from relusym.errors import InvalidNetworkError

BOX = Box([-1, 0], [1, 2])


def _net(seed: int) -> MLP:
    rng = np.random.default_rng(seed)
    shapes = [(6, 2), (6, 6), (4, 6), (1, 4)]
    return MLP([rng.integers(-4, 5, s).tolist() for s in shapes], [rng.integers(-4, 5, s[0]).tolist() for s in shapes])


def _grid_signs(net: MLP, n: int) -> list[list[set[int]]]:
    """The signs each unit takes on an (n+1)² rational grid of BOX (its vertices included), exactly."""
    layers = ExactLayers.of(net)
    (a0, a1), (b0, b1) = BOX.lo, BOX.hi
    signs = [[set() for _ in range(layers.widths[ell + 1])] for ell in range(layers.hidden)]
    for i in range(n + 1):
        for k in range(n + 1):
            x = (a0 + (b0 - a0) * Fraction(i, n), a1 + (b1 - a1) * Fraction(k, n))
            z = exact_preactivations(layers, x)
            for ell, row in enumerate(signs):
                for j, s in enumerate(row):
                    s.add((z[ell][j] > 0) - (z[ell][j] < 0))
    return signs


@pytest.mark.parametrize("seed", [3, 10, 32])
def test_only_classifies_the_requested_units_as_a_full_run(seed: int) -> None:
    net = _net(seed)
    full = unit_status(net, BOX, budget=30)
    grid = _grid_signs(net, 16)
    # the requested units: every unit the root's cheap statuses leave open, and one that they settle
    pending = [c for lay in full.certificates for c in lay if c.method in ("cover", "lp", "phase-bab")]
    assert pending, "the networks were chosen with units that need a search"
    ask = [(c.layer, c.unit) for c in pending][:3]
    part = unit_status(net, BOX, budget=30, only=iter(ask))
    assert check_certificates(net, BOX, [c for lay in part.certificates for c in lay if c.status != UNDECIDED])
    for ell, lay in enumerate(part.certificates):
        for j, c in enumerate(lay):
            if (ell + 1, j) in ask:
                assert c.status == full.statuses[ell][j]
            if c.status == UNDECIDED:
                assert c.reason == NOT_REQUESTED and (ell + 1, j) not in ask
            # the oracle: a unit seen with both signs on the grid is never proved dead or active, and a proved
            # one never shows the other sign
            seen = grid[ell][j]
            if c.status == "dead":
                assert 1 not in seen
            if c.status == "active":
                assert -1 not in seen
            if c.status == "crossing":
                assert c.values is not None and c.values[0] < 0 < c.values[1]
    # units nobody asked for and the cheap statuses leave open are not searched
    assert sum(c.reason == NOT_REQUESTED for lay in part.certificates for c in lay) == len(pending) - len(ask)


def test_only_empty_and_through_the_api() -> None:
    net = _net(10)
    none = unit_status(net, BOX, budget=5, only=[])
    cheap = {c.reason for lay in none.certificates for c in lay if c.status == UNDECIDED}
    assert cheap <= {NOT_REQUESTED}
    full = relusym.unit_status(net, BOX, budget=30)
    ask = full.units("dead")[:1] + full.units("crossing")[:1]
    part = relusym.unit_status(net, BOX, budget=30, only=ask)
    for ell, j in ask:
        assert part.statuses[ell - 1][j] == full.statuses[ell - 1][j]


@pytest.mark.parametrize("bad", [[(0, 0)], [(4, 0)], [(1, 6)], [(1, -1)], [(1,)], ["ab"]])
def test_only_refuses_units_that_do_not_exist(bad: list[object]) -> None:
    with pytest.raises(InvalidNetworkError):
        unit_status(_net(3), BOX, budget=1, only=bad)  # type: ignore[arg-type]
