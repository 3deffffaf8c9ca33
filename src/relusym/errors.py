"""The exceptions relusym raises. Each message names the argument, the shape or the index at fault."""

from __future__ import annotations

__all__ = [
    "InvalidNetworkError",
    "UnsupportedModelError",
    "BudgetExceededError",
    "NNetClampWarning",
    "IdentificationError",
]


class InvalidNetworkError(ValueError):
    """The parameters do not describe a network θ ∈ Ω(m, n, k): wrong shapes, NaN, non-numeric entries."""


class UnsupportedModelError(ValueError):
    """A model or file that is not a one-hidden-layer ReLU network (or a format that relusym cannot read)."""


class BudgetExceededError(RuntimeError):
    """A search (flip sets, minimal width) ran past the budget it was given."""


class NNetClampWarning(UserWarning):
    """An NNet file clamps its inputs to [min, max], which is outside the network function relusym compares."""


class IdentificationError(UnsupportedModelError):
    """Queries do not fit any one-hidden-layer ReLU network within the oracle's precision (noise, rounding, a
    smooth activation), or the recovery could not be checked: :func:`relusym.identify` refuses to answer."""
