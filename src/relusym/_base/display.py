"""How exact values look to a person: the one place that formats numbers, vectors and long lists for the
command line, the HTML report and error messages.

An exact rational is shown as itself and, when that is not already a short decimal, with a decimal beside it:
``-4500015/62804 ≈ -71.65``.  Long vectors and long lists of rows are summarized (their first entries, then how
many more there are) unless the caller asks for everything.  Machine-readable output (``--json``) never goes
through here: it keeps the exact strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

__all__ = [
    "DIGITS",
    "SHORT",
    "decimal",
    "exact_and_approx",
    "scalar",
    "vector",
    "rows_summary",
    "float_value",
    "compact",
    "compact_vector",
]

DIGITS = 4  # significant digits of the decimal shown beside an exact value


def _fraction(x: Any) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, str):
        return Fraction(x)
    return Fraction(float(x)) if not hasattr(x, "numerator") else Fraction(x.numerator, x.denominator)


def decimal(x: Any, digits: int = DIGITS) -> str:
    """A short decimal for ``x`` (``digits`` significant digits, no exponent for moderate magnitudes)."""
    q = _fraction(x)
    try:
        f = float(q)
    except OverflowError:  # beyond float range: the decimal exponent from the digits of p and q, exactly
        return _big_decimal(q, digits)
    if f == 0:
        return "0"
    text = f"{f:.{digits}g}"
    if "e" in text:
        mant, exp = text.split("e")
        text = f"{mant}e{int(exp)}"
    return text


def _big_decimal(q: Fraction, digits: int) -> str:
    """``d.ddde+N`` for a rational beyond float range (exact: mantissa and exponent from integer arithmetic)."""
    sign, q = ("-" if q < 0 else ""), abs(q)
    e = len(str(q.numerator)) - len(str(q.denominator))
    if q < Fraction(10) ** e:
        e -= 1
    mant = q / Fraction(10) ** e  # 1 <= mant < 10
    scaled = round(mant * 10 ** (digits - 1))
    if scaled >= 10**digits:
        scaled //= 10
        e += 1
    text = str(scaled)
    body = (text[0] + "." + text[1:]).rstrip("0").rstrip(".")
    return f"{sign}{body}e{e}"


def _exact_str(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def exact_and_approx(x: Any, digits: int = DIGITS, *, max_len: int | None = None) -> str:
    """``p/q ≈ d`` for a rational that a short decimal does not show exactly; ``p`` for an integer; the decimal
    alone when it is exact (``1/2`` is shown ``0.5``).  With ``max_len``, an exact form longer than that is left
    out (``≈ d``): summaries stay readable, and the exact value is in the full output."""
    q = _fraction(x)
    exact = _exact_str(q)
    if q.denominator == 1 and (max_len is None or len(exact) <= max_len):
        return exact
    d = decimal(q, digits)
    try:
        if Fraction(d) == q:
            return d
    except ValueError:
        pass
    if max_len is not None and len(exact) > max_len:
        return f"≈ {d}"
    return f"{exact} ≈ {d}"


def scalar(x: Any, *, exact: bool = True, max_len: int | None = None) -> str:
    """One value: exact with its decimal (``exact=True``; exact forms longer than ``max_len`` left out) or the
    decimal alone."""
    return exact_and_approx(x, max_len=max_len) if exact else decimal(x)


def float_value(x: float) -> str:
    """A float at its exact binary value, as the shortest decimal that identifies it (``repr``)."""
    return repr(float(x))


SHORT = 15  # the longest exact form a summary shows beside its decimal


def vector(values: Iterable[Any], *, limit: int | None = 8, exact: bool = True, max_len: int | None = None) -> str:
    """``(v1, v2, …)``: at most ``limit`` entries, then ``… N more``; ``limit=None`` shows all.  A summary
    (``limit`` given) leaves out exact forms longer than ``max_len`` (default :data:`SHORT`)."""
    vals = list(values)
    shown = vals if limit is None or len(vals) <= limit else vals[:limit]
    if max_len is None and limit is not None:
        max_len = SHORT
    parts = [scalar(v, exact=exact, max_len=max_len) for v in shown]
    if len(shown) < len(vals):
        parts.append(f"… {len(vals) - len(shown)} more")
    return "(" + ", ".join(parts) + ")"


def rows_summary(rows: Sequence[str], *, limit: int | None = 10, rest: str = "use --all or --json") -> list[str]:
    """The first ``limit`` of ``rows`` and a last line saying how many more there are and where they are."""
    if limit is None or len(rows) <= limit:
        return list(rows)
    return list(rows[:limit]) + [f"… {len(rows) - limit} more ({rest})"]


def compact(x: Any, width: int = 8) -> str:
    """A label inside a picture, where space is short: an exact rational as itself when its form fits in
    ``width`` characters, else an integral value as an integer (below 10^7) or 4 significant digits; with the
    typographic minus sign (``−3/2``)."""
    if isinstance(x, Fraction | int) and not isinstance(x, bool):
        s = _exact_str(Fraction(x))
        if len(s) <= width:
            return s.replace("-", "−")
    f = float(x)
    if f == int(f) and abs(f) < 1e7:
        return str(int(f)).replace("-", "−")
    return f"{f:.4g}".replace("-", "−")


def compact_vector(values: Sequence[Any], limit: int = 6, width: int = 8) -> str:
    """``(v1, v2, …)`` of :func:`compact` labels: at most ``limit`` entries, then an ellipsis."""
    vals = [compact(v, width) for v in list(values)[:limit]]
    more = ", …" if len(values) > limit else ""
    return "(" + ", ".join(vals) + more + ")"
