"""Time budgets: one clock, one validation, one way to ask "is time up?" and "how long is left?".

A user's ``budget=`` is seconds of elapsed real time — what a watch on the wall would show, not CPU time (a search
that waits on a process pool or on BLAS threads spends the user's time too, so ``time.process_time`` would
mislead).  The clock is :func:`time.monotonic`: real elapsed time that the system's clock adjustments (NTP,
daylight saving, a user setting the date) cannot move backwards or forwards, unlike :func:`time.time`.  Its
resolution is far below the granularity at which searches check it; :func:`time.perf_counter` would only add
precision nobody reads.  Every deadline and every elapsed time the library reports is measured on this clock.

The budget itself is checked once, by :func:`relusym._base.limits.check_budget`: a finite non-negative real number
(NaN and ±inf are refused because no deadline can be computed from them, a negative budget because it is a typo
rather than "already expired", and ``True``/``False`` because a boolean is never meant as seconds).
"""

from __future__ import annotations

import time
from typing import Any

from relusym._base.limits import check_budget

__all__ = ["Deadline", "Stopwatch"]


class Deadline:
    """The end of a time budget on the library's clock.

    >>> d = Deadline(60)
    >>> d.expired(), 0 < d.left() <= 60
    (False, True)
    >>> Deadline(0).left()
    0.0
    """

    __slots__ = ("end",)

    end: float  #: the clock's value (:func:`time.monotonic`) at which the budget ends

    def __init__(self, budget: Any, *, what: str = "budget") -> None:
        self.end = time.monotonic() + check_budget(budget, what)

    @classmethod
    def at(cls, end: float) -> Deadline:
        """The deadline at the clock value ``end`` (a value of :func:`time.monotonic` plus some seconds)."""
        d = cls.__new__(cls)
        d.end = float(end)
        return d

    def expired(self, grace: float = 0.0) -> bool:
        """Whether the budget (plus ``grace`` seconds) is spent."""
        return time.monotonic() > self.end + grace

    def left(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.end - time.monotonic())

    def sub(self, fraction: float) -> Deadline:
        """A deadline after ``fraction`` (0 to 1) of the time left: a stage's share of what remains.

        >>> d = Deadline(100)
        >>> 0 < d.sub(0.25).left() <= 25 < d.left()
        True
        """
        t = time.monotonic()
        return Deadline.at(t + max(0.0, self.end - t) * fraction)

    def __repr__(self) -> str:
        return f"Deadline(left={self.left():.3f})"


class Stopwatch:
    """Elapsed real time on the library's clock since it was started.

    >>> w = Stopwatch()
    >>> w.elapsed() >= 0
    True
    """

    __slots__ = ("start",)

    def __init__(self) -> None:
        self.start = time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the stopwatch started."""
        return time.monotonic() - self.start
