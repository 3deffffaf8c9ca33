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

This module holds the domains themselves (``Box``, ``Polytope``, ``as_domain``) and the kinds of neuron; the
restricted network and its normal form are in :mod:`relusym._bounded.restriction`, the decision in
:mod:`relusym._bounded.equality`, the max-norm distance in :mod:`relusym._bounded.distance`.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._exact.hashing import float_key
from relusym._exact.numbers import fraction_str, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["Box", "Polytope", "Domain", "as_domain", "domain_from_dict", "ZERO", "AFFINE", "CROSSING", "dot"]

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


def dot(a: Sequence[Fraction], x: Sequence[Fraction]) -> Fraction:
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
        lv = dot(a, v) + beta
        r = dom.random_interior(rng)
        lr = dot(a, r) + beta
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
        vals = [dot(row, x) - bi for row, bi in zip(self.A, self.b, strict=True)]
        return all(v < 0 for v in vals) if strict else all(v <= 0 for v in vals)

    def _optimum(self, a: Sequence[Fraction], sign: int) -> tuple[Fraction | None, tuple[Fraction, ...]]:
        """(max of sign·a·x over P or None when unbounded, a point reaching it (or far along the ray))."""
        x0 = self.interior
        G = [list(row) for row in self.A]
        h = [bi - dot(row, x0) for row, bi in zip(self.A, self.b, strict=True)]
        bounded, y, val = _simplex_max(G, h, [sign * v for v in a])
        pt = tuple(xi + yi for xi, yi in zip(x0, y, strict=True))
        return (sign * dot(a, x0) + val if bounded else None), pt

    def range_of(self, a: Sequence[Fraction], beta: Fraction) -> tuple[Fraction | None, Fraction | None]:
        """(min, max) of a·x + β over P, exactly (None for −∞ / +∞)."""
        mx, _ = self._optimum(a, 1)
        mn, _ = self._optimum(a, -1)
        return (None if mn is None else beta - mn), (None if mx is None else beta + mx)

    def step(self, x: Sequence[Fraction], d: Sequence[Fraction]) -> Fraction | None:
        best: Fraction | None = None
        for row, bi in zip(self.A, self.b, strict=True):
            ad = dot(row, d)
            if ad > 0:
                t = (bi - dot(row, x)) / ad
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
            if sign * (dot(a, q) + beta) >= 0:
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
            l0 = dot(a, x0) + beta
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
        l0 = dot(a, x0) + beta
        pts = []
        for sgn in (-1, 1):
            if l0 * sgn > 0:
                pts.append(x0)
                continue
            # maximise sgn·ℓ over P, capped at sgn·ℓ ≤ 1 so that the LP is bounded (the cap row holds at x0)
            G = [list(row) for row in self.A] + [[sgn * ai for ai in a]]
            h = [bi - dot(row, x0) for row, bi in zip(self.A, self.b, strict=True)] + [1 - sgn * l0]
            _, y, _ = _simplex_max(G, h, [sgn * ai for ai in a])
            pts.append(tuple(xi + yi for xi, yi in zip(x0, y, strict=True)))
        return _side_points(self, a, beta, rng, pts[0], pts[1])


Domain = Box | Polytope


def domain_from_dict(d: Any) -> Box | Polytope:
    """A domain from its ``to_dict()`` form (``type`` says which kind of domain the object is: ``box`` or
    ``polytope``); the round trip gives an equal domain."""
    kind = d.get("type") if isinstance(d, dict) else None
    if kind == "box":
        return Box(d["lo"], d["hi"])
    if kind == "polytope":
        return Polytope(d["A_ineq"], d["b_ineq"])
    raise InvalidNetworkError("not a domain: no object of type box or polytope")


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
