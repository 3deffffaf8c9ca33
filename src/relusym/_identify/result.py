"""The result of :func:`relusym.identify`: the :class:`Identification` and the network built from the recovered
hyperplanes (exact when the oracle is exact, float otherwise), with the limits of what was checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._core.normal_form import NormalForm, normal_form
from relusym._core.operations import realize
from relusym._exact.numbers import fraction_str
from relusym._identify.regions import Hyper
from relusym._identify.session import Session
from relusym._identify.width import absorbing_orientations
from relusym.errors import BudgetExceededError

__all__ = ["Identification", "build_network", "describe_fiber", "describe_limits"]


# ----------------------------------------------------------------------------------------------------------
# the result
@dataclass(frozen=True)
class Identification:
    """The answer of :func:`identify`.

    ``network``: a network of minimal width realizing the recovered function (exact mode: the canonical minimal
    network of the recovered normal form when it can be certified; float mode: minimal within the measured
    precision when ``width_minimal``); ``normal_form``: its normal form;
    ``queries``: oracle evaluations used (points; each returns k numbers) and ``calls`` (batches);
    ``exact``: the mode; ``precision_bits`` (float mode): −log2 of the estimated worst-case relative error of the
    recovered hyperplanes (unit (a, b)) and kinks (of the linear part M when no kink was found), from the
    oracle's measured noise and the steps used, and never more than twice the largest miss of a recovered
    hyperplane at a kink found on a check line; ``noise``: that measured relative noise level;
    ``heldout_error``: the largest relative disagreement on held-out queries; ``window``: the largest |t| searched
    on the lines (unit directions in float mode); ``lines``: lines searched; ``width_minimal``: True when the
    width of ``network`` is certified minimal (exact mode: w(f) of the exact normal form; float mode: one neuron
    per recovered kink class, the linear part absorbed by orientations found within the measured precision and
    checked on the held-out queries, or no kink and 2·rank(M) neurons), None when undecided (``notes`` says why
    and gives bounds); ``fiber``: the fibre of the recovered network (what queries cannot distinguish), None
    when it could not be computed within budget; ``indistinguishable``: that fibre in words; ``limits``: what the
    search guarantees and what it does not; ``information_limit``: n(m + k + 1) + k numbers for the recovered
    width n.
    """

    network: Network
    normal_form: NormalForm
    queries: int
    calls: int
    exact: bool
    precision_bits: float | None
    noise: float | None
    heldout_error: float | None
    window: float
    lines: int
    kinks: int
    fiber: Any
    indistinguishable: tuple[str, ...]
    limits: tuple[str, ...]
    information_limit: int
    elapsed: float
    notes: tuple[str, ...] = field(default=())
    width_minimal: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "relusym.identification/1",
            "mode": "exact" if self.exact else "float",
            "m": self.network.m,
            "n": self.network.n,
            "k": self.network.k,
            "kinks": self.kinks,
            "queries": self.queries,
            "queries_log2": round(math.log2(self.queries), 3) if self.queries else None,
            "calls": self.calls,
            "information_limit": self.information_limit,
            "precision_bits": None if self.precision_bits is None else round(self.precision_bits, 2),
            "noise": self.noise,
            "heldout_error": self.heldout_error,
            "window": self.window,
            "lines": self.lines,
            "elapsed_seconds": round(self.elapsed, 3),
            "indistinguishable": list(self.indistinguishable),
            "limits": list(self.limits),
            "notes": list(self.notes),
            "width_minimal": self.width_minimal,
            "fiber": None if self.fiber is None else self.fiber.to_dict(),
            "network": self.network.to_dict(),
            "normal_form": self.normal_form.to_dict(),
        }

    def report(self) -> str:
        m, n, k = self.network.shape
        lines = [
            f"identified a network with m = {m}, n = {n}, k = {k} ({self.kinks} kink class(es)) "
            f"from {self.queries} queries (2^{math.log2(max(self.queries, 1)):.2f}; information limit "
            f"{self.information_limit} numbers) in {self.elapsed:.2f} s",
        ]
        if self.exact:
            lines.append("exact mode: the normal form is exact")
        else:
            lines.append(
                f"float mode: precision ≈ 2^-{self.precision_bits:.1f} (worst relative error of hyperplanes and "
                f"kinks); oracle noise {self.noise:.2g}; held-out disagreement {self.heldout_error:.2g}"
            )
        lines.append("what queries cannot distinguish:")
        lines += ["  " + s for s in self.indistinguishable]
        lines.append("limits:")
        lines += ["  " + s for s in self.limits]
        lines += ["note: " + s for s in self.notes]
        return "\n".join(lines)


def build_network(
    session: Session, hypers: list[Hyper], M: np.ndarray, e: np.ndarray, verify: Callable[[Network], bool]
) -> tuple[Network, NormalForm, str, bool | None]:
    """A network of minimal width for the recovered function, the note that says why when its width is not
    certified minimal, and whether it is (None: undecided)."""
    m, k = session.m, session.k
    if session.exact:
        kinks: dict[tuple[Fraction, ...], list[Fraction]] = {}
        for h in hypers:
            key = tuple(h.a.tolist()) + (h.b,)
            acc = kinks.setdefault(key, [Fraction(0)] * k)
            for r in range(k):
                acc[r] += h.v[r]
        d = {
            "m": m,
            "k": k,
            "kinks": [
                {"hyperplane": [fraction_str(x) for x in u], "kink": [fraction_str(x) for x in kap]}
                for u, kap in sorted(kinks.items())
                if any(kap)
            ],
            "M": [[fraction_str(x) for x in M[r]] for r in range(k)],
            "e": [fraction_str(x) for x in e],
        }
        base = realize(d)
        nf = normal_form(base)
        start = _absorb_exact(nf) or base
        try:
            from relusym._fibre.width import minimal_network

            mn = minimal_network(start, budget=10.0)
            note = "" if mn.canonical else f"minimal width, not certified canonical: {mn.note}"
            return mn.network, normal_form(mn.network), note, True
        except BudgetExceededError as exc:
            return start, nf, f"minimal width undecided: {exc}", None
    return _float_network(session, hypers, M, e, verify)


def _float_network(
    session: Session, hypers: list[Hyper], M: np.ndarray, e: np.ndarray, verify: Callable[[Network], bool]
) -> tuple[Network, NormalForm, str, bool | None]:
    """Float mode: a network of minimal width within the measured precision.  The recovered neurons are
    oriented to absorb the linear part M when some orientation does so within the precision (an exhaustive
    search, :mod:`relusym._identify.width`) and the result reproduces the held-out queries (``verify``);
    otherwise M is realized by cancelling pairs, one per singular value of M above the precision."""
    m, k = session.m, session.k
    N = len(hypers)
    V = np.array([h.v for h in hypers], dtype=np.float64).reshape(N, k).T.copy()
    A = np.array([h.a for h in hypers], dtype=np.float64).reshape(N, m).copy()
    b = np.array([h.b for h in hypers], dtype=np.float64)
    c = np.asarray(e, dtype=np.float64).copy()
    Mf = np.asarray(M, dtype=np.float64).copy()
    X = np.stack([np.outer(V[:, u], A[u]).ravel() for u in range(N)], axis=1) if N else np.zeros((k * m, 0))
    cols = np.linalg.norm(X, axis=0)
    errs = np.array([max(float(h.err_w), float(h.err_v)) for h in hypers])
    worst = max([*errs.tolist(), session.eps])
    # the error of the linear part: that of each recovered kink term (M is one region's Jacobian with the
    # active kink terms removed, and that Jacobian errs like the kinks' jumps), and of M itself
    tol = 16.0 * (float(cols @ errs) + worst * float(np.linalg.norm(Mf)) + session.eps * float(cols.sum()))
    # (no shortcut for ‖M‖ ≤ tol: the orientations are ranked by their residual, s = 0 among them, and a loose
    # precision must not let a worse one win)
    # the stated errors are conservative (by 2^6 or more): the search starts at the oracle's noise level and
    # loosens by 2^4 up to tol, so that the orientation the queries determine is found before looser levels
    # admit others (at a tight level the flip matrix has a high numerical rank and few free entries)
    tol0 = min(tol, 16.0 * session.eps * (float(cols.sum()) + float(np.linalg.norm(Mf))))
    level = tol0
    while True:
        search = absorbing_orientations(X, -Mf.ravel(), level, session.deadline)
        for s in search.solutions[:8]:
            flipped = s == 1
            A2, b2 = A.copy(), b.copy()
            A2[flipped], b2[flipped] = -A[flipped], -b[flipped]
            net = Network(V, A2, b2, c + V[:, flipped] @ b[flipped], m=m)
            if verify(net):
                return net, normal_form(net), "", True
        if level >= tol or not search.complete:
            break
        level = min(16.0 * level, tol)
    # cancelling pairs v σ(a·x) − v σ(−a·x) = v (a·x), one per singular value of M above the noise level
    # (through r pivot rows of M: M = C M_P with C = I on those rows, so a row of M that is a pivot is kept as
    # recovered, not rounded through a factorization)
    from scipy.linalg import qr

    sv = np.linalg.svd(Mf, compute_uv=False)
    r_num = int(np.sum(sv > tol0))
    piv = qr(Mf.T, mode="r", pivoting=True)[1] if k * m else np.zeros(0, dtype=np.int64)
    for rank in dict.fromkeys([r_num, int(np.sum(sv > 0))]):
        Pr = piv[:rank]
        C = np.linalg.lstsq(Mf[Pr].T, Mf.T, rcond=None)[0].T if rank else np.zeros((k, 0))
        C[Pr] = np.eye(rank)
        pV = [C[:, i] for i in range(rank)]
        pA = [Mf[Pr[i]] for i in range(rank)]
        V2 = np.concatenate([V, np.array(pV + [-x for x in pV]).reshape(2 * rank, k).T], axis=1)
        A2 = np.concatenate([A, np.array(pA + [-x for x in pA]).reshape(2 * rank, m)], axis=0)
        net = Network(V2, A2, np.concatenate([b, np.zeros(2 * rank)]), c, m=m)
        if verify(net):
            break
    if N == 0 and rank == r_num:
        # no kink class: every realization carries M by cancelling pairs, 2·rank(M) neurons (docs/math/width.md)
        return net, normal_form(net), "", True
    if search.complete:
        why = (
            f"no orientation of the {N} recovered neurons absorbs the linear part within the measured precision "
            f"(all 2^{N - search.rank} orientations beyond the numerical rank {search.rank} of the flip matrix "
            "were searched)"
        )
    else:
        why = f"the orientations that could absorb the linear part were not all searched: {search.reason}"
    note = (
        f"minimal width undecided: {why}; the linear part is realized by {rank} cancelling pair(s), width "
        f"{net.n}, and the minimal width within the measured precision lies between "
        f"{N + (1 if search.complete else 0)} and {net.n} (a hyperplane carried by neurons of both orientations, "
        "which could save neurons, was not searched)"
    )
    return net, normal_form(net), note, None


def _absorb_exact(nf: NormalForm) -> Network | None:
    """A width-N network for the exact normal form when a set S of classes with M + Σ_S κ α̂ᵀ = 0 is the unique
    solution of that linear system (then it is the only cost-0 configuration); None otherwise."""
    from relusym._exact import linalg as linalg

    K = nf.K
    m, k = nf.m, nf.k
    if not K:
        return None
    rows = [[kap[r] * u[j] for r in range(k) for j in range(m)] for u, kap in K]
    target = [-nf.M[r][j] for r in range(k) for j in range(m)]
    if linalg.rank(rows) < len(rows):
        return None
    cols = [[rows[i][q] for i in range(len(rows))] for q in range(k * m)]
    sol = linalg.solve(cols, target)
    if sol is None or any(x not in (0, 1) for x in sol):
        return None
    V_cols, A_rows, b = [], [], []
    c = list(nf.e)
    for (u, kap), s in zip(K, sol, strict=True):
        if s == 1:
            V_cols.append(list(kap))
            A_rows.append([-x for x in u[:m]])
            b.append(-u[m])
            for r in range(k):
                c[r] += kap[r] * u[m]
        else:
            V_cols.append(list(kap))
            A_rows.append(list(u[:m]))
            b.append(u[m])
    V = [[V_cols[i][r] for i in range(len(V_cols))] for r in range(k)]
    net = Network(V, A_rows, b, c, m=m)
    return net if normal_form(net) == nf else None


def describe_fiber(fb: Any, net: Network) -> tuple[str, ...]:
    out = ["the order of the neurons and a positive scale of each (the H_n-orbit): (v, a, b) ↦ (v/d, d a, d b), d > 0"]
    if fb is None:
        out.append("the rest of the fibre was not computed within budget")
        return tuple(out)
    if fb.flips is not None and len(fb.flips) > 1:
        shown = ", ".join("{" + ", ".join(map(str, T)) + "}" for T in fb.flips[1:6])
        more = " …" if len(fb.flips) > 6 else ""
        cnt = fb.flip_count if fb.flips_complete else f"at least {fb.flip_count_lower_bound}"
        out.append(
            f"flips (σ(t) − σ(−t) = t): turning over the neurons of any of these sets, with the output bias "
            f"corrected, gives the same function: {shown}{more} ({cnt} set(s) including ∅)"
        )
    elif fb.flips is not None:
        out.append("no flip: the orientation of every neuron is determined by the function")
    if fb.width is not None and fb.width < fb.n:
        out.append(f"the network is wider than needed: {fb.n} neurons where {fb.width} suffice")
    out.append(f"fibre: {fb.generic_reason}; dimension {fb.dimension}, {fb.orbits} H_n-orbit(s)")
    out.append(
        "duplicated neurons (one hyperplane split among several neurons), cancelling pairs and their translations, "
        "null and constant neurons leave no trace in queries; the recovered network has none beyond what its "
        "normal form needs"
    )
    return tuple(out)


def describe_limits(session: Session, window: float, check_lines: int) -> tuple[str, ...]:
    out = [
        f"each line was searched on a window grown geometrically until it reached 2^{session.reach} times the farthest "
        f"kink found (|t| ≤ {window:.3g}): a hyperplane that crosses every searched line farther out than that is "
        "not seen, and a compactly supported bump (several parallel kinks that cancel outside a narrow band) far "
        "from the origin is seen only if a probe lands in it",
        "between two neighbouring certified pieces one random query checks linearity: a bump of several kinks "
        "that returns exactly to the same line inside a gap is found only with the probability that a random "
        "query lands in it (a second line crosses it elsewhere)",
        f"the recovered function reproduced the oracle on {check_lines} further random line(s) and on held-out "
        "random points" + (" exactly" if session.exact else " within the stated precision"),
    ]
    if not session.exact:
        out.append(
            "float mode: kinks whose slope jump along a line is below the oracle's noise level cannot be seen; "
            "precision is estimated from the measured noise and the step sizes, not certified"
        )
    return tuple(out)
