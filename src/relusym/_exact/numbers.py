"""Exact scalars and arrays (docs/api.md "Numbers", docs/math/normal-form.md (floats and the
tolerance mode)).

Every value relusym decides with is an exact rational.  Integers, :class:`fractions.Fraction` and decimal or
rational strings (``"3/4"``, ``"0.1"``, ``"-2e-3"``) are read exactly; binary floats (Python ``float``, numpy
``float16/32/64``) are read at their exact binary value.  NaN and infinities are rejected.

Arrays are kept in one of two exact representations:

* a read-only numpy float array (``float16``, ``float32`` or ``float64``), whose exact value is its binary value;
* a read-only numpy ``object`` array of :class:`~fractions.Fraction`.

The helpers below move between them without ever rounding.  :func:`exact_view` returns a ``float64`` array
when every product of two entries is exactly representable (all entries fit in ``float32``: 24-bit mantissas),
which lets the hot paths of the normal form run vectorised in floating point while staying exact; otherwise it
returns Fractions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.limits import check_decimal, shorten
from relusym.errors import InvalidNetworkError

__all__ = [
    "FLOAT_DTYPES",
    "Rational",
    "as_exact_array",
    "as_float64",
    "as_rational_vector",
    "check_finite",
    "common_denominator",
    "dyadic_str",
    "exact_view",
    "fraction_str",
    "fractions_of",
    "is_float_array",
    "not_finite",
    "products_exact",
    "same_values",
    "to_fraction",
]

Rational = Fraction


_RATIONAL_RE = re.compile(r"^\s*([+-]?\d+)\s*/\s*([+-]?\d+)\s*$")


FLOAT_DTYPES = (np.float16, np.float32, np.float64)


def common_denominator(values: Iterable[Any]) -> int:
    """The least common multiple of the denominators of exact rationals (1 for none): the one helper for
    clearing denominators, so that a list of Fractions becomes integers over one shared denominator."""
    den = 1
    for v in values:
        den = math.lcm(den, v.denominator)
    return den


def to_fraction(x: Any, where: str = "value") -> Fraction:
    """Read one scalar exactly: int, Fraction, rational or decimal string, or binary float at its exact value.

    ``where`` names the argument and index in error messages, e.g. ``"A[3, 1]"``.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool | np.bool_):
        raise InvalidNetworkError(f"{where} is a boolean ({shorten(x)}), not a number")
    if isinstance(x, int | np.integer):
        return Fraction(int(x))
    if isinstance(x, float | np.floating):
        xf = float(x) if not isinstance(x, np.longdouble) else x
        if not np.isfinite(xf):
            raise not_finite(where, repr(float(x)))
        if isinstance(x, np.longdouble):
            p, q = x.as_integer_ratio()
            return Fraction(p, q)
        return Fraction(float(xf))
    if isinstance(x, str):
        s = x.strip()
        if s.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise not_finite(where, shorten(x))
        check_decimal(s, where)  # before any digit is expanded: "1e999999999" is refused, not computed
        mt = _RATIONAL_RE.match(s)
        if mt and int(mt.group(2)) == 0:
            raise InvalidNetworkError(f"{where} is {shorten(x)}, a fraction with zero denominator")
        try:
            return Fraction(int(mt.group(1)), int(mt.group(2))) if mt else Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise InvalidNetworkError(f"{where} is {shorten(x)}, which is not a rational number") from None
    if hasattr(x, "numerator") and hasattr(x, "denominator"):  # numbers.Rational, e.g. flint.fmpq
        return Fraction(int(x.numerator), int(x.denominator))
    if hasattr(x, "p") and hasattr(x, "q"):  # flint.fmpq spells them p and q
        return Fraction(int(x.p), int(x.q))
    if hasattr(x, "__index__"):  # flint.fmpz and other exact integer types
        return Fraction(x.__index__())
    raise InvalidNetworkError(f"{where} is {shorten(x)} of type {type(x).__name__}, not a number")


def fraction_str(q: Fraction | int | float) -> str:
    """The JSON spelling of a rational: ``"p/q"``, or ``"p"`` for an integer."""
    q = to_fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def is_float_array(arr: np.ndarray) -> bool:
    return arr.dtype in FLOAT_DTYPES


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _index_str(idx: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]" if idx else ""


def not_finite(where: str, shown: str) -> InvalidNetworkError:
    """The one sentence for a NaN or an infinity where a number is needed (``shown``: the value as text)."""
    return InvalidNetworkError(f"{where} is {shown}; NaN and infinities are not allowed")


def check_finite(arr: Any, name: str) -> None:
    """The one NaN/inf check of a float array: refuses the first non-finite entry, naming ``name`` and its
    index (``A[1, 0] is nan; NaN and infinities are not allowed``)."""
    a = np.asarray(arr)
    bad = ~np.isfinite(a)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise not_finite(f"{name}{_index_str(idx)}", repr(float(a[idx])))


def as_exact_array(x: Any, name: str, ndim: int) -> np.ndarray:
    """Validate and store one parameter array exactly (a read-only copy; the caller's object is not touched).

    Float arrays stay float arrays; integers that fit in 53 bits become ``float64`` (exact); everything else
    (Python ints, Fractions, strings, mixtures) becomes an object array of Fractions.
    """
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor: read its exact value without importing torch
        x = x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x, dtype=object if _has_non_float(x) else None)
        except ValueError:
            raise InvalidNetworkError(f"{name} is ragged: its rows do not all have the same length") from None
    if arr.ndim != ndim:
        raise InvalidNetworkError(f"{name} must be a {ndim}-dimensional array, got shape {arr.shape}")
    if arr.dtype in FLOAT_DTYPES:
        check_finite(arr, name)
        return _readonly(np.array(arr, copy=True))
    if arr.dtype.kind in "iu":
        if arr.size == 0 or int(np.abs(arr.astype(object)).max()) < 2**53:
            return _readonly(arr.astype(np.float64))
    if arr.dtype.kind == "b":
        raise InvalidNetworkError(f"{name} is a boolean array, not numbers")
    if arr.dtype.kind in "fc" and arr.dtype not in FLOAT_DTYPES:
        if arr.dtype.kind == "c":
            raise InvalidNetworkError(f"{name} has complex entries; only real numbers are allowed")
    if arr.dtype == object and all(type(v) is Fraction for v in arr.ravel().tolist()):
        # already exact: a copy without per-entry checks (assigning a list would make numpy inspect every item)
        return _readonly(np.array(arr, dtype=object, copy=True))
    out = np.empty(arr.shape, dtype=object)
    for idx in np.ndindex(arr.shape):
        out[idx] = to_fraction(arr[idx], f"{name}{_index_str(idx)}")
    return _readonly(out)


def _has_non_float(x: Any) -> bool:
    """True when a nested Python sequence holds something numpy would not read exactly as float64."""
    stack = [x]
    while stack:
        y = stack.pop()
        if isinstance(y, list | tuple):
            stack.extend(y)
        elif isinstance(y, bool):
            return True
        elif isinstance(y, int):
            if abs(y) >= 2**53:
                return True
        elif not isinstance(y, float | np.floating | np.integer):
            return True
    return False


def fractions_of(arr: np.ndarray) -> np.ndarray:
    """The same values as an object array of Fractions (exact)."""
    if arr.dtype == object:
        return arr
    out = np.empty(arr.shape, dtype=object)
    flat = arr.ravel().tolist()
    out.ravel()[:] = [Fraction(v) for v in flat] if flat else []
    return out


def as_float64(arr: np.ndarray) -> np.ndarray:
    """The values as float64 (rounded for exact rationals; float16/32/64 arrays exactly): for float screens and
    pictures, never for decisions."""
    if arr.dtype == object:
        return np.array([float(v) for v in arr.ravel().tolist()], dtype=np.float64).reshape(arr.shape)
    return arr.astype(np.float64)


def same_values(x: np.ndarray, y: np.ndarray) -> bool:
    """Exact equality of two parameter arrays of one shape, whatever their storage (float or exact)."""
    if x.shape != y.shape:
        return False
    if x.dtype != object and y.dtype != object:
        # float64 casts of float16/32/64 values are exact, so this is exact equality
        return bool(np.array_equal(x.astype(np.float64), y.astype(np.float64)))
    return all(Fraction(p) == Fraction(q) for p, q in zip(x.ravel().tolist(), y.ravel().tolist(), strict=True))


def products_exact(*arrays: np.ndarray) -> bool:
    """True when every entry of every array is a float whose value fits in float32, so that the product of
    any two entries, computed in float64, is exact."""
    for arr in arrays:
        if arr.dtype == np.float16 or arr.dtype == np.float32:
            continue
        if arr.dtype != np.float64:
            return False
        with np.errstate(over="ignore"):
            if not np.array_equal(arr.astype(np.float32).astype(np.float64), arr):
                return False
    return True


def exact_view(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays in one common exact representation: unchanged when all are float arrays (their values are
    exact; callers multiply with :func:`exact_products` or keep one float64 factor when :func:`products_exact`
    holds), else object arrays of Fractions."""
    if all(is_float_array(a) for a in arrays):
        return arrays
    return tuple(fractions_of(a) for a in arrays)


def as_rational_vector(x: Sequence[Any] | np.ndarray, name: str = "x") -> tuple[Fraction, ...]:
    """A point of ℝ^m as an exact rational vector."""
    arr = np.asarray(x, dtype=object).ravel()
    return tuple(to_fraction(v, f"{name}[{i}]") for i, v in enumerate(arr.tolist()))


def dyadic_str(p: int, e: int) -> str:
    """The spelling of fraction_str for the dyadic rational p · 2^e."""
    if p == 0:
        return "0"
    tz = (p & -p).bit_length() - 1
    p >>= tz
    e += tz
    return str(p << e) if e >= 0 else f"{p}/{1 << -e}"
