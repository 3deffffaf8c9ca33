"""PyTorch: ``nn.Sequential(Linear, ReLU, Linear)`` modules (or deeper: ``Linear, ReLU, Linear, ReLU, …,
Linear``), state_dicts and ``.pt``/``.pth`` state_dict files.

Files are read with ``torch.load(path, weights_only=True)`` only, so a file that holds pickled code (a whole
module saved with ``torch.save(model)``) is refused, never run.  Float tensors are taken at their exact binary
value (``bfloat16`` is widened to ``float32``, which is exact).

The key heuristics (which arrays are the linear layers, in which order) are shared with the other readers, in
``_layers``.  One hidden layer reads as a ``Network``, two or more as an ``MLP``.
"""

from __future__ import annotations

import io
import pickle
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import ZIP_ERRORS, check_shape, check_zip, shorten
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

__all__ = [
    "NAME",
    "SUFFIXES",
    "RECORDS_ACTIVATION",
    "sniff",
    "load",
    "read",
    "read_torchscript",
    "save",
    "accepts",
    "from_object",
    "object_records_activation",
    "from_module",
    "from_state_dict",
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
    if _is_torchscript(path):
        return read_torchscript(path)
    return _load_state_dict_file(path), (), False


def _is_torchscript(path: Path) -> bool:
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


def _torchscript_state_dict(path: Path) -> dict[str, Any]:
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
    torch = _import_torch("reading TorchScript archives")
    zf = zipfile.ZipFile(path)
    names = zf.namelist()
    pkl = next(n for n in names if n.endswith("/data.pkl") and n.count("/") == 1)
    root = pkl.split("/")[0]

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if module.startswith("__torch__"):
                return type(name, (_Scripted,), {"cls": f"{module}.{name}"})
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return torch._utils._rebuild_tensor_v2
            if (module, name) == ("collections", "OrderedDict"):
                import collections

                return collections.OrderedDict
            if module == "torch" and name in _STORAGE_DTYPES:
                return name
            raise pickle.UnpicklingError(f"{path.name}: the TorchScript archive refers to {module}.{name}")

        def persistent_load(self, pid: Any) -> Any:
            _, storage_type, key, _location, _numel = pid
            dtype = getattr(torch, _STORAGE_DTYPES[storage_type])
            data = torch.frombuffer(bytearray(zf.read(f"{root}/data/{key}")), dtype=dtype)
            return torch.storage.TypedStorage(wrap_storage=data.untyped_storage(), dtype=dtype, _internal=True)

    try:
        tree = Unpickler(io.BytesIO(zf.read(pkl))).load()
    except pickle.UnpicklingError as exc:
        raise UnsupportedModelError(str(exc)) from None
    except Exception as exc:
        raise UnsupportedModelError(
            f"{path.name} is a TorchScript archive whose parameters relusym cannot read as data "
            f"({_first_line(str(exc))}); get a state_dict with torch.save(torch.jit.load('{path.name}')"
            ".state_dict(), 'weights.pt') if you trust the file, and read that"
        ) from None
    sd: dict[str, Any] = {}
    kinds: list[tuple[str, str]] = []

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, _Scripted):
            return
        short = node.cls.split(".")[-1]
        children = [(k, v) for k, v in node.state.items() if isinstance(v, _Scripted)]
        if not children:
            kind = {"Linear": "linear", "ReLU": "relu", "Dropout": "skip", "Identity": "skip", "Flatten": "flatten"}
            if short not in kind:
                raise UnsupportedModelError(
                    f"{path.name}: TorchScript module '{prefix or 'root'}' is a {short}; relusym reads Linear → ReLU "
                    "→ Linear chains"
                )
            kinds.append((prefix, kind[short]))
        elif not short.startswith(("Sequential", "___torch_mangle")) and "container" not in node.cls:
            raise UnsupportedModelError(
                f"{path.name}: TorchScript module '{prefix or 'root'}' is a {short} with its own forward code, which "
                "relusym does not run; read its state_dict instead (torch.jit.load(path).state_dict())"
            )
        for key, value in node.state.items():
            name = f"{prefix}.{key}" if prefix else key
            if isinstance(value, _Scripted):
                walk(value, name)
            elif hasattr(value, "shape") and value is not None:
                sd[name] = value

    walk(tree, "")
    seq = [(name, k) for name, k in kinds if k != "skip"]
    while seq and seq[0][1] == "flatten":
        seq.pop(0)
    _alternation(seq, f"{path.name}: the TorchScript modules")
    return sd, kinds


def _load_state_dict_file(path: Path) -> Network | MLP:
    torch = _import_torch("reading .pt files")
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
    except _ARCHIVE_ERRORS as exc:
        raise InvalidNetworkError(
            f"{path.name} is not a readable PyTorch file (truncated or corrupted?): {_first_line(str(exc))}"
        ) from None
    return from_state_dict(_unwrap(obj, path.name), source=path.name)


def _first_line(msg: str) -> str:
    line = msg.strip().splitlines()[0] if msg.strip() else "unknown error"
    line = line.split(". ")[0].rstrip(".")
    return line[:160]


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


def _tensor_to_numpy(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):
        t = t.detach().cpu()
        name = str(t.dtype)
        if name in ("torch.bfloat16",) or name.startswith("torch.float8"):
            t = t.float()  # exact: every bfloat16 / float8 value is a float32 value
        return np.asarray(t.numpy())
    return np.asarray(t)


def from_state_dict(
    state_dict: Mapping[str, Any], *, source: str = "the state_dict", order_hint: Sequence[str] | None = None
) -> Network | MLP:
    """A network from a state_dict (tensors or arrays) holding two linear layers (a ``Network``) or more (an
    ``MLP``), chained by shape (``order_hint``, the weight keys in execution order, decides between orders)."""
    arrays: dict[str, Any] = {}
    for key, value in state_dict.items():
        if value is None:
            continue
        if not hasattr(value, "shape"):
            raise UnsupportedModelError(f"{source}: entry '{key}' is a {type(value).__name__}, not a tensor")
        check_shape(tuple(value.shape), f"{source}: tensor {shorten(str(key))}")  # (0, 10^9) holds no data
        arrays[str(key)] = _tensor_to_numpy(value)
    return chain_linear_layers(arrays, source=source, ordered=True, order_hint=order_hint).network()


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


def from_module(module: Any) -> Network | MLP:
    """A network from a module computing Linear → ReLU → Linear, or deeper Linear → ReLU → … → Linear (e.g.
    ``nn.Sequential``), checked layer by layer; Dropout and Identity layers are allowed (they are the identity at
    inference), and a Flatten before the first Linear."""
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
                f"{label} of {mname} is {type(mod).__name__}; relusym handles Linear → ReLU → Linear chains only"
            )
    linears = [(name, mod) for name, mod in leaves if _leaf_kind(nn, mod) == "linear"]
    if len(linears) < 2:
        names = ", ".join(f"'{n}'" for n, _ in linears) or "none"
        raise UnsupportedModelError(
            f"{mname} has {len(linears)} Linear layers ({names}); relusym needs at least two (one hidden layer)"
        )
    order = _execution_order(torch, module, leaves)
    if order is not None:
        by_name = dict(linears)
        linears = [(n, by_name[n]) for n in order]
    sd = module.state_dict()
    linear_keys = set()
    for name, _ in linears:
        for p in ("weight", "bias"):
            linear_keys.add(f"{name}.{p}" if name else p)
    stray = [k for k in sd if k not in linear_keys]
    if stray:
        raise UnsupportedModelError(
            f"{mname} holds tensor '{stray[0]}' outside its Linear layers; relusym cannot tell what it does"
        )
    arrays: dict[str, Any] = {}
    for name, lin in linears:
        arrays[f"{name}.weight"] = _tensor_to_numpy(lin.weight)
        if lin.bias is not None:
            arrays[f"{name}.bias"] = _tensor_to_numpy(lin.bias)
    hint = [f"{n}.weight" for n, _ in linears]
    if order is not None:
        _check_chain(arrays, hint, mname)
    try:
        return chain_linear_layers(arrays, source=mname, ordered=True, order_hint=hint).network()
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(str(exc)) from None


def _check_chain(arrays: Mapping[str, Any], keys: list[str], source: str) -> None:
    """The Linear layers, in execution order, chain by shape (each reads the outputs of the one before)."""
    for a, b in zip(keys, keys[1:], strict=False):
        if arrays[b].shape[1] != arrays[a].shape[0]:
            raise InvalidNetworkError(
                f"{source}: Linear layer '{b.removesuffix('.weight')}' takes {arrays[b].shape[1]} inputs but "
                f"'{a.removesuffix('.weight')}' before it gives {arrays[a].shape[0]} outputs"
            )


def _alternation(collapsed: list[tuple[str, str]], what: str) -> list[str]:
    """The names of the Linear layers of a sequence of (name, kind), checked to be Linear → ReLU → Linear, or
    deeper with a ReLU between each two Linear layers (ReLU∘ReLU already collapsed or collapsed here); anything
    else refused in one sentence naming the layer."""
    seq: list[tuple[str, str]] = []
    for name, kind in collapsed:
        if kind == "relu" and seq and seq[-1][1] == "relu":
            continue
        seq.append((name, kind))
    for name, kind in seq:
        if kind not in ("linear", "relu"):
            shown = f"'{name}'" if kind == "other" else f"'{name}' ({kind})"
            raise UnsupportedModelError(f"{what} applies {shown} where relusym expects Linear → ReLU → … → Linear")
    pattern = [kind for _, kind in seq]
    if pattern[:1] != ["linear"]:
        raise UnsupportedModelError(f"{what} does not start with a Linear layer (found {pattern})")
    if pattern[-1] == "relu":
        raise UnsupportedModelError(
            f"{what} applies a ReLU after its output layer; relusym's networks end with a Linear layer"
        )
    for (n0, k0), (n1, k1) in zip(seq, seq[1:], strict=False):
        if k0 == k1 == "linear":
            raise UnsupportedModelError(f"{what} has no ReLU between its Linear layers '{n0}' and '{n1}'")
    linears = [name for name, kind in seq if kind == "linear"]
    if len(linears) < 2:
        raise UnsupportedModelError(f"{what} has {len(linears)} Linear layer; relusym needs at least two")
    return linears


def _execution_order(torch: Any, module: Any, leaves: list[tuple[str, Any]]) -> list[str] | None:
    """The Linear layers' names in execution order, checking that a ReLU sits between each two Linear layers and
    that nothing follows the output layer but Dropout/Identity.  ``None`` only when the order cannot be seen
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
    return _alternation(kinds, mname)


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
            if node.target is getattr and len(node.args) > 1 and node.args[1] == "shape":
                seq.append(("shape", "skip"))
            elif node.target in relu_fns:
                seq.append((getattr(node.target, "__name__", "relu"), "relu"))
            elif node.target in skip_fns:
                seq.append((getattr(node.target, "__name__", "?"), "skip" if node.target is F.dropout else "flatten"))
            else:
                seq.append((getattr(node.target, "__name__", str(node.target)), "other"))
        elif node.op == "call_method":
            if node.target in ("relu", "relu_"):
                seq.append((str(node.target), "relu"))
            elif node.target == "size" or _flattens(node):
                seq.append((f".{node.target}()", "skip" if node.target == "size" else "flatten"))
            else:
                seq.append((f".{node.target}()", "other"))
    return seq


def _flattens(node: Any) -> bool:
    """``x.view(b, -1)``, ``x.reshape(b, -1)`` or ``x.flatten(1)``: the flattening of each sample."""
    if node.target in ("view", "reshape"):
        return len(node.args) == 3 and node.args[2] == -1
    if node.target == "flatten":
        start = node.args[1] if len(node.args) > 1 else node.kwargs.get("start_dim", 0)
        return start == 1 and len(node.args) <= 2
    return False


def to_module(net: Network | MLP, dtype: Any = None, *, allow_rounding: bool = False) -> Any:
    """``nn.Sequential(Linear(m, n), ReLU(), Linear(n, k))`` holding the network's weights (for a deep network
    ``Linear, ReLU, Linear, ReLU, …, Linear``, the keys ``0.weight, 0.bias, 2.weight, …``), in ``dtype`` (default:
    the network's widest float dtype, float64 for exact rationals; ``"bfloat16"`` is allowed).  An entry that
    ``dtype`` does not hold exactly is refused, naming it, unless ``allow_rounding=True``."""
    torch = _import_torch("building a PyTorch module")
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
    torch = _import_torch("writing .pt files")
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
        arrays[str(key)] = _tensor_to_numpy(value)
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
    torch = _import_torch("writing .pt files")
    policy = policy if policy is not None else WritePolicy()
    like_sd: Mapping[str, Any] | None = None
    raw: Any = None
    wrappers: list[str] = []
    if like is not None and _is_torchscript(Path(like)):
        like_sd = _torchscript_state_dict(Path(like))
        policy.notes.append(
            f"wrote a state_dict with the keys of {Path(like).name}: a TorchScript archive also holds code, which "
            "relusym does not write; load it with module.load_state_dict(torch.load(path))"
        )
    elif like is not None:
        try:
            raw = torch.load(Path(like), map_location="cpu", weights_only=True)
        except Exception as exc:
            raise InvalidNetworkError(f"cannot read the layout of {Path(like).name}: {_first_line(str(exc))}") from None
        wrappers = _wrapper_path(raw)
        like_sd = _unwrap(raw, Path(like).name)
    sd: Any = to_state_dict(net, like_sd, policy=policy)
    same = like_sd is not None and all(
        k in like_sd and tuple(like_sd[k].shape) == tuple(v.shape) for k, v in sd.items()
    )
    # through a file object: torch would otherwise name the archive's records after the (temporary) file name
    with open(path, "wb") as fh:
        torch.save(_replaced(raw, wrappers, sd, same, policy), fh)
