"""Reading and writing networks: one module per format, each with the same small protocol.

A format module defines ``NAME``, ``SUFFIXES``, ``sniff(path, head) -> bool``, ``load(path) -> Network``,
``save(net, path, like=None)`` and, for in-memory models, ``accepts(obj) -> bool`` and
``from_object(obj) -> Network``.  Heavy packages are imported inside those functions only.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from .._fileio import atomic_path
from .._network import Network
from ..errors import InvalidNetworkError, UnsupportedModelError

__all__ = ["load", "save", "format_of", "FORMATS", "input_box"]

# module names under relusym.io, in the order they are tried
FORMATS: tuple[str, ...] = (
    "_json_format",
    "_npz_format",
    "_safetensors_format",
    "_onnx_format",
    "_torch_format",
    "_flax_format",
    "_sklearn_format",
    "_nnet_format",
)


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:  # a format module not shipped in this build
        if exc.name and exc.name.endswith(name):
            return None
        raise


def _modules() -> list[ModuleType]:
    return [mod for mod in (_module(n) for n in FORMATS) if mod is not None]


def format_of(path: str | os.PathLike[str], *, for_writing: bool = False) -> ModuleType:
    """The format module for a file: by content when it exists (reading), else by suffix."""
    p = Path(path)
    mods = _modules()
    if not for_writing:
        if not p.exists():
            raise InvalidNetworkError(f"{p}: no such file")
        if p.is_dir():
            raise InvalidNetworkError(f"{p} is a directory, not a network file")
        with open(p, "rb") as fh:
            head = fh.read(64)
        if not head:
            raise InvalidNetworkError(f"{p} is empty")
        for mod in mods:
            if mod.sniff(p, head):
                return mod
    suffix = p.suffix.lower()
    for mod in mods:
        if suffix in mod.SUFFIXES:
            return mod
    known = sorted({s for mod in mods for s in mod.SUFFIXES})
    what = "write" if for_writing else "recognise the format of"
    raise UnsupportedModelError(f"cannot {what} {p}: supported files are {', '.join(known)}")


def load(source: Any, **kwargs: Any) -> Network:
    """A network from a path (any supported format, found from the content) or an in-memory object:
    a ``Network``, a ``relusym.network/1`` dict, a torch module or state_dict, a fitted scikit-learn MLP, a
    Flax parameter dict or an ONNX ModelProto."""
    if isinstance(source, Network):
        return source
    if isinstance(source, str | os.PathLike):
        mod = format_of(source)
        return mod.load(Path(source), **kwargs)  # type: ignore[no-any-return]
    if isinstance(source, dict) and "V" in source and "A" in source:
        return Network.from_dict(source)
    for mod in _modules():
        accepts = getattr(mod, "accepts", None)
        if accepts is not None and accepts(source):
            return mod.from_object(source)  # type: ignore[no-any-return]
    raise UnsupportedModelError(
        f"cannot read a network from a {type(source).__module__}.{type(source).__name__} object; supported: "
        "file paths, relusym.Network, relusym.network/1 dicts, torch modules and state_dicts, fitted "
        "scikit-learn MLPs, Flax parameter dicts and ONNX models"
    )


def save(net: Network, path: str | os.PathLike[str], *, like: str | os.PathLike[str] | None = None) -> None:
    """Write ``net`` to ``path`` atomically (a temporary file in the same folder, then a rename).

    The format is ``like``'s when given (the original file, whose layout is reproduced), else the suffix's.
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"save needs a Network, got {type(net).__name__}")
    p = Path(path)
    mod = format_of(like) if like is not None else format_of(p, for_writing=True)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise InvalidNetworkError(f"cannot write {p}: folder {folder} does not exist")
    with atomic_path(p) as tmp:
        mod.save(net, tmp, like=Path(like) if like is not None else None)


def input_box(path: str | os.PathLike[str]) -> Any:
    """The input box of an NNet file (its per-input minima and maxima, exactly), a :class:`relusym.Box`."""
    from ._nnet_format import input_box as _input_box

    return _input_box(Path(path))
