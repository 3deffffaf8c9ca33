"""The hyperplane classes of one network: λ_i, the neuron types, the classes û = w_i / λ_i grouped by hash and
split exactly, their kinks κ_û and negative kinks s_û (docs/math/realization.md, docs/math/normal-form.md).

Exactness without per-entry Fractions: classes are grouped by the float64 value of û, which is correctly
rounded, so equal rationals always give equal keys; every group of two or more rows is then checked exactly.
When all entries fit in float32, the products |λ_i| v_i and the cross-multiplications used in the checks are
exact in float64; otherwise the same code runs on Fractions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from relusym._core.network import Network, NeuronType
from relusym._core.rationals import exact_quotients
from relusym._exact.dtypes import exactly_in_dtype
from relusym._exact.hashing import (
    exact_float,
    exact_products,
    float_key,
    quotient_row_hashes,
    row_hash,
    rows_proportional,
)
from relusym._exact.numbers import exact_view, fractions_of, to_fraction

_ZERO: Any = Fraction(0)
_KEY_ROWS = 128  # rows per block of HyperplaneClasses.keys

__all__ = ["HyperplaneClasses", "hyperplane_classes"]


def _to_frac_rows(x: np.ndarray) -> list[tuple[Fraction, ...]]:
    return [tuple(Fraction(v) for v in row) for row in x.tolist()]


@dataclass(frozen=True, eq=False)
class HyperplaneClasses:
    """The decomposition of docs/math/normal-form.md of one network: its hyperplane classes, kinks and negative kinks.

    Class j has representative neuron ``rep[j]``; ``A`` and ``b`` are the network's arrays in the exact view
    of :func:`relusym._exact.numbers.exact_view` and ``lam`` holds λ_i (float64 or Fractions), so
    û_j = (A[rep[j]], b[rep[j]]) / lam[rep[j]].  ``label[i]`` is the class of neuron i (−1 for null and
    constant neurons).  ``khash`` is a 64-bit hash of the correctly rounded float64 value of û (equal classes
    of two networks always have equal hashes; every match is verified exactly).
    """

    net: Network
    A: np.ndarray
    b: np.ndarray
    lam: np.ndarray  # (n,) λ_i (0 where a_i = 0)
    neuron_type: np.ndarray  # (n,) NeuronType values: NULL, CONSTANT, HYPERPLANE
    label: np.ndarray  # (n,) class index or -1
    khash: np.ndarray  # (N,) uint64
    rep: np.ndarray  # (N,) representative neuron
    kappa: np.ndarray  # N × k exact
    s: np.ndarray  # N × k exact negative kinks
    const: tuple[Fraction, ...]  # c + Σ_const b_i v_i
    sizes: np.ndarray = field(repr=False)  # (N,) neurons per class

    @property
    def m(self) -> int:
        return self.net.m

    @property
    def k(self) -> int:
        return self.net.k

    @property
    def N_all(self) -> int:
        return int(self.rep.shape[0])

    def row(self, i: int) -> np.ndarray:
        """w_i = (a_i, b_i) in the exact view."""
        return (
            np.append(self.A[i], self.b[i])
            if self.A.dtype != object
            else np.array(list(self.A[i]) + [self.b[i]], dtype=object)
        )

    def u_exact(self, j: int) -> tuple[Fraction, ...]:
        """û_j as exact rationals."""
        i = int(self.rep[j])
        lam = Fraction(self.lam[i])
        return tuple(Fraction(x) / lam for x in self.row(i).tolist())

    def u_exact_many(self, classes: list[int]) -> list[tuple[Fraction, ...]]:
        """û_j for several classes (float networks: the quotients reduced on integer mantissas in numpy, one
        Fraction per entry built without another gcd; see :mod:`relusym._core.rationals`)."""
        if not classes:
            return []
        if self.A.dtype == object:
            return [self.u_exact(j) for j in classes]
        reps = self.rep[classes]
        W = np.concatenate([self.A[reps].astype(np.float64), self.b[reps].astype(np.float64)[:, None]], axis=1)
        return [tuple(row) for row in exact_quotients(W, self.lam[reps]).tolist()]

    def kappa_exact(self, j: int) -> tuple[Fraction, ...]:
        return tuple(Fraction(x) for x in self.kappa[j].tolist())

    def s_exact(self, j: int) -> tuple[Fraction, ...]:
        return tuple(Fraction(x) for x in self.s[j].tolist())

    @cached_property
    def kink_mask(self) -> np.ndarray:
        """Classes whose kink is nonzero (the classes U* of the normal form)."""
        return (self.kappa != 0).any(axis=1) if self.N_all else np.zeros(0, dtype=bool)

    @cached_property
    @np.errstate(over="ignore")  # a class beyond float range gets the key ±inf (a hash key; checked exactly)
    def keys(self) -> np.ndarray:
        """N × (m+1) float64 values of the û (correctly rounded), for screening and display."""
        if self.N_all == 0:
            return np.zeros((0, self.m + 1))
        i = self.rep
        lam = self.lam[i]
        if self.A.dtype == object:
            return float_key(np.concatenate([self.A[i] / lam[:, None], (self.b[i] / lam)[:, None]], axis=1))
        out = np.empty((self.N_all, self.m + 1))  # float64 quotients of exact operands, a block of rows at a time
        for s0 in range(0, self.N_all, _KEY_ROWS):
            rows = i[s0 : s0 + _KEY_ROWS]
            np.divide(self.A[rows], lam[s0 : s0 + _KEY_ROWS, None], out=out[s0 : s0 + _KEY_ROWS, : self.m])
        np.divide(self.b[i], lam, out=out[:, self.m])
        out += 0.0  # -0.0 -> 0.0
        return out

    @cached_property
    def row_label(self) -> np.ndarray:
        """The classes of all rows w_i = (a_i, b_i) with a_i ≠ 0, whatever v_i (−1 where a_i = 0): ``label``
        leaves out the neurons with v_i = 0, the genericity condition G-b does not.  Equal labels mean
        proportional rows (grouped by hash, then checked exactly, as the classes are)."""
        has_a = np.asarray(self.lam != 0, dtype=bool)  # λ_i is the first nonzero entry of a_i, 0 when a_i = 0
        if int((self.neuron_type == NeuronType.HYPERPLANE).sum()) == int(has_a.sum()):
            return self.label
        idx = np.nonzero(has_a)[0]
        lab, _ = _group_exact(self.A, self.b, self.lam, idx, _class_hashes(self.A, self.b, self.lam, idx))
        out = np.full(self.lam.shape[0], -1, dtype=np.int64)
        out[idx] = lab
        return out


@np.errstate(over="ignore")  # keys beyond float range become ±inf: still equal for equal rationals
def _class_hashes(A: np.ndarray, b: np.ndarray, lam: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """64-bit hashes of the float64 keys of û_i = w_i / λ_i for the neurons idx."""
    if idx.shape[0] == 0:
        return np.zeros(0, dtype=np.uint64)
    all_rows = idx.shape[0] == A.shape[0]
    lh = lam[idx]
    Fb = float_key((b if all_rows else b[idx]) / lh)
    tail = row_hash(Fb[:, None], offset=A.shape[1])
    if A.dtype == object:
        return np.asarray(row_hash(float_key((A if all_rows else A[idx]) / lh[:, None])) + tail)
    return np.asarray(quotient_row_hashes(A, lh, None if all_rows else idx) + tail)


def _group_exact(
    A: np.ndarray, b: np.ndarray, lam: np.ndarray, idx: np.ndarray, hashes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Group neurons idx by hash, then split each group exactly.  Returns (label per idx, rep positions)."""
    nh = idx.shape[0]
    if nh == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    _, first, inv, counts = np.unique(hashes, return_index=True, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    label = inv.astype(np.int64)
    reps = first.astype(np.int64)
    multi = np.nonzero(counts > 1)[0]
    if multi.size:
        extra: list[int] = []
        next_label = reps.shape[0]
        order = np.argsort(inv, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)])
        for g in multi.tolist():
            members = order[starts[g] : starts[g + 1]]
            class_reps: list[tuple[int, int]] = []  # (position in idx, label)
            for pos in members.tolist():
                i = int(idx[pos])
                for rpos, lab in class_reps:
                    r = int(idx[rpos])
                    if bool(rows_proportional(A[[i]], lam[[r]], A[[r]], lam[[i]])[0]) and bool(
                        rows_proportional(b[[i]][:, None], lam[[r]], b[[r]][:, None], lam[[i]])[0]
                    ):
                        label[pos] = lab
                        break
                else:
                    if not class_reps:
                        lab = g
                        reps[g] = pos
                    else:
                        lab = next_label
                        next_label += 1
                        extra.append(pos)
                    label[pos] = lab
                    class_reps.append((pos, lab))
        if extra:
            reps = np.concatenate([reps, np.asarray(extra, dtype=np.int64)])
    return label, reps


def _class_sums(values: np.ndarray, label: np.ndarray, N: int, sizes: np.ndarray) -> np.ndarray:
    """Exact per-class sums of the rows of ``values`` (float64-exact or Fractions)."""
    k = values.shape[1]
    if values.dtype != object and (sizes <= 1).all():
        out = np.zeros((N, k), dtype=np.float64)
        if label.size:
            out[label] = values
        return out
    if values.dtype != object:
        out = np.zeros((N, k), dtype=np.float64)
        single = sizes[label] == 1
        out[label[single]] = values[single]
        multi = np.nonzero(~single)[0]
        slow = _float_class_sums(values, label, multi, out)
        if slow.size == 0:
            return out
        # sums of several exact floats that round: add in Fractions, keep floats if the sums are representable
        acc: dict[int, list[Fraction]] = {}
        for i in multi[np.isin(label[multi], slow)].tolist():
            row = acc.setdefault(int(label[i]), [Fraction(0)] * k)
            for r, v in enumerate(values[i].tolist()):
                row[r] += Fraction(v)
        if exactly_in_dtype([x for row in acc.values() for x in row], np.float64) is not None:
            for lab, row in acc.items():
                out[lab] = [float(x) for x in row]
            return out
        obj = fractions_of(out)
        for lab, row in acc.items():
            obj[lab] = row
        return obj
    out_o = np.empty((N, k), dtype=object)
    out_o.fill(Fraction(0))
    for i, lab in enumerate(label.tolist()):
        out_o[lab] = out_o[lab] + values[i]
    return out_o


def _float_class_sums(values: np.ndarray, label: np.ndarray, multi: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Sum the rows ``multi`` of a float64 array into ``out`` by their labels, in float64, member after member with
    the error of each addition (Knuth's TwoSum: s + e = a + b exactly): where every error is 0 the float sum is
    the exact sum and is written.  Returns the labels where an addition rounded (or overflowed), not written."""
    if multi.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = multi[np.argsort(label[multi], kind="stable")]
    labs = label[order]
    start = np.concatenate([[0], np.nonzero(labs[1:] != labs[:-1])[0] + 1])
    count = np.diff(np.concatenate([start, [order.size]]))
    acc = values[order[start]].astype(np.float64)
    exact = np.ones(start.size, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, int(count.max())):
            has = np.nonzero(count > t)[0]
            a, x = acc[has], values[order[start[has] + t]]
            s = a + x
            bb = s - a
            exact[has] &= ((a - (s - bb)) + (x - bb) == 0).all(axis=1)  # NaN after an overflow is not 0
            acc[has] = s
    out[labs[start[exact]]] = acc[exact]
    return np.asarray(labs[start[~exact]])


def hyperplane_classes(net: Network, *, row_hashes: np.ndarray | None = None) -> HyperplaneClasses:
    """The hyperplane classes, kinks and negative kinks of θ (docs/math/realization.md, docs/math/normal-form.md).

    The offset c enters only the constant term, exactly: A, b and V stay on the float path whenever they are
    float arrays, whatever c holds (a flip of a float network keeps its float weights and may make c exact).
    ``row_hashes`` (from :func:`relusym._core.group.search_symmetry`): the row hashes of the float keys of
    w_i / |λ_i|, from which the class hashes (of w_i / λ_i) follow without dividing again: negating a nonzero
    float key flips its top bit, which adds 2^63 to the hash (mod 2^64) once per nonzero entry (the
    multipliers are odd)."""
    m, n, k = net.shape
    A, b, V = exact_view(net.A, net.b, net.V)
    Vt = V.T
    a_nz = A != 0
    has_a = a_nz.any(axis=1) if n else np.zeros(0, dtype=bool)
    has_v = (Vt != 0).any(axis=1) if n else np.zeros(0, dtype=bool)
    hyper = has_a & has_v
    constant = ~has_a & has_v & (b > 0)
    neuron_type = np.where(
        hyper, NeuronType.HYPERPLANE, np.where(constant, NeuronType.CONSTANT, NeuronType.NULL)
    ).astype(np.int8)
    p = np.argmax(a_nz, axis=1) if n else np.zeros(0, dtype=np.int64)
    lam = exact_float(A[np.arange(n), p]) if n else exact_float(np.zeros(0, dtype=A.dtype))
    zero: Any = Fraction(0) if lam.dtype == object else 0.0
    lam = np.where(has_a, lam, zero)
    if lam.dtype != object:
        lam = lam.astype(np.float64)
    idx = np.nonzero(hyper)[0]
    if row_hashes is None:
        hashes = _class_hashes(A, b, lam, idx)
    else:
        odd = (a_nz[idx].sum(axis=1) + (b[idx] != 0)) % 2 == 1
        hashes = row_hashes[idx] + ((lam[idx] < 0) & odd).astype(np.uint64) * np.uint64(2**63)
    lab_h, reps_pos = _group_exact(A, b, lam, idx, hashes)
    N = int(reps_pos.shape[0])
    sizes = np.bincount(lab_h, minlength=N) if N else np.zeros(0, dtype=np.int64)
    lh = lam[idx]
    abs_l = abs(lh)
    prod = exact_products(Vt[idx], abs_l)  # |λ_i| v_i, exact (float64 or Fractions)
    kappa = _class_sums(prod, lab_h, N, sizes)
    neg = lh < 0
    prod_neg = prod * neg[:, None] if prod.dtype != object else np.where(neg[:, None], prod, _ZERO)
    s = _class_sums(prod_neg, lab_h, N, sizes)
    label = np.full(n, -1, dtype=np.int64)
    label[idx] = lab_h
    const = [to_fraction(x) for x in net.c.tolist()]
    for i in np.nonzero(constant)[0].tolist():
        bi = to_fraction(b[i])
        for r in range(k):
            const[r] += bi * to_fraction(Vt[i, r])
    khash = hashes[reps_pos] if N else np.zeros(0, dtype=np.uint64)
    return HyperplaneClasses(
        net, A, b, lam, neuron_type, label, khash, idx[reps_pos] if N else reps_pos, kappa, s, tuple(const), sizes
    )
