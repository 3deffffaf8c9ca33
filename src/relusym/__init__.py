"""relusym: exact symmetry classification of shallow ReLU networks x ↦ V·σ(Ax + b) + c.

The public API (docs/api.md).  Heavy optional dependencies are imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relusym._core.network import Network
from relusym.errors import (
    BudgetExceededError,
    IdentificationError,
    InvalidNetworkError,
    RelusymError,
    UnsupportedModelError,
)

if TYPE_CHECKING:  # what a type checker sees; at run time every name below is imported on first use
    from relusym._api import align, distance, equivalent, find_symmetry, normal_form, prune, unit_status
    from relusym._bounded.domain import Box, Polytope
    from relusym._core.equivalence import Counterexample, Verdict
    from relusym._core.group import Stabilizer, Symmetry, stabilizer
    from relusym._core.normal_form import NormalForm
    from relusym._core.operations import flip
    from relusym._deep.mlp import MLP
    from relusym._fibre.fiber import Fiber, fiber
    from relusym._fibre.width import minimal_width
    from relusym._identify.identify import Identification, identify
    from relusym._tolerance.alignment import Alignment
    from relusym._tolerance.approx import equivalent_approx
    from relusym.zoo import ZooResult, scan_zoo

# Every public name but Network and the errors is imported on first use (``import relusym`` costs little more than
# ``import numpy``): the name's module, relative to this package.
_LAZY = {
    **dict.fromkeys(
        ("align", "distance", "equivalent", "find_symmetry", "normal_form", "prune", "unit_status"), "_api"
    ),
    "Box": "_bounded.domain",
    "Polytope": "_bounded.domain",
    "Counterexample": "_core.equivalence",
    "Verdict": "_core.equivalence",
    "Stabilizer": "_core.group",
    "Symmetry": "_core.group",
    "stabilizer": "_core.group",
    "NormalForm": "_core.normal_form",
    "flip": "_core.operations",
    "MLP": "_deep.mlp",
    "Fiber": "_fibre.fiber",
    "fiber": "_fibre.fiber",
    "minimal_width": "_fibre.width",
    "Alignment": "_tolerance.alignment",
    "equivalent_approx": "_tolerance.approx",
    # model zoos (pyarrow, and dask when asked for, imported on use)
    "scan_zoo": "zoo",
    "ZooResult": "zoo",
    # identification from queries
    "identify": "_identify.identify",
    "Identification": "_identify.identify",
}

__version__ = "0.1.0"

__all__ = [
    "Network",
    "MLP",
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
    "unit_status",
    "align",
    "Alignment",
    "equivalent_approx",
    "distance",
    "scan_zoo",
    "ZooResult",
    "load",
    "save",
    "to_torch",
    "to_keras",
    "to_flax",
    "RelusymError",
    "InvalidNetworkError",
    "UnsupportedModelError",
    "BudgetExceededError",
    "IdentificationError",
    "identify",
    "Identification",
    "__version__",
]


def load(path_or_object: Any, **kwargs: Any) -> Network | MLP:
    """Read a network from a file (format found from its content) or an in-memory model object: a ``Network``
    for one hidden layer, an ``MLP`` for two or more."""
    from relusym.io import load as _load

    return _load(path_or_object, **kwargs)


def save(net: Network | MLP, path: Any, **kwargs: Any) -> Any:
    """Write a network atomically and exactly, in the format given by the file suffix (or ``like=`` an original
    file); an entry the file's float type cannot hold is refused unless ``allow_rounding=True``.  Returns a
    ``relusym.io.SaveInfo`` (``exact``, and ``distance`` when rounding was allowed)."""
    from relusym.io import save as _save

    return _save(net, path, **kwargs)


def __dir__() -> list[str]:
    """Every public name, the lazily imported ones included (``dir(relusym)`` lists them before first use)."""
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> Any:
    """Every public name but ``Network`` and the errors, imported on first use (keeps ``import relusym`` fast);
    the functions that take networks come wrapped by :func:`_taking_anything`."""
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'relusym' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    if name in _TAKES_NETWORKS:
        value = _taking_anything(value, _TAKES_NETWORKS[name])
    globals()[name] = value
    return value


# ----------------------------------------------------------------------------------------------------------
# the top-level functions take anything load takes: a path, a torch/Keras/Flax module, a fitted estimator, ...

_TAKES_NETWORKS = {
    "normal_form": 1,
    "equivalent": 2,
    "find_symmetry": 2,
    "stabilizer": 1,
    "flip": 1,
    "fiber": 1,
    "minimal_width": 1,
    "prune": 1,
    "align": 2,
    "equivalent_approx": 2,
    "distance": 2,
    "unit_status": 1,
    "to_torch": 1,
    "to_keras": 1,
    "to_flax": 1,
}


def _is_net(x: Any) -> bool:
    """A Network or an MLP: the values every function takes as they are (anything else goes through load)."""
    from relusym._deep.mlp import MLP

    return isinstance(x, Network | MLP)


# the functions about one hidden layer only: a one-hidden-layer MLP is given to them as its Network, and a deep
# one is refused in one sentence
_SHALLOW_ONLY = frozenset({"stabilizer", "flip", "fiber", "minimal_width", "equivalent_approx"})


def _as_shallow(x: Any, name: str) -> Any:
    from relusym._deep.mlp import MLP

    if isinstance(x, MLP):
        if x.depth != 1:
            raise InvalidNetworkError(
                f"{name} is about networks with one hidden layer; this MLP has {x.depth} (see docs/math/deep.md for "
                "what relusym decides about deep networks)"
            )
        return x.to_network()
    return x


def _taking_anything(fn: Any, count: int) -> Any:
    """``fn`` with its first ``count`` arguments read by :func:`load` when they are not yet Networks or MLPs."""
    import functools

    shallow_only = fn.__name__ in _SHALLOW_ONLY

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if any(not _is_net(a) for a in args[:count]):
            args = tuple(a if _is_net(a) else load(a) for a in args[:count]) + args[count:]
        if shallow_only:
            args = tuple(_as_shallow(a, fn.__name__) for a in args[:count]) + args[count:]
        return fn(*args, **kwargs)

    return wrapper


def to_torch(net: Network, dtype: Any = None, *, allow_rounding: bool = False) -> Any:
    """A live ``torch.nn.Sequential(Linear, ReLU, Linear)`` computing the network, exactly in ``dtype`` (default
    its widest float dtype, float64 for rationals; an entry that does not fit is refused unless
    ``allow_rounding=True``)."""
    from relusym.io._torch_format import to_module

    return to_module(net, dtype, allow_rounding=allow_rounding)


def to_keras(net: Network, dtype: Any = None, *, allow_rounding: bool = False) -> Any:
    """A live ``keras.Sequential([Input(m), Dense(n, relu), Dense(k)])`` computing the network (exact, as
    :func:`to_torch`)."""
    from relusym.io._keras_format import to_model

    return to_model(net, dtype, allow_rounding=allow_rounding)


def to_flax(net: Network, dtype: Any = None, *, allow_rounding: bool = False) -> Any:
    """A live Flax ``nnx`` module (two ``nnx.Linear`` layers with ``nnx.relu`` between) computing the network
    (exact, as :func:`to_torch`)."""
    from relusym.io._flax_format import to_nnx

    return to_nnx(net, dtype, allow_rounding=allow_rounding)


for _name, _count in _TAKES_NETWORKS.items():
    if _name in globals():
        globals()[_name] = _taking_anything(globals()[_name], _count)
del _name, _count
