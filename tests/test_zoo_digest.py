"""The zoo's batched normal-form digests (scheme relusym.nf/2) against the definition.

Oracles: ``reference_digest`` of the exact normal form (the digest's definition, from Fractions), and a
from-scratch computation of (K, M, e) neuron by neuron in Fractions that uses no relusym normal-form code.  The
stacks are rich in what exactness hinges on: ties and split duplicates, opposite pairs, cancelling kinks,
hidden flips, dead and constant neurons, float16/32/64 entries with wide exponent spreads, subnormals.  The
batched encoders are compared with the single-sequence encoders on random integers."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relusym
from digest_helpers import (
    STRUCTURED,
    dense_stack,
    expected_digest,
    stack_definition,
    structured_case,
    structured_stack,
)
from relusym import Network, normal_form
from relusym._core.digest import (
    byte_widths,
    odd_part_digits,
    reference_digest,
)
from relusym._zoo import _bytes as _zoo_bytes
from relusym._zoo._digest import stack_digests

from oracles import exact_lists, nf_data


@pytest.fixture(autouse=True)
def _numpy_path(monkeypatch):
    """This file tests the numpy path (its dense and general parts, which the compiled kernel of
    tests/test_zoo_jit.py would otherwise take first): ``RELUSYM_NO_JIT=1``."""
    monkeypatch.setenv("RELUSYM_NO_JIT", "1")


def scratch_digest(V: Any, A: Any, b: Any, c: Any) -> str:
    """(K, M, e) computed neuron by neuron in Fractions by the definition (the oracle ``nf_data``), then hashed by
    the definition of the digest."""
    K, M, e = nf_data(*exact_lists(V, A, b, c), m=np.asarray(A).shape[1])
    return reference_digest(np.asarray(A).shape[1], np.asarray(V).shape[0], list(K.items()), M, e)


# ----------------------------------------------------------------------------------------------------------
# the digests


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**STRUCTURED)
def test_batched_digests_equal_the_definition(seed, m, n, k, dtype, wide):
    V, A, b, c = structured_case(seed, m, n, k, dtype, wide)
    sd = stack_digests(V, A, b, c)
    expected = stack_definition(V, A, b, c)
    assert sd.digest == expected
    finite = [d is not None for d in expected]
    assert sd.fast[finite].all()  # every finite float network of these spreads stays vectorized
    for t in range(3, 8, 4):  # the permuted, rescaled copies: equal digests exactly when equal functions
        if expected[t] is not None and expected[t - 3] is not None:
            nets = [Network(V[i], A[i], b[i], c[i]) for i in (t, t - 3)]
            assert (sd.digest[t] == sd.digest[t - 3]) == bool(relusym.equivalent(*nets))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 4),
    n=st.integers(1, 10),
    k=st.integers(1, 3),
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    small=st.sampled_from([0, 10**6]),
)
def test_both_packings_of_ragged_blocks_equal_the_definition(seed, m, n, k, dtype, small):
    """Blocks whose widths differ between the networks of a batch are packed width by width (large blocks) or
    by masks (small ones): every block through one packing, then through the other."""
    rng = np.random.default_rng(seed)
    V, A, b, c = structured_stack(rng, 8, m, n, k, dtype, {np.float16: 5, np.float32: 30, np.float64: 60}[dtype])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_zoo_bytes, "_SMALL_BLOCK", small)
        assert stack_digests(V, A, b, c).digest == stack_definition(V, A, b, c)


def test_batched_digests_equal_a_from_scratch_oracle():
    rng = np.random.default_rng(2026)
    for m, n, k, dtype, spread in (
        (1, 4, 1, np.float32, 6),
        (2, 6, 2, np.float32, 30),
        (3, 5, 1, np.float64, 100),
        (2, 7, 3, np.float16, 4),
        (4, 3, 2, np.float64, 8),
    ):
        V, A, b, c = structured_stack(rng, 60, m, n, k, dtype, spread)
        sd = stack_digests(V, A, b, c)
        for i in range(60):
            if np.isfinite(A[i]).all() and np.isfinite(b[i]).all() and np.isfinite(V[i]).all():
                assert sd.digest[i] == scratch_digest(V[i], A[i], b[i], c[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_stacks_and_extreme_orientations(dtype):
    """The paths of the dense case (every network with the same number of classes, no padding) and of the affine
    part's neuron selection: no neuron negatively oriented, every one, a mixture; a constant neuron; c = 0."""
    rng = np.random.default_rng(11)
    B, m, n, k = 6, 3, 12, 2
    V, A, b, c = (rng.standard_normal(s) for s in ((B, k, n), (B, n, m), (B, n), (B, k)))
    A[0, :, 0] = np.abs(A[0, :, 0]) + 0.5  # λ > 0 everywhere: M = 0
    A[1, :, 0] = -np.abs(A[1, :, 0]) - 0.5  # λ < 0 everywhere: every neuron enters M
    A[2, 3] = 0.0  # a constant neuron
    c[3] = 0.0
    A[4] *= 2.0 ** rng.integers(-40, 40, size=(n, m))  # a wide spread: several limbs
    V, A, b, c = (x.astype(dtype) for x in (V, A, b, c))
    sd = stack_digests(V, A, b, c)
    assert sd.digest == stack_definition(V, A, b, c)
    assert sd.fast.all()


@pytest.mark.slow
def test_thousands_of_random_networks():
    rng = np.random.default_rng(7)
    count = 0
    for m, n, k, B, dtype, spread in (
        (2, 16, 1, 800, np.float32, 4),
        (1, 6, 1, 800, np.float32, 12),
        (3, 9, 2, 500, np.float64, 30),
        (8, 24, 1, 200, np.float32, 8),
        (4, 10, 5, 300, np.float16, 3),
        (6, 40, 12, 24, np.float32, 6),
    ):
        V, A, b, c = structured_stack(rng, B, m, n, k, dtype, spread)
        assert stack_digests(V, A, b, c).digest == stack_definition(V, A, b, c)
        count += B
    assert count >= 2500


def test_symmetries_give_equal_digests_and_other_functions_other_digests():
    rng = np.random.default_rng(3)
    base = Network(*(x[0] for x in structured_stack(rng, 1, 3, 6, 2, np.float32, 6)))
    perm, sc = rng.permutation(6), (2.0 ** rng.integers(-3, 4, 6)).astype(np.float32)
    V, A, b, c = (np.asarray(x) for x in base.to_float(np.float32))
    permuted = Network(V[:, perm], A[perm], b[perm], c)
    rescaled = Network(V / sc, A * sc[:, None], b * sc, c)
    copies = [base, permuted, rescaled]
    other = Network(base.V, base.A, base.b, np.asarray(base.c) + np.float32(1.0))
    nets = [*copies, other]
    Vs, As, bs, cs = (np.stack([np.asarray(net.to_float(np.float32)[i]) for net in nets]) for i in range(4))
    sd = stack_digests(Vs, As, bs, cs)
    assert sd.digest[0] == sd.digest[1] == sd.digest[2] == expected_digest(base)
    assert sd.digest[3] != sd.digest[0] and sd.digest[3] == expected_digest(other)


def test_extreme_exponents_integers_rationals_and_errors():
    rng = np.random.default_rng(9)
    V, A, b, c = (x.astype(np.float64) for x in structured_stack(rng, 8, 2, 4, 1, np.float32, 4))
    A[0, 0, 0], A[0, 1, 1] = 2.0**-149, 2.0**127  # the whole float32 range in one network: vectorized
    V[1, 0, 0], b[1, 2] = 2.0**-149, 2.0**120
    A[2, 0, 0], A[2, 0, 1] = 1e-300, 1e300  # 2000 bits apart: the single-network path
    A[3, 1, 0] = np.nan
    c[4, 0] = -np.inf
    A[5, 0, 0] = 0.1  # a float64 value that is not a float32 value: vectorized
    sd = stack_digests(V, A, b, c)
    assert sd.digest == stack_definition(V, A, b, c)
    assert sd.fast.tolist() == [True, True, False, False, False, True, True, True]
    assert sd.digest[3] is None and "nan" in (sd.error[3] or "").lower()
    assert sd.digest[4] is None and sd.error[4]
    # integer stacks are vectorized, exact rationals take the single-network path: the same digests
    Vi, Ai, bi, ci = (rng.integers(-3, 4, size=s) for s in ((5, 2, 4), (5, 4, 3), (5, 4), (5, 2)))
    Ai[:, 1] = 2 * Ai[:, 0]
    sdi = stack_digests(Vi, Ai, bi, ci)
    assert sdi.fast.all() and sdi.digest == stack_definition(Vi, Ai, bi, ci)
    to_q = np.vectorize(lambda x: Fraction(int(x), 3), otypes=[object])
    sdq = stack_digests(to_q(Vi), to_q(Ai), to_q(bi), to_q(ci))
    assert not sdq.fast.any() and sdq.digest == stack_definition(to_q(Vi), to_q(Ai), to_q(bi), to_q(ci))
    # a stack of one shape with n = 0 (affine networks) and one with no hyperplane at all
    z = stack_digests(np.zeros((2, 1, 0)), np.zeros((2, 0, 2)), np.zeros((2, 0)), np.array([[1.5], [-2.0]]))
    assert z.fast.all() and z.digest == stack_definition(np.zeros((2, 1, 0)), np.zeros((2, 0, 2)), np.zeros((2, 0)),
                                                   np.array([[1.5], [-2.0]]))  # fmt: skip


def test_batches_do_not_change_the_digests(monkeypatch):
    # one batch of 300 networks, then batches of a few networks each (and so other digit counts per batch)
    from relusym._zoo import _digest as zd

    rng = np.random.default_rng(12)
    V, A, b, c = structured_stack(rng, 300, 3, 8, 2, np.float32, 20)
    whole = stack_digests(V, A, b, c)
    monkeypatch.setattr(zd, "_MAX_ENTRIES", 1500)
    pieces = stack_digests(V, A, b, c)
    assert pieces.digest == whole.digest and (pieces.width == whole.width).all() and pieces.fast.all()
    assert whole.digest[:40] == stack_definition(V[:40], A[:40], b[:40], c[:40])


def test_widths_without_search_agree_with_minimal_width():
    rng = np.random.default_rng(4)
    V, A, b, c = structured_stack(rng, 40, 2, 5, 1, np.float32, 3)
    sd = stack_digests(V, A, b, c)
    checked = 0
    for i in range(40):
        if sd.width[i] >= 0:
            assert sd.width[i] == relusym.minimal_width(Network(V[i], A[i], b[i], c[i]))
            checked += 1
    assert checked >= 5


def test_stack_digest_equals_normal_form_digest():
    rng = np.random.default_rng(1)
    V, A, b, c = structured_stack(rng, 12, 3, 7, 2, np.float32, 6)
    sd = stack_digests(V, A, b, c)
    assert sd.digest == [normal_form(Network(V[i], A[i], b[i], c[i])).digest() for i in range(12)]


# ----------------------------------------------------------------------------------------------------------
# the batched encoders


def _le_bytes(values: list[int], w: int) -> np.ndarray:
    return np.array([list(abs(x).to_bytes(w, "little")) for x in values], dtype=np.uint8).reshape(len(values), w)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-(2**80), 2**80), min_size=0, max_size=20), st.integers(0, 3))
def test_byte_widths_are_the_bytes_up_to_the_last_nonzero(values, pad):
    w = max([1] + [(abs(x).bit_length() + 7) // 8 for x in values])
    mag = _le_bytes(values, w + pad)[None] if values else np.zeros((1, 0, w + pad), dtype=np.uint8)
    assert byte_widths(mag)[0].tolist() == [(abs(x).bit_length() + 7) // 8 for x in values]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.integers(0, 2**100 - 1)
        | st.sampled_from([0, 1 << 16, 1 << 33, 3 << 64])
        | st.builds(lambda o, z: o << z, st.integers(1, 2**16 - 1), st.integers(0, 127 - 16)),
        min_size=1,
        max_size=20,
    )
)
def test_odd_part_digits(values):
    J = 8
    D = np.array([[(x >> (16 * j)) & 0xFFFF for x in values] for j in range(J)], dtype=np.int64)
    s, P = odd_part_digits(D)
    for i, x in enumerate(values):
        tz = (x & -x).bit_length() - 1 if x else -1
        assert s[i] == tz
        assert sum(int(P[j, i]) << (16 * j) for j in range(J)) == (x >> tz if x else 0)


# ----------------------------------------------------------------------------------------------------------
# the table's schema


def test_resume_over_parts_of_the_old_schema_is_refused(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")

    from relusym._zoo import _run
    from relusym.zoo import SCHEMA, read_zoo_table, scan_zoo

    assert SCHEMA == "relusym.zoo/2"
    rng = np.random.default_rng(0)
    shard = tmp_path / "shard.npz"
    V, A, b, c = structured_stack(rng, 12, 2, 4, 1, np.float32, 3)
    np.savez(shard, V=V, A=A, b=b, c=c)
    out = tmp_path / "z.parquet"

    class Stop(Exception):
        pass

    def stop(index: int) -> None:
        raise Stop

    # a job of the old schema (digests of the old definition), interrupted after its first part
    monkeypatch.setattr(_run, "SCHEMA", "relusym.zoo/1")
    with pytest.raises(Stop):
        _run.run_job(shard, out, options=_run.Options(fibre=False), chunk_size=4, on_part=stop, progress=False)
    monkeypatch.undo()
    parts = out.with_name(out.name + ".parts")
    assert json.loads((parts / "job.json").read_text())["schema"] == "relusym.zoo/1"
    assert len(list(parts.glob("part-*.arrow"))) == 1
    with pytest.raises(relusym.InvalidNetworkError) as exc:
        scan_zoo(shard, out, chunk_size=4, fibre=False, resume=True, progress=False)
    msg = str(exc.value)
    assert str(parts) in msg and "without --resume" in msg and msg.count(". ") == 0 and "\n" not in msg
    assert "relusym.zoo/1" in msg and "relusym.zoo/2" in msg
    # without --resume the old parts are discarded and the job starts over
    res = scan_zoo(shard, out, chunk_size=4, fibre=False, progress=False)
    assert res.table.num_rows == 12 and not parts.exists()
    assert res.table.column("digest").to_pylist() == stack_definition(V, A, b, c)
    # a table of the old schema is refused by read_zoo_table, one sentence naming it
    old = tmp_path / "old.parquet"
    pq.write_table(res.table.replace_schema_metadata({b"schema": b"relusym.zoo/1"}), old)
    with pytest.raises(relusym.InvalidNetworkError, match=r"old\.parquet is not a relusym\.zoo/2 table"):
        read_zoo_table(old)


# ----------------------------------------------------------------------------------------------------------
# the dense float32 path (relusym/_zoo/_digest_dense.py) and its hand-over to the general path


def _dense_spy(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """Record which networks of every block the dense path took."""
    from relusym._zoo import _digest as zd

    taken: list[np.ndarray] = []
    real = zd.dense_digests

    def spy(*args: Any) -> Any:
        ok, digests = real(*args)
        taken.append(ok.copy())
        return ok, digests

    monkeypatch.setattr(zd, "dense_digests", spy)
    return taken


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 5),
    n=st.integers(1, 12),
    k=st.integers(1, 3),
    spread=st.sampled_from([0, 4, 12, 30]),
)
def test_dense_path_equals_the_definition(seed, m, n, k, spread):
    rng = np.random.default_rng(seed)
    V, A, b, c = dense_stack(rng, 12, m, n, k, spread)
    sd = stack_digests(V, A, b, c)
    assert sd.digest == stack_definition(V, A, b, c)
    assert sd.fast.all()
    from relusym._zoo import _digest as zd

    with pytest.MonkeyPatch.context() as mp:  # the general path alone: the same widths and class A
        mp.setattr(zd, "dense_digests", lambda V, *_: (np.zeros(V.shape[0], dtype=bool), []))
        general = stack_digests(V, A, b, c)
    assert general.digest == sd.digest and (general.width == sd.width).all()
    assert general.class_a is not None and sd.class_a is not None and (general.class_a == sd.class_a).all()


def test_dense_path_hands_over_what_it_cannot_take(monkeypatch):
    """A block of dense networks with one network of each kind the dense path refuses (two neurons on one
    hyperplane, an opposite pair, a dead neuron, a constant neuron, a zero first weight, two first entries that
    agree on distinct rows, a subnormal, a spread beyond an int64 or beyond float32's scalings, a float16 stack):
    the refused ones, and only they, take the general path, and every digest is the definition's."""
    taken = _dense_spy(monkeypatch)
    rng = np.random.default_rng(23)
    B, m, n, k = 12, 3, 6, 2
    V, A, b, c = dense_stack(rng, B, m, n, k, 3, ints=False)
    A[1, 4], b[1, 4] = 2 * A[1, 1], 2 * b[1, 1]  # a tie: one class of two neurons
    A[2, 5], b[2, 5] = -0.5 * A[2, 0], -0.5 * b[2, 0]  # an opposite pair
    V[3, :, 2] = 0.0  # a dead neuron
    A[4, 3] = 0.0  # a constant neuron
    A[5, 2, 0], A[5, 2, 1] = 0.0, 1.25  # λ is not the first weight
    A[6, 1, 0], A[6, 3, 0] = 0.75, 0.75  # equal first entries, different rows (1.5 vs 0.75 scaled: keys tie)
    A[6, 1, 1:], A[6, 3, 1:], b[6, 1], b[6, 3] = 1.0, 2.0, 0.5, 0.25
    A[7, 0, 1] = np.float32(2.0**-140)  # a subnormal
    b[8, 1] = np.float32(2.0**60)  # 60 binades above the row's other entries: beyond an int64
    A[8, 1] = np.float32(2.0**-10)
    c[9] = 0.0
    A[10, 2, 0], A[10, 2, 1] = np.float32(2.0**100), np.float32(2.0**-100)  # the float32 range in one row
    keep = np.ones(B, dtype=bool)
    keep[[1, 2, 3, 4, 5, 6, 7, 8, 10]] = False
    sd = stack_digests(V, A, b, c)
    assert sd.digest == stack_definition(V, A, b, c)
    assert sd.fast.all()
    assert len(taken) == 1 and taken[0].tolist() == keep.tolist()
    V16, A16, b16, c16 = (x.astype(np.float16) for x in dense_stack(rng, 6, 2, 5, 1, 2, ints=False))
    assert stack_digests(V16, A16, b16, c16).digest == stack_definition(V16, A16, b16, c16)


def test_dense_blocks_of_any_size_give_the_same_digests(monkeypatch):
    """Blocks split a stack between networks: a mixed stack (dense networks, and networks with ties, duplicate
    and opposite neurons) cut into blocks of 1, 7 and all networks gives one list of digests, the definition's."""
    from relusym._zoo import _digest as zd

    rng = np.random.default_rng(31)
    V, A, b, c = dense_stack(rng, 40, 4, 9, 2, 8)
    Vs, As, bs, cs = structured_stack(rng, 40, 4, 9, 2, np.float32, 8)
    mix = rng.random(40) < 0.3
    V[mix], A[mix], b[mix], c[mix] = Vs[mix], As[mix], bs[mix], cs[mix]
    whole = stack_digests(V, A, b, c)
    assert whole.digest == stack_definition(V, A, b, c)
    for entries in (1, 7 * 10 * 7 * 8):
        monkeypatch.setattr(zd, "_MAX_ENTRIES", entries)
        part = stack_digests(V, A, b, c)
        assert part.digest == whole.digest and (part.width == whole.width).all()
        assert (part.class_a == whole.class_a).all() and part.fast.all()


def _assert_splits(terms: list[tuple[list[int], int]], base: int, out: tuple[np.ndarray, ...]) -> None:
    """The 2-adic splits (t, bytes of |p|, p < 0, bytes used) of the sums Σ a·2^s column by column, against
    Python integers."""
    t, pb, neg, width = out
    for x in range(len(terms[0][0])):
        total = sum(a[x] << s for a, s in terms)
        tz = (total & -total).bit_length() - 1 if total else 0
        p = abs(total) >> tz
        assert t[x] == (base + tz if total else 0)
        assert bool(neg[x]) == (total < 0)
        assert width[x] == (p.bit_length() + 7) // 8
        assert int.from_bytes(pb[x].tobytes(), "little") == p


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(-(2**52) + 1, 2**52 - 1) | st.sampled_from([0, 1, -1, 2**51]), min_size=5, max_size=5),
            st.integers(0, 100),
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(-300, 300),
    st.sampled_from([2, 4096]),
)
def test_exact_sums_in_words_equal_python_integers(terms, base, columns):
    """split_words against Python integers: t, the bytes and width of the odd part, the sign; a few columns at a
    time or all at once."""
    from relusym._zoo import _ints

    arr = [(np.array(a, dtype=np.int64), s) for a, s in terms]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_ints, "_COLUMNS", columns)
        t, pb, neg, width = _ints.split_words(arr, np.full(5, base, dtype=np.int64))
    _assert_splits(terms, base, (t, pb, neg, width))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(
                st.integers(-(2**52) + 1, 2**52 - 1) | st.sampled_from([0, 1, -1, 2**51, -(2**51), 2**52 - 1]),
                min_size=7,
                max_size=7,
            ),
            st.integers(0, 72) | st.sampled_from([0, 13, 63, 64]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(-300, 300),
)
def test_exact_sums_in_128_bits_equal_python_integers(terms, base):
    """The 128-bit path of split_words (sums below 2^126: offsets up to 72, words that wrap around, a low word
    of zero, offsets of 64 and more) against Python integers, and against the word path it replaces."""
    from relusym._zoo import _ints

    arr = [(np.array(a, dtype=np.int64), s) for a, s in terms]
    bases = np.full(7, base, dtype=np.int64)
    t, pb, neg, width = _ints._split128(arr, bases)
    _assert_splits(terms, base, (t, pb, neg, width))
    wide = arr + [(np.zeros(7, dtype=np.int64), 200)]  # a zero term far up: the word path, the same sums
    t2, pb2, neg2, width2 = _ints.words_split(wide, bases)
    assert (t2 == t).all() and (neg2 == neg).all() and (width2 == width).all()
    for x in range(7):
        assert pb2[x, : width[x]].tobytes() == pb[x, : width[x]].tobytes()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**53 - 1) | st.sampled_from([0, 1, 2**52, 2**53 - 1, 255, 256]), min_size=1))
def test_bit_lengths_from_float_bits_equal_python_integers(xs):
    """bit_length (from the float64 exponent field, not np.frexp) and the power-of-two logarithm against
    int.bit_length, for int64 below 2^53; u64_bytes against the bytes of uint64 values of every size."""
    from relusym._zoo import _ints

    x = np.array(xs, dtype=np.int64)
    assert _ints.bit_length(x).tolist() == [v.bit_length() for v in xs]
    low = x & -x
    assert _ints.log2_pow2(low[x != 0]).tolist() == [(v & -v).bit_length() - 1 for v in xs if v]
    big = [(v << (v % 12)) % 2**64 for v in xs] + [2**64 - 1, 2**56 - 1, 2**56, 2**32]
    u = np.array(big, dtype=np.uint64)
    assert _ints.u64_bytes(u).tolist() == [(v.bit_length() + 7) // 8 for v in big]
    assert _ints.log2_pow2(np.array([1 << s for s in range(64)], dtype=np.uint64)).tolist() == list(range(64))
