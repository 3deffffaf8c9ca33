"""PyTorch: ``nn.Sequential(Linear, ReLU, Linear)`` modules, state_dicts and ``.pt``/``.pth`` state_dict files.

Files are read with ``torch.load(path, weights_only=True)`` only, so a file that holds pickled code (a whole
module saved with ``torch.save(model)``) is refused, never run.  Float tensors are taken at their exact binary
value (``bfloat16`` is widened to ``float32``, which is exact).

The key heuristics (which arrays are the two layers) are shared with the other readers, in ``_layers``.
"""

from __future__ import annotations

import pickle
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._limits import check_zip
from .._network import Network
from ..errors import InvalidNetworkError, UnsupportedModelError
from ._layers import (
    LinearLayer,
    TwoLayers,
    common_dtype,
    layout_arrays,
    pair_linear_layers,
    standard_arrays,
)

__all__ = [
    "NAME",
    "SUFFIXES",
    "sniff",
    "load",
    "save",
    "accepts",
    "from_object",
    "from_module",
    "from_state_dict",
    "to_module",
    "to_state_dict",
]

NAME = "torch"
SUFFIXES: tuple[str, ...] = (".pt", ".pth")

_ZIP_MAGIC = b"PK\x03\x04"
# legacy (pre-1.6) torch.save files: pickle protocol 2 starting with torch's magic number 0x1950a86a20f9469cfc6c
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
# wrappers that checkpoints commonly put around the state_dict
_WRAPPER_KEYS = ("state_dict", "model_state_dict", "model", "module", "net", "network", "params")


# ----------------------------------------------------------------------------------------------------------
# lazy imports


def _import_torch(what: str) -> Any:
    try:
        import torch
    except ImportError:
        raise UnsupportedModelError(f"{what} needs PyTorch: pip install 'relusym[torch]'") from None
    return torch


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


def load(path: Path) -> Network:
    """Read a state_dict saved with ``torch.save(model.state_dict(), path)`` (``weights_only=True``)."""
    torch = _import_torch("reading .pt files")
    path = Path(path)
    with open(path, "rb") as fh:
        if fh.read(4) == _ZIP_MAGIC[:4]:
            check_zip(path, NAME)
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
            f"{path.name} is not a readable PyTorch file (corrupted?): {_first_line(msg)}"
        ) from None
    except (RuntimeError, EOFError, ValueError, OSError, zipfile.BadZipFile, KeyError, IndexError) as exc:
        raise InvalidNetworkError(
            f"{path.name} is not a readable PyTorch file (truncated or corrupted?): {_first_line(str(exc))}"
        ) from None
    return from_state_dict(_unwrap(obj, path.name), source=path.name)


def _first_line(msg: str) -> str:
    line = msg.strip().splitlines()[0] if msg.strip() else "unknown error"
    line = line.split(". ")[0].rstrip(".")
    return line[:160]


def _unwrap(obj: Any, source: str) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise UnsupportedModelError(f"{source} holds a {type(obj).__name__}, not a state_dict of tensors")
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


def _tensor_to_numpy(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):
        t = t.detach().cpu()
        name = str(t.dtype)
        if name in ("torch.bfloat16",) or name.startswith("torch.float8"):
            t = t.float()  # exact: every bfloat16 / float8 value is a float32 value
        return t.numpy()
    return np.asarray(t)


def from_state_dict(
    state_dict: Mapping[str, Any], *, source: str = "the state_dict", order_hint: Sequence[str] | None = None
) -> Network:
    """A network from a state_dict (tensors or arrays) holding exactly two linear layers."""
    arrays: dict[str, Any] = {}
    for key, value in state_dict.items():
        if value is None:
            continue
        if not hasattr(value, "shape"):
            raise UnsupportedModelError(f"{source}: entry '{key}' is a {type(value).__name__}, not a tensor")
        arrays[str(key)] = _tensor_to_numpy(value)
    return pair_linear_layers(arrays, source=source, ordered=True, order_hint=order_hint).network()


def accepts(obj: Any) -> bool:
    """An ``nn.Module`` or a mapping of torch tensors (no torch import)."""
    if any((c.__module__ or "").startswith("torch.nn") for c in type(obj).__mro__):
        return True
    if isinstance(obj, Mapping) and obj:
        for v in list(obj.values())[:4]:
            if (type(v).__module__ or "").startswith("torch"):
                return True
    return False


def from_object(obj: Any) -> Network:
    """A network from an ``nn.Module`` or a state_dict."""
    if isinstance(obj, Mapping):
        return from_state_dict(obj)
    return from_module(obj)


# ----------------------------------------------------------------------------------------------------------
# modules


def _leaf_kind(nn: Any, mod: Any) -> str:
    if isinstance(mod, nn.Linear):
        return "linear"
    if isinstance(mod, nn.ReLU):
        return "relu"
    if isinstance(mod, nn.Identity | nn.modules.dropout._DropoutNd):
        return "skip"
    if isinstance(mod, nn.Flatten):
        return "flatten"
    return "other"


def from_module(module: Any) -> Network:
    """A network from a module computing Linear → ReLU → Linear (e.g. ``nn.Sequential``), checked layer by
    layer; Dropout and Identity layers are allowed (they are the identity at inference)."""
    torch = _import_torch("reading PyTorch modules")
    nn = torch.nn
    if not isinstance(module, nn.Module):
        raise UnsupportedModelError(f"expected a torch.nn.Module, got {type(module).__name__}")
    mname = type(module).__name__
    leaves = [(name, mod) for name, mod in module.named_modules() if not any(True for _ in mod.children())]
    for name, mod in leaves:
        if _leaf_kind(nn, mod) == "other":
            label = f"layer '{name}'" if name else "the module"
            raise UnsupportedModelError(
                f"{label} of {mname} is {type(mod).__name__}; relusym handles Linear → ReLU → Linear only"
            )
    linears = [(name, mod) for name, mod in leaves if _leaf_kind(nn, mod) == "linear"]
    if len(linears) != 2:
        names = ", ".join(f"'{n}'" for n, _ in linears) or "none"
        raise UnsupportedModelError(
            f"{mname} has {len(linears)} Linear layers ({names}); relusym handles exactly two (one hidden layer)"
        )
    order = _execution_order(torch, module, leaves)
    (n0, l0), (n1, l1) = linears
    if order is not None:
        if order.index(n1) < order.index(n0):
            (n0, l0), (n1, l1) = (n1, l1), (n0, l0)
    sd = module.state_dict()
    linear_keys = set()
    for name in (n0, n1):
        for p in ("weight", "bias"):
            linear_keys.add(f"{name}.{p}" if name else p)
    stray = [k for k in sd if k not in linear_keys]
    if stray:
        raise UnsupportedModelError(
            f"{mname} holds tensor '{stray[0]}' outside its two Linear layers; relusym cannot tell what it does"
        )
    arrays: dict[str, Any] = {}
    for name, lin in ((n0, l0), (n1, l1)):
        arrays[f"{name}.weight"] = _tensor_to_numpy(lin.weight)
        if lin.bias is not None:
            arrays[f"{name}.bias"] = _tensor_to_numpy(lin.bias)
    try:
        return pair_linear_layers(
            arrays, source=mname, ordered=True, order_hint=[f"{n0}.weight", f"{n1}.weight"]
        ).network()
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(str(exc)) from None


def _execution_order(torch: Any, module: Any, leaves: list[tuple[str, Any]]) -> list[str] | None:
    """The leaf names in execution order, checking that a ReLU sits between the two Linear layers and that
    nothing follows the output layer but Dropout/Identity.  ``None`` only when the order cannot be seen
    but a ReLU module is present."""
    nn = torch.nn
    mname = type(module).__name__
    seq = None
    if _is_sequential_tree(nn, module):
        seq = [(name, _leaf_kind(nn, mod)) for name, mod in leaves]
    else:
        seq = _trace(torch, module)
    if seq is None:
        if any(_leaf_kind(nn, mod) == "relu" for _, mod in leaves):
            return None
        raise UnsupportedModelError(
            f"cannot see a ReLU in {mname}: its forward() could not be traced; if it computes Linear → ReLU → "
            "Linear, pass module.state_dict() instead"
        )
    kinds = [(name, kind) for name, kind in seq if kind not in ("skip",)]
    # a Flatten is allowed only before the first Linear
    while kinds and kinds[0][1] == "flatten":
        kinds.pop(0)
    pattern = [kind for _, kind in kinds]
    # collapse repeated ReLUs (relu∘relu = relu)
    collapsed: list[tuple[str, str]] = []
    for name, kind in kinds:
        if kind == "relu" and collapsed and collapsed[-1][1] == "relu":
            continue
        collapsed.append((name, kind))
    pattern = [kind for _, kind in collapsed]
    if pattern != ["linear", "relu", "linear"]:
        for name, kind in collapsed:
            if kind not in ("linear", "relu"):
                what = f"'{name}'" if kind == "other" else f"'{name}' ({kind})"
                raise UnsupportedModelError(f"{mname} applies {what} where relusym expects Linear → ReLU → Linear")
        if pattern[:1] != ["linear"]:
            raise UnsupportedModelError(f"{mname} does not start with a Linear layer (found {pattern})")
        if "relu" not in pattern:
            raise UnsupportedModelError(f"{mname} has no ReLU between its two Linear layers")
        if pattern[-1] == "relu":
            raise UnsupportedModelError(
                f"{mname} applies a ReLU after its output layer; relusym's networks end with a Linear layer"
            )
        raise UnsupportedModelError(f"{mname} computes {' → '.join(pattern)}, not Linear → ReLU → Linear")
    return [name for name, kind in collapsed if kind == "linear"]


def _is_sequential_tree(nn: Any, module: Any) -> bool:
    if isinstance(module, nn.Sequential):
        return all(_is_sequential_tree(nn, c) for c in module.children())
    return not any(True for _ in module.children())


def _trace(torch: Any, module: Any) -> list[tuple[str, str]] | None:
    """Trace forward() with torch.fx: the sequence of (name, kind) of the operations applied, or None."""
    import operator

    nn = torch.nn
    F = torch.nn.functional
    try:
        gm = torch.fx.symbolic_trace(module)
    except Exception:
        return None
    relu_fns = {F.relu, torch.relu, torch.relu_, getattr(F, "relu_", F.relu)}
    skip_fns = {F.dropout, torch.flatten, operator.getitem}
    mods = dict(module.named_modules())
    seq: list[tuple[str, str]] = []
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            if node.op == "get_attr":
                return [(str(node.target), "parameter used outside a Linear layer")]
            continue
        if node.op == "call_module":
            kind = _leaf_kind(nn, mods[node.target])
            seq.append((str(node.target), "other" if kind == "flatten" and seq else kind))
        elif node.op == "call_function":
            if node.target in relu_fns:
                seq.append((getattr(node.target, "__name__", "relu"), "relu"))
            elif node.target in skip_fns:
                seq.append((getattr(node.target, "__name__", "?"), "skip" if node.target is F.dropout else "flatten"))
            else:
                seq.append((getattr(node.target, "__name__", str(node.target)), "other"))
        elif node.op == "call_method":
            if node.target in ("relu", "relu_"):
                seq.append((str(node.target), "relu"))
            else:
                seq.append((f".{node.target}()", "other"))
    return seq


def to_module(net: Network, dtype: Any = None) -> Any:
    """``nn.Sequential(Linear(m, n), ReLU(), Linear(n, k))`` holding the network's weights, in ``dtype``
    (default: the network's widest float dtype, float64 for exact rationals; a warning says when that rounds)."""
    torch = _import_torch("building a PyTorch module")
    dt = np.dtype(dtype) if dtype is not None else common_dtype(net)
    sd = standard_arrays(net, dt)
    tdtype = torch.from_numpy(np.zeros(1, dtype=dt)).dtype
    model = torch.nn.Sequential(
        torch.nn.Linear(net.m, net.n, dtype=tdtype),
        torch.nn.ReLU(),
        torch.nn.Linear(net.n, net.k, dtype=tdtype),
    )
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()})
    return model


def to_state_dict(net: Network, like: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A state_dict of torch tensors (the layout of ``like`` when given, else ``nn.Sequential``'s)."""
    torch = _import_torch("writing .pt files")
    layers = None
    if like is not None:
        layers = _layers_of(like, "like")
    arrays = layout_arrays(net, layers)
    out: dict[str, Any] = {}
    bf16 = _bfloat16_keys(layers)
    for key, arr in arrays.items():
        t = torch.from_numpy(np.ascontiguousarray(arr))
        if key in bf16:
            t = t.to(torch.bfloat16)
        out[key] = t
    if like is not None:
        # keep the like file's key order
        order = [k for k in like if k in out] + [k for k in out if k not in like]
        out = {k: out[k] for k in order}
    return out


def _bfloat16_keys(layers: TwoLayers | None) -> set[str]:
    out: set[str] = set()
    if layers is None:
        return out
    for layer in (layers.first, layers.second):
        if layer.weight_dtype == "bfloat16":
            out.add(layer.weight_key)
        if layer.bias_key and layer.bias_dtype == "bfloat16":
            out.add(layer.bias_key)
    return out


def _layers_of(state_dict: Mapping[str, Any], source: str) -> TwoLayers:
    arrays: dict[str, Any] = {}
    dtypes: dict[str, str] = {}
    for key, value in state_dict.items():
        if value is None:
            continue
        name = str(getattr(value, "dtype", ""))
        dtypes[str(key)] = name.replace("torch.", "")
        arrays[str(key)] = _tensor_to_numpy(value)
    two = pair_linear_layers(arrays, source=source, ordered=True)

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

    return TwoLayers(fix(two.first), fix(two.second))


def save(net: Network, path: Path, like: Path | None = None) -> None:
    """Write a state_dict file (``torch.save``); with ``like``, the same keys, nesting, layout and dtypes."""
    torch = _import_torch("writing .pt files")
    like_sd = None
    wrappers: list[str] = []
    if like is not None:
        try:
            raw = torch.load(Path(like), map_location="cpu", weights_only=True)
        except Exception as exc:
            raise InvalidNetworkError(f"cannot read the layout of {Path(like).name}: {_first_line(str(exc))}") from None
        wrappers = _wrapper_path(raw)
        like_sd = _unwrap(raw, Path(like).name)
    sd: Any = to_state_dict(net, like_sd)
    for key in reversed(wrappers):
        sd = {key: sd}
    # through a file object: torch would otherwise name the archive's records after the (temporary) file name
    with open(path, "wb") as fh:
        torch.save(sd, fh)
