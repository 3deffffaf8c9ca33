"""``relusym equiv NET1 NET2 --box … --atol EPS``: the verifiers' question "is |NET1 − NET2| ≤ EPS at every input
of the box?", for one hidden layer and deep networks alike, with three answers: yes (exit 0: a sound exact upper
bound ≤ EPS), no (exit 1: an exact input inside the box where the gap exceeds EPS) or undecided (exit 4:
lower ≤ EPS < upper).  The bracket comes from :func:`relusym.distance` with ``domain=`` (exact for m = 1)."""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import Any

from relusym._base.display import exact_and_approx, vector
from relusym._cli_deep import UNDECIDED_EXIT
from relusym._exact.numbers import fraction_str, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["within_on_box"]


def within_on_box(args: argparse.Namespace, net1: Any, net2: Any, box: Any) -> tuple[dict[str, Any], str, int]:
    """The answer, its JSON keys (``answer``, ``eps``, ``lower``, ``upper``, ``kind``, ``point``, ``mode``) and
    its exit code."""
    from relusym._api import distance

    if args.rtol is not None:
        raise InvalidNetworkError("on a box, --atol asks whether |NET1 − NET2| ≤ atol there; --rtol does not apply")
    eps = to_fraction(args.atol, "--atol")
    if eps < 0:
        raise InvalidNetworkError(f"--atol must be non-negative, got {args.atol!r}")
    dd = distance(net1, net2, domain=box, budget=args.budget)
    lower, upper, point = Fraction(dd.lower), Fraction(dd.upper), tuple(dd.point)
    answer = "yes" if upper <= eps else ("no" if lower > eps else "undecided")
    d: dict[str, Any] = {
        "answer": answer,
        "eps": fraction_str(eps),
        "lower": fraction_str(lower),
        "upper": fraction_str(upper),
        "kind": "exact" if lower == upper else "bounds",
        "point": [fraction_str(v) for v in point],
        "mode": "box",
    }
    head = {"yes": "YES", "no": "NO", "undecided": "UNDECIDED"}[answer]
    lines = [
        f"{head}: max over the box of |NET1 − NET2| is "
        + (
            f"{exact_and_approx(lower)}"
            if lower == upper
            else f"in [{exact_and_approx(lower)}, {exact_and_approx(upper)}]"
        )
        + f" (atol = {exact_and_approx(eps)})"
    ]
    if answer == "no":
        lines.append(
            f"  at x = {vector(list(point))} (inside the box) the gap is {exact_and_approx(lower)} > atol (exact)"
        )
    elif answer == "undecided":
        lines.append(
            f"exit {UNDECIDED_EXIT}: undecided within --budget {args.budget:g} s (a larger budget may settle it)"
        )
    return d, "\n".join(lines), {"yes": 0, "no": 1}.get(answer, UNDECIDED_EXIT)
