"""The layer structure of a Keras model config: the chain Dense → ReLU → … → Dense checked layer by layer, the
activation names read from their serialized forms, and the network of the Dense kernels and biases.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from relusym._base.limits import shorten
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    exact_float_array,
    shaped,
)

__all__ = ["dense_arrays", "dense_network", "dense_structure", "layer_list", "model_layers"]

_PASS = ("InputLayer", "Dropout", "SpatialDropout1D", "GaussianDropout", "AlphaDropout", "GaussianNoise")


_RELU_NAMES = ("relu",)


def dense_arrays(arrays: list[np.ndarray], where: str) -> tuple[np.ndarray, np.ndarray | None]:
    if len(arrays) not in (1, 2) or np.ndim(arrays[0]) != 2 or (len(arrays) == 2 and np.ndim(arrays[1]) != 1):
        shapes = [tuple(np.shape(a)) for a in arrays]
        raise UnsupportedModelError(f"{where} holds arrays of shapes {shapes}, not a Dense kernel and bias")
    kernel = exact_float_array(arrays[0], f"{where}: kernel")
    bias = exact_float_array(arrays[1], f"{where}: bias") if len(arrays) == 2 else None
    return kernel, bias


def layer_list(config: Mapping[str, Any], source: str) -> list[Mapping[str, Any]]:
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


def dense_structure(layers: list[Mapping[str, Any]], source: str) -> tuple[list[str], str | None]:
    """The names of the Dense layers in order and the output activation (None for linear), checking that the
    layers compute Dense → ReLU → Dense, or deeper with a ReLU between each two Dense layers."""
    seq: list[tuple[str, str]] = []  # (kind, name)
    for i, ly in enumerate(layers):
        if not isinstance(ly, Mapping) or not isinstance(ly.get("config", {}) or {}, Mapping):
            raise UnsupportedModelError(f"{source}: layer {i} of the config is {shorten(ly)}, not a Keras layer")
        seq += _layer_steps(ly, seq, source)
    return _check_steps(seq, source)


def _layer_steps(ly: Mapping[str, Any], seq: list[tuple[str, str]], source: str) -> list[tuple[str, str]]:
    """What one layer computes, as (kind, name) steps: "dense", "relu" or "act:<name>" (none for a no-op)."""
    cls = str(ly.get("class_name"))
    cfg = ly.get("config", {}) or {}
    name = str(cfg.get("name", cls))
    if cls in _PASS:
        return []
    if cls == "Flatten":
        if any(kind == "dense" for kind, _ in seq):
            raise UnsupportedModelError(f"{source}: layer '{name}' (Flatten) sits after a Dense layer")
        return []
    if cls == "ReLU":
        if cfg.get("negative_slope", 0) or cfg.get("threshold", 0) or cfg.get("max_value") is not None:
            raise UnsupportedModelError(f"{source}: layer '{name}' is a ReLU with a slope, threshold or cap")
        return [("relu", name)]
    if cls not in ("Dense", "Activation"):
        raise UnsupportedModelError(
            f"{source}: layer '{name}' is a {cls}; relusym reads Dense → ReLU → … → Dense (never running code)"
        )
    act = _activation_name(cfg.get("activation", "linear"), f"{source}: layer '{name}'")
    out = [("dense", name)] if cls == "Dense" else []
    if act in _RELU_NAMES:
        out.append(("relu", name))
    elif act != "linear":
        out.append((f"act:{act}", name))
    return out


def _check_steps(seq: list[tuple[str, str]], source: str) -> tuple[list[str], str | None]:
    """The Dense names and the output activation of the steps, checked to be Dense → ReLU → … → Dense."""
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
    head: str | None = None
    for kind, name in seq[last + 1 :]:
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


def dense_network(dense: list[tuple[np.ndarray, np.ndarray | None]], names: list[str]) -> Network | MLP:
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


def model_layers(obj: Any) -> list[Mapping[str, Any]]:
    return [{"class_name": type(ly).__name__, "config": ly.get_config()} for ly in obj.layers]
