"""Hyperplane classes, kinks and the complete invariant NF(θ) = (K, M, e) (docs/math/realization.md,
docs/math/normal-form.md, Theorem A).

The computation follows Algorithm NF of docs/math/normal-form.md, vectorised.  Every neuron with a_i ≠ 0 and v_i ≠ 0
lies on
the unoriented hyperplane class û = w_i / λ_i (λ_i the first nonzero entry of a_i) and adds |λ_i| v_i to the
kink κ_û; a negatively oriented neuron (λ_i < 0) also adds |λ_i| v_i to the *negative kink* s_û.  Then

    M = Σ_neg v_i a_iᵀ = −Σ_û s_û α̂_ûᵀ,        e = c + Σ_const b_i v_i − Σ_û s_û β̂_û.

Exactness without per-entry Fractions: classes are grouped by the float64 value of û, which is correctly
rounded, so equal rationals always give equal keys; every group of two or more rows is then checked exactly.
When all entries fit in float32, the products |λ_i| v_i and the cross-multiplications used in the checks are
exact in float64; otherwise the same code runs on Fractions.  M and e are computed exactly when asked for;
comparisons never need them: two NFs have the same affine part iff Σ_û Δs_û û = 0 over the classes whose
negative kinks differ, which is usually none.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from queue import SimpleQueue
from typing import Any

import numpy as np

from relusym._base.threads import single_blas_thread
from relusym._core.digest import (
    digest_header,
    digits_block,
    float_block,
    hyperplane_parts,
    rational_block,
    reference_digest_bytes,
)
from relusym._core.network import Network, NeuronType
from relusym._core.rationals import exact_quotients
from relusym._exact.decimal import bit_length, quotient_parts, render_cells
from relusym._exact.numbers import (
    dyadic_str,
    exact_float,
    exact_matmul,
    exact_matmul_digits,
    exact_matmul_float,
    exact_products,
    exact_view,
    exactly_in_dtype,
    float_key,
    float_parts,
    fraction_str,
    fractions_of,
    is_float_array,
    normalize_digits,
    quotient_row_hashes,
    row_hash,
    rows_proportional,
    to_fraction,
)
from relusym._exact.numbers import (
    float_or_inf as float_key_scalar,
)
from relusym.errors import InvalidNetworkError

_ZERO: Any = Fraction(0)
_KEY_ROWS = 128  # rows per block of HyperplaneClasses.keys

__all__ = [
    "NormalForm",
    "normal_form",
    "hyperplane_classes",
    "HyperplaneClasses",
    "kink_order",
    "kinks_json",
    "json_chunks",
    "float_key_scalar",
]


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


# ----------------------------------------------------------------------------------------------------------
# comparing two decompositions


@dataclass(frozen=True)
class ClassMatch:
    """The classes of two decompositions matched exactly: pairs (j1, j2), and the classes of each side alone."""

    pairs: np.ndarray  # P × 2
    only1: np.ndarray
    only2: np.ndarray


def _proportional_rows(h1: HyperplaneClasses, j1: np.ndarray, h2: HyperplaneClasses, j2: np.ndarray) -> np.ndarray:
    """Exact test û(j1) == û(j2) for matched candidate pairs (vectorised when both views are floats; the rows
    are gathered a block at a time, in cache)."""
    i1, i2 = h1.rep[j1], h2.rep[j2]
    l1, l2 = h1.lam[i1], h2.lam[i2]
    ok = rows_proportional(h1.b[i1][:, None], l2, h2.b[i2][:, None], l1)
    for s0 in range(0, i1.shape[0], _MATCH_ROWS):
        s1 = s0 + _MATCH_ROWS
        ok[s0:s1] &= rows_proportional(h1.A[i1[s0:s1]], l2[s0:s1], h2.A, l1[s0:s1], rows2=i2[s0:s1])
    return ok


_MATCH_ROWS = 512  # candidate pairs per block of _proportional_rows


def match_classes(h1: HyperplaneClasses, h2: HyperplaneClasses) -> ClassMatch:
    """Match the hyperplane classes of two networks exactly (hash, then verify exactly)."""
    N1, N2 = h1.N_all, h2.N_all
    if N1 == 0 or N2 == 0:
        return ClassMatch(np.zeros((0, 2), dtype=np.int64), np.arange(N1), np.arange(N2))
    keys = np.concatenate([h1.khash, h2.khash])
    _, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    inv1, inv2 = inv[:N1], inv[N1:]
    c1 = np.bincount(inv1, minlength=counts.shape[0])
    c2 = np.bincount(inv2, minlength=counts.shape[0])
    simple = (c1 == 1) & (c2 == 1)
    pos2 = np.full(counts.shape[0], -1, dtype=np.int64)
    pos2[inv2] = np.arange(N2)
    j1 = np.nonzero(simple[inv1])[0]
    j2 = pos2[inv1[j1]]
    ok = _proportional_rows(h1, j1, h2, j2) if j1.size else np.zeros(0, dtype=bool)
    pairs = [np.stack([j1[ok], j2[ok]], axis=1)]
    matched1 = np.zeros(N1, dtype=bool)
    matched2 = np.zeros(N2, dtype=bool)
    matched1[j1[ok]] = True
    matched2[j2[ok]] = True
    # rare: hash collisions; match those pairwise in exact arithmetic
    hard = np.nonzero(~simple & (c1 > 0) & (c2 > 0))[0]
    if hard.size:
        hard_set = set(hard.tolist())
        left = [j for j in range(N1) if int(inv1[j]) in hard_set]
        right = [j for j in range(N2) if int(inv2[j]) in hard_set]
        extra = []
        for a in left:
            for bb in right:
                if matched2[bb] or inv1[a] != inv2[bb]:
                    continue
                if bool(_proportional_rows(h1, np.array([a]), h2, np.array([bb]))[0]):
                    extra.append((a, bb))
                    matched1[a] = matched2[bb] = True
                    break
        if extra:
            pairs.append(np.asarray(extra, dtype=np.int64))
    return ClassMatch(np.concatenate(pairs, axis=0), np.nonzero(~matched1)[0], np.nonzero(~matched2)[0])


def _rows_equal(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype != object and y.dtype != object:
        return np.asarray(np.all(x == y, axis=1))
    x, y = fractions_of(x), fractions_of(y)
    return np.array([bool(np.all(x[t] == y[t])) for t in range(x.shape[0])], dtype=bool)


@dataclass(frozen=True)
class Difference:
    """What separates two decompositions: the classes whose kinks differ and the exact affine difference
    (ΔM, Δe) = (M1 − M2, e1 − e2).  When compared with ``lazy_affine`` and a kink differs (which already
    decides "not equivalent") the affine part is not computed: ``affine_known`` is False, ``dM`` and ``de``
    are empty."""

    kink_classes: list[tuple[int, int]]  # (side, class index) with differing kink (side 1 or 2)
    dM: tuple[tuple[Fraction, ...], ...]
    de: tuple[Fraction, ...]
    affine_known: bool = True

    @property
    def zero(self) -> bool:
        if self.kink_classes:
            return False
        return all(x == 0 for row in self.dM for x in row) and all(x == 0 for x in self.de)


def compare(h1: HyperplaneClasses, h2: HyperplaneClasses, *, lazy_affine: bool = False) -> Difference:
    """The exact difference between NF(θ1) and NF(θ2) (θ1 ≡ θ2 iff it is zero): first the kinks, class by
    class (hashes, then exact checks); then the affine parts (ΔM, Δe) = (M1 − M2, e1 − e2), exact integer
    products for float networks.  With ``lazy_affine`` the affine part is computed only when every kink agrees
    (a differing kink already decides; ``affine_known`` is then False)."""
    if h1.m != h2.m or h1.k != h2.k:
        raise InvalidNetworkError(
            f"the networks have different shapes: m = {h1.m}, k = {h1.k} against m = {h2.m}, k = {h2.k}"
        )
    cm = match_classes(h1, h2)
    kink_classes: list[tuple[int, int]] = []
    p1, p2 = cm.pairs[:, 0], cm.pairs[:, 1]
    same_kappa = _rows_equal(h1.kappa[p1], h2.kappa[p2]) if p1.size else np.zeros(0, dtype=bool)
    kink_classes += [(1, int(j)) for j in p1[~same_kappa]]
    kink_classes += [(1, int(j)) for j in cm.only1 if h1.kink_mask[j]]
    kink_classes += [(2, int(j)) for j in cm.only2 if h2.kink_mask[j]]
    if kink_classes and lazy_affine:
        return Difference(kink_classes, (), (), affine_known=False)
    nf1, nf2 = NormalForm(h1), NormalForm(h2)
    dM = tuple(tuple(x - y for x, y in zip(r1, r2, strict=True)) for r1, r2 in zip(nf1.M, nf2.M, strict=True))
    de = tuple(x - y for x, y in zip(nf1.e, nf2.e, strict=True))
    return Difference(kink_classes, dM, de)


# ----------------------------------------------------------------------------------------------------------
# the kink classes in exact order, and the canonical JSON text of the normal form


_CHUNK_ENTRIES = 32768  # entries per rendered block: small working sets


def _float_rows(h: HyperplaneClasses, js: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The canonical triples (num, den, d) of û for the classes js of a float network: û = num/den · 2^d."""
    reps = h.rep[js]
    X = np.concatenate([h.A[reps].astype(np.float64), h.b[reps].astype(np.float64)[:, None]], axis=1)
    mx, ex = float_parts(X)
    ml, el = float_parts(h.lam[reps])
    return quotient_parts(mx, ex, ml[:, None], el[:, None])


def _lex_order(keys: np.ndarray) -> np.ndarray:
    """Lexicographic order of the rows of a float matrix, refining column by column only inside ties."""
    N, C = keys.shape
    order = np.arange(N)
    gid = np.zeros(N, dtype=np.int64)
    for c in range(C):
        col = keys[order, c]
        o = np.lexsort((col, gid))
        order, col, gid = order[o], col[o], gid[o]
        new = np.ones(N, dtype=bool)
        new[1:] = (gid[1:] != gid[:-1]) | (col[1:] != col[:-1])
        gid = np.cumsum(new)
        if bool(new.all()):
            break
    return order


def kink_order(h: HyperplaneClasses) -> np.ndarray:
    """The kink classes (κ_û ≠ 0) sorted lexicographically by their exact û.

    Float networks are sorted by the float64 keys of û (correctly rounded, hence monotone).  When A and b are
    float16 or float32 the keys are injective: two distinct quotients of 24-bit mantissas differ by a relative
    2^-48 at least, more than two float64 roundings can bridge, so the key order is the exact order.  For
    float64 networks adjacent classes are compared exactly on the columns whose keys tie (canonical triples),
    and any undecided pair sends the whole sort to exact rationals."""
    js = np.nonzero(h.kink_mask)[0]
    if js.size <= 1:
        return js
    if h.A.dtype == object:
        us = h.u_exact_many(js.tolist())
        return js[sorted(range(len(us)), key=lambda t: us[t])]
    keys = h.keys[js]
    order = _lex_order(keys)
    if h.A.dtype.itemsize <= 4 and h.b.dtype.itemsize <= 4:
        return np.asarray(js[order])
    js = js[order]
    keys = keys[order]
    num, den, d = _float_rows(h, js)
    tie = keys[1:] == keys[:-1]
    strict = ~tie
    first = np.where(strict.any(axis=1), strict.argmax(axis=1), keys.shape[1])
    same = (num[1:] == num[:-1]) & (den[1:] == den[:-1]) & (d[1:] == d[:-1])
    prefix = np.arange(keys.shape[1])[None, :] < first[:, None]
    if bool(np.all(same | ~prefix)) and bool((first < keys.shape[1]).all()):
        return np.asarray(js)
    us = h.u_exact_many(js.tolist())  # pragma: no cover - float64 keys tie on distinct rationals
    return np.asarray(js[sorted(range(len(us)), key=lambda t: us[t])])


def _py_row(h: HyperplaneClasses, j: int, head: bytes) -> bytes:
    u = h.u_exact(j)
    kap = h.kappa_exact(j)
    return (
        head
        + ",".join(f'"{fraction_str(x)}"' for x in u).encode()
        + b'],"kink":['
        + ",".join(f'"{fraction_str(x)}"' for x in kap).encode()
        + b"]}"
    )


def kinks_json(h: HyperplaneClasses, order: np.ndarray) -> Iterator[bytes]:
    """The bytes of the canonical JSON list of the kink classes ``order`` without its brackets:
    ``{"hyperplane":["û_0",…],"kink":["κ_0",…]}`` joined by commas, in blocks.

    Float networks go through :func:`relusym._exact.decimal.render_cells` on the integer triples of û and the
    mantissas of κ; a row with an integer beyond 62 bits, and every row of a rational network, is written from
    exact Fractions with :func:`relusym._exact.numbers.fraction_str`.  Both give the same bytes."""
    N = int(order.shape[0])
    if N == 0:
        return
    m, k = h.m, h.k
    if h.A.dtype == object:
        step = 256
        for s in range(0, N, step):
            yield b"".join(
                _py_row(h, int(j), b'{"hyperplane":[' if s + t == 0 else b',{"hyperplane":[')
                for t, j in enumerate(order[s : s + step].tolist())
            )
        return
    R = max(1, _CHUNK_ENTRIES // (m + 1 + k))
    starts = list(range(0, N, R))
    if len(starts) <= 2:
        for s in starts:
            yield _render_block(h, order[s : s + R], s)
        return
    # two blocks at a time in worker threads (numpy releases the GIL), yielded in order, a few ahead at most
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: list[Any] = []
        for s in starts:
            pending.append(pool.submit(_render_block, h, order[s : s + R], s))
            if len(pending) > 4:
                yield pending.pop(0).result()
        for f in pending:
            yield f.result()


def _render_block(h: HyperplaneClasses, js: np.ndarray, s: int) -> bytes:
    """The bytes of the kink classes js (sorted), the first of which is number s of K."""
    kap_float = h.kappa.dtype != object
    small_mantissas = h.A.dtype.itemsize <= 4 and h.b.dtype.itemsize <= 4
    num, den, d = _float_rows(h, js)
    up = np.maximum(d, 0)
    dn = np.maximum(-d, 0)
    if small_mantissas and int(d.max(initial=0)) <= 62 - 24 and int(d.min(initial=0)) >= 24 - 62:
        ok = np.ones(num.shape, dtype=bool)  # 24-bit odd parts: every shifted value fits
    else:
        ok = (bit_length(num) + up <= 62) & (bit_length(den) + dn <= 62)
    row_ok: np.ndarray = np.asarray(ok.all(axis=1))
    if not bool(ok.all()):
        up = np.where(ok, up, 0)
        dn = np.where(ok, dn, 0)
        u_seg = (num < 0, np.where(ok, np.abs(num) << up, 0), np.where(ok, den << dn, 1))
    else:
        u_seg = (num < 0, np.abs(num) << up, den << dn)
    # û and κ in two grids (their digit widths differ a lot), joined row by row
    utext, ulen = render_cells(
        [b',{"hyperplane":[', u_seg, b'],"kink":['], len(js), first=b'{"hyperplane":[' if s == 0 else None
    )
    ktext, klen = b"", None
    if kap_float:
        mk, ek = float_parts(h.kappa[js])
        kup = np.maximum(ek, 0)
        kdn = np.maximum(-ek, 0)
        kok = bit_length(mk) + kup <= 62
        row_ok &= kok.all(axis=1)
        kup = np.where(kok, kup, 0)
        kdn = np.where(kok, kdn, 0)
        ktext, klen = render_cells([(mk < 0, np.where(kok, np.abs(mk) << kup, 0), None, kdn), b"]}"], len(js))
    uends = np.cumsum(ulen).tolist()
    kends = np.cumsum(klen).tolist() if klen is not None else None
    parts: list[bytes] = []
    a = b_ = 0
    for t, (j, good) in enumerate(zip(js.tolist(), row_ok.tolist(), strict=True)):
        e_ = uends[t]
        if not good:
            parts.append(_py_row(h, int(j), b'{"hyperplane":[' if s + t == 0 else b',{"hyperplane":['))
        elif kends is not None:
            parts.append(utext[a:e_])
            parts.append(ktext[b_ : kends[t]])
        else:
            kap = ",".join(f'"{fraction_str(x)}"' for x in h.kappa_exact(int(j))).encode()
            parts.append(utext[a:e_] + kap + b"]}")
        a = e_
        if kends is not None:
            b_ = kends[t]
    return b"".join(parts)


def _vector_json(values: Iterable[str]) -> bytes:
    return ("[" + ",".join(f'"{v}"' for v in values) + "]").encode()


def json_chunks(nf: NormalForm) -> Iterator[bytes]:
    """The canonical JSON text of (m, k, K, M, e), in blocks: ``json.dumps(payload, sort_keys=True,
    separators=(",", ":"))`` in ASCII for the payload of :meth:`NormalForm.to_dict` (without the digest), so
    the text begins ``{"M":[[`` and ends ``],"m":<m>}``.  Every rational is the string ``"p/q"`` in lowest terms
    with q > 0, or ``"p"`` when q = 1; the kink classes are in the exact lexicographic order of û.  This is
    the JSON form that ``canon --json --full`` and ``-o nf.json`` stream (relusym 0.x hashed this text as the
    digest; the digest is now :mod:`relusym._core.digest`'s scheme)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        head = pool.submit(lambda: (nf.M_strings(), nf.e_strings()))  # the affine part beside the kinks
        kinks = kinks_json(nf.classes, nf.kink_order)
        first = next(kinks, None)
        M, e = head.result()
        yield b'{"M":[' + b",".join(_vector_json(row) for row in M) + b'],"e":' + _vector_json(e)
        yield b',"k":%d,"kinks":[' % nf.k
        if first is not None:
            yield first
        yield from kinks
        yield b'],"m":%d}' % nf.m


# ----------------------------------------------------------------------------------------------------------
# the normal form


class NormalForm:
    """NF(θ) = (K, M, e): the kink classes (û, κ_û) sorted by û, the linear part M (k×m) and the offset e (k),
    all exact (see docs/math/normal-form.md).  Two networks realize the same function iff their normal forms
    are equal, whatever their widths.

    A NormalForm is immutable (no attribute can be set or deleted), hashable, equal by value (``==`` decides
    ρ(θ1) = ρ(θ2) exactly) and totally ordered: by (m, k, K, M, e) compared lexicographically in exact
    rationals, K as its sorted list of (û, κ_û).  Equality and hashing are cheap (no per-entry Fractions);
    ``K``, ``M``, ``e`` and ``to_dict()`` compute exact rationals on first use; ``digest()`` works on integers
    (scheme ``relusym.nf/2``, see :mod:`relusym._core.digest`).
    """

    __slots__ = ("_h", "__dict__")
    _h: HyperplaneClasses

    def __init__(self, classes: HyperplaneClasses) -> None:
        object.__setattr__(self, "_h", classes)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("NormalForm is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("NormalForm is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (normal_form, (self._h.net,))

    @property
    def classes(self) -> HyperplaneClasses:
        return self._h

    @property
    def m(self) -> int:
        return self._h.m

    @property
    def k(self) -> int:
        return self._h.k

    @cached_property
    def kink_order(self) -> np.ndarray:
        """The class indices of the kink classes, in the order of K (exact lexicographic order of û)."""
        return kink_order(self._h)

    @cached_property
    def K(self) -> tuple[tuple[tuple[Fraction, ...], tuple[Fraction, ...]], ...]:
        """The kink classes (û, κ_û), κ_û ≠ 0, sorted lexicographically by û (exact)."""
        h = self._h
        js = self.kink_order.tolist()
        return tuple(zip(h.u_exact_many(js), [h.kappa_exact(j) for j in js], strict=True))

    def K_head(self, count: int) -> tuple[tuple[tuple[Fraction, ...], tuple[Fraction, ...]], ...]:
        """The first ``count`` entries of K, without computing the others exactly."""
        if "K" in self.__dict__:
            return self.K[:count]
        h = self._h
        js = self.kink_order[:count].tolist()
        return tuple(zip(h.u_exact_many(js), [h.kappa_exact(j) for j in js], strict=True))

    @property
    def N(self) -> int:
        """Number of kink classes |U*|."""
        return int(self._h.kink_mask.sum())

    def _negative(self) -> np.ndarray:
        h = self._h
        return np.nonzero((h.neuron_type == NeuronType.HYPERPLANE) & (h.lam < 0))[0]

    @cached_property
    def _M_dyadic(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """M = P[r, c] · 2^(ex[r] + ey[c]) for float networks (exact integer products), else None."""
        net = self._h.net
        if not (is_float_array(net.V) and is_float_array(net.A)):
            return None
        neg = self._negative()
        return exact_matmul_float(net.V[:, neg], net.A[neg, :])

    @cached_property
    def M(self) -> tuple[tuple[Fraction, ...], ...]:
        """M = Σ over negatively oriented neurons of v_i a_iᵀ (k×m, exact)."""
        h = self._h
        net = h.net
        dy = self._M_dyadic
        if dy is not None:
            P, ex, ey = dy
            return tuple(
                tuple(_dyadic_fraction(int(p), int(ex[r]) + int(ey[c])) for c, p in enumerate(row))
                for r, row in enumerate(P.tolist())
            )
        neg = self._negative()
        if neg.size == 0:
            return tuple(tuple(Fraction(0) for _ in range(self.m)) for _ in range(self.k))
        prod = exact_matmul(net.V[:, neg], net.A[neg, :])
        return tuple(tuple(row) for row in prod.tolist())

    def M_strings(self) -> list[list[str]]:
        """M spelled as in the JSON form ("p/q" or "p"), without building Fractions for float networks."""
        dy = self._M_dyadic if type(self).M is NormalForm.M else None  # a subclass may define M otherwise
        if dy is None:
            return [[fraction_str(x) for x in row] for row in self.M]
        P, ex, ey = dy
        eyl = ey.tolist()
        return [
            [dyadic_str(p, e0 + e1) for p, e1 in zip(row, eyl, strict=True)]
            for row, e0 in zip(P.tolist(), ex.tolist(), strict=True)
        ]

    @cached_property
    def e(self) -> tuple[Fraction, ...]:
        """e = c + Σ_const b_i v_i + Σ_neg b_i v_i (exact)."""
        h = self._h
        net = h.net
        neg = self._negative()
        out = list(h.const)
        if neg.size:
            if is_float_array(net.V) and is_float_array(net.b):
                P, ex, ey = exact_matmul_float(net.V[:, neg], net.b[neg][:, None])
                col = [_dyadic_fraction(int(p), int(ex[r]) + int(ey[0])) for r, p in enumerate(P[:, 0].tolist())]
            else:
                col = exact_matmul(net.V[:, neg], net.b[neg][:, None])[:, 0].tolist()
            out = [x + y for x, y in zip(out, col, strict=True)]
        return tuple(out)

    def e_strings(self) -> list[str]:
        return [fraction_str(x) for x in self.e]

    def _key(self) -> tuple[Any, ...]:
        return (self.m, self.k, self.K, self.M, self.e)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NormalForm):
            return NotImplemented
        if (self.m, self.k) != (other.m, other.k):
            return False
        return compare(self._h, other._h, lazy_affine=True).zero

    def __lt__(self, other: NormalForm) -> bool:
        if not isinstance(other, NormalForm):
            return NotImplemented
        return self != other and self._key() < other._key()

    def __le__(self, other: NormalForm) -> bool:
        if not isinstance(other, NormalForm):
            return NotImplemented
        return self == other or self._key() < other._key()

    def __gt__(self, other: NormalForm) -> bool:
        if not isinstance(other, NormalForm):
            return NotImplemented
        return other < self

    def __ge__(self, other: NormalForm) -> bool:
        if not isinstance(other, NormalForm):
            return NotImplemented
        return other <= self

    @cached_property
    def _hash(self) -> int:
        h = self._h
        mask = h.kink_mask
        kf = h.kappa[mask]
        kf = (
            kf.astype(np.float64)
            if kf.dtype != object
            else np.array([[float_key_scalar(x) for x in row] for row in kf.tolist()], dtype=np.float64).reshape(
                kf.shape
            )
        )
        items = frozenset(zip(h.khash[mask].tolist(), [r.tobytes() for r in kf + 0.0], strict=True))
        return hash((self.m, self.k, items))

    def __hash__(self) -> int:
        return self._hash

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``m``, ``k``, ``kinks`` (each ``{"hyperplane": û, "kink": κ}``), ``M``, ``e`` (rationals
        as strings ``"p/q"`` or ``"p"``) and ``digest``."""
        d = self._payload()
        d["digest"] = self.digest()
        return d

    def _payload(self) -> dict[str, Any]:
        """(m, k, K, M, e) as a JSON object (the JSON form, without the digest; see :func:`json_chunks`)."""
        return json.loads(b"".join(json_chunks(self)))  # type: ignore[no-any-return]

    def digest_bytes(self) -> bytes:
        """The bytes that :meth:`digest` hashes (scheme ``relusym.nf/2``; see there): SHA-256 of them is the
        digest.  A subclass with its own scheme (the normal form on a domain) gives the canonical JSON text of
        its payload."""
        if type(self)._payload is not NormalForm._payload:
            return json.dumps(self._payload(), sort_keys=True, separators=(",", ":")).encode()
        parts: list[Any] = []
        _nf2_bytes(self, parts.append)
        return b"".join(bytes(p) for p in parts)

    def json_bytes(self) -> Iterator[bytes]:
        """The canonical JSON text of (m, k, K, M, e), in blocks (see :func:`json_chunks`): what
        ``relusym canon --json --full`` streams."""
        return json_chunks(self)

    def digest(self) -> str:
        """A stable content hash of NF(θ): SHA-256 (hex) of the bytes of scheme ``relusym.nf/2``.

        The bytes (defined on docs/math/normal-form.md, "The digest"; :meth:`digest_bytes`) are built from integers
        only: m, k and the number N of kink classes; the primitive integer vectors ŵ of the classes (the ray of
        û, gcd 1), in the order of their bytes; the kinks κ, M and e, each rational x = 2^t · p / q (p, q odd)
        written as its integers t, p and q.  Integers are written in fixed-width little-endian blocks.  The
        value depends only on the function ρ(θ): it is the same for every network realizing it, on every
        machine and Python version, and whichever path computes it (float networks from their integer
        mantissas in numpy, rational ones from Fractions; both give the same bytes, which
        :func:`relusym._core.digest.reference_digest` defines from exact rationals).  Digests of relusym 0.x (the
        SHA-256 of the canonical JSON text) differ from these.

        A subclass that hashes more than (m, k, K, M, e) (the normal form on a domain) keeps the older scheme:
        the SHA-256 of ``json.dumps(payload, sort_keys=True, separators=(",", ":"))`` of its ``_payload()``."""
        if "_digest" not in self.__dict__:
            if type(self)._payload is NormalForm._payload:
                self.__dict__["_digest"] = _nf2_digest(self)
            else:  # a subclass that hashes more (e.g. a domain): the canonical JSON of its payload
                text = json.dumps(self._payload(), sort_keys=True, separators=(",", ":"))
                self.__dict__["_digest"] = hashlib.sha256(text.encode()).hexdigest()
        return str(self.__dict__["_digest"])

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NormalForm:
        """Rebuild a normal form from ``to_dict()`` output (through a network that realizes it)."""
        return normal_form(realize(d))

    def __repr__(self) -> str:
        if self.N <= 6 and self.m * self.k <= 6:
            d = self.to_dict()
            return f"NormalForm(K={d['kinks']}, M={d['M']}, e={d['e']})"
        return f"NormalForm(m={self.m}, k={self.k}, N={self.N})"


_THREADED_ENTRIES = 2**16  # hyperplane entries from which the digest uses a worker thread


def _nf2_digest(nf: NormalForm) -> str:
    """:meth:`NormalForm.digest`: SHA-256 of the ``relusym.nf/2`` bytes, hashed as they are produced."""
    sha = hashlib.sha256()
    _nf2_bytes(nf, sha.update)
    return sha.hexdigest()


def _nf2_bytes(nf: NormalForm, sink: Callable[[Any], None]) -> None:
    """Pass the ``relusym.nf/2`` bytes of the normal form to ``sink`` in order, block by block.

    Float networks: the hyperplane block from the representative rows' mantissas
    (:func:`relusym._core.digest.hyperplane_parts`); then the kinks (exact floats in ``classes.kappa`` when the
    network fits in float32, else Fractions) in the order of the hyperplane block, and the affine part (M from
    the exact digit product :func:`relusym._exact.numbers.exact_matmul_digits`, e from Fractions: k entries).  A large
    network is encoded in two threads (:func:`_two_threads`) when BLAS can be held to one thread meanwhile
    (:func:`relusym._base.threads.single_blas_thread`: from the main thread), else in one.
    Rational networks: :func:`relusym._core.digest.reference_digest_bytes` on the exact classes."""
    h = nf.classes
    m, k = nf.m, nf.k
    js = np.nonzero(h.kink_mask)[0]
    N = int(js.shape[0])
    if h.A.dtype == object:
        K = [(h.u_exact(int(j)), h.kappa_exact(int(j))) for j in js.tolist()]
        sink(reference_digest_bytes(m, k, K, nf.M, nf.e))
        return
    reps = h.rep[js]
    sink(digest_header(m, k, N))
    encoded = None
    if N * (m + 1) >= _THREADED_ENTRIES:
        with single_blas_thread() as alone:
            if alone:
                encoded = _two_threads(nf, reps, sink)
    if encoded is None:
        order, parts = hyperplane_parts(h.A, h.b, reps, h.lam[reps] < 0)
        for part in parts:
            sink(part)
        encoded = order, _affine_blocks(nf)
    order, affine = encoded
    kap = h.kappa[js[order]]
    sink(float_block(kap) if kap.dtype != object else rational_block(kap.ravel().tolist()))
    sink(affine)


def _two_threads(nf: NormalForm, reps: np.ndarray, sink: Callable[[Any], None]) -> tuple[np.ndarray, bytes]:
    """The hyperplane block and the affine blocks of :func:`_nf2_bytes` in two threads: a worker computes the
    affine part (BLAS, on one thread meanwhile) while the calling thread packs the hyperplane block's buffers
    and passes them to ``sink`` itself; once the affine part is done, the worker passes on the rest as they
    come (the buffers reach ``sink`` in order, from one thread at a time).  Returns the order of the block's
    rows and the affine blocks."""
    h = nf.classes
    queue: SimpleQueue[Any] = SimpleQueue()

    def drain() -> None:
        while (part := queue.get()) is not None:
            sink(part)

    with ThreadPoolExecutor(max_workers=1) as pool:
        affine = pool.submit(_affine_blocks, nf)
        drained = pool.submit(drain)  # starts once the affine part is done
        queued = False
        try:
            order, parts = hyperplane_parts(h.A, h.b, reps, h.lam[reps] < 0)
            for part in parts:
                queued = queued or affine.done()
                if queued:
                    queue.put(part)
                else:
                    sink(part)
        finally:
            queue.put(None)
        drained.result()
        return order, affine.result()


def _affine_blocks(nf: NormalForm) -> bytes:
    """The rational blocks of M and e of a float network (M through exact digits, e from Fractions)."""
    net = nf.classes.net
    neg = nf._negative()
    digits = exact_matmul_digits(net.V[:, neg], net.A, neg) if type(nf).M is NormalForm.M else None
    if digits is not None:
        D, ex, ey = digits
        sign, D = normalize_digits(D)
        M_block = digits_block(sign.ravel(), D.reshape(D.shape[0], -1), (ex[:, None] + ey[None, :]).ravel())
    else:
        M_block = rational_block([x for row in nf.M for x in row])
    return M_block + rational_block(nf.e)


def _dyadic_fraction(p: int, e: int) -> Fraction:
    return Fraction(p << e) if e >= 0 else Fraction(p, 1 << -e)


def realize(d: dict[str, Any]) -> Network:
    """A network realizing the normal form ``d`` (as produced by ``NormalForm.to_dict``): one positively
    oriented neuron per kink and a cancelling pair σ(x_j) − σ(−x_j) = x_j per nonzero column of M."""
    try:
        m, k = int(d["m"]), int(d["k"])
        kinks = d["kinks"]
        M = [[to_fraction(x) for x in row] for row in d["M"]]
        e = [to_fraction(x) for x in d["e"]]
    except (KeyError, TypeError) as exc:
        raise InvalidNetworkError(f"not a normal-form object: missing or malformed {exc}") from None
    V_cols: list[list[Fraction]] = []
    A_rows: list[list[Fraction]] = []
    b: list[Fraction] = []
    for item in kinks:
        u = [to_fraction(x) for x in item["hyperplane"]]
        kap = [to_fraction(x) for x in item["kink"]]
        if len(u) != m + 1 or len(kap) != k:
            raise InvalidNetworkError("a kink entry has the wrong length for m and k")
        V_cols.append(kap)
        A_rows.append(u[:m])
        b.append(u[m])
    for j in range(m):
        col = [M[r][j] for r in range(k)]
        if any(col):
            unit = [Fraction(int(i == j)) for i in range(m)]
            V_cols += [col, [-x for x in col]]
            A_rows += [unit, [-x for x in unit]]
            b += [Fraction(0), Fraction(0)]
    V = [[V_cols[i][r] for i in range(len(V_cols))] for r in range(k)]
    return Network(V, A_rows, b, e, m=m)


def normal_form(net: Network) -> NormalForm:
    """NF(θ) = (K, M, e), the complete invariant of ρ(θ) (docs/math/normal-form.md, Theorem A ≈ Theorems 3 and 4).

    >>> nf = normal_form(Network([[1, 2]], [[1], [-1]], [0, 1]))
    >>> [(tuple(map(str, u)), tuple(map(str, kap))) for u, kap in nf.K]
    [(('1', '-1'), ('2',)), (('1', '0'), ('1',))]
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"normal_form needs a Network, got {type(net).__name__}")
    return NormalForm(hyperplane_classes(net))


def flip(net: Network, T: Any) -> Network:
    """flip_T(θ): (v_i, a_i, b_i) ↦ (v_i, −a_i, −b_i) for i ∈ T and c ↦ c + Σ_T b_i v_i (docs/math/fibres.md, O4).

    It preserves ρ(θ) iff Σ_T v_i a_iᵀ = 0 (Proposition 14)."""
    T = sorted({int(i) for i in T})
    for i in T:
        if not 0 <= i < net.n:
            raise InvalidNetworkError(f"flip index {i} is out of range for n = {net.n}")
    idx = np.asarray(T, dtype=np.int64)
    if net.is_float:
        A = np.array(net.A, copy=True)
        b = np.array(net.b, copy=True)
        A[idx] = -A[idx]
        b[idx] = -b[idx]
        dc = exact_matmul(net.V[:, idx], net.b[idx][:, None])[:, 0] if idx.size else np.zeros(net.k, dtype=object)
        c_new = [Fraction(x) + Fraction(y) for x, y in zip(net.c.tolist(), dc.tolist(), strict=True)]
        fits = exactly_in_dtype(c_new, net.c.dtype)
        c_arr: Any = c_new if fits is None else fits  # a bias the float dtype cannot hold is kept exact
        return Network(net.V, A, b, c_arr, m=net.m)
    A = fractions_of(net.A).copy()
    b = fractions_of(net.b).copy()
    c = list(fractions_of(net.c).tolist())
    for i in T:
        for r in range(net.k):
            c[r] += to_fraction(net.b[i]) * to_fraction(net.V[r, i])
        A[i] = -A[i]
        b[i] = -b[i]
    return Network(net.V, A, b, c, m=net.m)
