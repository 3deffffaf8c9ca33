"""TorchScript archives (``torch.jit.save``) read as data: a restricted unpickler builds the tensors and inert
records of the scripted modules, and nothing of the archive's code is run.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from relusym._base.limits import ZIP_ERRORS
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import UnsupportedModelError
from relusym.io._torch_module import alternation, from_state_dict, import_torch

__all__ = ["first_line", "is_torchscript", "read_torchscript", "torchscript_state_dict"]


def is_torchscript(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except ZIP_ERRORS:
        return False
    return any(n.endswith("/constants.pkl") for n in names) and any("/code/" in n for n in names)


_STORAGE_DTYPES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "BoolStorage": "bool",
}


class _Scripted:
    """A TorchScript module's pickled state, kept as data: its class name and attributes (one subclass per
    recorded class, made by the restricted unpickler; nothing of the archive's code is run)."""

    cls = ""
    state: Mapping[str, Any] = {}

    def __setstate__(self, state: Any) -> None:
        self.state = dict(state) if isinstance(state, Mapping) else {"state": state}


def torchscript_state_dict(path: Path) -> dict[str, Any]:
    """The parameters of a TorchScript archive by name (read as data, see :func:`read_torchscript`)."""
    return _read_torchscript(path)[0]


def read_torchscript(path: Path) -> tuple[Network | MLP, tuple[str, ...], bool]:
    """The network of a TorchScript archive: see :func:`_read_torchscript`."""
    sd, kinds = _read_torchscript(path)
    note = f"{path.name} is a TorchScript archive: its parameters were read as data and its code was not run"
    hint = [f"{name}.weight" if name else "weight" for name, kind in kinds if kind == "linear"]
    return from_state_dict(sd, source=path.name, order_hint=hint), (note,), True


def _read_torchscript(path: Path) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The parameters of a TorchScript archive (``torch.jit.save``), read as data without running its code.

    Its ``data.pkl`` is unpickled by a restricted unpickler that builds only tensors (from the archive's
    ``data/`` entries) and inert records of the scripted modules; the module tree must be ``Linear``, ``ReLU``,
    ``Linear`` (or deeper, a ReLU between each two Linear layers; plus Dropout/Identity/Flatten), judged from the
    module classes recorded in the archive."""
    torch = import_torch("reading TorchScript archives")
    zf = zipfile.ZipFile(path)
    names = zf.namelist()
    pkl = next(n for n in names if n.endswith("/data.pkl") and n.count("/") == 1)
    root = pkl.split("/")[0]
    try:
        tree = _ArchiveUnpickler(io.BytesIO(zf.read(pkl)), torch, zf, root, path.name).load()
    except pickle.UnpicklingError as exc:
        raise UnsupportedModelError(str(exc)) from None
    except Exception as exc:
        raise UnsupportedModelError(
            f"{path.name} is a TorchScript archive whose parameters relusym cannot read as data "
            f"({first_line(str(exc))}); get a state_dict with torch.save(torch.jit.load('{path.name}')"
            ".state_dict(), 'weights.pt') if you trust the file, and read that"
        ) from None
    sd: dict[str, Any] = {}
    kinds: list[tuple[str, str]] = []
    _walk_scripted(tree, "", path.name, sd, kinds)
    seq = [(name, k) for name, k in kinds if k != "skip"]
    while seq and seq[0][1] == "flatten":
        seq.pop(0)
    alternation(seq, f"{path.name}: the TorchScript modules")
    return sd, kinds


class _ArchiveUnpickler(pickle.Unpickler):
    """Builds tensors from the archive's ``data/`` entries and a :class:`_Scripted` record for each scripted
    module; any other global of the pickle is refused."""

    def __init__(self, file: Any, torch: Any, zf: zipfile.ZipFile, root: str, source: str) -> None:
        super().__init__(file)
        self.torch, self.zf, self.root, self.source = torch, zf, root, source

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("__torch__"):
            return type(name, (_Scripted,), {"cls": f"{module}.{name}"})
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return self.torch._utils._rebuild_tensor_v2
        if (module, name) == ("collections", "OrderedDict"):
            import collections

            return collections.OrderedDict
        if module == "torch" and name in _STORAGE_DTYPES:
            return name
        raise pickle.UnpicklingError(f"{self.source}: the TorchScript archive refers to {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        torch = self.torch
        _, storage_type, key, _location, _numel = pid
        dtype = getattr(torch, _STORAGE_DTYPES[storage_type])
        data = torch.frombuffer(bytearray(self.zf.read(f"{self.root}/data/{key}")), dtype=dtype)
        return torch.storage.TypedStorage(wrap_storage=data.untyped_storage(), dtype=dtype, _internal=True)


_LEAF_KINDS = {"Linear": "linear", "ReLU": "relu", "Dropout": "skip", "Identity": "skip", "Flatten": "flatten"}


def _walk_scripted(node: Any, prefix: str, source: str, sd: dict[str, Any], kinds: list[tuple[str, str]]) -> None:
    """Collect the tensors of a scripted module tree into ``sd`` and the kinds of its leaves into ``kinds``."""
    if not isinstance(node, _Scripted):
        return
    short = node.cls.split(".")[-1]
    children = [(k, v) for k, v in node.state.items() if isinstance(v, _Scripted)]
    if not children:
        if short not in _LEAF_KINDS:
            raise UnsupportedModelError(
                f"{source}: TorchScript module '{prefix or 'root'}' is a {short}; relusym reads Linear → ReLU "
                "→ Linear chains"
            )
        kinds.append((prefix, _LEAF_KINDS[short]))
    elif not short.startswith(("Sequential", "___torch_mangle")) and "container" not in node.cls:
        raise UnsupportedModelError(
            f"{source}: TorchScript module '{prefix or 'root'}' is a {short} with its own forward code, which "
            "relusym does not run; read its state_dict instead (torch.jit.load(path).state_dict())"
        )
    for key, value in node.state.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, _Scripted):
            _walk_scripted(value, name, source, sd, kinds)
        elif hasattr(value, "shape") and value is not None:
            sd[name] = value


def first_line(msg: str) -> str:
    line = msg.strip().splitlines()[0] if msg.strip() else "unknown error"
    line = line.split(". ")[0].rstrip(".")
    return line[:160]
