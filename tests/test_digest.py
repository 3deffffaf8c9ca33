"""The normal-form digest (scheme relusym.nf/2): recorded values that must never change, and the vectorized
integer computation against the definition, rebuilt here from scratch in Fractions (the normal form neuron by
neuron, and the bytes from the definition's text), and against relusym._core.digest.reference_digest."""

from __future__ import annotations

import hashlib
import json
import math
import struct
from fractions import Fraction
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import DATA
from relusym import Network, Symmetry, equivalent, flip, normal_form, prune
from relusym._core import normal_form as _normal_form
from relusym._core.digest import reference_digest
from relusym.errors import BudgetExceededError

from oracles import exact_lists, nf_data

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
    # exponent spreads, 30-digit rationals): the values recorded for scheme relusym.nf/2, and the definition
    net = recorded_network(rec)
    assert normal_form(net).digest() == rec["digest"]
    assert definition_digest(net.V, net.A, net.b, net.c) == rec["digest"]
    assert normal_form(net.to_fractions()).digest() == rec["digest"]


def test_e1_to_e16_are_all_recorded(spec):
    names = {r["name"] for r in RECORDED}
    assert set(spec["networks"]) <= names
    for name, ex in spec["networks"].items():
        rec = next(r for r in RECORDED if r["name"] == name)
        assert recorded_network(rec).same_parameters(Network.from_dict(ex["network"]))


# ----------------------------------------------------------------------------------------------------------
# the definition, from scratch in Fractions (independent of relusym's normal-form and digest code)


def exact_normal_form(V: Any, A: Any, b: Any, c: Any) -> tuple[int, int, dict, list, list]:
    """(m, k, {û: κ_û}, M, e) by the definition, neuron by neuron in Fractions (the oracle ``nf_data``)."""
    K, M, e = nf_data(*exact_lists(V, A, b, c), m=np.asarray(A).shape[1])
    return np.asarray(A).shape[1], np.asarray(V).shape[0], K, M, e


def _int_block(xs: list[int]) -> bytes:
    # u32(w) ‖ |x_i| in w bytes little-endian ‖ signs packed eight to a byte, least significant bit first
    w = max([1] + [(abs(x).bit_length() + 7) // 8 for x in xs])
    signs = bytearray((len(xs) + 7) // 8)
    for i, x in enumerate(xs):
        if x < 0:
            signs[i // 8] |= 1 << (i % 8)
    return struct.pack("<I", w) + b"".join(abs(x).to_bytes(w, "little") for x in xs) + bytes(signs)


def _split(q: Fraction) -> tuple[int, int, int]:
    # q = 2^t · p / r with p, r odd
    p, r, t = q.numerator, q.denominator, 0
    if p == 0:
        return 0, 0, 1
    while p % 2 == 0:
        p, t = p // 2, t + 1
    while r % 2 == 0:
        r, t = r // 2, t - 1
    return t, p, r


def _rational_block(qs: list[Fraction]) -> bytes:
    parts = [_split(q) for q in qs]
    return b"".join(_int_block([s[i] for s in parts]) for i in range(3))


def definition_bytes(m: int, k: int, kinks: dict, M: list, e: list) -> bytes:
    rows = []
    for u, kap in kinks.items():
        d = math.lcm(*[x.denominator for x in u])
        ints = [int(x * d) for x in u]
        g = math.gcd(*ints)
        rows.append(([x // g for x in ints], list(kap)))
    w = max([1] + [(abs(x).bit_length() + 7) // 8 for r, _ in rows for x in r])
    rows.sort(key=lambda r: b"".join(abs(x).to_bytes(w, "little") for x in r[0]) + bytes(int(x < 0) for x in r[0]))
    return (
        b"relusym.nf/2\n"
        + struct.pack("<QQQ", m, k, len(rows))
        + _int_block([x for r, _ in rows for x in r])
        + _rational_block([x for _, kap in rows for x in kap])
        + _rational_block([x for row in M for x in row])
        + _rational_block(list(e))
    )


def definition_digest(V: Any, A: Any, b: Any, c: Any) -> str:
    """The digest of the network (V, A, b, c) by the definition, and the same through reference_digest."""
    m, k, kinks, M, e = exact_normal_form(V, A, b, c)
    d = hashlib.sha256(definition_bytes(m, k, kinks, M, e)).hexdigest()
    assert reference_digest(m, k, list(kinks.items()), M, e) == d
    return d


def test_definition_by_hand():
    # E1: σ(x) + 2σ(1 − x): classes û = (1, 0) with κ = 1 and û = (1, −1) with κ = 2; M = (−2), e = 2
    net = Network([[1, 2]], [[1], [-1]], [0, 1])
    blk = struct.pack("<I", 1)
    expected = (
        b"relusym.nf/2\n"
        + struct.pack("<QQQ", 1, 1, 2)
        + blk + bytes([1, 0, 1, 1]) + bytes([0b1000])  # ŵ rows (1, 0) and (1, −1), ordered by their bytes
        + blk + bytes([0, 1]) + b"\0" + blk + bytes([1, 1]) + b"\0" + blk + bytes([1, 1]) + b"\0"  # κ = 1, 2
        + blk + bytes([1]) + b"\0" + blk + bytes([1]) + b"\1" + blk + bytes([1]) + b"\0"  # M = −2 = 2^1 · (−1)
        + blk + bytes([1]) + b"\0" + blk + bytes([1]) + b"\0" + blk + bytes([1]) + b"\0"  # e = 2 = 2^1 · 1
    )  # fmt: skip
    nf = normal_form(net)
    assert nf.M == ((Fraction(-2),),) and nf.e == (Fraction(2),)
    assert nf.digest() == hashlib.sha256(expected).hexdigest() == definition_digest(net.V, net.A, net.b, net.c)


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
    tiny, huge = {np.float16: (6e-8, 6e4), np.float32: (1e-38, 1e38), np.float64: (5e-324, 1e300)}[dtype]
    for i in range(1, n):
        how = draw(
            st.sampled_from(["none", "tie", "opposite", "cancel", "dead", "constant", "zero", "spread", "integers"])
        )
        j = int(rng.integers(0, i))
        s = 2.0 ** int(rng.integers(-3, 4))
        if how == "spread":  # the smallest and the largest magnitudes side by side (subnormals included)
            A[i, 0], b[i] = tiny * int(rng.integers(1, 9)) * rng.choice([-1, 1]), huge * rng.choice([-1, 1])
        elif how == "integers":  # a common odd factor: the primitive vector divides it out
            A[i], b[i] = 3.0 * rng.integers(-4, 5, size=m), 9.0
        elif how == "zero":
            A[i], b[i] = 0.0, 0.0
        elif how == "tie":
            A[i], b[i] = A[j] * s, b[j] * s
        elif how == "opposite":
            A[i], b[i] = -A[j] * s, -b[j] * s
        elif how == "cancel":  # the same hyperplane with the opposite kink: κ sums to 0
            A[i], b[i], V[:, i] = A[j] * s, b[j] * s, -V[:, j] / s
        elif how == "dead":
            V[:, i] = 0.0
        elif how == "constant":
            A[i] = 0.0
    with np.errstate(over="ignore", under="ignore"):
        arrays = [x.astype(dtype) for x in (V, A, b, c)]
    assume(all(np.isfinite(x).all() for x in arrays))
    return arrays


@settings(max_examples=150, deadline=None)
@given(float_networks(), st.booleans())
def test_vectorized_digest_equals_the_definition_on_float_networks(arrays, threaded):
    V, A, b, c = arrays
    net = Network(V, A, b, c, m=A.shape[1])
    nf = normal_form(net)
    # large networks are encoded by two threads (the affine part in a worker, which then hashes the hyperplane
    # block as the caller packs it): forced here on the small ones too
    with mock.patch.object(_normal_form, "_THREADED_ENTRIES", 0 if threaded else 2**62):
        assert nf.digest() == definition_digest(V, A, b, c)
    # byte for byte, and the digest is the hash of those bytes (hashed while they are built, in another thread)
    assert nf.digest_bytes() == definition_bytes(*exact_normal_form(V, A, b, c))
    assert hashlib.sha256(nf.digest_bytes()).hexdigest() == nf.digest()
    # the same function stored as Fractions takes the other path and gives the same bytes
    assert normal_form(net.to_fractions()).digest() == nf.digest()


@settings(max_examples=60, deadline=None)
@given(float_networks(), st.integers(0, 2**31 - 1))
def test_digest_is_invariant_under_the_symmetries_and_flips(arrays, seed):
    V, A, b, c = arrays
    net = Network(V, A, b, c, m=A.shape[1])
    d = normal_form(net).digest()
    h = Symmetry.random(net.n, seed, dyadic=True, spread=3)  # permutation and power-of-two scales
    with np.errstate(over="ignore"):  # a scaled entry beyond the dtype's range is kept exactly
        moved = h.act(net)
    assert normal_form(moved).digest() == d
    # a pair of neurons on one hyperplane with opposite outputs adds Σ_T v_i a_iᵀ = 0: flipping it keeps ρ
    if net.n and np.any(A[0] != 0) and np.any(V[:, 0] != 0):
        pair = Network(
            np.concatenate([V, V[:, :1], -V[:, :1]], axis=1),
            np.concatenate([A, A[:1], A[:1]]),
            np.concatenate([b, b[:1], b[:1]]),
            c,
            m=A.shape[1],
        )
        assert normal_form(pair).digest() == d
        flipped = flip(pair, [net.n, net.n + 1])
        assert equivalent(pair, flipped) and normal_form(flipped).digest() == d


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_rows_that_tie_on_their_leading_entries(dtype):
    # the encoder orders the rows by their first two entries and computes whole only the rows that tie on
    # them: many rows across chunks whose leading entries are 0 or equal, equal magnitudes with other signs,
    # and (float64) rows of 57 to 63 bits, written in 8 bytes an entry; threaded and not, against the definition
    rng = np.random.default_rng(11)
    n, m = 420, 4
    A = rng.integers(-6, 7, size=(n, m)).astype(np.float64)
    A[:150, :2] = 0.0  # ties on both keys
    A[150:220, 0] = 3.0  # ties on the first key
    A[220:260] = A[160:200] * np.array([1.0, 1.0, -1.0, 1.0])  # equal magnitudes, other signs
    A[260:300] = A[160:200] * 4.0  # the same classes again (classes are merged before the encoder)
    if dtype == np.float64:  # odd 53-bit mantissas spread over 10 bits: rows of up to 63 bits
        A[300:] = (rng.integers(2**52, 2**53, size=(n - 300, m)) | 1) * 2.0 ** rng.integers(-5, 6, size=(n - 300, m))
    A[np.all(A == 0, axis=1), m - 1] = 1.0
    b = rng.integers(-3, 4, size=n).astype(np.float64)
    V = rng.standard_normal((2, n))
    arrays = [x.astype(dtype) for x in (V, A, b, rng.standard_normal(2))]
    net = Network(*arrays, m=m)
    want = definition_digest(*arrays)
    for entries in (0, 2**62):
        with mock.patch.object(_normal_form, "_THREADED_ENTRIES", entries):
            assert normal_form(net).digest() == want


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_many_rows_ties_and_opposites_across_chunks(dtype):
    # several hundred classes (the encoder works in chunks of rows), ties, opposite neurons and equal magnitude
    # rows with different signs ((1, 2) and (1, −2)), against the definition
    rng = np.random.default_rng(7)
    n, m = 300, 3
    A = rng.standard_normal((n, m))
    b = rng.standard_normal(n)
    A[:40], b[:40] = rng.integers(-3, 4, size=(40, m)), rng.integers(-3, 4, size=40)
    A[40:80], b[40:80] = -A[:40] * 2, -b[:40] * 2
    A[80:100], b[80:100] = A[:20] * np.array([1, -1, 1]), -b[:20]
    A[np.all(A == 0, axis=1), 0] = 1.0
    V = rng.standard_normal((2, n))
    V[:, 100:110] = -V[:, 40:50] * 2  # some cancel: κ = 0 for those classes where the halves match
    tiny, huge = {np.float16: (6e-8, 6e4), np.float32: (1e-38, 1e38), np.float64: (5e-324, 1e300)}[dtype]
    A[200:203, 0], b[200:203] = tiny, huge  # a few rows wider than 64 bits among the others
    with np.errstate(under="ignore"):
        arrays = [x.astype(dtype) for x in (V, A, b, rng.standard_normal(2))]
    net = Network(*arrays, m=m)
    assert normal_form(net).digest() == definition_digest(*arrays)


rationals = st.fractions(max_denominator=10**6).filter(lambda q: abs(q) < 10**6) | st.integers(-4, 4).map(Fraction)
digits30 = st.builds(Fraction, st.integers(-(10**30), 10**30), st.integers(1, 10**30))


@st.composite
def rational_networks(draw, big=False, digits30=False):
    m, n, k = draw(st.integers(1, 3)), draw(st.integers(0, 5)), draw(st.integers(1, 2))
    if digits30:  # 30-digit numerators and denominators
        q = globals()["digits30"] | rationals
    elif big:  # hundreds of digits, and magnitudes far outside the float range (10^±400)
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
@given(rational_networks() | rational_networks(digits30=True))
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


def test_the_normal_form_on_a_domain_hashes_its_json_form():
    # the documented exception: a normal form on a domain hashes the canonical JSON of (m, k, K, M, e, domain)
    from relusym import Box

    net = Network([[1, 2]], [[1], [-1]], [0, 1])
    nf = normal_form(net, domain=Box([-1], [2]))
    text = nf.digest_bytes()
    assert json.loads(text)["domain"]["type"] == "box" and json.loads(text)["kinks"]
    assert hashlib.sha256(text).hexdigest() == nf.digest() != normal_form(net).digest()


@pytest.mark.slow
@pytest.mark.parametrize("sub_entries", [None, 64])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_exact_digit_product_over_several_blocks(dtype, sub_entries, monkeypatch):
    # M's exact product: more inner terms than one block (8192), wide exponent spreads, against Fractions; and
    # with BLAS calls on a few rows at a time (sub-blocks summed in float64: exact below 2^53)
    from relusym._exact import mantissas as _numbers
    from relusym._exact.mantissas import digits_to_ints, exact_matmul_digits, normalize_digits

    if sub_entries:
        monkeypatch.setattr(_numbers, "_SUB_ENTRIES", sub_entries)

    rng = np.random.default_rng(3)
    n = 9000
    spread = {np.float16: 4, np.float32: 30, np.float64: 200}[dtype]
    X = rng.standard_normal((2, n)) * 2.0 ** rng.integers(-spread, spread + 1, size=(2, n))
    Y = rng.standard_normal((n, 3)) * 2.0 ** rng.integers(-spread, spread + 1, size=(n, 3))
    X[:, ::7] = 0.0
    with np.errstate(under="ignore", over="ignore"):
        X, Y = X.astype(dtype), Y.astype(dtype)
    X[~np.isfinite(X)], Y[~np.isfinite(Y)] = 1, -1
    rows = rng.permutation(n)
    D, ex, ey = exact_matmul_digits(X, Y, rows)
    got = digits_to_ints(*normalize_digits(D))
    Xf = [[Fraction(float(x)) for x in row] for row in X.tolist()]
    Yf = [[Fraction(float(y)) for y in Y[i].tolist()] for i in rows.tolist()]
    for r in range(2):
        for c in range(3):
            exact = sum(Xf[r][i] * Yf[i][c] for i in range(n))
            assert Fraction(got[r * 3 + c]) * Fraction(2) ** int(ex[r] + ey[c]) == exact
