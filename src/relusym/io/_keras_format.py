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

from relusym._base.limits import ZIP_ERRORS, check_zip, parse_json
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._keras_h5 import h5_layers, import_h5py, write_h5
from relusym.io._keras_layers import dense_arrays, dense_network, dense_structure, layer_list, model_layers
from relusym.io._layers import (
    WritePolicy,
    affine_layers,
    check_depth,
    common_dtype,
    widths_of,
)

__all__ = [
    "NAME",
    "RECORDS_ACTIVATION",
    "SUFFIXES",
    "accepts",
    "from_object",
    "load",
    "object_records_activation",
    "read",
    "save",
    "sniff",
    "to_model",
]

NAME = "keras"


SUFFIXES: tuple[str, ...] = (".keras", ".h5")


RECORDS_ACTIVATION = True


_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


_ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (*ZIP_ERRORS, KeyError)


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


def _head_warning(source: str, head: str) -> str:
    from relusym.io._sklearn_format import LogitsOnlyWarning

    msg = (
        f"{source}: its output activation '{head}' is outside the network x ↦ V·relu(Ax + b) + c (or its deep "
        "form); relusym reads and classifies the logits only"
    )
    warnings.warn(msg, LogitsOnlyWarning, stacklevel=4)
    return msg


def _read_archive(path: Path) -> tuple[dict[str, Any], Any]:
    h5py = import_h5py()
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
        h5py = import_h5py()
        try:
            f = h5py.File(path, "r")
        except OSError as exc:
            raise InvalidNetworkError(f"{path.name} is not a readable HDF5 file ({exc})") from None
        with f:
            found = h5_layers(f, path.name)
        if len(found) < 2:
            raise UnsupportedModelError(
                f"{path.name} holds {len(found)} layers with weights ({', '.join(n for _, n, _, _ in found)}); "
                "relusym needs at least two Dense layers"
            )
        names = [n for _, n, _, _ in found]
        dense = [dense_arrays(a, f"{path.name}: layer '{n}'") for _, n, a, _ in found]
        return dense_network(dense, names), (), False
    config, weights = _read_archive(path)
    with weights:
        denses, head = dense_structure(layer_list(config, path.name), path.name)
        by_name = {name: arrays for _, name, arrays, _ in h5_layers(weights, f"{path.name}: model.weights.h5")}
    for name in denses:
        if name not in by_name:
            raise InvalidNetworkError(f"{path.name}: the weights of layer '{name}' are not in model.weights.h5")
    net = dense_network([dense_arrays(by_name[n], f"{path.name}: layer '{n}'") for n in denses], denses)
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
    layers = layer_list(config, source) if config["class_name"] == "Sequential" else model_layers(obj)
    denses, head = dense_structure(layers, source)
    weights = {ly.name: [np.asarray(w) for w in ly.get_weights()] for ly in obj.layers}
    net = dense_network([dense_arrays(weights[n], f"{source}: layer '{n}'") for n in denses], denses)
    if head:
        _head_warning(source, head)
    return net


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


def _like_config(
    like: Path, net: Network | MLP
) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str | None, str | None]]]:
    """The like archive's config with the widths changed, the (h5 group, name) of each Dense layer, and the
    dtypes of their kernels and biases."""
    config, weights = _read_archive(like)
    with weights:
        denses, _ = dense_structure(layer_list(config, like.name), like.name)
        groups = {name: (group, dts) for group, name, _, dts in h5_layers(weights)}
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
            h5py = import_h5py()
            with h5py.File(like, "r") as f:
                found = h5_layers(f)
            check_depth(count, len(found), Path(like).name)
            groups = [(g, n) for g, n, _, _ in found]
            dtypes = [tuple((dts + [None, None])[:2]) for _, _, _, dts in found]  # type: ignore[misc]
        write_h5(str(path), groups, _arrays(net, dtypes, policy), "sequential")
        return
    if like is not None:
        config, groups, dtypes = _like_config(Path(like), net)
    else:
        config = _sequential_config(net, default_dt if policy.dtype is None else policy.dtype)
    arrays = _arrays(net, dtypes, policy)
    buf = io.BytesIO()
    write_h5(buf, groups, arrays, config.get("config", {}).get("name", "sequential"))
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
