"""Hidden flips (docs/math/hidden-symmetries.md, Theorem B(ii), ≈ Proposition 14): the flip sets 𝒯(θ) = {T : Σ_T v_i
a_iᵀ = 0},
which decide (G-c) of docs/math/fibres.md and, in class A, the H_n-orbits of the fibre.

They are decided by a rank certificate (the rows vec(v_i a_iᵀ) independent ⇒ 𝒯 = {∅}), computed modulo a prime
on an n×n submatrix of the flip matrix built from residues of V and A (the flip matrix itself is never formed;
the modular arithmetic is :mod:`relusym.linalg`'s), then by groups of parallel rows (zero-sum subsets of
scalars), and otherwise by exact block decomposition (the kernel of the flip matrix) and the flip-set search of
:mod:`relusym.flipsearch` on each block.  Every reported set is verified again with exact integers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._base.rng import RNGLike, as_generator
from relusym._core.analysis import Analysis
from relusym._core.network import Network
from relusym._exact import linalg as linalg
from relusym._exact.hashing import float_key, rows_proportional
from relusym._exact.numbers import common_denominator, is_float_array, to_fraction

__all__ = ["FlipSets", "flip_sets", "flip_sets_of", "flips_certified_absent", "LIST_LIMIT"]

LIST_LIMIT = 200  # flip sets (and, in relusym.fiber, strata) listed in to_dict()


@dataclass(frozen=True)
class FlipSets:
    """The flip sets 𝒯(θ) = {T ⊆ [n] : Σ_{i∈T} v_i a_iᵀ = 0} (docs/math/hidden-symmetries.md, Theorem B; ∅ included,
    0-based).

    ``sets``: verified flip sets (each checked exactly), ∅ first; all of them when ``complete`` (listing
    capped at ``max_sets``, ``count`` is exact then).  ``lower_bound`` ≤ |𝒯|; ``estimate_log2``: log2 of an
    estimate of |𝒯| (exact when ``count`` is known), when the
    search gives one.  ``certificate`` says how the answer was obtained; ``undecided`` what is left open.
    """

    sets: tuple[tuple[int, ...], ...]
    complete: bool
    count: int | None
    lower_bound: int
    estimate_log2: float | None
    certificate: str
    undecided: str | None = None

    @property
    def trivial(self) -> bool | None:
        """True iff 𝒯 = {∅} (so (G-c) holds), None when undecided."""
        if self.lower_bound > 1:
            return False
        if self.count is not None:
            return self.count == 1
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sets": [list(T) for T in self.sets[:LIST_LIMIT]],
            "complete": self.complete,
            "count": self.count,
            "lower_bound": self.lower_bound,
            "estimate_log2": self.estimate_log2,
            "certificate": self.certificate,
            "undecided": self.undecided,
        }


def _residues(an: Analysis, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Residues modulo p of V and A, float (dyadic) or exact, as the float64 arrays of :mod:`relusym.linalg`
    (exact arrays through their integer mantissas: a common positive scale does not change ranks)."""
    V, A = an.net.V, an.net.A
    Vr = linalg.dyadic_residues_mod_p(V, p) if V.dtype != object else linalg.residues_mod_p(an.V_integers, p)
    Ar = linalg.dyadic_residues_mod_p(A, p) if A.dtype != object else linalg.residues_mod_p(an.A_integers, p)
    return np.asarray(Vr, dtype=np.float64), np.asarray(Ar, dtype=np.float64)


def flips_certified_absent(an: Analysis, *, tries: int = 2) -> bool:
    """True when the rows vec(v_i a_iᵀ) of the flip matrix are certified linearly independent over ℚ (so the
    only flip set is ∅ and (G-c) holds); False when that could not be shown (n > km, or singular modulo p).

    The certificate is an n×n submatrix of the flip matrix, nonsingular modulo a prime p: its entries
    V_{r,i}·A_{i,l} are formed from the residues of V and A (a ring map, so a nonzero minor modulo p is a
    nonzero minor over ℚ).  The first try takes the columns (r, l) in order; the next ones random combinations
    G = (VᵀY) ∘ (AZ), which are nonsingular with high probability whenever the rows are independent.
    """
    net = an.net
    m, n, k = net.shape
    if n == 0:
        return True
    if n > k * m:
        return False
    if n * k * m <= 4096:
        X = _exact_flip_rows(an)
        return linalg.rank(X) == n
    p = linalg.FAST_PRIMES[0]
    Vr, Ar = _residues(an, p)  # k × n and n × m
    # n columns (r, l) of the flip matrix, l-major so that every output r appears among the leading columns
    cols = min(m, -(-n // k))
    G = (Ar[:, :cols, None] * Vr.T[:, None, :]).reshape(n, cols * k)[:, :n]
    if linalg.nonsingular_mod_p(G, p):
        return True
    rng = np.random.default_rng(12345)
    for _ in range(tries - 1):
        Y = rng.integers(0, p, size=(k, n)).astype(np.float64)
        Z = rng.integers(0, p, size=(m, n)).astype(np.float64)
        if linalg.nonsingular_mod_p(linalg.matmul_mod_p(Vr.T, Y, p) * linalg.matmul_mod_p(Ar, Z, p), p):
            return True
    return False


def _exact_flip_rows(an: Analysis) -> list[list[int]]:
    """The flip matrix with rows vec(v_i a_iᵀ), exactly, as Python ints (one common positive scale
    dropped)."""
    Vi, Ai = an.V_integers, an.A_integers
    k, m, n = an.net.k, an.net.m, an.net.n
    return [[int(Vi[r, i]) * int(Ai[i, c]) for r in range(k) for c in range(m)] for i in range(n)]


def _verified(an: Analysis, sets: Sequence[tuple[int, ...]]) -> bool:
    """Exact check Σ_{i∈T} v_i a_iᵀ = 0 for every T (Python integers, independent of the search)."""
    if not sets:
        return True
    Vi, Ai = an.V_integers, an.A_integers
    k, m = an.net.k, an.net.m
    for T in sets:
        if not T:
            continue
        idx = list(T)
        for r in range(k):
            vr = [int(x) for x in Vi[r, idx].tolist()]
            for c in range(m):
                if sum(v * int(a) for v, a in zip(vr, Ai[idx, c].tolist(), strict=True)):
                    return False
    return True


class _OutOfTime(Exception):
    """The budget ran out while preparing the search (the linear passes over the n neurons of a huge network)."""


_CHECK_EVERY = 4096  # neurons between two readings of the clock in the linear passes


def _check(i: int, deadline: Deadline | None) -> None:
    if i % _CHECK_EVERY == 0 and deadline is not None and deadline.expired():
        raise _OutOfTime


def _direction_groups(an: Analysis, deadline: Deadline | None = None) -> tuple[list[list[int]], list[Fraction]]:
    """Group the neurons whose flip-matrix rows X_i = v_i ⊗ a_i are parallel (v_i ∥ v_j and a_i ∥ a_j), and
    give each its coefficient d_i = v_i[p]·a_i[q] (first nonzero entries), so that X_i = d_i·(v̂ ⊗ â) in its
    group.  Rows that are zero (v_i = 0 or a_i = 0) form singleton groups with d_i = 0.  Buckets use float
    keys; every membership is verified exactly (:func:`relusym._exact.hashing.rows_proportional`)."""
    net = an.net
    n = net.n
    d: list[Fraction] = [Fraction(0)] * n
    if n == 0:
        return [], d
    Vt, A = net.V.T, net.A
    if not (is_float_array(Vt) and is_float_array(A)):
        V_exact, A, _ = an.fractions
        Vt = V_exact.T
    v_nz = np.asarray(Vt != 0).any(axis=1)
    a_nz = np.asarray(A != 0).any(axis=1)
    rows = np.arange(n)
    lv = Vt[rows, np.argmax(np.asarray(Vt != 0), axis=1)]
    la = A[rows, np.argmax(np.asarray(A != 0), axis=1)]
    ok: np.ndarray = np.asarray(v_nz & a_nz, dtype=bool)
    one: Any = Fraction(1) if Vt.dtype == object else 1.0
    lv_safe = np.where(ok, lv, one)
    la_safe = np.where(ok, la, one)
    if Vt.dtype != object:
        lv_safe, la_safe = lv_safe.astype(np.float64), la_safe.astype(np.float64)
    keys = np.concatenate([float_key(Vt / lv_safe[:, None]), float_key(A / la_safe[:, None])], axis=1)
    kv = np.ascontiguousarray(keys).view(np.dtype((np.void, 8 * keys.shape[1]))).ravel()
    first: dict[bytes, int] = {}
    cand = np.full(n, -1, dtype=np.int64)
    for i in np.nonzero(ok)[0].tolist():
        _check(i, deadline)
        key = kv[i].tobytes()
        if key in first:
            cand[i] = first[key]
        else:
            first[key] = i
    members = np.nonzero(cand >= 0)[0]
    good = np.zeros(n, dtype=bool)
    if members.size:
        reps = cand[members]
        good[members] = rows_proportional(Vt[members], lv_safe[reps], Vt[reps], lv_safe[members]) & (
            rows_proportional(A[members], la_safe[reps], A[reps], la_safe[members])
        )
    groups: dict[int, list[int]] = {}
    order: list[int] = []
    for i in range(n):
        _check(i, deadline)
        if ok[i]:
            d[i] = to_fraction(lv[i]) * to_fraction(la[i])
        if good[i]:
            groups[int(cand[i])].append(i)
        else:  # its own group (a float-key collision that failed the exact check is simply not merged)
            groups[i] = [i]
            order.append(i)
    return [groups[i] for i in order], d


def _scalar_zero_sums(
    vals: list[Fraction], budget: float, max_sets: int, rng: Any
) -> tuple[list[tuple[int, ...]], int | None, int, float | None, str | None, str]:
    """Zero-sum subsets (∅ included) of a list of rationals: exhaustive up to 22 values, else the flip search.
    Returns (sets, exact count or None, lower bound, log2 of the estimated count, undecided, method)."""
    from relusym._fibre.flipsearch import find_flip_sets

    deadline = Deadline(max(0.0, budget))
    den = common_denominator(vals)
    ints = []
    for i, v in enumerate(vals):
        _check(i, deadline)
        ints.append(int(v * den))
    if len(ints) <= 22:
        from relusym._exact.subsets import subset_sums

        sums = subset_sums([[x] for x in ints], [0])
        zero = np.nonzero(sums[:, 0] == 0)[0].tolist()
        sets = sorted((tuple(i for i in range(len(ints)) if (mk >> i) & 1) for mk in zero), key=lambda T: (len(T), T))
        return sets, len(sets), len(sets), math.log2(len(sets)), None, "enumeration"
    X = np.array(ints, dtype=object).reshape(-1, 1)
    gen = as_generator(rng)
    res = find_flip_sets(X, max_sets=max_sets, budget=budget, rng=gen)
    found = {tuple(sorted(int(i) for i in T)) for T in res.sets}
    where: dict[int, int] = {}
    for i, x in enumerate(ints):  # the smallest flip sets, which a random search rarely meets: x_i + x_j = 0
        if x == 0:
            found.add((i,))
        elif -x in where:
            found.add((where[-x], i))
        where.setdefault(x, i)
    sets = [(), *sorted(found, key=lambda T: (len(T), T))]
    count = None if res.count is None else int(res.count) + 1
    est = _log2_count(count, getattr(res, "count_estimate_log2", None))
    return sets, count, max(int(res.count_lower_bound) + 1, len(sets)), est, res.undecided, res.certificate


def _log2_count(count: int | None, log2_nonempty: float | None) -> float | None:
    """log2 |𝒯| (∅ included): exact from ``count``, else from the search's estimate of the nonempty sets."""
    if count is not None:
        return math.log2(count)
    if log2_nonempty is None or not math.isfinite(log2_nonempty):
        return None
    return log2_nonempty if log2_nonempty > 50 else math.log2(2.0**log2_nonempty + 1.0)


def _product_sets(parts: list[list[tuple[int, ...]]], limit: int) -> list[tuple[int, ...]]:
    """Unions taking one set from each part (∅ allowed in each), fewest elements first, at most ``limit``."""
    out: list[tuple[int, ...]] = [()]
    for sets in parts:
        if len(sets) <= 1:
            continue
        out = [tuple(sorted(a + b)) for a in out for b in sets][: max(limit, 1) * 4]
    return sorted(set(out), key=lambda T: (len(T), T))[:limit]


def flip_sets(net: Network, *, budget: float = 10.0, max_sets: int = 4096, rng: RNGLike = 0) -> FlipSets:
    """The flip sets 𝒯(θ) (docs/math/hidden-symmetries.md, Theorem B(ii)), exactly where possible, within ``budget``
    seconds.

    1. Rank certificate (:func:`flips_certified_absent`): independent rows vec(v_i a_iᵀ) ⇒ 𝒯 = {∅}; immediate
       even for 784-4096-10.
    2. Parallel rows: neurons whose rows are multiples d_i·(v̂ ⊗ â) of one direction form groups; if one row
       per group is certified independent, 𝒯 is exactly the product over groups of the zero-sum subsets of the
       scalars d_i (enumerated exhaustively for small groups, searched for large ones: for k = m = 1
       everything is one group).
    3. Otherwise the search of :mod:`relusym.flipsearch` on the factored flip matrix (exact kernel and block
       decomposition, enumeration or meet in the middle for small blocks, generalized birthday for large
       ones).

    Every returned set is verified again here with exact integers.
    """
    return flip_sets_of(Analysis(net), budget=budget, max_sets=max_sets, rng=rng)


def flip_sets_of(an: Analysis, *, budget: float = 10.0, max_sets: int = 4096, rng: RNGLike = 0) -> FlipSets:
    """:func:`flip_sets` of the network of ``an``, from its analysis (the integer mantissas of V and A)."""
    net = an.net
    deadline = Deadline(budget)
    try:
        return _flip_sets_within(an, deadline, max_sets, rng)
    except _OutOfTime:  # a huge network: the passes over its neurons alone outlast the budget
        return FlipSets(
            ((),),
            False,
            None,
            1,
            None,
            "none: the budget ran out before the search began",
            f"the budget of {budget:g} s ran out while preparing the flip search over {net.n} neurons",
        )


def _flip_sets_within(an: Analysis, deadline: Deadline, max_sets: int, rng: RNGLike) -> FlipSets:
    from relusym._fibre.flipsearch import network_flip_sets

    net = an.net
    groups, d = _direction_groups(an, deadline)
    if len(groups) == net.n and all(x != 0 for x in d):  # no parallel or zero rows
        if flips_certified_absent(an):
            return FlipSets(
                ((),),
                True,
                1,
                1,
                0.0,
                f"the {net.n} rows vec(v_i a_iᵀ) are linearly independent (an n×n minor of the flip "
                "matrix is nonzero modulo a prime), so no nonempty subset sums to zero",
            )
    else:
        reps = [g[0] for g in groups if d[g[0]] != 0]
        sub = Network(net.V[:, reps], net.A[reps], net.b[reps], net.c, m=net.m) if reps else None
        if sub is None or flips_certified_absent(Analysis(sub)):
            return _flips_by_groups(an, groups, d, deadline.left(), max_sets, rng)
    gen = as_generator(rng)
    res = network_flip_sets(net.V, net.A, max_sets=max_sets, budget=deadline.left(), rng=gen)
    sets = [(), *sorted({tuple(sorted(int(i) for i in T)) for T in res.sets}, key=lambda T: (len(T), T))]
    if not _verified(an, sets):  # pragma: no cover - the search returned a wrong set
        raise AssertionError("a reported flip set does not sum to zero")
    count = None if res.count is None else int(res.count) + 1
    lower = max(int(res.count_lower_bound) + 1, len(sets))
    est = _log2_count(count, getattr(res, "count_estimate_log2", None))
    return FlipSets(tuple(sets), bool(res.complete), count, lower, est, res.certificate, res.undecided)


def _flips_by_groups(
    an: Analysis, groups: list[list[int]], d: list[Fraction], budget: float, max_sets: int, rng: Any
) -> FlipSets:
    """𝒯 as the product over the parallel-row groups of the zero-sum subsets of their scalars (exact, because
    one row per group was certified independent)."""
    deadline = Deadline(max(0.0, budget))
    parts: list[list[tuple[int, ...]]] = []
    count: int | None = 1
    lower = 1
    est: float | None = 0.0
    notes: list[str] = []
    big = [g for g in groups if len(g) > 22]
    for g in sorted(groups, key=len):
        if len(g) == 1 and d[g[0]] != 0:
            continue
        left = deadline.left() / max(1, len(big))
        sets, c, lb, e, und, _ = _scalar_zero_sums([d[i] for i in g], left, max_sets, rng)
        parts.append([tuple(g[i] for i in T) for T in sets])
        count = None if (count is None or c is None) else count * c
        lower *= lb
        est = None if (est is None or e is None) else est + e
        if und:
            notes.append(und)
    sets = _product_sets(parts, max_sets)
    if not _verified(an, sets):  # pragma: no cover - would be a bug
        raise AssertionError("a flip set built from the parallel groups does not sum to zero")
    nontriv = sum(1 for p in parts if len(p) > 1)
    cert = (
        f"the flip-matrix rows fall into {len(groups)} groups of parallel rows, one row per group is "
        f"certified independent, so 𝒯 is the product of the groups' zero-sum sets ({nontriv} group(s) with "
        "flips)"
    )
    complete = count is not None and len(sets) == count
    undecided = (
        None
        if complete
        else ("; ".join(notes) if notes else f"{count} flip sets exist; listing truncated at {max_sets}")
    )
    if count is not None:
        est = math.log2(count)
    return FlipSets(tuple(sets), complete, count, max(lower, len(sets)), est, cert, undecided)
