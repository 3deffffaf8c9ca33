"""The canonical prune built from integer mantissas (issue 23 item 4) against the Fraction definition.

The oracle below builds the canonical minimal network of a network without mixed classes from exact Fractions
only (its own grouping of the neurons by their exact hyperplanes, its own sort), as docs/math/width.md defines
it: one neuron (κ_û, w_rep / |λ_rep|) per kink class, in the exact order of û, and the output bias c + Σ_const
b_i v_i.  The library's network must hold exactly these values, stored as ``_assemble`` stores them (floats of
the network's dtype when every entry fits, Fractions throughout otherwise).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym import Network, normal_form
from relusym._base import deadline as deadline_mod
from relusym._core.analysis import Analysis
from relusym._core.classes import hyperplane_classes
from relusym._core.rationals import exact_quotients, float_fractions, fractions_from_parts
from relusym._fibre import width as width_mod
from relusym._fibre.width import (
    _assemble,
    _rescale_like,
    canonical_minimal_network,
    minimal_network,
    prune,
    width_search,
)

from strategies import DTYPES, float_networks, rational_networks

F = Fraction


def _fr(x: object) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(x)  # type: ignore[arg-type]


def oracle_cmn(net: Network) -> tuple[list[list[Fraction]], list[list[Fraction]], list[Fraction], list[Fraction]]:
    """(V, A, b, c) of the canonical minimal network of a network without mixed classes, from Fractions."""
    m, n, k = net.shape
    V = [[_fr(x) for x in row] for row in net.V.tolist()]
    A = [[_fr(x) for x in row] for row in net.A.tolist()]
    b = [_fr(x) for x in net.b.tolist()]
    c = [_fr(x) for x in net.c.tolist()]
    classes: dict[tuple[Fraction, ...], list[object]] = {}  # û -> [row w / |λ| of the first neuron, κ]
    for i in range(n):
        v = [V[r][i] for r in range(k)]
        if not any(v):
            continue
        if not any(A[i]):
            if b[i] > 0:
                c = [x + b[i] * y for x, y in zip(c, v, strict=True)]
            continue
        lam = next(x for x in A[i] if x)
        u = tuple(x / lam for x in [*A[i], b[i]])
        entry = classes.setdefault(u, [tuple(x / abs(lam) for x in [*A[i], b[i]]), [F(0)] * k])
        entry[1] = [x + abs(lam) * y for x, y in zip(entry[1], v, strict=True)]  # type: ignore[arg-type]
    kinks = sorted((u, row, kap) for u, (row, kap) in classes.items() if any(kap))  # type: ignore[misc]
    Vo = [[kap[r] for _, _, kap in kinks] for r in range(k)]
    Ao = [list(row[:m]) for _, row, _ in kinks]
    bo = [row[m] for _, row, _ in kinks]
    return Vo, Ao, bo, c


def _values(x: np.ndarray) -> list[Fraction]:
    return [_fr(v) for v in x.ravel().tolist()]


def _fits(values: list[Fraction], dtype: np.dtype) -> bool:
    for v in values:
        f = np.asarray(float(v)).astype(dtype)
        if not np.isfinite(f) or Fraction(float(f)) != v:
            return False
    return True


def check_against_oracle(net: Network, out: Network) -> None:
    Vo, Ao, bo, co = oracle_cmn(net)
    assert out.shape == (net.m, len(bo), net.k)
    expected = [[x for row in Vo for x in row], [x for row in Ao for x in row], bo, co]
    got = [_values(out.V), _values(out.A), _values(out.b), _values(out.c)]
    assert got == expected
    if net.is_float and bo:
        dtype = np.result_type(net.V, net.A, net.b, net.c)
        all_fit = all(_fits(vals, dtype) for vals in expected)
        for arr in (out.V, out.A, out.b, out.c):
            assert (arr.dtype == dtype) if all_fit else (arr.dtype == object)
    for arr in (out.V, out.A, out.b, out.c):
        if arr.dtype == object:
            for v in arr.ravel().tolist():
                assert type(v) is Fraction and v.denominator > 0 and math.gcd(v.numerator, v.denominator) == 1


# ---------------------------------------------------------------------------------------------------------
# networks: float16/32/64, ties (neurons on one hyperplane), no opposite pairs unless asked, subnormals, spreads


# ---------------------------------------------------------------------------------------------------------
# the exact quotients


@settings(max_examples=150)
@given(float_networks())
def test_u_exact_many_is_the_fraction_definition(net: Network) -> None:
    hc = hyperplane_classes(net)
    js = list(range(hc.N_all))
    ref = [tuple(Fraction(x) / Fraction(hc.lam[hc.rep[j]]) for x in hc.row(int(hc.rep[j])).tolist()) for j in js]
    assert hc.u_exact_many(js) == ref


@settings(max_examples=100)
@given(st.sampled_from(DTYPES), st.integers(0, 2**32 - 1))
def test_exact_quotients_and_float_fractions(dtype: type, seed: int) -> None:
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    ex = rng.integers(int(info.minexp) - int(info.nmant), int(info.maxexp) - 1, size=(5, 4))
    with np.errstate(over="ignore", under="ignore"):
        X = np.ldexp(rng.standard_normal((5, 4)), ex).astype(dtype)
        lam = np.ldexp(rng.standard_normal(5) + 3.0, rng.integers(-20, 20, size=5)).astype(dtype)
    X = np.where(np.isfinite(X), X, dtype(0))
    lam = np.where((lam != 0) & np.isfinite(lam), lam, dtype(1))
    Q = exact_quotients(X, lam)
    assert Q.shape == X.shape
    for r in range(5):
        for c in range(4):
            assert Q[r, c] == Fraction(float(X[r, c])) / Fraction(float(lam[r]))
            assert math.gcd(Q[r, c].numerator, Q[r, c].denominator) == 1 and Q[r, c].denominator > 0
    assert float_fractions(X).tolist() == [[Fraction(float(x)) for x in row] for row in X.tolist()]


def test_fractions_from_parts_beyond_int64() -> None:
    num = np.array([[3, -5, 0, 7]], dtype=np.int64)
    den = np.array([[1, 9, 1, 3]], dtype=np.int64)
    d = np.array([[70, -1000, 0, 1]], dtype=np.int64)
    got = fractions_from_parts(num, den, d).tolist()[0]
    assert got == [F(3 * 2**70), F(-5, 9 * 2**1000), F(0), F(14, 3)]
    assert all(type(x) is Fraction for x in got)


# ---------------------------------------------------------------------------------------------------------
# prune(θ, canonical=True) against the Fraction definition


@settings(max_examples=200)
@given(float_networks(max_n=30))
def test_canonical_prune_is_the_fraction_definition(net: Network) -> None:
    an = Analysis(net)
    if an.mixed:
        return
    out = prune(net, canonical=True)
    check_against_oracle(net, out)
    assert normal_form(out) == normal_form(net)


@settings(max_examples=80)
@given(rational_networks())
def test_canonical_prune_of_rational_networks(net: Network) -> None:
    if Analysis(net).mixed:
        return
    check_against_oracle(net, prune(net, canonical=True))


@pytest.mark.parametrize("dtype", DTYPES)
def test_canonical_prune_large_float_network(dtype: type) -> None:
    """Past the configuration search (N > 12): the integer construction, with duplicates and dead neurons."""
    rng = np.random.default_rng(7)
    m, n, k = 6, 40, 3
    A = rng.standard_normal((n, m)).astype(dtype)
    A[5], A[9] = A[3] * dtype(4), A[3] * dtype(0.5)  # ties on one hyperplane
    b = rng.standard_normal(n).astype(dtype)
    b[5], b[9] = b[3] * dtype(4), b[3] * dtype(0.5)
    A[11], b[11] = 0, -1  # dead
    V = rng.standard_normal((k, n)).astype(dtype)
    net = Network(V, A, b, rng.standard_normal(k).astype(dtype))
    out = prune(net, canonical=True)
    check_against_oracle(net, out)
    mn = minimal_network(net)
    assert mn.network.same_parameters(out)


@settings(max_examples=120)
@given(float_networks(max_n=8), st.booleans())
def test_few_classes_without_mixed_classes_as_the_configuration_search(net: Network, keep: bool) -> None:
    """N ≤ 12, no mixed class: the direct construction (taken when S_θ is certified unique) gives the network the
    configuration search gives, values and storage alike, and says it is canonical when the search did."""
    an = Analysis(net)
    if an.mixed or an.N == 0:
        return
    ws = width_search(Analysis(net), budget=60.0)
    assert ws.best is not None and ws.kd is not None
    neurons, c = canonical_minimal_network(ws.kd, ws.best)
    if keep:
        neurons = _rescale_like(neurons, an.classes)
    ref = _assemble(neurons, c, net.m, net.k, like=net)
    mn = minimal_network(net, keep_scales=keep)
    assert mn.network.same_parameters(ref)
    got = mn.network
    assert [x.dtype for x in (got.V, got.A, got.b, got.c)] == [x.dtype for x in (ref.V, ref.A, ref.b, ref.c)]
    if mn.canonical:
        assert ws.canonical and not keep


@settings(max_examples=60)
@given(float_networks(mixed=True, max_n=8))
def test_mixed_networks_still_prune_to_the_same_function(net: Network) -> None:
    out = prune(net, canonical=True, budget=30.0)
    assert normal_form(out) == normal_form(net)
    assert out.n == minimal_network(net, budget=30.0).width


# ---------------------------------------------------------------------------------------------------------
# budgets


def test_width_search_stops_between_its_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock that jumps 100 s at every reading: the search stops after its first step, with true bounds."""
    net = Network([[1, 1, 2, 1]], [[1, 2], [-1, -2], [3, 1], [1, -1]], [0, 0, 1, 2])  # a mixed class
    ws_true = width_search(Analysis(net), budget=60.0)
    now = [0.0]

    def clock() -> float:
        now[0] += 100.0
        return now[0]

    monkeypatch.setattr(deadline_mod.time, "monotonic", clock)
    ws = width_search(Analysis(net), budget=1.0)
    assert ws.width is None and ws.undecided is not None and "budget" in ws.undecided
    assert ws.lower <= ws_true.lower and ws_true.upper <= ws.upper
    with pytest.raises(width_mod.BudgetExceededError, match="within"):
        prune(net, budget=1.0)


def test_wide_single_neuron_prunes_without_the_configuration_search() -> None:
    """m large, n = 1 (issue 21): no exact M, no configuration search; the canonical network as defined."""
    rng = np.random.default_rng(3)
    m = 5000
    net = Network(rng.standard_normal((1, 1)).astype(np.float32), rng.standard_normal((1, m)).astype(np.float32), [0.5])
    out = prune(net, canonical=True, budget=5.0)
    check_against_oracle(net, out)
    assert prune(net, budget=5.0).same_parameters(net)
