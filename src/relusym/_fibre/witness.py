"""Points of a type (S, P, t) of a fibre: a rational realization of the normal form with the kinks and
orientations the type asks for, built from a :class:`~relusym._fibre.patterns.Pattern` (the witnesses and the
random samples of a stratum).
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._core.analysis import KinkData
from relusym._core.network import Network
from relusym._exact import linalg as linalg
from relusym._fibre.patterns import Pattern

__all__ = ["build_point"]

Neuron = tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction]


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
    k, m = kd.k, kd.m
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
        pieces = _cancelled_classes(Rbar, mb, free, AP, tp, pat.s, r, k, m)
        if pieces is None:
            return None
        xs, ys = pieces
    Z = [[sum((xs[lc][a] * ys[lc][c] for lc in range(tp)), Fraction(0)) for c in range(m)] for a in range(k)]
    sP: dict[int, list[Fraction]] = {}
    if Pp:
        split = _split_kinks(kd, Pp, AP, R, Z, r)
        if split is None:
            return None
        sP = split
    used = {kd.hyperplane(j) for j in range(kd.N)}
    neurons = _class_neurons(kd, S, pat, sP, r)
    neurons += _new_class_neurons(xs, ys, pat.u, used, r, k, m)
    neurons += _spare(neurons, n - len(neurons), k, m, r, spare, used)
    c_out = list(kd.e)
    for v, aw, bb in neurons:  # e = c + Σ_const b v + Σ_neg b v
        lead = next((x for x in aw if x != 0), Fraction(0))
        if lead < 0 or (lead == 0 and bb > 0):
            c_out = [ci - bb * vi for ci, vi in zip(c_out, v, strict=True)]
    order = list(range(len(neurons)))
    r.shuffle(order)
    return _network([neurons[i] for i in order], c_out, m, k)


def _cancelled_classes(
    Rbar: list[list[Fraction]],
    mb: int,
    free: list[int],
    AP: list[list[Fraction]],
    tp: int,
    s: int,
    r: _random.Random,
    k: int,
    m: int,
) -> tuple[list[list[Fraction]], list[list[Fraction]]] | None:
    """The t' new classes with cancelled kink: their kinks x_l and hyperplanes y_l with Σ x_l y_lᵀ fitting R̄
    (None when a random choice is degenerate)."""
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
    null_c = linalg.nullspace(Crows, tp)
    cols = []
    for q in range(mb):  # C Dᵀ = R̄
        part = linalg.solve(Crows, [Rbar[a][q] for a in range(k)])
        if part is None:
            return None
        col = list(part)
        for vec in null_c:
            g = _rq(r)
            col = [x + g * y for x, y in zip(col, vec, strict=True)]
        cols.append(col)
    DT = [[cols[q][lc] for q in range(mb)] for lc in range(tp)]  # t' × m̄
    ys: list[list[Fraction]] = []
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
    return xs, ys


def _split_kinks(
    kd: KinkData,
    Pp: list[int],
    AP: list[list[Fraction]],
    R: Sequence[Sequence[Fraction]],
    Z: list[list[Fraction]],
    r: _random.Random,
) -> dict[int, list[Fraction]] | None:
    """For each class j of P', the kink s_j carried by its negatively oriented neuron (None when a random choice
    makes one zero or the whole kink)."""
    k, m = kd.k, kd.m
    sP: dict[int, list[Fraction]] = {}
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
    return sP


def _class_neurons(
    kd: KinkData, S: Sequence[int], pat: Pattern, sP: dict[int, list[Fraction]], r: _random.Random
) -> list[Neuron]:
    """The neurons on the kink classes of the normal form, oriented as the type asks."""
    k, m = kd.k, kd.m
    zero = [Fraction(0)] * k
    neurons: list[Neuron] = []
    for j in range(kd.N):
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
    return neurons


def _new_class_neurons(
    xs: list[list[Fraction]],
    ys: list[list[Fraction]],
    cancelled: int,
    used: set[tuple[Fraction, ...]],
    r: _random.Random,
    k: int,
    m: int,
) -> list[Neuron]:
    """The neurons on classes outside the normal form: an opposite pair on each y_l (kinks ±x_l), and two
    cancelling pairs on each of ``cancelled`` random classes."""
    zero = [Fraction(0)] * k

    def fresh(al: tuple[Fraction, ...]) -> tuple[Fraction, ...]:
        while True:
            u = (*al, _rq(r))
            if u not in used:
                used.add(u)
                return u

    neurons: list[Neuron] = []
    for x, y in zip(xs, ys, strict=True):
        lam, al = _canonical(y)
        u = fresh(al)
        sl = [lam * v for v in x]  # s'_l α̂'ᵀ = x_l y_lᵀ
        neurons.append(_neuron(sl, u, -1, _scale(r), m))
        neurons.append(_neuron([-v for v in sl], u, 1, _scale(r), m))
    for _ in range(cancelled):
        u = fresh(_canonical(_rvec(r, m))[1])
        neurons += _cancelling(u, 1, zero, r, m) + _cancelling(u, -1, zero, r, m)
    return neurons


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


def _network(neurons: Sequence[Neuron], c: Sequence[Fraction], m: int, k: int) -> Network:
    if not neurons:
        return Network(np.zeros((k, 0)), np.zeros((0, m)), np.zeros(0), list(c), m=m)
    V = [[v[a] for v, _, _ in neurons] for a in range(k)]
    return Network(V, [list(a) for _, a, _ in neurons], [b for _, _, b in neurons], list(c), m=m)
