"""PyTorch: ``nn.Sequential(Linear, ReLU, Linear)`` modules (or deeper: ``Linear, ReLU, Linear, ReLU, …,
Linear``), state_dicts and ``.pt``/``.pth`` state_dict files.

Files are read with ``torch.load(path, weights_only=True)`` only, so a file that holds pickled code (a whole
module saved with ``torch.save(model)``) is refused, never run.  Float tensors are taken at their exact binary
value (``bfloat16`` is widened to ``float32``, which is exact).

The key heuristics (which arrays are the linear layers, in which order) are shared with the other readers, in
``_layers``.  One hidden layer reads as a ``Network``, two or more as an ``MLP``.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import ZIP_ERRORS, check_zip
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    LinearChain,
    LinearLayer,
    WritePolicy,
    chain_linear_layers,
    common_dtype,
    layout_arrays,
    standard_arrays,
    widths_of,
)
from relusym.io._torch_module import from_module, from_state_dict, import_torch, tensor_to_numpy
from relusym.io._torch_script import first_line, is_torchscript, read_torchscript, torchscript_state_dict

__all__ = [
    "NAME",
    "RECORDS_ACTIVATION",
    "SUFFIXES",
    "accepts",
    "from_module",
    "from_object",
    "from_state_dict",
    "load",
    "object_records_activation",
    "read",
    "read_torchscript",
    "save",
    "sniff",
    "to_module",
    "to_state_dict",
]

NAME = "torch"


RECORDS_ACTIVATION = False


SUFFIXES: tuple[str, ...] = (".pt", ".pth")


_ZIP_MAGIC = b"PK\x03\x04"


# legacy (pre-1.6) torch.save files: pickle protocol 2 starting with torch's magic number 0x1950a86a20f9469cfc6c
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


# wrappers that checkpoints commonly put around the state_dict
_WRAPPER_KEYS = ("state_dict", "model_state_dict", "model", "module", "net", "network", "params")


_ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (*ZIP_ERRORS, RuntimeError, KeyError, IndexError)


# ----------------------------------------------------------------------------------------------------------
# helpers shared with the other format modules


# ----------------------------------------------------------------------------------------------------------
# protocol
def sniff(path: Path, head: bytes) -> bool:
    """A torch.save zip archive (its first entry is ``<name>/data.pkl``) or a legacy torch.save pickle."""
    if head.startswith(_LEGACY_MAGIC):
        return True
    if head.startswith(_ZIP_MAGIC):
        if len(head) >= 30:
            name_len = int.from_bytes(head[26:28], "little")
            name = head[30 : 30 + name_len]
            if name.endswith(b"data.pkl") or (len(name) < name_len and b"/" in name):
                return True
        return path.suffix.lower() in SUFFIXES
    return False


def load(path: Path) -> Network | MLP:
    """Read a state_dict saved with ``torch.save(model.state_dict(), path)`` (``weights_only=True``), or the
    parameters of a TorchScript archive (read as data, see :func:`read_torchscript`)."""
    return read(path)[0]


def read(path: Path) -> tuple[Network | MLP, tuple[str, ...], bool]:
    """:func:`load`, with notes; a TorchScript archive records its modules' types (activation seen)."""
    path = Path(path)
    with open(path, "rb") as fh:
        if fh.read(4) == _ZIP_MAGIC[:4]:
            # member count, inflation ratios, the pickle's size and the inflated total within the limits, before
            # torch reads anything
            check_zip(path, NAME, headers=("data.pkl", "constants.pkl"))
    if is_torchscript(path):
        return read_torchscript(path)
    return _load_state_dict_file(path), (), False


def _load_state_dict_file(path: Path) -> Network | MLP:
    torch = import_torch("reading .pt files")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except pickle.UnpicklingError as exc:
        msg = str(exc)
        found = re.search(r"GLOBAL ([\w.]+)", msg)
        if found or "Unsupported" in msg or "global" in msg.lower():
            what = f" ({found.group(1)})" if found else ""
            raise UnsupportedModelError(
                f"{path.name} holds pickled Python objects{what}, e.g. a whole module saved with "
                "torch.save(model); relusym reads only weights (weights_only=True) and never runs pickled code: "
                "save model.state_dict() instead"
            ) from None
        raise InvalidNetworkError(
            f"{path.name} is not a readable PyTorch file (corrupted?): {first_line(msg)}"
        ) from None
    except _ARCHIVE_ERRORS as exc:
        raise InvalidNetworkError(
            f"{path.name} is not a readable PyTorch file (truncated or corrupted?): {first_line(str(exc))}"
        ) from None
    return from_state_dict(_unwrap(obj, path.name), source=path.name)


def _unwrap(found: Any, source: str) -> Mapping[str, Any]:
    if not isinstance(found, Mapping):
        raise UnsupportedModelError(f"{source} holds a {type(found).__name__}, not a state_dict of tensors")
    obj: Mapping[str, Any] = found
    for _ in range(3):
        if any(hasattr(v, "shape") for v in obj.values()):
            return obj
        inner = [obj[k] for k in _WRAPPER_KEYS if isinstance(obj.get(k), Mapping)]
        if len(inner) != 1:
            break
        obj = inner[0]
    if not any(hasattr(v, "shape") for v in obj.values()):
        raise UnsupportedModelError(f"{source} holds a dict without tensors (keys {list(obj)[:6]}), not a state_dict")
    return obj


def _wrapper_path(obj: Any) -> list[str]:
    """The chain of wrapper keys around the state_dict in a checkpoint dict."""
    out: list[str] = []
    for _ in range(3):
        if not isinstance(obj, Mapping) or any(hasattr(v, "shape") for v in obj.values()):
            break
        inner = [k for k in _WRAPPER_KEYS if isinstance(obj.get(k), Mapping)]
        if len(inner) != 1:
            break
        out.append(inner[0])
        obj = obj[inner[0]]
    return out


def accepts(obj: Any) -> bool:
    """An ``nn.Module`` or a mapping of torch tensors (no torch import); not a Keras model, which is an
    ``nn.Module`` too under the torch backend (the Keras reader sees its layers' activations)."""
    mro = [(c.__module__ or "") for c in type(obj).__mro__]
    if any(m.startswith("keras") for m in mro):
        return False
    if any(m.startswith("torch.nn") for m in mro):
        return True
    if isinstance(obj, Mapping) and obj:
        for v in list(obj.values())[:4]:
            if (type(v).__module__ or "").startswith("torch"):
                return True
    return False


def object_records_activation(obj: Any) -> bool:
    """A module's activation is seen (its layers, or its traced forward); a state_dict holds weights only."""
    return not isinstance(obj, Mapping)


def from_object(obj: Any) -> Network | MLP:
    """A network from an ``nn.Module`` or a state_dict."""
    if isinstance(obj, Mapping):
        return from_state_dict(obj)
    return from_module(obj)


def to_module(net: Network | MLP, dtype: Any = None, *, allow_rounding: bool = False) -> Any:
    """``nn.Sequential(Linear(m, n), ReLU(), Linear(n, k))`` holding the network's weights (for a deep network
    ``Linear, ReLU, Linear, ReLU, …, Linear``, the keys ``0.weight, 0.bias, 2.weight, …``), in ``dtype`` (default:
    the network's widest float dtype, float64 for exact rationals; ``"bfloat16"`` is allowed).  An entry that
    ``dtype`` does not hold exactly is refused, naming it, unless ``allow_rounding=True``."""
    torch = import_torch("building a PyTorch module")
    name = "bfloat16" if str(dtype).replace("torch.", "") == "bfloat16" else None
    if name is None:
        name = np.dtype(str(dtype).replace("torch.", "")).name if dtype is not None else common_dtype(net).name
    policy = WritePolicy(allow_rounding=allow_rounding, dtype=name)
    sd, _ = standard_arrays(net, policy)
    tdtype = getattr(torch, name)
    widths = widths_of(net)
    mods: list[Any] = []
    for i in range(len(widths) - 1):
        if i:
            mods.append(torch.nn.ReLU())
        mods.append(torch.nn.Linear(widths[i], widths[i + 1], dtype=tdtype))
    model = torch.nn.Sequential(*mods)
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)).to(tdtype) for k, v in sd.items()})
    return model


def to_state_dict(
    net: Network | MLP, like: Mapping[str, Any] | None = None, *, policy: WritePolicy | None = None
) -> dict[str, Any]:
    """A state_dict of torch tensors (the layout and dtypes of ``like`` when given, else ``nn.Sequential``'s);
    every entry exact, or as ``policy`` allows."""
    torch = import_torch("writing .pt files")
    policy = policy if policy is not None else WritePolicy()
    layers = None
    if like is not None:
        layers = _layers_of(like, "like")
    arrays, bf16 = layout_arrays(net, layers, policy)
    out: dict[str, Any] = {}
    for key, arr in arrays.items():
        t = torch.from_numpy(np.ascontiguousarray(arr))
        if key in bf16:
            t = t.to(torch.bfloat16)  # exact: the values are bfloat16 values
        out[key] = t
    if like is not None:
        # keep the like file's key order
        order = [k for k in like if k in out] + [k for k in out if k not in like]
        out = {k: out[k] for k in order}
    return out


def _layers_of(state_dict: Mapping[str, Any], source: str) -> LinearChain:
    arrays: dict[str, Any] = {}
    dtypes: dict[str, str] = {}
    for key, value in state_dict.items():
        if value is None:
            continue
        name = str(getattr(value, "dtype", ""))
        dtypes[str(key)] = name.replace("torch.", "")
        arrays[str(key)] = tensor_to_numpy(value)
    chain = chain_linear_layers(arrays, source=source, ordered=True)

    def fix(layer: LinearLayer) -> LinearLayer:
        return LinearLayer(
            layer.weight_key,
            layer.bias_key,
            layer.weight,
            layer.bias,
            layer.transposed,
            dtypes.get(layer.weight_key, layer.weight_dtype),
            dtypes.get(layer.bias_key, layer.bias_dtype) if layer.bias_key else None,
        )

    return LinearChain(tuple(fix(layer) for layer in chain.layers))


# entries of a checkpoint that describe the training state of the old parameters (their shapes follow the
# weights), dropped when the weights change shape
_TRAINING_STATE = ("optimizer", "optimizer_state_dict", "optim", "opt_state", "scheduler", "lr_scheduler", "ema")


def _replaced(raw: Any, wrappers: list[str], sd: dict[str, Any], same_shapes: bool, policy: WritePolicy) -> Any:
    """The like file's object with its state_dict replaced by ``sd``: every other entry kept (epoch, config,
    version keys), training state dropped (with a note) when the weights changed shape."""
    if not wrappers:
        return sd
    out = dict(raw)
    if not same_shapes:
        for key in _TRAINING_STATE:
            if key in out:
                del out[key]
                policy.notes.append(
                    f"dropped the checkpoint entry '{key}': it is training state for weights of the old shapes"
                )
    node = out
    for key in wrappers[:-1]:
        node[key] = dict(node[key])
        node = node[key]
    node[wrappers[-1]] = sd
    return out


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Write a state_dict file (``torch.save``); with ``like``, the same keys, nesting, layout and dtypes, and
    the like checkpoint's other entries."""
    torch = import_torch("writing .pt files")
    policy = policy if policy is not None else WritePolicy()
    like_sd: Mapping[str, Any] | None = None
    raw: Any = None
    wrappers: list[str] = []
    if like is not None and is_torchscript(Path(like)):
        like_sd = torchscript_state_dict(Path(like))
        policy.notes.append(
            f"wrote a state_dict with the keys of {Path(like).name}: a TorchScript archive also holds code, which "
            "relusym does not write; load it with module.load_state_dict(torch.load(path))"
        )
    elif like is not None:
        try:
            raw = torch.load(Path(like), map_location="cpu", weights_only=True)
        except Exception as exc:
            raise InvalidNetworkError(f"cannot read the layout of {Path(like).name}: {first_line(str(exc))}") from None
        wrappers = _wrapper_path(raw)
        like_sd = _unwrap(raw, Path(like).name)
    sd: Any = to_state_dict(net, like_sd, policy=policy)
    same = like_sd is not None and all(
        k in like_sd and tuple(like_sd[k].shape) == tuple(v.shape) for k, v in sd.items()
    )
    # through a file object: torch would otherwise name the archive's records after the (temporary) file name
    with open(path, "wb") as fh:
        torch.save(_replaced(raw, wrappers, sd, same, policy), fh)
