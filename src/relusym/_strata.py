"""Strata of the fibre (spec §5.1, §5.5): the combinatorial types (S, P, t) of its points, their dimensions (the
function X, Dim(S, P, t) and the closed forms of §5.5), and random points of a stratum for sampling.

A point of type (S, P, t) carries the N kink classes with one negatively oriented neuron for each class of S,
a pair of opposite orientations for each class of P, and t extra cancelling pairs; its remaining ``spare``
neurons are null, constant or duplicates.  :func:`stratum_point` builds a random point of a random stratum
(re-factorized, with O5 moves, O6 translations and spare neurons) or, when the strata are not listed, moves θ
randomly inside its own type.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from . import _linalg as linalg
from ._configurations import Configuration, ConfigurationSet, KinkData, OwnConfiguration, kink_neurons, nf_order
from ._group import Symmetry
from ._network import Network
from ._normal_form import HyperplaneClasses, NormalForm, hyperplane_classes
from ._numbers import fractions_of, to_fraction

__all__ = ["Stratum", "stratum_dimension"]

Neuron = tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction]


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


def closed_form_dimension(N: int, n: int, k: int, m: int, width: int) -> int | None:
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
        s = "S = " + ("{" + ", ".join(map(str, self.S)) + "}" if self.S is not None else f"<{self.S_size} classes>")
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
# the strata of a fibre (§5.1)


def _stratum(kd: KinkData, n: int, cfg: Configuration, t: int, *, own: bool, list_S: bool = True) -> Stratum:
    """The stratum (S, P, t) of configuration ``cfg`` in an n-neuron fibre, with its dimension and spare
    neurons; S is given only when ``list_S``."""
    d = stratum_dimension(kd.N, n, kd.k, kd.m, len(cfg.P), cfg.rank_P, cfg.rho, t)
    spare = n - kd.N - len(cfg.P) - 2 * t
    return Stratum(cfg.S if list_S else None, cfg.P, t, cfg.rho, cfg.rank_P, d, spare, len(cfg.S), own=own)


def configuration_strata(
    kd: KinkData, configs: Sequence[Configuration], own: OwnConfiguration, n: int
) -> list[Stratum]:
    """The nonempty strata (S, P, t) of the configurations ``configs``, t from ϱ(S, P) up to what n neurons
    allow; θ's own type is marked."""
    strata: list[Stratum] = []
    for cfg in configs:
        pinned_ok = _pair_kinks_free(kd, cfg)
        for t in range(cfg.rho, (n - kd.N - len(cfg.P)) // 2 + 1):
            if (t == 0 and not pinned_ok) or (t == 1 and cfg.rho == 0 and not cfg.P):
                continue  # empty as a type: a pair neuron would be null, or a lone pair cannot cancel
            own_type = cfg.S == own.S and cfg.P == own.P and t == own.extra
            strata.append(_stratum(kd, n, cfg, t, own=own_type))
    return strata


def own_stratum(kd: KinkData, own: OwnConfiguration, n: int, *, list_S: bool) -> Stratum | None:
    """θ's own stratum (S_θ, P_θ, t_θ), when it is a type of its own; S is given only when ``list_S``."""
    t = own.extra
    if own.rho > t or kd.N + len(own.P) + 2 * t > n:
        return None
    return _stratum(kd, n, own.configuration, t, own=True, list_S=list_S)


def fibre_dimension(kd: KinkData, admissible: ConfigurationSet, n: int) -> int:
    """The dimension of the fibre (§5.5): the largest Dim(S, P, t) over the admissible configurations (their
    profile (|P|, w_P, ϱ) is all it needs), −1 when there is none."""
    best = -1
    for (p, wP, rho), _cnt in admissible.profile.items():
        for t in range(rho, (n - kd.N - p) // 2 + 1):
            best = max(best, stratum_dimension(kd.N, n, kd.k, kd.m, p, wP, rho, t))
    return best


def flip_strata(hc: HyperplaneClasses, sets: Sequence[tuple[int, ...]] | None) -> tuple[KinkData | None, list[Stratum]]:
    """The strata of a class-A fibre (Theorem B(ii)): one free orbit of type S = S_θ △ T for each flip set T
    of ``sets`` (classes in NF order), and the KinkData that realizes them; a single unlisted stratum, θ's own,
    when ``sets`` is None."""
    n = hc.net.n
    neg = np.asarray(hc.lam < 0) & (hc.neuron_type == 2)
    if sets is None:
        return None, [Stratum(None, (), 0, 0, 0, n, 0, int(neg.sum()), own=True)]
    order = nf_order(hc)
    to_nf = {i: order[int(hc.label[i])] for i in range(n) if hc.label[i] >= 0 and int(hc.label[i]) in order}
    S0 = {to_nf[i] for i in range(n) if neg[i]}
    strata: list[Stratum] = []
    for T in sets:
        S = tuple(sorted(S0 ^ {to_nf[i] for i in T}))
        strata.append(Stratum(S, (), 0, 0, 0, n, 0, len(S), own=not T))
    return KinkData.of(NormalForm(hc)), strata


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


# ----------------------------------------------------------------------------------------------------------
# random points of a stratum (sampling)


def stratum_point(net: Network, kd: KinkData | None, strata: Sequence[Stratum], r: _random.Random) -> Network | None:
    """A random point of the fibre of θ outside class A (same n): a random stratum realized (re-factorized, with
    O5 moves, O6 translations and spare neurons), moved by a random h ∈ H_n; near θ's own type (local moves)
    when the strata are not listed.  None when this realization failed (try again)."""
    if kd is None or not strata or any(st.S is None for st in strata):
        return _local_moves(net, r)
    st = strata[r.randrange(len(strata))]
    built = _realize(kd, st, r)
    if built is None:
        return None
    neurons, c = built
    neurons, c = _pad(neurons, c, net.n - len(neurons), kd, r)
    cand = _network(neurons, c, net.m, net.k)
    return Symmetry.random(net.n, r).act(cand)


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
    return [[sum((X[i][a] * Y[a][j] for a in range(inner)), Fraction(0)) for j in range(cols)] for i in range(len(X))]


def _realize(kd: KinkData, st: Stratum, r: _random.Random) -> tuple[list[Neuron], list[Fraction]] | None:
    """A random realization of the core of stratum (S, P, t): N + |P| + 2t neurons (spec §5.1)."""
    k, m, N = kd.k, kd.m, kd.N
    assert st.S is not None
    S, P, t = set(st.S), list(st.P), st.t
    negR = [[-x for x in row] for row in kd.R(st.S)]
    AP = [list(kd.alpha[u]) for u in P]
    # Z = −R projected onto the null space of A_P (= the orthogonal complement of its row space):
    # Z = −R − (−R Fᵀ)(F Fᵀ)⁻¹ F with F a basis of the rows of A_P; cost linear in m (no m × m matrices)
    Z = [list(row) for row in negR]
    rowbasis, _piv = linalg.rref(AP, m) if P else ([], [])
    if rowbasis:
        Fb = [list(row) for row in rowbasis]  # r × m
        Ft = [[Fb[i][c] for i in range(len(Fb))] for c in range(m)]  # m × r
        Ginv = linalg.inverse(_matmul(Fb, Ft))  # (F Fᵀ)⁻¹, r × r
        corr = _matmul(_matmul(_matmul(negR, Ft), [list(row) for row in Ginv]), Fb)  # k × m
        Z = [[Z[a][c] - corr[a][c] for c in range(m)] for a in range(k)]
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
    neurons, c_out = kink_neurons(kd, S, sP)
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


def as_random(rng: Any) -> _random.Random:
    if isinstance(rng, _random.Random):
        return rng
    if isinstance(rng, np.random.Generator):
        return _random.Random(int(rng.integers(2**63)))
    return _random.Random(rng)
