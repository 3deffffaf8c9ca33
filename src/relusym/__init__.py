"""relusym: exact symmetry classification of shallow ReLU networks x ↦ V·σ(Ax + b) + c.

The public API (spec: interfaces.md).  Heavy optional dependencies are imported lazily.
"""

from __future__ import annotations

from typing import Any

from ._domain import Box, Polytope, equivalent, normal_form
from ._equivalence import Counterexample, Verdict
from ._fiber import Fiber, fiber
from ._group import Stabilizer, Symmetry, find_symmetry, stabilizer
from ._network import Network
from ._normal_form import NormalForm, flip
from ._width import minimal_width, prune
from .errors import BudgetExceededError, IdentificationError, InvalidNetworkError, UnsupportedModelError

_LAZY = {
    "align": "_alignment",
    "Alignment": "_alignment",
    "equivalent_approx": "_approx",
    "distance": "_domain",
    # model zoos (pyarrow, and dask when asked for, imported on use)
    "scan_zoo": "zoo",
    "ZooResult": "zoo",
    # identification from queries
    "identify": "_identify",
    "Identification": "_identify",
}

__version__ = "0.1.0"

__all__ = [
    "Network",
    "Symmetry",
    "NormalForm",
    "Verdict",
    "Counterexample",
    "Stabilizer",
    "Box",
    "Polytope",
    "normal_form",
    "equivalent",
    "find_symmetry",
    "stabilizer",
    "flip",
    "fiber",
    "Fiber",
    "minimal_width",
    "prune",
    "align",
    "Alignment",
    "equivalent_approx",
    "distance",
    "scan_zoo",
    "ZooResult",
    "load",
    "save",
    "InvalidNetworkError",
    "UnsupportedModelError",
    "BudgetExceededError",
    "IdentificationError",
    "identify",
    "Identification",
    "__version__",
]


def load(path_or_object: Any, **kwargs: Any) -> Network:
    """Read a network from a file (format found from its content) or an in-memory model object."""
    from .io import load as _load

    return _load(path_or_object, **kwargs)


def save(net: Network, path: Any, **kwargs: Any) -> None:
    """Write a network atomically, in the format given by the file suffix (or ``like=`` an original file)."""
    from .io import save as _save

    _save(net, path, **kwargs)


def __getattr__(name: str) -> Any:
    """The fibre, width and tolerance-mode functions, imported on first use (keeps ``import relusym`` fast)."""
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'relusym' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{mod}", __name__), name)
