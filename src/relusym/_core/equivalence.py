"""Deciding ρ(θ1) = ρ(θ2) exactly, with a certificate either way (docs/math/normal-form.md, docs/math/fibres.md
(O0)/O4, Theorems A and B).

* equivalent: the witness h ∈ H_n with h·θ1 = θ2 when θ2 is in the orbit; else the flip set T and h with
  θ2 = h·flip_T(θ1) when θ2 is in the orbit of a flip (Proposition 14); else the shared normal form.
* not equivalent: an exact rational point x with ρ(θ1)(x) ≠ ρ(θ2)(x), verified by exact evaluation.  It is
  placed next to a hyperplane where the kinks differ, away from all other hyperplanes, or found from the
  affine part when the kinks agree.
"""

from __future__ import annotations

import math
import random as _random
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.document import check_schema, tagged
from relusym._core.classes import HyperplaneClasses, hyperplane_classes
from relusym._core.group import Symmetry, find_symmetry, search_symmetry
from relusym._core.network import Network, NeuronType, check_pair
from relusym._core.normal_form import Difference, NormalForm, compare, float_key_scalar
from relusym._core.operations import flip
from relusym._exact.hashing import float_key
from relusym._exact.mantissas import exact_matmul_float
from relusym._exact.numbers import fraction_str, is_float_array, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["Verdict", "Counterexample", "equivalent", "counterexample", "sparse_evaluate"]

SCHEMA = "relusym.verdict/1"  #: the document key of :meth:`Verdict.to_dict`


@dataclass(frozen=True)
class Counterexample:
    """An exact input x with ρ(θ1)(x) ≠ ρ(θ2)(x), and the two exact outputs."""

    x: tuple[Fraction, ...]
    y1: tuple[Fraction, ...]
    y2: tuple[Fraction, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "x": [fraction_str(v) for v in self.x],
            "y1": [fraction_str(v) for v in self.y1],
            "y2": [fraction_str(v) for v in self.y2],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Counterexample:
        """The inverse of :meth:`to_dict` (exact: every entry is read as a rational)."""
        return cls(*(tuple(to_fraction(v, key) for v in d[key]) for key in ("x", "y1", "y2")))


@dataclass(frozen=True)
class Verdict:
    """The answer of :func:`equivalent`: truthy iff ρ(θ1) = ρ(θ2) on all of ℝ^m, with its certificate.

    ``witness``: h ∈ H_n with h·θ1 = θ2 (``flip_set`` empty), or with h·flip_T(θ1) = θ2 (``flip_set`` = T);
    ``flip_set``: the flip set T (0-based neurons of θ1), or None (``flips`` is its earlier name);
    ``counterexample``: a verified :class:`Counterexample` when not equivalent; ``normal_form``: NF(θ1) (equal
    to NF(θ2) when equivalent); ``reason``: one sentence.
    """

    equivalent: bool
    reason: str
    witness: Symmetry | None = None
    flip_set: tuple[int, ...] | None = None
    counterexample: Counterexample | None = None
    _classes: HyperplaneClasses | Network | None = field(default=None, repr=False, compare=False)

    def __bool__(self) -> bool:
        return self.equivalent

    @property
    def normal_form(self) -> NormalForm | None:
        """NF(θ1) (equal to NF(θ2) when equivalent), computed on first use."""
        src = self._classes
        if src is None:
            return None
        if isinstance(src, Network):
            src = hyperplane_classes(src)
            object.__setattr__(self, "_classes", src)
        return NormalForm(src)

    @property
    def flips(self) -> tuple[int, ...] | None:
        """The flip set T: the name of :attr:`flip_set` before version 0.2 (kept for scripts)."""
        return self.flip_set

    @property
    def in_orbit(self) -> bool:
        """θ2 ∈ H_n·θ1."""
        return self.witness is not None and not self.flip_set

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"equivalent": self.equivalent, "reason": self.reason, "in_orbit": self.in_orbit}
        if self.witness is not None:
            d["witness"] = self.witness.to_dict()
        if self.flip_set is not None:
            d["flips"] = list(self.flip_set)
        if self.counterexample is not None:
            d["counterexample"] = self.counterexample.to_dict()
        return tagged(SCHEMA, d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """The verdict :meth:`to_dict` wrote (its certificate included; the normal form is not stored)."""
        check_schema(d, SCHEMA, "verdict")
        flips = d.get("flips")
        cex = d.get("counterexample")
        return cls(
            bool(d["equivalent"]),
            str(d["reason"]),
            Symmetry.from_dict(d["witness"]) if d.get("witness") is not None else None,
            tuple(int(i) for i in flips) if flips is not None else None,
            Counterexample.from_dict(cex) if cex is not None else None,
        )

    def __str__(self) -> str:
        return self.reason


def equivalent(net1: Network, net2: Network, *, certificate: bool = True) -> Verdict:
    """Decide exactly whether θ1 and θ2 realize the same function on ℝ^m (docs/math/normal-form.md, Theorem A).

    Widths may differ.  With ``certificate=False`` only the decision is made (no witness search and no
    counterexample).  The tolerance and domain modes are chosen by the front door (:mod:`relusym._api`).

    >>> e2 = Network([[1, 1]], [[1], [-1]], [0, 1])
    >>> flipped = Network([[1, 1]], [[-1], [1]], [0, -1], [1])
    >>> v = equivalent(e2, flipped)
    >>> bool(v), v.flips
    (True, (0, 1))
    """
    check_pair(net1, net2, "equivalent")
    row_hashes: tuple[np.ndarray, np.ndarray] | tuple[None, None] = (None, None)
    if certificate and net1.n == net2.n:
        # an exact orbit witness settles it without normal forms (the common case of permuted copies)
        w, keys = search_symmetry(net1, net2)
        if w is not None:
            return Verdict(
                True, "θ2 = h·θ1 for the symmetry h in H_n given as witness", witness=w, flip_set=(), _classes=net1
            )
        row_hashes = keys or row_hashes
    h1 = hyperplane_classes(net1, row_hashes=row_hashes[0])
    h2 = hyperplane_classes(net2, row_hashes=row_hashes[1])
    diff = compare(h1, h2, lazy_affine=True)
    if diff.zero:
        if not certificate:
            return Verdict(True, "same normal form", _classes=h1)
        found = _flip_witness(net1, net2, h1, h2)
        if found is not None:
            T, hw = found
            return Verdict(
                True,
                f"θ2 = h·flip_T(θ1): a hidden symmetry flipping {len(T)} neuron(s) (Proposition 14)",
                witness=hw,
                flip_set=T,
                _classes=h1,
            )
        return Verdict(True, "same normal form (θ2 is not in the H_n-orbit of θ1 or of a flip of it)", _classes=h1)
    reason = _reason(diff)
    if not certificate:
        return Verdict(False, reason, _classes=h1)
    ce = counterexample(net1, net2, h1, h2, diff)
    return Verdict(False, reason, counterexample=ce, _classes=h1)


def _reason(diff: Difference) -> str:
    if diff.kink_classes:
        return f"the kinks differ on {len(diff.kink_classes)} hyperplane(s)"
    if any(x for row in diff.dM for x in row):
        return "same kinks, but the linear parts M differ"
    return "same kinks and linear part, but the offsets e differ"


# ----------------------------------------------------------------------------------------------------------
# hidden-symmetry witness


def _flip_witness(
    net1: Network, net2: Network, h1: HyperplaneClasses, h2: HyperplaneClasses
) -> tuple[tuple[int, ...], Symmetry] | None:
    """Find T and h with h·flip_T(θ1) = θ2 when such exist, by matching hyperplane neurons up to orientation
    and scale: the invariant (unoriented û, |λ| v) of a neuron is kept by H_n and by flips."""
    if net1.n != net2.n:
        return None

    def keyed(h: HyperplaneClasses) -> dict[tuple[int, bytes], list[int]]:
        out: dict[tuple[int, bytes], list[int]] = defaultdict(list)
        V = h.net.V
        for i in np.nonzero(h.neuron_type == NeuronType.HYPERPLANE)[0].tolist():
            lam = abs(Fraction(h.lam[i]))
            prod = tuple(Fraction(x) * lam for x in V[:, i].tolist())
            out[(int(h.label[i]), repr(prod).encode())].append(i)
        return out

    # classes of θ1 and θ2 matched exactly
    from relusym._core.normal_form import match_classes

    cm = match_classes(h1, h2)
    to2 = {int(a): int(b) for a, b in cm.pairs.tolist()}
    k1, k2 = keyed(h1), keyed(h2)
    T: list[int] = []
    for (lab, prod), members in k1.items():
        if lab not in to2:
            return None
        partners = k2.get((to2[lab], prod), [])
        if len(partners) != len(members):
            return None
        s1 = sorted(bool(h1.lam[i] < 0) for i in members)
        s2 = sorted(bool(h2.lam[i] < 0) for i in partners)
        if s1 != s2:
            if len(members) != 1:
                return None
            T.append(members[0])
    if not T:
        return None
    flipped = flip(net1, T)
    w = find_symmetry(flipped, net2)
    if w is None:
        return None
    return tuple(sorted(T)), w


# ----------------------------------------------------------------------------------------------------------
# counterexamples


def _differs(net1: Network, net2: Network, x: tuple[Fraction, ...]) -> Counterexample | None:
    y1, y2 = net1.evaluate_exact(x), net2.evaluate_exact(x)
    return Counterexample(x, y1, y2) if y1 != y2 else None


def _safe_float(q: Fraction) -> float:
    try:
        return float(q)
    except OverflowError:
        return float("inf") if q > 0 else float("-inf")


def _float_step(
    keys: np.ndarray,
    xf: np.ndarray,
    alpha: tuple[Fraction, ...],
    u: tuple[Fraction, ...],
    m: int,
    others: list[tuple[HyperplaneClasses, int]],
    x0t: tuple[Fraction, ...],
) -> Fraction | None:
    """A step along α̂ from x0 that crosses no other hyperplane (float screen, exact check of near ones), or
    None when x0 lies on another hyperplane."""
    with np.errstate(over="ignore", invalid="ignore"):  # keys of ±inf (beyond float range) give inf or NaN: far
        val = keys @ xf
        slope = keys[:, :m] @ np.array([float(a) for a in alpha])
        near = np.abs(val) <= 1e-9 * (1 + np.abs(keys).sum(axis=1) * (1 + np.abs(xf).max()))
    for q in np.nonzero(near)[0].tolist():
        hh, jj = others[q]
        uu = hh.u_exact(jj)
        if uu == u or tuple(-v for v in uu) == u:
            continue
        r = sum((uu[i] * x0t[i] for i in range(m)), uu[m])
        if r == 0:
            return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(val) / np.abs(slope)
    same = np.all(np.abs(keys - np.array([float(v) for v in u])) == 0, axis=1)
    ratio = np.where(same | ~np.isfinite(ratio) | near, np.inf, ratio)
    gap = float(ratio.min()) if ratio.size else np.inf
    eps = Fraction(1) if not np.isfinite(gap) or gap >= 2 else Fraction(gap / 4).limit_denominator(1 << 62)
    return eps if eps > 0 else Fraction(1, 1 << 40)


def _exact_step(
    others: list[tuple[HyperplaneClasses, int]],
    u: tuple[Fraction, ...],
    x0t: tuple[Fraction, ...],
    alpha: tuple[Fraction, ...],
    m: int,
) -> Fraction | None:
    """The same step as :func:`_float_step`, in exact arithmetic: a quarter of the exact distance along α̂ to
    the nearest other hyperplane (for hyperplanes whose coordinates are beyond float range)."""
    gap: Fraction | None = None
    for hh, jj in others:
        uu = hh.u_exact(jj)
        if uu == u or tuple(-v for v in uu) == u:
            continue
        r = sum((uu[i] * x0t[i] for i in range(m)), uu[m])
        if r == 0:
            return None
        slope = sum((uu[i] * alpha[i] for i in range(m)), Fraction(0))
        if slope != 0:
            g = abs(r) / abs(slope)
            gap = g if gap is None or g < gap else gap
    return Fraction(1) if gap is None or gap >= 2 else gap / 4


def counterexample(
    net1: Network,
    net2: Network,
    h1: HyperplaneClasses | None = None,
    h2: HyperplaneClasses | None = None,
    diff: Difference | None = None,
    *,
    seed: int = 0,
) -> Counterexample:
    """An exact x with ρ(θ1)(x) ≠ ρ(θ2)(x), verified by exact evaluation (θ1 and θ2 must not be equivalent).

    When a kink differs on the hyperplane H of class û: the difference ρ(θ1) − ρ(θ2) is affine plus the
    kinks of the classes whose kinks differ, so on a line crossing H where no other hyperplane crosses nearby
    it is a broken line with one break.  Along the axis e_p of û's pivot coordinate, through a base point with
    few small dyadic coordinates, three dyadic points are placed around the crossing (two on one side, one on
    the other, closer than any other crossing): a broken line with a break cannot vanish at all three.  Every
    candidate is evaluated exactly at a sparse dyadic point (integer limbs over the few columns involved), and
    the one that differs is returned.  When every kink agrees the difference is the affine map ΔM x + Δe, and
    x = 0 or a unit vector shows it."""
    h1 = h1 or hyperplane_classes(net1)
    h2 = h2 or hyperplane_classes(net2)
    diff = diff or compare(h1, h2, lazy_affine=True)
    if not diff.kink_classes and not diff.affine_known:  # pragma: no cover - lazy_affine computes it then
        diff = compare(h1, h2)
    if diff.zero:
        raise InvalidNetworkError("the networks are equivalent: there is no counterexample")
    m = net1.m
    if not diff.kink_classes:
        if any(diff.de):
            x: dict[int, Fraction] = {}
        else:
            col = next(j for j in range(m) if any(row[j] for row in diff.dM))
            x = {col: Fraction(1)}
        ce = _sparse_differs(net1, net2, x)
        if ce is None:  # pragma: no cover - would contradict Theorem A
            raise AssertionError("affine difference not confirmed by exact evaluation")
        return ce
    rng = _random.Random(seed)
    by_side: dict[int, list[int]] = {1: [], 2: []}
    for side, j in diff.kink_classes:
        by_side[side].append(j)
    for side, j in diff.kink_classes[:8]:
        h, other = (h1, h2) if side == 1 else (h2, h1)
        hint = _differing_coordinates(h, j, other, by_side[3 - side][:64])
        for attempt in range(12):
            ce = _around_crossing(net1, net2, h, j, rng, attempt, hint)
            if ce is not None:
                return ce
    return _counterexample_general(net1, net2, h1, h2, diff, seed=seed)  # pragma: no cover - degenerate


def _differing_coordinates(h: HyperplaneClasses, j: int, other: HyperplaneClasses, candidates: list[int]) -> list[int]:
    """The input coordinates in which û_j differs from the nearest (in float keys) of the other network's
    classes ``candidates``.  When two classes differ only in coordinates c ∈ C, their kinks coincide on the
    subspace {x_c = 0 for c ∈ C}, so a line that keeps those coordinates 0 cannot show the difference: the
    line must move them (a one-ulp change of one weight is the common case)."""
    if not candidates:
        return []
    kj = _class_key(h, j)
    if not np.all(np.isfinite(kj)):
        return []
    best: np.ndarray | None = None
    best_d = math.inf
    for j2 in candidates:
        k2 = _class_key(other, j2)
        with np.errstate(invalid="ignore", over="ignore"):
            d = float(np.abs(kj - k2).sum())
        if d < best_d:
            best, best_d = k2, d
    if best is None:
        return []
    return [int(c) for c in np.nonzero(kj[: h.m] != best[: h.m])[0]]


def _float_col(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) if x.dtype != object else float_key(x)


def _around_crossing(
    net1: Network,
    net2: Network,
    h: HyperplaneClasses,
    j: int,
    rng: _random.Random,
    attempt: int,
    hint: list[int] | None = None,
) -> Counterexample | None:
    """Three dyadic points on a line along e_p crossing the hyperplane of class j (see counterexample); the base
    point is nonzero in up to three of the ``hint`` coordinates (see :func:`_differing_coordinates`)."""
    m = h.m
    key = h.keys[j] if "keys" in h.__dict__ else _class_key(h, j)  # û_j correctly rounded; α̂_p = 1 exactly
    if not np.all(np.isfinite(key)):
        return None
    p = int(np.nonzero(key[:m])[0][0]) if key[:m].any() else -1
    if p < 0:
        return None
    others = [c for c in range(m) if c != p]
    x0: dict[int, Fraction] = {}
    moved = [c for c in (hint or []) if c != p]
    for c in rng.sample(moved, min(len(moved), 1 + attempt % 3)):
        x0[c] = Fraction(rng.choice((-1, 1)) * rng.randint(1, 8), 1 << rng.randint(0, 3))
    if attempt and others:
        for c in rng.sample(others, min(len(others), 1 + attempt % 3)):
            x0.setdefault(c, Fraction(rng.randint(-8, 8), 1 << rng.randint(0, 3)))
    # the crossing t* = −(β̂ + Σ α̂_c x0_c) and every neuron's crossing along the line, in float64 (screen only)
    t_star = -(key[m] + sum(key[c] * float(v) for c, v in x0.items()))
    if not np.isfinite(t_star):
        return None
    ts = []
    for net in (net1, net2):
        ap = _float_col(net.A[:, p])
        off = _float_col(net.b) + sum((_float_col(net.A[:, c]) * float(v) for c, v in x0.items()), np.zeros(net.n))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ts.append(np.where(ap != 0, -off / ap, np.inf))
    t_all = np.concatenate(ts)
    dist = np.abs(t_all - t_star)
    dist = dist[np.isfinite(dist) & (dist > 1e-12 * (1.0 + abs(t_star)))]
    gap = float(dist.min()) if dist.size else math.inf
    if not math.isfinite(gap) or gap >= 4.0:
        e = 0
    elif gap <= 0.0:
        return None
    else:
        e = math.floor(math.log2(gap / 4.0))
    eps = Fraction(2) ** e
    tau = Fraction(math.floor(t_star / float(eps))) * eps if abs(t_star / float(eps)) < 2**62 else Fraction(t_star)
    for t in (tau + 2 * eps, tau - eps, tau - 2 * eps, tau + eps, tau):
        x = dict(x0)
        x[p] = t
        ce = _sparse_differs(net1, net2, x)
        if ce is not None:
            return ce
    return None


def _class_key(h: HyperplaneClasses, j: int) -> np.ndarray:
    i = int(h.rep[j])
    row = h.row(i)
    if row.dtype == object:
        lam = to_fraction(h.lam[i])
        return float_key(np.array([to_fraction(x) / lam for x in row.tolist()], dtype=object))
    with np.errstate(over="ignore"):  # subnormal λ: an infinite key, which the caller screens out
        return row.astype(np.float64) / float(h.lam[i]) + 0.0


def _sparse_differs(net1: Network, net2: Network, x: dict[int, Fraction]) -> Counterexample | None:
    y1, y2 = sparse_evaluate(net1, x), sparse_evaluate(net2, x)
    if y1 == y2:
        return None
    dense = tuple(x.get(i, Fraction(0)) for i in range(net1.m))
    return Counterexample(dense, y1, y2)


def sparse_evaluate(net: Network, x: dict[int, Fraction]) -> tuple[Fraction, ...]:
    """ρ(θ)(x) exactly at a point x ∈ ℚ^m given by its nonzero coordinates {index: value}.

    For a float network only the columns of A in the support are read: the signs of the pre-activations
    z = A_S x_S + b are found in float64 with a rigorous error bound (exact rationals for the few rows too
    close to 0), and then ρ(θ)(x) = (V_act A_act,S) x_S + V_act b_act + c with the two products exact
    (integer limbs).  Rational networks are evaluated by :meth:`Network.evaluate_exact`."""
    S = sorted(i for i, v in x.items() if v != 0)
    if not (is_float_array(net.A) and is_float_array(net.b) and is_float_array(net.V) and is_float_array(net.c)):
        return net.evaluate_exact([x.get(i, Fraction(0)) for i in range(net.m)])
    xs = [x[i] for i in S]
    AS = net.A[:, S].astype(np.float64)
    b = net.b.astype(np.float64)
    xf = np.array([float_key_scalar(v) for v in xs], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        z = AS @ xf + b if S else b.copy()
        bound = (np.abs(AS) @ np.abs(xf) + np.abs(b)) * (4 * (len(S) + 2) * 2.0**-53) + 2.0**-1000
    sure = np.isfinite(z) & np.isfinite(bound) & (np.abs(z) > bound) & np.isfinite(xf).all()
    act = sure & (z > 0)
    for i in np.nonzero(~sure)[0].tolist():
        zi = to_fraction(net.b[i]) + sum(
            (to_fraction(net.A[i, c]) * v for c, v in zip(S, xs, strict=True)), Fraction(0)
        )
        act[i] = zi > 0
    idx = np.nonzero(act)[0]
    out = [to_fraction(v) for v in net.c.tolist()]
    if idx.size == 0:
        return tuple(out)
    Vact = np.ascontiguousarray(net.V[:, idx])
    if S:
        P, ex, ey = exact_matmul_float(Vact, np.ascontiguousarray(net.A[idx][:, S]), block=8192)
        for r in range(net.k):
            for t, v in enumerate(xs):
                if P[r, t]:
                    out[r] += _dyadic(int(P[r, t]), int(ex[r]) + int(ey[t])) * v
    P, ex, ey = exact_matmul_float(Vact, np.ascontiguousarray(net.b[idx][:, None]), block=8192)
    for r in range(net.k):
        if P[r, 0]:
            out[r] += _dyadic(int(P[r, 0]), int(ex[r]) + int(ey[0]))
    return tuple(out)


def _dyadic(p: int, e: int) -> Fraction:
    return Fraction(p << e) if e >= 0 else Fraction(p, 1 << -e)


def _counterexample_general(
    net1: Network,
    net2: Network,
    h1: HyperplaneClasses,
    h2: HyperplaneClasses,
    diff: Difference,
    *,
    seed: int = 0,
) -> Counterexample:
    """The general search (any geometry, slower): points next to a hyperplane where the kinks differ, away
    from all other hyperplanes, at shrinking distances."""
    m = net1.m
    side, j = diff.kink_classes[0]
    h = h1 if side == 1 else h2
    u = h.u_exact(j)
    alpha, beta = u[:m], u[m]
    p = next(i for i in range(m) if alpha[i] != 0)  # α̂_p = 1
    rng = _random.Random(seed)
    others = [(hh, jj) for hh in (h1, h2) for jj in range(hh.N_all)]
    keys = np.concatenate([h1.keys, h2.keys], axis=0) if others else np.zeros((0, m + 1))
    for attempt in range(200):
        t = [
            Fraction(rng.randint(-3 - attempt, 3 + attempt), rng.randint(1, 4)) if i != p else Fraction(0)
            for i in range(m)
        ]
        x0 = list(t)
        x0[p] = -beta - sum((alpha[i] * t[i] for i in range(m) if i != p), Fraction(0))
        x0t = tuple(x0)
        # distance (along the normal direction d = α̂) to every other hyperplane: screened in floating point when
        # every number involved is within float range, else computed exactly (kinks beyond 1e308 exist)
        xf = np.array([_safe_float(v) for v in x0t] + [1.0])
        if np.isfinite(xf).all() and np.isfinite(keys).all():
            step = _float_step(keys, xf, alpha, u, m, others, x0t)
        else:
            step = _exact_step(others, u, x0t, alpha, m)
        if step is None:
            continue
        eps = step
        for _ in range(80):
            for sign in (1, -1, 0):
                x = tuple(x0t[i] + sign * eps * alpha[i] for i in range(m))
                ce = _differs(net1, net2, x)
                if ce is not None:
                    return ce
            eps /= 4
    raise AssertionError("no counterexample found although the normal forms differ")  # pragma: no cover
