"""The array fast paths of deep networks (relusym._deep.dyadic) give exactly the Fraction reference's answers.

Reductions, canonical forms, digests and alignments are computed twice, once through the public entry points
(which take the dyadic integer arrays wherever the entries fit) and once by the Fraction references
(``reduce_layers_reference``, ``canonicalize_reference``, ``align_layers_reference`` on plain Fraction rows), on
float16/float32/float64 and exact networks full of the awkward cases: ties, duplicates, opposite rows, zero rows,
rows dead or affine on the orthant, zero columns, subnormals, exponent spreads of 2^200 within a row, values that
are not dyadic, and networks that reduce to constants.
"""

from __future__ import annotations

import copy
import hashlib
import pickle
import random
from fractions import Fraction

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

import relusym
from relusym import MLP
from relusym._deep.canonical import Canonical, DeepNormalForm, canonicalize, canonicalize_reference
from relusym._deep.dyadic import Dyadic, dyadic_of_arrays, int_rows, order_rows, render_rows
from relusym._deep.reduce import reduce_layers, reduce_layers_reference, reduce_mlp, rows_to_mlp
from relusym._deep.rows import ArrayRows, Row, matrix_rows, rational_rows
from relusym._deep.symmetry import align_layers, align_layers_reference

DTYPES = ["float16", "float32", "float64", "exact"]

# values each dtype holds exactly, the awkward ones included (subnormals, far exponents)
PALETTE = {
    "float16": [1, -1, 2, -3, 0.5, -0.25, 1.5, 3, 5, -7, 2.0**-24, -(2.0**-20), 2.0**15, 1023],
    "float32": [1, -1, 2, -3, 0.5, -0.25, 1.5, 3, 5, -7, 2.0**-149, 2.0**-130, 2.0**100, -(2.0**-100), 0.1],
    "float64": [1, -1, 2, -3, 0.5, -0.25, 3, 5, 2.0**-1074, 2.0**-1030, 2.0**100, -(2.0**-100), 0.1, 2.0**900],
    "exact": [
        Fraction(1),
        Fraction(-1),
        Fraction(2),
        Fraction(1, 3),
        Fraction(-5, 7),
        Fraction(3, 4),
        Fraction(2) ** 100,
        -(Fraction(1, 2) ** 100),
        Fraction(2**70 + 1),
        Fraction(2**61 - 1, 2**5),
        Fraction(2**62 + 1, 8),
        Fraction(6),
    ],
}


def _value(rng: random.Random, dtype: str, dyadic: bool) -> Fraction:
    r = rng.random()
    if r < 0.25:
        return Fraction(0)
    if r < 0.6:
        return Fraction(rng.choice([-3, -2, -1, 1, 2, 3, 4, 6]))
    pal = PALETTE[dtype]
    v = Fraction(rng.choice(pal))
    while dyadic and v.denominator & (v.denominator - 1):
        v = Fraction(rng.choice(pal))
    return v


def _layers(rng: random.Random, widths: list[int], dtype: str, dyadic: bool = False) -> list[list[Row]]:
    """Augmented Fraction rows with planted structure (all values exactly representable in ``dtype``)."""
    layers: list[list[Row]] = []
    for ell in range(len(widths) - 1):
        rows = [[_value(rng, dtype, dyadic) for _ in range(widths[ell] + 1)] for _ in range(widths[ell + 1])]
        last = ell == len(widths) - 2
        for i in range(len(rows)):
            if last or len(rows) < 2:
                break
            kind = rng.random()
            j = rng.randrange(len(rows))
            if kind < 0.08 and j != i:
                rows[i] = list(rows[j])  # a duplicate (a tie)
            elif kind < 0.16 and j != i:
                rows[i] = [-v for v in rows[j]]  # opposite
            elif kind < 0.22 and j != i:
                t = Fraction(rng.choice([2, 4, 1]), rng.choice([1, 2]))
                rows[i] = [v * t for v in rows[j]]  # a positive multiple (exact in every dtype here)
            elif kind < 0.27:
                rows[i] = [Fraction(0)] * widths[ell] + [rows[i][-1]]  # constant
            elif kind < 0.31:
                rows[i] = [Fraction(0)] * (widths[ell] + 1)  # zero row
            elif kind < 0.37:
                rows[i] = [-abs(v) for v in rows[i]]  # dead on the orthant
            elif kind < 0.43:
                rows[i] = [abs(v) for v in rows[i][:-1]] + [Fraction(rng.choice([1, 2, 3]))]  # affine on it
            elif kind < 0.5 and widths[ell] > 4:
                rows[i] = rows[j][:4] + rows[i][4:]  # ties in the leading columns
        if rng.random() < 0.15 and ell >= 1:
            col = rng.randrange(widths[ell])  # a unit of the previous layer without output
            for r in rows:
                r[col] = Fraction(0)
        layers.append([[v if _holds(v, dtype) else Fraction(1) for v in r] for r in rows])
    return layers


def _holds(v: Fraction, dtype: str) -> bool:
    """Whether ``dtype`` holds v exactly."""
    if dtype == "exact":
        return True
    with np.errstate(over="ignore"):
        f = np.array([float(v)], dtype=dtype)[0]
    return bool(np.isfinite(f)) and Fraction(float(f)) == v


def _mlp(layers: list[list[Row]], dtype: str) -> MLP:
    Ws = [[r[:-1] for r in rows] for rows in layers]
    bs = [[r[-1] for r in rows] for rows in layers]
    if dtype == "exact":
        return MLP(Ws, bs)
    m = len(layers[0][0]) - 1
    arrs = []
    prev = m
    for W in Ws:
        arrs.append(np.array([[float(v) for v in r] for r in W], dtype=dtype).reshape(len(W), prev))
        prev = len(W)
    return MLP(arrs, [np.array([float(v) for v in b], dtype=dtype) for b in bs])


def _plain(net: MLP) -> list[list[Row]]:
    """The layers as plain lists of Fractions (the reference's input)."""
    return [[r + [to] for r, to in zip(matrix_rows(W), matrix_rows(b[:, None]), strict=True)] for W, b in _wb(net)]


def _wb(net: MLP) -> list[tuple[np.ndarray, np.ndarray]]:
    return list(zip(net.weights, net.biases, strict=True))


def _fix_plain(net: MLP) -> list[list[Row]]:
    return [[r[:-1] + [r[-1][0]] for r in rows] for rows in _plain(net)]  # type: ignore[index]


def _arrays(net: MLP) -> list[list[Row]]:
    return [rational_rows(W, b) for W, b in _wb(net)]


def _reference_digest(form: DeepNormalForm) -> str:
    """The canonical text of docs/math/deep.md, written out independently."""

    def q(v: Fraction) -> str:
        return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"

    text = "relusym.mlp-nf/1\n" + " ".join(map(str, form.widths)) + "\n"
    for rows in form.hidden:
        text += "".join(" ".join(map(str, r)) + "\n" for r in rows)
    text += "".join(" ".join(q(v) for v in r) + "\n" for r in form.output)
    return hashlib.sha256(text.encode()).hexdigest()


def _same_canonical(fast: Canonical, ref: Canonical) -> None:
    assert fast.form == ref.form and ref.form == fast.form
    assert fast.form.widths == ref.form.widths
    assert fast.form.hidden == ref.form.hidden and fast.form.output == ref.form.output
    assert fast.form.digest() == ref.form.digest() == _reference_digest(ref.form)
    assert fast.form.to_dict() == ref.form.to_dict()
    assert fast.order == ref.order and fast.scale == ref.scale
    back = pickle.loads(pickle.dumps(fast.form))
    assert back == fast.form and back.digest() == fast.form.digest() and copy.copy(fast.form) == ref.form


def _plant(layers: list[list[Row]], rng: random.Random, dyadic: bool) -> list[list[Row]]:
    """The image under a random per-layer permutation and positive scales (dyadic ones, or any)."""
    work = [[list(r) for r in rows] for rows in layers]
    for ell in range(len(work) - 1):
        rows, nxt = work[ell], work[ell + 1]
        for i in range(len(rows)):
            d = Fraction(2) ** rng.randint(-70, 70) * (
                1 if dyadic else Fraction(rng.choice([1, 3, 5]), rng.choice([1, 3]))
            )
            rows[i] = [v * d for v in rows[i]]
            for r in nxt:
                r[i] = r[i] / d
        order = list(range(len(rows)))
        rng.shuffle(order)
        work[ell] = [rows[i] for i in order]
        work[ell + 1] = [[r[i] for i in order] + [r[-1]] for r in nxt]
    return work


WIDTHS = [[2, 3, 3, 1], [1, 4, 2, 2], [3, 2, 3, 2, 1], [6, 5, 4, 2], [2, 1, 1, 1], [5, 7, 6, 3]]


# ----------------------------------------------------------------------------------------------------------
# reductions, canonical forms, digests


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(DTYPES), st.sampled_from(WIDTHS))
def test_reductions_and_normal_forms_equal_the_reference(seed: int, dtype: str, widths: list[int]) -> None:
    rng = random.Random(seed)
    net = _mlp(_layers(rng, widths, dtype), dtype)
    plain = _fix_plain(net)
    fast_red = reduce_layers(_arrays(net), net.m)
    ref_red = reduce_layers_reference(plain, net.m)
    assert fast_red.layers == ref_red.layers and ref_red.layers == fast_red.layers
    assert (fast_red.kept, fast_red.steps, fast_red.m) == (ref_red.kept, ref_red.steps, ref_red.m)
    _same_canonical(canonicalize(fast_red), canonicalize_reference(ref_red))
    # the public entry points
    nf = relusym.normal_form(net)
    assert nf == canonicalize_reference(ref_red).form
    assert nf.digest() == _reference_digest(canonicalize_reference(ref_red).form)
    small, red = reduce_mlp(net)
    assert red.steps == ref_red.steps
    assert small.same_parameters(rows_to_mlp(ref_red.layers, net.m))
    if not red.steps:  # nothing to do: the float arrays are kept
        assert all(x.dtype == y.dtype for x, y in zip(small.weights, net.weights, strict=True))
    assert relusym.prune(net).same_parameters(small)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(DTYPES), st.sampled_from(WIDTHS), st.booleans())
def test_planted_copies_have_one_normal_form_on_both_paths(seed: int, dtype: str, widths: list[int], dy: bool) -> None:
    rng = random.Random(seed)
    base = _layers(rng, widths, dtype)
    net = _mlp(base, dtype)
    copy_ = _mlp(_plant(_fix_plain(net), rng, dy), "exact")
    ref = canonicalize_reference(reduce_layers_reference(_fix_plain(copy_), copy_.m))
    _same_canonical(canonicalize(reduce_layers(_arrays(copy_), copy_.m)), ref)
    assert relusym.normal_form(net) == relusym.normal_form(copy_) == ref.form
    assert relusym.normal_form(net).digest() == relusym.normal_form(copy_).digest()


def test_float_networks_take_the_array_path() -> None:
    rng = np.random.default_rng(5)
    for dt in (np.float16, np.float32, np.float64):
        w = [9, 20, 20, 20, 3]
        Ws = [rng.standard_normal((w[i + 1], w[i])).astype(dt) for i in range(4)]
        bs = [rng.standard_normal(w[i + 1]).astype(dt) for i in range(4)]
        net = MLP(Ws, bs)
        can = canonicalize(reduce_layers(_arrays(net), net.m))
        assert can.form._arrays is not None  # the fast path, no Fraction per entry
        ref = canonicalize_reference(reduce_layers_reference(_fix_plain(net), net.m))
        _same_canonical(can, ref)
        small = relusym.prune(net)
        assert all(x is y or np.array_equal(x, y) for x, y in zip(small.weights, net.weights, strict=True))
        assert all(x.dtype == dt for x in small.weights)


def test_a_network_that_reduces_to_a_constant_on_both_paths() -> None:
    for dtype in DTYPES:
        layers = [
            [[Fraction(1), Fraction(0)], [Fraction(-1), Fraction(0)]],
            [[Fraction(-1), Fraction(-2), Fraction(-1)]],
            [[Fraction(4), Fraction(7)]],
        ]
        net = _mlp(layers, dtype)
        ref_red = reduce_layers_reference(_fix_plain(net), net.m)
        fast_red = reduce_layers(_arrays(net), net.m)
        assert fast_red.hidden_widths == ref_red.hidden_widths == (0, 0)
        assert fast_red.steps == ref_red.steps
        _same_canonical(canonicalize(fast_red), canonicalize_reference(ref_red))
        assert relusym.normal_form(net).widths == (1, 0, 0, 1)


def test_wide_exponent_spreads_and_subnormals_in_one_row() -> None:
    W1 = np.array([[2.0**-100, 2.0**100, 3.0], [5e-324, 1.0, -(2.0**900)], [1.0, 2.0, 3.0]])
    b1 = np.array([2.0**-1074, -1.0, 2.0**1000])
    W2 = np.array([[1.0, -(2.0**-60), 2.0**70], [3.0, 2.0**-1074, -1.0]])
    b2 = np.array([2.0**-1000, 1.0])
    W3 = np.array([[2.0**500, -3.0], [1.0, 1.0]])
    net = MLP([W1, W2, W3], [b1, b2, np.zeros(2)])
    can = canonicalize(reduce_layers(_arrays(net), net.m))
    ref = canonicalize_reference(reduce_layers_reference(_fix_plain(net), net.m))
    _same_canonical(can, ref)
    assert max(abs(v) for rows in can.form.hidden for r in rows for v in r).bit_length() > 1000


# ----------------------------------------------------------------------------------------------------------
# the alignment


def _same_alignment(a: list[list[Row]], b: list[list[Row]], pa: list[list[Row]], pb: list[list[Row]]) -> None:
    fast = align_layers(a, b)
    ref = align_layers_reference(pa, pb)
    assert fast == ref


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(DTYPES), st.sampled_from(WIDTHS), st.booleans(), st.booleans())
@example(1_198_725_157, "float64", [3, 2, 3, 2, 1], False, True)  # a folded factor beyond float64 (found by hypothesis)
def test_alignment_equals_the_reference(seed: int, dtype: str, widths: list[int], dy: bool, reduced: bool) -> None:
    rng = random.Random(seed)
    net = _mlp(_layers(rng, widths, dtype, dyadic=dy), dtype)
    planted = _mlp(_plant(_fix_plain(net), rng, dy), "exact")
    other = _mlp(_layers(rng, widths, dtype, dyadic=dy), dtype)
    for b in (planted, other, net):
        if reduced:
            ra, rb = reduce_layers(_arrays(net), net.m), reduce_layers(_arrays(b), b.m)
            pa = reduce_layers_reference(_fix_plain(net), net.m).layers
            pb = reduce_layers_reference(_fix_plain(b), b.m).layers
            _same_alignment(ra.layers, rb.layers, pa, pb)
        else:  # as find_symmetry calls it: on the raw layers (duplicates, zero rows and all)
            _same_alignment(_arrays(net), _arrays(b), _fix_plain(net), _fix_plain(b))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["float32", "float64"]), st.sampled_from(WIDTHS))
def test_planted_copies_are_equal_with_the_reference_symmetry(seed: int, dtype: str, widths: list[int]) -> None:
    rng = np.random.default_rng(seed)
    Ws = [rng.standard_normal((widths[i + 1], widths[i])).astype(dtype) for i in range(len(widths) - 1)]
    bs = [rng.standard_normal(widths[i + 1]).astype(dtype) for i in range(len(widths) - 1)]
    net = MLP(Ws, bs)
    planted = _mlp(_plant(_fix_plain(net), random.Random(seed), True), "exact")
    v = relusym.equivalent(net, planted)
    assert v.status == "equal"
    if v.certificate.method == "symmetry":
        sym = v.certificate.symmetry
        ref, _ = align_layers_reference(
            reduce_layers_reference(_fix_plain(net), net.m).layers,
            reduce_layers_reference(_fix_plain(planted), planted.m).layers,
        )
        assert sym == ref
        assert sym.apply(v.certificate.reduced1).same_parameters(v.certificate.reduced2)
    assert relusym.find_symmetry(net, planted) == align_layers_reference(_fix_plain(net), _fix_plain(planted))[0]


def test_the_flip_and_lone_unit_cases_match_the_reference() -> None:
    # layer-2 units that match only after a flip; a layer-2 unit ≥ 0 without a partner
    a = [
        [[Fraction(1), Fraction(0)], [Fraction(-1), Fraction(1)]],
        [[Fraction(1), Fraction(2), Fraction(-1)], [Fraction(2), Fraction(1), Fraction(0)]],
        [[Fraction(1), Fraction(1), Fraction(0)]],
    ]
    b = [
        [[Fraction(1), Fraction(0)], [Fraction(-1), Fraction(1)]],
        [[Fraction(-1), Fraction(-2), Fraction(1)], [Fraction(2), Fraction(1), Fraction(0)]],
        [[Fraction(1), Fraction(1), Fraction(0)]],
    ]
    c = [
        [[Fraction(1), Fraction(0)], [Fraction(-1), Fraction(1)]],
        [[Fraction(1), Fraction(3), Fraction(1)], [Fraction(2), Fraction(1), Fraction(0)]],
        [[Fraction(1), Fraction(1), Fraction(0)]],
    ]
    for x, y in ((a, b), (a, c), (c, a), (b, a)):
        nx, ny = _mlp(x, "float64"), _mlp(y, "float64")
        _same_alignment(_arrays(nx), _arrays(ny), _fix_plain(nx), _fix_plain(ny))


# ----------------------------------------------------------------------------------------------------------
# the pieces


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-(2**61), 2**61), st.integers(0, 300)), min_size=1, max_size=40), st.integers(1, 8)
)
def test_digest_text_of_integer_rows(entries: list[tuple[int, int]], c: int) -> None:
    n = max(1, len(entries) // c)
    entries = (entries * c)[: n * c]
    q = np.array([v for v, _ in entries], dtype=np.int64)
    k = np.array([s for _, s in entries], dtype=np.int64)
    odd = q != 0
    tz = np.zeros_like(q)
    while True:  # make the mantissas odd
        even = odd & (q % 2 == 0)
        if not even.any():
            break
        q = np.where(even, q // 2, q)
        tz += even
    k = np.where(odd, k + tz, 0)
    P = Dyadic(q.reshape(n, c), k.reshape(n, c))
    rows = int_rows(P)
    assert render_rows(P) == "".join(" ".join(map(str, r)) + "\n" for r in rows).encode()
    assert order_rows(P) == sorted(range(n), key=rows.__getitem__)


def test_array_rows_behave_as_lists() -> None:
    W = np.array([[1.5, 2.0], [3.0, -4.0]], dtype=np.float32)
    b = np.array([0.25, 1.0], dtype=np.float32)
    plain = [[Fraction(3, 2), Fraction(2), Fraction(1, 4)], [Fraction(3), Fraction(-4), Fraction(1)]]
    r = rational_rows(W, b)
    assert isinstance(r, ArrayRows) and isinstance(r, list) and len(r) == 2 and r.untouched
    assert r == plain and plain == r and not r.untouched
    assert list(r) == plain and r[1] == plain[1] and r[-1][-1] == 1 and [x for x in r] == plain
    assert copy.deepcopy(rational_rows(W, b)) == plain and type(copy.copy(rational_rows(W, b))) is list
    assert pickle.loads(pickle.dumps(rational_rows(W, b))) == plain
    assert rational_rows(W, b) + [] == plain and bool(rational_rows(W[:0], b[:0])) is False
    D = dyadic_of_arrays(W, b)
    assert D is not None and D.q.tolist() == [[3, 1, 1], [3, -1, 1]] and D.k.tolist() == [[-1, 1, -2], [0, 2, 0]]
    assert dyadic_of_arrays(np.array([[Fraction(1, 3)]], dtype=object), np.array([Fraction(0)], dtype=object)) is None
