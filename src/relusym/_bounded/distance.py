"""The max-norm distance of two one-hidden-layer networks on a box, bracketed exactly (docs/math/domains.md): a
lower bound attained at an exact point, a sound upper bound, and the maximum when it is proved (exactly for
m = 1, by a big-M MILP on HiGHS otherwise)."""

from __future__ import annotations

import heapq
import math
import random as _random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._bounded.domain import Box, as_domain
from relusym._bounded.restriction import concat, negated
from relusym._core.network import Network, check_pair
from relusym._exact.numbers import (
    fraction_str,
    to_fraction,
)
from relusym.errors import InvalidNetworkError

__all__ = ["DomainDistance", "distance_on"]


# ----------------------------------------------------------------------------------------------------------
# the max-norm distance on a box


@dataclass(frozen=True)
class DomainDistance:
    """max over the box of ‖ρ(θ1)(x) − ρ(θ2)(x)‖_∞, bracketed exactly.

    ``lower``: an exact value attained at ``point`` (verified by exact evaluation); ``upper``: a sound exact
    upper bound (interval arithmetic over sub-boxes, refined by splitting); ``kind``: ``"exact"`` when
    lower = upper is proved in exact arithmetic, ``"milp"`` when HiGHS's MILP over the activation patterns
    proved ``lower`` optimal (within HiGHS's floating-point tolerances; ``milp_bound`` is its bound), else
    ``"bounds"`` (only the bracket [lower, upper] is proved).
    """

    lower: Fraction
    point: tuple[Fraction, ...]
    upper: Fraction
    kind: str
    domain: Box
    milp_bound: float | None = None
    regions: int = 0

    @property
    def value(self) -> Fraction:
        """The maximum when known (kind "exact" or "milp"), else the verified lower bound."""
        return self.lower

    def within(self, eps: Any) -> bool | None:
        """ε-equivalence on the box: True when upper ≤ ε, False when lower > ε, None when undecided."""
        e = to_fraction(eps, "eps")
        if self.upper <= e:
            return True
        if self.lower > e:
            return False
        return None

    def __float__(self) -> float:
        return float(self.lower)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "relusym.domain-distance/1",
            "lower": fraction_str(self.lower),
            "upper": fraction_str(self.upper),
            "point": [fraction_str(v) for v in self.point],
            "kind": self.kind,
            "milp_bound": self.milp_bound,
            "regions": self.regions,
            "domain": self.domain.to_dict(),
        }

    def __str__(self) -> str:
        what = {"exact": "exact maximum", "milp": "maximum (proved by the MILP)", "bounds": "bracket"}[self.kind]
        return f"{what}: {float(self.lower):.6g} ≤ max ‖Δ‖_∞ ≤ {float(self.upper):.6g}"


class _Difference:
    """f = ρ(θ1) − ρ(θ2) as one network θ1 ⊖ θ2 = ([V1, −V2], [A1; A2], [b1; b2], c1 − c2), with its
    parameters as Fractions for the interval bounds."""

    def __init__(self, net1: Network, net2: Network) -> None:
        V = concat([net1.V, negated(net2.V)], axis=1)
        A = concat([net1.A, net2.A], axis=0)
        b = concat([net1.b, net2.b], axis=0)
        self.c = [to_fraction(x) - to_fraction(y) for x, y in zip(net1.c.tolist(), net2.c.tolist(), strict=True)]
        self.net = Network(V, A, b, self.c, m=net1.m)
        self.A = [[to_fraction(v) for v in row] for row in A.tolist()]
        self.b = [to_fraction(v) for v in b.tolist()]
        self.V = [[to_fraction(v) for v in row] for row in V.tolist()]

    def value(self, x: Sequence[Fraction]) -> Fraction:
        y = self.net.evaluate_exact(x)
        return max(abs(v) for v in y)

    def upper(self, lo: Sequence[Fraction], hi: Sequence[Fraction]) -> Fraction:
        """A sound bound on max_r |f_r| over the box [lo, hi]: neurons that do not cross it are affine or zero
        (kept symbolically, so the affine part is bounded exactly); a crossing neuron σ(ℓ) lies in [0, max ℓ]."""
        m = len(lo)
        k = len(self.V)
        lin = [[Fraction(0)] * m for _ in range(k)]
        const = list(self.c)
        slack_lo = [Fraction(0)] * k
        slack_hi = [Fraction(0)] * k
        for i, (a, bi) in enumerate(zip(self.A, self.b, strict=True)):
            mn, mx = _affine_range(a, bi, lo, hi)
            if mx <= 0:
                continue
            for r in range(k):
                v = self.V[r][i]
                if not v:
                    continue
                if mn >= 0:
                    for j in range(m):
                        if a[j]:
                            lin[r][j] += v * a[j]
                    const[r] += v * bi
                else:
                    # σ(ℓ) ∈ [0, mx] on the box
                    if v > 0:
                        slack_hi[r] += v * mx
                    else:
                        slack_lo[r] += v * mx
        best = Fraction(0)
        for r in range(k):
            amin, amax = _affine_range(lin[r], const[r], lo, hi)
            best = max(best, abs(amin + slack_lo[r]), abs(amax + slack_hi[r]))
        return best


def _breakpoints_m1(diff: _Difference, lo: Fraction, hi: Fraction) -> list[Fraction]:
    pts = {lo, hi}
    for a, bi in zip(diff.A, diff.b, strict=True):
        if a[0] != 0:
            t = -bi / a[0]
            if lo < t < hi:
                pts.add(t)
    return sorted(pts)


def _milp_max(diff: _Difference, box: Box, time_limit: float) -> tuple[tuple[float, ...] | None, float | None, bool]:
    """Maximise max_r ±f_r over the box with a big-M MILP (scipy's HiGHS), one MILP per output and sign.
    Returns (best point, HiGHS's bound on the maximum, all MILPs solved to optimality)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix, hstack, identity, vstack

    m = len(box.lo)
    lo = np.array([float(v) for v in box.lo])
    hi = np.array([float(v) for v in box.hi])
    A = np.array([[float(v) for v in row] for row in diff.A]).reshape(len(diff.A), m)
    b = np.array([float(v) for v in diff.b])
    V = np.array([[float(v) for v in row] for row in diff.V]).reshape(len(diff.V), len(diff.A))
    c = np.array([float(v) for v in diff.c])
    pos, neg = np.maximum(A, 0), np.minimum(A, 0)
    L = pos @ lo + neg @ hi + b
    U = pos @ hi + neg @ lo + b
    # margins against float rounding of the bounds (they only loosen the relaxation)
    pad = 1e-9 * (1 + np.abs(L) + np.abs(U))
    L, U = L - pad, U + pad
    cross = np.nonzero((L < 0) & (U > 0))[0]
    act = np.nonzero(L >= 0)[0]
    nc = len(cross)
    # variables: x (m), h (nc), z (nc)
    Ac, bc, Lc, Uc = A[cross], b[cross], L[cross], U[cross]
    eye = identity(nc, format="csr")
    diag_L = coo_matrix((Lc, (np.arange(nc), np.arange(nc))), shape=(nc, nc))
    diag_U = coo_matrix((Uc, (np.arange(nc), np.arange(nc))), shape=(nc, nc))
    # variables (x, h, z): a·x − h ≤ −b;  −a·x + h − L z ≤ b − L;  h − U z ≤ 0
    G = vstack(
        [
            hstack([coo_matrix(Ac), -eye, coo_matrix((nc, nc))]),
            hstack([coo_matrix(-Ac), eye, -diag_L]),
            hstack([coo_matrix((nc, m)), eye, -diag_U]),
        ]
    ).tocsr()
    cons = [LinearConstraint(G, -np.inf, np.concatenate([-bc, bc - Lc, np.zeros(nc)]))] if nc else []
    bounds = Bounds(
        np.concatenate([lo, np.zeros(nc), np.zeros(nc)]), np.concatenate([hi, np.maximum(U[cross], 0), np.ones(nc)])
    )
    integrality = np.concatenate([np.zeros(m + nc), np.ones(nc)])
    best_pt: tuple[float, ...] | None = None
    best_bound, best_val, all_opt = -math.inf, -math.inf, True
    deadline = Deadline(max(0.0, time_limit))
    for r in range(V.shape[0]):
        lin = V[r, act] @ A[act] if len(act) else np.zeros(m)
        off = c[r] + (V[r, act] @ b[act] if len(act) else 0.0)
        obj = np.concatenate([lin, V[r, cross], np.zeros(nc)])
        for sgn in (1.0, -1.0):
            left = deadline.left()
            if left <= 0:
                return best_pt, None, False
            res = milp(
                -sgn * obj,
                constraints=cons,
                bounds=bounds,
                integrality=integrality,
                options={"time_limit": left, "disp": False},
            )
            if res.x is None:
                all_opt = False
                continue
            val = -res.fun + sgn * off
            if res.status != 0:
                all_opt = False
            bound = getattr(res, "mip_dual_bound", None)
            bound_v = -bound + sgn * off if bound is not None and np.isfinite(bound) else val
            best_bound = max(best_bound, bound_v)
            if val > best_val:
                best_val, best_pt = val, tuple(float(v) for v in res.x[:m])
    return best_pt, (float(best_bound) if all_opt else None), all_opt


def _affine_range(
    a: Sequence[Fraction], b: Fraction, lo: Sequence[Fraction], hi: Sequence[Fraction]
) -> tuple[Fraction, Fraction]:
    """(min, max) of x ↦ a·x + b over the box [lo, hi], exactly."""
    mn, mx = b, b
    for aj, l_, h in zip(a, lo, hi, strict=True):
        if aj > 0:
            mn += aj * l_
            mx += aj * h
        elif aj < 0:
            mn += aj * h
            mx += aj * l_
    return mn, mx


def _checked_box(net1: Network, net2: Network, domain: Any, norm: str) -> Box:
    """The arguments of :func:`distance_on` checked: the max norm, two networks of one shape, a box."""
    if norm not in ("max", "inf", "linf"):
        raise InvalidNetworkError(f"norm must be 'max' (the sup over the box of the max over outputs), got {norm!r}")
    check_pair(net1, net2, "distance")
    dom = as_domain(domain, net1.m)
    if not isinstance(dom, Box):
        raise InvalidNetworkError("distance on a domain needs a Box (a polytope is not supported there)")
    return dom


def distance_on(
    net1: Network,
    net2: Network,
    domain: Any,
    *,
    norm: str = "max",
    budget: float = 5.0,
    max_regions: int = 2000,
    milp: bool = True,
    seed: int = 0,
) -> DomainDistance:
    """max over the box of ‖ρ(θ1)(x) − ρ(θ2)(x)‖_∞, with a verified lower bound and a sound upper bound.

    * lower bound: exact evaluation at the box centre, its corners (m ≤ 10), random grid points, the centres of
      the sub-boxes and the MILP's solution (clipped into the box); the best is returned with its point;
    * upper bound: exact interval arithmetic over sub-boxes (neurons that do not cross a sub-box are kept
      affine, the others bounded by [0, max ℓ]), refined by splitting the sub-box with the largest bound
      along its longest side, within ``budget`` seconds and ``max_regions`` sub-boxes;
    * for m = 1 the maximum is exact: |f| is piecewise linear, so its maximum is at a breakpoint or an end;
    * otherwise, with ``milp=True``, a big-M MILP per output and sign on scipy's HiGHS; when all of them are
      solved to optimality, the answer has kind "milp".
    """
    dom = _checked_box(net1, net2, domain, norm)
    diff = _Difference(net1, net2)
    m = net1.m
    rng = _random.Random(seed)
    best_x = dom.interior_point()
    best = diff.value(best_x)

    def consider(x: tuple[Fraction, ...]) -> None:
        nonlocal best, best_x
        v = diff.value(x)
        if v > best:
            best, best_x = v, x

    if m == 1:
        for t in _breakpoints_m1(diff, dom.lo[0], dom.hi[0]):
            consider((t,))
        return DomainDistance(best, best_x, best, "exact", dom, None, 1)
    deadline = Deadline(budget)
    if m <= 10:
        for corner in range(1 << m):
            consider(tuple(dom.hi[j] if corner >> j & 1 else dom.lo[j] for j in range(m)))
            if deadline.left() <= 3 * budget / 4:
                break
    for _ in range(32):
        consider(dom.random_interior(rng))
    milp_bound: float | None = None
    proved = False
    if milp:
        pt, bound, opt = _milp_max(diff, dom, max(0.1, budget / 2))
        if pt is not None:
            x = tuple(min(max(Fraction(v), lo_j), hi_j) for v, lo_j, hi_j in zip(pt, dom.lo, dom.hi, strict=True))
            consider(x)
        milp_bound = bound
        proved = opt and bound is not None and bound <= float(best) + 1e-9 * (1 + abs(float(best)))
    # branch and bound over sub-boxes for the sound upper bound
    lo0, hi0 = dom.lo, dom.hi
    heap: list[tuple[float, int, Fraction, tuple[Fraction, ...], tuple[Fraction, ...]]] = []
    u0 = diff.upper(lo0, hi0)
    counter = 0
    heap.append((-float(u0), counter, u0, lo0, hi0))
    regions = 1
    while heap and not deadline.expired() and regions < max_regions:
        _, _, ub, lo, hi = heap[0]
        if ub <= best:
            break
        heapq.heappop(heap)
        j = max(range(m), key=lambda t: hi[t] - lo[t])
        mid = (lo[j] + hi[j]) / 2
        for a, bnd in ((lo[j], mid), (mid, hi[j])):
            nlo = lo[:j] + (a,) + lo[j + 1 :]
            nhi = hi[:j] + (bnd,) + hi[j + 1 :]
            consider(tuple((p + q) / 2 for p, q in zip(nlo, nhi, strict=True)))
            u = diff.upper(nlo, nhi)
            counter += 1
            heapq.heappush(heap, (-float(u), counter, u, nlo, nhi))
        regions += 1
    upper = max((item[2] for item in heap), default=best)
    upper = max(upper, best)
    kind = "exact" if upper == best else ("milp" if proved else "bounds")
    return DomainDistance(best, best_x, upper, kind, dom, milp_bound, regions)
