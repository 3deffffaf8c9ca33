"""The exceptions relusym raises. Each message names the argument, the shape or the index at fault.

Every one of them is a :class:`RelusymError`, so ``except relusym.RelusymError`` catches whatever relusym raises
on purpose (and nothing else: a bug surfaces as the built-in exception it is).  Each class also keeps the
built-in base it has always promised (``ValueError`` for bad input, ``RuntimeError`` for a budget, ``OSError`` for
an output path), so code written against those goes on working."""

from __future__ import annotations

__all__ = [
    "RelusymError",
    "InvalidNetworkError",
    "UnsupportedModelError",
    "BudgetExceededError",
    "OutputError",
    "NNetClampWarning",
    "IdentificationError",
    "NotRepresentableError",
]


class RelusymError(Exception):
    """The root of every exception relusym raises on purpose: bad input, a model it cannot read, an output it
    cannot write, a budget that ran out, an oracle it cannot identify."""


class InvalidNetworkError(RelusymError, ValueError):
    """The parameters do not describe a network θ ∈ Ω(m, n, k): wrong shapes, NaN, non-numeric entries."""


class UnsupportedModelError(RelusymError, ValueError):
    """A model or file that is not a one-hidden-layer ReLU network (or a format that relusym cannot read)."""


class BudgetExceededError(RelusymError, RuntimeError):
    """A search (flip sets, minimal width) ran past the budget it was given."""


class OutputError(InvalidNetworkError, OSError):
    """An output file that cannot be written: a missing or read-only folder, the input itself, a full disk, a
    file-size limit, or a writer that failed.  Nothing is left behind: the target is untouched or absent.
    (An :class:`InvalidNetworkError`, as save has always raised for a missing folder, and an :class:`OSError`.)"""


class NotRepresentableError(InvalidNetworkError):
    """A write would round: an entry of the network is not exactly representable in the file's float type."""


class NNetClampWarning(UserWarning):
    """An NNet file clamps its inputs to [min, max], which is outside the network function relusym compares."""


class IdentificationError(UnsupportedModelError):
    """Queries do not fit any one-hidden-layer ReLU network within the oracle's precision (noise, rounding, a
    smooth activation), or the recovery could not be checked: :func:`relusym.identify` refuses to answer."""
