"""The configurations (S, P) of a fibre: which kink classes a realization carries by a single negatively oriented
neuron (S) and which by a pair of opposite neurons (P), and what each costs (see docs/math/fibres.md).

A function f with normal form NF(f) = (K, M, e) has N = |U*| kink classes û = (α̂, β̂) with kinks κ_û.  With

    R_S = M + Σ_{û ∈ S} κ_û α̂_ûᵀ  (k×m),      ϱ(S, P) = rank(R_S modulo the row space of A_P),

a realization of type (S, P) needs t ≥ ϱ extra cancelling pairs, so it uses N + |P| + 2t neurons, and
cost(S, P) = |P| + 2 ϱ(S, P).  The minimal width, the strata, genericity and rigidity are all built on this
module, which is why it sits below them in the layer order (docs/architecture.md).

Everything is exact (Fractions; ranks over ℚ through :mod:`relusym._exact.linalg`).  The enumeration of configurations
costs about 3^N small rank computations (vectorised: subset sums of integer matrices and their ranks modulo a
prime, every claim "rank ≤ r" then re-checked over ℚ); it runs under a deadline and says when it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._core.analysis import Analysis, KinkData, Vec
from relusym._exact import linalg as linalg
from relusym._exact.modular import batched_rank_mod_p
from relusym._exact.numbers import common_denominator, fraction_str
from relusym._exact.subsets import subset_sums

__all__ = [
    "Configuration",
    "ConfigurationSet",
    "OwnConfiguration",
    "configurations",
    "own_configuration",
    "kink_neurons",
    "describe_configuration",
]


_PRIME = 2147483647  # 2^31 - 1: residues multiply exactly in int64


_ENUMERATION_LIMIT = 6_000_000  # rows of subset sums the exact enumeration may visit (≈ 3^14)


_ENTRY_LIMIT = 40_000_000  # entries of one table of subset sums (2^N rows of k·m entries)


@dataclass(frozen=True)
class Configuration:
    """A configuration (S, P) of docs/math/strata.md (class indices in NF order), with ϱ(S, P) and w_P = rank A_P."""

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
        """The order of docs/math/width.md step 1: (cost, |P|, sorted(P), sorted(S)) (indices are in û order)."""
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


def _ranks_at_most(sums: np.ndarray, k: int, mbar: int, rmax: int) -> np.ndarray:
    """Exact ranks of the k×mbar matrices in ``sums`` where they are ≤ rmax; rmax + 1 marks "larger"."""
    B = sums.shape[0]
    if k * mbar == 0:
        return np.zeros(B, dtype=np.int64)
    nz = (sums != 0).any(axis=1)
    if min(k, mbar) == 1 or rmax == 0:
        out = nz.astype(np.int64)
        return np.asarray(np.minimum(out, rmax + 1))
    res = (sums % _PRIME).astype(np.int64).reshape(B, k, mbar)
    rp = batched_rank_mod_p(res)  # a lower bound of the rank over ℚ
    out = np.full(B, rmax + 1, dtype=np.int64)
    for i in np.nonzero(rp <= rmax)[0].tolist():
        row = sums[i].tolist()
        r = linalg.rank([row[a * mbar : (a + 1) * mbar] for a in range(k)])
        out[i] = r if r <= rmax else rmax + 1
    return out


def configurations(
    kd: KinkData, max_cost: int, *, deadline: Deadline | None = None, limit: int = 100_000
) -> ConfigurationSet:
    """All configurations (S, P) with cost |P| + 2ϱ(S, P) ≤ ``max_cost`` (docs/math/strata.md), exactly.

    For each P (with |P| ≤ max_cost) the 2^(N−|P|) matrices R_S B_P (B_P a basis of the null space of A_P, so
    rank(R_S B_P) = ϱ(S, P)) are formed as integer subset sums and their ranks taken modulo a prime, a lower
    bound; every rank that decides admissibility is then recomputed over ℚ.  ``deadline`` (a
    :class:`~relusym._base.deadline.Deadline`) stops the search, which then reports ``complete=False``.
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

    def out_of_time() -> ConfigurationSet:
        return ConfigurationSet(
            max_cost,
            tuple(sorted(found, key=lambda c: c.key)),
            count,
            profile,
            False,
            count > len(found),
            "the configuration search ran out of time",
        )

    def late() -> bool:
        return deadline is not None and deadline.expired()

    for p in range(0, min(N, max_cost) + 1):
        rmax = (max_cost - p) // 2
        for P in combinations(range(N), p):
            if late():
                return out_of_time()
            AP = [kd.alpha[u] for u in P]
            wP = linalg.rank(AP) if P else 0
            if P:
                # the canonical nullspace basis has one vector per free column, supported on it and the pivots
                B = linalg.nullspace(AP, m)
                support = [[(c, x) for c, x in enumerate(vec) if x] for vec in B]
            else:
                support = [[(j, Fraction(1))] for j in range(m)]
            mbar = len(support)
            rest = [j for j in range(N) if j not in P]
            # R_S B for every S ⊆ rest: T = M B, Y_j = vec(κ_j α̂_jᵀ B); sums over the support of each basis
            # vector only (|P| + 1 terms), so the cost is linear in m, and the deadline is checked per vector
            Tq = [Fraction(0)] * (k * mbar)
            Yq = [[Fraction(0)] * (k * mbar) for _ in rest]
            for q, sup in enumerate(support):
                if q % 64 == 0 and late():
                    return out_of_time()
                for r in range(k):
                    Tq[r * mbar + q] = sum((kd.M[r][c] * x for c, x in sup), Fraction(0))
                    for i, j in enumerate(rest):
                        Yq[i][r * mbar + q] = sum((flat[j][r * m + c] * x for c, x in sup), Fraction(0))
            den = common_denominator([*Tq, *(x for y in Yq for x in y)])
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


@dataclass(frozen=True)
class OwnConfiguration:
    """The configuration θ itself realizes (docs/math/strata.md, docs/math/fibres.md): classes in NF order.

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


def own_configuration(an: Analysis) -> OwnConfiguration:
    """θ's own configuration (S_θ, P_θ) with ϱ(S_θ, P_θ) (docs/math/fibres.md)."""
    hc, kd = an.classes, an.kinks
    n_pos, n_neg = an.orientations
    order = an.nf_index
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


def kink_neurons(
    kd: KinkData, S: Collection[int], s_of: Mapping[int, Sequence[Fraction]]
) -> tuple[list[tuple[Vec, Vec, Fraction]], list[Fraction]]:
    """The neurons that carry the N kink classes in a realization of type (S, P) (docs/math/strata.md,
    docs/math/width.md step 4), in
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
