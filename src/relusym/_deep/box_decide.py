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
upper bound max_i max(u1_i − l2_i, u2_i − l1_i).  For two networks of the same widths, first (half the time):
symbolic difference intervals (ReluDiff's), a float-proposed partition whose every box is bounded exactly
(:func:`symbolic_upper`); the smaller of the two upper bounds is returned.
"""

from __future__ import annotations

import heapq
import random as _random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._bounded.distance import DomainDistance
from relusym._bounded.domain import Box, as_domain
from relusym._core.equivalence import Counterexample
from relusym._deep.bounds import BoundTable, ExactLayers, certified_bounds, interval_bounds
from relusym._deep.decide import DeepCertificate, DeepVerdict, equivalent_deep
from relusym._deep.mlp import MLP, as_mlp
from relusym._deep.reduce import rows_to_mlp
from relusym._deep.rows import rational_rows
from relusym._deep.witness import FloatNet, exact_point
from relusym._exact.numbers import fraction_str, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["equivalent_on_deep", "distance_on_deep", "within_on_deep", "WithinVerdict"]

Point = tuple[Fraction, ...]
Affine = tuple[list[list[Fraction]], list[Fraction]]


SYMBOLIC_SHARE = 0.85  # of the distance's time left, for the symbolic difference bounds (the rest: box intervals)


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


def without_box_dead(net: MLP, box: Box) -> tuple[MLP, tuple[tuple[int, int], ...]]:
    """``net`` with the hidden units that exact interval arithmetic proves dead on the box removed (their
    pre-activation is ≤ 0 there, so they output 0 and the function is unchanged on the box), and the removed
    (layer, unit) pairs (1-based layers, original unit indices)."""
    layers = ExactLayers.of(net)
    t = certified_bounds(layers, box.lo, box.hi, relax=False)
    rows = [rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)]
    removed: list[tuple[int, int]] = []
    for ell in range(len(rows) - 1):
        keep = [j for j in range(len(rows[ell])) if t.raw_upper[ell][j] > 0]
        if len(keep) == len(rows[ell]):
            continue
        removed += [(ell + 1, j) for j in range(len(rows[ell])) if t.raw_upper[ell][j] <= 0]
        if not keep:  # a layer dead on the whole box: one zero unit keeps the shape (it outputs 0 there too)
            keep = [0]
            rows[ell] = [[Fraction(0)] * len(rows[ell][0])]
        else:
            rows[ell] = [rows[ell][j] for j in keep]
        rows[ell + 1] = [[r[j] for j in keep] + [r[-1]] for r in rows[ell + 1]]
    return (rows_to_mlp(rows, net.m) if removed else net), tuple(removed)


def _by_symmetry(n1: MLP, n2: MLP, box: Box, budget: float) -> DeepVerdict | None:
    """ "equal" when the networks, with the units dead on the box removed, are equal on all of ℝ^m by the
    per-layer group (:func:`relusym._deep.decide.equivalent_deep`'s certificate); None otherwise."""
    r1, d1 = without_box_dead(n1, box)
    r2, d2 = without_box_dead(n2, box)
    v = equivalent_deep(r1, r2, budget=min(budget, 0.5))
    if v.status != "equal" or v.certificate is None or v.certificate.method == "line":
        return None
    why = (
        f"with the units proved dead on the box by exact interval arithmetic removed ({len(d1)} and {len(d2)}: "
        f"{list(d1)} and {list(d2)}), {v.reason} on all of ℝ^m"
    )
    return DeepVerdict("equal", why, v.certificate)


def _float_argmax(L1: ExactLayers, L2: ExactLayers, box: Box, count: int, seed: int, top: int) -> list[Point]:
    """Grid points of the box with the largest float gap among ``count`` uniform ones (to evaluate exactly)."""
    net1, net2 = FloatNet(L1, box.lo, box.hi), FloatNet(L2, box.lo, box.hi)
    U = net1.samples(count, seed)
    g = np.max(np.abs(net1.preactivations(U)[-1] - net2.preactivations(U)[-1]), axis=1)
    return [exact_point(box.lo, box.hi, U[i]) for i in np.argsort(-g)[:top]]


def _samples(box: Box, count: int, seed: int) -> list[Point]:
    rng = _random.Random(seed)
    pts = [box.interior_point()]
    pts += [box.random_interior(rng, 1 << 16) for _ in range(count)]
    return pts


def equivalent_on_deep(a: Any, b: Any, domain: Any, *, budget: float = 5.0, seed: int = 0) -> DeepVerdict:
    """Decide ρ(a) = ρ(b) on a box: "equal" (every leaf of a partition of the box proved, exactly),
    "different" (an exact input strictly inside the box where the outputs differ) or "undecided".

    First: with the units dead on the box (exact interval arithmetic) removed from both, equality on ℝ^m by the
    per-layer group (a permutation, positive scales and flips, checked exactly) proves "equal" on the box."""
    deadline = Deadline(budget)
    n1, n2, box = _pair(a, b, domain)
    quick = _by_symmetry(n1, n2, box, budget)
    if quick is not None:
        return quick
    L1, L2 = ExactLayers.of(n1), ExactLayers.of(n2)
    screened = [x for x in _float_argmax(L1, L2, box, 4096, seed, 8) if box.contains(x, strict=True)]
    for x in screened + _samples(box, 64, seed):
        y1, y2 = _values(n1, n2, x)
        if y1 != y2:
            return DeepVerdict(
                "different", "an exact input inside the box where the outputs differ", None, Counterexample(x, y1, y2)
            )
    stack = [(box.lo, box.hi)]
    leaves = 0
    while stack:
        if deadline.expired():
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


def _box_upper(
    L1: ExactLayers, L2: ExactLayers, lo: Point, hi: Point, diff: _Diff | None = None
) -> tuple[Fraction, Point | None]:
    """A sound upper bound of max |Δ| over the box, exact (with the attaining vertex) when both are affine;
    with ``diff`` (same widths) also the difference intervals' bound."""
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
    if diff is not None:
        u = min(u, diff.bound(t1, t2, lo, hi))
    return max(u, Fraction(0)), None


class _Diff:
    """Exact bounds of the difference δ_k = z1_k − z2_k of two networks of the same widths on a box (interval
    arithmetic on the difference, as ReluDiff does in floats): δ_0 = (W1_0 − W2_0)x + (b1_0 − b2_0) and
    δ_k = W1_k (h1 − h2) + (W1_k − W2_k) h2 + (b1_k − b2_k), with σ(z1) − σ(z2) between 0 and δ (σ is monotone
    and 1-Lipschitz) and inside [σ(l1) − σ(u2), σ(u1) − σ(l2)]."""

    def __init__(self, L1: ExactLayers, L2: ExactLayers) -> None:
        zero = Fraction(0)
        self.A = ExactLayers([[list(r[:-1]) + [zero] for r in lay] for lay in L1.rows], L1.m)
        self.D = ExactLayers(
            [
                [[p - q for p, q in zip(r1, r2, strict=True)] for r1, r2 in zip(l1, l2, strict=True)]
                for l1, l2 in zip(L1.rows, L2.rows, strict=True)
            ],
            L1.m,
        )

    @staticmethod
    def same_shape(L1: ExactLayers, L2: ExactLayers) -> bool:
        return L1.widths == L2.widths

    def bound(self, t1: BoundTable, t2: BoundTable, lo: Point, hi: Point) -> Fraction:
        """An exact upper bound of max_i |Δ_i| over the box (t1, t2: the networks' bound tables there)."""
        zero = Fraction(0)
        dl, du = interval_bounds(self.D, 0, lo, hi)
        for k in range(1, len(self.D.rows)):
            l1, u1 = t1.raw_lower[k - 1], t1.raw_upper[k - 1]
            l2, u2 = t2.raw_lower[k - 1], t2.raw_upper[k - 1]
            hl, hu = [], []
            for a, c, p, q, r, s in zip(dl, du, l1, u1, l2, u2, strict=True):
                lo_h = max(min(zero, a), max(p, zero) - max(s, zero))
                hi_h = min(max(zero, c), max(q, zero) - max(r, zero))
                if r >= 0 and p >= 0:
                    lo_h, hi_h = max(lo_h, a), min(hi_h, c)
                hl.append(lo_h)
                hu.append(max(hi_h, lo_h))
            al, au = interval_bounds(self.A, k, hl, hu)
            bl, bu = interval_bounds(self.D, k, [max(v, zero) for v in l2], [max(v, zero) for v in u2])
            dl = [x + y for x, y in zip(al, bl, strict=True)]
            du = [x + y for x, y in zip(au, bu, strict=True)]
        return max(max(-a, c) for a, c in zip(dl, du, strict=True))


def symbolic_upper(
    L1: ExactLayers,
    L2: ExactLayers,
    box: Box,
    lower: Fraction,
    deadline: Deadline,
    target: Fraction | None = None,
    crown: bool = False,
) -> tuple[Fraction, int]:
    """An exact upper bound of max_i |Δ_i| on the box by symbolic difference intervals (two networks of the same
    widths), refined while time lasts: each round, the boxes whose exact bound is above the goal (``target``, or
    else the lower bound) are partitioned further in floats (:func:`relusym._deep.box_diff.refine_partition`,
    best-first, aiming at the goal) and every new box is bounded exactly (:mod:`relusym._deep.box_diff_exact`);
    a box is replaced by its pieces once all of them are proved, each piece keeping the smaller of its own bound
    and its parent's (both hold on it), so no proved box is ever proved again and a round cut short by the
    deadline loses only its unfinished box.  The rounds grow with the time left (from 64 new boxes, at least
    doubling).  Returns the best bound and the number of boxes of the partition that gave it.  With ``crown``,
    each box's bounds of z1 and z2 are cut by CROWN's back-substitution: in floats when proposing, and, for the
    boxes whose exact bound misses the goal, by the networks' exact bound tables (slower a box, fewer boxes)."""
    import time

    from relusym._deep.box_diff import FloatPair, refine_partition
    from relusym._deep.box_diff_exact import ExactPair, exact_diff_bounds, exact_partition_values, refine_worst

    EP = ExactPair(L1, L2)
    root = exact_diff_bounds(EP, [(box.lo, box.hi)])[0]
    goal = lower if target is None else max(lower, target)
    if root <= goal or deadline.expired() or (target is not None and lower > target):
        return root, 1
    nets = (FloatNet(L1, box.lo, box.hi), FloatNet(L2, box.lo, box.hi)) if crown else None
    P = FloatPair(L1.Wf, L1.bf, L2.Wf, L2.bf, nets)
    lo = np.array([float(v) for v in box.lo])
    hi = np.array([float(v) for v in box.hi])
    ulo, uhi, vals = np.zeros((1, len(lo))), np.ones((1, len(lo))), [root]
    cap = 64
    while not deadline.expired():
        t0 = time.monotonic()  # the budget's clock (the deadline is wall time)
        # the boxes above the goal, worst first: their pieces are proved in this order, so a round cut short by
        # the deadline has improved the worst boxes
        bad = np.array(sorted((i for i, v in enumerate(vals) if v > goal), key=lambda i: -vals[i]), dtype=np.int64)
        if len(bad) == 0:
            break
        nlo, nhi, par = refine_partition(
            P,
            lo,
            hi,
            ulo[bad],
            uhi[bad],
            float(goal) * (1 - 2.0**-20),
            len(bad) + cap,
            Deadline(deadline.left() / 3).expired,
        )
        if len(nlo) == len(bad):  # nothing left to split below the goal in floats
            break
        nvals = exact_partition_values(EP, box.lo, box.hi, nlo, nhi, deadline.expired)
        done = len(nvals)
        if crown:
            nvals = refine_worst(EP, box.lo, box.hi, nlo[:done], nhi[:done], nvals, goal, deadline.expired)
        whole = done if done == len(nlo) else int(np.searchsorted(par, par[done], side="left"))
        if whole == 0:
            break
        replaced = {int(bad[p]) for p in set(par[:whole].tolist())}  # boxes all of whose pieces are proved
        keep = np.array([i for i in range(len(vals)) if i not in replaced], dtype=np.int64)
        pieces = [min(v, vals[int(bad[p])]) for v, p in zip(nvals[:whole], par[:whole].tolist(), strict=True)]
        ulo = np.concatenate([ulo[keep], nlo[:whole]])
        uhi = np.concatenate([uhi[keep], nhi[:whole]])
        vals = [vals[int(i)] for i in keep] + pieces
        per_box = max(time.monotonic() - t0, 1e-3) / done
        cap = max(2 * cap, int(0.6 * deadline.left() / per_box))  # the next round: about what the time left allows
    return max(vals), len(vals)


def _lower(n1: MLP, n2: MLP, L1: ExactLayers, L2: ExactLayers, box: Box, seed: int) -> tuple[Fraction, Point]:
    """The largest exact gap among the samples, the float-screened grid points and the gradient maximisers."""
    from relusym._deep.box_gap import gap_maximisers

    best_x = box.interior_point()
    best = _gap(*_values(n1, n2, best_x))
    cands = _samples(box, 32, seed) + _float_argmax(L1, L2, box, 4096, seed, 8)
    for x in cands + gap_maximisers(L1, L2, box.lo, box.hi, seed=seed):
        v = _gap(*_values(n1, n2, x))
        if v > best:
            best, best_x = v, x
    return best, best_x


def distance_on_deep(
    a: Any,
    b: Any,
    domain: Any,
    *,
    norm: str = "max",
    budget: float = 5.0,
    seed: int = 0,
    max_regions: int = 4000,
    target: Fraction | None = None,
) -> DomainDistance:
    """max over the box of ‖ρ(a)(x) − ρ(b)(x)‖_∞: ``lower`` attained at ``point`` (exact), ``upper`` sound,
    ``kind`` "exact" when they meet (else "bounds").  The lower bound's candidates: samples, the float-screened
    grid points and the float gradient maximisers of :mod:`relusym._deep.box_gap`, each evaluated exactly.  The
    upper bound, for networks of the same widths: symbolic difference intervals (:func:`symbolic_upper`), then the
    boxes' interval bounds and exact affine pieces in the time left.  With ``target`` (the ε-question) the search
    stops once the upper bound is ≤ ``target`` or the lower bound exceeds it."""
    if norm not in ("max", "inf", "linf"):
        raise InvalidNetworkError(f"norm must be 'max' (the sup over the box of the max over outputs), got {norm!r}")
    deadline = Deadline(budget)
    n1, n2, box = _pair(a, b, domain)
    L1, L2 = ExactLayers.of(n1), ExactLayers.of(n2)
    best, best_x = _lower(n1, n2, L1, L2, box, seed)
    diff = _Diff(L1, L2) if _Diff.same_shape(L1, L2) else None
    sym_upper, sym_boxes = None, 0
    if diff is not None:
        sym_upper, sym_boxes = symbolic_upper(L1, L2, box, best, Deadline(deadline.left() * SYMBOLIC_SHARE), target)
        if sym_upper <= best:
            return DomainDistance(best, best_x, best, "exact", box, None, sym_boxes)
        if target is not None and (sym_upper <= target or best > target):
            return DomainDistance(best, best_x, sym_upper, "bounds", box, None, sym_boxes)
    heap: list[tuple[float, int, Fraction, bool, Point, Point]] = []
    count = 0

    def push(lo: Point, hi: Point) -> None:
        nonlocal best, best_x, count
        u, arg = _box_upper(L1, L2, lo, hi, diff)
        exact = arg is not None
        if arg is not None:
            v = _gap(*_values(n1, n2, arg))
            if v > best:
                best, best_x = v, arg
        count += 1
        heapq.heappush(heap, (-float(u), count, u, exact, lo, hi))

    push(box.lo, box.hi)
    while heap and not deadline.expired() and count < max_regions:
        _, _, ub, exact, lo, hi = heap[0]
        if ub <= best or exact or (target is not None and (ub <= target or best > target)):
            break
        heapq.heappop(heap)
        for nlo, nhi in _split(lo, hi, box):
            push(nlo, nhi)
    upper = max(max((item[2] for item in heap), default=best), best)
    if sym_upper is not None:
        upper = max(min(upper, sym_upper), best)
    return DomainDistance(best, best_x, upper, "exact" if upper == best else "bounds", box, None, count + sym_boxes)


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
    d = distance_on_deep(a, b, domain, budget=budget, seed=seed, target=eps)
    answer = "yes" if d.upper <= eps else ("no" if d.lower > eps else "undecided")
    return WithinVerdict(answer, eps, d.lower, d.upper, d.point)
