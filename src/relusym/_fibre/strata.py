"""Strata of the fibre: the combinatorial types (S, P, t) of its points, which of them occur, the dimension
of each, a verified witness point of each, and random points of a stratum for sampling (the theorem of
docs/math/strata.md).

A point of type (S, P, t) carries the kink classes of S only by negatively oriented neurons, those of P by
neurons of both orientations, the other kink classes only by positively oriented ones, and has t classes with
cancelled kink carrying both orientations; its other neurons are null, constant, duplicates on an oriented
hyperplane or same-orientation groups with cancelling kinks.  Whether a type occurs is decided exactly by
:func:`patterns` (linear algebra over ℚ); its dimension is the largest dimension of its pieces, each given by a
closed formula and checked against the exact rank of the tangent space of the realization equations at a
verified rational point of the piece (:func:`tangent_dimension`), which is kept as the witness.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._core.analysis import Analysis, KinkData
from relusym._core.classes import HyperplaneClasses
from relusym._core.network import Network, NeuronType
from relusym._core.operations import flip
from relusym._exact import linalg as linalg
from relusym._exact.numbers import fractions_of, to_fraction
from relusym._fibre.configurations import Configuration, ConfigurationSet, OwnConfiguration
from relusym._fibre.patterns import Pattern, patterns, x_star
from relusym._fibre.tangent import point_type, tangent_dimension
from relusym._fibre.witness import build_point

__all__ = [
    "Stratum",
    "closed_form_dimension",
    "fibre_dimension",
    "flip_strata",
    "own_stratum",
    "stratum_dimension",
    "stratum_point",
    "type_strata",
    "type_stratum",
]

_TANGENT_LIMIT = 600  # parameters up to which the dimension of a piece is also checked by the exact tangent rank
_WITNESS_JSON = 64  # witnesses with at most this many neurons are written out by to_dict()


# ----------------------------------------------------------------------------------------------------------
# dimension formulas
def stratum_dimension(N: int, n: int, k: int, m: int, p: int, rank_P: int, rho: int, t: int) -> int:
    """The dimension of the piece of type (S, P, t) realized without pinned classes and without doubly
    cancelled classes (J0 = Jk = ∅, u = 0 in docs/math/strata.md), with ϱ = ϱ(S, P), w_P = ``rank_P`` and
    the spare neurons adding δ each:

        N + |P| + 2t + k(|P| − w_P) + t·w_P + X*(t, ϱ, k, m − w_P) + (n − N − |P| − 2t)·δ,

    X* the largest (s − ϱ)(k − s) + s t + m̄(t − s) over the ranks s of the matrix of the t negative kinks,
    max(ϱ, 1) ≤ s ≤ min(k, t), where s = t is excluded when ϱ = 0 and P = ∅ (the normals would vanish).
    ValueError when this piece is empty."""
    delta = max(m + 1, k + 1)
    spare = n - N - p - 2 * t
    xs = x_star(t, rho, k, m - rank_P, rank_P == 0) if t >= rho else []
    if spare < 0 or not xs:
        raise ValueError("not an admissible stratum")
    return N + p + 2 * t + k * (p - rank_P) + t * rank_P + max(x for _, x in xs) + spare * delta


def closed_form_dimension(N: int, n: int, k: int, m: int, width: int) -> int | None:
    """The closed forms of the fibre dimension (docs/math/strata.md): any k when w = N; k = 1 for
    w ∈ {N, N+1, N+2}."""
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
    """A combinatorial type (S, P, t) of points of the fibre and the set of its points (docs/math/strata.md):
    S the kink classes carried only by negatively oriented neurons, P the kink classes carried by neurons of
    both orientations, t the classes with cancelled kink carried by both orientations.  Classes are indices
    in NF order (``Fiber.classes``); ``S`` is None for large networks (then ``S_size`` is given).

    ``dimension`` is the largest dimension of its pieces, ``min_neurons`` the fewest neurons a point of this
    type needs, ``spare`` the neurons the largest piece leaves null (n − its core), ``pinned`` whether that
    piece needs a kink class whose negative or positive side cancels, ``witness`` a verified point of the
    type (same normal form, this type): a point of the largest piece (h·flip_T(θ) for the free orbits of
    class A; θ itself for the single unlisted stratum of a fibre too large to analyse).  ``dimension`` is the
    closed formula of docs/math/strata.md; ``tangent_checked``: it was also found equal to the exact tangent
    dimension at the witness (done for networks with at most 600 parameters)."""

    S: tuple[int, ...] | None
    P: tuple[int, ...]
    t: int
    rho: int
    rank_P: int
    dimension: int
    spare: int
    S_size: int
    own: bool = False
    min_neurons: int | None = None
    pinned: bool = False
    witness: Network | None = None
    tangent_checked: bool = False

    @property
    def key(self) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """(S, P, t)."""
        return (self.S or (), self.P, self.t)

    @property
    def orbit(self) -> bool:
        """True when this stratum is a single free H_n-orbit (t = 0, no spare neurons, nothing pinned,
        independent normals on P)."""
        return self.t == 0 and self.spare == 0 and not self.pinned and self.rank_P == len(self.P)

    def describe(self) -> str:
        s = "S = " + ("{" + ", ".join(map(str, self.S)) + "}" if self.S is not None else f"<{self.S_size} classes>")
        p = "P = {" + ", ".join(map(str, self.P)) + "}"
        extra = f", {self.spare} spare neuron(s)" if self.spare else ""
        kind = " (one free orbit)" if self.orbit else (" (a class with a cancelling side)" if self.pinned else "")
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
            "min_neurons": self.min_neurons,
            "pinned": self.pinned,
            "tangent_checked": self.tangent_checked,
            "orbit": self.orbit,
            "own": self.own,
            "witness": None if self.witness is None or self.witness.n > _WITNESS_JSON else self.witness.to_dict(),
            "description": self.describe(),
        }


def fibre_dimension(kd: KinkData, admissible: ConfigurationSet, n: int) -> int:
    """The dimension of the fibre from the profile (|P|, w_P, ϱ) of the admissible configurations: the
    largest :func:`stratum_dimension`, −1 when there is none (used when the strata are not listed)."""
    best = -1
    for (p, wP, rho), _cnt in admissible.profile.items():
        for t in range(rho, (n - kd.N - p) // 2 + 1):
            try:
                best = max(best, stratum_dimension(kd.N, n, kd.k, kd.m, p, wP, rho, t))
            except ValueError:
                continue
    return best


def flip_strata(an: Analysis, sets: Sequence[tuple[int, ...]] | None) -> tuple[KinkData | None, list[Stratum]]:
    """The strata of a class-A fibre (Theorem B(ii) of docs/math/fibres.md): one free orbit of type
    S = S_θ △ T for each flip set T of ``sets`` (classes in NF order), witnessed by flip_T(θ), and the
    KinkData that realizes them; a single unlisted stratum, θ's own, when ``sets`` is None."""
    net, hc = an.net, an.classes
    n = net.n
    neg = np.asarray(hc.lam < 0) & (hc.neuron_type == NeuronType.HYPERPLANE)
    if sets is None:
        return None, [Stratum(None, (), 0, 0, 0, n, 0, int(neg.sum()), own=True, min_neurons=n, witness=net)]
    order = an.nf_index
    to_nf = {i: order[int(hc.label[i])] for i in range(n) if hc.label[i] >= 0 and int(hc.label[i]) in order}
    S0 = {to_nf[i] for i in range(n) if neg[i]}
    strata: list[Stratum] = []
    for T in sets:
        S = tuple(sorted(S0 ^ {to_nf[i] for i in T}))
        w = flip(net, T) if T else net
        strata.append(Stratum(S, (), 0, 0, 0, n, 0, len(S), own=not T, min_neurons=n, witness=w))
    return an.kinks, strata


# ----------------------------------------------------------------------------------------------------------
# the strata of a fibre
def _seed(S: Sequence[int], P: Sequence[int], t: int, tries: int) -> int:
    return hash((tuple(S), tuple(P), t, tries)) & 0xFFFFFFFF


def type_stratum(
    kd: KinkData, n: int, S: Sequence[int], P: Sequence[int], t: int, *, own: bool = False, tries: int = 12
) -> tuple[Stratum | None, str | None]:
    """The stratum of type (S, P, t) in the n-neuron fibre, with its dimension and a witness: the largest piece
    of :func:`patterns` (the neurons' roles J0, Jk, u; its dimension the largest over the ranks s), witnessed
    by a random point of it that is verified (same normal form, this type) and at which the exact tangent
    dimension equals the piece's dimension.
    (None, None) when the type is empty (proven), (None, reason) when no pattern could be witnessed."""
    pats = patterns(kd, n, S, P, t)
    if not pats:
        return None, None
    pieces: dict[tuple[tuple[int, ...], tuple[int, ...], int], list[Pattern]] = {}
    for pat in pats:  # the ranks s of one piece (same roles of the neurons) are loci inside it
        pieces.setdefault((pat.J0, pat.Jk, pat.u), []).append(pat)
    # only the largest piece can give the dimension of the stratum: it is the one to witness
    for (J0, Jk, u), group in list(pieces.items())[:1]:
        dim = max(q.dimension for q in group)
        r = _random.Random(_seed(S, P, t, hash((J0, Jk, u)) & 0xFFFF))
        for attempt in range(tries):
            pat = group[attempt % len(group)]
            pt = build_point(kd, n, S, P, t, pat, r, spare="top")
            if pt is None:
                continue
            pa = Analysis(pt)
            if pa.kinks != kd or point_type(pa) != (tuple(S), tuple(P), t):
                continue
            checked = n * (kd.m + kd.k + 1) + kd.k <= _TANGENT_LIMIT
            if checked and tangent_dimension(pa) != dim:
                continue
            stratum = Stratum(
                tuple(S),
                tuple(P),
                t,
                kd.rho(tuple(S), tuple(P)),
                kd.rank_P(tuple(P)),
                dim,
                n - pat.neurons,
                len(S),
                own=own,
                min_neurons=min(q.neurons for q in pats),
                pinned=bool(J0 or Jk or u),
                witness=pt,
                tangent_checked=checked,
            )
            return stratum, None
    return None, f"no witness was found for the type S = {list(S)}, P = {list(P)}, t = {t}"


def type_strata(
    kd: KinkData,
    n: int,
    configs: Sequence[Configuration],
    own: tuple[tuple[int, ...], tuple[int, ...], int],
    *,
    deadline: Deadline | None = None,
) -> tuple[list[Stratum], list[str]]:
    """Every nonempty stratum (S, P, t) of the n-neuron fibre whose (S, P) is among ``configs`` (all with
    ϱ(S, P) ≤ t, which every point satisfies), each with its dimension and a witness; θ's own type (``own``)
    is marked.  The notes say which nonempty types got no witness, or that ``deadline`` (a
    :class:`~relusym._base.deadline.Deadline`) stopped the listing."""
    strata: list[Stratum] = []
    notes: list[str] = []
    for done, cfg in enumerate(configs):
        if deadline is not None and deadline.expired():
            notes.append(f"the strata listing ran out of time after {done} of {len(configs)} configurations")
            break
        for t in range(cfg.rho, (n - kd.N - len(cfg.P)) // 2 + 1):
            st, why = type_stratum(kd, n, cfg.S, cfg.P, t, own=(cfg.S, cfg.P, t) == own)
            if st is not None:
                strata.append(st)
            elif why is not None:
                notes.append(why)
    return strata, notes


def own_stratum(kd: KinkData, own: OwnConfiguration, n: int, *, list_S: bool) -> Stratum | None:
    """θ's own stratum (S_θ, P_θ, t_θ) with its dimension and a witness; S is given only when ``list_S``."""
    st, _ = type_stratum(kd, n, own.S, own.P, own.extra, own=True)
    if st is None or list_S:
        return st
    return replace(st, S=None)


def stratum_point(an: Analysis, kd: KinkData | None, strata: Sequence[Stratum], r: _random.Random) -> Network | None:
    """A random point of the fibre of θ outside class A (same n): a random listed stratum, a random pattern
    of it, random spare neurons, checked to have the stratum's type; near θ's own type (local moves) when
    the strata are not listed.  None when this try failed (try again)."""
    net = an.net
    if kd is None or not strata or any(st.S is None for st in strata):
        return _local_moves(an, r)
    st = strata[r.randrange(len(strata))]
    assert st.S is not None
    pats = patterns(kd, net.n, st.S, st.P, st.t)
    if not pats:  # pragma: no cover - a listed stratum is nonempty
        return None
    pat = pats[r.randrange(len(pats))]
    pt = build_point(kd, net.n, st.S, st.P, st.t, pat, r, spare="random")
    if pt is None or point_type(Analysis(pt)) != st.key:
        return None
    return pt


def _local_moves(an: Analysis, r: _random.Random) -> Network:
    """A random fibre point near θ's own type, for large networks: O3 transfers between neurons on the same
    oriented hyperplane, O1 replacement of null neurons, O2 changes of constant neurons, O6 translations of
    cancelling pairs, then a random permutation with power-of-two scales.  A keeps its dtype (only null rows
    change, to small integers); V, b and c become exact rationals."""
    net, hc = an.net, an.classes
    n, k = net.n, net.k
    V_exact, _, b_exact = an.fractions
    V = V_exact.copy()
    b = b_exact.copy()
    A = np.array(net.A, copy=True)
    c = [to_fraction(x) for x in net.c.tolist()]
    lam = [
        to_fraction(x) if hc.neuron_type[i] == NeuronType.HYPERPLANE else Fraction(0)
        for i, x in enumerate(hc.lam.tolist())
    ]
    members: dict[int, list[int]] = {}
    for i in range(n):
        if hc.label[i] >= 0:
            members.setdefault(int(hc.label[i]), []).append(i)
    for mem in members.values():
        c = _class_moves(hc, mem, lam, V, b, c, r, k)
    c = _inactive_moves(net, hc, V, A, b, c, r)
    return _permuted(net, V, A, b, c, r)


def _class_moves(
    hc: HyperplaneClasses,
    mem: list[int],
    lam: list[Fraction],
    V: np.ndarray,
    b: np.ndarray,
    c: list[Fraction],
    r: _random.Random,
    k: int,
) -> list[Fraction]:
    """O3 and O6 on the neurons of one hyperplane class (V and b changed in place); the new c."""
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
    return c


def _inactive_moves(
    net: Network,
    hc: HyperplaneClasses,
    V: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    c: list[Fraction],
    r: _random.Random,
) -> list[Fraction]:
    """O1 and O2 on the null and constant neurons (V, A and b changed in place); the new c."""
    k = net.k
    for i in range(net.n):
        if hc.neuron_type[i] == NeuronType.HYPERPLANE:
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
    return c


def _permuted(
    net: Network, V: np.ndarray, A: np.ndarray, b: np.ndarray, c: list[Fraction], r: _random.Random
) -> Network:
    """The network (V, A, b, c) with its neurons in a random order and random power-of-two scales."""
    n = net.n
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
