"""Optimised slopes (α-CROWN, :mod:`relusym._deep.alpha`): the float gradient against finite differences, and the
exact Lagrangian bound at the multipliers of ANY slopes α ∈ [0, 1] (random, extreme, optimised) never below the
exact values of the unit on a rational grid plus the vertices of the first layer's arrangement."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from relusym._bounded.domain import Box
from relusym._deep.alpha import _forward, alpha_bound, alpha_dual, alpha_proof, alpha_table
from relusym._deep.bounds import ExactLayers, certified_bounds, dual_bounds, exact_preactivations, quantize
from relusym._deep.lp import check_proof
from relusym._deep.mlp import MLP

from deep_oracles import arrangement_vertices, third_layer_dead_net


def _net(seed: int, widths: tuple[int, ...] = (2, 5, 5, 4, 1)) -> MLP:
    rng = random.Random(seed)
    Ws, bs = [], []
    for a, b in zip(widths, widths[1:], strict=False):
        Ws.append([[Fraction(rng.randint(-8, 8), 4) for _ in range(a)] for _ in range(b)])
        bs.append([Fraction(rng.randint(-4, 4), 4) for _ in range(b)])
    return MLP(Ws, bs)


def _points(net: MLP, box: Box, n: int = 12) -> list[tuple[Fraction, ...]]:
    (a0, a1), (b0, b1) = box.lo, box.hi
    grid = [(a0 + (b0 - a0) * i / n, a1 + (b1 - a1) * k / n) for i in range(n + 1) for k in range(n + 1)]
    return grid + arrangement_vertices(net, box)


def _values(layers: ExactLayers, pts: list[tuple[Fraction, ...]]) -> list[list[list[Fraction]]]:
    return [exact_preactivations(layers, p) for p in pts]


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    ws = [3, 6, 5, 4]
    W = [rng.normal(size=(ws[i + 1], ws[i])) for i in range(3)]
    b = [rng.normal(size=ws[i + 1]) for i in range(3)]
    T = 2
    lower = [rng.normal(size=(2, 1, w)) - 0.5 for w in ws[1:3]]
    upper = [v + 2 * rng.random(size=v.shape) + 0.3 for v in lower]
    L, U = -np.ones((2, 1, 3)), np.ones((2, 1, 3))
    C = np.array([[1.0, 0, 0, 0], [0, -1.0, 0, 0]])
    Lam0 = np.broadcast_to(C @ W[T], (2, 2, 5)).copy()
    c0 = np.broadcast_to(C @ b[T], (2, 2)).copy()
    alpha = [rng.random((2, 2, w)) for w in ws[1:3]]
    v, _, g = _forward(W, b, T, Lam0, c0, lower, upper, L, U, alpha, True)
    assert g is not None
    eps = 1e-6
    for k in range(T):
        for idx in np.ndindex(*alpha[k].shape):
            a2 = [a.copy() for a in alpha]
            a2[k][idx] += eps
            v2, _, _ = _forward(W, b, T, Lam0, c0, lower, upper, L, U, a2, False)
            assert abs((v2 - v)[idx[:2]] / eps - g[k][idx]) < 1e-5


@pytest.mark.parametrize("seed", range(6))
def test_any_slopes_give_a_valid_exact_bound(seed: int) -> None:
    """Random, all-zero and all-one slopes (and the optimised ones): the exact bound at their multipliers is ≥ the
    unit's exact value at every oracle point, for both signs of every unit of every later layer."""
    net = _net(seed)
    layers = ExactLayers.of(net)
    box = Box([Fraction(-1), Fraction(-1, 2)], [Fraction(1, 2), Fraction(1)])
    t = certified_bounds(layers, box.lo, box.hi)
    vals = _values(layers, _points(net, box))
    rng = np.random.default_rng(seed)
    fl = [np.array([[float(v) for v in lay]]) for lay in t.lower]
    fu = [np.array([[float(v) for v in lay]]) for lay in t.upper]
    L = np.array([[float(v) for v in box.lo]])
    U = np.array([[float(v) for v in box.hi]])
    for T in range(1, layers.hidden + 1):
        n = layers.widths[T + 1]
        signs, units = [1] * n + [-1] * n, list(range(n)) * 2
        C = np.zeros((2 * n, n))
        for r, (sg, u) in enumerate(zip(signs, units, strict=True)):
            C[r, u] = sg
        Lam0 = (C @ layers.Wf[T])[None]
        c0 = (C @ layers.bf[T])[None]
        lo3, up3 = [v[:, None, :] for v in fl[:T]], [v[:, None, :] for v in fu[:T]]
        choices = [[rng.random((1, 2 * n, layers.widths[k + 1])) for k in range(T)]]
        choices += [[np.full((1, 2 * n, layers.widths[k + 1]), c) for k in range(T)] for c in (0.0, 1.0)]
        mus_all = [
            _forward(layers.Wf, layers.bf, T, Lam0, c0, lo3, up3, L[:, None], U[:, None], a, False)[1] for a in choices
        ]
        for mus in mus_all:
            bound = dual_bounds(
                layers, T, signs, units, [quantize(mu[0]) for mu in mus], box.lo, box.hi, t.lower[:T], t.upper[:T]
            )
            for r, (sg, u) in enumerate(zip(signs, units, strict=True)):
                assert all(sg * z[T][u] <= bound[r] for z in vals)
        exact = alpha_dual(layers, T, signs, units, box.lo, box.hi, t.lower, t.upper)
        for r, (sg, u) in enumerate(zip(signs, units, strict=True)):
            assert all(sg * z[T][u] <= exact[r] for z in vals)


@pytest.mark.parametrize("seed", range(4))
def test_optimised_slopes_never_above_crowns(seed: int) -> None:
    net = _net(seed + 10, (2, 6, 6, 6, 1))
    layers = ExactLayers.of(net)
    box = Box([Fraction(-1), Fraction(-1)], [Fraction(1), Fraction(1)])
    t = certified_bounds(layers, box.lo, box.hi)
    fl = [np.array([[float(v) for v in lay]]) for lay in t.lower]
    fu = [np.array([[float(v) for v in lay]]) for lay in t.upper]
    L = np.array([[float(v) for v in box.lo]])
    U = np.array([[float(v) for v in box.hi]])
    T = 3
    C = np.concatenate([np.eye(1), -np.eye(1)])
    crown, _ = alpha_bound(layers.Wf, layers.bf, T, C, fl, fu, L, U, steps=0)
    best, _ = alpha_bound(layers.Wf, layers.bf, T, C, fl, fu, L, U)
    assert np.all(best <= crown)


@pytest.mark.parametrize("seed", range(4))
def test_float_table_contains_the_exact_values(seed: int) -> None:
    net = _net(seed + 20)
    layers = ExactLayers.of(net)
    box = Box([Fraction(-1), Fraction(-1)], [Fraction(1), Fraction(1)])
    vals = _values(layers, _points(net, box))
    L = np.array([[float(v) for v in box.lo]])
    U = np.array([[float(v) for v in box.hi]])
    lower, upper = alpha_table(layers.Wf, layers.bf, L, U, layers.hidden - 1)
    for k in range(layers.hidden):
        for z in vals:
            zk = np.array([float(v) for v in z[k]])
            assert np.all(zk >= lower[k][0] - 1e-9) and np.all(zk <= upper[k][0] + 1e-9)


def test_planted_thin_margin_third_layer_unit() -> None:
    """The planted third-layer unit ≤ −1/64 (deep_oracles.third_layer_dead_net): the exact bound from the
    optimised slopes on the box's table is valid (≥ −1/64, the unit's max)."""
    net = third_layer_dead_net()
    layers = ExactLayers.of(net)
    box = Box([Fraction(-1), Fraction(-1)], [Fraction(1), Fraction(1)])
    t = certified_bounds(layers, box.lo, box.hi)
    (v,) = alpha_dual(layers, 2, [1], [0], box.lo, box.hi, t.lower, t.upper)
    assert v >= Fraction(-1, 64)


@pytest.mark.parametrize("seed", range(4))
def test_alpha_proof_is_a_checkable_dual_proof(seed: int) -> None:
    """alpha_proof's proof (the cell search's leaves) re-checks exactly and bounds the oracle's values; a lowered
    value is refused by the checker."""
    net = _net(seed + 30)
    layers = ExactLayers.of(net)
    box = Box([Fraction(-1, 4), Fraction(0)], [Fraction(1, 4), Fraction(1, 2)])
    t = certified_bounds(layers, box.lo, box.hi)
    vals = _values(layers, _points(net, box))
    region = (box.lo, box.hi)
    fl = [np.array([float(v) for v in lay]) for lay in t.lower]
    fu = [np.array([float(v) for v in lay]) for lay in t.upper]
    checked = 0
    for T in range(1, layers.hidden + 1):
        for u in range(layers.widths[T + 1]):
            for sg in (1, -1):
                val, _, p = alpha_proof(layers, T, u, sg, region, t.lower[:T], t.upper[:T], fl[:T], fu[:T])
                if p is None:
                    assert not val < 0
                    continue
                assert check_proof(layers, p, region, t.lower, t.upper)
                assert all(sg * z[T][u] <= p.value for z in vals)
                low = replace(p, value=p.value - Fraction(1, 1 << 20))
                assert not check_proof(layers, low, region, t.lower, t.upper)
                checked += 1
    assert checked
