"""Equality, distance and ε-closeness of deep ReLU networks on a box, decided exactly by branch and bound.

On a sub-box where every hidden unit of both networks is proved dead or active (exact bounds,
:mod:`relusym._deep.bounds`), each network is one affine map, computed exactly by composing the layers with the
dead units zeroed.  Two affine maps agree on an open box iff their coefficients agree; so a box is proved
"equal" by comparing coefficients, and a difference shows at the box's centre or one quarter-side step from it
along a coordinate (strictly inside).  Otherwise the box is split along its widest side and its centre is
compared exactly.  All leaves equal ⇒ "equal" on the box; any exact input where the outputs differ ⇒
"different"; the budget spent ⇒ "undecided".

The max-norm distance uses the same boxes: on a settled box the maximum of |Δ_i| = |g·x + c| is exact
(|g·mid + c| + Σ_j |g_j| r_j, attained at a vertex); on an unsettled box the output bounds give a sound
upper bound max_i max(u1_i − l2_i, u2_i − l1_i).
"""

from __future__ import annotations

import heapq
import random as _random
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from relusym._bounded.distance import DomainDistance
from relusym._bounded.domain import Box, as_domain
from relusym._core.equivalence import Counterexample
from relusym._deep.bounds import BoundTable, ExactLayers, certified_bounds
from relusym._deep.decide import DeepCertificate, DeepVerdict
from relusym._deep.mlp import MLP, as_mlp
from relusym._deep.status import check_budget
from relusym._exact.numbers import fraction_str, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["equivalent_on_deep", "distance_on_deep", "within_on_deep", "WithinVerdict"]

Point = tuple[Fraction, ...]
Affine = tuple[list[list[Fraction]], list[Fraction]]


def _pair(a: Any, b: Any, domain: Any) -> tuple[MLP, MLP, Box]:
    n1, n2 = as_mlp(a), as_mlp(b)
    if (n1.m, n1.k) != (n2.m, n2.k):
        raise InvalidNetworkError(
            f"the networks have different shapes: m = {n1.m}, k = {n1.k} against m = {n2.m}, k = {n2.k}"
        )
    dom = as_domain(domain, n1.m)
    if not isinstance(dom, Box):
        raise InvalidNetworkError("deep networks on a domain need a Box here (a polytope is not supported yet)")
    return n1, n2, dom


def _affine(layers: ExactLayers, t: BoundTable) -> Affine | None:
    """The network's affine map on the box of ``t`` when every hidden unit is settled there, else None."""
    m = layers.m
    G = [[Fraction(int(i == j)) for j in range(m)] for i in range(m)]
    c = [Fraction(0)] * m
    for ell, rows in enumerate(layers.rows):
        nG, nc = [], []
        for j, r in enumerate(rows):
            g = [sum((r[i] * G[i][q] for i in range(len(G)) if r[i]), Fraction(0)) for q in range(m)]
            v = r[-1] + sum((r[i] * c[i] for i in range(len(c)) if r[i]), Fraction(0))
            if ell < len(layers.rows) - 1:
                if t.raw_upper[ell][j] <= 0:
                    g, v = [Fraction(0)] * m, Fraction(0)
                elif t.raw_lower[ell][j] < 0:
                    return None
            nG.append(g)
            nc.append(v)
        G, c = nG, nc
    return G, c


def _values(n1: MLP, n2: MLP, x: Point) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    return n1.evaluate_exact(x), n2.evaluate_exact(x)


def _gap(y1: tuple[Fraction, ...], y2: tuple[Fraction, ...]) -> Fraction:
    return max(abs(p - q) for p, q in zip(y1, y2, strict=True))


def _inner_points(box: Box, lo: Point, hi: Point, G: list[list[Fraction]]) -> list[Point]:
    mid = tuple((a + b) / 2 for a, b in zip(lo, hi, strict=True))
    pts = [mid]
    for j in range(len(mid)):
        if any(row[j] for row in G):
            q = (hi[j] - lo[j]) / 4
            pts.append(mid[:j] + (mid[j] + q,) + mid[j + 1 :])
    return [p for p in pts if box.contains(p, strict=True)]


def _split(lo: Point, hi: Point, root: Box) -> list[tuple[Point, Point]]:
    j = max(range(len(lo)), key=lambda t: (hi[t] - lo[t]) / (root.hi[t] - root.lo[t]))
    mid = (lo[j] + hi[j]) / 2
    return [(lo, hi[:j] + (mid,) + hi[j + 1 :]), (lo[:j] + (mid,) + lo[j + 1 :], hi)]


def _samples(box: Box, count: int, seed: int) -> list[Point]:
    rng = _random.Random(seed)
    pts = [box.interior_point()]
    pts += [box.random_interior(rng, 1 << 16) for _ in range(count)]
    return pts


def equivalent_on_deep(a: Any, b: Any, domain: Any, *, budget: float = 5.0, seed: int = 0) -> DeepVerdict:
    """Decide ρ(a) = ρ(b) on a box: "equal" (every leaf of a partition of the box proved, exactly),
    "different" (an exact input strictly inside the box where the outputs differ) or "undecided"."""
    deadline = time.monotonic() + check_budget(budget)
    n1, n2, box = _pair(a, b, domain)
    for x in _samples(box, 64, seed):
        y1, y2 = _values(n1, n2, x)
        if y1 != y2:
            return DeepVerdict(
                "different", "an exact input inside the box where the outputs differ", None, Counterexample(x, y1, y2)
            )
    L1, L2 = ExactLayers.of(n1), ExactLayers.of(n2)
    stack = [(box.lo, box.hi)]
    leaves = 0
    while stack:
        if time.monotonic() > deadline:
            return DeepVerdict(
                "undecided",
                f"no input where they differ was found and {leaves} boxes were proved equal within budget = {budget} s",
            )
        lo, hi = stack.pop()
        A1 = _affine(L1, certified_bounds(L1, lo, hi))
        A2 = _affine(L2, certified_bounds(L2, lo, hi))
        if A1 is not None and A2 is not None:
            if A1 == A2:
                leaves += 1
                continue
            Gd = [[p - q for p, q in zip(r1, r2, strict=True)] for r1, r2 in zip(A1[0], A2[0], strict=True)]
            for x in _inner_points(box, lo, hi, Gd):
                y1, y2 = _values(n1, n2, x)
                if y1 != y2:
                    return DeepVerdict(
                        "different",
                        "an exact input inside the box where the outputs differ",
                        None,
                        Counterexample(x, y1, y2),
                    )
        mid = tuple((p + q) / 2 for p, q in zip(lo, hi, strict=True))
        y1, y2 = _values(n1, n2, mid)
        if y1 != y2 and box.contains(mid, strict=True):
            return DeepVerdict(
                "different", "an exact input inside the box where the outputs differ", None, Counterexample(mid, y1, y2)
            )
        stack.extend(_split(lo, hi, box))
    cert = DeepCertificate("box-partition", n1, n2)
    return DeepVerdict(
        "equal", f"on each of {leaves} sub-boxes covering the box both networks are the same affine map", cert
    )


def _box_upper(L1: ExactLayers, L2: ExactLayers, lo: Point, hi: Point) -> tuple[Fraction, Point | None]:
    """A sound upper bound of max |Δ| over the box, exact (with the attaining vertex) when both are affine."""
    t1 = certified_bounds(L1, lo, hi, L1.hidden)
    t2 = certified_bounds(L2, lo, hi, L2.hidden)
    A1, A2 = _affine(L1, t1), _affine(L2, t2)
    if A1 is not None and A2 is not None:
        best, arg = Fraction(-1), None
        for (g1, c1), (g2, c2) in zip(zip(*A1, strict=True), zip(*A2, strict=True), strict=True):
            g = [p - q for p, q in zip(g1, g2, strict=True)]
            c = c1 - c2
            for sgn in (1, -1):
                x = tuple(h if sgn * gj > 0 else lq for gj, lq, h in zip(g, lo, hi, strict=True))
                v = sgn * (sum((gj * xj for gj, xj in zip(g, x, strict=True)), Fraction(0)) + c)
                if v > best:
                    best, arg = v, x
        return best, arg
    u = max(
        max(u1 - l2, u2 - l1)
        for l1, u1, l2, u2 in zip(t1.raw_lower[-1], t1.raw_upper[-1], t2.raw_lower[-1], t2.raw_upper[-1], strict=True)
    )
    return max(u, Fraction(0)), None


def distance_on_deep(
    a: Any, b: Any, domain: Any, *, norm: str = "max", budget: float = 5.0, seed: int = 0, max_regions: int = 4000
) -> DomainDistance:
    """max over the box of ‖ρ(a)(x) − ρ(b)(x)‖_∞: ``lower`` attained at ``point`` (exact), ``upper`` sound,
    ``kind`` "exact" when they meet (else "bounds")."""
    if norm not in ("max", "inf", "linf"):
        raise InvalidNetworkError(f"norm must be 'max' (the sup over the box of the max over outputs), got {norm!r}")
    deadline = time.monotonic() + check_budget(budget)
    n1, n2, box = _pair(a, b, domain)
    best_x = box.interior_point()
    best = _gap(*_values(n1, n2, best_x))
    for x in _samples(box, 32, seed):
        v = _gap(*_values(n1, n2, x))
        if v > best:
            best, best_x = v, x
    L1, L2 = ExactLayers.of(n1), ExactLayers.of(n2)
    heap: list[tuple[float, int, Fraction, bool, Point, Point]] = []
    count = 0

    def push(lo: Point, hi: Point) -> None:
        nonlocal best, best_x, count
        u, arg = _box_upper(L1, L2, lo, hi)
        exact = arg is not None
        if arg is not None:
            v = _gap(*_values(n1, n2, arg))
            if v > best:
                best, best_x = v, arg
        count += 1
        heapq.heappush(heap, (-float(u), count, u, exact, lo, hi))

    push(box.lo, box.hi)
    while heap and time.monotonic() < deadline and count < max_regions:
        _, _, ub, exact, lo, hi = heap[0]
        if ub <= best or exact:
            break
        heapq.heappop(heap)
        for nlo, nhi in _split(lo, hi, box):
            push(nlo, nhi)
    upper = max(max((item[2] for item in heap), default=best), best)
    return DomainDistance(best, best_x, upper, "exact" if upper == best else "bounds", box, None, count)


@dataclass(frozen=True)
class WithinVerdict:
    """Is |ρ(a) − ρ(b)| ≤ ε at every input of the box?  ``answer`` is "yes" (``upper`` ≤ ε proved), "no"
    (``point`` is an exact input with gap ``lower`` > ε) or "undecided" (lower ≤ ε < upper)."""

    answer: str
    eps: Fraction
    lower: Fraction
    upper: Fraction
    point: Point

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "eps": fraction_str(self.eps),
            "lower": fraction_str(self.lower),
            "upper": fraction_str(self.upper),
            "point": [fraction_str(v) for v in self.point],
        }


def within_on_deep(a: Any, b: Any, domain: Any, atol: Any, *, budget: float = 5.0, seed: int = 0) -> WithinVerdict:
    """The verifiers' question: is max over the box of ‖ρ(a) − ρ(b)‖_∞ ≤ ``atol``?"""
    eps = to_fraction(atol, "atol")
    if eps < 0:
        raise InvalidNetworkError(f"atol must be non-negative, got {atol!r}")
    d = distance_on_deep(a, b, domain, budget=budget, seed=seed)
    answer = "yes" if d.upper <= eps else ("no" if d.lower > eps else "undecided")
    return WithinVerdict(answer, eps, d.lower, d.upper, d.point)
