"""The compiled kernel of the zoo's digests (numba, ``relusym[fast]``) against the definition and the numpy path.

Oracles: ``reference_digest`` of the exact normal form (the digest's definition, from Fractions) for every
network, and the numpy path (``RELUSYM_NO_JIT=1``) for whole stacks, widths and flags included.  The stacks are
those of the numpy path's tests (ties, opposite pairs, cancelling kinks, dead and constant neurons, float16/32/64,
wide exponent spreads, subnormals) and random float32/float64 ones that the kernel takes.  Skipped without numba.
The kernel is compiled once per machine (numba's cache); a test process loads it in about a second."""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from digest_helpers import STRUCTURED, dense_stack, stack_definition, structured_case, structured_stack  # noqa: E402
from relusym._zoo import _digest_jit  # noqa: E402
from relusym._zoo._digest import StackDigests, stack_digests  # noqa: E402
from relusym._zoo._digest_jit import jit_available, jit_digests  # noqa: E402


@pytest.fixture(autouse=True)
def _kernel_loaded() -> None:
    """The kernel loaded (a process loads it only after 2^24 weights otherwise)."""
    assert jit_available()


def test_a_process_loads_the_kernel_after_its_first_weights(monkeypatch):
    """Before the kernel is loaded, stacks go by numpy until 2^24 weights are done (small jobs do not pay numba's
    import); then by the kernel."""
    monkeypatch.setattr(_digest_jit, "_STATE", {})
    monkeypatch.setattr(_digest_jit, "JIT_WORK", 5000)
    V, A, b, c = dense_stack(np.random.default_rng(2), 10, 3, 8, 2, 4)  # 10·(16 + 24 + 8 + 2) = 500 weights
    assert [jit_digests(V, A, b, c) is None for _ in range(11)] == [True] * 9 + [False] * 2
    assert stack_digests(V, A, b, c).digest == stack_definition(V, A, b, c)


def _numpy(V: Any, A: Any, b: Any, c: Any) -> StackDigests:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RELUSYM_NO_JIT", "1")
        assert not jit_available()
        return stack_digests(V, A, b, c)


def _same(x: StackDigests, y: StackDigests) -> None:
    """Equal digests and errors; y vectorized only where x is (the kernel takes some networks the numpy path
    leaves to the single-network path), and equal widths and genericity flags where both are."""
    assert x.digest == y.digest and x.error == y.error
    assert not (y.fast & ~x.fast).any()
    assert x.class_a is not None and y.class_a is not None
    assert (x.width == y.width)[y.fast].all() and (x.class_a == y.class_a)[y.fast].all()


def _one_class_each(V: Any, A: Any, b: Any, c: Any) -> np.ndarray:
    """Per network, whether it is finite and every neuron a kink class of its own (a_i ≠ 0, v_i ≠ 0, no two rows
    (a_i, b_i) proportional), in Fractions: the networks the kernel may take."""
    out = []
    for t in range(A.shape[0]):
        if not all(np.isfinite(np.asarray(x[t], dtype=np.float64)).all() for x in (V, A, b, c)):
            out.append(False)
            continue
        rows = set()
        ok = bool((np.asarray(V[t]) != 0).any(axis=0).all())
        for i in range(A.shape[1]):
            w = [Fraction(float(x)) for x in A[t, i]] + [Fraction(float(b[t, i]))]
            lam = next((x for x in w[:-1] if x != 0), None)
            ok = ok and lam is not None
            rows.add(tuple(x / lam for x in w) if lam else None)
        out.append(ok and len(rows) == A.shape[1])
    return np.array(out, dtype=bool)


def _check(V: Any, A: Any, b: Any, c: Any) -> np.ndarray:
    """The kernel's digests are the definition's, the stack's digests equal the numpy path's, it takes only
    networks of one neuron per class; returns the mask of the networks it took."""
    assert jit_available()
    got = jit_digests(V, A, b, c)
    assert got is not None
    done, digests = got
    expected = stack_definition(V, A, b, c)
    assert digests == [d for d, t in zip(expected, done.tolist(), strict=True) if t]
    sd = stack_digests(V, A, b, c)
    assert sd.digest == expected
    _same(sd, _numpy(V, A, b, c))
    assert not (done & ~_one_class_each(V, A, b, c)).any()
    return done


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**STRUCTURED)
def test_structured_stacks_equal_the_definition_and_the_numpy_path(seed, m, n, k, dtype, wide):
    _check(*structured_case(seed, m, n, k, dtype, wide))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 5),
    n=st.integers(1, 12),
    k=st.integers(1, 3),
    spread=st.sampled_from([0, 4, 12, 30, 60]),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_dense_stacks_are_taken_and_equal_the_definition(seed, m, n, k, spread, dtype):
    """Dense stacks (few dead or constant neurons, few neurons on one hyperplane), float64 ones with full 53-bit
    mantissas too: the kernel takes every float32 network of one neuron per class whose rows fit 63 bits."""
    rng = np.random.default_rng(seed)
    V, A, b, c = (x.astype(dtype) for x in dense_stack(rng, 10, m, n, k, spread))
    if dtype == np.float64:  # full mantissas, the same zeros
        V, A, b, c = (x * (1 + rng.random(x.shape) * 2.0**-30) for x in (V, A, b, c))
    done = _check(V, A, b, c)
    if spread <= 12 and dtype == np.float32:  # rows within 63 bits, sums within the words
        assert (done == _one_class_each(V, A, b, c)).all()


def test_rows_and_runs_of_more_than_64_entries_equal_the_definition():
    """The byte writer packs sign bits up to 64 of a run at a time: rows of the hyperplane block of 64, 65 and 129
    entries (a run of exactly 64, one just past it, two and a bit), of M of 63, 64 and 128, κ in one run of 140,
    float32 and float64 (p's of more than 8 bytes): every digest the definition's."""
    rng = np.random.default_rng(17)
    for m, n, k, dtype in (
        (63, 3, 2, np.float32),
        (64, 2, 1, np.float64),
        (128, 3, 1, np.float32),
        (2, 70, 2, np.float32),
    ):
        V, A, b, c = (x.astype(dtype) for x in dense_stack(rng, 3, m, n, k, 2, ints=False))
        if dtype == np.float64:
            V, A, b, c = (x * (1 + rng.random(x.shape) * 2.0**-30) for x in (V, A, b, c))
        done = _check(V, A, b, c)
        assert done.sum() >= 2  # the writer ran on most


def test_rows_whose_keys_tie_are_ordered_by_their_whole_bytes():
    """The kernel orders the rows by the first 4 bytes of their first magnitude, then each run of equal keys by
    the whole rows: first entries 1 + j·2^32 (equal low 4 bytes, so one run of up to 12 rows, in shuffled order,
    settled by a later byte), some with equal first entries (settled by a later entry), at n = 12 (ranks by
    counting) and n = 200 (np.argsort); every digest the definition's, every network taken."""
    rng = np.random.default_rng(23)
    for n in (12, 200):
        B, m, k = 4, 3, 2
        A = rng.integers(-50, 50, size=(B, n, m)).astype(np.float64)
        first = np.where(np.arange(n) % 3 == 0, 1.0 + (np.arange(n) % 12) * 2.0**32, 1.0 + np.arange(n) * 2.0**33)
        first[1::5] = first[0]  # equal first entries: settled by the second entry
        A[:, :, 0] = rng.permuted(np.broadcast_to(first, (B, n)), axis=1) * rng.choice([-1.0, 1.0], size=(B, n))
        A[:, :, 1] = np.arange(n) + 2.0  # rows stay distinct, a row's gcd 1
        b = rng.integers(-9, 9, size=(B, n)).astype(np.float64)
        V = rng.integers(1, 9, size=(B, k, n)) * rng.choice([-1.0, 1.0], size=(B, k, n))
        c = rng.integers(-9, 9, size=(B, k)).astype(np.float64)
        done = _check(V, A, b, c)
        assert done.all()


def test_rows_with_common_odd_factors_equal_the_definition():
    """Rows whose odd parts share a factor in every entry (each row's gcd goes past its first and last nonzero
    entries, and the division by it is a multiplication by its inverse modulo 2^64): common factors 3..45 times
    powers of two, zeros before λ (λ not in the first column) and between, a zero bias, λ < 0; float32 and
    float64 (odd parts of 53 bits): every digest the definition's, most networks taken."""
    rng = np.random.default_rng(36)
    for dtype, top in ((np.float32, 2**10), (np.float64, 2**40)):
        B, m, n, k = 6, 6, 9, 2
        g = rng.choice([3, 5, 9, 15, 21, 45], size=(B, n, 1))
        W = g * (2 * rng.integers(1, top, size=(B, n, m + 1)) + 1) * 2.0 ** rng.integers(-8, 8, size=(B, n, m + 1))
        W *= rng.choice([-1.0, 1.0], size=W.shape)
        W[:, ::2, 0] = 0.0  # λ in the second column
        W[:, 1::3, 3] = 0.0
        W[:, ::4, m] = 0.0
        A, b = W[..., :m].astype(dtype), W[..., m].astype(dtype)
        V = rng.standard_normal((B, k, n)).astype(dtype)
        c = rng.standard_normal((B, k)).astype(dtype)
        assert _check(V, A, b, c).sum() >= B - 1


def _float64_rows(A: np.ndarray, b: np.ndarray) -> int:
    """The widest span of bits (lowest set bit to highest) of a row (a_i, b_i) of float64 values."""
    W = np.concatenate([A, b[..., None]], axis=-1).astype(np.float64)
    m, e = np.frexp(W)
    nz = W != 0
    low = np.where(nz, e - 53, 10**6)
    return int(np.where(nz, e, -(10**6)).max(axis=-1).__sub__(low.min(axis=-1)).max())


def test_the_kernel_flags_what_it_does_not_take():
    """One network of each kind the kernel leaves (one class of two neurons, an opposite pair, a dead neuron, a
    constant neuron, a row beyond 63 bits, a sum of M beyond its words, NaN) and of kinds it takes (equal first
    entries on distinct rows, equal magnitudes with other signs, subnormals, λ not the first weight, zeros in
    a and b): exactly the former are flagged, every digest is the definition's."""
    rng = np.random.default_rng(5)
    B, m, n, k = 13, 3, 5, 2
    V, A, b, c = (x.astype(np.float64) for x in dense_stack(rng, B, m, n, k, 3, ints=False))
    A[1, 4], b[1, 4] = 2 * A[1, 1], 2 * b[1, 1]  # one class of two neurons
    A[2, 3], b[2, 3] = -0.5 * A[2, 0], -0.5 * b[2, 0]  # an opposite pair
    V[3, :, 2] = 0.0  # a dead neuron
    A[4, 3] = 0.0  # a constant neuron
    b[5, 1], A[5, 1] = 2.0**60, 2.0**-10  # a row of 71 bits
    V[6, :, 0], A[6, 0], V[6, :, 1], A[6, 1] = 2.0**500, -(2.0**400), 2.0**-500, -(2.0**-400)  # M over 1,800 bits
    A[7, 2, 1] = np.nan
    flagged = [1, 2, 3, 4, 5, 6, 7]
    A[8, 1, 0], A[8, 3, 0] = 0.75, 0.75  # equal first entries, other rows: ordered by the whole row
    A[8, 1, 1:], A[8, 3, 1:], b[8, 1], b[8, 3] = 1.0, 2.0, 0.5, 0.25
    A[9, 1], b[9, 1], A[9, 2], b[9, 2] = (1.0, 2.0, 3.0), 5.0, (1.0, -2.0, 3.0), 5.0  # magnitudes equal, signs not
    A[10, 0], b[10, 0] = np.array([3.0, 2.0, 5.0]) * 2.0**-1074, 7 * 2.0**-1074  # a row of subnormals
    A[11, 2, 0], A[11, 2, 1] = 0.0, -1.25  # λ is the second weight, negative
    b[12] = 0.0
    assert _float64_rows(A[5], b[5]) > 63
    done = _check(V, A, b, c)
    assert np.nonzero(~done)[0].tolist() == flagged
    V16, A16, b16, c16 = (x.astype(np.float16) for x in dense_stack(rng, 6, 2, 5, 1, 2, ints=False))
    assert _check(V16, A16, b16, c16).all()


def test_buffers_of_any_size_and_other_data_give_the_same_digests(monkeypatch):
    """A buffer smaller than one network (grown) or than a few (several kernel calls) changes nothing; integer
    and object stacks are not the kernel's (None) and stay correct; ``RELUSYM_NO_JIT=1`` turns the kernel off."""
    rng = np.random.default_rng(9)
    V, A, b, c = dense_stack(rng, 30, 4, 6, 2, 8)
    whole = stack_digests(V, A, b, c)
    for size in (16, 2000):
        monkeypatch.setattr(_digest_jit, "_BUFFER", size)
        _same(stack_digests(V, A, b, c), whole)
    assert whole.digest == stack_definition(V, A, b, c)
    Vi, Ai, bi, ci = (np.round(x * 8).astype(np.int64) for x in (V, A, b, c))
    assert jit_digests(Vi, Ai, bi, ci) is None
    assert stack_digests(Vi, Ai, bi, ci).digest == stack_definition(Vi, Ai, bi, ci)
    monkeypatch.setenv("RELUSYM_NO_JIT", "1")
    assert jit_digests(V, A, b, c) is None


@pytest.mark.slow
def test_thousands_of_random_networks_through_the_kernel():
    """About 3,000 dense networks (float32, and float64 with full mantissas) the kernel takes, and structured
    ones it mostly leaves: every digest the definition's."""
    rng = np.random.default_rng(11)
    taken = 0
    for m, n, k, B, dtype, spread in (
        (2, 16, 1, 800, np.float32, 4),
        (1, 6, 1, 800, np.float32, 12),
        (8, 24, 3, 400, np.float64, 0),
        (16, 32, 4, 200, np.float32, 8),
    ):
        V, A, b, c = (x.astype(dtype) for x in dense_stack(rng, B, m, n, k, spread))
        if dtype == np.float64:
            V, A, b, c = (x * (1 + rng.random(x.shape) * 2.0**-30) for x in (V, A, b, c))
        taken += int(_check(V, A, b, c).sum())
    _check(*structured_stack(rng, 400, 3, 9, 2, np.float32, 20))
    assert taken >= 1500


def _split_of(total: int, base: int) -> tuple[int, int, int, int]:
    """The 2-adic split of 2^base · total by Python integers: (t, sign, bytes of the odd part, the odd part)."""
    if total == 0:
        return 0, 0, 0, 0
    odd, tz = abs(total), 0
    while odd % 2 == 0:
        odd, tz = odd // 2, tz + 1
    return base + tz, int(total < 0), (odd.bit_length() + 7) // 8, odd


@functools.cache
def _sums128_runner() -> Any:
    """The 128-bit sums through the kernel's own helpers, compiled once for the whole test (not per example)."""
    import numba

    from relusym._zoo._jit_bytes import madd128
    from relusym._zoo._jit_sums import _split128

    @numba.njit
    def run(xs: Any, ys: Any, ss: Any, negs: Any, base: int, out: Any) -> None:
        hi, lo = 0, 0
        for u in range(xs.size):
            hi, lo = madd128(hi, lo, xs[u], ys[u], ss[u], negs[u])
        _split128(hi, lo, base, 0, out[0], out[1], out[2], out[3])

    return run


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(
        st.tuples(st.integers(0, 2**53 - 1), st.integers(0, 2**53 - 1), st.integers(0, 116), st.booleans()),
        max_size=12,
    ),
    base=st.integers(-300, 300),
    odd=st.booleans(),
)
def test_sums_in_128_bits_equal_python_integers(terms, base, odd):
    """The 128-bit sums of M and e (``madd128``: products of two integers below 2^53 shifted and added or
    subtracted in LLVM's i128, ``_split128``: carries between the two words, negative sums, sums in the high word
    alone, powers of two, zeros at any shift) equal Python's integers, split as the words' path splits them."""
    run = _sums128_runner()
    terms = terms + [(1, 1, 0, False)] if not terms else terms
    if odd:  # odd factors, as the kernel's odd parts
        terms = [(x | 1, y | 1, s, g) for x, y, s, g in terms]
    # each product below 2^116 (12 of them below 2^120, as the kernel's), a zero product at any shift
    terms = [(x, y, min(s, 116 - (x * y).bit_length()) if x and y else s + 200, g) for x, y, s, g in terms]
    xs, ys, ss = (np.array([t[r] for t in terms], dtype=np.int64) for r in range(3))
    negs = np.array([int(t[3]) for t in terms], dtype=np.int64)
    out = (np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros((4, 1), np.int64))
    run(xs, ys, ss, negs, base, out)
    total = sum((-1 if g else 1) * (x * y << s) for x, y, s, g in terms if x and y)
    t, sign, size, odd_part = _split_of(total, base)
    assert (int(out[0][0]), int(out[1][0]), int(out[2][0])) == (t, sign, size)
    assert sum(int(w) << (32 * q) for q, w in enumerate(out[3][:, 0])) == odd_part
    assert all(0 <= int(w) < 2**32 for w in out[3][:, 0])


@functools.cache
def _passes_runner() -> Any:
    """The limb sums' 128-bit accumulation (``_add128``, one shift a pass over all entries: the loop runs in
    vector lanes) and the branch-free split of every entry (``_split_all``, c added to the last), compiled once."""
    import numba

    from relusym._zoo._jit_sums import _add128, _split_all

    @numba.njit
    def run(zs: Any, shifts: Any, c: Any, base: int, out: Any) -> None:
        E = zs.shape[1]
        hi, lo = np.zeros(E, np.int64), np.zeros(E, np.int64)
        for q in range(shifts.size):
            sh = shifts[q]
            for e in range(E):
                hi[e], lo[e] = _add128(hi[e], lo[e], zs[q, e], sh)
        _split_all((hi, lo), c, out, 1, E, base)

    return run


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    E=st.integers(1, 40),
    shifts=st.lists(st.integers(0, 72), min_size=1, max_size=4),
    c=st.tuples(st.integers(0, 2**53 - 1), st.integers(0, 60), st.booleans()),
    base=st.integers(-300, 300),
)
def test_passes_of_shifted_sums_and_their_split_equal_python_integers(data, E, shifts, c, base):
    """Entries summed pass by pass (each pass one shift for all entries, signed limb sums below 2^53: negative
    entries, carries, high words alone, zeros) and split without branches equal Python's integers, split as the
    128-bit path splits them."""
    zs = np.array(
        [data.draw(st.lists(st.integers(-(2**53) + 1, 2**53 - 1), min_size=E, max_size=E)) for _ in shifts],
        dtype=np.int64,
    )
    if data.draw(st.booleans()):  # many zero entries and passes that cancel
        zs[:, ::2] = 0
        zs[-1, 1::3] = -zs[0, 1::3] if len(shifts) > 1 and shifts[-1] == shifts[0] else zs[-1, 1::3]
    co, cs, cn = (np.array([x], dtype=np.int64) for x in (c[0], base + c[1], c[2]))  # c_j at or above base
    out = (np.zeros(E, np.int64), np.zeros(E, np.int64), np.zeros(E, np.int64), np.zeros((4, E), np.int64))
    _passes_runner()(zs, np.array(shifts, dtype=np.int64), (co, cs, cn), base, out)
    for e in range(E):
        total = sum(int(zs[q, e]) << sh for q, sh in enumerate(shifts))
        if e == E - 1 and c[0]:
            total += (-1 if c[2] else 1) * (c[0] << c[1])
        t, sign, size, odd_part = _split_of(total, base)
        assert (int(out[0][e]), int(out[1][e]), int(out[2][e])) == (t, sign, size), e
        assert sum(int(w) << (32 * q) for q, w in enumerate(out[3][:, e])) == odd_part


@functools.cache
def _sha_runner() -> Any:
    """The kernel's C SHA-256 call over many slices, compiled once for the whole test (not per example)."""
    import numba

    from relusym._zoo._jit_bytes import sha256_into

    @numba.njit
    def run(fns: Any, src: Any, starts: Any, lens: Any, dst: Any) -> None:
        for r in range(starts.size):
            sha256_into(fns, src, starts[r], lens[r], dst, r)

    return run


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1))
def test_the_kernels_sha256_is_hashlibs(sizes, seed):
    """The C SHA-256 the kernel calls (OpenSSL's ``SHA256_Init``/``Update``/``Final`` by their addresses,
    ``sha256_into``) on random byte strings at any offset (block boundaries, empty ones included) gives
    hashlib's digests."""
    import hashlib

    from relusym._zoo._digest_jit import _openssl_sha256

    fns = _openssl_sha256()
    if not fns[0]:
        pytest.skip("no C SHA-256 here: the kernel's digests are taken by hashlib")
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 256, sum(sizes) + 64, dtype=np.uint8)
    starts = np.array([int(rng.integers(0, 64)) + sum(sizes[:r]) for r in range(len(sizes))], dtype=np.int64)
    lens = np.array(sizes, dtype=np.int64)
    dst = np.zeros((len(sizes), 32), dtype=np.uint8)
    _sha_runner()(fns, src, starts, lens, dst)
    for r, (s0, n) in enumerate(zip(starts.tolist(), sizes, strict=True)):
        assert dst[r].tobytes() == hashlib.sha256(src[s0 : s0 + n].tobytes()).digest()


def test_digests_with_and_without_the_c_sha256_are_equal(monkeypatch):
    """Without the C SHA-256 (``RELUSYM_NO_CSHA=1``, or no libcrypto found) the kernel's bytes are hashed by
    hashlib from Python: the same digests and flags, also with a buffer smaller than a few networks."""
    rng = np.random.default_rng(21)
    V, A, b, c = (x.astype(np.float32) for x in dense_stack(rng, 40, 3, 7, 2, 6))
    V[3, :, 1] = 0.0  # a dead neuron: flagged either way
    with_c = jit_digests(V, A, b, c)
    monkeypatch.setattr(_digest_jit, "_STATE", {**_digest_jit._STATE})
    monkeypatch.setenv("RELUSYM_NO_CSHA", "1")
    _digest_jit._STATE.pop("sha", None)
    assert _digest_jit.sha_address() == (0, 0, 0)
    for size in (1 << 24, 3000):
        monkeypatch.setattr(_digest_jit, "_BUFFER", size)
        without = jit_digests(V, A, b, c)
        assert with_c is not None and without is not None
        assert (with_c[0] == without[0]).all() and with_c[1] == without[1]
        assert with_c[1] == [d for d, t in zip(stack_definition(V, A, b, c), with_c[0].tolist(), strict=True) if t]
    assert not with_c[0][3]


@functools.cache
def _lanes_runner() -> Any:
    """The kernel's 16-lane SHA-256 on messages copied to 64-byte aligned places and padded in place, as the
    kernel does (compiled once for the whole test)."""
    import numba

    from relusym._zoo._jit_sha import LANES, hash_lanes, lane_work, pad

    @numba.njit
    def run(src: Any, starts: Any, lens: Any, buf: Any, dst: Any, group: int) -> None:
        work = lane_work()
        lanes = work[0]
        N = lens.size
        i = 0
        while i < N:
            count = min(group, LANES, N - i)
            pos = 64 * (i % 3)  # a few offsets of the first lane
            for lane in range(count):
                size = lens[i + lane]
                for q in range(size):
                    buf[pos + q] = src[starts[i + lane] + q]
                lanes[0, lane], lanes[1, lane], lanes[2, lane] = pos, pad(buf, pos, size), i + lane
                pos += 64 * lanes[1, lane]
            hash_lanes(buf, count, work, dst)
            i += count

    return run


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5000) | st.sampled_from([0, 1, 55, 56, 63, 64, 65, 119, 120, 128]), min_size=1,
                   max_size=40),
    group=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_the_kernels_own_sha256_in_lanes_is_hashlibs(sizes, group, seed):
    """The kernel's SHA-256 of up to 16 messages at once (:mod:`relusym._zoo._jit_sha`: lanes of 32-bit vectors,
    messages of different block counts, lanes left empty) gives hashlib's digests, at every padding boundary."""
    import hashlib

    rng = np.random.default_rng(seed)
    src = rng.integers(0, 256, sum(sizes) + 1, dtype=np.uint8)
    starts = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
    buf = np.zeros(16 * 5200 + 256, dtype=np.uint8)
    dst = np.zeros((len(sizes), 32), dtype=np.uint8)
    _lanes_runner()(src, starts, np.array(sizes, dtype=np.int64), buf, dst, group)
    for r, (s0, n) in enumerate(zip(starts.tolist(), sizes, strict=True)):
        assert dst[r].tobytes() == hashlib.sha256(src[s0 : s0 + n].tobytes()).digest()


def test_digests_by_lanes_by_openssl_and_by_hashlib_are_equal(monkeypatch):
    """The kernel's digests are the same whichever SHA-256 takes them (its own 16 lanes, OpenSSL's one network at
    a time, hashlib from Python), with flagged networks among them, with buffers that fill up after a few
    networks (the lanes hashed early, the rest in a later call) and with one too small for a single network (grown
    by the caller), and equal the definition's."""
    rng = np.random.default_rng(33)
    V, A, b, c = (x.astype(np.float32) for x in dense_stack(rng, 70, 3, 9, 2, 6))
    for i in (0, 17, 18, 40, 69):
        V[i, :, 2] = 0.0  # dead neurons: flagged
    want = stack_definition(V, A, b, c)
    monkeypatch.setattr(_digest_jit, "_STATE", {**_digest_jit._STATE})
    ways = {"lanes": (1, 0, 0), "openssl": _digest_jit._openssl_sha256(), "hashlib": (0, 0, 0)}
    for name, sha in ways.items():
        if name == "openssl" and not sha[0]:
            continue
        _digest_jit._STATE["sha"] = sha
        for size in (1 << 24, 5000, 1200, 400):  # 400: smaller than one network (about 500 bytes): grown
            monkeypatch.setattr(_digest_jit, "_BUFFER", size)
            monkeypatch.setattr(_digest_jit._LOCAL, "buffer", None, raising=False)
            got = jit_digests(V, A, b, c)
            assert got is not None, name
            assert not got[0][[0, 17, 18, 40, 69]].any() and got[0].sum() == 65, name
            assert got[1] == [d for d, t in zip(want, got[0].tolist(), strict=True) if t], (name, size)
            assert _digest_jit._LOCAL.buffer.size >= (size if size > 400 else 500)  # grown when too small


def test_the_lanes_are_chosen_by_the_processor_and_the_environment(monkeypatch):
    """16 lanes on x86-64 with AVX-512 F and VL; ``RELUSYM_NO_LANES`` keeps OpenSSL, ``RELUSYM_NO_CSHA`` hashlib."""
    import platform

    from llvmlite import binding

    features = binding.get_host_cpu_features()
    here = (
        platform.machine().lower() in ("x86_64", "amd64")
        and bool(features.get("avx512f", False))
        and bool(features.get("avx512vl", False))
    )
    monkeypatch.setattr(_digest_jit, "_STATE", {**_digest_jit._STATE})
    _digest_jit._STATE.pop("sha", None)
    assert (_digest_jit.sha_address() == (1, 0, 0)) == here
    for var in ("RELUSYM_NO_LANES", "RELUSYM_NO_CSHA"):
        monkeypatch.setenv(var, "1")
        _digest_jit._STATE.pop("sha", None)
        assert _digest_jit.sha_address() != (1, 0, 0)
        monkeypatch.delenv(var)
    monkeypatch.setenv("RELUSYM_NO_CSHA", "1")
    _digest_jit._STATE.pop("sha", None)
    assert _digest_jit.sha_address() == (0, 0, 0)


@functools.cache
def _gcd_runner() -> Any:
    """The rows' gcd step over many x, compiled once for the whole test (not per example)."""
    import numba

    from relusym._zoo._jit_bytes import gcd_with

    @numba.njit
    def run(g: int, xs: Any) -> Any:
        return np.array([gcd_with(g, x) for x in xs])

    return run


@settings(max_examples=300, deadline=None)
@given(g=st.integers(0, 2**26).map(lambda x: 2 * x + 1), x=st.integers(0, 2**53 - 1))
def test_row_gcd_steps_equal_math_gcd(g, x):
    """gcd(g, x) by one remainder and the binary gcd (``gcd_with``, the rows' gcd beyond their first two
    entries) equals math.gcd, for odd g and any x ≥ 0 (0 and multiples of g included)."""
    import math

    xs = np.array([x, 0, g, 3 * g, x * g % 2**53, x | 1], dtype=np.int64)
    assert _gcd_runner()(g, xs).tolist() == [math.gcd(g, int(v)) for v in xs.tolist()]


@pytest.mark.parametrize("dtype,wide", [(np.float32, True), (np.float32, False), (np.float64, False)])
def test_sums_by_blas_equal_the_definition(dtype, wide):
    """Stacks large enough for the sums of M and e by BLAS (k·S·(m + 1) ≥ ``_GEMM`` products per limb pair: one
    dgemm for every limb pair and all of M's rows) and small ones (the compiled loops), float64 with full
    mantissas and wide spreads too (more limbs), float32 with sums within 120 bits (the limb sums in one 128-bit
    integer, ``_limb_sums128``) and beyond (32-bit words): every digest the definition's."""
    from relusym._zoo._jit_sums import _GEMM

    rng = np.random.default_rng(31 if dtype == np.float32 else 37)
    for m, n, k, spread in ((16, 48, 4, 0), (12, 64, 3, 12), (2, 6, 1, 4)):
        V, A, b, c = (x.astype(dtype) for x in dense_stack(rng, 6, m, n, k, spread))
        if dtype == np.float64:
            V, A, b, c = (x * (1 + rng.random(x.shape) * 2.0**-30) for x in (V, A, b, c))
        elif wide:  # v spread over 2^±45: the float32 sums span more than 120 bits, past their 128-bit paths
            V = (V * 2.0 ** rng.integers(-45, 46, size=V.shape)).astype(dtype)
        assert (k * n * (m + 1) >= 2 * _GEMM) == (m > 2)  # about half the neurons are negative
        assert _check(V, A, b, c).any()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sv=st.integers(0, 40), sw=st.integers(0, 18), sc=st.integers(0, 120))
def test_float32_sums_at_the_edges_of_their_paths(seed, sv, sw, sc):
    """float32 stacks whose sums of M and e span from a few bits to past the float32 path's bounds (``_F32_SPAN``,
    ``_WIDE``: v spread over 2^±sv, (a, b) over 2^±sw, c scaled down by up to 2^−120, whole networks near 2^−60):
    the int64 sums of the cut products, the 128-bit and the words' paths all give the definition's digests."""
    rng = np.random.default_rng(seed)
    m, n, k = int(rng.integers(1, 6)), int(rng.integers(1, 40)), int(rng.integers(1, 3))
    V, A, b, c = dense_stack(rng, 4, m, n, k, sw)
    V = (V * 2.0 ** rng.integers(-sv, sv + 1, size=V.shape)).astype(np.float32)
    c = (c * 2.0 ** -float(rng.integers(0, sc + 1))).astype(np.float32)
    if seed % 3 == 0:  # the whole network tiny: products below float32's smallest normal, exact in float64
        V, A, b, c = (x * np.float32(2.0**-60) for x in (V, A, b, c))
    _check(V, A, b, c)


def test_flat_falls_back_to_reference_counts_without_numbas_private_flag(monkeypatch):
    """``flat`` compiles without numba's reference counts through numba's private ``_nrt`` option; a numba
    without it gets the ordinary compiled function (same results), not an error at the kernel's first call."""
    from relusym._zoo import _jit_bytes

    def total(x: Any) -> int:
        s = 0
        for v in x:
            s += v
        return s

    data = np.arange(10, dtype=np.int64)
    assert _jit_bytes.flat(total)(data) == 45
    monkeypatch.setattr(_jit_bytes, "_NRT_FLAG", False)
    assert _jit_bytes.flat(total)(data) == 45


def test_the_kernels_caches_are_keyed_by_all_its_files():
    """numba keeps a cached function while its own file is unchanged; the kernel's functions include helpers from
    its other files, so each one's cache is keyed by the times and sizes of all four (a change to any of them
    recompiles the kernel instead of loading stale code)."""
    import os

    from relusym._zoo import _jit_bytes, _jit_kernel, _jit_sha, _jit_sums

    stamp = _jit_bytes._STAMP
    names = ["_jit_bytes.py", "_jit_sums.py", "_jit_sha.py", "_jit_kernel.py"]
    assert [x[0] for x in stamp] == names
    here = os.path.dirname(_jit_bytes.__file__)
    assert [x[1:] for x in stamp] == [
        (os.stat(os.path.join(here, x)).st_mtime, os.stat(os.path.join(here, x)).st_size) for x in names
    ]
    for f in (_jit_kernel.stack_bytes, _jit_kernel._rows, _jit_sums.affine, _jit_sha.hash_lanes, _jit_sha.pad):
        cache_file = getattr(getattr(f, "_cache", None), "_cache_file", None)
        if cache_file is None or not hasattr(cache_file, "_source_stamp"):
            pytest.skip("this numba keeps its cache stamps elsewhere: each function keyed by its own file")
        assert cache_file._source_stamp == stamp


def _versions() -> dict[str, int]:
    """How many versions (argument types) numba holds of each compiled entry point of a zoo job."""
    import sys

    return {
        f"{mod}.{name}": len(getattr(sys.modules[mod], name).signatures)
        for mod, name in (
            ("relusym._zoo._jit_kernel", "stack_bytes"),
            ("relusym._zoo._jit_probe", "probe_values"),
            ("relusym._zoo._jit_near", "cell_keys"),
        )
        if mod in sys.modules
    }


def test_the_kernels_loaded_before_a_job_are_the_ones_it_runs(tmp_path):
    """The kernels a client loads before its pool forks (``_load_kernels``, then the near-duplicate sweep's) are
    the versions a job's tasks call: a task of a stored ``.npz`` shard gets its large members memory-mapped
    (read-only) and its small ones copied (writable), which numba types apart; every input goes to the kernels
    read-only, so no task loads a version of its own (each worker did, about 0.1 s, on its first task)."""
    from relusym._zoo import _near, _planning
    from relusym._zoo._digest_jit import readonly
    from relusym.zoo import scan_zoo

    _planning.load_kernels()
    assert _near.sweep_kernels() is not None
    before = _versions()
    assert set(before) == {
        "relusym._zoo._jit_kernel.stack_bytes",
        "relusym._zoo._jit_probe.probe_values",
        "relusym._zoo._jit_near.cell_keys",
    }
    rng = np.random.default_rng(5)
    B = 1200  # A: 1200 × 64 × 8 float32, 2.4 MB (mapped); c: 4.8 kB (copied)
    V, A, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((B, 1, 64), (B, 64, 8), (B, 64), (B, 1)))
    np.savez(tmp_path / "s.npz", V=V, A=A, b=b, c=c)
    res = scan_zoo(tmp_path / "s.npz", tmp_path / "z.parquet", chunk_size=B, fibre=False, progress=False)
    assert _versions() == before
    assert res.table.column("digest").to_pylist()[:3] == stack_digests(V[:3], A[:3], b[:3], c[:3]).digest
    x = np.ones(3)
    assert readonly(x) is not x and not readonly(x).flags.writeable and x.flags.writeable
    assert readonly(readonly(x)).base is x
