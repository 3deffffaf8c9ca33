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
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from relusym._core.analysis import Analysis, KinkData
from relusym._core.network import Network, NeuronType
from relusym._core.operations import flip
from relusym._exact import linalg as linalg
from relusym._exact.numbers import fractions_of, to_fraction
from relusym._fibre.configurations import Configuration, ConfigurationSet, OwnConfiguration

__all__ = [
    "Pattern",
    "Stratum",
    "build_point",
    "closed_form_dimension",
    "fibre_dimension",
    "flip_strata",
    "own_stratum",
    "patterns",
    "point_type",
    "stratum_dimension",
    "stratum_point",
    "tangent_dimension",
    "type_stratum",
    "type_strata",
]

_TANGENT_LIMIT = 600  # parameters up to which the dimension of a piece is also checked by the exact tangent rank
_WITNESS_JSON = 64  # witnesses with at most this many neurons are written out by to_dict()

Neuron = tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction]


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
    xs = _x_star(t, rho, k, m - rank_P, rank_P == 0) if t >= rho else []
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
# the type of a point, and the exact tangent dimension of its piece


def point_type(an: Analysis) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The combinatorial type (S, P, t) of a point θ' of a fibre (see docs/math/strata.md): S the kink classes
    carried only by negatively oriented neurons, P the kink classes carried by neurons of both orientations, t
    the number of classes with cancelled kink (κ = 0) carrying neurons of both orientations.  Classes are
    indices in NF order; null and constant neurons and single-orientation cancelled classes do not count."""
    hc = an.classes
    n_pos, n_neg = an.orientations
    order = an.nf_index
    S: list[int] = []
    P: list[int] = []
    t = 0
    for j in range(hc.N_all):
        pos, neg = int(n_pos[j]), int(n_neg[j])
        if j in order:
            if pos and neg:
                P.append(order[j])
            elif neg:
                S.append(order[j])
        elif pos and neg:
            t += 1
    return tuple(sorted(S)), tuple(sorted(P)), t


def tangent_dimension(an: Analysis) -> int:
    """dim Ω − rank over ℚ of the Jacobian, at θ, of the equations of θ's *piece* of its fibre: the points with
    the same role for every neuron (v = 0; a = 0; or on the same hyperplane class with the same orientation)
    and the same normal form.  The equations: v_i = 0 or a_i = 0 for null and constant neurons; w_i ∥ û_j
    for a neuron on kink class j and w_i ∥ w_{i₀} on a class with cancelled kink; one kink sum per class;
    Σ_neg v_i a_iᵀ = M; c + Σ_const b_i v_i + Σ_neg b_i v_i = e.  This bounds the local dimension of the
    piece at θ from above, with equality at its smooth points (see docs/math/strata.md)."""
    m, n, k = an.net.shape
    V, A, b = an.fractions
    hc, kd = an.classes, an.kinks
    nv = k * n + n * m + n + k

    def iV(r: int, i: int) -> int:
        return r * n + i

    def iW(i: int, col: int) -> int:  # col = m is the bias
        return k * n + i * m + col if col < m else k * n + n * m + i

    def iC(r: int) -> int:
        return k * n + n * m + n + r

    def w(i: int, col: int) -> Fraction:
        return Fraction(A[i, col] if col < m else b[i])

    rows: list[list[Fraction]] = []

    def new() -> list[Fraction]:
        row = [Fraction(0)] * nv
        rows.append(row)
        return row

    kinds: list[str] = []
    for i in range(n):
        if not any(V[r, i] for r in range(k)):
            kinds.append("null")
            for r in range(k):
                new()[iV(r, i)] = Fraction(1)
        elif not any(A[i, c] for c in range(m)):
            kinds.append("const" if b[i] > 0 else "null")
            for c in range(m):
                new()[iW(i, c)] = Fraction(1)
        else:
            kinds.append("hyper")
    uhat = {tuple(u): j for j, u in enumerate(kd.hyperplane(j) for j in range(kd.N))}
    members: dict[int, list[int]] = {}
    for i in range(n):
        if kinds[i] == "hyper":
            members.setdefault(int(hc.label[i]), []).append(i)
    sign: dict[int, int] = {}
    for lab, mem in members.items():
        p = next(c for c in range(m) if A[mem[0], c] != 0)
        u = hc.u_exact(lab)
        kink = kd.kappa[uhat[u]] if u in uhat else tuple(Fraction(0) for _ in range(k))
        for i in mem:
            sign[i] = 1 if A[i, p] > 0 else -1
        if u in uhat:  # w_i ∥ û (fixed): w_i[col] − w_i[p]·û[col] = 0
            for i in mem:
                for col in range(m + 1):
                    if col != p:
                        row = new()
                        row[iW(i, col)] += 1
                        row[iW(i, p)] -= u[col]
        else:  # w_i ∥ w_i0: w_i[col]·w_i0[p] − w_i0[col]·w_i[p] = 0
            i0 = mem[0]
            for i in mem[1:]:
                for col in range(m + 1):
                    if col != p:
                        row = new()
                        row[iW(i, col)] += w(i0, p)
                        row[iW(i0, p)] += w(i, col)
                        row[iW(i0, col)] -= w(i, p)
                        row[iW(i, p)] -= w(i0, col)
        del kink  # the kink sums are linear in (v, w[p]); only their gradients matter
        for r in range(k):  # Σ_i σ_i w_i[p] v_i = κ
            row = new()
            for i in mem:
                row[iW(i, p)] += sign[i] * V[r, i]
                row[iV(r, i)] += sign[i] * w(i, p)
    neg = [i for i in range(n) if kinds[i] == "hyper" and sign[i] < 0]
    for r in range(k):
        for col in range(m):  # Σ_neg v_i a_iᵀ = M
            row = new()
            for i in neg:
                row[iV(r, i)] += A[i, col]
                row[iW(i, col)] += V[r, i]
        row = new()  # c + Σ_const b_i v_i + Σ_neg b_i v_i = e
        row[iC(r)] += 1
        for i in range(n):
            if kinds[i] == "const" or i in neg:
                row[iV(r, i)] += b[i]
                row[iW(i, m)] += V[r, i]
    return nv - (linalg.rank(rows) if rows else 0)


# ----------------------------------------------------------------------------------------------------------
# feasibility and dimension of a type (S, P, t): the theorem of docs/math/strata.md


@dataclass(frozen=True)
class Pattern:
    """A way to realize type (S, P, t) (docs/math/strata.md): the kink classes J0 ⊆ P whose negative kink is
    0 (two cancelling negative neurons), Jk ⊆ P whose negative kink is κ (two cancelling positive neurons),
    u of the t cancelled mixed classes with both sides cancelling (four neurons), the other t' = t − u with
    nonzero negative kinks s'_l whose matrix C = [s'_1 … s'_t'] has rank ``s``.  ``neurons`` is the number of
    neurons this core needs, ``dimension`` the dimension of its piece with the other n − neurons spare
    neurons each adding δ."""

    J0: tuple[int, ...]
    Jk: tuple[int, ...]
    u: int
    s: int
    neurons: int
    dimension: int


def _free_columns_pinned(kd: KinkData, Sp: Sequence[int], Pp: Sequence[int]) -> bool:
    """Whether on V = {S_P : rank(R_{S'} + S_P A_P) = ϱ} (an affine space) some column s_j, j ∈ P', is the
    constant 0 or κ_j.  V = {S_P : Yᵀ(R + S_P A_P) = 0} with Y a basis of the left kernel of R B, B a basis
    of the kernel of A_P."""
    k, m = kd.k, kd.m
    p = len(Pp)
    if not p:
        return False
    R = kd.R(Sp)
    AP = [list(kd.alpha[j]) for j in Pp]
    B = linalg.nullspace(AP, m)
    RB = [[sum((R[r][c] * vec[c] for c in range(m)), Fraction(0)) for vec in B] for r in range(k)]
    if B:
        Y = linalg.nullspace([[RB[r][q] for r in range(k)] for q in range(len(B))], k)
    else:
        Y = [tuple(Fraction(int(a == r)) for a in range(k)) for r in range(k)]
    if not Y:
        return False
    # unknowns x[r*p + j] = S_P[r][j]; equations Σ_r y_r (Σ_j S[r][j] A[j][c] + R[r][c]) = 0
    eqs: list[list[Fraction]] = []
    rhs: list[Fraction] = []
    for y in Y:
        for c in range(m):
            eqs.append([y[r] * AP[j][c] for r in range(k) for j in range(p)])
            rhs.append(-sum((y[r] * R[r][c] for r in range(k)), Fraction(0)))
    x0 = linalg.solve(eqs, rhs)
    if x0 is None:  # pragma: no cover - V is nonempty when ϱ is the rank of R modulo the rows of A_P
        return True
    null = linalg.nullspace(eqs, k * p)
    for jj, j in enumerate(Pp):
        coords = [r * p + jj for r in range(k)]
        if any(vec[c] for vec in null for c in coords):
            continue
        val = tuple(x0[c] for c in coords)
        if not any(val) or val == kd.kappa[j]:
            return True
    return False


def _realizable(kd: KinkData, Sp: Sequence[int], Pp: Sequence[int], tp: int) -> bool:
    """Q(S', P', t'): some S_P' and t' nonzero rank-one terms solve S_P' A_P' + Σ_l s'_l α̂'_lᵀ = −R_S' with
    every column s_j ∉ {0, κ_j} (docs/math/strata.md, Lemma 3)."""
    rho = kd.rho(Sp, Pp)
    if tp == 0:
        return rho == 0 and not _free_columns_pinned(kd, Sp, Pp)
    if tp == 1 and rho == 0:
        return bool(Pp)
    if rho > tp:
        return False
    if rho == tp:
        return not _free_columns_pinned(kd, Sp, Pp)
    return True


def _x_star(tp: int, rho: int, k: int, mbar: int, d_nonzero: bool) -> list[tuple[int, int]]:
    """[(s, dim)] for dim {(C_{k×t'}, D_{m̄×t'}) : C Dᵀ = R̄, rank C = s, columns of C ≠ 0 (and of D when
    ``d_nonzero``)}, rank R̄ = ϱ: (s − ϱ)(k − s) + s t' + m̄(t' − s) (docs/math/strata.md, Lemma 4)."""
    if tp == 0:
        return [(0, 0)] if rho == 0 else []
    out = []
    for s in range(max(rho, 1), min(k, tp) + 1):
        if d_nonzero and s == tp and rho == 0:
            continue
        out.append((s, (s - rho) * (k - s) + s * tp + mbar * (tp - s)))
    return out


def patterns(kd: KinkData, n: int, S: Sequence[int], P: Sequence[int], t: int) -> list[Pattern]:
    """Every way (J0, Jk, u, s) to realize type (S, P, t) with at most n neurons, with the dimension of its
    piece, highest first; empty iff no point of the fibre in Ω(m, n, k) has this type (the theorem of
    docs/math/strata.md)."""
    N, k, m = kd.N, kd.k, kd.m
    delta = max(m + 1, k + 1)
    base = N + len(P) + 2 * t
    out: list[Pattern] = []
    if base > n:
        return out
    slack = n - base
    Pl = list(P)
    for u in range(0, min(t, slack // 2) + 1):
        tp = t - u
        for nj in range(0, min(len(Pl), slack - 2 * u) + 1):
            for J in combinations(Pl, nj):
                for mask in range(2**nj):
                    Jk = tuple(J[i] for i in range(nj) if (mask >> i) & 1)
                    J0 = tuple(J[i] for i in range(nj) if not (mask >> i) & 1)
                    Sp = tuple(sorted((*S, *Jk)))
                    Pp = tuple(j for j in Pl if j not in J)
                    if not _realizable(kd, Sp, Pp, tp):
                        continue
                    rho = kd.rho(Sp, Pp)
                    wp = kd.rank_P(Pp)
                    neurons = base + 2 * u + nj
                    core = (N - len(P)) + 2 * len(Pp) + (k + 3) * nj + 2 * tp + (2 * k + 4 + m) * u
                    core += k * (len(Pp) - wp) + tp * wp
                    for s, x in _x_star(tp, rho, k, m - wp, wp == 0):
                        out.append(Pattern(J0, Jk, u, s, neurons, core + x + (n - neurons) * delta))
    out.sort(key=lambda q: (-q.dimension, q.neurons, q.J0, q.Jk, q.u, q.s))
    return out


# ----------------------------------------------------------------------------------------------------------
# points of a type: witnesses and samples


def _rq(r: _random.Random, nonzero: bool = False) -> Fraction:
    while True:
        q = Fraction(r.randint(-6, 6), r.randint(1, 3))
        if q or not nonzero:
            return q


def _rvec(r: _random.Random, d: int) -> list[Fraction]:
    while True:
        v = [_rq(r) for _ in range(d)]
        if any(v):
            return v


def _scale(r: _random.Random) -> Fraction:
    return Fraction(r.randint(1, 4), r.randint(1, 3))


def _canonical(y: Sequence[Fraction]) -> tuple[Fraction, tuple[Fraction, ...]]:
    lam = next(x for x in y if x != 0)
    return lam, tuple(x / lam for x in y)


def _neuron(kink: Sequence[Fraction], u: Sequence[Fraction], sign: int, mu: Fraction, m: int) -> Neuron:
    """The neuron on class û = (α̂, β̂) with orientation ``sign``, scale μ > 0 and kink |λ| v = ``kink``."""
    w = tuple(sign * mu * x for x in u)
    return tuple(x / mu for x in kink), w[:m], w[m]


def _cancelling(u: Sequence[Fraction], sign: int, kink: Sequence[Fraction], r: _random.Random, m: int) -> list[Neuron]:
    """Two neurons of one orientation on û whose kinks sum to ``kink`` (0 included), neither null."""
    k = len(kink)
    while True:
        y = _rvec(r, k)
        rest = [a - b for a, b in zip(kink, y, strict=True)]
        if any(rest):
            return [_neuron(y, u, sign, _scale(r), m), _neuron(rest, u, sign, _scale(r), m)]


def build_point(
    kd: KinkData, n: int, S: Sequence[int], P: Sequence[int], t: int, pat: Pattern, r: _random.Random, *, spare: str
) -> Network | None:
    """A random point of type (S, P, t) realized by pattern ``pat`` (docs/math/strata.md, proof of the
    theorem), with n − pat.neurons spare neurons: of the kind adding δ when ``spare == "top"`` (the witness of
    the piece's dimension), of random kinds when ``spare == "random"``.  None when the random choices hit a
    forbidden value (try again); the caller verifies the point."""
    k, m, N = kd.k, kd.m, kd.N
    J = set(pat.J0) | set(pat.Jk)
    Sp = sorted({*S, *pat.Jk})
    Pp = [j for j in P if j not in J]
    tp = t - pat.u
    R = kd.R(Sp)
    AP = [list(kd.alpha[j]) for j in Pp]
    # B: the canonical basis of null(A_P), vector q being 1 at the free column free[q], −(reduced A_P) at the
    # pivot columns and 0 elsewhere; only its support (|P| + 1 entries) enters the sums, so the cost is linear in m
    pivots = linalg.rref(AP, m)[1] if Pp else []
    pivot_set = set(pivots)
    free = [c for c in range(m) if c not in pivot_set]
    B = [list(v) for v in linalg.nullspace(AP, m)] if Pp else []
    support = [[(c, x) for c, x in enumerate(v) if x] for v in B] if Pp else [[(c, Fraction(1))] for c in free]
    mb = len(support)
    Rbar = [[-sum((R[a][c] * x for c, x in support[q]), Fraction(0)) for q in range(mb)] for a in range(k)]
    ys: list[list[Fraction]] = []
    xs: list[list[Fraction]] = []
    if tp:
        s = pat.s
        basis = [list(v) for v in linalg.rref([[Rbar[a][q] for a in range(k)] for q in range(mb)], k)[0]] if mb else []
        while len(basis) < s:
            cand = basis + [_rvec(r, k)]
            if linalg.rank(cand) == len(cand):
                basis = cand
        coef = [[_rq(r) for _ in range(s)] for _ in range(tp)]
        xs = [[sum((coef[lc][i] * basis[i][a] for i in range(s)), Fraction(0)) for a in range(k)] for lc in range(tp)]
        if any(not any(x) for x in xs) or linalg.rank(xs) != s:
            return None
        Crows = [[xs[lc][a] for lc in range(tp)] for a in range(k)]  # C: k × t'
        DT = []  # t' × m̄, C Dᵀ = R̄
        null_c = linalg.nullspace(Crows, tp)
        cols = []
        for q in range(mb):
            part = linalg.solve(Crows, [Rbar[a][q] for a in range(k)])
            if part is None:
                return None
            col = list(part)
            for vec in null_c:
                g = _rq(r)
                col = [x + g * y for x, y in zip(col, vec, strict=True)]
            cols.append(col)
        DT = [[cols[q][lc] for q in range(mb)] for lc in range(tp)]
        for lc in range(tp):
            # a y with Bᵀy = D_lc: D_lc at the free columns, 0 at the pivots (B's canonical form makes this exact);
            # the solutions are y + the row space of A_P, which the random moves below range over
            y = [Fraction(0)] * m
            for q, c in enumerate(free):
                y[c] = DT[lc][q]
            for row in AP:
                g = _rq(r)
                y = [a + g * x for a, x in zip(y, row, strict=True)]
            if not any(y):
                return None
            ys.append(y)
    Z = [[sum((xs[lc][a] * ys[lc][c] for lc in range(tp)), Fraction(0)) for c in range(m)] for a in range(k)]
    sP: dict[int, list[Fraction]] = {}
    if Pp:
        APt = [[AP[i][c] for i in range(len(Pp))] for c in range(m)]
        left = linalg.nullspace(APt, len(Pp))
        for a in range(k):
            part = linalg.solve(APt, [-R[a][c] - Z[a][c] for c in range(m)])
            if part is None:
                return None
            row_s = list(part)
            for vec in left:
                g = _rq(r)
                row_s = [x + g * y for x, y in zip(row_s, vec, strict=True)]
            for jj, j in enumerate(Pp):
                sP.setdefault(j, []).append(row_s[jj])
        for j in Pp:
            if not any(sP[j]) or tuple(sP[j]) == kd.kappa[j]:
                return None
    neurons: list[Neuron] = []
    zero = [Fraction(0)] * k
    used = {kd.hyperplane(j) for j in range(N)}
    for j in range(N):
        u, kap = kd.hyperplane(j), list(kd.kappa[j])
        if j in pat.J0:
            neurons.append(_neuron(kap, u, 1, _scale(r), m))
            neurons += _cancelling(u, -1, zero, r, m)
        elif j in pat.Jk:
            neurons.append(_neuron(kap, u, -1, _scale(r), m))
            neurons += _cancelling(u, 1, zero, r, m)
        elif j in sP:
            sj = sP[j]
            neurons.append(_neuron([a - b for a, b in zip(kap, sj, strict=True)], u, 1, _scale(r), m))
            neurons.append(_neuron(sj, u, -1, _scale(r), m))
        else:
            neurons.append(_neuron(kap, u, -1 if j in S else 1, _scale(r), m))

    def fresh(al: tuple[Fraction, ...]) -> tuple[Fraction, ...]:
        while True:
            u = (*al, _rq(r))
            if u not in used:
                used.add(u)
                return u

    for lc in range(tp):
        lam, al = _canonical(ys[lc])
        u = fresh(al)
        sl = [lam * x for x in xs[lc]]  # s'_l α̂'ᵀ = x_l y_lᵀ
        neurons.append(_neuron(sl, u, -1, _scale(r), m))
        neurons.append(_neuron([-x for x in sl], u, 1, _scale(r), m))
    for _ in range(pat.u):
        u = fresh(_canonical(_rvec(r, m))[1])
        neurons += _cancelling(u, 1, zero, r, m) + _cancelling(u, -1, zero, r, m)
    neurons += _spare(neurons, n - len(neurons), k, m, r, spare, used)
    c_out = list(kd.e)
    for v, aw, bb in neurons:  # e = c + Σ_const b v + Σ_neg b v
        lead = next((x for x in aw if x != 0), Fraction(0))
        if lead < 0 or (lead == 0 and bb > 0):
            c_out = [ci - bb * vi for ci, vi in zip(c_out, v, strict=True)]
    order = list(range(len(neurons)))
    r.shuffle(order)
    return _network([neurons[i] for i in order], c_out, m, k)


def _spare(
    neurons: list[Neuron], count: int, k: int, m: int, r: _random.Random, kind: str, used: set[tuple[Fraction, ...]]
) -> list[Neuron]:
    """``count`` neurons that change neither the function nor the type: for ``kind == "top"`` the kind adding
    δ = max(m + 1, k + 1) dimensions (v = 0 when m ≥ k, else a = 0 and b < 0); otherwise random kinds: null
    (v = 0, or a = 0 and b ≤ 0), inactive, constant, a duplicate splitting a hyperplane neuron on its oriented
    hyperplane, or a same-orientation pair with cancelling kinks on a new class."""
    out: list[Neuron] = []
    zk = tuple(Fraction(0) for _ in range(k))
    zm = tuple(Fraction(0) for _ in range(m))
    left = count
    while left > 0:
        if kind == "top":
            choice = "null_v" if m >= k else "null_a"
        else:
            kinds = ["null_v", "null_a", "inactive", "constant", "split", "split"]
            if left >= 2:
                kinds.append("cancel")
            choice = r.choice(kinds)
        if choice == "null_v":
            out.append((zk, tuple(_rvec(r, m)), _rq(r)))
        elif choice == "null_a":
            out.append((tuple(_rvec(r, k)), zm, -abs(_rq(r, nonzero=True))))
        elif choice == "inactive":
            out.append((zk, zm, Fraction(0)))
        elif choice == "constant":
            out.append((tuple(_rvec(r, k)), zm, abs(_rq(r, nonzero=True))))
        elif choice == "split":
            pool = neurons + out
            hyper = [i for i, (v, a, _) in enumerate(pool) if any(a) and any(v)]
            if not hyper:
                continue
            i = r.choice(hyper)
            v, a, bb = pool[i]
            mu = _scale(r)
            v2 = tuple(_rvec(r, k))
            new_v = tuple(x - mu * y for x, y in zip(v, v2, strict=True))
            if not any(new_v):
                continue
            if i < len(neurons):
                neurons[i] = (new_v, a, bb)
            else:
                out[i - len(neurons)] = (new_v, a, bb)
            out.append((v2, tuple(mu * x for x in a), mu * bb))
        else:
            while True:
                lam, al = _canonical(_rvec(r, m))
                u = (*al, _rq(r))
                if u not in used:
                    used.add(u)
                    break
            out += _cancelling(u, r.choice((1, -1)), [Fraction(0)] * k, r, m)
            left -= 1
        left -= 1
    return out


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
    deadline: float | None = None,
) -> tuple[list[Stratum], list[str]]:
    """Every nonempty stratum (S, P, t) of the n-neuron fibre whose (S, P) is among ``configs`` (all with
    ϱ(S, P) ≤ t, which every point satisfies), each with its dimension and a witness; θ's own type (``own``)
    is marked.  The notes say which nonempty types got no witness, or that ``deadline`` (a
    ``time.monotonic()`` value) stopped the listing."""
    strata: list[Stratum] = []
    notes: list[str] = []
    for done, cfg in enumerate(configs):
        if deadline is not None and time.monotonic() > deadline:
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


def _network(neurons: Sequence[Neuron], c: Sequence[Fraction], m: int, k: int) -> Network:
    if not neurons:
        return Network(np.zeros((k, 0)), np.zeros((0, m)), np.zeros(0), list(c), m=m)
    V = [[v[a] for v, _, _ in neurons] for a in range(k)]
    return Network(V, [list(a) for _, a, _ in neurons], [b for _, _, b in neurons], list(c), m=m)


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
