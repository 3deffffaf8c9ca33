"""Many exact rationals from float data at once: integer mantissas over shared powers of two, reduced in numpy,
then one ``Fraction`` per entry built from a coprime pair without another gcd.

The hyperplane vectors û = w / λ of a float network are quotients of float mantissas: (mx · 2^ex) / (ml · 2^el).
:func:`relusym._exact.decimal.quotient_parts` reduces them to canonical triples (num, den, d) — num and den odd
and coprime, the value num / den · 2^d — on whole arrays; the power of two then goes into the numerator or the
denominator (an int64 shift where it fits, a Python int shift where it does not), and the pair (p, q), coprime
with q > 0, is the Fraction in lowest terms.  Every value is the one ``Fraction(x) / Fraction(λ)`` gives; only
the per-entry gcd and the float → Fraction conversions are gone.  (The canonical minimal network needs none of
these: its rows are primitive integer vectors, :mod:`relusym._core.canon_rows`.)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._exact.decimal import bit_length, quotient_parts
from relusym._exact.mantissas import float_parts

__all__ = ["coprime_fraction", "fractions_from_parts", "exact_quotients", "float_fractions"]

_new = object.__new__


def _slots_fraction(p: int, q: int) -> Fraction:
    """The Fraction p/q for coprime p, q with q > 0, without normalizing again (CPython's ``Fraction`` keeps
    ``_numerator`` and ``_denominator`` in slots; Python 3.12 has ``Fraction._from_coprime_ints`` for this)."""
    f = _new(Fraction)
    f._numerator = p  # type: ignore[attr-defined]
    f._denominator = q  # type: ignore[attr-defined]
    return f


coprime_fraction: Any = getattr(Fraction, "_from_coprime_ints", _slots_fraction)


def fractions_from_parts(num: np.ndarray, den: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The object array of the Fractions num / den · 2^d for canonical triples (num, den odd and coprime, den > 0;
    (0, 1, 0) for zero), of the same shape."""
    if num.size == 0:
        return np.empty(num.shape, dtype=object)
    up = np.maximum(d, 0)
    dn = np.maximum(-d, 0)
    ok = (bit_length(num) + up <= 62) & (bit_length(den) + dn <= 62)
    if bool(ok.all()):
        P = (num << up).ravel().tolist()
        Q = (den << dn).ravel().tolist()
    else:
        P = np.where(ok, num << np.where(ok, up, 0), 0).ravel().tolist()
        Q = np.where(ok, den << np.where(ok, dn, 0), 1).ravel().tolist()
        flat_ok = ok.ravel()
        nums, dens, ups, dns = num.ravel(), den.ravel(), up.ravel(), dn.ravel()
        for t in np.nonzero(~flat_ok)[0].tolist():  # a wide exponent spread: Python ints
            P[t] = int(nums[t]) << int(ups[t])
            Q[t] = int(dens[t]) << int(dns[t])
    make = coprime_fraction
    with _collector_paused():  # millions of new objects would set off the cyclic collector again and again
        made = [make(p, q) for p, q in zip(P, Q, strict=True)]
    # np.fromiter copies the references; assigning the list into an array would inspect every item as a sequence
    return np.fromiter(made, dtype=object, count=len(made)).reshape(num.shape)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a block allocates many acyclic objects (Fractions hold two ints and
    cannot form cycles): each generation-0 collection would otherwise scan the growing young objects, about
    most of the time of building them.  Restored afterwards, also on error."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def exact_quotients(X: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """X[r, c] / lam[r] as an R × C object array of Fractions, exactly, for a float matrix X and a float vector
    lam without zeros (float16, float32 or float64 values, subnormals included)."""
    if X.size == 0:
        return np.empty(X.shape, dtype=object)
    mx, ex = float_parts(X)
    ml, el = float_parts(np.asarray(lam))
    num, den, d = quotient_parts(mx, ex, ml[:, None], el[:, None])
    return fractions_from_parts(num, den, d)


def float_fractions(X: np.ndarray) -> np.ndarray:
    """A float array's values as an object array of Fractions (the same values as ``Fraction(x)`` entry by
    entry)."""
    if X.size == 0:
        return np.empty(X.shape, dtype=object)
    mx, ex = float_parts(X)
    return fractions_from_parts(mx, np.ones_like(mx), np.where(mx != 0, ex, 0))
