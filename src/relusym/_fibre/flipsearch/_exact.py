"""Exact integer data of the flip problem (docs/math/hidden-symmetries.md, docs/math/fibres.md) and exact verification
of flip sets.

The matrix ``X`` whose row ``i`` is ``vec(v_i a_iᵀ)`` times one common positive scale, as a dense
integer array (:class:`_Dense`) or in factored form (:class:`FlipFactors`); the exact reading of
float / integer / rational weights into integers times a scale; and the exact (multi-modular or
Python-integer) decision of whether given 0/1 or integer combinations of rows vanish.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import flint
import numpy as np

from relusym._exact import linalg as linalg
from relusym._exact import modular as modular
from relusym._exact.numbers import check_finite, common_denominator, to_fraction

__all__ = [
    "FlipFactors",
    "flip_factors",
    "flip_matrix",
    "is_flip_set",
    "FLIP_PRIME",
    "IntMatrix",
    "combos_zero",
    "python_combo_zero",
    "verify_sets",
    "wrap",
]

FLIP_PRIME = linalg.FAST_PRIMES[0]


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


class IntMatrix(Protocol):
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
        return np.asarray(sub.astype(object))

    def zero_mask(self) -> np.ndarray:
        if self.data.shape[1] == 0:
            return np.ones(self.data.shape[0], dtype=bool)
        return np.asarray(~np.any(self.data != 0, axis=1))

    def abs_col_sums(self, rows: np.ndarray, coef: np.ndarray | None = None) -> np.ndarray:
        """Upper bounds of Σ_i |coef_i| |x_ij| per column (coef defaults to 1)."""
        a = _abs_float(self.data[rows])
        w = np.ones(len(rows)) if coef is None else coef
        with np.errstate(invalid="ignore", over="ignore"):  # inf bounds (huge entries) send callers to Python ints
            return np.asarray((w @ a) * (1 + 1e-9) + 1.0)


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
                return np.asarray((self.P[:, :, None] * self.Q[:, None, :]).reshape(n, d))
        p = self.P.astype(object)
        q = self.Q.astype(object)
        return np.asarray((p[:, :, None] * q[:, None, :]).reshape(n, d))

    def residues(self, p: int, rows: np.ndarray) -> np.ndarray:
        if p >= 1 << 31:
            raise ValueError("modulus too large")
        pr = _obj_mod(self.P[rows], p)
        qr = _obj_mod(self.Q[rows], p)
        out = pr[:, :, None] * qr[:, None, :]
        np.mod(out, p, out=out)
        return np.asarray(out.reshape(len(rows), -1))

    def field_residues(self, p: int, rows: np.ndarray) -> np.ndarray:
        """Residues as float64 (|x| <= p/2 + 1), ready for the modular LU; p < 2**21."""
        fld = modular.Field(p)
        pr = _obj_mod(self.P[rows], p).astype(np.float64)
        qr = _obj_mod(self.Q[rows], p).astype(np.float64)
        out = pr[:, :, None] * qr[:, None, :]
        return fld.reduce(out.reshape(len(rows), -1))

    def exact(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        p = self.P[rows].astype(object)
        q = self.Q[rows].astype(object)
        if cols is None:
            return np.asarray((p[:, :, None] * q[:, None, :]).reshape(len(rows), -1))
        m = self.Q.shape[1]
        cols = np.asarray(cols)
        return np.asarray(p[:, cols // m] * q[:, cols % m])

    def zero_mask(self) -> np.ndarray:
        zp = ~np.any(self.P != 0, axis=1) if self.P.shape[1] else np.ones(self.P.shape[0], bool)
        zq = ~np.any(self.Q != 0, axis=1) if self.Q.shape[1] else np.ones(self.Q.shape[0], bool)
        return np.asarray(zp | zq)

    def abs_col_sums(self, rows: np.ndarray, coef: np.ndarray | None = None) -> np.ndarray:
        ap = _abs_float(self.P[rows])
        aq = _abs_float(self.Q[rows])
        w = np.ones(len(rows)) if coef is None else coef
        with np.errstate(invalid="ignore", over="ignore"):
            return np.asarray(((ap * w[:, None]).T @ aq).ravel() * (1 + 1e-9) + 1.0)


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
        check_finite(x, name)
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
                fr_flat[i] = to_fraction(v, f"{name}[{i}]")
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{name}: bad entry at flat index {i}: {exc}") from exc
        den = common_denominator(fr_flat)
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


def wrap(X: Any) -> IntMatrix:
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


def combos_zero(M: IntMatrix, rows: np.ndarray, combos: np.ndarray) -> np.ndarray:
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
        return np.array([python_combo_zero(M, rows, combos[i]) for i in range(c)], dtype=bool)
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


def python_combo_zero(M: IntMatrix, rows: np.ndarray, coef: np.ndarray) -> bool:
    nzr = np.flatnonzero(coef)
    if nzr.size == 0:
        return True
    ex = M.exact(rows[nzr])
    cf = np.array([int(x) for x in coef[nzr]], dtype=object)
    tot = cf @ ex
    return all(int(t) == 0 for t in np.atleast_1d(tot))


def _python_sum_zero(M: IntMatrix, T: Sequence[int]) -> bool:
    """Σ_{i∈T} X[i] == 0 with Python integers."""
    idx = np.asarray(sorted(T), dtype=np.int64)
    if isinstance(M, FlipFactors):
        p = M.P[idx].astype(object)
        q = M.Q[idx].astype(object)
        tot = p.T @ q
    else:
        tot = M.exact(idx).sum(axis=0)
    return all(int(t) == 0 for t in np.atleast_1d(tot).ravel())


def verify_sets(M: IntMatrix, sets: Sequence[Sequence[int]]) -> list[bool]:
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
        out.extend(bool(x) and len(t) > 0 for x, t in zip(combos_zero(M, union, combos), chunk, strict=True))
    return out


def is_flip_set(X: Any, T: Iterable[int]) -> bool:
    """Exactly decide whether ``T`` is a flip set of ``X``: nonempty with ``Σ_{i∈T} X[i] = 0``.

    ``X`` is an integer matrix (rows of ints, int/object numpy array) or a :class:`FlipFactors`.
    """
    M = wrap(X)
    idx = sorted(set(int(i) for i in T))
    if not idx:
        return False
    n = M.shape[0]
    if idx[0] < 0 or idx[-1] >= n:
        raise IndexError(f"index out of range for {n} rows")
    return _python_sum_zero(M, idx)
