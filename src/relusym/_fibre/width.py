"""Minimal width w(f), the configurations (S, P) of a fibre, and the canonical minimal network (docs/math/strata.md,
docs/math/width.md).

A function f with normal form NF(f) = (K, M, e) has N = |U*| kink classes û = (α̂, β̂) with kinks κ_û.  A
*configuration* is a pair of disjoint sets of classes: S (classes carried by a single negatively oriented
neuron) and P (mixed classes: one neuron of each orientation).  With

    R_S = M + Σ_{û ∈ S} κ_û α̂_ûᵀ  (k×m),      ϱ(S, P) = rank(R_S modulo the row space of A_P),

a realization of type (S, P) needs t ≥ ϱ extra cancelling pairs, so it uses N + |P| + 2t neurons, and

    w(f) = N + min over (S, P) of cost(S, P),   cost(S, P) = |P| + 2 ϱ(S, P)            (docs/math/width.md)

Everything is exact (Fractions; ranks over ℚ through :mod:`relusym.linalg`).  The enumeration of
configurations costs about 3^N small rank computations (vectorised: subset sums of integer matrices and their
ranks modulo a prime, every claim "rank ≤ r" then re-checked over ℚ); it runs under a deadline and says when
it stopped. Deciding w(f) = N is subset sum (NP-hard already for k = m = 1): for large N only certificates and
the network's own configuration are used, and the answer may be "undecided within budget".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._base.limits import check_budget
from relusym._base.progress import ticking
from relusym._core.analysis import Analysis, KinkData, Vec
from relusym._core.canon_rows import (
    BlockStore,
    assemble_exact,
    divide_by_pivots,
    float64_or_fractions,
    pivots,
    primitive_neuron,
    primitive_rows,
)
from relusym._core.classes import HyperplaneClasses
from relusym._core.network import Network, NeuronType
from relusym._core.normal_form import normal_form
from relusym._exact import linalg as linalg
from relusym._exact.dtypes import exactly_in_dtype
from relusym._exact.numbers import common_denominator, to_fraction
from relusym._fibre.configurations import Configuration, configurations, kink_neurons, own_configuration
from relusym.errors import BudgetExceededError, InvalidNetworkError

__all__ = [
    "MinimalNetwork",
    "WidthSearch",
    "width_search",
    "minimal_width",
    "minimal_network",
    "canonical_minimal_network",
    "prune",
]


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
    canonical: bool  # best is the minimizer of the key of docs/math/width.md (the search over minimizers completed)
    minimizers: tuple[Configuration, ...] | None  # all configurations of minimal cost, when known
    undecided: str | None
    kd: KinkData | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "N": self.N,
            "width": self.width,
            "lower": self.lower,
            "upper": self.upper,
            "best": None if self.best is None else self.best.to_dict(),
            "canonical": self.canonical,
            "minimizers": None if self.minimizers is None else [c.to_dict() for c in self.minimizers],
            "undecided": self.undecided,
        }


def width_search(an: Analysis, *, budget: float = 10.0) -> WidthSearch:
    """Decide w(ρ(θ)) (docs/math/width.md) within ``budget`` seconds, with bounds when it cannot."""
    deadline = Deadline(budget)
    N = an.N
    kd = an.kinks
    if deadline.expired(_GRACE):
        return _out_of_time(an, "computing the normal form as exact rationals")
    own = own_configuration(an)
    if deadline.expired(_GRACE):
        return _out_of_time(an, "computing the network's own configuration")
    upper_cost = own.cost
    rank_M = linalg.rank(kd.M)
    if 2 * rank_M < upper_cost:
        upper_cost = 2 * rank_M
    if upper_cost == 0:
        cs = configurations(kd, 0, deadline=deadline)
        if cs.complete and not cs.truncated:
            return WidthSearch(N, N, N, N, cs.best, True, cs.configurations, None, kd)
        first = own.configuration if own.cost == 0 else Configuration((), (), 0, 0)
        if own.cost == 0 and _unique_cost_zero(an):
            return WidthSearch(N, N, N, N, first, True, (first,), None, kd)
        why = cs.undecided or "too many minimizers"
        return WidthSearch(
            N, N, N, N, first, False, None,
            f"w = N is certain, but the lexicographically first minimizer was not found: {why}", kd,
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
        note = (
            "w = N (a configuration of cost 0 was found); the first minimizer of docs/math/width.md was not certified"
        )
        return WidthSearch(N, N, N, N, Configuration(found, (), 0, 0), False, None, note, kd)
    lower = N
    if _cost_zero_impossible(kd):
        lower = N + 1
        if upper_cost == 1:
            note = "w = N + 1; the lexicographically first minimizer (docs/math/width.md) was not certified"
            return WidthSearch(N, N + 1, N + 1, N + 1, fallback, False, None, note, kd)
    note = f"undecided within budget: {cs.undecided}; N ≤ w ≤ N + {upper_cost} (deciding w = N is a subset-sum problem)"
    return WidthSearch(N, None, lower, N + upper_cost, fallback, False, None, note, kd)


_GRACE = 0.25  # seconds: the cheap certificates of width_search (bounds from θ's own configuration) run to the end
# within the budget plus this; past it the search stops between its steps


def _out_of_time(an: Analysis, step: str) -> WidthSearch:
    """The answer of :func:`width_search` when its budget ran out during ``step``: N ≤ w ≤ N + 2 min(k, m) (the
    configuration (∅, ∅) costs 2 rank M)."""
    N = an.N
    upper = N + 2 * min(an.net.k, an.net.m)
    fallback = Configuration((), (), min(an.net.k, an.net.m), 0)
    note = f"undecided within budget: the budget ran out while {step}; N ≤ w ≤ N + 2 min(k, m)"
    return WidthSearch(N, None, N, upper, fallback, False, None, note, an.kinks if "kinks" in an.__dict__ else None)


def _unique_cost_zero(an: Analysis) -> bool:
    """For θ in class A (one neuron per class, no null or constant neuron): S_θ is the only S with R_S = 0
    when the rows vec(v_i a_iᵀ) are certified independent (the flip certificate of :mod:`relusym.fiber`)."""
    net, hc = an.net, an.classes
    if not (hc.N_all == net.n and bool((hc.neuron_type == NeuronType.HYPERPLANE).all()) and bool(hc.kink_mask.all())):
        return False
    from relusym._fibre.flips import flips_certified_absent

    return flips_certified_absent(an)


def _cost_zero_impossible(kd: KinkData) -> bool:
    """Certificate that no S has R_S = 0: −vec(M) is not in the span of the vec(κ_j α̂_jᵀ)."""
    rows = [[kd.kappa[j][r] * kd.alpha[j][c] for r in range(kd.k) for c in range(kd.m)] for j in range(kd.N)]
    target = [x for row in kd.M for x in row]
    if not rows:
        return any(target)
    return linalg.rank([*rows, target]) > linalg.rank(rows)


def _cost_zero_search(kd: KinkData, deadline: Deadline) -> tuple[int, ...] | None:
    """Look for S with R_S = 0 (a subset sum with target −M) through the flip-set search, homogenized: a
    zero-sum set of the rows vec(κ_j α̂_jᵀ) and vec(M) that contains the last row.  None if none was found."""
    try:
        from relusym._fibre import flipsearch as flipsearch
    except ImportError:  # pragma: no cover - depends on the parallel module
        return None
    rows = [[kd.kappa[j][r] * kd.alpha[j][c] for r in range(kd.k) for c in range(kd.m)] for j in range(kd.N)]
    rows.append([x for row in kd.M for x in row])
    den = common_denominator(x for row in rows for x in row)
    X = np.array([[int(x * den) for x in row] for row in rows], dtype=object)
    left = deadline.left()
    if left <= 0:
        return None
    res = flipsearch.find_flip_sets(X, max_sets=10_000, budget=left, rng=np.random.default_rng(0))
    last = kd.N
    for T in res.sets:
        if last in T:
            S = tuple(sorted(i for i in T if i != last))
            if not any(any(row) for row in kd.R(S)):
                return S
    return None


def minimal_width(net: Network, *, budget: float = 10.0, progress: bool | None = None) -> int:
    """w(ρ(θ)): the fewest hidden neurons that realize ρ(θ) exactly (docs/math/width.md).

    Raises :class:`~relusym.errors.BudgetExceededError` (with the bounds found) when it cannot be decided
    within ``budget`` seconds, which can only happen when θ has classes carrying neurons of both orientations
    and many kink classes.

    >>> minimal_width(Network([[1, 1, 1]], [[1], [-1], [1]], [0, 0, -1]))  # E9
    2
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"minimal_width needs a Network, got {type(net).__name__}")
    budget = check_budget(budget)
    an = Analysis(net)
    if not an.mixed:
        return an.N
    with ticking(budget, desc="minimal width: configurations", progress=progress):
        ws = width_search(an, budget=budget)
    if ws.width is None:
        raise BudgetExceededError(
            f"minimal width undecided within {budget} s: {ws.lower} ≤ w ≤ {ws.upper} ({ws.undecided})"
        )
    return ws.width


# ----------------------------------------------------------------------------------------------------------
# the canonical minimal network


def canonical_minimal_network(kd: KinkData, config: Configuration) -> tuple[list[tuple[Vec, Vec, Fraction]], Vec]:
    """The network of docs/math/width.md (steps 2–6) for the configuration (S, P): neurons (v, a, b), each row
    (a, b) the primitive integer vector of its ray, and the output bias.

    For a minimizer of the key of docs/math/width.md step 1 this is CMN(f).  Any configuration with independent
    normals on P
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
        Ginv = linalg.inverse(G)  # an optimal P has independent normals (docs/math/width.md)
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
    return [primitive_neuron(v, a, b) for v, a, b in neurons], tuple(c_out)


def _assemble(
    neurons: Sequence[tuple[Sequence[Fraction], Sequence[Fraction], Fraction]],
    c: Sequence[Fraction],
    m: int,
    k: int,
    like: Network | None = None,
) -> Network:
    """A Network from exact neurons, stored as :func:`relusym._core.canon_rows.assemble_exact` stores it when
    ``like`` is a float network (its dtype when every entry fits, else float64 or Fractions array by array), in
    Fractions otherwise."""
    V = [[v[r] for v, _, _ in neurons] for r in range(k)]
    A = [list(a) for _, a, _ in neurons]
    b = [bb for _, _, bb in neurons]
    if like is not None and like.is_float:
        n = len(neurons)
        return assemble_exact(_objects(V, (k, n)), _objects(A, (n, m)), _objects(b, (n,)), _objects(c, (k,)), m, like)
    if not neurons:
        return Network(np.zeros((k, 0)), np.zeros((0, m)), np.zeros(0), list(c), m=m)
    return Network(V, A, b, list(c), m=m)


def _objects(x: Any, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    if out.size:
        out[...] = x
    return out


@dataclass(frozen=True)
class MinimalNetwork:
    """The result of :func:`minimal_network`: the pruned ``network`` (w(f) neurons, same normal form),
    ``canonical`` (True when it is CMN(f) of docs/math/width.md, a function of ρ(θ) alone), the ``configuration`` it
    realizes, and ``note`` explaining a non-canonical result."""

    network: Network
    width: int
    canonical: bool
    configuration: Configuration
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "network": self.network.to_dict(),
            "width": self.width,
            "canonical": self.canonical,
            "configuration": self.configuration.to_dict(),
            "note": self.note,
        }


def minimal_network(
    net: Network, *, budget: float = 10.0, keep_scales: bool = False, certify: bool = True
) -> MinimalNetwork:
    """A network with w(ρ(θ)) neurons and the same normal form; CMN(f) of docs/math/width.md whenever the search over
    minimizers completes (always for small N, and whenever θ's configuration is certified unique).

    ``keep_scales=True`` rescales each emitted neuron (by O0) to the scale |λ| of θ's first neuron on its
    hyperplane, so that pruning a float network whose classes are single neurons returns θ's own float
    weights (no longer canonical, but still minimal and with the same normal form).  ``certify=False`` skips
    the certificate that a large network without mixed classes has no other configuration of cost 0 (the
    network is the same; ``canonical`` is then False): :func:`prune`, which returns the network alone.

    The budget is checked after the hyperplane classes (a network whose classes alone take longer than the
    budget and a grace of 0.25 s is refused with :class:`~relusym.errors.BudgetExceededError`) and between the
    steps of the search.
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"prune needs a Network, got {type(net).__name__}")
    budget = check_budget(budget)
    deadline = Deadline(budget)
    an = Analysis(net)
    mixed = an.mixed
    if deadline.expired(_GRACE):
        raise BudgetExceededError(
            f"minimal width undecided within budget ({budget} s): the hyperplane classes alone took longer"
        )
    if not mixed and an.N > _DIRECT_MIN_CLASSES:
        return _direct_minimal(an, keep_scales, certify=certify)
    if not mixed and an.N and _only_cost_zero(an):  # what the configuration search would certify, without it
        mn = _direct_minimal(an, keep_scales, unique=True)
        return MinimalNetwork(_as_assembled(mn.network, net), mn.width, mn.canonical, mn.configuration, mn.note)
    ws = width_search(an, budget=deadline.left())
    if ws.width is None or ws.best is None or ws.kd is None:
        raise BudgetExceededError(
            f"minimal width undecided within {budget} s: {ws.lower} ≤ w ≤ {ws.upper} ({ws.undecided})"
        )
    kd = ws.kd
    neurons, c = canonical_minimal_network(kd, ws.best)
    if keep_scales:
        neurons = _rescale_like(neurons, an.classes)
    out = _assemble(neurons, c, net.m, net.k, like=net)
    if len(neurons) != ws.width:  # pragma: no cover - would contradict docs/math/width.md
        raise AssertionError("the minimal network does not have w(f) neurons")
    if normal_form(out) != an.normal_form:  # pragma: no cover - would contradict docs/math/width.md
        raise AssertionError("the minimal network does not realize the same function")
    return MinimalNetwork(out, ws.width, ws.canonical and not keep_scales, ws.best, ws.undecided)


_DIRECT_MIN_CLASSES = 12  # below this the exact configuration search certifies CMN as before


def _only_cost_zero(an: Analysis) -> bool:
    """For θ without mixed classes and few kink classes: S_θ is certified the only configuration of cost 0 (the
    flip rows κ_û ⊗ α̂_û of the reduced network independent), so the configuration search would return it and
    the direct construction gives the same network without it (and without the exact rationals of M)."""
    hc = an.classes
    order = an.normal_form.kink_order
    if order.shape[0] == 0:
        return True
    if hc.kappa.dtype == object or hc.A.dtype == object:
        return False
    from relusym._fibre.flips import flips_certified_absent

    reps = hc.rep[order]
    cert = Network(np.ascontiguousarray(hc.kappa[order].T), an.net.A[reps], an.net.b[reps], m=an.net.m)
    return flips_certified_absent(Analysis(cert))


def _direct_minimal(an: Analysis, keep_scales: bool, *, certify: bool = True, unique: bool = False) -> MinimalNetwork:
    """The minimal network when no hyperplane class carries neurons of both orientations, built directly.

    Then θ's own configuration (S_θ = the negatively oriented classes, P = ∅) has R_S = 0, so w = N, and one
    neuron per kink class realizes ρ(θ): the class's neurons merged into its first neuron, rescaled to
    (κ_û/|λ|, a, b) (``keep_scales``: θ's own row, so single-neuron classes keep θ's float weights) or to the
    canonical (κ_û, ±α̂, ±β̂); constant neurons go into the output bias c + Σ_const b_i v_i, null neurons and
    classes whose kinks cancel are dropped.  The neurons are sorted by the exact û.  The result is CMN(f) when
    S_θ is the only configuration of cost 0, which the flip certificate of the reduced network shows (its
    rows κ_û ⊗ α̂_û independent); otherwise it is minimal and ``canonical`` is False."""
    net, hc, nf = an.net, an.classes, an.normal_form
    order = nf.kink_order
    N = int(order.shape[0])
    reps = hc.rep[order]
    lam = hc.lam[reps]
    neg = np.asarray(lam < 0, dtype=bool)
    single = hc.sizes[order] == 1
    k, m = net.k, net.m
    c_out = list(hc.const)
    Vp = _merged_float_columns(net, hc, order, reps, single) if keep_scales and net.is_float else None
    if Vp is not None:
        out = Network(Vp, np.ascontiguousarray(net.A[reps]), net.b[reps], _as_dtype(c_out, net))
    elif keep_scales:
        V_cols = []
        for t, j in enumerate(order.tolist()):
            i = int(reps[t])
            if single[t]:
                V_cols.append([to_fraction(x) for x in net.V[:, i].tolist()])
            else:
                scale = abs(to_fraction(hc.lam[i]))
                V_cols.append([x / scale for x in hc.kappa_exact(j)])
        rows = [(tuple(V_cols[t]), tuple(to_fraction(x) for x in net.A[int(i)].tolist()), to_fraction(net.b[int(i)]))
                for t, i in enumerate(reps.tolist())]  # fmt: skip
        out = _assemble(rows, c_out, m, k, like=net)
    else:
        out = _canonical_direct(an, order)
    S = tuple(int(t) for t in np.nonzero(neg)[0].tolist())
    config = Configuration(S, (), 0, 0)
    assert out.n == N
    if keep_scales:  # θ's own scales: minimal, never the canonical network, so nothing to certify
        return MinimalNetwork(out, N, False, config, None)
    if unique:  # certified by the caller
        return MinimalNetwork(out, N, True, config, None)
    if not certify:
        return MinimalNetwork(out, N, False, config, "the uniqueness of S_θ was not asked for")
    from relusym._fibre.flips import flips_certified_absent

    # the flip rows of the reduced network are κ_û ⊗ a_rep up to nonzero factors: certify on float data
    kap = hc.kappa[order]
    cert = Network(np.ascontiguousarray(kap.T), net.A[reps], net.b[reps], m=m) if N else out
    unique = flips_certified_absent(Analysis(cert))
    note = None if unique else "w = N is certain; S_θ was not certified the only configuration of cost 0"
    return MinimalNetwork(out, N, unique, config, note)


def _canonical_direct(an: Analysis, order: np.ndarray) -> Network:
    """CMN(f) for θ without mixed classes: for each kink class in NF order the neuron (κ_û / |P_piv|, P), P the
    primitive integer vector on the ray of θ's rows w = (a, b) in that class (its pivot P_piv, the first nonzero
    of its a-part), and the output bias c + Σ_const b_i v_i (docs/math/width.md, step 6).

    For a float network no Fraction is built where float64 holds the values: P from the rows' integer mantissas
    over their shared power of two, divided by the row's gcd (:func:`relusym._core.canon_rows.primitive_rows`),
    and κ / |P_piv| from κ's exact float64 mantissas (dyadic); rational networks go through
    :func:`_fraction_direct`.  Stored block by block (:class:`relusym._core.canon_rows.BlockStore`) by the
    rule of :func:`relusym._core.canon_rows.assemble_exact`, so no temporary is larger than a block."""
    net, hc = an.net, an.classes
    N, m = int(order.shape[0]), net.m
    if N == 0 or not net.is_float or hc.A.dtype == object:
        return _fraction_direct(an, order)
    reps = hc.rep[order]
    dtype = np.result_type(net.V, net.A, net.b, net.c)
    A_st, b_st = BlockStore((N, m), dtype), BlockStore((N,), dtype)
    pivs = []
    for s0 in range(0, N, _ROWS):  # a block of rows at a time: the temporaries stay small beside the result
        r = reps[s0 : s0 + _ROWS]
        P = primitive_rows(np.concatenate([hc.A[r].astype(np.float64), hc.b[r].astype(np.float64)[:, None]], axis=1))
        A_st.put(s0, P[:, :m])
        b_st.put(s0, P[:, m])
        pivs.append(pivots(P, m))
    piv = np.concatenate(pivs if all(p.dtype != object for p in pivs) else [p.astype(object) for p in pivs])
    V_st, c_st = BlockStore((net.k, N), dtype), BlockStore((net.k,), dtype)
    V_st.put(0, divide_by_pivots(hc.kappa[order], piv).T)
    c_st.put(0, float64_or_fractions(list(hc.const)))
    stores = (V_st, A_st, b_st, c_st)
    narrow = all(st.tier == 0 for st in stores)
    return Network(*(st.final(narrow) for st in stores), m=m)


_ROWS = 64  # rows per block of _canonical_direct


def _fraction_direct(an: Analysis, order: np.ndarray) -> Network:
    """:func:`_canonical_direct` from exact Fractions (rational networks, no kink class)."""
    net, hc = an.net, an.classes
    neg = np.asarray(hc.lam[hc.rep[order]] < 0, dtype=bool)
    us = hc.u_exact_many(order.tolist())
    kaps = [hc.kappa_exact(j) for j in order.tolist()]
    neurons = []
    for u, kap, ng in zip(us, kaps, neg.tolist(), strict=True):
        if ng:
            u = tuple(-x for x in u)
        neurons.append(primitive_neuron(kap, u[: net.m], u[net.m]))
    return _assemble(neurons, list(hc.const), net.m, net.k, like=net)


def _as_assembled(out: Network, like: Network) -> Network:
    """``out`` stored as :func:`_assemble` stores its networks (for a float ``like``: its dtype when every entry
    fits, else float64 or Fractions array by array; Fractions throughout otherwise)."""
    arrays = (out.V, out.A, out.b, out.c)
    if like.is_float:
        return assemble_exact(*arrays, out.m, like)
    if all(x.dtype == object for x in arrays):
        return out
    return out.to_fractions()


def _merged_float_columns(
    net: Network, hc: HyperplaneClasses, order: np.ndarray, reps: np.ndarray, single: np.ndarray
) -> np.ndarray | None:
    """V of the reduced network in θ's float dtype: v_rep for single-neuron classes, κ_û/|λ_rep| for merged ones
    when that is exactly representable (checked exactly: the float product q·|λ| must give κ back), else
    None."""
    Vp = np.array(net.V[:, reps], copy=True)
    multi = np.nonzero(~single)[0]
    if multi.size == 0:
        return Vp
    small = all(x.dtype.itemsize <= 4 for x in (net.V, net.A))
    if hc.kappa.dtype == object or not small:
        return None
    kap = hc.kappa[order[multi]]
    al = np.abs(hc.lam[reps[multi]]).astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        q = (kap / al[:, None]).astype(net.V.dtype)
    if not bool((q.astype(np.float64) * al[:, None] == kap).all()):  # float32 × float32 is exact in float64
        return None
    Vp[:, multi] = q.T
    return Vp


def _as_dtype(values: list[Fraction], like: Network) -> Any:
    fit = exactly_in_dtype(values, like.c.dtype)
    return values if fit is None else fit


def _rescale_like(neurons: list[tuple[Vec, Vec, Fraction]], hc: HyperplaneClasses) -> list[tuple[Vec, Vec, Fraction]]:
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


def prune(
    net: Network,
    *,
    budget: float = 10.0,
    canonical: bool = False,
    keep_scales: bool | None = None,
    progress: bool | None = None,
) -> Network:
    """A network of minimal width w(f) computing the same function: the same normal form, exact.

    By default a float network keeps its own float weights wherever they survive (each emitted neuron has the
    scale of the network's own neuron on that hyperplane), so pruning a float model and writing it back in its
    own format is exact; this is the network ``relusym prune`` writes.  ``canonical=True`` gives instead the
    canonical minimal network (docs/math/width.md), a function of ρ(θ) alone whose hidden rows are primitive
    integer vectors, exact: in the network's float dtype when it holds every entry (the rule for float32), else
    float64 or ``Fraction`` array by array.  ``keep_scales`` overrides the choice for
    callers of the older keyword.  See :func:`minimal_network` for the (rare, large) cases where the result is
    minimal but not certified canonical.

    >>> small = prune(Network([[1, 2]], [[1], [-1]], [0, 1]))  # E1: exact entries, so the canonical network
    >>> small.to_dict()["V"], small.to_dict()["A"], small.to_dict()["b"], small.to_dict()["c"]
    ([['2', '1']], [['-1'], ['1']], ['1', '0'], ['0'])
    """
    budget = check_budget(budget)
    if keep_scales is None:
        keep_scales = net.is_float and not canonical
    with ticking(budget, desc="prune: width search", progress=progress):
        return minimal_network(net, budget=budget, keep_scales=keep_scales, certify=False).network
