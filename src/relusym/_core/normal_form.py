"""The complete invariant NF(θ) = (K, M, e) (docs/math/normal-form.md, Theorem A): the exact comparison of two
decompositions, the ``NormalForm`` value with its exact affine part and its digest bytes, and ``normal_form``.

Every neuron with a_i ≠ 0 and v_i ≠ 0 lies on the unoriented hyperplane class û = w_i / λ_i (λ_i the first nonzero
entry of a_i) and adds |λ_i| v_i to the kink κ_û; a negatively oriented neuron (λ_i < 0) also adds |λ_i| v_i to
the *negative kink* s_û (the classes: :mod:`relusym._core.classes`).  Then

    M = Σ_neg v_i a_iᵀ = −Σ_û s_û α̂_ûᵀ,        e = c + Σ_const b_i v_i − Σ_û s_û β̂_û.

M and e are computed exactly when asked for; comparisons never need them: two NFs have the same affine part iff
Σ_û Δs_û û = 0 over the classes whose negative kinks differ, which is usually none.  The exact order of the kink
classes and the JSON text live in :mod:`relusym._core.nf_json`; ``realize`` and ``flip`` in
:mod:`relusym._core.operations`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from queue import SimpleQueue
from typing import Any, ClassVar

import numpy as np

from relusym._base.document import check_schema
from relusym._base.threads import single_blas_thread
from relusym._core.classes import HyperplaneClasses, hyperplane_classes
from relusym._core.digest import (
    digest_header,
    digits_block,
    float_block,
    hyperplane_parts,
    rational_block,
    reference_digest_bytes,
)
from relusym._core.network import Network, NeuronType
from relusym._core.nf_json import json_chunks, kink_order
from relusym._core.operations import realize
from relusym._exact.dtypes import float_or_inf as float_key_scalar
from relusym._exact.hashing import rows_proportional
from relusym._exact.mantissas import exact_matmul, exact_matmul_digits, exact_matmul_float, normalize_digits
from relusym._exact.numbers import dyadic_str, fraction_str, fractions_of, is_float_array
from relusym.errors import InvalidNetworkError

__all__ = ["NormalForm", "normal_form", "compare", "match_classes", "ClassMatch", "Difference", "float_key_scalar"]


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

    SCHEMA: ClassVar[str] = "relusym.normal-form/1"  #: the ``schema`` of :meth:`to_dict`
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
        """The JSON form: ``schema`` (:attr:`SCHEMA`), ``m``, ``k``, ``kinks`` (each ``{"hyperplane": û, "kink":
        κ}``), ``M``, ``e`` (rationals as strings ``"p/q"`` or ``"p"``) and ``digest``."""
        d = {"schema": self.SCHEMA, **self._payload()}
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
        check_schema(d, cls.SCHEMA, "normal form")
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


def normal_form(net: Network) -> NormalForm:
    """NF(θ) = (K, M, e), the complete invariant of ρ(θ) (docs/math/normal-form.md, Theorem A ≈ Theorems 3 and 4).

    >>> nf = normal_form(Network([[1, 2]], [[1], [-1]], [0, 1]))
    >>> [(tuple(map(str, u)), tuple(map(str, kap))) for u, kap in nf.K]
    [(('1', '-1'), ('2',)), (('1', '0'), ('1',))]
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"normal_form needs a Network, got {type(net).__name__}")
    return NormalForm(hyperplane_classes(net))
