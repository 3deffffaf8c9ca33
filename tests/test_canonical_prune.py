"""The canonical prune built from integer mantissas (issue 23 item 4) against the Fraction definition.

The oracle below builds the canonical minimal network of a network without mixed classes from exact Fractions
only (its own grouping of the neurons by their exact hyperplanes, its own sort), as docs/math/width.md defines
it: one neuron per kink class, in the exact order of û, whose row is the primitive integer vector P on the ray of
the class's rows w_i = (a_i, b_i) (w_i = t_i·P, t_i > 0) and whose output weight is Σ_i t_i v_i, and the output
bias c + Σ_const b_i v_i.  The library's network must hold exactly these values, stored as ``assemble_exact``
stores them (all four arrays in the network's float dtype when every entry fits; otherwise each array in float64
when every entry of it fits, else Fractions; Fractions for rational networks).
"""

from __future__ import annotations

import math
from fractions import Fraction
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym import Network, normal_form
from relusym._base import deadline as deadline_mod
from relusym._core.analysis import Analysis
from relusym._core.canon_rows import divide_by_pivots, float64_or_fractions, primitive_neuron, primitive_rows
from relusym._core.classes import hyperplane_classes
from relusym._core.rationals import exact_quotients, float_fractions, fractions_from_parts
from relusym._fibre import width as width_mod
from relusym._fibre.configurations import own_configuration
from relusym._fibre.width import (
    _assemble,
    _rescale_like,
    canonical_minimal_network,
    minimal_network,
    prune,
    width_search,
)

from fibre_helpers import plain
from oracles import eval_oracle, oracle_m1_equal
from strategies import DTYPES, float_networks, rational_networks

F = Fraction


def _fr(x: object) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(x)  # type: ignore[arg-type]


def _primitive(row: list[Fraction]) -> tuple[tuple[int, ...], Fraction]:
    """(P, t) with row = t·P, P a primitive integer vector and t > 0."""
    den = math.lcm(*(x.denominator for x in row))
    ints = [x.numerator * (den // x.denominator) for x in row]
    g = math.gcd(*ints)
    return tuple(x // g for x in ints), Fraction(g, den)


def oracle_cmn(net: Network) -> tuple[list[list[Fraction]], list[list[Fraction]], list[Fraction], list[Fraction]]:
    """(V, A, b, c) of the canonical minimal network of a network without mixed classes, from Fractions."""
    m, n, k = net.shape
    V = [[_fr(x) for x in row] for row in net.V.tolist()]
    A = [[_fr(x) for x in row] for row in net.A.tolist()]
    b = [_fr(x) for x in net.b.tolist()]
    c = [_fr(x) for x in net.c.tolist()]
    classes: dict[tuple[Fraction, ...], list[object]] = {}  # û -> [P, Σ t_i v_i]
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
        P, t = _primitive([*A[i], b[i]])
        entry = classes.setdefault(u, [P, [F(0)] * k])
        assert entry[0] == P  # one positive ray, one primitive vector
        entry[1] = [x + t * y for x, y in zip(entry[1], v, strict=True)]  # type: ignore[arg-type]
    kinks = sorted((u, P, w) for u, (P, w) in classes.items() if any(w))  # type: ignore[misc]
    Vo = [[w[r] for _, _, w in kinks] for r in range(k)]
    Ao = [[F(x) for x in P[:m]] for _, P, _ in kinks]
    bo = [F(P[m]) for _, P, _ in kinks]
    return Vo, Ao, bo, c


def _values(x: np.ndarray) -> list[Fraction]:
    return [_fr(v) for v in x.ravel().tolist()]


def _fits(values: list[Fraction], dtype: np.dtype) -> bool:
    for v in values:
        try:
            f = np.asarray(float(v)).astype(dtype)
        except OverflowError:
            return False
        if not np.isfinite(f) or Fraction(float(f)) != v:
            return False
    return True


def check_against_oracle(net: Network, out: Network) -> None:
    Vo, Ao, bo, co = oracle_cmn(net)
    assert out.shape == (net.m, len(bo), net.k)
    expected = [[x for row in Vo for x in row], [x for row in Ao for x in row], bo, co]
    got = [_values(out.V), _values(out.A), _values(out.b), _values(out.c)]
    assert got == expected
    arrays = (out.V, out.A, out.b, out.c)
    if net.is_float and bo:  # (with no neuron the Network keeps an empty b in float64)
        dtype = np.result_type(net.V, net.A, net.b, net.c)
        if all(_fits(vals, dtype) for vals in expected):
            assert all(arr.dtype == dtype for arr in arrays)
        else:
            for arr, vals in zip(arrays, expected, strict=True):
                assert arr.dtype == (np.float64 if _fits(vals, np.float64) else object)
    for arr in arrays:
        if arr.dtype == object:
            for v in arr.ravel().tolist():
                assert type(v) is Fraction and v.denominator > 0 and math.gcd(v.numerator, v.denominator) == 1
    for row in [[*a, bb] for a, bb in zip(Ao, bo, strict=True)]:  # the oracle's rows: primitive integer vectors
        assert all(x.denominator == 1 for x in row) and math.gcd(*(int(x) for x in row)) == 1


def same_function_exactly(net: Network, out: Network) -> None:
    """ρ(out) = ρ(net) at exact rational points by the definition: for m = 1 at every breakpoint of both and
    beyond them (which decides equality), else at a few points."""
    p, q = plain(net), plain(out)
    if net.m == 1:
        assert oracle_m1_equal(p, q)
        return
    rng = np.random.default_rng(net.n)
    for _ in range(4):
        x = [Fraction(int(t), 7) for t in rng.integers(-20, 21, size=net.m)]
        assert eval_oracle(*p, x) == eval_oracle(*q, x)


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
# the primitive integer rows and the output weights, against Fractions


def _float_matrix(rng: np.random.Generator, dtype: type, shape: tuple[int, int], spread: int) -> np.ndarray:
    """Full-mantissa floats of ``dtype`` with exponents over ``spread`` binades (subnormals included), some zeros,
    no zero row."""
    info = np.finfo(dtype)
    lo, hi = int(info.minexp) - int(info.nmant), int(info.maxexp) - 1
    spread = min(spread, hi - lo - 1)
    top = int(rng.integers(lo + spread + 1, hi + 1))
    ex = rng.integers(top - spread - 1, top, size=shape)
    with np.errstate(over="ignore", under="ignore"):
        X = np.ldexp(rng.uniform(0.5, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape), ex).astype(dtype)
    X = np.where(np.isfinite(X) & (rng.random(shape) > 0.2), X, dtype(0))
    X[~X.any(axis=1), 0] = dtype(1)
    return X


@settings(max_examples=150)
@given(st.sampled_from(DTYPES), st.integers(0, 2**32 - 1), st.sampled_from([0, 3, 30, 100, 400, 2000]))
def test_primitive_rows_are_the_fraction_definition(dtype: type, seed: int, spread: int) -> None:
    rng = np.random.default_rng(seed)
    W = _float_matrix(rng, dtype, (6, 5), spread)
    if seed % 3 == 0:  # a common odd factor: rows of small odd multiples of 3·5
        W = (rng.integers(-8, 9, size=W.shape) * 15).astype(dtype) * dtype(2.0 ** int(rng.integers(-9, 9)))
        W[~W.any(axis=1), 0] = dtype(15)
    P = primitive_rows(W.astype(np.float64))
    for r in range(W.shape[0]):
        ref, _ = _primitive([Fraction(float(x)) for x in W[r].tolist()])
        got = [int(x) for x in P[r].tolist()]
        assert tuple(got) == ref
    if P.dtype == np.float64:  # integers held exactly
        assert all(float(x).is_integer() for x in P.ravel().tolist())


@settings(max_examples=150)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_divide_by_pivots_is_exact(seed: int, divisible: bool) -> None:
    rng = np.random.default_rng(seed)
    R, k = 5, 3
    piv = (rng.integers(1, 2**20, size=R) * rng.choice([-1, 1], size=R)).astype(np.float64)
    piv *= 2.0 ** rng.integers(0, 60, size=R)
    D = np.ldexp(rng.integers(-(2**20), 2**20, size=(R, k)).astype(np.float64), rng.integers(-1100, 1000, size=(R, k)))
    kappa = D * np.abs(piv)[:, None] if divisible else _float_matrix(rng, np.float64, (R, k), 60)
    kappa = np.where(np.isfinite(kappa), kappa, 1.0)
    out = divide_by_pivots(kappa, piv)
    ref = [[Fraction(float(x)) / abs(int(p)) for x in row] for row, p in zip(kappa.tolist(), piv.tolist(), strict=True)]
    assert [[_fr(x) for x in row] for row in out.tolist()] == ref
    fits = all(_fits(row, np.float64) for row in ref)
    assert out.dtype == (np.float64 if fits else object)
    obj = divide_by_pivots(float_fractions(kappa), piv.astype(object))  # the Fraction route: the same values
    assert [[_fr(x) for x in row] for row in obj.tolist()] == ref


@settings(max_examples=40)
@given(rational_networks())
def test_primitive_neuron_keeps_the_neuron_and_makes_its_row_primitive(net: Network) -> None:
    for i in range(net.n):
        v, a, b = net.neuron(i)
        if not any(a) and not b:
            continue
        v2, a2, b2 = primitive_neuron(v, a, b)
        P, t = _primitive([*a, b])
        assert (*a2, b2) == tuple(Fraction(x) for x in P) and v2 == tuple(x * t for x in v)


def test_float64_or_fractions() -> None:
    assert float64_or_fractions([F(1, 2), 3, F(-5, 8)]).dtype == np.float64
    big = float64_or_fractions([F(1, 2), 2**60 + 1, F(1, 3)])
    assert big.dtype == object and big.tolist() == [F(1, 2), F(2**60 + 1), F(1, 3)]
    assert all(type(x) is Fraction for x in big.tolist())
    assert float64_or_fractions([F(2) ** 2000]).dtype == object
    x = np.array([1.5, -2.0], dtype=np.float32)
    assert float64_or_fractions(x).dtype == np.float64 and float64_or_fractions(x).tolist() == [1.5, -2.0]


# ---------------------------------------------------------------------------------------------------------
# prune(θ, canonical=True) against the Fraction definition


@settings(max_examples=150)
@given(float_networks(max_n=30))
def test_canonical_prune_is_the_fraction_definition(net: Network) -> None:
    an = Analysis(net)
    if an.mixed:
        return
    out = prune(net, canonical=True)
    check_or_configuration(net, out)
    assert normal_form(out) == normal_form(net)
    same_function_exactly(net, out)
    if net.A.dtype != np.float64:  # float16/32 rows shift within float64's range: never Fractions in A and b
        assert out.A.dtype != object and out.b.dtype != object


@settings(max_examples=80)
@given(float_networks(max_n=30), st.sampled_from([1, 2, 3, 5]))
def test_block_storage_moves_to_wider_storage_between_blocks(net: Network, rows: int) -> None:
    """Blocks of 1–5 rows: storage widens (θ's dtype → float64 → Fractions) at any block, earlier blocks kept."""
    if Analysis(net).mixed:
        return
    with patch.object(width_mod, "_ROWS", rows):
        out = prune(net, canonical=True)
    check_or_configuration(net, out)


def test_block_storage_of_mixed_rows() -> None:
    """Ordinary rows, then a row needing float64, then one needing Python ints, then ordinary ones, in blocks of
    two: every value exact, A in Fractions."""
    rng = np.random.default_rng(2)
    n, m = 20, 3
    A = (rng.standard_normal((n, m)) / 4).astype(np.float32).astype(np.float64)
    A[6] = [2.0**-60, 1.0, 2.0**60]  # beyond float32 after the shift
    A[11] = [1e-300, 1.0, 1e300]  # beyond float64 after the shift
    net = Network(rng.standard_normal((2, n)), A, rng.standard_normal(n), [0.5, -0.25])
    with patch.object(width_mod, "_ROWS", 2):
        out = prune(net, canonical=True)
    check_against_oracle(net, out)
    assert out.A.dtype == object  # (the storage of each array: check_against_oracle)


@settings(max_examples=60)
@given(rational_networks())
def test_canonical_prune_of_rational_networks(net: Network) -> None:
    if Analysis(net).mixed:
        return
    out = prune(net, canonical=True)
    check_or_configuration(net, out)
    same_function_exactly(net, out)


def check_or_configuration(net: Network, out: Network) -> None:
    """The oracle builds θ's own configuration (S_θ, ∅); with few classes the first minimizer of docs/math/width.md
    can be another one of cost 0 (flips, e.g. m = k = 1): then ``out`` is the configuration search's network."""
    an = Analysis(net)
    if an.N > width_mod._DIRECT_MIN_CLASSES:
        check_against_oracle(net, out)
        return
    ws = width_search(an, budget=60.0)
    assert ws.best is not None and ws.kd is not None
    own = own_configuration(an).configuration
    if (ws.best.S, ws.best.P) == (own.S, own.P):
        check_against_oracle(net, out)
    else:
        neurons, c = canonical_minimal_network(ws.kd, ws.best)
        assert out.same_parameters(_assemble(neurons, c, net.m, net.k, like=net))


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


# ---------------------------------------------------------------------------------------------------------
# equal functions, identical canonical networks


def _exactly(x: np.ndarray, dtype: type) -> np.ndarray | None:
    """x (float64) in ``dtype`` when exact, else None."""
    with np.errstate(over="ignore", under="ignore"):
        y = x.astype(dtype)
    return y if bool(np.isfinite(y).all() and (y.astype(np.float64) == x).all()) else None


def _realize_again(net: Network, rng: np.random.Generator) -> Network | None:
    """Another parameter of the same function: neurons permuted, rows scaled by positive powers of two, one
    neuron split into two on one ray with the factor 3 between them, a dead and a null neuron added; None when the dtype
    cannot hold a rescaled entry exactly."""
    dtype = np.result_type(net.V, net.A, net.b, net.c).type
    V, A, b = (x.astype(np.float64) for x in (net.V, net.A, net.b))
    n, m, k = A.shape[0], A.shape[1], V.shape[0]
    cols, rows, bias = [], [], []
    for i in range(n):
        s = float(rng.choice([0.25, 0.5, 1.0, 2.0, 8.0]))
        if i == 0 and n:  # a duplicate: (v/4, w) and (v/4, 3w) realize (v, w)
            cols += [V[:, i] / 4, V[:, i] / 4]
            rows += [A[i], 3 * A[i]]
            bias += [b[i], 3 * b[i]]
            continue
        cols.append(V[:, i] / s)
        rows.append(A[i] * s)
        bias.append(b[i] * s)
    cols += [np.ones(k), np.zeros(k)]  # dead (a = 0, b < 0) and null (v = 0) neurons
    rows += [np.zeros(m), rng.standard_normal(m)]
    bias += [-1.0, 0.5]
    perm = rng.permutation(len(bias))
    V2 = _exactly(np.array(cols, dtype=np.float64).reshape(-1, k).T[:, perm], dtype)
    A2 = _exactly(np.array(rows, dtype=np.float64).reshape(-1, m)[perm], dtype)
    b2 = _exactly(np.array(bias, dtype=np.float64)[perm], dtype)
    if V2 is None or A2 is None or b2 is None:
        return None
    return Network(V2, A2, b2, net.c, m=m)


@settings(max_examples=80)
@given(float_networks(max_n=20), st.integers(0, 2**32 - 1))
def test_equal_functions_prune_to_identical_canonical_networks(net: Network, seed: int) -> None:
    if Analysis(net).mixed:
        return
    other = _realize_again(net, np.random.default_rng(seed))
    if other is None or Analysis(other).mixed:
        return
    assert normal_form(other) == normal_form(net)  # the construction above keeps the function
    one, two = prune(net, canonical=True), prune(other, canonical=True)
    assert one.same_parameters(two)
    assert [x.dtype for x in (one.V, one.A, one.b, one.c)] == [x.dtype for x in (two.V, two.A, two.b, two.c)]
    assert prune(one, canonical=True).same_parameters(one)  # idempotent
    wide = Network(*(x.astype(np.float64) for x in (net.V, net.A, net.b, net.c)), m=net.m)  # the same values
    assert prune(wide, canonical=True).same_parameters(one)


@settings(max_examples=40)
@given(float_networks(mixed=True, max_n=8), st.integers(0, 2**32 - 1))
def test_equal_mixed_functions_prune_to_identical_canonical_networks(net: Network, seed: int) -> None:
    """Through the configuration search (opposite pairs): the same parameters from any realization."""
    other = _realize_again(net, np.random.default_rng(seed))
    if other is None:
        return
    one = prune(net, canonical=True, budget=30.0)
    assert prune(other, canonical=True, budget=30.0).same_parameters(one)
    assert normal_form(one) == normal_form(net)
    for row in [[*a, bb] for a, bb in zip(one.A.tolist(), one.b.tolist(), strict=True)]:
        ints = [_fr(x) for x in row]
        assert all(x.denominator == 1 for x in ints) and math.gcd(*(int(x) for x in ints)) == 1


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_full_mantissa_float_networks_keep_their_dtype(dtype: type) -> None:
    """The design's point: a primitive row is the float row over a power of two (divided by an odd gcd), so a
    float16/float32 network's canonical network is in its own dtype, with no Fraction, unless an exponent
    leaves the dtype's range."""
    rng = np.random.default_rng(11)
    m, n, k = 12, 60, 3
    net = Network(
        (rng.standard_normal((k, n)) / 8).astype(dtype),
        (rng.standard_normal((n, m)) / 4).astype(dtype),
        (rng.standard_normal(n) / 4).astype(dtype),
        rng.standard_normal(k).astype(dtype),
    )
    out = prune(net, canonical=True)
    check_against_oracle(net, out)
    if dtype == np.float32:  # (float16's 5 exponent bits overflow on a row spanning 16 binades)
        assert all(x.dtype == dtype for x in (out.V, out.A, out.b, out.c))
    same_function_exactly(net, out)


def test_wide_exponent_spreads_go_to_exact_integers() -> None:
    """float64 rows spanning more binades than float64 can shift over (P beyond 2^1024: Python ints, A and b
    in Fractions) and output weights below float64's range (Fractions), beside ordinary rows."""
    rng = np.random.default_rng(5)
    m, n, k = 3, 16, 2
    A = rng.standard_normal((n, m))
    b = rng.standard_normal(n)
    A[2] = [1e-300, 3.0, 1e300]
    b[2] = -7.0
    A[5] = [2.0**-1074, 0.0, 1.0]  # a subnormal beside 1
    V = rng.standard_normal((k, n))
    V[:, 5] = [1e-300, -3e-290]  # tiny weights times 2^-1074: below float64
    net = Network(V, A, b, rng.standard_normal(k))
    out = prune(net, canonical=True)
    check_against_oracle(net, out)
    assert out.A.dtype == object and out.V.dtype == object
    same_function_exactly(net, out)
