"""Minimal width w(f), the configurations (S, P) of a fibre, and the canonical minimal network (spec §5.1,
§5.2, §6).

A function f with normal form NF(f) = (K, M, e) has N = |U*| kink classes û = (α̂, β̂) with kinks κ_û.  A
*configuration* is a pair of disjoint sets of classes: S (classes carried by a single negatively oriented
neuron) and P (mixed classes: one neuron of each orientation).  With

    R_S = M + Σ_{û ∈ S} κ_û α̂_ûᵀ  (k×m),      ϱ(S, P) = rank(R_S modulo the row space of A_P),

a realization of type (S, P) needs t ≥ ϱ extra cancelling pairs, so it uses N + |P| + 2t neurons, and

    w(f) = N + min over (S, P) of cost(S, P),   cost(S, P) = |P| + 2 ϱ(S, P)            (§5.2)

Everything is exact (Fractions; ranks over ℚ through :mod:`relusym.linalg`).  The enumeration of
configurations costs about 3^N small rank computations (vectorised: subset sums of integer matrices and their
ranks modulo a prime, every claim "rank ≤ r" then re-checked over ℚ); it runs under a deadline and says when
it stopped. Deciding w(f) = N is subset sum (NP-hard already for k = m = 1): for large N only certificates and
the network's own configuration are used, and the answer may be "undecided within budget".
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from . import _linalg as linalg
from ._group import Symmetry
from ._network import Network
from ._normal_form import HyperplaneClasses, NormalForm, hyperplane_classes, normal_form
from ._numbers import fraction_str, to_fraction
from .errors import BudgetExceededError, InvalidNetworkError

__all__ = [
    "KinkData",
    "Configuration",
    "ConfigurationSet",
    "OwnConfiguration",
    "MinimalNetwork",
    "configurations",
    "own_configuration",
    "minimal_width",
    "minimal_network",
    "canonical_minimal_network",
    "prune",
]

Vec = tuple[Fraction, ...]
Mat = tuple[Vec, ...]

_PRIME = 2147483647  # 2^31 - 1: residues multiply exactly in int64
_ENUMERATION_LIMIT = 6_000_000  # rows of subset sums the exact enumeration may visit (≈ 3^14)
_ENTRY_LIMIT = 40_000_000  # entries of one table of subset sums (2^N rows of k·m entries)


# ----------------------------------------------------------------------------------------------------------
# the data of a normal form, exact


@dataclass(frozen=True)
class KinkData:
    """NF(f) as exact rationals, classes in the order of ``NormalForm.K`` (sorted by û): α̂_j, β̂_j, κ_j, M,
    e."""

    m: int
    k: int
    alpha: tuple[Vec, ...]
    beta: Vec
    kappa: tuple[Vec, ...]
    M: Mat
    e: Vec

    @property
    def N(self) -> int:
        """The number of kink classes |U*|."""
        return len(self.alpha)

    @classmethod
    def of(cls, x: Network | NormalForm) -> KinkData:
        nf = normal_form(x) if isinstance(x, Network) else x
        m = nf.m
        alpha = tuple(tuple(u[:m]) for u, _ in nf.K)
        beta = tuple(u[m] for u, _ in nf.K)
        kappa = tuple(tuple(kap) for _, kap in nf.K)
        return cls(m, nf.k, alpha, beta, kappa, tuple(tuple(r) for r in nf.M), tuple(nf.e))

    def hyperplane(self, j: int) -> Vec:
        return (*self.alpha[j], self.beta[j])

    def R(self, S: Iterable[int]) -> list[list[Fraction]]:
        """R_S = M + Σ_{j ∈ S} κ_j α̂_jᵀ (k×m)."""
        R = [list(row) for row in self.M]
        for j in S:
            kap, al = self.kappa[j], self.alpha[j]
            for r in range(self.k):
                if kap[r]:
                    for col in range(self.m):
                        if al[col]:
                            R[r][col] += kap[r] * al[col]
        return R

    def rank_P(self, P: Sequence[int]) -> int:
        return linalg.rank([self.alpha[u] for u in P]) if P else 0

    def rho(self, S: Iterable[int], P: Sequence[int]) -> int:
        """ϱ(S, P): the rank of R_S modulo the row space of A_P (spec §5.1)."""
        R = self.R(S)
        AP = [list(self.alpha[u]) for u in P]
        return linalg.rank(R + AP) - (linalg.rank(AP) if AP else 0)


# ----------------------------------------------------------------------------------------------------------
# configurations


@dataclass(frozen=True)
class Configuration:
    """A configuration (S, P) of spec §5.1 (class indices in NF order), with ϱ(S, P) and w_P = rank A_P."""

    S: tuple[int, ...]
    P: tuple[int, ...]
    rho: int
    rank_P: int

    @property
    def cost(self) -> int:
        """|P| + 2ϱ: the neurons needed beyond one per kink class."""
        return len(self.P) + 2 * self.rho

    @property
    def key(self) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
        """The order of spec §6 step 1: (cost, |P|, sorted(P), sorted(S)) (indices are in û order)."""
        return (self.cost, len(self.P), self.P, self.S)

    def to_dict(self) -> dict[str, Any]:
        return {
            "S": list(self.S),
            "P": list(self.P),
            "rho": self.rho,
            "rank_P": self.rank_P,
            "cost": self.cost,
        }


@dataclass(frozen=True)
class ConfigurationSet:
    """The configurations with cost ≤ ``max_cost`` (the *admissible* ones for n = N + max_cost neurons).

    ``configurations`` is sorted by :attr:`Configuration.key` and holds all of them when ``complete`` and not
    ``truncated``; ``count`` counts every one found; ``profile`` maps (|P|, w_P, ϱ) to how many have it (the
    fibre dimension depends only on these three numbers); ``undecided`` explains an incomplete search.
    """

    max_cost: int
    configurations: tuple[Configuration, ...]
    count: int
    profile: dict[tuple[int, int, int], int]
    complete: bool
    truncated: bool
    undecided: str | None = None

    @property
    def min_cost(self) -> int | None:
        return min((c.cost for c in self.configurations), default=None)

    @property
    def best(self) -> Configuration | None:
        return min(self.configurations, key=lambda c: c.key, default=None)


def _enumeration_size(N: int, max_cost: int) -> int:
    return sum(math.comb(N, p) * 2 ** (N - p) for p in range(0, min(N, max_cost) + 1))


def _common_scale(values: Iterable[Fraction]) -> int:
    den = 1
    for v in values:
        den = math.lcm(den, v.denominator)
    return den


def subset_sums(Y: list[list[int]], T: list[int]) -> np.ndarray:
    """All 2^len(Y) sums T + Σ_{i ∈ mask} Y_i, row index = bitmask (exact: int64 when safe, else Python
    ints)."""
    d = len(T)
    bound = max((abs(x) for x in T), default=0) + sum(max((abs(x) for x in y), default=0) for y in Y)
    dtype: Any = np.int64 if bound < 2**62 else object
    sums = np.array([T], dtype=dtype).reshape(1, d)
    for y in Y:
        sums = np.concatenate([sums, sums + np.array(y, dtype=dtype)[None, :]], axis=0)
    return sums


def _batched_rank_mod_p(X: np.ndarray, p: int = _PRIME) -> np.ndarray:
    """Ranks modulo p of a batch of small matrices X (B × r × c, int64 entries in [0, p))."""
    X = X.copy()
    B, r, c = X.shape
    rank = np.zeros(B, dtype=np.int64)
    used = np.zeros((B, r), dtype=bool)
    for col in range(c):
        nz = (X[:, :, col] != 0) & ~used
        has = nz.any(axis=1)
        idx = np.nonzero(has)[0]
        if idx.size == 0:
            continue
        piv = np.argmax(nz[idx], axis=1)
        sub = X[idx]
        ar = np.arange(idx.size)
        prow = sub[ar, piv, :]
        pval = prow[:, col]
        f = sub[:, :, col]
        sub = (sub * pval[:, None, None] - f[:, :, None] * prow[:, None, :]) % p
        sub[ar, piv, :] = prow
        X[idx] = sub
        used[idx, piv] = True
        rank[idx] += 1
    return rank


def _ranks_at_most(sums: np.ndarray, k: int, mbar: int, rmax: int) -> np.ndarray:
    """Exact ranks of the k×mbar matrices in ``sums`` where they are ≤ rmax; rmax + 1 marks "larger"."""
    B = sums.shape[0]
    if k * mbar == 0:
        return np.zeros(B, dtype=np.int64)
    nz = (sums != 0).any(axis=1)
    if min(k, mbar) == 1 or rmax == 0:
        out = nz.astype(np.int64)
        return np.minimum(out, rmax + 1)
    res = (sums % _PRIME).astype(np.int64).reshape(B, k, mbar)
    rp = _batched_rank_mod_p(res)  # a lower bound of the rank over ℚ
    out = np.full(B, rmax + 1, dtype=np.int64)
    for i in np.nonzero(rp <= rmax)[0].tolist():
        row = sums[i].tolist()
        r = linalg.rank([row[a * mbar : (a + 1) * mbar] for a in range(k)])
        out[i] = r if r <= rmax else rmax + 1
    return out


def configurations(
    kd: KinkData, max_cost: int, *, deadline: float | None = None, limit: int = 100_000
) -> ConfigurationSet:
    """All configurations (S, P) with cost |P| + 2ϱ(S, P) ≤ ``max_cost`` (spec §5.1), exactly.

    For each P (with |P| ≤ max_cost) the 2^(N−|P|) matrices R_S B_P (B_P a basis of the null space of A_P, so
    rank(R_S B_P) = ϱ(S, P)) are formed as integer subset sums and their ranks taken modulo a prime, a lower
    bound; every rank that decides admissibility is then recomputed over ℚ.  ``deadline`` (a
    ``time.monotonic()`` value) stops the search, which then reports ``complete=False``.
    """
    N, k, m = kd.N, kd.k, kd.m
    if max_cost < 0:
        return ConfigurationSet(max_cost, (), 0, {}, True, False)
    size = _enumeration_size(N, max_cost)
    if size > _ENUMERATION_LIMIT or 2**N * max(1, k * m) > _ENTRY_LIMIT:
        return ConfigurationSet(
            max_cost,
            (),
            0,
            {},
            False,
            False,
            f"enumerating the configurations of {N} kink classes would visit about 2^{size.bit_length() - 1} subsets",
        )
    found: list[Configuration] = []
    count = 0
    profile: dict[tuple[int, int, int], int] = {}
    flat = [[kd.kappa[j][r] * kd.alpha[j][c] for r in range(k) for c in range(m)] for j in range(N)]
    for p in range(0, min(N, max_cost) + 1):
        rmax = (max_cost - p) // 2
        for P in combinations(range(N), p):
            if deadline is not None and time.monotonic() > deadline:
                return ConfigurationSet(
                    max_cost,
                    tuple(sorted(found, key=lambda c: c.key)),
                    count,
                    profile,
                    False,
                    count > len(found),
                    "the configuration search ran out of time",
                )
            AP = [kd.alpha[u] for u in P]
            wP = linalg.rank(AP) if P else 0
            B = linalg.nullspace(AP, m) if P else [tuple(Fraction(int(i == j)) for i in range(m)) for j in range(m)]
            mbar = len(B)
            rest = [j for j in range(N) if j not in P]
            # R_S B for every S ⊆ rest: T = M B, Y_j = vec(κ_j α̂_jᵀ B)
            Tq = [sum((kd.M[r][c] * B[q][c] for c in range(m)), Fraction(0)) for r in range(k) for q in range(mbar)]
            Yq = [
                [
                    sum((flat[j][r * m + c] * B[q][c] for c in range(m)), Fraction(0))
                    for r in range(k)
                    for q in range(mbar)
                ]
                for j in rest
            ]
            den = _common_scale([*Tq, *(x for y in Yq for x in y)])
            T = [int(x * den) for x in Tq]
            Y = [[int(x * den) for x in y] for y in Yq]
            sums = subset_sums(Y, T)
            ranks = _ranks_at_most(sums, k, mbar, rmax)
            for mask in np.nonzero(ranks <= rmax)[0].tolist():
                rho = int(ranks[mask])
                count += 1
                key3 = (p, wP, rho)
                profile[key3] = profile.get(key3, 0) + 1
                if len(found) < limit:
                    S = tuple(rest[i] for i in range(len(rest)) if (mask >> i) & 1)
                    found.append(Configuration(S, P, rho, wP))
    return ConfigurationSet(
        max_cost, tuple(sorted(found, key=lambda c: c.key)), count, profile, True, count > len(found)
    )


# ----------------------------------------------------------------------------------------------------------
# θ's own configuration


@dataclass(frozen=True)
class OwnConfiguration:
    """The configuration θ itself realizes (spec §5.1, §5.4): classes in NF order.

    ``S``: kink classes carried only by negatively oriented neurons; ``P``: kink classes with neurons of both
    orientations; ``extra``: classes with cancelled kink (κ = 0) carrying both orientations, each adding a
    rank-one term to the linear part; ``duplicates``: classes with two neurons on the same oriented
    hyperplane; ``rho`` = ϱ(S, P), so θ shows w(f) ≤ N + |P| + 2ϱ.
    """

    S: tuple[int, ...]
    P: tuple[int, ...]
    rho: int
    rank_P: int
    extra: int
    duplicates: tuple[int, ...]
    cancelled_pairs: int
    nf_index: dict[int, int] = field(repr=False, compare=False)

    @property
    def cost(self) -> int:
        return len(self.P) + 2 * self.rho

    @property
    def configuration(self) -> Configuration:
        return Configuration(self.S, self.P, self.rho, self.rank_P)


def class_orientations(hc: HyperplaneClasses) -> tuple[np.ndarray, np.ndarray]:
    """For each class of ``hc``: the number of positively and of negatively oriented neurons on it."""
    hyper = hc.neuron_type == 2
    lab = hc.label[hyper]
    neg = np.asarray(hc.lam[hyper] < 0, dtype=bool)
    N_all = hc.N_all
    n_neg = np.bincount(lab[neg], minlength=N_all) if N_all else np.zeros(0, dtype=np.int64)
    n_pos = np.bincount(lab[~neg], minlength=N_all) if N_all else np.zeros(0, dtype=np.int64)
    return n_pos, n_neg


def nf_order(hc: HyperplaneClasses) -> dict[int, int]:
    """Map each kink class of ``hc`` (index into hc) to its index in NF order (sorted by exact û)."""
    kinks = np.nonzero(hc.kink_mask)[0].tolist()
    us = sorted((hc.u_exact(j), j) for j in kinks)
    return {j: i for i, (_, j) in enumerate(us)}


def own_configuration(
    net: Network, kd: KinkData | None = None, hc: HyperplaneClasses | None = None
) -> OwnConfiguration:
    """θ's own configuration (S_θ, P_θ) with ϱ(S_θ, P_θ) (spec §5.4)."""
    hc = hc if hc is not None else hyperplane_classes(net)
    kd = kd if kd is not None else KinkData.of(normal_form(net))
    n_pos, n_neg = class_orientations(hc)
    order = nf_order(hc)
    S: list[int] = []
    P: list[int] = []
    dup: list[int] = []
    extra = 0
    cancelled = 0
    for j in range(hc.N_all):
        pos, neg = int(n_pos[j]), int(n_neg[j])
        if pos > 1 or neg > 1:
            dup.append(j)
        if j in order:
            if pos and neg:
                P.append(order[j])
            elif neg:
                S.append(order[j])
        else:
            if pos and neg:
                extra += 1
                if pos == 1 and neg == 1:
                    cancelled += 1
    Pt, St = tuple(sorted(P)), tuple(sorted(S))
    return OwnConfiguration(St, Pt, kd.rho(St, Pt), kd.rank_P(Pt), extra, tuple(dup), cancelled, order)


def no_mixed_class(hc: HyperplaneClasses) -> bool:
    """True when no hyperplane class carries neurons of both orientations: then θ's own configuration has
    R_S = 0 and cost 0, so w(f) = N without any search."""
    n_pos, n_neg = class_orientations(hc)
    return not bool(((n_pos > 0) & (n_neg > 0)).any())


# ----------------------------------------------------------------------------------------------------------
# minimal width


@dataclass(frozen=True)
class WidthSearch:
    """What is known about w(f): bounds, the exact value when decided, and the best configuration found."""

    N: int
    width: int | None
    lower: int
    upper: int
    best: Configuration | None
    canonical: bool  # best is the minimizer of the key of spec §6 (the search over minimizers completed)
    minimizers: tuple[Configuration, ...] | None  # all configurations of minimal cost, when known
    undecided: str | None
    kd: KinkData | None = field(default=None, repr=False, compare=False)


def width_search(net: Network, *, budget: float = 10.0, hc: HyperplaneClasses | None = None) -> WidthSearch:
    """Decide w(ρ(θ)) (spec §5.2, §6) within ``budget`` seconds, with bounds when it cannot."""
    deadline = time.monotonic() + budget
    hc = hc if hc is not None else hyperplane_classes(net)
    N = int(hc.kink_mask.sum())
    kd = KinkData.of(NormalForm(hc))
    own = own_configuration(net, kd, hc)
    upper_cost = own.cost
    rank_M = linalg.rank(kd.M)
    if 2 * rank_M < upper_cost:
        upper_cost = 2 * rank_M
    if upper_cost == 0:
        cs = configurations(kd, 0, deadline=deadline)
        if cs.complete and not cs.truncated:
            return WidthSearch(N, N, N, N, cs.best, True, cs.configurations, None, kd)
        first = own.configuration if own.cost == 0 else Configuration((), (), 0, 0)
        if own.cost == 0 and _unique_cost_zero(net, hc):
            return WidthSearch(N, N, N, N, first, True, (first,), None, kd)
        why = cs.undecided or "too many minimizers"
        return WidthSearch(
            N, N, N, N, first, False, None,
            f"w = N is certain, but the lexicographically first minimizer (spec §6) was not found: {why}", kd,
        )  # fmt: skip
    cs = configurations(kd, upper_cost, deadline=deadline)
    if cs.complete:
        c_min = cs.min_cost
        assert c_min is not None
        mins = None if cs.truncated else tuple(c for c in cs.configurations if c.cost == c_min)
        return WidthSearch(N, N + c_min, N + c_min, N + c_min, cs.best, not cs.truncated, mins, None, kd)
    # large N: what the cheap certificates give
    fallback = own.configuration if own.cost == upper_cost else Configuration((), (), rank_M, 0)
    found = _cost_zero_search(kd, deadline)
    if found is not None:
        note = "w = N (a configuration of cost 0 was found); the first minimizer of spec §6 was not certified"
        return WidthSearch(N, N, N, N, Configuration(found, (), 0, 0), False, None, note, kd)
    lower = N
    if _cost_zero_impossible(kd):
        lower = N + 1
        if upper_cost == 1:
            note = "w = N + 1; the lexicographically first minimizer (spec §6) was not certified"
            return WidthSearch(N, N + 1, N + 1, N + 1, fallback, False, None, note, kd)
    note = f"undecided within budget: {cs.undecided}; N ≤ w ≤ N + {upper_cost} (deciding w = N is a subset-sum problem)"
    return WidthSearch(N, None, lower, N + upper_cost, fallback, False, None, note, kd)


def _unique_cost_zero(net: Network, hc: HyperplaneClasses) -> bool:
    """For θ in class A (one neuron per class, no null or constant neuron): S_θ is the only S with R_S = 0
    when the rows vec(v_i a_iᵀ) are certified independent (the flip certificate of :mod:`relusym.fiber`)."""
    if not (hc.N_all == net.n and bool((hc.neuron_type == 2).all()) and bool(hc.kink_mask.all())):
        return False
    from ._flips import flips_certified_absent

    return flips_certified_absent(net)


def _cost_zero_impossible(kd: KinkData) -> bool:
    """Certificate that no S has R_S = 0: −vec(M) is not in the span of the vec(κ_j α̂_jᵀ)."""
    rows = [[kd.kappa[j][r] * kd.alpha[j][c] for r in range(kd.k) for c in range(kd.m)] for j in range(kd.N)]
    target = [x for row in kd.M for x in row]
    if not rows:
        return any(target)
    return linalg.rank([*rows, target]) > linalg.rank(rows)


def _cost_zero_search(kd: KinkData, deadline: float) -> tuple[int, ...] | None:
    """Look for S with R_S = 0 (a subset sum with target −M) through the flip-set search, homogenized: a
    zero-sum set of the rows vec(κ_j α̂_jᵀ) and vec(M) that contains the last row.  None if none was found."""
    try:
        from . import _flipsearch as flipsearch
    except ImportError:  # pragma: no cover - depends on the parallel module
        return None
    rows = [[kd.kappa[j][r] * kd.alpha[j][c] for r in range(kd.k) for c in range(kd.m)] for j in range(kd.N)]
    rows.append([x for row in kd.M for x in row])
    den = _common_scale(x for row in rows for x in row)
    X = np.array([[int(x * den) for x in row] for row in rows], dtype=object)
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    res = flipsearch.find_flip_sets(X, max_sets=10_000, budget_seconds=left, rng=np.random.default_rng(0))
    last = kd.N
    for T in res.sets:
        if last in T:
            S = tuple(sorted(i for i in T if i != last))
            if not any(any(row) for row in kd.R(S)):
                return S
    return None


def minimal_width(net: Network, *, budget: float = 10.0) -> int:
    """w(ρ(θ)): the fewest hidden neurons that realize ρ(θ) exactly (spec §5.2, §6).

    Raises :class:`~relusym.errors.BudgetExceededError` (with the bounds found) when it cannot be decided
    within ``budget`` seconds, which can only happen when θ has classes carrying neurons of both orientations
    and many kink classes.

    >>> minimal_width(Network([[1, 1, 1]], [[1], [-1], [1]], [0, 0, -1]))  # E9
    2
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"minimal_width needs a Network, got {type(net).__name__}")
    hc = hyperplane_classes(net)
    if no_mixed_class(hc):
        return int(hc.kink_mask.sum())
    ws = width_search(net, budget=budget, hc=hc)
    if ws.width is None:
        raise BudgetExceededError(
            f"minimal width undecided within {budget} s: {ws.lower} ≤ w ≤ {ws.upper} ({ws.undecided})"
        )
    return ws.width


# ----------------------------------------------------------------------------------------------------------
# the canonical minimal network


def canonical_minimal_network(kd: KinkData, config: Configuration) -> tuple[list[tuple[Vec, Vec, Fraction]], Vec]:
    """The network of spec §6 (steps 2–5) for the configuration (S, P): neurons (v, a, b) and the output bias.

    For a minimizer of the key of §6 step 1 this is CMN(f).  Any configuration with independent normals on P
    gives a network with the same normal form and N + |P| + 2ϱ neurons.
    """
    k, m, N = kd.k, kd.m, kd.N
    S, P = set(config.S), list(config.P)
    R = kd.R(config.S)
    negR = [[-x for x in row] for row in R]
    s_of: dict[int, list[Fraction]] = {}
    Z = [list(row) for row in negR]
    if P:
        AP = [list(kd.alpha[u]) for u in P]
        G = [
            [sum((a * b for a, b in zip(AP[i], AP[j], strict=True)), Fraction(0)) for j in range(len(P))]
            for i in range(len(P))
        ]
        Ginv = linalg.inverse(G)  # an optimal P has independent normals (spec §6)
        # S_P = (−R) A_Pᵀ G⁻¹  (k × |P|)
        RA = [[sum((negR[r][c] * AP[i][c] for c in range(m)), Fraction(0)) for i in range(len(P))] for r in range(k)]
        SP = [
            [sum((RA[r][i] * Ginv[i][j] for i in range(len(P))), Fraction(0)) for j in range(len(P))] for r in range(k)
        ]
        for jj, u in enumerate(P):
            s_of[u] = [SP[r][jj] for r in range(k)]
        Z = [
            [negR[r][c] - sum((SP[r][i] * AP[i][c] for i in range(len(P))), Fraction(0)) for c in range(m)]
            for r in range(k)
        ]
    F, pivots = linalg.rref(Z, m) if k else ([], [])
    neurons, c_out = kink_neurons(kd, S, s_of)
    used = {kd.hyperplane(j) for j in range(N)}
    for row, piv in zip(F, pivots, strict=True):
        sj = tuple(Z[r][piv] for r in range(k))
        al = tuple(row)
        beta = 0
        while (*al, Fraction(beta)) in used:
            beta += 1
        used.add((*al, Fraction(beta)))
        bj = Fraction(beta)
        neurons.append((tuple(-x for x in sj), al, bj))
        neurons.append((sj, tuple(-x for x in al), -bj))
        c_out = [c + bj * x for c, x in zip(c_out, sj, strict=True)]
    return neurons, tuple(c_out)


def kink_neurons(
    kd: KinkData, S: Collection[int], s_of: Mapping[int, Sequence[Fraction]]
) -> tuple[list[tuple[Vec, Vec, Fraction]], list[Fraction]]:
    """The neurons that carry the N kink classes in a realization of type (S, P) (spec §5.1, §6 step 4), in
    class order, and the output bias they leave: a class j ∈ S by one negatively oriented neuron (κ_j, −α̂_j,
    −β̂_j), a class j of P, with negative kink s_j = ``s_of[j]``, by the pair (κ_j − s_j, α̂_j, β̂_j),
    (s_j, −α̂_j, −β̂_j), any other class by (κ_j, α̂_j, β̂_j); the bias is e + Σ_j β̂_j·(its negative kink)."""
    neurons: list[tuple[Vec, Vec, Fraction]] = []
    c_out = list(kd.e)
    for j in range(kd.N):
        al, be, kap = kd.alpha[j], kd.beta[j], kd.kappa[j]
        neg_al = tuple(-x for x in al)
        if j in S:
            neurons.append((kap, neg_al, -be))
            c_out = [c + be * x for c, x in zip(c_out, kap, strict=True)]
        elif j in s_of:
            s = s_of[j]
            neurons.append((tuple(x - y for x, y in zip(kap, s, strict=True)), al, be))
            neurons.append((tuple(s), neg_al, -be))
            c_out = [c + be * x for c, x in zip(c_out, s, strict=True)]
        else:
            neurons.append((kap, al, be))
    return neurons, c_out


def _assemble(
    neurons: Sequence[tuple[Sequence[Fraction], Sequence[Fraction], Fraction]],
    c: Sequence[Fraction],
    m: int,
    k: int,
    like: Network | None = None,
) -> Network:
    """A Network from exact neurons; float arrays of ``like``'s dtype when every entry is representable."""
    V = [[v[r] for v, _, _ in neurons] for r in range(k)]
    A = [list(a) for _, a, _ in neurons]
    b = [bb for _, _, bb in neurons]
    if like is not None and like.is_float:
        dtype = np.result_type(like.V, like.A, like.b, like.c)
        arrays = []
        ok = True
        for x, shape in (
            (V, (k, len(neurons))),
            (A, (len(neurons), m)),
            (b, (len(neurons),)),
            (list(c), (k,)),
        ):
            flat = np.asarray(x, dtype=object).ravel().tolist() if np.size(np.asarray(x, dtype=object)) else []
            with np.errstate(over="ignore"):
                arr = np.array([float(v) for v in flat], dtype=dtype).reshape(shape)
            if not all(np.isfinite(arr.ravel())) or any(
                Fraction(float(y)) != v for y, v in zip(arr.ravel().tolist(), flat, strict=True)
            ):
                ok = False
                break
            arrays.append(arr)
        if ok:
            return Network(arrays[0], arrays[1], arrays[2], arrays[3], m=m)
    if not neurons:
        return Network(np.zeros((k, 0)), np.zeros((0, m)), np.zeros(0), list(c), m=m)
    return Network(V, A, b, list(c), m=m)


@dataclass(frozen=True)
class MinimalNetwork:
    """The result of :func:`minimal_network`: the pruned ``network`` (w(f) neurons, same normal form),
    ``canonical`` (True when it is CMN(f) of spec §6, a function of ρ(θ) alone), the ``configuration`` it
    realizes, and ``note`` explaining a non-canonical result."""

    network: Network
    width: int
    canonical: bool
    configuration: Configuration
    note: str | None = None


def minimal_network(net: Network, *, budget: float = 10.0, keep_scales: bool = False) -> MinimalNetwork:
    """A network with w(ρ(θ)) neurons and the same normal form; CMN(f) of spec §6 whenever the search over
    minimizers completes (always for small N, and whenever θ's configuration is certified unique).

    ``keep_scales=True`` rescales each emitted neuron (by O0) to the scale |λ| of θ's first neuron on its
    hyperplane, so that pruning a float network whose classes are single neurons returns θ's own float
    weights (no longer canonical, but still minimal and with the same normal form).
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"prune needs a Network, got {type(net).__name__}")
    hc = hyperplane_classes(net)
    if net.n > 64 and _unique_cost_zero(net, hc):
        return _class_a_minimal(net, hc, keep_scales)
    ws = width_search(net, budget=budget, hc=hc)
    if ws.width is None or ws.best is None or ws.kd is None:
        raise BudgetExceededError(
            f"minimal width undecided within {budget} s: {ws.lower} ≤ w ≤ {ws.upper} ({ws.undecided})"
        )
    kd = ws.kd
    neurons, c = canonical_minimal_network(kd, ws.best)
    if keep_scales:
        neurons = _rescale_like(neurons, kd, hc)
    out = _assemble(neurons, c, net.m, net.k, like=net)
    if len(neurons) != ws.width:  # pragma: no cover - would contradict §6
        raise AssertionError("the minimal network does not have w(f) neurons")
    if normal_form(out) != NormalForm(hc):  # pragma: no cover - would contradict §6
        raise AssertionError("the minimal network does not realize the same function")
    return MinimalNetwork(out, ws.width, ws.canonical and not keep_scales, ws.best, ws.undecided)


def _class_a_minimal(net: Network, hc: HyperplaneClasses, keep_scales: bool) -> MinimalNetwork:
    """CMN of a large class-A network whose flip sets are certified trivial (so S_θ is the only minimizer):
    each neuron rescaled by 1/|λ_i| (its kink κ = |λ_i| v_i, its row ±û) and the neurons sorted by exact û;
    the output bias is θ's.  With ``keep_scales`` only the sorting (θ's own float weights)."""
    order = _exact_class_order(hc)
    n = net.n
    perm = [0] * n
    for slot, i in enumerate(order):
        perm[i] = slot
    if keep_scales:
        out = Symmetry(perm).act(net)
    else:
        lam = [abs(to_fraction(x)) for x in hc.lam.tolist()]
        out = Symmetry(perm, [1 / x for x in lam]).act(net)
    S = tuple(sorted(slot for slot, i in enumerate(order) if hc.lam[i] < 0))
    return MinimalNetwork(out, n, not keep_scales, Configuration(S, (), 0, 0), None)


def _exact_class_order(hc: HyperplaneClasses) -> list[int]:
    """The neurons of a class-A network sorted by their exact û (lexicographically): float keys first
    (correctly rounded, so monotone), then every adjacent pair compared exactly; a full exact sort if any pair
    is out of order."""
    keys = hc.keys[hc.label]
    order = [int(i) for i in (np.lexsort(keys.T[::-1]) if len(keys) else [])]

    def u(i: int) -> tuple[Fraction, ...]:
        lam = to_fraction(hc.lam[i])
        return tuple(to_fraction(x) / lam for x in hc.row(i).tolist())

    def less(i: int, j: int) -> bool:
        lam_i, lam_j = to_fraction(hc.lam[i]), to_fraction(hc.lam[j])
        for x, y in zip(hc.row(i).tolist(), hc.row(j).tolist(), strict=True):
            xi, yj = to_fraction(x) / lam_i, to_fraction(y) / lam_j
            if xi != yj:
                return xi < yj
        return False

    if all(less(i, j) for i, j in itertools.pairwise(order)):
        return order
    return sorted(range(len(hc.lam)), key=u)  # pragma: no cover - float keys misordered (ties)


def _rescale_like(
    neurons: list[tuple[Vec, Vec, Fraction]], kd: KinkData, hc: HyperplaneClasses
) -> list[tuple[Vec, Vec, Fraction]]:
    scale: dict[Vec, Fraction] = {}
    for j in range(hc.N_all):
        i = int(hc.rep[j])
        u = hc.u_exact(j)
        scale.setdefault(u, abs(to_fraction(hc.lam[i])))
    out = []
    for v, a, b in neurons:
        p = next(i for i, x in enumerate(a) if x != 0)
        lam = a[p]
        u = tuple(x / lam for x in a) + (b / lam,)
        d = scale.get(u, Fraction(1)) / abs(lam)
        out.append((tuple(x / d for x in v), tuple(x * d for x in a), b * d))
    return out


def prune(net: Network, *, budget: float = 10.0, keep_scales: bool = False) -> Network:
    """The canonical minimal network CMN(ρ(θ)) of spec §6: w(f) neurons, the same normal form, exact.

    Float dtype is kept when every entry of the result is exactly representable in the input's float dtype;
    otherwise entries are Fractions.  See :func:`minimal_network` for ``keep_scales`` and for the (rare,
    large) cases where the result is minimal but not certified canonical.

    >>> small = prune(Network([[1, 2]], [[1], [-1]], [0, 1]))  # E1
    >>> small.to_dict()["V"], small.to_dict()["A"], small.to_dict()["b"], small.to_dict()["c"]
    ([['2', '1']], [['-1'], ['1']], ['1', '0'], ['0'])
    """
    return minimal_network(net, budget=budget, keep_scales=keep_scales).network


def describe_configuration(kd: KinkData, config: Configuration) -> str:
    """A short readable description of a configuration."""

    def cls(j: int) -> str:
        return "(" + ", ".join(fraction_str(x) for x in kd.hyperplane(j)) + ")"

    parts = []
    if config.S:
        parts.append("negative single on " + ", ".join(cls(j) for j in config.S))
    if config.P:
        parts.append("opposite pair on " + ", ".join(cls(j) for j in config.P))
    if not parts:
        parts.append("all classes positive singles")
    return "; ".join(parts)
