"""The fibre ρ⁻¹(ρ(θ)) of a network: generic or not (Theorem 1′), hidden flips (Theorem B, ≈ Proposition 14),
rigidity (R1–R5), strata, dimension, orbits and sampling (spec §3, §5).

Two regimes:

* **class A** (no null or constant neuron, pairwise non-proportional w_i; spec Theorem B(ii)): the fibre is
  ⊔_{T ∈ 𝒯(θ)} H_n·flip_T(θ), so everything follows from the flip sets 𝒯(θ) = {T : Σ_T v_i a_iᵀ = 0}.  They
  are decided by a rank certificate (the rows vec(v_i a_iᵀ) independent ⇒ 𝒯 = {∅}), computed modulo a prime on
  an n×n submatrix of the flip matrix built from residues of V and A (the flip matrix itself is never formed),
  then by exact block decomposition (the kernel of the flip matrix) and the flip-set search of
  :mod:`relusym.flipsearch` on each block.
* otherwise: the exact configurations (S, P) of spec §5.1 (:func:`relusym.width.configurations`) give the
  width, the strata (S, P, t) with their dimensions (§5.5), the orbits at minimal width and R5.

Every hard search takes a budget; what is not decided within it is reported as ``None`` with an explanation.
"""

from __future__ import annotations

import math
import random as _random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from . import linalg
from .errors import InvalidNetworkError
from .group import Symmetry
from .network import Network
from .normal_form import HyperplaneClasses, NormalForm, flip, hyperplane_classes, normal_form
from .numbers import (
    float_key,
    fraction_str,
    fractions_of,
    integer_matrix,
    is_float_array,
    rows_proportional,
    to_fraction,
)
from .width import (
    Configuration,
    KinkData,
    OwnConfiguration,
    configurations,
    no_mixed_class,
    own_configuration,
    width_search,
)

__all__ = [
    "Fiber",
    "FlipSets",
    "Stratum",
    "fiber",
    "flip_sets",
    "stratum_dimension",
    "flips_certified_absent",
]

Neuron = tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction]

_LIST_LIMIT = 200  # strata and flip sets listed in to_dict()
_STRATA_CONFIGS = 2000  # configurations whose strata are listed
_FAST_N = 12  # above this many kink classes the exact configuration search cannot finish anyway


# ----------------------------------------------------------------------------------------------------------
# dimension of a stratum (§5.5)


def _X(t: int, rho: int, k: int, mbar: int) -> int:
    """dim {(S_{k×t}, Ā_{m̄×t}) : S Āᵀ = R̄} for rank R̄ = ϱ (spec §5.5)."""
    best = None
    for s in range(rho, min(k, t) + 1):
        val = (s - rho) * (k - s) + s * t + mbar * (t - s)
        best = val if best is None else max(best, val)
    if best is None:
        raise ValueError(f"no admissible s for t = {t}, ϱ = {rho}, k = {k}")
    return best


def stratum_dimension(N: int, n: int, k: int, m: int, p: int, rank_P: int, rho: int, t: int) -> int:
    """Dim(S, P, t) of spec §5.5: N + |P| + 2t + k(|P| − w_P) + t·w_P + X(t, ϱ, k, m − w_P) + spare·δ."""
    delta = max(m + 1, k + 1)
    spare = n - N - p - 2 * t
    if t < rho or spare < 0:
        raise ValueError("not an admissible stratum")
    return N + p + 2 * t + k * (p - rank_P) + t * rank_P + _X(t, rho, k, m - rank_P) + spare * delta


def _closed_form_dimension(N: int, n: int, k: int, m: int, width: int) -> int | None:
    """The closed forms of §5.5: any k when w = N; k = 1 for w ∈ {N, N+1, N+2}."""
    delta = max(m + 1, k + 1)
    D = n - N
    if width == N:
        return N + D * delta
    if k == 1 and width == N + 1:
        return N + D * (m + 1) - m
    if k == 1 and width == N + 2:
        return N + D * (m + 1) - 2 * m + 1
    return None


@dataclass(frozen=True)
class Stratum:
    """A combinatorial type (S, P, t) of points of the fibre (spec §5.1, §5.5): S the kink classes carried by
    a single negatively oriented neuron, P the mixed classes (one neuron of each orientation), t extra
    cancelling pairs, and the remaining ``spare`` neurons null, constant or duplicates.  Classes are indices
    in NF order (``Fiber.classes``); ``S`` is None for large networks (then ``S_size`` is given)."""

    S: tuple[int, ...] | None
    P: tuple[int, ...]
    t: int
    rho: int
    rank_P: int
    dimension: int
    spare: int
    S_size: int
    own: bool = False

    @property
    def orbit(self) -> bool:
        """True when this stratum is a single free H_n-orbit (t = 0, no spare neurons, independent P)."""
        return self.t == 0 and self.spare == 0 and self.rank_P == len(self.P)

    def describe(self) -> str:
        s = "S = " + (
            "{" + ", ".join(map(str, self.S)) + "}" if self.S is not None else f"<{self.S_size} classes>"
        )
        p = "P = {" + ", ".join(map(str, self.P)) + "}"
        extra = f", {self.spare} spare neuron(s)" if self.spare else ""
        kind = " (one free orbit)" if self.orbit else ""
        own = " [θ's own type]" if self.own else ""
        return f"{s}, {p}, t = {self.t}: dimension {self.dimension}{extra}{kind}{own}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "S": None if self.S is None else list(self.S),
            "S_size": self.S_size,
            "P": list(self.P),
            "t": self.t,
            "rho": self.rho,
            "rank_P": self.rank_P,
            "dimension": self.dimension,
            "spare": self.spare,
            "orbit": self.orbit,
            "own": self.own,
            "description": self.describe(),
        }


# ----------------------------------------------------------------------------------------------------------
# flip sets


@dataclass(frozen=True)
class FlipSets:
    """The flip sets 𝒯(θ) = {T ⊆ [n] : Σ_{i∈T} v_i a_iᵀ = 0} (spec §3 O4, Theorem B; ∅ included, 0-based).

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
            "sets": [list(T) for T in self.sets[:_LIST_LIMIT]],
            "complete": self.complete,
            "count": self.count,
            "lower_bound": self.lower_bound,
            "estimate_log2": self.estimate_log2,
            "certificate": self.certificate,
            "undecided": self.undecided,
        }


def _dyadic_residues(arr: np.ndarray, p: int) -> np.ndarray:
    """The image of a float array (dyadic rationals) under the ring map ℤ[1/2] → F_p, as float64 integers of
    absolute value ≤ p/2 (p < 2^26)."""
    a = arr.astype(np.float64)
    if a.size == 0:
        return np.zeros(arr.shape)
    bits = 24 if arr.dtype in (np.float16, np.float32) else 53
    mant, ex = np.frexp(a)
    E = ex.astype(np.int64) - bits
    emin, emax = int(E.min()), int(E.max())
    table = np.array(
        [pow(2, e, p) if e >= 0 else pow(pow(2, -e, p), -1, p) for e in range(emin, emax + 1)],
        dtype=np.float64,
    )
    if bits == 24:  # mantissa < 2^24, table < p: the product is exact in float64
        return _mod(mant * 2.0**24 * table[E - emin], p)
    M = (mant * 2.0**53).astype(np.int64) % p
    return _mod(M.astype(np.float64) * table[E - emin], p)


def _residues(arr: np.ndarray, p: int) -> np.ndarray:
    if arr.dtype != object:
        return _dyadic_residues(arr, p)
    ints, _ = integer_matrix(arr)  # a common positive scale does not change ranks
    flat = [int(x) % p for x in ints.ravel().tolist()]
    return np.array(flat, dtype=np.float64).reshape(arr.shape)


def _mod(x: np.ndarray, p: int) -> np.ndarray:
    """A representative of x modulo p of absolute value ≤ p/2 (exact for integers |x| < 2^52); 0 stays 0."""
    q = x * (1.0 / p)
    np.rint(q, out=q)
    q *= p
    return x - q


def _gauss_jordan_inverse(A: np.ndarray, p: int) -> np.ndarray | None:
    n = A.shape[0]
    M = np.concatenate([A, np.eye(n)], axis=1)
    for j in range(n):
        nz = np.flatnonzero(M[j:, j])
        if nz.size == 0:
            return None
        piv = j + int(nz[0])
        if piv != j:
            M[[j, piv]] = M[[piv, j]]
        M[j] = _mod(M[j] * float(pow(int(M[j, j]) % p, -1, p)), p)
        f = M[:, j].copy()
        f[j] = 0.0
        M = _mod(M - np.outer(f, M[j]), p)
    return M[:, n:]


def _inverse_mod_p(A: np.ndarray, p: int) -> np.ndarray | None:
    """Inverse modulo p (p < 2^20, entries in [0, p)) by recursive 2×2 blocking, or None if a pivot block is
    singular (inconclusive for the caller)."""
    n = A.shape[0]
    if n <= 32:
        return _gauss_jordan_inverse(A, p)
    h = n // 2
    A11, A12, A21, A22 = A[:h, :h], A[:h, h:], A[h:, :h], A[h:, h:]
    X = _inverse_mod_p(A11, p)
    if X is None:
        return None
    XB = _mod(X @ A12, p)
    S = _mod(A22 - _mod(A21 @ XB, p), p)
    Si = _inverse_mod_p(S, p)
    if Si is None:
        return None
    CX = _mod(A21 @ X, p)
    SiCX = _mod(Si @ CX, p)
    return np.block([[_mod(X + XB @ SiCX, p), _mod(-(XB @ Si), p)], [_mod(-SiCX, p), Si]])


def _nonsingular_mod_p(G: np.ndarray, p: int, block: int = 512) -> bool:
    """True only if G (n×n, entries in [0, p), p·p·n < 2^52) is nonsingular modulo p: blocked Schur
    complements whose products are exact float64 BLAS calls.  False means "not shown" (a pivot block was
    singular)."""
    n = G.shape[0]
    G = G.copy()
    for j0 in range(0, n, block):
        j1 = min(n, j0 + block)
        panel = _mod(G[j0:j1, j0:], p)
        inv = _inverse_mod_p(panel[:, : j1 - j0], p)
        if inv is None:
            return False
        if j1 < n:
            W = _mod(inv @ panel[:, j1 - j0 :], p)
            L = _mod(G[j1:, j0:j1], p)
            G[j1:, j1:] -= L @ W
    return True


def _certificate_prime(n: int) -> int:
    """A prime p with n·p² < 2^52 (so the delayed reductions of :func:`_nonsingular_mod_p` stay exact)."""
    bound = int(math.isqrt((1 << 52) // max(n, 1)))
    for p in linalg.FAST_PRIMES:
        if p <= bound:
            return p
    q = min(bound, 1 << 20)
    while q > 3 and not _is_prime(q):
        q -= 1
    return q


def _is_prime(q: int) -> bool:
    if q < 2:
        return False
    i = 2
    while i * i <= q:
        if q % i == 0:
            return False
        i += 1
    return True


def flips_certified_absent(net: Network, *, tries: int = 2) -> bool:
    """True when the rows vec(v_i a_iᵀ) of the flip matrix are certified linearly independent over ℚ (so the
    only flip set is ∅ and (G-c) holds); False when that could not be shown (n > km, or singular modulo p).

    The certificate is an n×n submatrix of the flip matrix, nonsingular modulo a prime p: its entries
    V_{r,i}·A_{i,l} are formed from the residues of V and A (a ring map, so a nonzero minor modulo p is a
    nonzero minor over ℚ).  The first try takes the columns (r, l) in order; the next ones random combinations
    G = (VᵀY) ∘ (AZ), which are nonsingular with high probability whenever the rows are independent.
    """
    m, n, k = net.shape
    if n == 0:
        return True
    if n > k * m:
        return False
    if n * k * m <= 4096:
        X = _exact_flip_rows(net)
        return linalg.rank(X) == n
    p = _certificate_prime(n)
    Vr = _residues(net.V, p)  # k × n
    Ar = _residues(net.A, p)  # n × m
    # n columns (r, l) of the flip matrix, l-major so that every output r appears among the leading columns
    G = np.empty((n, n))
    cols = min(m, -(-n // k))
    blk = _mod(Ar[:, :cols, None] * Vr.T[:, None, :], p).reshape(n, cols * k)
    G[:] = blk[:, :n]
    if _nonsingular_mod_p(G, p):
        return True
    rng = np.random.default_rng(12345)
    for _ in range(tries - 1):
        Y = rng.integers(0, p, size=(k, n)).astype(np.float64)
        Z = rng.integers(0, p, size=(m, n)).astype(np.float64)
        if k * p * p < 2**53 and m * p * p < 2**53:
            G = _mod(_mod(Vr.T @ Y, p) * _mod(Ar @ Z, p), p)
            if _nonsingular_mod_p(G, p):
                return True
    return False


def _exact_flip_rows(net: Network) -> list[list[int]]:
    """The flip matrix with rows vec(v_i a_iᵀ), exactly, as Python ints (one common positive scale
    dropped)."""
    Vi, _ = integer_matrix(net.V)
    Ai, _ = integer_matrix(net.A)
    k, m = net.k, net.m
    return [[int(Vi[r, i]) * int(Ai[i, c]) for r in range(k) for c in range(m)] for i in range(net.n)]


def _verified(net: Network, sets: Sequence[tuple[int, ...]]) -> bool:
    """Exact check Σ_{i∈T} v_i a_iᵀ = 0 for every T (Python integers, independent of the search)."""
    if not sets:
        return True
    Vi, _ = integer_matrix(net.V)
    Ai, _ = integer_matrix(net.A)
    k, m = net.k, net.m
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


def _direction_groups(net: Network) -> tuple[list[list[int]], list[Fraction]]:
    """Group the neurons whose flip-matrix rows X_i = v_i ⊗ a_i are parallel (v_i ∥ v_j and a_i ∥ a_j), and
    give each its coefficient d_i = v_i[p]·a_i[q] (first nonzero entries), so that X_i = d_i·(v̂ ⊗ â) in its
    group.  Rows that are zero (v_i = 0 or a_i = 0) form singleton groups with d_i = 0.  Buckets use float
    keys; every membership is verified exactly (:func:`relusym.numbers.rows_proportional`)."""
    n = net.n
    d: list[Fraction] = [Fraction(0)] * n
    if n == 0:
        return [], d
    Vt, A = net.V.T, net.A
    if not (is_float_array(Vt) and is_float_array(A)):
        Vt, A = fractions_of(Vt), fractions_of(A)
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
    from .flipsearch import find_flip_sets

    den = 1
    for v in vals:
        den = math.lcm(den, v.denominator)
    ints = [int(v * den) for v in vals]
    if len(ints) <= 22:
        from .width import subset_sums

        sums = subset_sums([[x] for x in ints], [0])
        zero = np.nonzero(sums[:, 0] == 0)[0].tolist()
        sets = sorted(
            (tuple(i for i in range(len(ints)) if (mk >> i) & 1) for mk in zero), key=lambda T: (len(T), T)
        )
        return sets, len(sets), len(sets), math.log2(len(sets)), None, "enumeration"
    X = np.array(ints, dtype=object).reshape(-1, 1)
    gen = (
        rng
        if isinstance(rng, np.random.Generator)
        else np.random.default_rng(rng if isinstance(rng, int) else 0)
    )
    res = find_flip_sets(X, max_sets=max_sets, budget_seconds=budget, rng=gen)
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


def flip_sets(net: Network, *, budget: float = 10.0, max_sets: int = 4096, rng: Any = None) -> FlipSets:
    """The flip sets 𝒯(θ) (spec §3 O4, Theorem B(ii)), exactly where possible, within ``budget`` seconds.

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
    from .flipsearch import network_flip_sets

    t0 = time.monotonic()
    groups, d = _direction_groups(net)
    if len(groups) == net.n and all(x != 0 for x in d):  # no parallel or zero rows
        if flips_certified_absent(net):
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
        if sub is None or flips_certified_absent(sub):
            return _flips_by_groups(net, groups, d, budget - (time.monotonic() - t0), max_sets, rng)
    gen = (
        rng
        if isinstance(rng, np.random.Generator)
        else np.random.default_rng(rng if isinstance(rng, int) else 0)
    )
    res = network_flip_sets(net.V, net.A, max_sets=max_sets, budget_seconds=budget, rng=gen)
    sets = [(), *sorted({tuple(sorted(int(i) for i in T)) for T in res.sets}, key=lambda T: (len(T), T))]
    if not _verified(net, sets):  # pragma: no cover - the search returned a wrong set
        raise AssertionError("a reported flip set does not sum to zero")
    count = None if res.count is None else int(res.count) + 1
    lower = max(int(res.count_lower_bound) + 1, len(sets))
    est = _log2_count(count, getattr(res, "count_estimate_log2", None))
    return FlipSets(tuple(sets), bool(res.complete), count, lower, est, res.certificate, res.undecided)


def _flips_by_groups(
    net: Network, groups: list[list[int]], d: list[Fraction], budget: float, max_sets: int, rng: Any
) -> FlipSets:
    """𝒯 as the product over the parallel-row groups of the zero-sum subsets of their scalars (exact, because
    one row per group was certified independent)."""
    t0 = time.monotonic()
    parts: list[list[tuple[int, ...]]] = []
    count: int | None = 1
    lower = 1
    est: float | None = 0.0
    notes: list[str] = []
    big = [g for g in groups if len(g) > 22]
    for g in sorted(groups, key=len):
        if len(g) == 1 and d[g[0]] != 0:
            continue
        left = max(0.0, budget - (time.monotonic() - t0)) / max(1, len(big))
        sets, c, lb, e, und, _ = _scalar_zero_sums([d[i] for i in g], left, max_sets, rng)
        parts.append([tuple(g[i] for i in T) for T in sets])
        count = None if (count is None or c is None) else count * c
        lower *= lb
        est = None if (est is None or e is None) else est + e
        if und:
            notes.append(und)
    sets = _product_sets(parts, max_sets)
    if not _verified(net, sets):  # pragma: no cover - would be a bug
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


# ----------------------------------------------------------------------------------------------------------
# genericity


def _generic_conditions(net: Network, hc: HyperplaneClasses) -> tuple[bool, str, bool, str]:
    """(G-a holds, why not; G-b holds, why not) for spec §5.3."""
    Vt_nz = np.asarray(net.V != 0).any(axis=0) if net.n else np.zeros(0, dtype=bool)
    A_nz = np.asarray(net.A != 0).any(axis=1) if net.n else np.zeros(0, dtype=bool)
    ga_reason = ""
    bad_v = np.nonzero(~Vt_nz)[0]
    bad_a = np.nonzero(~A_nz)[0]
    if bad_v.size:
        ga_reason = f"G-a fails: neuron {int(bad_v[0])} has v = 0 (a null neuron)"
    elif bad_a.size:
        i = int(bad_a[0])
        kind = "a constant neuron" if to_fraction(net.b[i]) > 0 else "a null neuron"
        ga_reason = f"G-a fails: neuron {i} has a = 0 ({kind})"
    ga = not ga_reason
    # G-b: some two rows w_i, w_j proportional (rank < 2)
    gb_reason = ""
    zero_a = bad_a.tolist()
    if len(zero_a) >= 2:
        gb_reason = (
            f"G-b fails: neurons {zero_a[0]} and {zero_a[1]} both have a = 0, so (a, b) are proportional"
        )
    else:
        # hyperplane classes of all neurons with a ≠ 0 (hc ignores neurons with v = 0: recompute then)
        lab = _w_classes(net, hc)
        seen: dict[int, int] = {}
        for i in range(net.n):
            li = int(lab[i])
            if li < 0:
                continue
            if li in seen:
                j = seen[li]
                mu = to_fraction(_lam(net, i)) / to_fraction(_lam(net, j))
                gb_reason = (
                    f"G-b fails: neurons {j} and {i} lie on the same hyperplane "
                    f"(w_{i} = {fraction_str(mu)}·w_{j})"
                )
                break
            seen[li] = i
        if not gb_reason and len(zero_a) == 1:
            i = zero_a[0]
            if to_fraction(net.b[i]) == 0:
                other = 0 if i != 0 else 1
                if net.n >= 2:
                    gb_reason = f"G-b fails: neuron {i} has w = (a, b) = 0, proportional to every w_{other}"
    return ga, ga_reason, not gb_reason, gb_reason


def _lam(net: Network, i: int) -> Any:
    row = net.A[i]
    p = int(np.argmax(row != 0))
    return row[p]


def _w_classes(net: Network, hc: HyperplaneClasses) -> np.ndarray:
    """Class labels of the rows w_i = (a_i, b_i) with a_i ≠ 0 (−1 otherwise), whatever v_i is."""
    if bool((hc.neuron_type == 2).sum() == np.asarray(net.A != 0).any(axis=1).sum()):
        return hc.label
    ones = Network(np.ones((1, net.n)), net.A, net.b, m=net.m)
    return hyperplane_classes(ones).label


# ----------------------------------------------------------------------------------------------------------
# the fibre


@dataclass(frozen=True)
class Fiber:
    """The fibre ρ⁻¹(ρ(θ)) ∩ Ω(m, n, k) of θ (spec §5); see :func:`fiber`.

    ``generic`` (G-a, G-b, G-c of §5.3; ``generic_reason`` says which fails and why), ``rigid`` (R1–R5 of
    §5.4, ``rigid_reason``), ``class_a`` (Theorem B(ii) applies), ``flips`` (𝒯(θ) in class A: every flip set,
    ∅ first, when ``flips_complete``; otherwise the verified ones found, with ``flip_count_lower_bound`` and
    ``flip_count_estimate_log2``; None outside class A), ``orbits`` (number of H_n-orbits when the fibre is a
    finite union of them and that number is known), ``width`` (§5.2), ``dimension`` (global, §5.5), ``strata``
    (combinatorial types (S, P, t) with their dimensions, highest first).  Undecided values are None, with the
    reason in ``undecided``.
    """

    m: int
    n: int
    k: int
    N: int
    generic: bool | None
    generic_reason: str
    conditions: dict[str, bool | None]
    rigid: bool | None
    rigid_reason: str
    rigidity: dict[str, bool | None]
    class_a: bool
    flips: tuple[tuple[int, ...], ...] | None
    flips_complete: bool
    flip_count: int | None
    flip_count_lower_bound: int | None
    flip_count_estimate_log2: float | None
    orbits: int | None
    width: int | None
    width_bounds: tuple[int, int]
    dimension: int | None
    strata: tuple[Stratum, ...]
    strata_complete: bool
    strata_count: int | None
    certificate: str
    undecided: str | None
    elapsed: float
    net: Network = field(repr=False, compare=False)
    _kd: KinkData | None = field(default=None, repr=False, compare=False)
    _own: OwnConfiguration | None = field(default=None, repr=False, compare=False)

    @property
    def delta(self) -> int:
        """δ = max(m + 1, k + 1): the dimensions one spare (null or constant) neuron adds (§5.5)."""
        return max(self.m + 1, self.k + 1)

    @property
    def classes(self) -> list[dict[str, list[str]]]:
        """The kink classes in NF order, as in ``NormalForm.to_dict()['kinks']`` (the indices used by
        strata)."""
        if self._kd is None:
            return []
        kd = self._kd
        return [
            {
                "hyperplane": [fraction_str(x) for x in kd.hyperplane(j)],
                "kink": [fraction_str(x) for x in kd.kappa[j]],
            }
            for j in range(kd.N)
        ]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``relusym fiber --json``."""
        return {
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "N": self.N,
            "delta": self.delta,
            "generic": self.generic,
            "generic_reason": self.generic_reason,
            "conditions": dict(self.conditions),
            "rigid": self.rigid,
            "rigid_reason": self.rigid_reason,
            "rigidity": dict(self.rigidity),
            "class_a": self.class_a,
            "flips": None if self.flips is None else [list(T) for T in self.flips[:_LIST_LIMIT]],
            "flips_complete": self.flips_complete if self.flips is not None else None,
            "flip_count": self.flip_count,
            "flip_count_lower_bound": self.flip_count_lower_bound,
            "flip_count_estimate": _pow2(self.flip_count_estimate_log2),
            "flip_count_estimate_log2": self.flip_count_estimate_log2,
            "orbits": self.orbits,
            "width": self.width,
            "width_bounds": list(self.width_bounds),
            "dimension": self.dimension,
            "strata": [s.to_dict() for s in self.strata[:_LIST_LIMIT]],
            "strata_complete": self.strata_complete,
            "strata_count": self.strata_count,
            "classes": self.classes if self.N <= _LIST_LIMIT else None,
            "certificate": self.certificate,
            "undecided": self.undecided,
            "elapsed_seconds": round(self.elapsed, 4),
        }

    def report(self) -> str:
        """A readable multi-line summary (the output of ``relusym fiber``)."""

        def yn(x: bool | None) -> str:
            return "undecided" if x is None else ("yes" if x else "no")

        lines = [
            f"fibre of a network with m = {self.m} input(s), n = {self.n} neuron(s), k = {self.k} output(s); "
            f"N = {self.N} kink class(es)"
        ]
        lines.append(f"generic (G-a, G-b, G-c of §5.3): {yn(self.generic)} — {self.generic_reason}")
        lines.append(
            f"rigid (fibre = one free H_n-orbit, R1–R5 of §5.4): {yn(self.rigid)} — {self.rigid_reason}"
        )
        lines.append(
            f"class A (Theorem B(ii): no null/constant neuron, distinct hyperplanes): {yn(self.class_a)}"
        )
        if self.flips is not None:
            shown = ", ".join("∅" if not T else "{" + ", ".join(map(str, T)) + "}" for T in self.flips[:6])
            more = " …" if len(self.flips) > 6 else ""
            if self.flips_complete:
                lines.append(f"flip sets 𝒯(θ): {self.flip_count} (all): {shown}{more}")
            else:
                lg = self.flip_count_estimate_log2
                est = f", estimate ≈ 2^{lg:.0f}" if lg is not None else ""
                lines.append(
                    f"flip sets 𝒯(θ): at least {self.flip_count_lower_bound}{est}; "
                    f"{len(self.flips)} verified: {shown}{more}"
                )
        lines.append(
            "H_n-orbits in the fibre: "
            + (str(self.orbits) if self.orbits is not None else "not a known finite number")
        )
        if self.width is not None:
            lines.append(f"minimal width w = {self.width}")
        else:
            lines.append(f"minimal width undecided: {self.width_bounds[0]} ≤ w ≤ {self.width_bounds[1]}")
        lines.append(
            f"dimension of the fibre: {self.dimension if self.dimension is not None else 'undecided'} "
            f"(δ = {self.delta}; the H_n-orbit of θ has dimension {self.n - _inactive(self.net)})"
        )
        if self.strata:
            total = f" of {self.strata_count}" if self.strata_count is not None else ""
            lines.append(
                f"strata (S, P, t) ({min(len(self.strata), 8)} shown{total}"
                f"{'' if self.strata_complete else ', list incomplete'}):"
            )
            for s in self.strata[:8]:
                lines.append("  " + s.describe())
        lines.append(f"certificate: {self.certificate}")
        if self.undecided:
            lines.append(f"undecided: {self.undecided}")
        return "\n".join(lines)

    def sample(self, rng: Any = None) -> Network:
        """A random point of the fibre (same n), from a random stratum: flipped, re-factorized, with null or
        constant neurons, O3 splits, O5 moves and O6 translations where the stratum allows, then moved by a
        random h ∈ H_n.  Each point is checked to have the same normal form as θ before it is returned."""
        r = _as_random(rng)
        nf = normal_form(self.net)
        for _ in range(20):
            cand = self._candidate(r)
            if cand is not None and cand.n == self.n and normal_form(cand) == nf:
                return cand
        h = Symmetry.random(self.n, r, dyadic=self.net.is_float)  # the orbit itself is always available
        out = h.act(self.net)
        if normal_form(out) != nf:  # pragma: no cover - would contradict H_n-invariance
            raise AssertionError("h·θ has a different normal form")
        return out

    def _candidate(self, r: _random.Random) -> Network | None:
        net = self.net
        if self.class_a:
            sets = self.flips or ((),)
            T = sets[r.randrange(len(sets))]
            base = flip(net, T) if T else net
            return Symmetry.random(net.n, r, dyadic=base.is_float).act(base)
        kd = self._kd
        if kd is None or not self.strata or any(st.S is None for st in self.strata):
            return _local_moves(net, r)
        st = self.strata[r.randrange(len(self.strata))]
        assert st.S is not None
        built = _realize(kd, st, r)
        if built is None:
            return None
        neurons, c = built
        neurons, c = _pad(neurons, c, self.n - len(neurons), kd, r)
        cand = _network(neurons, c, net.m, net.k)
        return Symmetry.random(net.n, r).act(cand)


def _local_moves(net: Network, r: _random.Random) -> Network:
    """A random fibre point near θ's own type, for large networks: O3 transfers between neurons on the same
    oriented hyperplane, O1 replacement of null neurons, O2 changes of constant neurons, O6 translations of
    cancelling pairs, then a random permutation with power-of-two scales.  A keeps its dtype (only null rows
    change, to small integers); V, b and c become exact rationals."""
    hc = hyperplane_classes(net)
    n, k = net.n, net.k
    V = fractions_of(net.V).copy()
    b = fractions_of(net.b).copy()
    A = np.array(net.A, copy=True)
    c = [to_fraction(x) for x in net.c.tolist()]
    lam = [to_fraction(x) if hc.neuron_type[i] == 2 else Fraction(0) for i, x in enumerate(hc.lam.tolist())]
    members: dict[int, list[int]] = {}
    for i in range(n):
        if hc.label[i] >= 0:
            members.setdefault(int(hc.label[i]), []).append(i)
    for mem in members.values():
        pos = [i for i in mem if lam[i] > 0]
        neg = [i for i in mem if lam[i] < 0]
        for same in (pos, neg):
            if len(same) >= 2 and r.random() < 0.5:  # O3: (v_i, v_j) -> (v_i + λτ, v_j − τ), w_j = λ w_i
                i, j = r.sample(same, 2)
                ratio = lam[j] / lam[i]
                tau = [Fraction(r.randint(-3, 3), 4) * V[a, j] for a in range(k)]
                for a in range(k):
                    V[a, i] += ratio * tau[a]
                    V[a, j] -= tau[a]
        if len(pos) == 1 and len(neg) == 1 and not hc.kink_mask[int(hc.label[pos[0]])] and r.random() < 0.5:
            i, j = pos[0], neg[0]  # O6: w_j = −μ w_i, v_i + μ v_j = 0
            mu = -lam[j] / lam[i]
            shift = Fraction(r.randint(-4, 4), 2)
            b[i] += shift
            b[j] -= mu * shift
            c = [ci - shift * V[a, i] for a, ci in enumerate(c)]
    for i in range(n):
        if hc.neuron_type[i] == 2:
            continue
        v_zero = not any(V[a, i] for a in range(k))
        a_zero = not bool(np.any(A[i] != 0))
        if v_zero:  # O1: any (a, b)
            A[i] = [r.randint(-2, 2) for _ in range(net.m)]
            b[i] = Fraction(r.randint(-2, 2))
        elif a_zero and b[i] <= 0:  # O1: any v, b ≤ 0
            for a in range(k):
                V[a, i] = Fraction(r.randint(-3, 3))
            b[i] = Fraction(-r.randint(0, 2))
        elif a_zero:  # O2: constant neuron, the bias compensates
            newv = [Fraction(r.randint(-3, 3)) for _ in range(k)]
            c = [ci + b[i] * (V[a, i] - newv[a]) for a, ci in enumerate(c)]
            for a in range(k):
                V[a, i] = newv[a]
    perm = list(range(n))
    r.shuffle(perm)
    src = np.empty(n, dtype=np.int64)
    src[np.asarray(perm, dtype=np.int64)] = np.arange(n)
    expo = np.array([r.randint(-3, 3) for _ in range(n)], dtype=np.int64)[src]
    scale = np.array([Fraction(2) ** int(e) for e in expo.tolist()], dtype=object)
    if A.dtype != object:
        A2 = np.ldexp(A[src].astype(np.float64), expo[:, None]).astype(A.dtype)
        if not np.array_equal(np.ldexp(A2.astype(np.float64), -expo[:, None]), A[src].astype(np.float64)):
            A2 = fractions_of(A)[src] * scale[:, None]
    else:
        A2 = A[src] * scale[:, None]
    return Network(V[:, src] / scale[None, :], A2, b[src] * scale, c, m=net.m)


def _pow2(lg: float | None) -> float | None:
    return None if lg is None or lg > 1000 else round(2.0**lg, 3)


def _inactive(net: Network) -> int:
    if net.n == 0:
        return 0
    z = ~np.asarray(net.V != 0).any(axis=0) & ~np.asarray(net.A != 0).any(axis=1) & np.asarray(net.b == 0)
    return int(z.sum())


def _as_random(rng: Any) -> _random.Random:
    if isinstance(rng, _random.Random):
        return rng
    if isinstance(rng, np.random.Generator):
        return _random.Random(int(rng.integers(2**63)))
    return _random.Random(rng)


def fiber(net: Network, *, budget: float = 10.0) -> Fiber:
    """The fibre of θ (spec §5): generic, rigid, flips, orbits, width, dimension, strata; exact, within
    ``budget`` seconds for the hard searches (flip sets, configurations).

    >>> fb = fiber(Network([[1, 1]], [[1], [-1]], [0, 1]))   # E2: a hidden flip
    >>> fb.generic, fb.generic_reason, fb.flips, fb.orbits, fb.width, fb.dimension
    (False, 'G-c fails: flipping neurons [0, 1] leaves the function unchanged', ((), (0, 1)), 2, 2, 2)
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"fiber needs a Network, got {type(net).__name__}")
    t0 = time.monotonic()
    deadline = t0 + budget
    hc = hyperplane_classes(net)
    ga, ga_reason, gb, gb_reason = _generic_conditions(net, hc)
    if ga and gb:
        return _fiber_class_a(net, hc, budget, t0)
    gc: bool | None = False
    if ga:  # G-b fails: decide G-c too when it is cheap (a failing G-a implies a failing G-c)
        gc = flip_sets(net, budget=max(0.0, budget / 4), max_sets=64).trivial
    conditions: dict[str, bool | None] = {"G-a": ga, "G-b": gb, "G-c": gc}
    if int(hc.kink_mask.sum()) > _FAST_N and no_mixed_class(hc):
        return _fiber_no_mixed(net, hc, conditions, ga_reason or gb_reason, ga_reason, t0)
    return _fiber_general(net, hc, conditions, ga_reason or gb_reason, ga_reason, deadline, t0)


def _fiber_no_mixed(
    net: Network,
    hc: HyperplaneClasses,
    conditions: dict[str, bool | None],
    generic_reason: str,
    ga_reason: str,
    t0: float,
) -> Fiber:
    """Many classes, none carrying both orientations, not class A: θ's own configuration has cost 0, so w = N
    and dim = N + (n − N)δ (§5.5), without the exact normal form; R1 or R2 fails, and n > N."""
    m, n, k = net.shape
    N = int(hc.kink_mask.sum())
    delta = max(m + 1, k + 1)
    if ga_reason:
        rigid_reason = "R1 fails: " + ga_reason.split(": ", 1)[1]
        R2: bool | None = None
    else:
        pair = _same_oriented(hc)
        rigid_reason = (
            f"R2 fails: neurons {pair[0]} and {pair[1]} lie on the same oriented hyperplane, so O3 "
            "moves kink between them"
        )
        R2 = False
    neg_classes = {int(hc.label[i]) for i in range(n) if hc.label[i] >= 0 and hc.lam[i] < 0}
    S_size = len([j for j in neg_classes if hc.kink_mask[j]])
    own = Stratum(None, (), 0, 0, 0, N + (n - N) * delta, n - N, S_size, own=True)
    return Fiber(
        m=m,
        n=n,
        k=k,
        N=N,
        generic=False,
        generic_reason=generic_reason,
        conditions=conditions,
        rigid=False,
        rigid_reason=rigid_reason,
        rigidity={"R1": not ga_reason, "R2": R2, "R3": None, "R4": None, "R5": None},
        class_a=False,
        flips=None,
        flips_complete=False,
        flip_count=None,
        flip_count_lower_bound=None,
        flip_count_estimate_log2=None,
        orbits=None,
        width=N,
        width_bounds=(N, N),
        dimension=N + (n - N) * delta,
        strata=(own,),
        strata_complete=False,
        strata_count=None,
        certificate="no hyperplane carries neurons of both orientations, so θ's own configuration has "
        "cost 0: w = N and dim = N + (n − N)δ (§5.5)",
        undecided=None,
        elapsed=time.monotonic() - t0,
        net=net,
    )


def _fiber_class_a(net: Network, hc: HyperplaneClasses, budget: float, t0: float) -> Fiber:
    """Theorem B(ii): the fibre is ⊔_{T ∈ 𝒯} H_n·flip_T(θ); w = N = n and dim = n."""
    n = net.n
    fs = flip_sets(net, budget=budget)
    nonempty = [T for T in fs.sets if T]
    if nonempty:
        generic: bool | None = False
        gc_reason = f"G-c fails: flipping neurons {list(nonempty[0])} leaves the function unchanged"
    elif fs.count == 1:
        generic = True
        gc_reason = "G-a, G-b and G-c hold"
    else:
        generic = None
        gc_reason = "G-a and G-b hold; G-c undecided within budget (no flip set found, no certificate)"
    orbits = fs.count
    if generic:
        rigid_reason = "R1–R5 hold (θ is generic: the fibre is its free H_n-orbit)"
    elif generic is None:
        rigid_reason = "R1–R4 hold; R5 is (G-c) here and is undecided"
    else:
        rigid_reason = f"R5 fails: the flip {list(nonempty[0])} gives another free orbit (Theorem B(ii))"
    neg = np.asarray(hc.lam < 0) & (hc.neuron_type == 2)
    small = n <= _LIST_LIMIT
    kd: KinkData | None = None
    strata: list[Stratum] = []
    if small:
        kd = KinkData.of(NormalForm(hc))
        order = _neuron_to_nf(hc)
        S0 = {order[i] for i in range(n) if neg[i]}
        for T in fs.sets[:_LIST_LIMIT]:
            S = tuple(sorted(S0 ^ {order[i] for i in T}))
            strata.append(Stratum(S, (), 0, 0, 0, n, 0, len(S), own=not T))
    else:
        strata.append(Stratum(None, (), 0, 0, 0, n, 0, int(neg.sum()), own=True))
    return Fiber(
        m=net.m,
        n=n,
        k=net.k,
        N=n,
        generic=generic,
        generic_reason=gc_reason,
        conditions={"G-a": True, "G-b": True, "G-c": fs.trivial},
        rigid=generic,
        rigid_reason=rigid_reason,
        rigidity={"R1": True, "R2": True, "R3": True, "R4": True, "R5": fs.trivial},
        class_a=True,
        flips=fs.sets,
        flips_complete=fs.complete,
        flip_count=fs.count,
        flip_count_lower_bound=fs.lower_bound,
        flip_count_estimate_log2=fs.estimate_log2,
        orbits=orbits,
        width=n,
        width_bounds=(n, n),
        dimension=n,
        strata=tuple(strata),
        strata_complete=fs.complete and len(fs.sets) <= _LIST_LIMIT,
        strata_count=fs.count,
        certificate=fs.certificate,
        undecided=fs.undecided,
        elapsed=time.monotonic() - t0,
        net=net,
        _kd=kd,
        _own=None,
    )


def _same_oriented(hc: HyperplaneClasses) -> tuple[int, int]:
    seen: dict[tuple[int, bool], int] = {}
    for i in range(hc.net.n):
        if hc.label[i] >= 0:
            key = (int(hc.label[i]), bool(hc.lam[i] < 0))
            if key in seen:
                return seen[key], i
            seen[key] = i
    raise AssertionError("no two neurons on the same oriented hyperplane")  # pragma: no cover


def _pair_kinks_free(kd: KinkData, cfg: Configuration) -> bool:
    """For t = 0: whether the negative kinks s_u (u ∈ P) solving Σ_P s_u α̂_uᵀ = −R_S can avoid 0 and κ_u (else
    one neuron of a pair is null and the configuration is really (S ∪ {u}, P∖{u}) or (S, P∖{u}) plus a null
    neuron: not a stratum of its own).  s_u is free when u is in the support of the left kernel of A_P."""
    if not cfg.P:
        return True
    k, m = kd.k, kd.m
    AP = [list(kd.alpha[u]) for u in cfg.P]
    APt = [[AP[i][c] for i in range(len(AP))] for c in range(m)]
    negR = [[-x for x in row] for row in kd.R(cfg.S)]
    left = linalg.nullspace([list(row) for row in APt], len(AP))
    free = {i for vec in left for i, x in enumerate(vec) if x != 0}
    sols = [linalg.solve(APt, negR[a]) for a in range(k)]
    if any(x is None for x in sols):
        return False
    for i, u in enumerate(cfg.P):
        if i in free:
            continue
        s_u = tuple(sol[i] for sol in sols if sol is not None)
        if not any(s_u) or s_u == kd.kappa[u]:
            return False
    return True


def _neuron_to_nf(hc: HyperplaneClasses) -> dict[int, int]:
    from .width import nf_order

    order = nf_order(hc)
    return {
        i: order[int(hc.label[i])] for i in range(hc.net.n) if hc.label[i] >= 0 and int(hc.label[i]) in order
    }


def _fiber_general(
    net: Network,
    hc: HyperplaneClasses,
    conditions: dict[str, bool | None],
    generic_reason: str,
    ga_reason: str,
    deadline: float,
    t0: float,
) -> Fiber:
    m, n, k = net.shape
    kd = KinkData.of(NormalForm(hc))
    N = kd.N
    own = own_configuration(net, kd, hc)
    notes: list[str] = []
    ga = not ga_reason
    # R1–R4
    R1 = ga
    R2 = not own.duplicates
    R3 = hc.N_all == N
    R4 = own.rank_P == len(own.P)
    admissible = configurations(kd, n - N, deadline=deadline)
    complete = admissible.complete
    if complete:
        c_min = admissible.min_cost
        assert c_min is not None
        width: int | None = N + c_min
        width_bounds = (N + c_min, N + c_min)
    else:
        ws = width_search(net, budget=max(0.0, deadline - time.monotonic()), hc=hc)
        width = ws.width
        width_bounds = (ws.lower, ws.upper)
        if ws.undecided and width is None:
            notes.append(ws.undecided)
    # strata and dimension
    strata: list[Stratum] = []
    dimension: int | None = None
    if complete:
        best = -1
        listed = admissible.configurations[:_STRATA_CONFIGS]
        if len(listed) < admissible.count:
            notes.append(
                f"strata are listed for the first {len(listed)} of {admissible.count} configurations"
            )
        for cfg in listed:
            pinned_ok = _pair_kinks_free(kd, cfg)
            for t in range(cfg.rho, (n - N - len(cfg.P)) // 2 + 1):
                if (t == 0 and not pinned_ok) or (t == 1 and cfg.rho == 0 and not cfg.P):
                    continue  # empty as a type: a pair neuron would be null, or a lone pair cannot cancel
                d = stratum_dimension(N, n, k, m, len(cfg.P), cfg.rank_P, cfg.rho, t)
                strata.append(
                    Stratum(
                        cfg.S,
                        cfg.P,
                        t,
                        cfg.rho,
                        cfg.rank_P,
                        d,
                        n - N - len(cfg.P) - 2 * t,
                        len(cfg.S),
                        own=(cfg.S == own.S and cfg.P == own.P and t == own.extra),
                    )
                )
        for (p, wP, rho), _cnt in admissible.profile.items():
            for t in range(rho, (n - N - p) // 2 + 1):
                best = max(best, stratum_dimension(N, n, k, m, p, wP, rho, t))
        dimension = best
    elif width is not None:
        dimension = _closed_form_dimension(N, n, k, m, width)
        if dimension is None:
            notes.append("the fibre dimension needs the full configuration search, which did not finish")
        t_own = own.extra
        if own.rho <= t_own and N + len(own.P) + 2 * t_own <= n:
            d = stratum_dimension(N, n, k, m, len(own.P), own.rank_P, own.rho, t_own)
            strata.append(
                Stratum(
                    own.S if N <= _LIST_LIMIT else None,
                    own.P,
                    t_own,
                    own.rho,
                    own.rank_P,
                    d,
                    n - N - len(own.P) - 2 * t_own,
                    len(own.S),
                    own=True,
                )
            )
    strata.sort(key=lambda s: (-s.dimension, len(s.P), s.P, s.S or (), s.t))
    # orbits: finitely many iff n = w and every minimizer has t = 0 (then one free orbit each)
    orbits: int | None = None
    if complete and width == n:
        if all(c.rho == 0 for c in admissible.configurations) and not admissible.truncated:
            orbits = admissible.count
    # rigidity
    rigidity: dict[str, bool | None] = {"R1": R1, "R2": R2, "R3": R3, "R4": R4, "R5": None}
    rigid: bool | None
    if not R1:
        rigid, rigid_reason = False, "R1 fails: " + ga_reason.split(": ", 1)[1]
    elif not R2:
        pair = _same_oriented(hc)
        rigid, rigid_reason = (
            False,
            (
                f"R2 fails: neurons {pair[0]} and {pair[1]} lie on the same oriented "
                "hyperplane, so O3 moves kink between them"
            ),
        )
    elif not R3:
        rigid, rigid_reason = False, "R3 fails: an opposite pair has cancelling kinks, so O6 translates it"
    elif not R4:
        rigid, rigid_reason = (
            False,
            "R4 fails: the normals of the opposite pairs are dependent, so O5 moves them",
        )
    elif complete:
        r5 = width == n and admissible.count == 1
        rigidity["R5"] = r5
        rigid = r5
        if r5:
            rigid_reason = "R1–R5 hold: θ's configuration is the unique one of minimal cost"
        elif width is not None and width < n:
            rigid_reason = f"R5 fails: the minimal width is {width} < n = {n}"
        else:
            other = next(c for c in admissible.configurations if (c.S, c.P) != (own.S, own.P))
            rigid_reason = (
                f"R5 fails: another configuration of minimal cost, S = {list(other.S)}, "
                f"P = {list(other.P)} (classes in NF order), t = {other.rho}, realizes the function "
                "with n neurons outside θ's orbit"
            )
    else:
        rigid, rigid_reason = None, "R1–R4 hold; R5 undecided within budget"
    strata_listed = complete and admissible.count <= _STRATA_CONFIGS
    certificate = (
        "exact configuration search over all (S, P) with cost ≤ n − N"
        if complete
        else "partial: the configuration search did not finish within budget"
    )
    undecided = "; ".join(notes) if notes else None
    if not complete and admissible.undecided:
        undecided = admissible.undecided + ("; " + undecided if undecided else "")
    return Fiber(
        m=m,
        n=n,
        k=k,
        N=N,
        generic=False,
        generic_reason=generic_reason,
        conditions=conditions,
        rigid=rigid,
        rigid_reason=rigid_reason,
        rigidity=rigidity,
        class_a=False,
        flips=None,
        flips_complete=False,
        flip_count=None,
        flip_count_lower_bound=None,
        flip_count_estimate_log2=None,
        orbits=orbits,
        width=width,
        width_bounds=width_bounds,
        dimension=dimension,
        strata=tuple(strata),
        strata_complete=strata_listed,
        strata_count=len(strata) if strata_listed else None,
        certificate=certificate,
        undecided=undecided,
        elapsed=time.monotonic() - t0,
        net=net,
        _kd=kd,
        _own=own,
    )


# ----------------------------------------------------------------------------------------------------------
# sampling


def _rand_q(r: _random.Random, nonzero: bool = False) -> Fraction:
    while True:
        q = Fraction(r.randint(-6, 6), r.randint(1, 4))
        if q or not nonzero:
            return q


def _rand_vec(r: _random.Random, d: int) -> tuple[Fraction, ...]:
    while True:
        v = tuple(_rand_q(r) for _ in range(d))
        if any(v):
            return v


def _matmul(X: Sequence[Sequence[Fraction]], Y: Sequence[Sequence[Fraction]]) -> list[list[Fraction]]:
    if not X:
        return []
    inner = len(Y)
    cols = len(Y[0]) if Y else 0
    return [
        [sum((X[i][a] * Y[a][j] for a in range(inner)), Fraction(0)) for j in range(cols)]
        for i in range(len(X))
    ]


def _realize(kd: KinkData, st: Stratum, r: _random.Random) -> tuple[list[Neuron], list[Fraction]] | None:
    """A random realization of the core of stratum (S, P, t): N + |P| + 2t neurons (spec §5.1)."""
    k, m, N = kd.k, kd.m, kd.N
    assert st.S is not None
    S, P, t = set(st.S), list(st.P), st.t
    negR = [[-x for x in row] for row in kd.R(st.S)]
    AP = [list(kd.alpha[u]) for u in P]
    if P:
        B = [list(v) for v in linalg.nullspace(AP, m)]
    else:
        B = [[Fraction(int(i == j)) for i in range(m)] for j in range(m)]
    # Z with Z·Bᵀ... : columns of Bmat are the basis vectors (m × m̄)
    mbar = len(B)
    Bmat = [[B[q][c] for q in range(mbar)] for c in range(m)]  # m × m̄
    Z = [[Fraction(0)] * m for _ in range(k)]
    if mbar:
        Rbar = _matmul(negR, Bmat)  # k × m̄
        BtB = _matmul([list(col) for col in B], Bmat)  # m̄ × m̄
        Binv = linalg.inverse(BtB)
        Bplus = _matmul([list(row) for row in Binv], [list(v) for v in B])  # m̄ × m
        Z = _matmul(Rbar, Bplus)
    if P:
        q = max(0, t - st.rho)
        if q:
            q = r.randint(0, q)
        if q:
            U1 = [[_rand_q(r) for _ in range(q)] for _ in range(k)]
            U2 = [[_rand_q(r) for _ in range(len(P))] for _ in range(q)]
            W = _matmul(_matmul(U1, U2), AP)
            Z = [[Z[a][c] + W[a][c] for c in range(m)] for a in range(k)]
    # S_P from S_P A_P = −R − Z, plus a random O5 move in the left kernel of A_P
    sP: dict[int, list[Fraction]] = {}
    if P:
        rhs = [[negR[a][c] - Z[a][c] for c in range(m)] for a in range(k)]
        APt = [[AP[i][c] for i in range(len(P))] for c in range(m)]
        left = linalg.nullspace([list(row) for row in APt], len(P)) if P else []
        rows: list[list[Fraction]] = []
        for a in range(k):
            x = linalg.solve(APt, rhs[a])
            if x is None:
                return None
            xs = list(x)
            for vec in left:
                step = _rand_q(r)
                xs = [xi + step * vi for xi, vi in zip(xs, vec, strict=True)]
            rows.append(xs)
        for jj, u in enumerate(P):
            sP[u] = [rows[a][jj] for a in range(k)]
    # factor Z into exactly t nonzero terms (c_j, f_j)
    F, piv = linalg.rref(Z, m) if any(any(row) for row in Z) else ([], [])
    terms: list[tuple[list[Fraction], list[Fraction]]] = [
        ([Z[a][pc] for a in range(k)], list(F[i])) for i, pc in enumerate(piv)
    ]
    if len(terms) > t:
        return None
    if terms:  # random re-factorization: (C H⁻¹)(H F)
        H = [[_rand_q(r) + (3 if i == j else 0) for j in range(len(terms))] for i in range(len(terms))]
        try:
            Hi = linalg.inverse(H)
        except ValueError:
            Hi = None
        if Hi is not None:
            C = [[terms[j][0][a] for j in range(len(terms))] for a in range(k)]
            Fm = [terms[j][1] for j in range(len(terms))]
            C2 = _matmul(C, [list(row) for row in Hi])
            F2 = _matmul(H, Fm)
            terms = [([C2[a][j] for a in range(k)], F2[j]) for j in range(len(terms))]
    while len(terms) < t:
        if not terms:
            if t - len(terms) < 2:
                return None
            c0 = list(_rand_vec(r, k))
            f0 = list(_rand_vec(r, m))
            terms = [(c0, f0), ([-x for x in c0], list(f0))]
            continue
        coef = [_rand_q(r) for _ in terms]
        fnew = list(_rand_vec(r, m))
        cnew = [sum((coef[j] * terms[j][0][a] for j in range(len(terms))), Fraction(0)) for a in range(k)]
        nt = [(cj, [fj[c] - coef[j] * fnew[c] for c in range(m)]) for j, (cj, fj) in enumerate(terms)]
        if not any(cnew) or any(not any(fj) for _, fj in nt):
            continue
        terms = nt + [(cnew, fnew)]
    if any(not any(cj) or not any(fj) for cj, fj in terms):
        return None
    neurons: list[Neuron] = []
    c_out = list(kd.e)
    for j in range(N):
        al, be, kap = kd.alpha[j], kd.beta[j], kd.kappa[j]
        neg_al = tuple(-x for x in al)
        if j in S:
            neurons.append((kap, neg_al, -be))
            c_out = [c + be * x for c, x in zip(c_out, kap, strict=True)]
        elif j in sP:
            s = sP[j]
            neurons.append((tuple(x - y for x, y in zip(kap, s, strict=True)), al, be))
            neurons.append((tuple(s), neg_al, -be))
            c_out = [c + be * x for c, x in zip(c_out, s, strict=True)]
        else:
            neurons.append((kap, al, be))
    used = {kd.hyperplane(j) for j in range(N)}
    for cj, fj in terms:
        p = next(i for i, x in enumerate(fj) if x != 0)
        lam = fj[p]
        sj = tuple(lam * x for x in cj)
        al = tuple(x / lam for x in fj)
        while True:
            bj = _rand_q(r)  # a random offset: the O6 translation of the cancelling pair
            if (*al, bj) not in used:
                break
        used.add((*al, bj))
        neurons.append((tuple(-x for x in sj), al, bj))
        neurons.append((sj, tuple(-x for x in al), -bj))
        c_out = [c + bj * x for c, x in zip(c_out, sj, strict=True)]
    return neurons, c_out


def _pad(
    neurons: list[Neuron], c: list[Fraction], spare: int, kd: KinkData, r: _random.Random
) -> tuple[list[Neuron], list[Fraction]]:
    """Add ``spare`` neurons that change nothing: null, inactive, constant (with the bias compensating), O3
    splits of a hyperplane neuron, or a same-orientation pair with cancelling kinks on a new hyperplane."""
    k, m = kd.k, kd.m
    out = list(neurons)
    c = list(c)
    left = spare
    zero_k = tuple(Fraction(0) for _ in range(k))
    zero_m = tuple(Fraction(0) for _ in range(m))
    while left > 0:
        kinds = ["null_v", "null_a", "inactive", "constant"]
        hyper = [i for i, (v, a, _) in enumerate(out) if any(a) and any(v)]
        if hyper:
            kinds += ["split", "split"]
        if left >= 2:
            kinds.append("cancel")
        kind = r.choice(kinds)
        if kind == "null_v":
            out.append((zero_k, _rand_vec(r, m), _rand_q(r)))
        elif kind == "null_a":
            out.append((_rand_vec(r, k), zero_m, -abs(_rand_q(r))))
        elif kind == "inactive":
            out.append((zero_k, zero_m, Fraction(0)))
        elif kind == "constant":
            v = _rand_vec(r, k)
            b = abs(_rand_q(r, nonzero=True))
            out.append((v, zero_m, b))
            c = [ci - b * vi for ci, vi in zip(c, v, strict=True)]
        elif kind == "split":
            i = r.choice(hyper)
            v, a, b = out[i]
            mu = Fraction(r.randint(1, 4), r.randint(1, 4))
            v2 = _rand_vec(r, k)
            out[i] = (tuple(x - mu * y for x, y in zip(v, v2, strict=True)), a, b)
            out.append((v2, tuple(mu * x for x in a), mu * b))
        else:
            a = _rand_vec(r, m)
            b = _rand_q(r)
            v = _rand_vec(r, k)
            mu = Fraction(r.randint(1, 4), r.randint(1, 4))
            out.append((v, a, b))
            out.append((tuple(-x / mu for x in v), tuple(mu * x for x in a), mu * b))
            left -= 1
        left -= 1
    return out, c


def _network(neurons: Sequence[Neuron], c: Sequence[Fraction], m: int, k: int) -> Network:
    if not neurons:
        return Network(np.zeros((k, 0)), np.zeros((0, m)), np.zeros(0), list(c), m=m)
    V = [[v[a] for v, _, _ in neurons] for a in range(k)]
    return Network(V, [list(a) for _, a, _ in neurons], [b for _, _, b in neurons], list(c), m=m)
