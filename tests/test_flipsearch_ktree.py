"""The generalized-birthday search of relusym._fibre.flipsearch against independent oracles: its joins against
brute-force pairs, its word packing against Python integers, its block split against scipy's connected
components, and the flip sets it finds on float32 networks of a thousand neurons against Fraction arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relusym import fiber
from relusym._base.deadline import Deadline
from relusym._fibre import flipsearch as fs
from relusym._fibre.flipsearch._exact import wrap
from relusym._fibre.flipsearch._ktree import _KTree as _KTree
from relusym._fibre.flipsearch._ktree import _KTreeConfig as _KTreeConfig
from relusym._fibre.flipsearch._ktree import _LimbValues as _LimbValues
from relusym._fibre.flipsearch._ktree import _sorted_join as _sorted_join
from relusym._fibre.flipsearch._ktree import _WordValues as _WordValues
from relusym._fibre.flipsearch._ktree import ktree_search
from relusym._fibre.flipsearch._limbs import pack, pack_words, words_key
from relusym._fibre.flipsearch._search import components

from strategies import float32_network


def _fr(x: object) -> Fraction:
    return Fraction(float(x))  # type: ignore[arg-type]


def exact_zero(V: np.ndarray, A: np.ndarray, T: tuple[int, ...]) -> bool:
    """Σ_{i∈T} v_i a_iᵀ == 0 with Fractions of the float weights."""
    k, m = V.shape[0], A.shape[1]
    return all(sum(_fr(V[j, i]) * _fr(A[i, col]) for i in T) == 0 for j in range(k) for col in range(m))


# --------------------------------------------------------------------------------------------
# joins
# --------------------------------------------------------------------------------------------


def _pairs(ku: np.ndarray, kv: np.ndarray) -> list[tuple[int, int]]:
    return sorted((i, j) for i in range(len(ku)) for j in range(len(kv)) if ku[i] == kv[j])


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 60),
    st.integers(0, 60),
    st.sampled_from([1, 3, 6, 12, 30, 62]),
    st.integers(0, 2**32 - 1),
)
def test_join_lists_exactly_the_equal_pairs(nu: int, nv: int, width: int, seed: int) -> None:
    """Narrow keys (a table of runs) and wide ones (hashed, then compared) give every equal pair once."""
    rng = np.random.default_rng(seed)
    top = 1 << width
    ku = rng.integers(0, min(top, 1 + 2 * nu), nu, dtype=np.int64) * (top // min(top, 1 + 2 * nu))
    kv = rng.integers(0, min(top, 1 + 2 * nu), nv, dtype=np.int64) * (top // min(top, 1 + 2 * nu))
    ku, kv = np.minimum(ku, top - 1), np.minimum(kv, top - 1)
    joined = _sorted_join(ku, kv, width)
    assert joined is not None
    iu, iv = joined
    got = sorted(zip(iu.tolist(), iv.tolist(), strict=True))
    want = _pairs(ku, kv)
    assert got == want
    if want:
        assert _sorted_join(ku, kv, width, limit=len(want) - 1) is None
    capped = _sorted_join(ku, kv, width, limit=len(want))
    if width <= max(nu, nv).bit_length() + 2:  # keys used as they are: the limit is exact
        assert capped is not None
    if capped is not None:
        assert sorted(zip(capped[0].tolist(), capped[1].tolist(), strict=True)) == want


# --------------------------------------------------------------------------------------------
# word packing
# --------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 12), st.integers(1, 4), st.integers(1, 58), st.integers(0, 2**32 - 1))
def test_word_packing_matches_python_integers(s: int, d: int, bits: int, seed: int) -> None:
    """Subset sums of word-packed rows wrap to the exact sums modulo 2**64, and a bit window of the virtual bit
    string reads the same bits as the exact coordinates (each modulo 2**width, placed at its offset)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(-(2**bits), 2**bits, size=(s, d)).astype(object) * int(rng.integers(1, 8))
    rows[:, 0] += 1  # keep the first coordinate odd somewhere, so the layout is not trivially shifted
    pw = pack_words(rows)
    # one word per coordinate exactly when every column's sum of absolute values (after its common power of
    # two) has at most 62 bits; otherwise the packing must refuse
    fits = all(
        sum(
            abs(int(x)) >> min((int(y) & -int(y)).bit_length() - 1 for y in rows[:, j] if int(y)) for x in rows[:, j]
        ).bit_length()
        <= 62
        for j in range(d)
        if any(int(x) for x in rows[:, j])
    )
    assert (pw is not None) == fits
    if pw is None:
        return
    # the layout of the limb packing, coordinate by coordinate
    assert pw.bits == pack(rows).bits
    cols = [j for j in range(d) if any(int(x) for x in rows[:, j])]
    shifts = [min((int(x) & -int(x)).bit_length() - 1 for x in rows[:, j] if int(x)) for j in cols]
    mask = rng.random(s) < 0.5
    exact = [sum(int(rows[i, j]) for i in range(s) if mask[i]) >> sh for j, sh in zip(cols, shifts, strict=True)]
    vals = _WordValues(pw)
    sums = vals.sums(np.arange(s))
    idx = int(sum(1 << i for i in range(s) if mask[i]))
    word = sums[idx : idx + 1]
    for c, x in enumerate(exact):
        assert int(word[0, c]) == x % 2**64
    virtual = sum((x % (1 << w)) << off for x, w, off in zip(exact, pw.widths, pw.offsets, strict=True))
    neg = sum(((-x) % (1 << w)) << off for x, w, off in zip(exact, pw.widths, pw.offsets, strict=True))
    for lo in range(0, pw.bits, 7):
        w = min(40, pw.bits - lo)
        assert int(words_key(word, pw, lo, w)[0]) == (virtual >> lo) % (1 << w)
        assert int(words_key(word, pw, lo, w, negate=True)[0]) == (neg >> lo) % (1 << w)


def test_word_packing_refuses_wide_coordinates() -> None:
    rows = np.array([[2**70 + 1, 3], [-5, 2**61]], dtype=object)
    assert pack_words(rows) is None  # the first coordinate needs more than one word
    assert pack_words(np.array([[2**60, 3], [-(2**60), 1]], dtype=object)) is not None


# --------------------------------------------------------------------------------------------
# block split
# --------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 80), st.integers(0, 120), st.integers(0, 2**32 - 1))
def test_components_match_scipy(n: int, e: int, seed: int) -> None:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, e)
    dst = rng.integers(0, n, e)
    lab = components(n, src, dst)
    _, ref = connected_components(coo_matrix((np.ones(e), (src, dst)), shape=(n, n)), directed=False)
    # the same partition, each part labelled by its smallest node
    for i in range(n):
        same = np.flatnonzero(ref == ref[i])
        assert lab[i] == same.min()


# --------------------------------------------------------------------------------------------
# the tree itself
# --------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.integers(24, 96), st.integers(1, 3), st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_every_reported_set_is_a_flip_set(s: int, d: int, bits: int, seed: int) -> None:
    """On any integer block, every set the randomized search reports sums to zero (brute-force check of the sum),
    with both packings."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-(2**bits), 2**bits, size=(s, d)).astype(object)
    W = wrap(X)
    gidx = np.arange(s)
    found, _ = ktree_search(W, gidx, W.exact(gidx), 50, Deadline(0.3), rng)
    for T in found:
        assert T and list(T) == sorted(set(T))
        assert all(sum(int(X[i, j]) for i in T) == 0 for j in range(d))


def test_tree_recovers_planted_zero_sums_with_both_packings() -> None:
    """A hand-made tree over rows with a known structure: the root's solutions are exactly zero sums, and the
    limb packing and the word packing find the same ones from the same random choices."""
    rng = np.random.default_rng(3)
    s, d = 32, 2
    X = rng.integers(-40, 40, size=(s, d)).astype(object)
    cfg = _KTreeConfig(levels=2, group=8, logsize=12, windows=(), bits=pack(X).bits, log2_expected=0.0, cost=0.0,
                       sizes=(8, 12))  # fmt: skip
    pw = pack_words(X)
    assert pw is not None
    sols = []
    for values in (_WordValues(pw), _LimbValues(pack(X))):
        tree = _KTree(values, cfg, np.random.default_rng(5))
        out = tree.run(np.arange(s), Deadline(600), 10_000)  # a deadline only against a hang
        assert out is not None
        sets = sorted(tuple(int(i) for i in T) for T in out)
        for T in sets:
            assert all(sum(int(X[i, j]) for i in T) == 0 for j in range(d))
        sols.append(sets)
    assert sols[0] and sols[0] == sols[1]


# --------------------------------------------------------------------------------------------
# the goal: float32 networks of a thousand neurons
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 2])
def test_fiber_of_a_random_float32_network_is_not_generic(m: int) -> None:
    """m-1000-1 float32 networks have hidden flips (2^1000 subsets against about 55·m bits): fiber finds one
    with its default budget, reports "not generic", and every reported set is a flip (Fraction check)."""
    net = float32_network(np.random.default_rng(m), m, 1000, 1)
    fb = fiber(net, progress=False)
    assert fb.generic is False
    assert fb.conditions["G-c"] is False
    sets = [T for T in (fb.flips or ()) if T]
    assert sets
    V, A = np.asarray(net.V), np.asarray(net.A)
    for T in sets:
        assert exact_zero(V, A, T)
    assert not fb.flips_complete  # 2^1000 subsets were not enumerated, and the result says so
    assert fb.undecided and "not enumerated" in fb.undecided


def test_planted_flip_in_a_wide_float_network() -> None:
    """A 2-1000-1 float32 network whose neurons 0..3 carry a planted flip (v_3 a_3 = -(v_0 a_0 + v_1 a_1 + v_2 a_2)
    with power-of-two weights): the planted set is recognised as a flip set, and the random search, which is not
    aimed at it, reports only verified ones."""
    rng = np.random.default_rng(11)
    n = 1000
    V = (rng.standard_normal((1, n)) / np.sqrt(n)).astype(np.float32)
    A = (rng.standard_normal((n, 2)) / np.sqrt(2)).astype(np.float32)
    V[0, :4] = [0.5, 0.25, 0.25, -1.0]
    A[:4] = [[1.0, 0.5], [2.0, -1.0], [-2.0, 2.0], [0.5, 0.5]]  # 0.5+0.5-0.5 = 0.5, 0.25-0.25+0.5 = 0.5
    assert exact_zero(V, A, (0, 1, 2, 3))
    assert fs.is_flip_set(fs.flip_factors(V, A), (0, 1, 2, 3))
    assert not fs.is_flip_set(fs.flip_factors(V, A), (0, 1, 2))
    res = fs.network_flip_sets(V, A, max_sets=20)
    assert res.sets and not res.complete
    for T in res.sets:
        assert exact_zero(V, A, T)


def test_tree_whose_windows_cancel_every_bit_early() -> None:
    """Rows ±1: the first merges already cancel every bit, so the next ones have nothing left to match and draw
    random pairs (without listing all of them); every solution at the root is still a zero sum."""
    s = 64
    X = np.array([[1 if i % 2 else -1] for i in range(s)], dtype=object)
    pw = pack_words(X)
    assert pw is not None
    cfg = _KTreeConfig(levels=3, group=8, logsize=5, windows=(), bits=pw.bits, log2_expected=0.0, cost=0.0,
                       sizes=(8, 5, 4))  # fmt: skip
    tree = _KTree(_WordValues(pw), cfg, np.random.default_rng(0))
    out = tree.run(np.random.default_rng(1).permutation(s), Deadline(600), 1000)  # against a hang
    assert out
    for T in out:
        assert len(T) and sum(int(X[i, 0]) for i in T) == 0
