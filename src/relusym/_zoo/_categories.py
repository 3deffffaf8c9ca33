"""The fibre categories that the census and the zoo report, and the category of a fibre."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the fibre machinery is imported by whoever builds a Fiber, not by every zoo or census run
    from relusym._fibre.fiber import Fiber

__all__ = ["CATEGORIES", "fibre_category"]

CATEGORIES = ("generic", "rigid, not generic", "finitely many orbits", "positive-dimensional", "undecided")


def fibre_category(fb: Fiber) -> str:
    """The census category of a fibre (one of :data:`CATEGORIES`), as the census and relusym.zoo report it."""
    if fb.generic:
        return "generic"
    if fb.rigid:
        return "rigid, not generic"
    if fb.orbits is not None:
        return "finitely many orbits"
    if fb.dimension is not None and fb.width is not None:
        return "positive-dimensional"
    return "undecided"
