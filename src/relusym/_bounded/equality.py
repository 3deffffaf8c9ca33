"""Deciding equality of two one-hidden-layer networks on a domain (docs/math/domains.md): the normal forms of the
restricted networks compared exactly, with a certificate of the neurons' kinds, or a counterexample inside the
domain verified by exact evaluation."""

from __future__ import annotations

import math
import random as _random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._bounded.domain import AFFINE, CROSSING, ZERO, Box, Polytope, as_domain, dot
from relusym._bounded.restriction import DomainNormalForm, Restricted, restricted, total_difference
from relusym._core import equivalence as _equivalence
from relusym._core.classes import HyperplaneClasses
from relusym._core.network import Network, check_pair
from relusym._exact.mantissas import row_integers

__all__ = ["DomainCertificate", "DomainVerdict", "equivalent_on"]


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
    _restricted: Restricted | None = field(default=None, repr=False, compare=False)

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
            "schema": "relusym.domain-verdict/1",
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
    r1, r2 = restricted(net1, dom, s1), restricted(net2, dom, s2)
    h1, h2 = r1.classes, r2.classes
    diff = total_difference(r1, r2)
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
        lp, lq = dot(alpha, p) + beta, dot(alpha, q) + beta
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
