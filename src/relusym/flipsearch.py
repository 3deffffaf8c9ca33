"""Finding the hidden "flip" symmetries of a one-hidden-layer ReLU network (spec §3 O4, §5.3).

A *flip set* of a network ``x -> V relu(A x + b) + c`` (``V`` is k×n, ``A`` is n×m) is a nonempty
``T ⊆ {0..n-1}`` with ``Σ_{i∈T} v_i a_iᵀ = 0`` (a k×m matrix).  With the integer matrix ``X`` whose
row ``i`` is ``vec(v_i a_iᵀ)`` (times one common positive scale, see :func:`flip_matrix`), flip
sets are the nonempty subsets of rows summing to zero: a multi-dimensional subset-sum problem.

:func:`find_flip_sets` decides it in stages:

a. zero rows (``v_i = 0`` or ``a_i = 0``) are flip sets on their own;
b. a rank modulo a prime: if the nonzero rows are independent there is no other flip set (this is
   the typical case ``n <= k·m``).  Otherwise only rows in the support of the left nullspace
   matter; that support splits into independent blocks (components of the matroid), and flip
   sets are unions of per-block flip sets;
c. small blocks are enumerated exactly (over the nullspace when its dimension is small, by
   meet-in-the-middle when the block is small);
d. large blocks whose rows live in few coordinates (float networks with small ``k·m``) are
   searched with a generalized-birthday (Wagner k-tree) algorithm on the exact integers;
e. everything runs under a time budget; what is not decided is reported in ``undecided``.

Every reported set is verified with exact integer arithmetic.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import flint
import numpy as np

from relusym import linalg

__all__ = [
    "FlipFactors",
    "FlipSearch",
    "find_flip_sets",
    "flip_factors",
    "flip_matrix",
    "is_flip_set",
    "network_flip_sets",
]

_P = linalg.FAST_PRIMES[0]
_LB = 56  # bits per limb of the exact multi-limb integers
_LMASK = (1 << _LB) - 1


def _verification_primes(count: int) -> list[int]:
    out: list[int] = []
    q = (1 << 20) - 1
    while len(out) < count:
        if flint.fmpz(q).is_prime():
            out.append(q)
        q -= 2
    return out


_VPRIMES = _verification_primes(48)


# ============================================================================================
# exact integer matrices: dense arrays, or the factored form of a network
# ============================================================================================


class _IntMatrix(Protocol):
    @property
    def shape(self) -> tuple[int, int]: ...

    def residues(self, p: int, rows: np.ndarray) -> np.ndarray: ...

    def exact(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray: ...

    def zero_mask(self) -> np.ndarray: ...

    def abs_col_sums(self, rows: np.ndarray, coef: np.ndarray | None = None) -> np.ndarray: ...


def _bitlen_array(x: np.ndarray) -> np.ndarray:
    """Bit lengths of the absolute values of an int64 array (0 for 0)."""
    a = np.abs(x.astype(np.float64))
    return np.where(a > 0, np.frexp(a)[1], 0).astype(np.int64)


def _obj_mod(a: np.ndarray, p: int) -> np.ndarray:
    if a.dtype != object:
        return np.mod(a.astype(np.int64, copy=False), np.int64(p))
    if a.size == 0:
        return np.zeros(a.shape, dtype=np.int64)
    return np.asarray(np.frompyfunc(lambda x: int(x) % p, 1, 1)(a), dtype=np.int64).reshape(a.shape)


def _abs_float(a: np.ndarray) -> np.ndarray:
    """|a| as float64, rounded up by a relative 1e-9 (an upper bound, for error bounds)."""
    if a.dtype == object:

        def fabs(x: Any) -> float:
            try:
                return float(abs(int(x)))
            except OverflowError:  # beyond float range: no useful bound
                return math.inf

        f = np.asarray(np.frompyfunc(fabs, 1, 1)(a), dtype=np.float64)
        f = f.reshape(a.shape) if a.size else np.zeros(a.shape)
    else:
        f = np.abs(a.astype(np.float64))
    return f * (1 + 1e-9)


@dataclass(frozen=True)
class _Dense:
    data: np.ndarray  # (n, d) int64 or object (Python ints)

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.data.shape[0]), int(self.data.shape[1]))

    def residues(self, p: int, rows: np.ndarray) -> np.ndarray:
        return _obj_mod(self.data[rows], p)

    def exact(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        sub = self.data[rows] if cols is None else self.data[np.ix_(rows, cols)]
        return sub.astype(object)

    def zero_mask(self) -> np.ndarray:
        if self.data.shape[1] == 0:
            return np.ones(self.data.shape[0], dtype=bool)
        return ~np.any(self.data != 0, axis=1)

    def abs_col_sums(self, rows: np.ndarray, coef: np.ndarray | None = None) -> np.ndarray:
        """Upper bounds of Σ_i |coef_i| |x_ij| per column (coef defaults to 1)."""
        a = _abs_float(self.data[rows])
        w = np.ones(len(rows)) if coef is None else coef
        return (w @ a) * (1 + 1e-9) + 1.0


@dataclass(frozen=True)
class FlipFactors:
    """The matrix of :func:`flip_matrix` in factored form: ``X[i, j*m + l] = P[i, j] * Q[i, l]``.

    ``P`` (n×k) is ``Vᵀ`` and ``Q`` (n×m) is ``A``, each multiplied by one positive scale that
    makes all its entries integers (int64 arrays, or object arrays of Python ints when the
    entries do not fit).  Building it takes O(n(k+m)); residues modulo a prime and selected rows
    of ``X`` are computed from the factors without materialising ``X``.
    """

    P: np.ndarray
    Q: np.ndarray
    scale: Fraction = Fraction(1)  # X = scale * (exact rows vec(v_i a_iᵀ))

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.P.shape[0]), int(self.P.shape[1] * self.Q.shape[1]))

    def to_array(self) -> np.ndarray:
        """The full matrix ``X`` (int64 when every entry fits, else an object array)."""
        n = self.P.shape[0]
        d = self.shape[1]
        if self.P.dtype != object and self.Q.dtype != object:
            bits = _bitlen_array(self.P).max(initial=0) + _bitlen_array(self.Q).max(initial=0)
            if bits <= 62:
                return (self.P[:, :, None] * self.Q[:, None, :]).reshape(n, d)
        p = self.P.astype(object)
        q = self.Q.astype(object)
        return (p[:, :, None] * q[:, None, :]).reshape(n, d)

    def residues(self, p: int, rows: np.ndarray) -> np.ndarray:
        if p >= 1 << 31:
            raise ValueError("modulus too large")
        pr = _obj_mod(self.P[rows], p)
        qr = _obj_mod(self.Q[rows], p)
        out = pr[:, :, None] * qr[:, None, :]
        np.mod(out, p, out=out)
        return out.reshape(len(rows), -1)

    def field_residues(self, p: int, rows: np.ndarray) -> np.ndarray:
        """Residues as float64 (|x| <= p/2 + 1), ready for the modular LU; p < 2**21."""
        fld = linalg._Field(p)
        pr = _obj_mod(self.P[rows], p).astype(np.float64)
        qr = _obj_mod(self.Q[rows], p).astype(np.float64)
        out = pr[:, :, None] * qr[:, None, :]
        return fld.reduce(out.reshape(len(rows), -1))

    def exact(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        p = self.P[rows].astype(object)
        q = self.Q[rows].astype(object)
        if cols is None:
            return (p[:, :, None] * q[:, None, :]).reshape(len(rows), -1)
        m = self.Q.shape[1]
        cols = np.asarray(cols)
        return p[:, cols // m] * q[:, cols % m]

    def zero_mask(self) -> np.ndarray:
        zp = ~np.any(self.P != 0, axis=1) if self.P.shape[1] else np.ones(self.P.shape[0], bool)
        zq = ~np.any(self.Q != 0, axis=1) if self.Q.shape[1] else np.ones(self.Q.shape[0], bool)
        return zp | zq

    def abs_col_sums(self, rows: np.ndarray, coef: np.ndarray | None = None) -> np.ndarray:
        ap = _abs_float(self.P[rows])
        aq = _abs_float(self.Q[rows])
        w = np.ones(len(rows)) if coef is None else coef
        return ((ap * w[:, None]).T @ aq).ravel() * (1 + 1e-9) + 1.0


# ============================================================================================
# exact conversion of weights
# ============================================================================================


def _exact_ints(arr: Any, name: str) -> tuple[np.ndarray, Fraction]:
    """Integers ``N`` and a positive scale ``s`` with ``arr == N * s`` exactly.

    Floats are read at their exact binary value (``s`` is a power of two); integers give
    ``s = 1``; Fractions (and other exact scalars in object arrays) give ``s = 1/lcm(dens)``.
    The integer array is int64 when every entry fits, else an object array of Python ints.
    """
    a = np.asarray(arr)
    if a.dtype.kind == "b":
        a = a.astype(np.int64)
    if a.dtype.kind in "iu":
        if a.dtype.kind == "u" and a.size and int(a.max()) >= 1 << 63:
            return a.astype(object), Fraction(1)
        return a.astype(np.int64), Fraction(1)
    if a.dtype.kind == "f":
        x = a.astype(np.float64)
        bad = ~np.isfinite(x)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{name} has a non-finite entry at index {idx}")
        mant, ex = np.frexp(x)
        mi = (mant * float(1 << 53)).astype(np.int64)
        nz = mi != 0
        if not nz.any():
            return np.zeros(a.shape, dtype=np.int64), Fraction(1)
        low = np.where(nz, mi & -mi, 1)
        tz = np.frexp(low.astype(np.float64))[1] - 1
        mi = mi >> tz
        e = ex.astype(np.int64) - 53 + tz
        e0 = int(e[nz].min())
        shift = np.where(nz, e - e0, 0)
        bits = _bitlen_array(mi) + shift
        scale = Fraction(2) ** e0
        if int(bits.max()) <= 62:
            return np.where(nz, mi << shift, 0).astype(np.int64), scale
        obj = mi.astype(object) << shift.astype(object)
        return obj, scale
    if a.dtype == object or a.dtype.kind in "OUS":
        fr = np.empty(a.shape, dtype=object)
        flat = a.reshape(-1)
        fr_flat = fr.reshape(-1)
        for i, v in enumerate(flat):
            try:
                fr_flat[i] = linalg._to_fraction(v)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{name}: bad entry at flat index {i}: {exc}") from exc
        den = 1
        for v in fr_flat:
            den = math.lcm(den, v.denominator)
        ints = np.empty(a.shape, dtype=object)
        ints_flat = ints.reshape(-1)
        for i, v in enumerate(fr_flat):
            ints_flat[i] = v.numerator * (den // v.denominator)
        if all(-(1 << 62) < int(v) < (1 << 62) for v in ints_flat):
            return ints.astype(np.int64), Fraction(1, den)
        return ints, Fraction(1, den)
    raise TypeError(f"{name}: unsupported dtype {a.dtype}")


def flip_factors(V: Any, A: Any) -> FlipFactors:
    """The exact integer data of the flip problem of a network, in factored form.

    ``V`` is k×n and ``A`` is n×m (numpy float16/32/64 arrays, read at their exact binary
    values, or integer arrays, or object arrays of int/Fraction).  Row ``i`` of the matrix it
    represents is ``vec(v_i a_iᵀ)`` (row-major: entry ``j*m + l`` is ``V[j, i] * A[i, l]``)
    times one common positive scale.
    """
    v = np.asarray(V)
    a = np.asarray(A)
    if v.ndim != 2 or a.ndim != 2:
        raise ValueError(f"V and A must be 2-d (got shapes {v.shape} and {a.shape})")
    if v.shape[1] != a.shape[0]:
        raise ValueError(f"V is {v.shape[0]}x{v.shape[1]} but A is {a.shape[0]}x{a.shape[1]}")
    p, sv = _exact_ints(v, "V")
    q, sa = _exact_ints(a, "A")
    return FlipFactors(np.ascontiguousarray(p.T), q, 1 / (sv * sa))


def flip_matrix(V: Any, A: Any) -> np.ndarray:
    """The exact integer matrix ``X`` (n × k·m) of the flip problem of a network.

    Row ``i`` is ``vec(v_i a_iᵀ)`` (row-major) times one common positive scale chosen so that all
    entries are integers (a power of two for float weights).  The result is an int64 array when
    all entries fit, else an object array of Python ints.  For large float networks the object
    array is big and slow to build (n = 4096, k·m = 7840 float32 takes ~10 s and ~4 GB); use
    :func:`flip_factors` (or :func:`network_flip_sets`) there, which represents the same matrix
    in factored form.
    """
    return flip_factors(V, A).to_array()


def _wrap(X: Any) -> _IntMatrix:
    if isinstance(X, (FlipFactors, _Dense)):
        return X
    if isinstance(X, np.ndarray):
        arr = X
    else:
        rows = [list(r) for r in X]
        width = len(rows[0]) if rows else 0
        if any(len(r) != width for r in rows):
            raise ValueError("rows of different lengths")
        arr = np.empty((len(rows), width), dtype=object)
        for i, r in enumerate(rows):
            arr[i, :] = r
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {arr.shape}")
    if arr.dtype.kind in "iub":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 1 << 62:
            return _Dense(arr.astype(object))
        return _Dense(arr.astype(np.int64))
    if arr.dtype == object:
        for x in arr.flat:
            if not isinstance(x, (int, np.integer)) or isinstance(x, bool):
                if isinstance(x, Fraction) and x.denominator == 1:
                    continue
                raise TypeError(f"X must hold integers, found {x!r}")
        obj = np.frompyfunc(int, 1, 1)(arr) if arr.size else arr
        obj = np.asarray(obj, dtype=object).reshape(arr.shape)
        if obj.size and all(-(1 << 62) < int(v) < (1 << 62) for v in obj.flat):
            return _Dense(obj.astype(np.int64))
        return _Dense(obj)
    raise TypeError(f"X must be an integer matrix, got dtype {arr.dtype}")


# ============================================================================================
# exact verification
# ============================================================================================


def _combos_zero(M: _IntMatrix, rows: np.ndarray, combos: np.ndarray) -> np.ndarray:
    """Exactly decide, for each row ``c`` of the integer matrix ``combos`` (len(rows) columns),
    whether ``Σ_i combos[c, i] · X[rows[i], :] == 0``.

    Multi-modular: the sums are computed modulo primes q < 2**20 with exact float64 BLAS
    products until the product of the primes exceeds twice a rigorous bound of the sums.
    """
    c = combos.shape[0]
    if c == 0:
        return np.zeros(0, dtype=bool)
    n, d = M.shape
    if d == 0 or len(rows) == 0:
        return np.ones(c, dtype=bool)
    cabs = np.abs(combos.astype(np.float64))
    colbound = M.abs_col_sums(rows, cabs.max(axis=0))
    bound = float(colbound.max())
    capacity = sum(math.log2(q) for q in _VPRIMES)
    if not math.isfinite(bound) or math.log2(2 * bound + 2) >= capacity:
        return np.array([_python_combo_zero(M, rows, combos[i]) for i in range(c)], dtype=bool)
    need = math.log2(2 * bound + 2)
    ok = np.ones(c, dtype=bool)
    have = 0.0
    for q in _VPRIMES:
        if have > need:
            break
        have += math.log2(q)
        res = M.residues(q, rows).astype(np.float64)
        cm = np.mod(combos, q).astype(np.float64)
        # entries of cm @ res are below len(rows) * q**2 < 2**53 when len(rows) < 2**13
        step = 1 << 12
        for s0 in range(0, len(rows), step):
            part = cm[:, s0 : s0 + step] @ res[s0 : s0 + step]
            if s0 == 0:
                acc = np.mod(part, q)
            else:
                acc = np.mod(acc + part, q)
        ok &= ~np.any(acc != 0, axis=1)
        if not ok.any():
            return ok
    return ok


def _python_combo_zero(M: _IntMatrix, rows: np.ndarray, coef: np.ndarray) -> bool:
    nzr = np.flatnonzero(coef)
    if nzr.size == 0:
        return True
    ex = M.exact(rows[nzr])
    cf = np.array([int(x) for x in coef[nzr]], dtype=object)
    tot = cf @ ex
    return all(int(t) == 0 for t in np.atleast_1d(tot))


def _python_sum_zero(M: _IntMatrix, T: Sequence[int]) -> bool:
    """Σ_{i∈T} X[i] == 0 with Python integers."""
    idx = np.asarray(sorted(T), dtype=np.int64)
    if isinstance(M, FlipFactors):
        p = M.P[idx].astype(object)
        q = M.Q[idx].astype(object)
        tot = p.T @ q
    else:
        tot = M.exact(idx).sum(axis=0)
    return all(int(t) == 0 for t in np.atleast_1d(tot).ravel())


def _verify_sets(M: _IntMatrix, sets: Sequence[Sequence[int]]) -> list[bool]:
    """Exact verification of many sets (Python ints when cheap, else multi-modular)."""
    if not sets:
        return []
    d = M.shape[1]
    work = sum(len(t) for t in sets) * max(d, 1)
    if work <= 2_000_000:
        return [len(t) > 0 and _python_sum_zero(M, t) for t in sets]
    union = np.array(sorted({i for t in sets for i in t}), dtype=np.int64)
    pos = {int(g): j for j, g in enumerate(union)}
    out: list[bool] = []
    for s0 in range(0, len(sets), 2048):
        chunk = sets[s0 : s0 + 2048]
        combos = np.zeros((len(chunk), len(union)), dtype=np.int64)
        for r, t in enumerate(chunk):
            combos[r, [pos[i] for i in t]] = 1
        out.extend(bool(x) and len(t) > 0 for x, t in zip(_combos_zero(M, union, combos), chunk, strict=True))
    return out


def is_flip_set(X: Any, T: Iterable[int]) -> bool:
    """Exactly decide whether ``T`` is a flip set of ``X``: nonempty with ``Σ_{i∈T} X[i] = 0``.

    ``X`` is an integer matrix (rows of ints, int/object numpy array) or a :class:`FlipFactors`.
    """
    M = _wrap(X)
    idx = sorted(set(int(i) for i in T))
    if not idx:
        return False
    n = M.shape[0]
    if idx[0] < 0 or idx[-1] >= n:
        raise IndexError(f"index out of range for {n} rows")
    return _python_sum_zero(M, idx)


# ============================================================================================
# multi-limb exact integers (values modulo 2**(56 L)), Kronecker packing
# ============================================================================================


def _limbs_norm(a: np.ndarray) -> np.ndarray:
    """Carry-normalise (in place) nonnegative limbs, modulo 2**(56 L)."""
    L = a.shape[1]
    for j in range(L - 1):
        carry = a[:, j] >> _LB
        a[:, j] &= _LMASK
        a[:, j + 1] += carry
    a[:, L - 1] &= _LMASK
    return a


def _limbs_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _limbs_norm(a + b)


def _limbs_neg(a: np.ndarray) -> np.ndarray:
    out = _LMASK - a
    out[:, 0] += 1
    return _limbs_norm(out)


def _to_limbs(values: Sequence[int], L: int) -> np.ndarray:
    mod = 1 << (_LB * L)
    out = np.zeros((len(values), L), dtype=np.int64)
    for i, v in enumerate(values):
        v %= mod
        for j in range(L):
            out[i, j] = v & _LMASK
            v >>= _LB
    return out


def _bits_key(a: np.ndarray, lo: int, width: int) -> np.ndarray:
    """Bits [lo, lo+width) of each multi-limb value (width <= 56)."""
    j, off = divmod(lo, _LB)
    au = a.view(np.uint64)
    key = au[:, j] >> np.uint64(off)
    if off + width > _LB and j + 1 < a.shape[1]:
        key = key | (au[:, j + 1] << np.uint64(_LB - off))  # wraps modulo 2**64: only low bits kept
    return (key & np.uint64((1 << width) - 1)).astype(np.int64)


_HASH_MULT = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93] * 64, dtype=np.uint64
)


def _hash_rows(a: np.ndarray) -> np.ndarray:
    h = np.zeros(a.shape[0], dtype=np.uint64)
    au = a.view(np.uint64)
    for j in range(a.shape[1]):
        h ^= au[:, j] * _HASH_MULT[j]
        h = (h ^ (h >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
    return h


def _join_equal(a: np.ndarray, b: np.ndarray, max_pairs: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Pairs (i, j) with a[i] == b[j] (rows of limbs, compared exactly).

    Returns (total number of pairs, ia, ib) with at most ``max_pairs`` pairs listed; the total
    is computed from run lengths, without listing every pair.
    """
    e = np.zeros(0, dtype=np.int64)
    if a.shape[0] == 0 or b.shape[0] == 0:
        return 0, e, e
    ha = _hash_rows(a)
    hb = _hash_rows(b)
    order = np.argsort(ha, kind="stable")
    hs = ha[order]
    sa = a[order]
    same_hash = hs[1:] == hs[:-1]
    if np.any(same_hash & np.any(sa[1:] != sa[:-1], axis=1)):
        # a hash collision inside ``a``: sort exactly (lexicographically) instead
        order = np.lexsort(a.T[::-1])
        sa = a[order]
        new_run = np.concatenate([[True], np.any(sa[1:] != sa[:-1], axis=1)])
        hs = np.cumsum(new_run).astype(np.uint64)  # run ids as "hashes" of a
        run_rows = sa[new_run]
        # exact lookup of b's rows among the runs
        pos = np.zeros(len(b), dtype=np.int64)
        found = np.zeros(len(b), dtype=bool)
        keyed = {row.tobytes(): k for k, row in enumerate(run_rows)}
        for j in range(len(b)):
            k = keyed.get(b[j].tobytes())
            if k is not None:
                pos[j], found[j] = k + 1, True
        hb = np.where(found, pos, 0).astype(np.uint64)
    lo = np.searchsorted(hs, hb, side="left")
    hi = np.searchsorted(hs, hb, side="right")
    hit = np.flatnonzero(hi > lo)
    if hit.size == 0:
        return 0, e, e
    # runs of equal hashes hold equal rows (checked above): compare one representative
    eq = np.all(sa[lo[hit]] == b[hit], axis=1)
    hit = hit[eq]
    cnt = (hi - lo)[hit]
    total = int(cnt.sum())
    # list the first max_pairs pairs
    take = np.searchsorted(np.cumsum(cnt), max_pairs, side="left") + 1
    hit_l, cnt_l = hit[:take], cnt[:take]
    starts = np.cumsum(cnt_l) - cnt_l
    within = np.arange(int(cnt_l.sum())) - np.repeat(starts, cnt_l)
    ia = order[np.repeat(lo[hit_l], cnt_l) + within]
    ib = np.repeat(hit_l, cnt_l)
    return total, ia[:max_pairs], ib[:max_pairs]


def _subset_sums(z: np.ndarray) -> np.ndarray:
    """All 2**h subset sums of the h rows of limbs z; index = bitmask of the subset."""
    L = z.shape[1]
    out = np.zeros((1, L), dtype=np.int64)
    for e in range(z.shape[0]):
        out = np.concatenate([out, _limbs_add(out, z[e][None, :])])
    return out


def _two_adic(v: int) -> int:
    return (v & -v).bit_length() - 1


@dataclass
class _Packed:
    """Rows of an exact integer matrix packed (Kronecker) into one integer each.

    Σ_{i∈T} z_i == 0 (as integers) iff Σ_{i∈T} X[i, cols] == 0, and the packed value is known
    modulo 2**(56 L) with |Σ z| < 2**(bits-1) <= 2**(56 L - 1), so equality modulo 2**(56 L)
    decides it.
    """

    limbs: np.ndarray  # (s, L) int64
    bits: int  # total number of significant bits to cancel
    scaled: list[list[int]]  # per-row scaled coordinates (for estimates)


def _pack(rows_exact: np.ndarray) -> _Packed:
    s, r = rows_exact.shape
    cols: list[list[int]] = []
    for j in range(r):
        col = [int(x) for x in rows_exact[:, j]]
        nzv = [v for v in col if v]
        if not nzv:
            continue
        val = min(_two_adic(v) for v in nzv)
        cols.append([v >> val for v in col])
    widths = [sum(abs(v) for v in c).bit_length() + 1 for c in cols]
    total = sum(widths) + 1
    L = max(1, -(-total // _LB))
    packed = [0] * s
    off = 0
    for c, w in zip(cols, widths, strict=True):
        for i in range(s):
            packed[i] += c[i] << off
        off += w
    scaled = [[c[i] for c in cols] for i in range(s)]
    return _Packed(_to_limbs(packed, L), total, scaled)


# ============================================================================================
# exhaustive enumeration inside a block
# ============================================================================================


@dataclass
class _BlockResult:
    sets: list[tuple[int, ...]] = field(default_factory=list)  # global indices, verified
    count: int | None = None  # exact number of nonempty per-block flip sets, if known
    complete: bool = False  # sets is the whole per-block family
    method: str = ""
    note: str | None = None
    log2_estimate: float | None = None


def _enumerate_nullspace(
    M: _IntMatrix,
    gidx: np.ndarray,
    free_pos: np.ndarray,
    dep_pos: np.ndarray,
    coef: np.ndarray,
    p: int,
    max_sets: int,
    deadline: float,
) -> _BlockResult | None:
    """All 0/1 vectors of the block's nullspace mod p (basis: unit on ``free_pos``, ``coef`` on
    ``dep_pos``), each verified exactly.  Returns None if the deadline passes."""
    w = len(free_pos)
    s = len(gidx)
    field_ = linalg._Field(p)
    cf = coef.astype(np.float64)
    cands: list[np.ndarray] = []
    chunk = 1 << 14
    bit_w = np.arange(w, dtype=np.int64)
    for start in range(1, 1 << w, chunk):
        if w > 12 and time.monotonic() > deadline:
            return None
        ids = np.arange(start, min(start + chunk, 1 << w), dtype=np.int64)
        bits = ((ids[:, None] >> bit_w[None, :]) & 1).astype(np.float64)
        vals = field_.reduce(bits @ cf) if len(dep_pos) else np.zeros((len(ids), 0))
        ok = np.all((vals == 0) | (vals == 1), axis=1)
        for r in np.flatnonzero(ok):
            y = np.zeros(s, dtype=np.int64)
            y[free_pos] = bits[r].astype(np.int64)
            if len(dep_pos):
                y[dep_pos] = vals[r].astype(np.int64)
            cands.append(y)
    res = _BlockResult(method="nullspace enumeration")
    if not cands:
        res.count, res.complete = 0, True
        return res
    C = np.array(cands, dtype=np.int64)
    good = np.zeros(len(C), dtype=bool)
    for s0 in range(0, len(C), 4096):
        if s0 and time.monotonic() > deadline:
            return None
        good[s0 : s0 + 4096] = _combos_zero(M, gidx, C[s0 : s0 + 4096])
    G = C[good]
    res.count = int(len(G))
    res.sets = [tuple(int(g) for g in gidx[np.flatnonzero(row)]) for row in G[:max_sets]]
    res.complete = len(G) <= max_sets
    return res


def _mitm(
    M: _IntMatrix,
    gidx: np.ndarray,
    packed: _Packed,
    exact_on_all_columns: bool,
    max_sets: int,
    deadline: float,
) -> _BlockResult:
    """Meet-in-the-middle over the packed exact integers of a block."""
    s = len(gidx)
    z = packed.limbs
    s1 = s // 2
    a = _subset_sums(z[:s1])
    b = _limbs_neg(_subset_sums(z[s1:]))
    listed_cap = max(4 * max_sets, 1024)
    total, ia, ib = _join_equal(a, b, listed_cap + 1)
    total -= 1  # the empty set
    keep = ~((ia == 0) & (ib == 0))
    ia, ib = ia[keep], ib[keep]
    cand: list[tuple[int, ...]] = []
    for x, y in zip(ia.tolist(), ib.tolist(), strict=True):
        members = [i for i in range(s1) if (x >> i) & 1] + [s1 + i for i in range(s - s1) if (y >> i) & 1]
        cand.append(tuple(int(g) for g in gidx[members]))
    res = _BlockResult(method="meet-in-the-middle")
    if exact_on_all_columns:
        res.count = total
        ver = _verify_sets(M, cand[:max_sets])
        if not all(ver):  # cannot happen: packing is exact
            raise AssertionError("meet-in-the-middle produced a non-flip set")
        res.sets = sorted(cand[:max_sets], key=lambda t: (len(t), t))
        res.complete = total <= max_sets
        return res
    # candidates vanish on a spanning set of columns only: verify them all
    if total > len(cand):
        res.count = None
        res.note = f"{total} candidate sets (zero on {packed.bits}-bit packed columns) not all verified"
    ver = _verify_sets(M, cand) if time.monotonic() < deadline else [False] * len(cand)
    good = [t for t, ok in zip(cand, ver, strict=True) if ok]
    if total <= len(cand):
        res.count = len(good)
        res.complete = len(good) <= max_sets
    res.sets = sorted(good, key=lambda t: (len(t), t))[:max_sets]
    return res


# ============================================================================================
# generalized birthday (Wagner k-tree) search
# ============================================================================================


@dataclass(frozen=True)
class _KTreeConfig:
    """A complete binary merge tree: 2**levels leaves, each the 2**group subset sums of a group
    of ``group`` elements; lists are capped at about 2**logsize entries; the merges of level
    t+1 cancel the packed bits ``windows[t] = (lo, width)``; the root matches all bits."""

    levels: int
    group: int
    logsize: int
    windows: tuple[tuple[int, int], ...]
    bits: int
    log2_expected: float
    cost: float

    @property
    def size(self) -> int:
        return self.group << self.levels


@dataclass(frozen=True)
class _Profile:
    """Layout of the packed integers of the first ``size`` elements.

    ``cum[k]`` is the (heuristic) entropy of the packed bits [0, k): the low bits of each
    coordinate of a subset sum are close to uniform (1 bit each), the top bits (above about
    log2 of the standard deviation of the sums) are nearly determined (0 bits each).
    """

    bits: int
    cum: np.ndarray  # float64, length bits + 1


def _window(prof: _Profile, lo: int, need: float) -> int:
    """Smallest width w (<= 56) such that the entropy of bits [lo, lo+w) reaches ``need``, then
    extended over the following zero-entropy bits."""
    target = prof.cum[lo] + need - 1e-9
    hi = int(np.searchsorted(prof.cum, target, side="left"))
    hi = min(max(hi, lo), prof.bits)
    while hi < prof.bits and prof.cum[hi + 1] - prof.cum[hi] < 1e-9 and hi - lo < 56:
        hi += 1
    return min(hi - lo, 56)


def _ktree_config(profiles: dict[int, _Profile], bmax: int, mem_entries: float) -> _KTreeConfig | None:
    """Cheapest tree expecting >= 8 solutions (else the one expecting the most)."""
    s_max = max(profiles)
    best: _KTreeConfig | None = None
    fallback: _KTreeConfig | None = None
    for levels in range(1, 16):
        if 1 << levels > s_max:
            break
        for group in range(1, bmax + 1):
            size = group << levels
            if size > s_max:
                break
            prof = profiles.get(size)
            if prof is None:
                continue
            for b in range(max(group, 8), bmax + 1):
                a = group
                lo = 0
                windows: list[tuple[int, int]] = []
                for _ in range(1, levels):
                    a2 = min(2 * a, b)
                    width = _window(prof, lo, 2 * a - a2) if 2 * a > a2 else 0
                    windows.append((lo, width))
                    lo += width
                    a = a2
                rest = float(prof.cum[prof.bits] - prof.cum[lo])
                log2e = 2 * a - rest
                nodes = (1 << levels) - 1
                if nodes * (1 << b) > mem_entries:
                    break
                cost = float((1 << levels) * (1 << group) + nodes * (1 << b))
                cfg = _KTreeConfig(levels, group, b, tuple(windows), prof.bits, log2e, cost)
                if log2e >= 3:
                    if best is None or cost < best.cost:
                        best = cfg
                    break  # larger b only costs more
                if fallback is None or (log2e, -cost) > (fallback.log2_expected, -fallback.cost):
                    fallback = cfg
    return best if best is not None else fallback


def _sorted_join(ku: np.ndarray, kv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (i, j) with ku[i] == kv[j]."""
    ou = np.argsort(ku, kind="stable")
    ov = np.argsort(kv, kind="stable")
    su = ku[ou]
    sv = kv[ov]
    left = np.searchsorted(su, sv, side="left")
    right = np.searchsorted(su, sv, side="right")
    cnt = right - left
    tot = int(cnt.sum())
    if tot == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    jv = np.repeat(ov, cnt)
    starts = np.cumsum(cnt) - cnt
    within = np.arange(tot, dtype=np.int64) - np.repeat(starts, cnt)
    iu = ou[np.repeat(left, cnt) + within]
    return iu, jv


class _KTree:
    def __init__(self, z: np.ndarray, cfg: _KTreeConfig, rng: np.random.Generator) -> None:
        self.z = z
        self.cfg = cfg
        self.rng = rng
        self.cap = 1 << (cfg.logsize + 1)
        self.leaf_elems: dict[int, np.ndarray] = {}
        self.ptrs: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def merge(self, node: int, u: np.ndarray, v: np.ndarray, lo: int, width: int) -> np.ndarray:
        if width == 0:
            iu = np.repeat(np.arange(len(u), dtype=np.int64), len(v))
            iv = np.tile(np.arange(len(v), dtype=np.int64), len(u))
        else:
            iu, iv = _sorted_join(_bits_key(u, lo, width), _bits_key(_limbs_neg(v), lo, width))
        if len(iu) > self.cap:
            pick = np.sort(self.rng.choice(len(iu), size=self.cap, replace=False))
            iu, iv = iu[pick], iv[pick]
        self.ptrs[node] = (iu.astype(np.int32), iv.astype(np.int32))
        return _limbs_add(u[iu], v[iv])

    def run(self, perm: np.ndarray, deadline: float, max_pairs: int) -> list[np.ndarray] | None:
        cfg = self.cfg
        g = cfg.group

        def build(node: int, level: int, leaf0: int) -> np.ndarray | None:
            if time.monotonic() > deadline:
                return None
            if level == 0:
                elems = perm[leaf0 * g : (leaf0 + 1) * g]
                self.leaf_elems[node] = elems
                return _subset_sums(self.z[elems])
            half = 1 << (level - 1)
            u = build(2 * node, level - 1, leaf0)
            if u is None:
                return None
            v = build(2 * node + 1, level - 1, leaf0 + half)
            if v is None:
                return None
            lo, width = cfg.windows[level - 1]
            return self.merge(node, u, v, lo, width)

        top = cfg.levels
        u = build(2, top - 1, 0)
        if u is None:
            return None
        v = build(3, top - 1, 1 << (top - 1))
        if v is None:
            return None
        _, ia, ib = _join_equal(u, _limbs_neg(v), max_pairs + 1)
        out: list[np.ndarray] = []
        for x, y in zip(ia.tolist(), ib.tolist(), strict=True):
            members = self.recover(2, top - 1, x) + self.recover(3, top - 1, y)
            if members:
                out.append(np.array(sorted(members), dtype=np.int64))
        return out

    def recover(self, node: int, level: int, idx: int) -> list[int]:
        if level == 0:
            elems = self.leaf_elems[node]
            return [int(elems[e]) for e in range(len(elems)) if (idx >> e) & 1]
        iu, iv = self.ptrs[node]
        left = self.recover(2 * node, level - 1, int(iu[idx]))
        return left + self.recover(2 * node + 1, level - 1, int(iv[idx]))


def _valuation_order(rows_exact: np.ndarray) -> np.ndarray:
    """Elements sorted by decreasing 2-adic valuation (min over coordinates, then sum).

    Float data have most of their low-order bits in a few elements of small magnitude; leaving
    those out shrinks the number of bits the search has to cancel.
    """
    s = rows_exact.shape[0]
    keys = []
    for i in range(s):
        vs = [_two_adic(int(x)) for x in rows_exact[i] if int(x)]
        keys.append((-(min(vs) if vs else 1 << 30), -sum(vs), i))
    keys.sort()
    return np.array([k[2] for k in keys], dtype=np.int64)


def _profiles(rows_ordered: np.ndarray, sizes: Iterable[int]) -> dict[int, _Profile]:
    """Packed layouts (see _pack) of the first ``size`` rows, for each requested size."""
    s, r = rows_ordered.shape
    want = sorted({x for x in sizes if 1 <= x <= s})
    out: dict[int, _Profile] = {}
    sums = [0] * r
    sq = [0.0] * r
    vmin = [1 << 30] * r
    k = 0
    for i in range(s):
        for j in range(r):
            x = int(rows_ordered[i, j])
            if x:
                sums[j] += abs(x)
                sq[j] += float(x) ** 2
                vmin[j] = min(vmin[j], _two_adic(x))
        if k < len(want) and want[k] == i + 1:
            k += 1
            ent: list[float] = []
            for j in range(r):
                if not sums[j]:
                    continue
                width = (sums[j] >> vmin[j]).bit_length() + 1
                log2sd = 0.5 * math.log2(sq[j]) - 1 - vmin[j]
                eff = min(width, max(1, math.ceil(log2sd + 2.05)))
                ent += [1.0] * eff + [0.0] * (width - eff)
            ent.append(0.0)
            cum = np.concatenate([[0.0], np.cumsum(ent)])
            out[i + 1] = _Profile(len(ent), cum)
    return out


def _ktree_search(
    M: _IntMatrix,
    gidx: np.ndarray,
    rows_exact: np.ndarray,
    max_sets: int,
    deadline: float,
    rng: np.random.Generator,
    bmax: int = 20,
    mem_entries: float = 6e7,
    min_log2_expected: float = -10.0,
) -> tuple[list[tuple[int, ...]], str]:
    """Generalized-birthday (Wagner k-tree) search for zero sums among the block's rows.

    A randomized search: it finds flip sets when there are many, and proves nothing otherwise.
    """
    s = len(gidx)
    order = _valuation_order(rows_exact)
    sizes = {g << lv for lv in range(1, 16) for g in range(1, bmax + 1) if g << lv <= s}
    cfg = _ktree_config(_profiles(rows_exact[order], sizes), bmax, mem_entries)
    if cfg is None:
        return [], "k-tree: block too small"
    if cfg.log2_expected < min_log2_expected:
        return [], (
            f"k-tree: out of reach, {cfg.bits} bits to cancel with {cfg.size} of {s} elements; the best tree"
            f" (2^{cfg.levels} lists of <= 2^{cfg.logsize}) expects 2^{cfg.log2_expected:.0f} solutions"
            " per round; not run"
        )
    sub = order[: cfg.size]
    pk = _pack(rows_exact[sub])
    if pk.bits != cfg.bits:
        raise AssertionError("packed layout differs from the plan")
    found: set[tuple[int, ...]] = set()
    rounds = 0
    while time.monotonic() < deadline and len(found) < max_sets:
        rounds += 1
        perm = rng.permutation(cfg.size)
        kt = _KTree(pk.limbs, cfg, rng)
        sols = kt.run(perm, deadline, max_sets - len(found))
        if sols is None:
            break
        cand = sorted({tuple(sorted(int(g) for g in gidx[sub[sol]])) for sol in sols} - found)
        for t, ok in zip(cand, _verify_sets(M, cand), strict=True):
            if ok and len(found) < max_sets:
                found.add(t)
        if found and cfg.log2_expected >= 3:
            break
    info = (
        f"k-tree: {cfg.size} of {s} elements, {pk.bits} bits, 2^{cfg.levels} lists of 2^{cfg.group}"
        f" subsets capped at 2^{cfg.logsize}, expected 2^{cfg.log2_expected:.0f} solutions per round,"
        f" {rounds} round(s)"
    )
    return sorted(found, key=lambda t: (len(t), t)), info


def _log2_count_estimate(rows_exact: np.ndarray) -> float | None:
    """Heuristic log2 of the number of zero subset sums (local central limit theorem)."""
    s, r = rows_exact.shape
    if s == 0:
        return None
    cols = []
    for j in range(r):
        col = [int(x) for x in rows_exact[:, j]]
        if any(col):
            g = 0
            for v in col:
                g = math.gcd(g, v)
            cols.append([v // g for v in col])
    if not cols:
        return float(s)
    rr = len(cols)
    if rr > 64:
        return None
    # work with coordinates rescaled by a power of two to stay within float range
    shifts = [max(0, max(abs(v) for v in c).bit_length() - 900) for c in cols]
    Z = np.array([[float(c[i] >> sh) for c, sh in zip(cols, shifts, strict=True)] for i in range(s)])
    cov = 0.25 * (Z.T @ Z)
    sign, logdet = np.linalg.slogdet(cov)
    if sign <= 0:
        return None
    mu = 0.5 * Z.sum(axis=0)
    quad = float(mu @ np.linalg.solve(cov, mu))
    log2 = s - 0.5 * (rr * math.log2(2 * math.pi) + logdet / math.log(2) + 2 * sum(shifts))
    log2 -= 0.5 * quad / math.log(2)
    return float(log2)


# ============================================================================================
# the result
# ============================================================================================


@dataclass(frozen=True)
class FlipSearch:
    """Result of :func:`find_flip_sets`.

    * ``sets``: flip sets (sorted tuples of row indices), each verified exactly;
    * ``complete``: True iff ``sets`` is provably the list of *all* nonempty flip sets;
    * ``count``: the exact number of nonempty flip sets whenever it was determined (also when the
      listing was truncated at ``max_sets``), else None;
    * ``count_lower_bound``: a proven lower bound of that number;
    * ``count_estimate``: a heuristic estimate (local central limit theorem) when the count is
      unknown, else None (``count_estimate_log2`` is its base-2 logarithm);
    * ``certificate``: how the answer was obtained; ``undecided``: what was not decided;
    * ``zero_rows``: the rows that are zero (each a trivial flip set, and any union of a flip set
      with zero rows is again one); ``blocks``: the independent blocks of the remaining search
      (flip sets are unions of per-block flip sets and zero rows); ``rank``: the rank modulo a
      prime of the nonzero rows (a lower bound of their rank over Q).
    """

    sets: list[tuple[int, ...]]
    complete: bool
    count: int | None
    count_lower_bound: int
    count_estimate: float | None
    certificate: str
    undecided: str | None
    n: int = 0
    zero_rows: tuple[int, ...] = ()
    blocks: tuple[tuple[int, ...], ...] = ()
    rank: int | None = None
    count_estimate_log2: float | None = None

    @property
    def decided(self) -> bool:
        """True when the family of flip sets is determined (``count`` is exact)."""
        return self.count is not None

    def to_dict(self) -> dict[str, Any]:
        est = self.count_estimate
        return {
            "sets": [list(t) for t in self.sets],
            "complete": self.complete,
            "count": self.count,
            "count_lower_bound": self.count_lower_bound,
            "count_estimate": None if est is None or not math.isfinite(est) else est,
            "count_estimate_log2": self.count_estimate_log2,
            "certificate": self.certificate,
            "undecided": self.undecided,
            "n": self.n,
            "zero_rows": list(self.zero_rows),
            "blocks": [list(b) for b in self.blocks],
            "rank": self.rank,
        }


def _unions(parts: list[list[tuple[int, ...]]], limit: int) -> list[tuple[int, ...]]:
    """Up to ``limit`` nonempty unions taking at most one set from each part, fewest parts first."""
    out: list[tuple[int, ...]] = []
    nparts = len(parts)
    for r in range(1, nparts + 1):
        for chosen in itertools.combinations(range(nparts), r):
            for pick in itertools.product(*(parts[c] for c in chosen)):
                out.append(tuple(sorted(itertools.chain.from_iterable(pick))))
                if len(out) >= limit:
                    return out
    return out


def _as_rng(rng: Any) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(0x5EED if rng is None else rng)


# ============================================================================================
# main entry point
# ============================================================================================


def _coef(lu: linalg.LUModP) -> np.ndarray:
    """Coefficients expressing each non-pivot row through the pivot rows (mod p), in [0, p)."""
    a = lu.lu
    rk = lu.rank
    w = a.shape[0] - rk
    if w == 0 or rk == 0:
        return np.zeros((w, rk), dtype=np.int64)
    f = linalg._Field(lu.p)
    cols = list(lu.pivot_cols)
    coef = f.solve_lower_right(a[:rk][:, cols], a[rk:][:, cols])
    return np.mod(-coef, lu.p).astype(np.int64)  # null vector: e_j + Σ coef[j, t] e_{perm[t]}


@dataclass
class _Block:
    pos: np.ndarray  # positions among the nonzero rows, sorted
    free: np.ndarray  # positions (within pos) of the non-pivot rows
    dep: np.ndarray  # positions (within pos) of the pivot rows
    coef: np.ndarray  # (len(free), len(dep)) null basis coefficients mod p
    p: int = _P


def _blocks_from_lu(lu: linalg.LUModP, coef: np.ndarray) -> list[_Block]:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n1 = lu.lu.shape[0]
    rk = lu.rank
    perm = lu.perm
    w = n1 - rk
    if w == 0:
        return []
    qi, ti = np.nonzero(coef)
    src = perm[rk + qi]
    dst = perm[ti]
    in_support = np.zeros(n1, dtype=bool)
    in_support[perm[rk:]] = True
    in_support[dst] = True
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n1, n1))
    _, labels = connected_components(graph, directed=False)
    nonpiv_row = {int(perm[rk + q]): q for q in range(w)}
    piv_col = {int(perm[t]): t for t in range(rk)}
    groups: dict[int, list[int]] = {}
    for i in np.flatnonzero(in_support):
        groups.setdefault(int(labels[i]), []).append(int(i))
    blocks: list[_Block] = []
    for members in groups.values():
        pos = np.array(sorted(members), dtype=np.int64)
        free = np.array([k for k, i in enumerate(pos) if int(i) in nonpiv_row], dtype=np.int64)
        dep = np.array([k for k, i in enumerate(pos) if int(i) in piv_col], dtype=np.int64)
        qrows = [nonpiv_row[int(pos[k])] for k in free]
        tcols = [piv_col[int(pos[k])] for k in dep]
        blocks.append(_Block(pos, free, dep, coef[np.ix_(qrows, tcols)], lu.p))
    blocks.sort(key=lambda b: (len(b.pos), int(b.pos[0])))
    return blocks


def _certify_block(
    M: _IntMatrix, gidx: np.ndarray, w: int, deadline: float
) -> tuple[bool, np.ndarray | None, str]:
    """Exactly certify that the left nullspace over Q of X[gidx, :] has dimension ``w``.

    Returns (certified, columns C with rank_Q X[gidx, C] = len(gidx) - w, note).  When certified,
    a subset of the block sums to zero on the columns C iff it sums to zero on all columns.
    """
    s = len(gidx)
    d = M.shape[1]
    r = s - w
    R = M.residues(_P, gidx)
    lu = linalg.lu_mod_p(R, _P)
    if lu.rank != r:
        return False, None, "rank mismatch"
    cols = np.array(lu.pivot_cols, dtype=np.int64)
    if r == d:
        return True, cols, "all columns independent"
    if r > 250 or (r > 20 and time.monotonic() > deadline):
        return False, cols, "block too large for an exact nullspace"
    ex = M.exact(gidx, cols)
    mat = flint.fmpz_mat([[int(ex[i, j]) for i in range(s)] for j in range(r)]) if r else None
    if mat is None:
        basis = np.eye(s, dtype=object)
    else:
        nsp, nullity = mat.nullspace()
        if int(nullity) != w:
            return False, cols, "nullity mismatch"
        tl = nsp.tolist()
        basis = np.array([[int(tl[i][k]) for i in range(s)] for k in range(w)], dtype=object)
        # make each vector primitive to keep the coefficients small
        for k in range(w):
            g = 0
            for x in basis[k]:
                g = math.gcd(g, int(x))
            if g > 1:
                basis[k] = np.array([int(x) // g for x in basis[k]], dtype=object)
    big = max((abs(int(x)) for x in basis.flat), default=0)
    if big * s < 2**30:
        ok = _combos_zero(M, gidx, basis.astype(np.int64))
    else:
        ok = np.array([_python_combo_zero(M, gidx, basis[k]) for k in range(w)], dtype=bool)
    if not ok.all():
        return False, cols, "exact null vectors do not annihilate all columns"
    return True, cols, "exact nullspace verified"


def find_flip_sets(
    X: Any,
    *,
    max_sets: int = 10_000,
    budget_seconds: float = 10.0,
    rng: Any = None,
    mitm_max: int = 40,
    enum_max: int = 22,
) -> FlipSearch:
    """Find the flip sets of an integer matrix: nonempty ``T`` with ``Σ_{i∈T} X[i] = 0``.

    ``X``: rows of ints, an int/object numpy array (e.g. :func:`flip_matrix`), or a
    :class:`FlipFactors` (:func:`flip_factors`).  ``max_sets`` caps the listed sets (counting
    may still be exact), ``budget_seconds`` bounds the search (a few fixed-cost steps such as
    the rank computation are not interruptible), ``rng`` seeds the randomized searches (None:
    a fixed seed, so results are reproducible), ``mitm_max`` / ``enum_max`` are the largest
    block size for meet-in-the-middle and the largest nullspace dimension for enumeration.
    """
    t0 = time.monotonic()
    deadline = t0 + max(0.0, budget_seconds)
    gen = _as_rng(rng)
    M = _wrap(X)
    n, d = M.shape
    zmask = M.zero_mask()
    zero_rows = tuple(int(i) for i in np.flatnonzero(zmask))
    nonzero = np.flatnonzero(~zmask)
    n1 = len(nonzero)
    nz_count = len(zero_rows)
    zero_factor = 1 << nz_count

    def finish(
        parts: list[list[tuple[int, ...]]],
        counts: list[int | None],
        complete_parts: list[bool],
        certificate: str,
        undecided: list[str],
        blocks: list[np.ndarray],
        rank: int | None,
        log2_est: float | None,
    ) -> FlipSearch:
        exact = all(c is not None for c in counts)
        zparts: list[list[tuple[int, ...]]] = [[(z,)] for z in zero_rows]
        all_parts = parts + zparts
        count: int | None = None
        if exact:
            prod = 1
            for c in counts:
                assert c is not None
                prod *= c + 1
            count = prod * zero_factor - 1
        lb_prod = 1
        for part, c in zip(parts, counts, strict=True):
            lb_prod *= (c if c is not None else len(part)) + 1
        lower = lb_prod * zero_factor - 1
        listing = _unions([p for p in all_parts if p], max_sets)
        complete = exact and all(complete_parts) and count is not None and len(listing) == count
        if complete:
            listing.sort(key=lambda t: (len(t), t))
        und = list(undecided)
        if count is not None and not complete:
            und.append(f"{count} flip sets exist; listing truncated at max_sets={max_sets}")
        est: float | None = None
        est_log2: float | None = None
        if count is None and log2_est is not None:
            est_log2 = log2_est + nz_count
            est = 2.0**est_log2 if est_log2 < 1000 else math.inf
        return FlipSearch(
            sets=listing,
            complete=complete,
            count=count,
            count_lower_bound=max(lower, len(listing)),
            count_estimate=est,
            certificate=certificate,
            undecided="; ".join(und) if und else None,
            n=n,
            zero_rows=zero_rows,
            blocks=tuple(tuple(int(i) for i in b) for b in blocks),
            rank=rank,
            count_estimate_log2=est_log2,
        )

    if n1 == 0:
        cert = "no nonzero rows" + (": every nonempty set of (zero) rows is a flip set" if n else "")
        return finish([], [], [], cert, [], [], 0, None)

    # ---- b. rank modulo p: full row rank certifies that no flip set uses a nonzero row ----
    # A rank deficiency modulo p that is not one over Q (probability ~1e-6) only enlarges the
    # candidate support; every candidate is verified exactly, and blocks are certified over Q.
    if isinstance(M, FlipFactors):
        lu = linalg._lu_field(M.field_residues(_P, nonzero), _P, n1 <= d)
    else:
        lu = linalg.lu_mod_p(M.residues(_P, nonzero), _P, stop_at_full_rank=n1 <= d)
    if lu.rank == n1:
        cert = f"full row rank modulo {_P}: the {n1} nonzero rows are linearly independent"
        if nz_count:
            cert += "; flip sets are the nonempty sets of zero rows"
        return finish([], [], [], cert, [], [], n1, None)
    coef = _coef(lu)
    blocks = _blocks_from_lu(lu, coef)
    rank = lu.rank

    # ---- exact certification of the block decomposition ----
    notes: list[str] = []
    certified: list[bool] = []
    colsets: list[np.ndarray | None] = []
    for blk in blocks:
        gidx = nonzero[blk.pos]
        ok, cols, why = _certify_block(M, gidx, len(blk.free), deadline)
        certified.append(ok)
        colsets.append(cols)
    if len(blocks) > 1 and not all(certified):
        # the decomposition mod p is not proven over Q: search the union as one block
        allpos = np.sort(np.concatenate([b.pos for b in blocks]))
        notes.append("block decomposition modulo p not certified over Q; searched as one block")
        w_all = sum(len(b.free) for b in blocks)
        merged_free = np.searchsorted(allpos, np.concatenate([b.pos[b.free] for b in blocks]))
        merged_dep = np.searchsorted(allpos, np.concatenate([b.pos[b.dep] for b in blocks]))
        cmat = np.zeros((w_all, len(merged_dep)), dtype=np.int64)
        r0 = c0 = 0
        for b in blocks:
            cmat[r0 : r0 + len(b.free), c0 : c0 + len(b.dep)] = b.coef
            r0 += len(b.free)
            c0 += len(b.dep)
        order_f = np.argsort(merged_free)
        order_d = np.argsort(merged_dep)
        merged = _Block(
            allpos, merged_free[order_f], merged_dep[order_d], cmat[np.ix_(order_f, order_d)], blocks[0].p
        )
        blocks = [merged]
        ok, cols, _ = _certify_block(M, nonzero[allpos], w_all, deadline)
        certified, colsets = [ok], [cols]

    # ---- c/d. per-block search ----
    parts: list[list[tuple[int, ...]]] = []
    counts: list[int | None] = []
    complete_parts: list[bool] = []
    methods: set[str] = set()
    undecided: list[str] = []
    log2_total = 0.0
    have_est = True
    for blk, cert_ok, cols in zip(blocks, certified, colsets, strict=True):
        gidx = nonzero[blk.pos]
        s = len(gidx)
        w = len(blk.free)
        res: _BlockResult | None = None
        if w <= enum_max and (w <= 12 or s >= 2 * w or s > mitm_max):
            res = _enumerate_nullspace(M, gidx, blk.free, blk.dep, blk.coef, blk.p, max_sets, deadline)
        if res is None and s <= mitm_max and (s <= 24 or time.monotonic() < deadline):
            use_cols = cols if cols is not None else np.arange(d)
            ex = M.exact(gidx, use_cols)
            packed = _pack(ex)
            exact_cols = cert_ok or len(use_cols) == d
            res = _mitm(M, gidx, packed, exact_cols, max_sets, deadline)
        if res is None and w <= enum_max and time.monotonic() < deadline:
            res = _enumerate_nullspace(M, gidx, blk.free, blk.dep, blk.coef, blk.p, max_sets, deadline)
        if res is None:
            # large block: randomized search
            use_cols = cols if cols is not None else np.arange(d)
            found: list[tuple[int, ...]] = []
            info = ""
            est: float | None = None
            if len(use_cols) <= 16:
                ex = M.exact(gidx, use_cols)
                est = _log2_count_estimate(ex)
                found, info = _ktree_search(M, gidx, ex, max_sets, deadline, gen)
                methods.add("generalized birthday search")
            res = _BlockResult(sets=found, count=None, complete=False, method="k-tree", log2_estimate=est)
            msg = f"block of {s} rows (nullspace dimension {w}): 2^{s} subsets not enumerated"
            msg += f"; {len(found)} flip set(s) found by random search" + (f" ({info})" if info else "")
            undecided.append(msg)
        else:
            methods.add(res.method)
            if res.note:
                undecided.append(res.note)
        parts.append(res.sets)
        counts.append(res.count)
        complete_parts.append(res.complete)
        if res.count is not None:
            log2_total += math.log2(res.count + 1)
        elif res.log2_estimate is not None:
            log2_total += max(res.log2_estimate, math.log2(len(res.sets) + 1))
        else:
            have_est = False
    cert_parts = [f"rank {rank} of {n1} nonzero rows modulo p", f"{len(blocks)} independent block(s)"]
    cert_parts += sorted(methods)
    cert_parts += notes
    log2_est = log2_total if have_est else None
    block_rows = [nonzero[b.pos] for b in blocks]
    cert = "; ".join(cert_parts)
    return finish(parts, counts, complete_parts, cert, undecided, block_rows, rank, log2_est)


def network_flip_sets(V: Any, A: Any, **kwargs: Any) -> FlipSearch:
    """:func:`find_flip_sets` of the network with output weights ``V`` (k×n) and input weights
    ``A`` (n×m), without materialising the n × k·m matrix."""
    return find_flip_sets(flip_factors(V, A), **kwargs)
