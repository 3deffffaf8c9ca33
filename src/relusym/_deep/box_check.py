"""Re-checking the certificates of unit statuses on a domain (:mod:`relusym._deep.status`), exactly and
independently of how they were found: crossing witnesses evaluated exactly inside the domain; dead/active proofs
by regions that cover the domain's box, each region's bound recomputed in exact arithmetic (interval bounds or a
Lagrangian dual proof); phase branch and bound proofs by leaves whose fixes cover every input, each leaf's dual
proof exact (docs/math/deep-box.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from relusym._bounded.domain import Polytope, as_domain
from relusym._deep.bab_phase import Leaf, TightBounds, check_leaf, covers, tight_bounds
from relusym._deep.bounds import BoundTable, ExactLayers, Region, certified_bounds, exact_preactivations, unit_bound
from relusym._deep.lp import DualProof, check_proof
from relusym._deep.mlp import MLP, as_mlp
from relusym._deep.status import (
    ACTIVE,
    CROSSING,
    DEAD,
    UnitCertificate,
    bounding_box,
    first_layer_exact,
    interval_unit,
)
from relusym._deep.units_cells import unit_interval
from relusym._deep.units_leaves import LeafTables
from relusym._exact.numbers import common_denominator

__all__ = ["check_certificate", "check_certificates"]


def _covers(regions: Sequence[Region], root: Region) -> bool:
    """The boxes lie in ``root``, have pairwise disjoint interiors and fill its volume: they cover it.

    The coordinates are read as integers over one denominator per axis; disjointness by a sweep along the first
    axis (each box compared with the boxes whose first side overlaps its own)."""
    m = len(root[0])
    dens = [common_denominator([v for r in list(regions) + [root] for v in (r[0][t], r[1][t])]) for t in range(m)]

    def ints(p: Sequence[Fraction]) -> tuple[int, ...]:
        return tuple(v.numerator * (d // v.denominator) for v, d in zip(p, dens, strict=True))

    lo0, hi0 = ints(root[0]), ints(root[1])
    boxes = sorted((ints(r[0]), ints(r[1])) for r in regions)
    vol = 0
    for a, b in boxes:
        if any(x < la or y > hb or x >= y for x, y, la, hb in zip(a, b, lo0, hi0, strict=True)):
            return False
        vol += math.prod(y - x for x, y in zip(a, b, strict=True))
    active: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for a, b in boxes:
        active = [s for s in active if s[1][0] > a[0]]
        for c, d in active:
            if all(max(x, z) < min(y, w) for x, y, z, w in zip(a, b, c, d, strict=True)):
                return False
        active.append((a, b))
    return vol == math.prod(y - x for x, y in zip(lo0, hi0, strict=True))


class _Checker:
    """What checking certificates of one network on one domain shares: the exact layers, the domain's box and
    the bound tables of the regions (a table for more layers holds the same bounds for the earlier ones)."""

    def __init__(self, net: Any, domain: Any) -> None:
        self.mlp = as_mlp(net)
        self.dom = as_domain(domain, self.mlp.m)
        self.layers = ExactLayers.of(self.mlp)
        self._root: Region | None = None
        self._first: tuple[list[Fraction], list[Fraction]] | None = None
        self._tables: dict[Region, BoundTable] = {}
        self._tight: dict[int, tuple[TightBounds, tuple[list[list[Fraction]], list[list[Fraction]]] | None]] = {}
        self._leaves = LeafTables(self.layers)

    @property
    def root(self) -> Region:
        if self._root is None:
            self._root = bounding_box(self.dom)
        return self._root

    def table(self, r: Region, upto: int) -> BoundTable:
        t = self._tables.get(r)
        if t is None or len(t.lower) <= upto:
            first = None
            if isinstance(self.dom, Polytope) and r == self.root:
                if self._first is None:
                    self._first = first_layer_exact(self.dom, self.layers)
                first = self._first
            t = certified_bounds(self.layers, r[0], r[1], upto, first=first)
            self._tables[r] = t
        return t

    def tight(self, tb: TightBounds) -> tuple[list[list[Fraction]], list[list[Fraction]]] | None:
        hit = self._tight.get(id(tb))
        if hit is None or hit[0] is not tb:
            hit = (tb, tight_bounds(self.layers, tb))
            self._tight[id(tb)] = hit
        return hit[1]

    def check(self, cert: UnitCertificate) -> bool:
        layers = self.layers
        ell, j = cert.layer - 1, cert.unit
        if not (0 <= ell < layers.hidden and 0 <= j < layers.widths[ell + 1]):
            return False
        if cert.status == CROSSING:
            return self._check_crossing(cert)
        if cert.status not in (DEAD, ACTIVE) or cert.bound is None:
            return False
        if cert.method == "phase-bab":
            return _check_phases(self, cert)
        if cert.method == "cells":
            return _check_cells(self, cert)
        return self._check_regions(cert)

    def _check_crossing(self, cert: UnitCertificate) -> bool:
        """Two inputs of the domain, exactly evaluated: strictly negative and strictly positive."""
        ell, j = cert.layer - 1, cert.unit
        if cert.negative is None or cert.positive is None:
            return False
        if not (self.dom.contains(cert.negative) and self.dom.contains(cert.positive)):
            return False
        zn = exact_preactivations(self.layers, cert.negative)[ell][j]
        zp = exact_preactivations(self.layers, cert.positive)[ell][j]
        return zn < 0 < zp and cert.values == (zn, zp)

    def _check_regions(self, cert: UnitCertificate) -> bool:
        """Regions covering the domain's box, each with its bound recomputed exactly (interval or dual proof)."""
        ell = cert.layer - 1
        if not _covers(cert.regions, self.root):
            return False
        if cert.proofs and len(cert.proofs) != len(cert.regions):
            return False
        lp = cert.method == "lp"
        if lp and (ell == 0 or len(cert.proofs) != len(cert.regions)):
            return False
        dead = cert.status == DEAD
        worst: Fraction | None = None
        if cert.method == "cover" and ell > 0 and not cert.proofs:
            # every leaf's unit_bound from its certified_bounds table, the tables in batches (units_leaves: the
            # same rationals as leaf by leaf)
            vals = self._leaves.unit_bounds(list(cert.regions), ell, cert.unit, -1 if dead else 1)
            worst = max(vals) if dead else min(vals)
            return worst == cert.bound and (worst <= 0 if dead else worst >= 0)
        for i, r in enumerate(cert.regions):
            v = self._region_bound(cert, r, cert.proofs[i] if cert.proofs else None, lp)
            if v is None:
                return False
            if worst is None or (v > worst if dead else v < worst):
                worst = v
        if worst is None:
            return False
        return worst == cert.bound and (worst <= 0 if dead else worst >= 0)

    def _region_bound(self, cert: UnitCertificate, r: Region, p: DualProof | None, lp: bool) -> Fraction | None:
        """The unit's bound on one region (None when the region's proof fails)."""
        layers = self.layers
        ell, j = cert.layer - 1, cert.unit
        dead = cert.status == DEAD
        if cert.method == "cover":
            if ell == 0:
                return None
            t = self.table(r, ell - 1)
            return unit_bound(layers, r[0], r[1], t.lower, t.upper, ell, j, -1 if dead else 1)
        t = self.table(r, ell - 1 if lp else ell)
        if lp:
            il, iu = interval_unit(layers, t, ell, j)
            v = iu if dead else il
        else:
            v = t.raw_upper[ell][j] if dead else t.raw_lower[ell][j]
        if p is not None:
            if (p.layer, p.unit, p.sign) != (ell, j, 1 if dead else -1):
                return None
            if not check_proof(layers, p, r, t.lower, t.upper):
                return None
            v = min(v, p.value) if dead else max(v, -p.value)
        return v


def check_certificate(net: MLP, domain: Any, cert: UnitCertificate) -> bool:
    """Re-check one certificate exactly: the witnesses' values by exact evaluation (and that they lie in the
    domain), or every region's bound recomputed exactly and the regions covering the domain's box."""
    return _Checker(net, domain).check(cert)


def check_certificates(net: MLP, domain: Any, certs: Sequence[UnitCertificate]) -> list[bool]:
    """:func:`check_certificate` for many certificates of one network and domain, the exact bound tables of the
    regions computed once and shared (each certificate is still checked on its own)."""
    checker = _Checker(net, domain)
    return [checker.check(c) for c in certs]


def _check_phases(ck: _Checker, cert: UnitCertificate) -> bool:
    """A phase branch and bound certificate: the bounds of the earlier layers recomputed (the box's table, or the
    LP-tightened bounds from their proofs), the leaves' fixes covering every input, each leaf's proof exact."""
    layers, root = ck.layers, ck.root
    ell, j = cert.layer - 1, cert.unit
    if ell < 1 or cert.regions != (root,) or not cert.phases or len(cert.phases) != len(cert.proofs):
        return False
    t = ck.table(root, ell - 1)
    lower: Sequence[Sequence[Fraction]] = t.lower
    upper: Sequence[Sequence[Fraction]] = t.upper
    if cert.tight is not None:
        tb = cert.tight
        if tb.box != root or tb.first != (t.lower[0], t.upper[0]):
            return False
        lu = ck.tight(tb)
        if lu is None or len(lu[0]) < ell:
            return False
        lower, upper = lu
    if not covers(cert.phases):
        return False
    sign = 1 if cert.status == DEAD else -1
    worst: Fraction | None = None
    for fixes, p in zip(cert.phases, cert.proofs, strict=True):
        if p is None or not check_leaf(layers, Leaf(tuple(fixes), p), root, lower, upper, ell, j, sign):
            return False
        worst = p.value if worst is None else max(worst, p.value)
    assert worst is not None
    return cert.bound == (worst if sign > 0 else -worst)


def _check_cells(ck: _Checker, cert: UnitCertificate) -> bool:
    """A certificate of input splitting finished by phase splitting (:mod:`relusym._deep.units_cells`): the
    distinct regions tile the domain's box, the fix sets of each region cover it, and every leaf's bound is
    recomputed on its region's exact table (the fixes applied): the dual proof's value, or with no proof and no
    fixes the region's interval bound; each ≤ 0, the worst equal to the certificate's bound."""
    layers = ck.layers
    ell, j = cert.layer - 1, cert.unit
    n = len(cert.regions)
    if ell < 1 or n == 0 or len(cert.phases) != n or len(cert.proofs) != n:
        return False
    groups: dict[Region, list[int]] = {}
    for i, r in enumerate(cert.regions):
        groups.setdefault(r, []).append(i)
    if not _covers(list(groups), ck.root):
        return False
    sign = 1 if cert.status == DEAD else -1
    worst: Fraction | None = None
    for r, idx in groups.items():
        if not covers([cert.phases[i] for i in idx]):
            return False
        t = ck.table(r, ell - 1)
        for i in idx:
            fixes, p = tuple(cert.phases[i]), cert.proofs[i]
            if p is None:
                il, iu = unit_interval(layers, t, ell, j)
                v = iu if sign > 0 else -il
                if fixes or v > 0:
                    return False
            elif check_leaf(layers, Leaf(fixes, p), r, t.lower, t.upper, ell, j, sign):
                v = p.value
            else:
                return False
            worst = v if worst is None else max(worst, v)
    assert worst is not None
    return cert.bound == (worst if sign > 0 else -worst)
