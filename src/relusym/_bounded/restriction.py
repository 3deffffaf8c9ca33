"""The restricted network θ_D of a network on a domain D and its normal form NF_D(θ), a complete invariant of the
restriction ρ(θ)|_D (docs/math/domains.md): the neurons zero on D dropped, each affine one given a mirror."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from relusym._base.document import check_schema
from relusym._bounded.domain import AFFINE, CROSSING, ZERO, Box, Polytope, as_domain, domain_from_dict
from relusym._core.classes import HyperplaneClasses, hyperplane_classes
from relusym._core.network import Network
from relusym._core.normal_form import Difference, NormalForm, compare
from relusym._exact.mantissas import exact_matmul, integer_matrix
from relusym._exact.numbers import fractions_of
from relusym.errors import InvalidNetworkError

__all__ = [
    "neuron_status",
    "restrict",
    "Restricted",
    "restricted",
    "total_difference",
    "concat",
    "negated",
    "DomainNormalForm",
    "normal_form_on",
]


# ----------------------------------------------------------------------------------------------------------
# the restricted network


def neuron_status(net: Network, domain: Any) -> np.ndarray:
    """For each neuron: 0 zero on the domain, 1 affine on it, 2 its hyperplane crosses the interior (exact)."""
    dom = as_domain(domain, net.m)
    return dom.status(net.A, net.b)


def negated(x: np.ndarray) -> np.ndarray:
    return -x if x.dtype != object else np.array([-v for v in x.ravel().tolist()], dtype=object).reshape(x.shape)


def concat(parts: list[np.ndarray], axis: int) -> np.ndarray:
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
    V = concat([net.V[:, keep], negated(net.V[:, mirror])], axis=1)
    A = concat([net.A[keep], negated(net.A[mirror])], axis=0)
    b = concat([net.b[keep], negated(net.b[mirror])], axis=0)
    return Network(V, A, b, net.c, m=net.m)


# when k·(number of affine neurons)·m is at most this, their affine map is summed exactly instead of mirrored
_DIRECT_AFFINE = 300_000


@dataclass(frozen=True, eq=False)
class Restricted:
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


def restricted(net: Network, dom: Box | Polytope, status: np.ndarray) -> Restricted:
    """The restriction of θ to D: the crossing neurons as classes, and the affine neurons either kept apart and
    summed exactly (when there are few of them) or given mirrors (see :func:`restrict`).  Both describe the same
    normal form on D."""
    aff = np.nonzero(status == AFFINE)[0]
    if aff.size and net.k * aff.size * net.m <= _DIRECT_AFFINE:
        keep = status == CROSSING
        sub = Network(net.V[:, keep], net.A[keep], net.b[keep], net.c, m=net.m)
        return Restricted(hyperplane_classes(sub), (net.V[:, aff], net.A[aff], net.b[aff]))
    return Restricted(hyperplane_classes(restrict(net, dom, status)))


def _sparse_product(X: np.ndarray, Y: np.ndarray) -> dict[tuple[int, int], Fraction]:
    """The nonzero entries of X @ Y, exactly (one integer matrix product)."""
    xi, xs = integer_matrix(X)
    yi, ys = integer_matrix(Y)
    prod = xi.dot(yi) if X.shape[1] else np.zeros((X.shape[0], Y.shape[1]), dtype=object)
    scale = xs * ys
    return {(int(r), int(c)): Fraction(int(prod[r, c])) * scale for r, c in zip(*np.nonzero(prod != 0), strict=True)}


def total_difference(r1: Restricted, r2: Restricted) -> Difference:
    """The exact difference of two normal forms on D (classes compared exactly, then the affine neurons)."""
    diff = compare(r1.classes, r2.classes)
    if r1.affine is None and r2.affine is None:
        return diff
    parts = [(r.affine, sign) for r, sign in ((r1, 1), (r2, -1)) if r.affine is not None]
    V = concat([Va if sign > 0 else negated(Va) for (Va, _, _), sign in parts], axis=1)
    A = concat([Aa for (_, Aa, _), _ in parts], axis=0)
    b = concat([ba for (_, _, ba), _ in parts], axis=0)
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

    SCHEMA: ClassVar[str] = "relusym.domain-normal-form/1"

    __slots__ = ("domain", "_restricted")

    domain: Box | Polytope
    _restricted: Restricted

    def __init__(self, restricted: Restricted, domain: Box | Polytope) -> None:
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
        return total_difference(self._restricted, other._restricted).zero

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

        check_schema(d, cls.SCHEMA, "normal form on a domain")
        dom = d.get("domain")
        if not isinstance(dom, dict) or dom.get("type") not in ("box", "polytope"):
            raise InvalidNetworkError("not a normal form on a domain: no 'domain' object of type box or polytope")
        return normal_form_on(realize(d), domain_from_dict(dom))

    def __repr__(self) -> str:
        return f"DomainNormalForm(m={self.m}, k={self.k}, N={self.N}, domain={self.domain!r})"


def normal_form_on(net: Network, domain: Any) -> DomainNormalForm:
    """NF(θ) on a domain: the crossing classes with their kinks, plus the affine map the rest add up to."""
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"normal_form needs a Network, got {type(net).__name__}")
    dom = as_domain(domain, net.m)
    return DomainNormalForm(restricted(net, dom, dom.status(net.A, net.b)), dom)
