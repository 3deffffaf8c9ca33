"""Equivalence of deep ReLU networks on ℝ^m: three verdicts, never wrong (docs/math/deep.md).

The decision, in order:

1. **reduce** both networks (:mod:`relusym._deep.reduce`: every rule keeps the function);
2. **align** the reductions layer by layer (:func:`relusym._deep.symmetry.align_layers`): a per-layer
   permutation, positive scales and valid flips mapping one onto the other, checked exactly, proves "equal";
3. **search** for an input where they differ, exactly: next to every first-layer hyperplane that one network
   has and the other lacks, where the first unit without a partner fires, far out along random rays, and along
   random lines through these points, each line decided completely by its breakpoints;
4. for **m = 1** the breakpoints decide on all of ℝ (complete); otherwise the answer is "undecided", with the
   reason (deciding equality of deep ReLU networks is coNP-hard).

"equal" carries a certificate a test can apply; "different" an exact rational input where the exact outputs
differ.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._core.equivalence import Counterexample
from relusym._deep.canonical import DeepNormalForm, canonicalize
from relusym._deep.line import LineBudget, compare_on_line, restrict_to_line
from relusym._deep.mlp import MLP, as_mlp
from relusym._deep.reduce import Reduced, Reduction, reduce_layers, rows_to_mlp
from relusym._deep.rows import Row, primitive, rational_rows, unsigned
from relusym._deep.symmetry import DeepSymmetry, Mismatch, align_layers, apply_moves
from relusym._exact.numbers import as_float64
from relusym.errors import InvalidNetworkError, RelusymError

__all__ = ["DeepVerdict", "DeepCertificate", "equivalent_deep", "UndecidedError"]

EQUAL, DIFFERENT, UNDECIDED = "equal", "different", "undecided"


class UndecidedError(RelusymError, ValueError):
    """``bool()`` of an undecided verdict: the question was not settled within the budget."""


@dataclass(frozen=True)
class DeepCertificate:
    """Why two networks are equal.

    ``method`` is ``"symmetry"`` (``symmetry`` maps the reduction of θ1 onto that of θ2 exactly, its flips
    valid), ``"line"`` (m = 1: the two functions agree at every breakpoint of either and beyond both ends, the
    points listed in ``points``) or ``"constant"`` (both reductions are the same constant map).  ``reduced1`` and
    ``reduced2`` are the reduced networks and ``steps1``/``steps2`` the reductions that produced them."""

    method: str
    reduced1: MLP
    reduced2: MLP
    steps1: tuple[Reduction, ...] = ()
    steps2: tuple[Reduction, ...] = ()
    symmetry: DeepSymmetry | None = None
    points: tuple[Fraction, ...] = ()
    box_statuses: tuple[Any, ...] = ()

    def with_box_statuses(self, statuses: tuple[Any, ...]) -> DeepCertificate:
        """The same certificate for the two networks pruned on a box: ``statuses`` (one
        :class:`relusym._deep.status.UnitStatus` per network, in order; None or missing for a network used as it
        is) prove the removed units dead or active there."""
        return replace(self, box_statuses=statuses)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "method": self.method,
            "reduced_widths": [list(self.reduced1.widths), list(self.reduced2.widths)],
            "reductions": [[s.to_dict() for s in self.steps1], [s.to_dict() for s in self.steps2]],
        }
        if self.box_statuses:
            d["box_statuses"] = [None if st is None else st.counts() for st in self.box_statuses]
        if self.symmetry is not None:
            d["symmetry"] = self.symmetry.to_dict()
        if self.points:
            d["points"] = [str(p) for p in self.points]
        return d


@dataclass(frozen=True)
class DeepVerdict:
    """The answer of :func:`relusym.equivalent` for deep networks: ``status`` is ``"equal"``, ``"different"`` or
    ``"undecided"``.

    ``bool(v)`` is True for "equal", False for "different", and raises :class:`UndecidedError` for
    "undecided" (an ``if equivalent(a, b):`` never reads "undecided" as "no").  ``certificate`` (equal) and
    ``counterexample`` (different) are exact; ``normal_forms`` are the two deep normal forms; ``reason`` is one
    sentence."""

    status: str
    reason: str
    certificate: DeepCertificate | None = None
    counterexample: Counterexample | None = None
    normal_forms: tuple[DeepNormalForm, DeepNormalForm] | None = None

    def __bool__(self) -> bool:
        if self.status == UNDECIDED:
            raise UndecidedError(f"undecided: {self.reason}; read .status instead of bool()")
        return self.status == EQUAL

    @property
    def equivalent(self) -> bool | None:
        """True, False, or None when undecided."""
        return None if self.status == UNDECIDED else self.status == EQUAL

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema": "relusym.deep-verdict/1",
            "status": self.status,
            "equivalent": self.equivalent,
            "reason": self.reason,
        }
        if self.certificate is not None:
            d["certificate"] = self.certificate.to_dict()
        if self.counterexample is not None:
            d["counterexample"] = self.counterexample.to_dict()
        if self.normal_forms is not None:
            d["digests"] = [f.digest() for f in self.normal_forms]
        return d

    def __str__(self) -> str:
        return f"{self.status}: {self.reason}"


def _layers(net: MLP) -> list[list[Row]]:
    return [rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)]


def equivalent_deep(net1: Any, net2: Any, *, budget: float = 5.0, seed: int = 0) -> DeepVerdict:
    """Decide ρ(θ1) = ρ(θ2) on ℝ^m for two MLPs (either may be a ``Network`` or have any depth).

    ``budget`` bounds the search for a counterexample and the line decisions, in seconds."""
    a, b = as_mlp(net1), as_mlp(net2)
    if (a.m, a.k) != (b.m, b.k):
        raise InvalidNetworkError(
            f"the networks have different shapes: m = {a.m}, k = {a.k} against m = {b.m}, k = {b.k}"
        )
    deadline = Deadline(budget)
    ra, rb = reduce_layers(_layers(a), a.m), reduce_layers(_layers(b), b.m)
    ca, cb = canonicalize(ra), canonicalize(rb)
    forms = (ca.form, cb.form)
    red_a, red_b = rows_to_mlp(ra.layers, a.m), rows_to_mlp(rb.layers, b.m)

    def cert(method: str, **kw: Any) -> DeepCertificate:
        return DeepCertificate(method, red_a, red_b, ra.steps, rb.steps, **kw)

    if _is_constant(ra) and _is_constant(rb) and ra.layers[-1] == rb.layers[-1]:
        return DeepVerdict(EQUAL, "both networks reduce to the same constant map", cert("constant"), None, forms)
    mismatch: Mismatch | None = None
    if len(ra.layers) == len(rb.layers):
        aligned, mismatch = _align(ra, rb)
        if aligned is not None:
            x, y, sym, extra = aligned
            why = "the reductions are one image of the other under the per-layer group"
            if sym.has_flips:
                why += ", with hidden flips"
            c = DeepCertificate(
                "symmetry", rows_to_mlp(x, a.m), rows_to_mlp(y, b.m), ra.steps + extra[0], rb.steps + extra[1], sym
            )
            return DeepVerdict(EQUAL, why, c, None, forms)
    found = _search(a, b, ra, rb, mismatch, deadline, seed)
    if found is not None:
        return DeepVerdict(DIFFERENT, "an exact input where the outputs differ", None, found, forms)
    if a.m == 1:
        try:
            t, pts = compare_on_line(_layers(a), _layers(b), deadline=deadline)
        except LineBudget:
            return DeepVerdict(
                UNDECIDED, f"the breakpoints on ℝ were not all found within budget = {budget} s", None, None, forms
            )
        if t is not None:
            return DeepVerdict(DIFFERENT, "an exact input where the outputs differ", None, _ce(a, b, (t,)), forms)
        return DeepVerdict(
            EQUAL,
            "m = 1: the functions agree at every breakpoint of either and beyond both ends",
            cert("line", points=pts),
            None,
            forms,
        )
    why = (
        mismatch.why
        if mismatch is not None
        else f"the reduced depths differ ({len(ra.layers) - 1} against {len(rb.layers) - 1})"
    )
    return DeepVerdict(
        UNDECIDED,
        f"no per-layer symmetry maps one reduction onto the other ({why}) and no input where they differ was found "
        f"within budget = {budget} s",
        None,
        None,
        forms,
    )


_Aligned = tuple[list[list[Row]], list[list[Row]], DeepSymmetry, tuple[tuple[Reduction, ...], ...]]


def _align(ra: Reduced, rb: Reduced) -> tuple[_Aligned | None, Mismatch | None]:
    """Align the reductions; when the alignment stops after valid flips of earlier layers, apply those moves to
    one side, reduce it again (a flip can make a unit of the next layer dead on the orthant) and retry, in both
    directions.  Returns (rows of side 1, rows of side 2, h with h·side1 = side2, the extra reductions)."""
    first: Mismatch | None = None
    for swap in (False, True):
        x, y = (rb, ra) if swap else (ra, rb)
        rows = x.layers
        extra: tuple[Reduction, ...] = ()
        for _ in range(len(rows)):
            sym, mm = align_layers(rows, y.layers)
            if sym is not None:
                if swap:
                    return (y.layers, rows, sym.inverse(), ((), extra)), first
                return (rows, y.layers, sym, (extra, ())), first
            assert mm is not None
            first = first or mm
            if not any(mv.flips for mv in mm.moves):
                break
            red = reduce_layers(apply_moves(rows, mm.moves), x.m)
            if not red.steps:
                break
            rows, extra = red.layers, extra + red.steps
    return None, first


def _is_constant(red: Reduced) -> bool:
    return all(w == 0 for w in red.hidden_widths)


def _ce(a: MLP, b: MLP, x: tuple[Fraction, ...]) -> Counterexample | None:
    y1, y2 = a.evaluate_exact(x), b.evaluate_exact(x)
    return Counterexample(x, y1, y2) if y1 != y2 else None


# ----------------------------------------------------------------------------------------------------------
# the search for an input where two networks differ


def _search(
    a: MLP, b: MLP, ra: Reduced, rb: Reduced, mismatch: Mismatch | None, deadline: Deadline, seed: int
) -> Counterexample | None:
    rng = random.Random(seed)
    m = a.m

    def simple() -> list[tuple[Fraction, ...]]:
        out = [tuple(Fraction(rng.randint(-8, 8), rng.choice((1, 2, 3, 4))) for _ in range(m)) for _ in range(4)]
        return out + [tuple(Fraction(rng.randint(-100, 100) * s) for _ in range(m)) for s in (1 << 10, 1 << 30)]

    def firing() -> list[tuple[Fraction, ...]]:
        if mismatch is not None and mismatch.unit is not None and mismatch.layer >= 2:
            return _firing_points(a, ra, mismatch, rng)
        return []

    # in stages, each built only when the ones before found nothing (the cheap and likely ones first)
    stages: tuple[Callable[[], list[tuple[Fraction, ...]]], ...] = (
        lambda: [tuple(Fraction(0) for _ in range(m))],
        lambda: _screened_points(a, b, rng.randrange(1 << 30)),
        lambda: _lone_hyperplane_points(ra, rb, rng) + _lone_hyperplane_points(rb, ra, rng),
        firing,
        simple,
    )
    seen: set[tuple[Fraction, ...]] = set()
    for stage in stages:
        if deadline.expired():
            return None
        for x in stage():
            if x in seen:
                continue
            seen.add(x)
            if deadline.expired():
                return None
            ce = _ce(a, b, x)
            if ce is not None:
                return ce
    # lines through the candidate points, each decided exactly by its breakpoints
    la, lb = _layers(a), _layers(b)
    anchors = list(seen)
    for i in range(2 * m + 6):
        x0 = anchors[i % len(anchors)]
        d = tuple(Fraction(rng.randint(-7, 7)) for _ in range(m))
        if not any(d):
            continue
        try:
            t, _ = compare_on_line(restrict_to_line(la, x0, d), restrict_to_line(lb, x0, d), deadline=deadline)
        except LineBudget:
            return None
        if t is not None:
            ce = _ce(a, b, tuple(xi + t * di for xi, di in zip(x0, d, strict=True)))
            if ce is not None:
                return ce
    return None


def _screened_points(a: MLP, b: MLP, seed: int, top: int = 12) -> list[tuple[Fraction, ...]]:
    """Float candidates ranked by how much the two networks differ there in float64, read exactly: random points
    at three scales, points just off every first-layer hyperplane of either network (where a unit starts to
    fire: a kink far from the origin shows there), and far points along random rays.  The float values only
    choose where to look; the exact evaluation decides."""
    nrng = np.random.default_rng(seed)
    m = a.m
    cands = [nrng.standard_normal((32, m)) * s for s in (1.0, 8.0, 64.0)]
    for net in (a, b):
        W = as_float64(net.weights[0])
        beta = as_float64(net.biases[0])
        nn = (W * W).sum(axis=1)
        keep = nn > 0
        W, beta, nn = W[keep], beta[keep], nn[keep]
        if not len(W):
            continue
        base = -(beta / nn)[:, None] * W
        unit = W / np.sqrt(nn)[:, None]
        delta = 1e-3 * (1.0 + np.abs(base).max(axis=1))[:, None]
        cands += [base + delta * unit, base - delta * unit]
    for net in (a, b):
        region = _hyperplane_region(net, nrng, 512)
        if region is not None:
            cands.append(region)
    dirs = nrng.standard_normal((16, m))
    cands += [dirs * 1e3, dirs * 1e6]
    X = np.vstack(cands)
    X = X[np.isfinite(X).all(axis=1)]
    with np.errstate(all="ignore"):
        diff = np.abs(a.evaluate(X) - b.evaluate(X)).max(axis=1)
    diff = np.where(np.isnan(diff), np.inf, diff)
    order = np.argsort(-diff, kind="stable")[:top]
    return [tuple(Fraction(float(v)) for v in X[i]) for i in order.tolist()]


def _hyperplane_region(net: MLP, nrng: np.random.Generator, count: int) -> np.ndarray | None:
    """``count`` uniform points of the bounding box of the points of the first layer's hyperplanes nearest the
    origin, enlarged by half: the region a trained network's inputs live in, whatever the inputs' units."""
    W, beta = as_float64(net.weights[0]), as_float64(net.biases[0])
    nn = (W * W).sum(axis=1)
    keep = nn > 0
    if not keep.any():
        return None
    base = -(beta[keep] / nn[keep])[:, None] * W[keep]
    base = base[np.isfinite(base).all(axis=1)]
    if not len(base):
        return None
    lo, hi = base.min(axis=0), base.max(axis=0)
    mid, half = (lo + hi) / 2, (hi - lo) * 0.75 + 1e-9
    out: np.ndarray = mid + half * nrng.uniform(-1.0, 1.0, (count, net.m))
    return out


def _lone_hyperplane_points(ra: Reduced, rb: Reduced, rng: random.Random) -> list[tuple[Fraction, ...]]:
    """Points just off each first-layer hyperplane of ``ra`` that ``rb``'s first layer lacks (up to sign)."""
    if len(ra.layers) < 2 or not len(ra.layers[0]):
        return []
    lone = _lone_rows(ra, rb)
    out: list[tuple[Fraction, ...]] = []
    for i in lone[:34]:
        row = list(ra.layers[0][i])
        w, beta = row[:-1], row[-1]
        nn = sum((v * v for v in w), Fraction(0))
        base = [-beta * v / nn for v in w]
        offsets = [base]
        for _ in range(2):
            v = [Fraction(rng.randint(-5, 5)) for _ in w]
            proj = sum((vi * wi for vi, wi in zip(v, w, strict=True)), Fraction(0)) / nn
            offsets.append([bi + vi - proj * wi for bi, vi, wi in zip(base, v, w, strict=True)])
        for p0 in offsets:
            for eps in (Fraction(1, 1 << 4), Fraction(1, 1 << 20)):
                step = eps / max(Fraction(1), max(abs(v) for v in w))
                out.append(tuple(pi + step * wi for pi, wi in zip(p0, w, strict=True)))
                out.append(tuple(pi - step * wi for pi, wi in zip(p0, w, strict=True)))
    return out


def _lone_rows(ra: Reduced, rb: Reduced) -> list[int]:
    """The first-layer units of ``ra`` whose row, up to a nonzero scale, is no row of ``rb``'s first layer:
    from the exact primitive rows (integer arrays; the Fraction reference when they do not fit)."""
    from relusym._deep.dyadic import Dyadic, row_hashes
    from relusym._deep.rows import dyadic_layers

    if len(rb.layers) < 2:
        return list(range(len(ra.layers[0])))
    da, db = dyadic_layers(ra.layers[:1], ra.m), dyadic_layers(rb.layers[:1], rb.m)
    if da is None or db is None:
        other = {unsigned(primitive(r)[0])[0] for r in rb.layers[0]}
        return [i for i, r in enumerate(ra.layers[0]) if unsigned(primitive(r)[0])[0] not in other]

    def keys(D: Any) -> np.ndarray:
        P = D.primitive().rows
        q = P.q.copy()
        first = np.argmax(q != 0, axis=1)
        sign = np.sign(q[np.arange(len(q)), first])
        q *= np.where(sign == 0, 1, sign)[:, None]  # the sign of the first nonzero entry made positive
        return np.asarray(row_hashes(Dyadic(q, P.k)))

    other_keys = set(keys(db[0]).tolist())
    return [i for i, h in enumerate(keys(da[0]).tolist()) if h not in other_keys]


def _firing_points(a: MLP, ra: Reduced, mm: Mismatch, rng: random.Random) -> list[tuple[Fraction, ...]]:
    """Float-sampled points where the unmatched unit of ``a``'s reduction fires strongest, read exactly."""
    red = rows_to_mlp(ra.layers, ra.m)
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    X = np.vstack([nrng.standard_normal((256, a.m)) * np.array([1.0, 4.0, 16.0, 64.0]).repeat(64)[:, None]])
    region = _hyperplane_region(a, nrng, 1024)
    if region is not None:
        X = np.vstack([X, region])
    H = X
    for ell in range(mm.layer):
        Z = H @ as_float64(red.weights[ell]).T + as_float64(red.biases[ell])
        H = np.maximum(Z, 0.0)
    z = Z[:, mm.unit] if mm.unit is not None and mm.unit < Z.shape[1] else Z.max(axis=1)
    best = np.argsort(-z)[:6]
    return [tuple(Fraction(float(v)) for v in X[i]) for i in best.tolist()]
