"""Equality of one-hidden-layer ReLU networks on a bounded input domain (a box or a polytope), decided exactly.

On a domain D with nonempty interior, a neuron v·σ(a·x + b) is of one of three kinds, decided exactly from the
range of its affine form ℓ(x) = a·x + b on D:

* **zero on D** when ℓ ≤ 0 on D (the neuron never fires there);
* **affine on D** when ℓ ≥ 0 on D (it always fires, and equals v·ℓ(x) there);
* **crossing** when ℓ takes both signs on D, i.e. its hyperplane meets the interior of D.

The restricted network θ_D drops the neurons that are zero on D and gives every affine neuron a mirror
(−v, −a, −b), so that v·σ(ℓ) − v·σ(−ℓ) = v·ℓ: θ_D realizes the same function as θ on D, and its only
hyperplanes with a nonzero kink are those that cross D.  Its normal form is a complete invariant of the
restriction ρ(θ)|_D: if two such functions agree on the interior of D, the kink of each crossing hyperplane is
the jump of the gradient across it near a point of the hyperplane inside D and off the others (so the kinks
agree), and the affine parts then agree on an open set (so they are equal).  See docs/math/domains.md.

For a box the range of ℓ is an interval computation: min ℓ = b + Σ_j min(a_j lo_j, a_j hi_j), done in float64
with a rigorous error bound and redone in exact rationals for the rows the bound cannot settle.  For a polytope
{x : A x ≤ b} the range comes from exact linear programs (a dense simplex on Fractions with Bland's rule, from
an exactly verified interior point); on larger polytopes scipy's HiGHS first proposes a point on the other side
of the hyperplane, which settles "crossing" when it is confirmed exactly.  No float verdict is ever taken.
"""

from __future__ import annotations

import heapq
import math
import random as _random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from relusym._core import equivalence as _equivalence
from relusym._core.classes import HyperplaneClasses, hyperplane_classes
from relusym._core.network import Network, check_pair
from relusym._core.normal_form import Difference, NormalForm, compare
from relusym._exact.numbers import (
    exact_matmul,
    float_key,
    fraction_str,
    fractions_of,
    integer_matrix,
    row_integers,
    to_fraction,
)
from relusym.errors import InvalidNetworkError

__all__ = [
    "Box",
    "Polytope",
    "Domain",
    "as_domain",
    "neuron_status",
    "restrict",
    "DomainNormalForm",
    "normal_form_on",
    "DomainVerdict",
    "DomainCertificate",
    "equivalent_on",
    "DomainDistance",
    "distance_on",
]

ZERO, AFFINE, CROSSING = 0, 1, 2  # the kinds of neuron on a domain
# above this many entries of A_ineq, a polytope first asks HiGHS for a crossing point (checked exactly)
_EXACT_LP_SIZE = 60


def _exact_vector(x: Any, name: str) -> tuple[Fraction, ...]:
    arr = np.asarray(x, dtype=object)
    if arr.ndim == 0:
        return (to_fraction(arr.item(), name),)
    if arr.ndim != 1:
        raise InvalidNetworkError(f"{name} must be a number or a sequence of numbers, got shape {arr.shape}")
    return tuple(to_fraction(v, f"{name}[{i}]") for i, v in enumerate(arr.tolist()))


def _is_scalar(x: Any) -> bool:
    return np.asarray(x, dtype=object).ndim == 0


# ----------------------------------------------------------------------------------------------------------
# boxes


class Box:
    """The box {x : lo ≤ x ≤ hi} (closed; its interior decides, so including the bounds or not does not matter).

    ``lo`` and ``hi`` are exact numbers (ints, Fractions, decimal or rational strings, floats at their binary
    value), each a scalar (the same bound for every coordinate) or a sequence of m bounds.  Every coordinate
    needs lo_j < hi_j (a nonempty interior).

    >>> Box(0, 1).resolve(2).lo
    (Fraction(0, 1), Fraction(0, 1))
    """

    __slots__ = ("lo", "hi", "_broadcast")

    lo: tuple[Fraction, ...]
    hi: tuple[Fraction, ...]
    _broadcast: bool

    def __init__(self, lo: Any, hi: Any) -> None:
        lo_v, hi_v = _exact_vector(lo, "lo"), _exact_vector(hi, "hi")
        broadcast = _is_scalar(lo) and _is_scalar(hi)
        if len(lo_v) != len(hi_v):
            if len(lo_v) == 1 and _is_scalar(lo):
                lo_v = lo_v * len(hi_v)
            elif len(hi_v) == 1 and _is_scalar(hi):
                hi_v = hi_v * len(lo_v)
            else:
                raise InvalidNetworkError(f"lo has {len(lo_v)} bounds and hi has {len(hi_v)}; they must agree")
        if not lo_v:
            raise InvalidNetworkError("a box needs at least one coordinate")
        for j, (a, b) in enumerate(zip(lo_v, hi_v, strict=True)):
            if not a < b:
                raise InvalidNetworkError(
                    f"the box has an empty interior: lo[{j}] = {fraction_str(a)} is not below hi[{j}] = "
                    f"{fraction_str(b)}"
                )
        object.__setattr__(self, "lo", lo_v)
        object.__setattr__(self, "hi", hi_v)
        object.__setattr__(self, "_broadcast", broadcast)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Box is immutable")

    @property
    def m(self) -> int | None:
        """The dimension, or None for a box given by scalar bounds (it fits every m)."""
        return None if self._broadcast else len(self.lo)

    def resolve(self, m: int) -> Box:
        """This box in ℝ^m (scalar bounds broadcast); an error naming both sizes when they differ."""
        if self._broadcast:
            box = object.__new__(Box)  # the scalar bounds were checked already
            object.__setattr__(box, "lo", self.lo[:1] * m)
            object.__setattr__(box, "hi", self.hi[:1] * m)
            object.__setattr__(box, "_broadcast", False)
            return box
        if len(self.lo) != m:
            raise InvalidNetworkError(f"the box has {len(self.lo)} coordinates but the networks have m = {m} inputs")
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Box):
            return NotImplemented
        return self.lo == other.lo and self.hi == other.hi and self._broadcast == other._broadcast

    def __hash__(self) -> int:
        return hash((self.lo, self.hi))

    def __repr__(self) -> str:
        if self._broadcast:
            return f"Box({fraction_str(self.lo[0])}, {fraction_str(self.hi[0])})"
        return f"Box({[fraction_str(v) for v in self.lo]}, {[fraction_str(v) for v in self.hi]})"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "box", "lo": [fraction_str(v) for v in self.lo], "hi": [fraction_str(v) for v in self.hi]}

    # -- exact geometry --------------------------------------------------------------------------------------
    def interior_point(self) -> tuple[Fraction, ...]:
        """The centre of the box."""
        return tuple((a + b) / 2 for a, b in zip(self.lo, self.hi, strict=True))

    def contains(self, x: Sequence[Fraction], *, strict: bool = False) -> bool:
        if strict:
            return all(a < v < b for a, v, b in zip(self.lo, x, self.hi, strict=True))
        return all(a <= v <= b for a, v, b in zip(self.lo, x, self.hi, strict=True))

    def range_of(self, a: Sequence[Fraction], beta: Fraction) -> tuple[Fraction, Fraction]:
        """(min, max) of a·x + β over the box, exactly."""
        lo_s, hi_s = beta, beta
        for aj, l, h in zip(a, self.lo, self.hi, strict=True):
            if aj > 0:
                lo_s += aj * l
                hi_s += aj * h
            elif aj < 0:
                lo_s += aj * h
                hi_s += aj * l
        return lo_s, hi_s

    def step(self, x: Sequence[Fraction], d: Sequence[Fraction]) -> Fraction | None:
        """sup {t ≥ 0 : x + t·d ∈ box} (None when unbounded: d = 0)."""
        best: Fraction | None = None
        for v, dj, l, h in zip(x, d, self.lo, self.hi, strict=True):
            if dj > 0:
                t = (h - v) / dj
            elif dj < 0:
                t = (l - v) / dj
            else:
                continue
            best = t if best is None or t < best else best
        return best

    def random_interior(self, rng: _random.Random, den: int = 64) -> tuple[Fraction, ...]:
        """A random interior point on a grid of 1/den of each side."""
        return tuple(
            l + (h - l) * Fraction(rng.randint(1, den - 1), den) for l, h in zip(self.lo, self.hi, strict=True)
        )

    def status(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """For each row: 0 when a·x + b ≤ 0 on the box, 1 when ≥ 0, 2 when it takes both signs (exact)."""
        n, m = A.shape
        out = np.full(n, -1, dtype=np.int8)
        if n == 0:
            return out
        Af = float_key(A) if A.dtype == object else A.astype(np.float64)
        bf = float_key(b) if b.dtype == object else b.astype(np.float64)
        lo = np.array([float(v) for v in self.lo])
        hi = np.array([float(v) for v in self.hi])
        mid, rad = (lo + hi) / 2, (hi - lo) / 2
        with np.errstate(over="ignore", invalid="ignore"):
            cval = Af @ mid + bf
            absA = np.abs(Af)
            spread = absA @ rad
            scale = absA @ (np.abs(mid) + rad) + np.abs(bf)
            # rounding of the m products, their sum and the bounds (relative), and of subnormals (absolute)
            big = float(max(np.abs(lo).max(), np.abs(hi).max())) + 1.0
            err = scale * ((4 * m + 16) * 2.0**-53) + (4 * m + 8) * 2.0**-1060 * big
            vmin, vmax = cval - spread, cval + spread
            ok = np.isfinite(err) & np.isfinite(vmin) & np.isfinite(vmax)
        out[ok & (vmax < -err)] = ZERO
        out[ok & (vmin > err)] = AFFINE
        out[ok & (vmin < -err) & (vmax > err)] = CROSSING
        for i in np.nonzero(out < 0)[0].tolist():
            a = [to_fraction(v) for v in A[i].tolist()]
            lo_s, hi_s = self.range_of(a, to_fraction(b[i]))
            out[i] = ZERO if hi_s <= 0 else (AFFINE if lo_s >= 0 else CROSSING)
        return out


def _dot(a: Sequence[Fraction], x: Sequence[Fraction]) -> Fraction:
    return sum((ai * xi for ai, xi in zip(a, x, strict=True) if ai), Fraction(0))


def _side_points(
    dom: Any,
    a: Sequence[Fraction],
    beta: Fraction,
    rng: _random.Random,
    vmin: tuple[Fraction, ...],
    vmax: tuple[Fraction, ...],
) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """From points of D where ℓ is negative (vmin) and positive (vmax), random interior points on each side:
    p = v + δ(r − v) for a random interior r and a δ ∈ (0, 1) small enough to keep the sign of ℓ(v)."""
    out = []
    for v in (vmin, vmax):
        lv = _dot(a, v) + beta
        r = dom.random_interior(rng)
        lr = _dot(a, r) + beta
        if (lr < 0) == (lv < 0) and lr != 0:
            out.append(r)
            continue
        # ℓ(v + δ(r − v)) = lv + δ(lr − lv) keeps the sign of lv for δ < lv/(lv − lr)
        bound = lv / (lv - lr)
        delta = min(bound / 2, Fraction(1, 2)) * Fraction(rng.randint(1, 8), 8)
        out.append(tuple(vi + delta * (ri - vi) for vi, ri in zip(v, r, strict=True)))
    return out[0], out[1]


# ----------------------------------------------------------------------------------------------------------
# polytopes and an exact simplex


def _simplex_max(
    G: list[list[Fraction]], h: list[Fraction], obj: list[Fraction]
) -> tuple[bool, list[Fraction], Fraction]:
    """max obj·y subject to G y ≤ h, y free, where h ≥ 0 (the origin is feasible), in exact rationals.

    Dense tableau over y = y⁺ − y⁻ and slacks, Bland's rule (no cycling).  Returns (bounded, y, value); when
    unbounded, y is the last vertex and value is its objective."""
    r = len(G)
    m = len(obj)
    ncol = 2 * m + r
    T = [
        [*row, *(-v for v in row), *(Fraction(int(i == j)) for j in range(r)), hi]
        for i, (row, hi) in enumerate(zip(G, h, strict=True))
    ]
    d = [*obj, *(-v for v in obj), *([Fraction(0)] * r)]
    value = Fraction(0)
    basis = list(range(2 * m, 2 * m + r))
    bounded = True
    while True:
        enter = next((j for j in range(ncol) if d[j] > 0), None)
        if enter is None:
            break
        best: tuple[Fraction, int, int] | None = None
        for i in range(r):
            if T[i][enter] > 0:
                ratio = T[i][ncol] / T[i][enter]
                key = (ratio, basis[i], i)
                if best is None or key[:2] < best[:2]:
                    best = key
        if best is None:
            bounded = False
            break
        _, _, pr = best
        prow = T[pr]
        piv = prow[enter]
        prow = [v / piv for v in prow]
        T[pr] = prow
        for i in range(r):
            if i != pr and T[i][enter] != 0:
                f = T[i][enter]
                Ti = T[i]
                T[i] = [x - f * y for x, y in zip(Ti, prow, strict=True)]
        f = d[enter]
        d = [x - f * y for x, y in zip(d, prow[:ncol], strict=True)]
        value += f * prow[ncol]
        basis[pr] = enter
    z = [Fraction(0)] * ncol
    for i, j in enumerate(basis):
        z[j] = T[i][ncol]
    return bounded, [z[j] - z[m + j] for j in range(m)], value


class Polytope:
    """The polytope {x : A_ineq·x ≤ b_ineq} (rows are inequalities), which must have a nonempty interior.

    The interior is checked exactly: an exact simplex maximises t subject to A x + t·1 ≤ b, t ≤ 1, and the
    optimum must have t > 0 (then the optimal x is a strictly interior point, kept as ``interior``).  The set may
    be unbounded (a half-space is allowed); :func:`distance_on` needs a box.
    """

    __slots__ = ("A", "b", "interior")

    A: tuple[tuple[Fraction, ...], ...]
    b: tuple[Fraction, ...]
    interior: tuple[Fraction, ...]

    def __init__(self, A_ineq: Any, b_ineq: Any) -> None:
        arr = np.asarray(A_ineq, dtype=object)
        if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
            raise InvalidNetworkError(f"A_ineq must be a nonempty r×m matrix, got shape {arr.shape}")
        A = tuple(
            tuple(to_fraction(v, f"A_ineq[{i}, {j}]") for j, v in enumerate(row)) for i, row in enumerate(arr.tolist())
        )
        b = _exact_vector(b_ineq, "b_ineq")
        if len(b) != len(A):
            raise InvalidNetworkError(f"b_ineq must have {len(A)} entries (one per row of A_ineq), got {len(b)}")
        r, m = len(A), len(A[0])
        t0 = min(b) - 1
        G = [[*row, Fraction(1)] for row in A] + [[Fraction(0)] * m + [Fraction(1)]]
        h = [bi - t0 for bi in b] + [1 - t0]
        _, y, s = _simplex_max(G, h, [Fraction(0)] * m + [Fraction(1)])
        if t0 + s <= 0:
            raise InvalidNetworkError(
                f"the polytope A_ineq·x ≤ b_ineq ({r} inequalities in ℝ^{m}) has an empty interior"
            )
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "interior", tuple(y[:m]))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Polytope is immutable")

    @property
    def m(self) -> int:
        return len(self.A[0])

    def resolve(self, m: int) -> Polytope:
        if self.m != m:
            raise InvalidNetworkError(f"the polytope lies in ℝ^{self.m} but the networks have m = {m} inputs")
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Polytope):
            return NotImplemented
        return self.A == other.A and self.b == other.b

    def __hash__(self) -> int:
        return hash((self.A, self.b))

    def __repr__(self) -> str:
        return f"Polytope({len(self.A)} inequalities in ℝ^{self.m})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "polytope",
            "A_ineq": [[fraction_str(v) for v in row] for row in self.A],
            "b_ineq": [fraction_str(v) for v in self.b],
        }

    def interior_point(self) -> tuple[Fraction, ...]:
        return self.interior

    def contains(self, x: Sequence[Fraction], *, strict: bool = False) -> bool:
        vals = [_dot(row, x) - bi for row, bi in zip(self.A, self.b, strict=True)]
        return all(v < 0 for v in vals) if strict else all(v <= 0 for v in vals)

    def _optimum(self, a: Sequence[Fraction], sign: int) -> tuple[Fraction | None, tuple[Fraction, ...]]:
        """(max of sign·a·x over P or None when unbounded, a point reaching it (or far along the ray))."""
        x0 = self.interior
        G = [list(row) for row in self.A]
        h = [bi - _dot(row, x0) for row, bi in zip(self.A, self.b, strict=True)]
        bounded, y, val = _simplex_max(G, h, [sign * v for v in a])
        pt = tuple(xi + yi for xi, yi in zip(x0, y, strict=True))
        return (sign * _dot(a, x0) + val if bounded else None), pt

    def range_of(self, a: Sequence[Fraction], beta: Fraction) -> tuple[Fraction | None, Fraction | None]:
        """(min, max) of a·x + β over P, exactly (None for −∞ / +∞)."""
        mx, _ = self._optimum(a, 1)
        mn, _ = self._optimum(a, -1)
        return (None if mn is None else beta - mn), (None if mx is None else beta + mx)

    def step(self, x: Sequence[Fraction], d: Sequence[Fraction]) -> Fraction | None:
        best: Fraction | None = None
        for row, bi in zip(self.A, self.b, strict=True):
            ad = _dot(row, d)
            if ad > 0:
                t = (bi - _dot(row, x)) / ad
                best = t if best is None or t < best else best
        return best

    def random_interior(self, rng: _random.Random, den: int = 64) -> tuple[Fraction, ...]:
        """The interior point moved a random fraction of the way along a random direction (stays interior)."""
        x0 = self.interior
        d = tuple(Fraction(rng.randint(-8, 8), 8) for _ in x0)
        t = self.step(x0, d)
        if t is None:
            t = Fraction(1)
        s = t * Fraction(rng.randint(1, den - 1), den)  # one fraction for the whole point: it stays on the segment
        return tuple(xi + s * di for xi, di in zip(x0, d, strict=True))

    def _crossing_by_highs(self, a: list[Fraction], beta: Fraction, sign: int) -> bool:
        """True when scipy's HiGHS finds a point of P where sign·ℓ < 0 that is confirmed exactly (the LP's float
        optimum, pulled towards the interior point until it lies in P); False means "not shown", never "no"."""
        from scipy.optimize import linprog

        G = np.array([[float(v) for v in row] for row in self.A])
        h = np.array([float(v) for v in self.b])
        res = linprog(np.array([sign * float(v) for v in a]), A_ub=G, b_ub=h, bounds=(None, None), method="highs")
        if res.x is None or not np.all(np.isfinite(res.x)):
            return False
        x0 = self.interior
        p = [Fraction(float(v)) for v in res.x]
        t = Fraction(1)
        for _ in range(8):
            q = tuple(xi + t * (pi - xi) for xi, pi in zip(x0, p, strict=True))
            if sign * (_dot(a, q) + beta) >= 0:
                return False
            if self.contains(q):
                return True
            t *= Fraction(15, 16)
        return False

    def status(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        n = A.shape[0]
        out = np.zeros(n, dtype=np.int8)
        x0 = self.interior
        for i in range(n):
            a = [to_fraction(v) for v in A[i].tolist()]
            beta = to_fraction(b[i])
            l0 = _dot(a, x0) + beta
            if not any(a):
                out[i] = AFFINE if beta > 0 else ZERO
            elif l0 == 0:
                out[i] = CROSSING
            elif len(self.A) * self.m > _EXACT_LP_SIZE and self._crossing_by_highs(a, beta, 1 if l0 > 0 else -1):
                out[i] = CROSSING  # a point on the other side, found by HiGHS and checked exactly
            elif l0 > 0:
                mx, _ = self._optimum(a, -1)  # max of −a·x
                out[i] = AFFINE if mx is not None and beta - mx >= 0 else CROSSING
            else:
                mx, _ = self._optimum(a, 1)
                out[i] = ZERO if mx is not None and beta + mx <= 0 else CROSSING
        return out

    def side_points(
        self, a: Sequence[Fraction], beta: Fraction, rng: _random.Random
    ) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
        x0 = self.interior
        l0 = _dot(a, x0) + beta
        pts = []
        for sgn in (-1, 1):
            if l0 * sgn > 0:
                pts.append(x0)
                continue
            # maximise sgn·ℓ over P, capped at sgn·ℓ ≤ 1 so that the LP is bounded (the cap row holds at x0)
            G = [list(row) for row in self.A] + [[sgn * ai for ai in a]]
            h = [bi - _dot(row, x0) for row, bi in zip(self.A, self.b, strict=True)] + [1 - sgn * l0]
            _, y, _ = _simplex_max(G, h, [sgn * ai for ai in a])
            pts.append(tuple(xi + yi for xi, yi in zip(x0, y, strict=True)))
        return _side_points(self, a, beta, rng, pts[0], pts[1])


Domain = Box | Polytope


def as_domain(domain: Any, m: int) -> Box | Polytope:
    """A domain argument as a Box or Polytope in ℝ^m: a Box, a Polytope, or a pair (lo, hi) of scalars or
    length-m sequences."""
    if isinstance(domain, Box | Polytope):
        return domain.resolve(m)
    if isinstance(domain, tuple | list) and len(domain) == 2:
        return Box(domain[0], domain[1]).resolve(m)
    raise InvalidNetworkError(
        f"domain must be a Box, a Polytope or a pair (lo, hi) of bounds, got {type(domain).__name__}"
    )


# ----------------------------------------------------------------------------------------------------------
# the restricted network


def neuron_status(net: Network, domain: Any) -> np.ndarray:
    """For each neuron: 0 zero on the domain, 1 affine on it, 2 its hyperplane crosses the interior (exact)."""
    dom = as_domain(domain, net.m)
    return dom.status(net.A, net.b)


def _neg(x: np.ndarray) -> np.ndarray:
    return -x if x.dtype != object else np.array([-v for v in x.ravel().tolist()], dtype=object).reshape(x.shape)


def _concat(parts: list[np.ndarray], axis: int) -> np.ndarray:
    if any(p.dtype == object for p in parts) and not all(p.dtype == object for p in parts):
        parts = [fractions_of(p) for p in parts]
    return np.concatenate(parts, axis=axis)


def restrict(net: Network, domain: Any, status: np.ndarray | None = None) -> Network:
    """θ_D: a network that realizes ρ(θ) on the domain and whose only kinks lie on hyperplanes crossing it.

    Neurons zero on D are dropped; an affine neuron (v, a, b) gets the mirror (−v, −a, −b), so that the pair
    realizes v·(a·x + b) everywhere (its hyperplane then carries no kink)."""
    if status is None:
        status = neuron_status(net, domain)
    has_a = (net.A != 0).any(axis=1) if net.n else np.zeros(0, dtype=bool)
    keep = status != ZERO
    mirror = (status == AFFINE) & has_a
    if keep.all() and not mirror.any():
        return net
    V = _concat([net.V[:, keep], _neg(net.V[:, mirror])], axis=1)
    A = _concat([net.A[keep], _neg(net.A[mirror])], axis=0)
    b = _concat([net.b[keep], _neg(net.b[mirror])], axis=0)
    return Network(V, A, b, net.c, m=net.m)


# when k·(number of affine neurons)·m is at most this, their affine map is summed exactly instead of mirrored
_DIRECT_AFFINE = 300_000


@dataclass(frozen=True, eq=False)
class _Restricted:
    """θ_D as hyperplane classes plus the affine neurons (V_a, A_a, b_a) summed exactly (None: no such part)."""

    classes: HyperplaneClasses
    affine: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @cached_property
    def M(self) -> tuple[tuple[Fraction, ...], ...] | None:
        if self.affine is None:
            return None
        Va, Aa, _ = self.affine
        return tuple(tuple(r) for r in exact_matmul(Va, Aa).tolist())

    @cached_property
    def e(self) -> tuple[Fraction, ...] | None:
        if self.affine is None:
            return None
        Va, _, ba = self.affine
        return tuple(exact_matmul(Va, ba[:, None])[:, 0].tolist())


def _restricted(net: Network, dom: Box | Polytope, status: np.ndarray) -> _Restricted:
    """The restriction of θ to D: the crossing neurons as classes, and the affine neurons either kept apart and
    summed exactly (when there are few of them) or given mirrors (see :func:`restrict`).  Both describe the same
    normal form on D."""
    aff = np.nonzero(status == AFFINE)[0]
    if aff.size and net.k * aff.size * net.m <= _DIRECT_AFFINE:
        keep = status == CROSSING
        sub = Network(net.V[:, keep], net.A[keep], net.b[keep], net.c, m=net.m)
        return _Restricted(hyperplane_classes(sub), (net.V[:, aff], net.A[aff], net.b[aff]))
    return _Restricted(hyperplane_classes(restrict(net, dom, status)))


def _sparse_product(X: np.ndarray, Y: np.ndarray) -> dict[tuple[int, int], Fraction]:
    """The nonzero entries of X @ Y, exactly (one integer matrix product)."""
    xi, xs = integer_matrix(X)
    yi, ys = integer_matrix(Y)
    prod = xi.dot(yi) if X.shape[1] else np.zeros((X.shape[0], Y.shape[1]), dtype=object)
    scale = xs * ys
    return {(int(r), int(c)): Fraction(int(prod[r, c])) * scale for r, c in zip(*np.nonzero(prod != 0), strict=True)}


def _total_difference(r1: _Restricted, r2: _Restricted) -> Difference:
    """The exact difference of two normal forms on D (classes compared exactly, then the affine neurons)."""
    diff = compare(r1.classes, r2.classes)
    if r1.affine is None and r2.affine is None:
        return diff
    parts = [(r.affine, sign) for r, sign in ((r1, 1), (r2, -1)) if r.affine is not None]
    V = _concat([Va if sign > 0 else _neg(Va) for (Va, _, _), sign in parts], axis=1)
    A = _concat([Aa for (_, Aa, _), _ in parts], axis=0)
    b = _concat([ba for (_, _, ba), _ in parts], axis=0)
    dM = [list(row) for row in diff.dM]
    de = list(diff.de)
    for (r, c), v in _sparse_product(V, A).items():
        dM[r][c] += v
    for (r, _), v in _sparse_product(V, b[:, None]).items():
        de[r] += v
    return Difference(diff.kink_classes, tuple(tuple(row) for row in dM), tuple(de))


# ----------------------------------------------------------------------------------------------------------
# the normal form on a domain


class DomainNormalForm(NormalForm):
    """NF_D(θ): the normal form of the restricted network θ_D, a complete invariant of ρ(θ) restricted to D.

    ``K`` holds the hyperplane classes that cross the interior of D with their (nonzero) kinks, sorted; ``M``
    and ``e`` are the affine map that all the other neurons add up to on D (plus the usual orientation terms of
    the crossing classes).  Two networks agree on D iff their normal forms on D are equal.  The digest covers
    the domain as well.
    """

    __slots__ = ("domain", "_restricted")

    domain: Box | Polytope
    _restricted: _Restricted

    def __init__(self, restricted: _Restricted, domain: Box | Polytope) -> None:
        super().__init__(restricted.classes)
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "_restricted", restricted)

    @cached_property
    def M(self) -> tuple[tuple[Fraction, ...], ...]:
        """The linear part on D (exact)."""
        base = NormalForm.M.func(self)  # type: ignore[attr-defined]
        extra = self._restricted.M
        if extra is None:
            return base  # type: ignore[no-any-return]
        return tuple(tuple(x + y for x, y in zip(r1, r2, strict=True)) for r1, r2 in zip(base, extra, strict=True))

    @cached_property
    def e(self) -> tuple[Fraction, ...]:
        """The offset on D (exact)."""
        base = NormalForm.e.func(self)  # type: ignore[attr-defined]
        extra = self._restricted.e
        if extra is None:
            return base  # type: ignore[no-any-return]
        return tuple(x + y for x, y in zip(base, extra, strict=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DomainNormalForm):
            return NotImplemented
        if self.domain != other.domain or (self.m, self.k) != (other.m, other.k):
            return False
        return _total_difference(self._restricted, other._restricted).zero

    def __hash__(self) -> int:
        return hash((self._hash, self.domain))

    def _payload(self) -> dict[str, Any]:
        d = super()._payload()
        d["domain"] = self.domain.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DomainNormalForm:
        """Rebuild a normal form on a domain from ``to_dict()`` output."""
        from relusym._core.operations import realize

        dom = d.get("domain")
        if not isinstance(dom, dict) or dom.get("type") not in ("box", "polytope"):
            raise InvalidNetworkError("not a normal form on a domain: no 'domain' object of type box or polytope")
        domain = Box(dom["lo"], dom["hi"]) if dom["type"] == "box" else Polytope(dom["A_ineq"], dom["b_ineq"])
        return normal_form_on(realize(d), domain)

    def __repr__(self) -> str:
        return f"DomainNormalForm(m={self.m}, k={self.k}, N={self.N}, domain={self.domain!r})"


def normal_form_on(net: Network, domain: Any) -> DomainNormalForm:
    """NF(θ) on a domain: the crossing classes with their kinks, plus the affine map the rest add up to."""
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"normal_form needs a Network, got {type(net).__name__}")
    dom = as_domain(domain, net.m)
    return DomainNormalForm(_restricted(net, dom, dom.status(net.A, net.b)), dom)


# ----------------------------------------------------------------------------------------------------------
# deciding equality on a domain


@dataclass(frozen=True)
class DomainCertificate:
    """What was checked.  For each network, the neurons whose hyperplane crosses the domain, those affine on it
    and those zero on it (0-based indices); the number of kink classes of the restricted normal forms (which
    all cross the domain); and, when the networks differ, which part of the restricted normal forms differs."""

    crossing: tuple[tuple[int, ...], tuple[int, ...]]
    affine: tuple[tuple[int, ...], tuple[int, ...]]
    zero: tuple[tuple[int, ...], tuple[int, ...]]
    kink_classes: tuple[int, int]
    differing_kinks: int = 0
    affine_differs: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "crossing": [list(x) for x in self.crossing],
            "affine": [list(x) for x in self.affine],
            "zero": [list(x) for x in self.zero],
            "kink_classes": list(self.kink_classes),
            "differing_kinks": self.differing_kinks,
            "affine_differs": self.affine_differs,
        }


@dataclass(frozen=True)
class DomainVerdict:
    """The answer of ``equivalent(θ1, θ2, domain=D)``: truthy iff ρ(θ1) = ρ(θ2) on D.

    ``certificate``: a :class:`DomainCertificate`; ``counterexample``: an exact x inside D (in its interior)
    with ρ(θ1)(x) ≠ ρ(θ2)(x), verified by exact evaluation; ``domain``: the domain; ``reason``: one sentence.
    """

    equivalent: bool
    reason: str
    domain: Box | Polytope
    certificate: DomainCertificate
    counterexample: Any = None
    _restricted: _Restricted | None = field(default=None, repr=False, compare=False)

    def __bool__(self) -> bool:
        return self.equivalent

    @property
    def normal_form(self) -> DomainNormalForm | None:
        """NF_D(θ1) (equal to NF_D(θ2) when equivalent on D)."""
        return None if self._restricted is None else DomainNormalForm(self._restricted, self.domain)

    @property
    def witness(self) -> None:
        return None

    @property
    def flips(self) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "equivalent": self.equivalent,
            "reason": self.reason,
            "domain": self.domain.to_dict(),
            "certificate": self.certificate.to_dict(),
        }
        if self.counterexample is not None:
            d["counterexample"] = self.counterexample.to_dict()
        return d

    def __str__(self) -> str:
        return self.reason


def _indices(status: np.ndarray, what: int) -> tuple[int, ...]:
    return tuple(int(i) for i in np.nonzero(status == what)[0].tolist())


def equivalent_on(net1: Network, net2: Network, domain: Any, *, certificate: bool = True) -> DomainVerdict:
    """Decide exactly whether ρ(θ1) = ρ(θ2) on the domain (a Box, a Polytope or a pair (lo, hi)).

    Both networks are restricted to D (see :func:`restrict`) and the normal forms of the restrictions are
    compared exactly.  When they differ, the counterexample lies in the interior of D: next to a crossing
    hyperplane whose kinks differ (off all the others), or, when only the affine parts differ, at the interior
    point or one step from it along a coordinate.

    >>> far = Network([[1, 1]], [[1], [1]], [0, -5])       # the second neuron fires only for x > 5
    >>> bool(equivalent_on(far, Network([[1]], [[1]], [0]), (0, 1)))
    True
    """
    Counterexample = _equivalence.Counterexample
    check_pair(net1, net2, "equivalent")
    dom = as_domain(domain, net1.m)
    s1, s2 = dom.status(net1.A, net1.b), dom.status(net2.A, net2.b)
    r1, r2 = _restricted(net1, dom, s1), _restricted(net2, dom, s2)
    h1, h2 = r1.classes, r2.classes
    diff = _total_difference(r1, r2)
    affine_differs = any(x for row in diff.dM for x in row) or any(diff.de)
    cert = DomainCertificate(
        crossing=(_indices(s1, CROSSING), _indices(s2, CROSSING)),
        affine=(_indices(s1, AFFINE), _indices(s2, AFFINE)),
        zero=(_indices(s1, ZERO), _indices(s2, ZERO)),
        kink_classes=(int(h1.kink_mask.sum()), int(h2.kink_mask.sum())),
        differing_kinks=len(diff.kink_classes),
        affine_differs=bool(affine_differs and not diff.kink_classes),
    )
    na = len(cert.affine[0]) + len(cert.affine[1])
    nz = len(cert.zero[0]) + len(cert.zero[1])
    if diff.zero:
        reason = (
            f"equal on the domain: the kinks agree on every hyperplane crossing it ({cert.kink_classes[0]} kink "
            f"class(es)), and the affine parts agree ({na} neuron(s) affine and {nz} zero on it)"
        )
        return DomainVerdict(True, reason, dom, cert, None, r1)
    if diff.kink_classes:
        reason = f"the kinks differ on {len(diff.kink_classes)} hyperplane(s) crossing the domain"
    else:
        reason = "the kinks agree on the hyperplanes crossing the domain, but the affine parts differ there"
    if not certificate:
        return DomainVerdict(False, reason, dom, cert, None, r1)
    x, y1, y2 = _counterexample(net1, net2, dom, h1, h2, diff)
    if y1 == y2 or not dom.contains(x, strict=True):  # pragma: no cover - would contradict the lemma
        raise AssertionError("the counterexample was not confirmed by exact evaluation")
    return DomainVerdict(False, reason, dom, cert, Counterexample(x, y1, y2), r1)


_Found = tuple[tuple[Fraction, ...], tuple[Fraction, ...], tuple[Fraction, ...]]


def _differs(net1: Network, net2: Network, x: tuple[Fraction, ...]) -> _Found | None:
    y1, y2 = net1.evaluate_exact(x), net2.evaluate_exact(x)
    return (x, y1, y2) if y1 != y2 else None


def _counterexample(
    net1: Network, net2: Network, dom: Box | Polytope, h1: HyperplaneClasses, h2: HyperplaneClasses, diff: Any
) -> _Found:
    m = net1.m
    x0 = dom.interior_point()
    if not diff.kink_classes:
        # ρ1 − ρ2 = ΔM x + Δe on D, not identically zero
        found = _differs(net1, net2, x0)
        if found is not None:
            return found
        col = next(j for j in range(m) if any(row[j] for row in diff.dM))
        d = tuple(Fraction(int(j == col)) for j in range(m))
        t = dom.step(x0, d)
        x = tuple(xi + (Fraction(1) if t is None else t / 2) * di for xi, di in zip(x0, d, strict=True))
        found = _differs(net1, net2, x)
        if found is None:  # pragma: no cover - ΔM x + Δe is not zero there
            raise AssertionError("affine difference not confirmed by exact evaluation")
        return found
    side, j = diff.kink_classes[0]
    h = h1 if side == 1 else h2
    keys = np.concatenate([h1.keys, h2.keys], axis=0)
    uf = h.keys[j]
    same = np.all(keys == uf, axis=1) | np.all(keys == -uf, axis=1)
    others = keys[~same]
    if isinstance(dom, Box):
        return _box_counterexample(net1, net2, dom, *_integer_row(h, j), others)
    u = h.u_exact(j)
    alpha, beta = u[:m], u[m]
    af = np.array([float(v) for v in alpha])
    rng = _random.Random(0)
    for _attempt in range(64):
        p, q = dom.side_points(alpha, beta, rng)
        lp, lq = _dot(alpha, p) + beta, _dot(alpha, q) + beta
        s = lp / (lp - lq)
        x_h = tuple(pi + s * (qi - pi) for pi, qi in zip(p, q, strict=True))  # on the hyperplane, inside D
        # the step: inside D, and a quarter of the (float-estimated) distance to the nearest other hyperplane
        xf = np.array([float(v) for v in x_h] + [1.0])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            val = np.abs(others @ xf)
            slope = np.abs(others[:, :m] @ af)
            ratio = np.where(slope > 0, val / slope, np.inf)
        gap = float(ratio.min()) if ratio.size else math.inf
        ups = dom.step(x_h, alpha)
        dns = dom.step(x_h, tuple(-v for v in alpha))
        limit = min(t for t in (ups, dns, Fraction(1)) if t is not None)
        eps = limit / 2
        if math.isfinite(gap) and gap > 0:
            g = Fraction(2) ** math.floor(math.log2(gap / 4)) if gap / 4 > 2.0**-1000 else Fraction(0)
            if 0 < g < eps:
                eps = g
        elif gap == 0:
            continue  # x_h lies on another hyperplane (in floats at least): draw again
        for _ in range(12):
            for sign in (1, -1, 0):
                x = tuple(xi + sign * eps * ai for xi, ai in zip(x_h, alpha, strict=True))
                if dom.contains(x, strict=True):
                    found = _differs(net1, net2, x)
                    if found is not None:
                        return found
            eps /= 16
    raise AssertionError("no counterexample found although the restricted normal forms differ")  # pragma: no cover


def _integer_row(h: HyperplaneClasses, j: int) -> tuple[np.ndarray, int]:
    """The hyperplane of class j as integers (W, w0), proportional to (a, b) of its representative neuron."""
    row = h.row(int(h.rep[j]))
    if row.dtype != object:
        ints = row_integers(row.astype(np.float64)[None, :])[0]
    else:
        fr = [Fraction(v) for v in row.tolist()]
        den = math.lcm(*(v.denominator for v in fr))
        ints = [v.numerator * (den // v.denominator) for v in fr]
    W = np.empty(len(ints) - 1, dtype=object)
    W[:] = [int(v) for v in ints[:-1]]
    return W, int(ints[-1])


def _box_counterexample(net1: Network, net2: Network, box: Box, W: np.ndarray, w0: int, others: np.ndarray) -> _Found:
    """A point of the open box next to the hyperplane W·x + w0 = 0, off the other hyperplanes, where the two
    networks differ.  The same construction as for a polytope (random interior points on both sides, joined,
    then a step along the normal), in integers over a common denominator: no per-coordinate Fractions."""
    m = len(W)
    Db = math.lcm(*(v.denominator for v in box.lo + box.hi))
    LO = np.empty(m, dtype=object)
    HI = np.empty(m, dtype=object)
    LO[:] = [int(v * Db) for v in box.lo]
    HI[:] = [int(v * Db) for v in box.hi]
    pos, neg = W > 0, W < 0
    # corners minimising and maximising W·x, on the denominator D0 = 128·Db (coordinates with W_j = 0: the middle)
    D0 = 128 * Db
    mid = (LO + HI) * 64
    cmin = np.where(pos, LO * 128, np.where(neg, HI * 128, mid))
    cmax = np.where(pos, HI * 128, np.where(neg, LO * 128, mid))
    Wf = np.array([float(v) for v in W.tolist()])
    wbits = max(int(abs(v)).bit_length() for v in W.tolist())
    rng = np.random.default_rng(0)
    for _attempt in range(64):
        pts = []
        for V in (cmin, cmax):
            k = rng.integers(1, 64, size=m).astype(object)
            R = (LO * 64 + (HI - LO) * k) * 2
            Lv, Lr = int(W.dot(V)) + w0 * D0, int(W.dot(R)) + w0 * D0
            if Lr != 0 and (Lr < 0) == (Lv < 0):
                pts.append((R, D0))
                continue
            bound = Fraction(Lv, Lv - Lr)  # W·x + w0 keeps the sign of Lv along V + δ(R − V) for δ < bound
            delta = min(bound / 2, Fraction(1, 2)) * Fraction(int(rng.integers(1, 9)), 8)
            pts.append((V * delta.denominator + (R - V) * delta.numerator, D0 * delta.denominator))
        (Xp, Dp), (Xq, Dq) = pts
        Xp, Xq, D = Xp * Dq, Xq * Dp, Dp * Dq
        Lp, Lq = int(W.dot(Xp)) + w0 * D, int(W.dot(Xq)) + w0 * D  # Lp < 0 < Lq
        Xh = Xp * Lq - Xq * Lp  # the point of the segment on the hyperplane, over Dh
        Dh = D * (Lq - Lp)
        g = math.gcd(Dh, *(int(v) for v in Xh.tolist()))
        if g > 1:
            Xh = Xh // g
            Dh //= g
        xf = np.array([int(v) / Dh for v in Xh.tolist()] + [1.0])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            val = np.abs(others @ xf)
            slope = np.abs(others[:, :m] @ Wf)
            ratio = np.where(slope > 0, val / slope, np.inf)
            lo_f = np.array([float(v) for v in box.lo])
            hi_f = np.array([float(v) for v in box.hi])
            room = np.where(Wf > 0, (hi_f - xf[:m]) / Wf, np.where(Wf < 0, (lo_f - xf[:m]) / Wf, np.inf))
            room2 = np.where(Wf > 0, (xf[:m] - lo_f) / Wf, np.where(Wf < 0, (xf[:m] - hi_f) / Wf, np.inf))
        gap = float(ratio.min()) if ratio.size else math.inf
        if gap == 0:
            continue  # on another hyperplane (in floats at least): draw again
        limit = min(gap / 4, float(room.min()) / 2, float(room2.min()) / 2, 1.0)
        if not limit > 0:
            continue
        e = math.floor(math.log2(limit)) if limit > 2.0**-1070 else -1070
        for _ in range(12):
            for sign in (1, -1, 0):
                # x = Xh/Dh + sign·2^e·W
                if e < 0:
                    X, Dx = Xh * (1 << -e) + W * (sign * Dh), Dh << -e
                else:
                    X, Dx = Xh + W * (sign * Dh << e), Dh
                XD = X * Db
                if all(LO * Dx < XD) and all(XD < HI * Dx):
                    for x in (_dyadic_near(X, Dx, e, wbits, box), tuple(Fraction(int(v), Dx) for v in X.tolist())):
                        found = _differs(net1, net2, x) if x is not None else None
                        if found is not None:
                            return found
            e -= 4
    raise AssertionError("no counterexample found although the restricted normal forms differ")  # pragma: no cover


def _dyadic_near(X: np.ndarray, Dx: int, e: int, wbits: int, box: Box) -> tuple[Fraction, ...] | None:
    """X/Dx rounded to a multiple of 2^-s, with 2^-s well below the step 2^e·W taken off the hyperplane (so the
    rounded point is usually on the same side of every hyperplane): a short point that is cheap to evaluate
    exactly.  None when it leaves the open box; the caller checks it by exact evaluation in any case."""
    m = len(X)
    s = max(16, -e - wbits + (4 * m).bit_length() + 12)
    if Dx.bit_length() <= s:
        return None  # not shorter than the point itself
    x = tuple(Fraction((int(v) << s) // Dx, 1 << s) for v in X.tolist())
    return x if box.contains(x, strict=True) else None


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
        V = _concat([net1.V, _neg(net2.V)], axis=1)
        A = _concat([net1.A, net2.A], axis=0)
        b = _concat([net1.b, net2.b], axis=0)
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
            mn, mx = bi, bi
            for aj, l, h in zip(a, lo, hi, strict=True):
                if aj > 0:
                    mn += aj * l
                    mx += aj * h
                elif aj < 0:
                    mn += aj * h
                    mx += aj * l
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
            amin, amax = const[r], const[r]
            for j in range(m):
                cj = lin[r][j]
                if cj > 0:
                    amin += cj * lo[j]
                    amax += cj * hi[j]
                elif cj < 0:
                    amin += cj * hi[j]
                    amax += cj * lo[j]
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
    t_end = time.perf_counter() + time_limit
    for r in range(V.shape[0]):
        lin = V[r, act] @ A[act] if len(act) else np.zeros(m)
        off = c[r] + (V[r, act] @ b[act] if len(act) else 0.0)
        obj = np.concatenate([lin, V[r, cross], np.zeros(nc)])
        for sgn in (1.0, -1.0):
            left = t_end - time.perf_counter()
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
    if norm not in ("max", "inf", "linf"):
        raise InvalidNetworkError(f"norm must be 'max' (the sup over the box of the max over outputs), got {norm!r}")
    check_pair(net1, net2, "distance")
    dom = as_domain(domain, net1.m)
    if not isinstance(dom, Box):
        raise InvalidNetworkError("distance on a domain needs a Box (a polytope is not supported there)")
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
    t_end = time.perf_counter() + budget
    if m <= 10:
        for corner in range(1 << m):
            consider(tuple(dom.hi[j] if corner >> j & 1 else dom.lo[j] for j in range(m)))
            if time.perf_counter() > t_end - 3 * budget / 4:
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
    while heap and time.perf_counter() < t_end and regions < max_regions:
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
