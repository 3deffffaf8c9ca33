"""Keras 3: ``.keras`` archives, ``.weights.h5`` files and in-memory ``keras.Model`` objects, read as data.

A ``.keras`` file is a zip archive holding ``config.json`` (the layers, as JSON), ``metadata.json`` and
``model.weights.h5`` (the weights, in HDF5 groups ``layers/<group>/vars/<i>``, the group's ``vars`` carrying the
layer's name).  relusym reads the JSON and the HDF5 arrays (with h5py) and never deserializes a Python object: a
``Lambda`` layer or a custom class is refused, naming the layer, without running it.  The layers must be
``Dense(n, activation='relu') → Dense(k)``, or deeper ``Dense(n_1, relu) → … → Dense(k)`` (an ``Activation('relu')``
or ``ReLU`` layer may stand in for the activation; ``InputLayer``, ``Flatten`` before the first Dense, and
``Dropout`` are passed over); one hidden layer reads as a ``Network``, more as an ``MLP``.  An output
activation (softmax, sigmoid) is a classifier head outside the network: the logits are read, with a warning.
A Dense kernel is in×out, so A = kernel₁ᵀ and V = kernel₂ᵀ.

A bare ``.weights.h5`` file records no activation (it has no config): its Dense layers are read as
Linear → ReLU → Linear (→ ReLU → … for more) and the load info says so.  Writing produces files that
``keras.saving.load_model`` (or ``model.load_weights`` on a model of the new widths) loads.
"""

from __future__ import annotations

import io
import json
import re
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import ZIP_ERRORS, check_ratio, check_shape, check_zip, parse_json, shorten
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    WritePolicy,
    affine_layers,
    check_depth,
    common_dtype,
    exact_float_array,
    natural_key,
    shaped,
    widths_of,
)

__all__ = [
    "NAME",
    "SUFFIXES",
    "RECORDS_ACTIVATION",
    "sniff",
    "load",
    "read",
    "save",
    "accepts",
    "from_object",
    "object_records_activation",
    "to_model",
]

NAME = "keras"
SUFFIXES: tuple[str, ...] = (".keras", ".h5")
RECORDS_ACTIVATION = True

_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_PASS = ("InputLayer", "Dropout", "SpatialDropout1D", "GaussianDropout", "AlphaDropout", "GaussianNoise")
_RELU_NAMES = ("relu",)


_ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (*ZIP_ERRORS, KeyError)


def _import_h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise UnsupportedModelError("reading Keras files needs h5py: pip install 'relusym[keras]'") from None
    return h5py


def sniff(path: Path, head: bytes) -> bool:
    if head.startswith(_HDF5_MAGIC):
        return True
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except ZIP_ERRORS:
            return False
        return "config.json" in names and "model.weights.h5" in names
    return False


# ----------------------------------------------------------------------------------------------------------
# reading


def _h5_child(group: Any, key: str, where: str) -> Any:  # where: the child, as the messages name it
    """``group[key]`` if it is a hard link in this file; an external or soft link is refused, never followed (it
    may point at any file on the machine)."""
    h5py = _import_h5py()
    link = group.get(key, getlink=True)
    if isinstance(link, h5py.ExternalLink):
        raise UnsupportedModelError(
            f"{where} is an HDF5 external link to the file {shorten(Path(link.filename).name)}; "
            "relusym never follows it, and reads only data stored in the file itself"
        )
    if not isinstance(link, h5py.HardLink):
        raise UnsupportedModelError(
            f"{where} is an HDF5 {type(link).__name__}; relusym reads only data stored in the "
            "file itself, never through links"
        )
    return group[key]


def _is_bfloat16(ds: Any) -> bool:
    """Keras stores bfloat16 weights as 2-byte opaque values with the attribute ``dtype = "bfloat16"``."""
    tag = ds.attrs.get("dtype", "")
    tag = tag.decode() if isinstance(tag, bytes) else str(tag)
    return ds.dtype.kind == "V" and ds.dtype.itemsize == 2 and tag == "bfloat16"


def _widen_bfloat16(raw: np.ndarray) -> np.ndarray:
    """bfloat16 bits as float32 (their high half): exact, as the other formats read bfloat16."""
    return (np.ascontiguousarray(raw).view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(raw.shape)


def _h5_array(ds: Any, where: str) -> np.ndarray:
    """A dataset's array, after checking that its storage is in this file and that it declares no more than it
    stores (a compressed dataset of zeros or a shape with no storage is refused before it is read)."""
    h5py = _import_h5py()
    if not isinstance(ds, h5py.Dataset):
        raise UnsupportedModelError(f"{where} is a {type(ds).__name__}, not an HDF5 dataset")
    if ds.is_virtual or ds.external:
        how = "a virtual dataset" if ds.is_virtual else "external storage"
        raise UnsupportedModelError(
            f"{where} keeps its data outside the file ({how}); relusym reads only data stored in the file itself"
        )
    bf16 = _is_bfloat16(ds)
    if ds.dtype.kind not in "fiub" and not bf16:
        raise UnsupportedModelError(f"{where} holds {ds.dtype}, not numbers")
    check_shape(ds.shape, where)
    check_ratio(int(ds.size) * ds.dtype.itemsize, int(ds.id.get_storage_size()), where)
    return _widen_bfloat16(np.asarray(ds[()])) if bf16 else np.asarray(ds[()])


def _h5_layers(f: Any, source: str = "the HDF5 file") -> list[tuple[str, str, list[np.ndarray], list[str]]]:
    """(group, layer name, arrays, dtypes) for each ``layers/<group>/vars`` with arrays, in the file's order."""
    out = []
    if "layers" not in f:
        raise UnsupportedModelError("the HDF5 file has no 'layers' group: not a Keras 3 weights file")
    layers = _h5_child(f, "layers", f"{source}: layers")
    for group in sorted(layers.keys(), key=natural_key):
        where = f"{source}: layers/{shorten(group, 40)[1:-1]}"
        g = _h5_child(layers, group, where)
        if "vars" not in g:
            continue
        where = f"{where}/vars"
        vars_ = _h5_child(g, "vars", where)
        keys = sorted(vars_.keys(), key=natural_key)
        if not keys:
            continue
        children = [_h5_child(vars_, k, f"{where}/{k}") for k in keys]
        arrays = [_h5_array(c, f"{where}/{k}") for c, k in zip(children, keys, strict=True)]
        name = vars_.attrs.get("name", group)
        name = name.decode() if isinstance(name, bytes) else str(name)
        dts = ["bfloat16" if _is_bfloat16(c) else a.dtype.name for c, a in zip(children, arrays, strict=True)]
        out.append((group, name, arrays, dts))
    return out


def _dense_arrays(arrays: list[np.ndarray], where: str) -> tuple[np.ndarray, np.ndarray | None]:
    if len(arrays) not in (1, 2) or np.ndim(arrays[0]) != 2 or (len(arrays) == 2 and np.ndim(arrays[1]) != 1):
        shapes = [tuple(np.shape(a)) for a in arrays]
        raise UnsupportedModelError(f"{where} holds arrays of shapes {shapes}, not a Dense kernel and bias")
    kernel = exact_float_array(arrays[0], f"{where}: kernel")
    bias = exact_float_array(arrays[1], f"{where}: bias") if len(arrays) == 2 else None
    return kernel, bias


def _layer_list(config: Mapping[str, Any], source: str) -> list[Mapping[str, Any]]:
    cls = config.get("class_name")
    inner = config.get("config", {})
    if cls not in ("Sequential", "Functional", "Model"):
        raise UnsupportedModelError(f"{source} holds a Keras {cls}, not a Sequential or functional model")
    layers = inner.get("layers", []) if isinstance(inner, Mapping) else None
    if not isinstance(layers, list) or not all(
        isinstance(ly, Mapping) and isinstance(ly.get("config", {}), Mapping) for ly in layers
    ):
        raise UnsupportedModelError(f"{source}: the config's 'layers' is not a list of Keras layers")
    if cls != "Sequential":
        # a functional model must be a chain: each layer fed by the one before
        names = [ly.get("config", {}).get("name") for ly in layers]
        for i, ly in enumerate(layers[1:], start=1):
            inbound = json.dumps(ly.get("inbound_nodes", []))
            if names[i - 1] not in inbound or sum(n in inbound for n in names if n) > 1:
                raise UnsupportedModelError(f"{source}: layer '{names[i]}' is not fed by the layer before it alone")
    return layers


def _structure(layers: list[Mapping[str, Any]], source: str) -> tuple[list[str], str | None]:
    """The names of the Dense layers in order and the output activation (None for linear), checking that the
    layers compute Dense → ReLU → Dense, or deeper with a ReLU between each two Dense layers."""
    seq: list[tuple[str, str]] = []  # (kind, name)
    for i, ly in enumerate(layers):
        if not isinstance(ly, Mapping) or not isinstance(ly.get("config", {}) or {}, Mapping):
            raise UnsupportedModelError(f"{source}: layer {i} of the config is {shorten(ly)}, not a Keras layer")
        cls = str(ly.get("class_name"))
        cfg = ly.get("config", {}) or {}
        name = str(cfg.get("name", cls))
        if cls in _PASS:
            continue
        if cls == "Flatten":
            if any(kind == "dense" for kind, _ in seq):
                raise UnsupportedModelError(f"{source}: layer '{name}' (Flatten) sits after a Dense layer")
            continue
        if cls == "Dense":
            act = _activation_name(cfg.get("activation", "linear"), f"{source}: layer '{name}'")
            seq.append(("dense", name))
            if act in _RELU_NAMES:
                seq.append(("relu", name))
            elif act != "linear":
                seq.append((f"act:{act}", name))
        elif cls == "ReLU":
            if cfg.get("negative_slope", 0) or cfg.get("threshold", 0) or cfg.get("max_value") is not None:
                raise UnsupportedModelError(f"{source}: layer '{name}' is a ReLU with a slope, threshold or cap")
            seq.append(("relu", name))
        elif cls == "Activation":
            act = _activation_name(cfg.get("activation", "linear"), f"{source}: layer '{name}'")
            if act in _RELU_NAMES:
                seq.append(("relu", name))
            elif act != "linear":
                seq.append((f"act:{act}", name))
        else:
            raise UnsupportedModelError(
                f"{source}: layer '{name}' is a {cls}; relusym reads Dense → ReLU → … → Dense (never running code)"
            )
    denses = [name for kind, name in seq if kind == "dense"]
    if len(denses) < 2:
        raise UnsupportedModelError(
            f"{source} has {len(denses)} Dense layers ({', '.join(denses) or 'none'}); relusym needs at least two"
        )
    first = seq.index(("dense", denses[0]))
    last = seq.index(("dense", denses[-1]))
    if seq[:first]:
        kind, name = seq[0]
        raise UnsupportedModelError(f"{source}: layer '{name}' ({kind}) comes before the first Dense layer")
    for a, b in zip(denses, denses[1:], strict=False):
        ia, ib = seq.index(("dense", a)), seq.index(("dense", b))
        between = seq[ia + 1 : ib]
        for kind, name in between:
            if kind.startswith("act:"):
                raise UnsupportedModelError(
                    f"{source}: layer '{name}' applies activation '{kind[4:]}'; relusym reads ReLU networks only"
                )
        if not any(kind == "relu" for kind, _ in between):
            raise UnsupportedModelError(f"{source}: no ReLU between the Dense layers '{a}' and '{b}'")
    after = seq[last + 1 :]
    head: str | None = None
    for kind, name in after:
        if kind == "relu":
            raise UnsupportedModelError(f"{source}: layer '{name}' applies a ReLU after the output layer")
        if head is not None:
            raise UnsupportedModelError(f"{source}: layer '{name}' follows the output activation")
        head = kind[4:]
    return denses, head


def _activation_name(act: Any, where: str = "a layer") -> str:
    """The name of an activation given as a string or as a serialized object (``{"class_name": "function",
    "config": "relu"}``, ``{"class_name": "ReLU", "config": {"name": …}}``); any other form is refused, naming the
    layer."""
    if act is None:
        return "linear"
    if isinstance(act, str):
        return act.lower()
    if isinstance(act, Mapping):  # a serialized activation object
        inner = act.get("config")
        if isinstance(inner, str):  # a serialized function: its name is the config
            return inner.lower()
        if inner is None and act.get("module") in ("keras.activations", "keras.src.activations"):
            name = act.get("class_name", act.get("registered_name"))
            if isinstance(name, str):
                return name.lower()
        if isinstance(inner, Mapping):
            cls, name = act.get("class_name"), inner.get("name")
            if cls == "ReLU" and not any(inner.get(k) for k in ("negative_slope", "threshold", "max_value")):
                return "relu"
            if isinstance(name, str):
                return name.lower()
            if isinstance(cls, str):
                return cls.lower()
    raise UnsupportedModelError(
        f"{where} gives its activation as {shorten(act)}, which is not an activation relusym can read (a name such "
        "as 'relu', or a serialized Keras activation)"
    )


def _network(dense: list[tuple[np.ndarray, np.ndarray | None]], names: list[str]) -> Network | MLP:
    """The network of Dense layers (kernel in×out, bias), in order: a ``Network`` for two, an ``MLP`` for more."""
    for (K1, _), (K2, _), a, b in zip(dense, dense[1:], names, names[1:], strict=False):
        if K2.shape[0] != K1.shape[1]:
            if len(dense) == 2:
                raise InvalidNetworkError(
                    f"the hidden Dense layer has {K1.shape[1]} units but the output layer's kernel takes {K2.shape[0]}"
                )
            raise InvalidNetworkError(
                f"the Dense layer '{a}' has {K1.shape[1]} units but the kernel of '{b}' after it takes {K2.shape[0]}"
            )
    return shaped([(K.T, B if B is not None else np.zeros(K.shape[1], dtype=K.dtype)) for K, B in dense])


def _head_warning(source: str, head: str) -> str:
    from relusym.io._sklearn_format import LogitsOnlyWarning

    msg = (
        f"{source}: its output activation '{head}' is outside the network x ↦ V·relu(Ax + b) + c (or its deep "
        "form); relusym reads and classifies the logits only"
    )
    warnings.warn(msg, LogitsOnlyWarning, stacklevel=4)
    return msg


def _read_archive(path: Path) -> tuple[dict[str, Any], Any]:
    h5py = _import_h5py()
    # member count, header sizes and inflation ratios checked before anything is inflated
    check_zip(path, NAME, headers=("config.json", "metadata.json"))
    try:
        zf = zipfile.ZipFile(path)
        text = zf.read("config.json").decode("utf-8")
        config = parse_json(text, f"{path.name}: config.json", exact=False)
        if not isinstance(config, Mapping):
            raise InvalidNetworkError(f"{path.name}: config.json holds a {type(config).__name__}, not an object")
        weights = h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r")
    except _ARCHIVE_ERRORS as exc:
        raise InvalidNetworkError(f"{path.name} is not a readable .keras archive ({exc})") from None
    return dict(config), weights


def read(path: Path) -> tuple[Network | MLP, tuple[str, ...], bool]:
    """The network of a ``.keras`` archive (activation from its config) or a ``.weights.h5`` file (none)."""
    path = Path(path)
    with open(path, "rb") as fh:
        is_h5 = fh.read(8) == _HDF5_MAGIC
    if is_h5:
        h5py = _import_h5py()
        try:
            f = h5py.File(path, "r")
        except OSError as exc:
            raise InvalidNetworkError(f"{path.name} is not a readable HDF5 file ({exc})") from None
        with f:
            found = _h5_layers(f, path.name)
        if len(found) < 2:
            raise UnsupportedModelError(
                f"{path.name} holds {len(found)} layers with weights ({', '.join(n for _, n, _, _ in found)}); "
                "relusym needs at least two Dense layers"
            )
        names = [n for _, n, _, _ in found]
        dense = [_dense_arrays(a, f"{path.name}: layer '{n}'") for _, n, a, _ in found]
        return _network(dense, names), (), False
    config, weights = _read_archive(path)
    with weights:
        denses, head = _structure(_layer_list(config, path.name), path.name)
        by_name = {name: arrays for _, name, arrays, _ in _h5_layers(weights, f"{path.name}: model.weights.h5")}
    for name in denses:
        if name not in by_name:
            raise InvalidNetworkError(f"{path.name}: the weights of layer '{name}' are not in model.weights.h5")
    net = _network([_dense_arrays(by_name[n], f"{path.name}: layer '{n}'") for n in denses], denses)
    notes = (_head_warning(path.name, head),) if head else ()
    return net, notes, True


def load(path: Path) -> Network | MLP:
    return read(path)[0]


# ----------------------------------------------------------------------------------------------------------
# in-memory models


def accepts(obj: Any) -> bool:
    """A ``keras.Model`` (no keras import)."""
    return any((c.__module__ or "").startswith("keras") for c in type(obj).__mro__) and hasattr(obj, "get_config")


def object_records_activation(obj: Any) -> bool:
    return True


def from_object(obj: Any) -> Network | MLP:
    """A network from a built ``keras.Model``: its config (activations) and its layers' weights."""
    source = f"Keras model '{getattr(obj, 'name', '?')}'"
    config = {"class_name": type(obj).__name__, "config": obj.get_config()}
    if config["class_name"] not in ("Sequential", "Functional", "Model"):
        config["class_name"] = "Sequential" if "Sequential" in [c.__name__ for c in type(obj).__mro__] else "Model"
    layers = _layer_list(config, source) if config["class_name"] == "Sequential" else _model_layers(obj)
    denses, head = _structure(layers, source)
    weights = {ly.name: [np.asarray(w) for w in ly.get_weights()] for ly in obj.layers}
    net = _network([_dense_arrays(weights[n], f"{source}: layer '{n}'") for n in denses], denses)
    if head:
        _head_warning(source, head)
    return net


def _model_layers(obj: Any) -> list[Mapping[str, Any]]:
    return [{"class_name": type(ly).__name__, "config": ly.get_config()} for ly in obj.layers]


# ----------------------------------------------------------------------------------------------------------
# writing


def _dense_config(name: str, units: int, activation: str, dtype: str, input_dim: int) -> dict[str, Any]:
    return {
        "module": "keras.layers",
        "class_name": "Dense",
        "config": {
            "name": name,
            "trainable": True,
            "dtype": {
                "module": "keras",
                "class_name": "DTypePolicy",
                "config": {"name": dtype},
                "registered_name": None,
            },
            "units": units,
            "activation": activation,
            "use_bias": True,
            "kernel_initializer": {
                "module": "keras.initializers",
                "class_name": "GlorotUniform",
                "config": {"seed": None},
                "registered_name": None,
            },
            "bias_initializer": {
                "module": "keras.initializers",
                "class_name": "Zeros",
                "config": {},
                "registered_name": None,
            },
            "kernel_regularizer": None,
            "bias_regularizer": None,
            "kernel_constraint": None,
            "bias_constraint": None,
        },
        "registered_name": None,
        "build_config": {"input_shape": [None, input_dim]},
    }


def _dense_names(count: int) -> list[str]:
    """Keras's default names of ``count`` Dense layers: ``dense``, ``dense_1``, …"""
    return ["dense" if i == 0 else f"dense_{i}" for i in range(count)]


def _sequential_config(net: Network | MLP, dtype: str) -> dict[str, Any]:
    widths = widths_of(net)
    names = _dense_names(len(widths) - 1)
    denses = [
        _dense_config(name, widths[i + 1], "relu" if i < len(names) - 1 else "linear", dtype, widths[i])
        for i, name in enumerate(names)
    ]
    return {
        "module": "keras",
        "class_name": "Sequential",
        "config": {
            "name": "sequential",
            "trainable": True,
            "dtype": {
                "module": "keras",
                "class_name": "DTypePolicy",
                "config": {"name": dtype},
                "registered_name": None,
            },
            "layers": [
                {
                    "module": "keras.layers",
                    "class_name": "InputLayer",
                    "config": {
                        "batch_shape": [None, widths[0]],
                        "dtype": dtype,
                        "sparse": False,
                        "name": "input_layer",
                    },
                    "registered_name": None,
                },
                *denses,
            ],
            "build_input_shape": [None, widths[0]],
        },
        "registered_name": None,
        "build_config": {"input_shape": [None, widths[0]]},
    }


def _arrays(
    net: Network | MLP, dtypes: list[tuple[str | None, str | None]], policy: WritePolicy
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(kernel (in×out), bias) of each Dense layer, each exact in its dtype (or as the policy allows)."""
    out = []
    for (W, B, wn, bn), (wdt, bdt) in zip(affine_layers(net), dtypes, strict=True):
        pair = []
        for x, name, dt in ((W, wn, wdt), (B, bn, bdt)):
            target = policy.target(dt, x)
            fitted = policy.fit(x, target, name)
            if target == "bfloat16":  # stored as Keras does: the high half of the float32 bits, 2-byte opaque
                fitted = (np.ascontiguousarray(fitted, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
                fitted = fitted.view("V2")
            pair.append(fitted)
        out.append((pair[0].T.copy(), pair[1]))
    return out


def _write_h5(
    target: Any, groups: list[tuple[str, str]], arrays: list[tuple[np.ndarray, np.ndarray]], top: str
) -> None:
    h5py = _import_h5py()
    with h5py.File(target, "w") as f:
        layers = f.create_group("layers")
        for (group, name), (kernel, bias) in zip(groups, arrays, strict=True):
            vars_ = layers.create_group(group).create_group("vars")
            vars_.attrs["name"] = name
            for key, arr in (("0", kernel), ("1", bias)):
                ds = vars_.create_dataset(key, data=arr)
                if arr.dtype.kind == "V":  # bfloat16 bits (see _arrays)
                    ds.attrs["dtype"] = "bfloat16"
        f.create_group("vars").attrs["name"] = top


def _like_config(
    like: Path, net: Network | MLP
) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str | None, str | None]]]:
    """The like archive's config with the widths changed, the (h5 group, name) of each Dense layer, and the
    dtypes of their kernels and biases."""
    config, weights = _read_archive(like)
    with weights:
        denses, _ = _structure(_layer_list(config, like.name), like.name)
        groups = {name: (group, dts) for group, name, _, dts in _h5_layers(weights)}
    widths = widths_of(net)
    check_depth(len(widths) - 1, len(denses), like.name)
    units = dict(zip(denses, widths[1:], strict=True))
    inputs = dict(zip(denses, widths[:-1], strict=True))
    for ly in config["config"]["layers"]:
        cfg = ly.get("config", {})
        name = cfg.get("name")
        if ly.get("class_name") == "InputLayer" and "batch_shape" in cfg:
            cfg["batch_shape"] = [*cfg["batch_shape"][:-1], widths[0]]
        if name in units:
            cfg["units"] = units[name]
            if "build_config" in ly or name != denses[0]:
                ly.setdefault("build_config", {})["input_shape"] = [None, inputs[name]]
    for name in denses:
        if name not in groups:
            raise InvalidNetworkError(f"{like.name}: the weights of layer '{name}' are not in model.weights.h5")
    pairs = [(groups[n][0], n) for n in denses]
    dts = [tuple((groups[n][1] + [None, None])[:2]) for n in denses]
    return config, pairs, dts  # type: ignore[return-value]


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Write a ``.keras`` archive (``keras.saving.load_model`` loads it) or, for a ``.h5`` name or like file, a
    ``.weights.h5`` file (``model.load_weights`` loads it into a Dense(n, relu) → Dense(k) model, or the deep
    model of the same widths)."""
    policy = policy if policy is not None else WritePolicy()
    path = Path(path)
    as_weights = False
    if like is not None:
        with open(like, "rb") as fh:
            as_weights = fh.read(8) == _HDF5_MAGIC
    else:
        as_weights = re.search(r"\.h5($|\.relusym-)", path.name.lower()) is not None  # the target, or its temporary
    default_dt = common_dtype(net).name
    count = len(widths_of(net)) - 1
    names = _dense_names(count)
    groups = [(n, n) for n in names]
    dtypes: list[tuple[str | None, str | None]] = [(None, None)] * count
    if as_weights:
        if like is not None:
            h5py = _import_h5py()
            with h5py.File(like, "r") as f:
                found = _h5_layers(f)
            check_depth(count, len(found), Path(like).name)
            groups = [(g, n) for g, n, _, _ in found]
            dtypes = [tuple((dts + [None, None])[:2]) for _, _, _, dts in found]  # type: ignore[misc]
        _write_h5(str(path), groups, _arrays(net, dtypes, policy), "sequential")
        return
    if like is not None:
        config, groups, dtypes = _like_config(Path(like), net)
    else:
        config = _sequential_config(net, default_dt if policy.dtype is None else policy.dtype)
    arrays = _arrays(net, dtypes, policy)
    buf = io.BytesIO()
    _write_h5(buf, groups, arrays, config.get("config", {}).get("name", "sequential"))
    try:
        from keras import __version__ as keras_version
    except ImportError:
        keras_version = "3.0.0"
    metadata = {"keras_version": keras_version, "date_saved": "relusym"}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps(metadata))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", buf.getvalue())


def to_model(net: Network | MLP, dtype: Any = None, *, allow_rounding: bool = False) -> Any:
    """A live ``keras.Sequential([Input(m), Dense(n, relu), Dense(k)])`` (deeper: ``Dense(n_1, relu), …,
    Dense(k)``) holding the network's weights (exact in ``dtype``, default the network's widest float dtype; else
    refused unless ``allow_rounding``)."""
    import keras

    name = np.dtype(dtype).name if dtype is not None else common_dtype(net).name
    policy = WritePolicy(allow_rounding=allow_rounding, dtype=name)
    widths = widths_of(net)
    arrays = _arrays(net, [(None, None)] * (len(widths) - 1), policy)
    denses = [
        keras.layers.Dense(widths[i + 1], activation="relu" if i < len(widths) - 2 else None, dtype=name)
        for i in range(len(widths) - 1)
    ]
    model = keras.Sequential([keras.Input((widths[0],), dtype=name), *denses])
    for layer, (K, B) in zip(model.layers, arrays, strict=True):
        layer.set_weights([K, B])
    return model
