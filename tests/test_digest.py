"""The normal-form digest: fixed values that must never change, and the vectorized integer computation
against the definition (SHA-256 of the canonical JSON of (m, k, K, M, e), built here from Fractions)."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import DATA
from relusym import Network, equivalent, flip, normal_form, prune
from relusym.errors import BudgetExceededError

RECORDED = json.loads((DATA / "digests.json").read_text())["networks"]


def _decode(d: dict[str, Any]) -> Any:
    shape = tuple(d["shape"])
    if d["dtype"] == "rational":
        out = np.empty(shape, dtype=object)
        out.ravel()[:] = [Fraction(x) for x in d["values"]]
        return out
    return np.array([float.fromhex(x) for x in d["values"]], dtype=np.float64).astype(d["dtype"]).reshape(shape)


def recorded_network(rec: dict[str, Any]) -> Network:
    return Network(_decode(rec["V"]), _decode(rec["A"]), _decode(rec["b"]), _decode(rec["c"]), m=rec["m"])


@pytest.mark.parametrize("rec", RECORDED, ids=[r["name"] for r in RECORDED])
def test_recorded_digests_never_change(rec):
    # E1–E16 and seeded float16/32/64 and rational networks (ties, opposite pairs, cancelling kinks, wide
    # exponent spreads, 30-digit rationals), digests recorded before the integer rewrite
    assert normal_form(recorded_network(rec)).digest() == rec["digest"]


def test_e1_to_e16_are_all_recorded(spec):
    names = {r["name"] for r in RECORDED}
    assert set(spec["networks"]) <= names
    for name, ex in spec["networks"].items():
        rec = next(r for r in RECORDED if r["name"] == name)
        assert recorded_network(rec).same_parameters(Network.from_dict(ex["network"]))


# ----------------------------------------------------------------------------------------------------------
# the definition, from scratch in Fractions (independent of relusym's normal-form code)


def _fs(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def definition_digest(V: Any, A: Any, b: Any, c: Any) -> str:
    """SHA-256 of json.dumps({m, k, kinks, M, e}, sort_keys, compact) computed neuron by neuron in Fractions."""
    Vf = [[Fraction(x) for x in row] for row in np.asarray(V, dtype=object).tolist()]
    Af = [[Fraction(x) for x in row] for row in np.asarray(A, dtype=object).tolist()]
    bf = [Fraction(x) for x in np.asarray(b, dtype=object).tolist()]
    cf = [Fraction(x) for x in np.asarray(c, dtype=object).tolist()]
    k, n, m = len(Vf), len(bf), np.asarray(A).shape[1]
    kinks: dict[tuple[Fraction, ...], list[Fraction]] = {}
    M = [[Fraction(0)] * m for _ in range(k)]
    e = list(cf)
    for i in range(n):
        v = [Vf[r][i] for r in range(k)]
        if not any(v):
            continue
        a = Af[i]
        if not any(a):
            if bf[i] > 0:
                e = [x + bf[i] * y for x, y in zip(e, v, strict=True)]
            continue
        lam = next(x for x in a if x != 0)
        u = tuple(x / lam for x in [*a, bf[i]])
        kap = kinks.setdefault(u, [Fraction(0)] * k)
        for r in range(k):
            kap[r] += abs(lam) * v[r]
        if lam < 0:
            for r in range(k):
                for j in range(m):
                    M[r][j] += v[r] * a[j]
                e[r] += bf[i] * v[r]
    payload = {
        "m": m,
        "k": k,
        "kinks": [
            {"hyperplane": [_fs(x) for x in u], "kink": [_fs(x) for x in kap]}
            for u, kap in sorted(kinks.items())
            if any(kap)
        ],
        "M": [[_fs(x) for x in row] for row in M],
        "e": [_fs(x) for x in e],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@st.composite
def float_networks(draw):
    dtype = draw(st.sampled_from([np.float16, np.float32, np.float64]))
    m, n, k = draw(st.integers(1, 4)), draw(st.integers(0, 7)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread = {np.float16: 6, np.float32: 60, np.float64: 400}[dtype]
    A = rng.standard_normal((n, m)) * 2.0 ** rng.integers(-spread, spread + 1, size=(n, m))
    b = rng.standard_normal(n) * 2.0 ** rng.integers(-spread, spread + 1, size=n)
    V = rng.standard_normal((k, n)) * 2.0 ** rng.integers(-spread // 2, spread // 2 + 1, size=(k, n))
    c = rng.standard_normal(k)
    A[rng.random((n, m)) < 0.2] = 0.0
    for i in range(1, n):
        how = draw(st.sampled_from(["none", "tie", "opposite", "cancel", "dead", "constant"]))
        j = int(rng.integers(0, i))
        s = 2.0 ** int(rng.integers(-3, 4))
        if how == "tie":
            A[i], b[i] = A[j] * s, b[j] * s
        elif how == "opposite":
            A[i], b[i] = -A[j] * s, -b[j] * s
        elif how == "cancel":  # the same hyperplane with the opposite kink: κ sums to 0
            A[i], b[i], V[:, i] = A[j] * s, b[j] * s, -V[:, j] / s
        elif how == "dead":
            V[:, i] = 0.0
        elif how == "constant":
            A[i] = 0.0
    with np.errstate(over="ignore"):
        arrays = [x.astype(dtype) for x in (V, A, b, c)]
    assume(all(np.isfinite(x).all() for x in arrays))
    return arrays


@settings(max_examples=150, deadline=None)
@given(float_networks())
def test_vectorized_digest_equals_the_definition_on_float_networks(arrays):
    V, A, b, c = arrays
    net = Network(V, A, b, c, m=A.shape[1])
    assert normal_form(net).digest() == definition_digest(V, A, b, c)
    # the same function stored as Fractions takes the other path and gives the same bytes
    assert normal_form(net.to_fractions()).digest() == normal_form(net).digest()


rationals = st.fractions(max_denominator=10**6).filter(lambda q: abs(q) < 10**6) | st.integers(-4, 4).map(Fraction)


@st.composite
def rational_networks(draw, big=False):
    m, n, k = draw(st.integers(1, 3)), draw(st.integers(0, 5)), draw(st.integers(1, 2))
    if big:  # hundreds of digits, and magnitudes far outside the float range (10^±400)
        digits = draw(st.integers(20, 300))
        q = st.builds(
            lambda p, r, e: Fraction(p, r) * Fraction(10) ** e,
            st.integers(-(10**digits), 10**digits),
            st.integers(1, 10**digits),
            st.sampled_from([0, 0, 400, -400, 30, -30]),
        )
    else:
        q = rationals
    A = [[draw(q) for _ in range(m)] for _ in range(n)]
    b = [draw(q) for _ in range(n)]
    V = [[draw(q) for _ in range(n)] for _ in range(k)]
    c = [draw(q) for _ in range(k)]
    for i in range(1, n):
        if draw(st.booleans()):
            s = draw(st.sampled_from([Fraction(1), Fraction(-1), Fraction(3, 7), Fraction(-5, 2)]))
            A[i] = [x * s for x in A[i - 1]]
            b[i] = b[i - 1] * s
    return V, A, b, c, m


@settings(max_examples=100, deadline=None)
@given(rational_networks())
def test_digest_equals_the_definition_on_rational_networks(data):
    V, A, b, c, m = data
    net = Network(V, A, b, c, m=m)
    assert normal_form(net).digest() == definition_digest(
        np.array(V, dtype=object).reshape(len(V), len(b)), np.array(A, dtype=object).reshape(len(b), m), b, c
    )


@settings(max_examples=40, deadline=None)
@given(rational_networks(big=True), st.integers(0, 3))
def test_huge_rationals_always_get_an_answer(data, which):
    # rationals with up to hundreds of digits: every entry point answers, with a certificate where promised
    V, A, b, c, m = data
    net = Network(V, A, b, c, m=m)
    nf = normal_form(net)
    assert len(nf.digest()) == 64 and isinstance(hash(nf), int) and isinstance(hash(net), int)
    flipped = flip(net, range(net.n))  # flips change the function unless Σ_T v_i a_iᵀ = 0; they must not crash
    assert equivalent(net, flipped).equivalent == (normal_form(flipped) == nf)
    other = Network(V, A, b, [x + Fraction(1, 10**40 + which) for x in c], m=m)
    v = equivalent(net, other)
    assert not v and v.counterexample is not None
    assert net.evaluate_exact(v.counterexample.x) != other.evaluate_exact(v.counterexample.x)
    if net.n:
        moved = Network(
            [[x * 3 for x in row] for row in V] if which % 2 else V,
            [[x / 3 for x in row] for row in A] if which % 2 else A,
            [x / 3 for x in b] if which % 2 else b,
            c,
            m=m,
        )
        assert equivalent(net, moved)
        A2 = [list(row) for row in A]
        A2[0][0] = A2[0][0] + Fraction(1, 10**30 + 7)
        wrong = Network(V, A2, b, c, m=m)
        w = equivalent(net, wrong)
        if not w:
            assert net.evaluate_exact(w.counterexample.x) != wrong.evaluate_exact(w.counterexample.x)
    try:
        small = prune(net, budget=2.0)
    except BudgetExceededError:  # the documented answer when the width search does not finish
        return
    assert equivalent(net, small, certificate=False)
