"""JAX/Flax: params trees of Dense layers (two for one hidden layer, or more), and msgpack files from
``flax.serialization.to_bytes``.

A Dense layer is a dict with a 2-D ``kernel`` (in×out, so A = kernel₁ᵀ and V = kernel₂ᵀ) and an optional
``bias``.  The layers are chained by their shapes (m×n_1, n_1×n_2, …, n_{L−1}×k): the natural order of their
names when it chains, else the one order the shapes allow (Flax names layers in construction order, so
``Dense_0`` may well be the output layer).
``{'params': {...}}`` wrappers (and train-state dicts holding ``params``) are accepted.  Files are read with
``flax.serialization.msgpack_restore``, or with the ``msgpack`` package alone when Flax is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    LinearChain,
    LinearLayer,
    WritePolicy,
    chain_linear_layers,
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
    "save",
    "accepts",
    "from_object",
    "object_records_activation",
    "check_forward",
    "from_params",
    "to_params",
    "to_nnx",
]

NAME = "flax"
RECORDS_ACTIVATION = False
SUFFIXES: tuple[str, ...] = (".msgpack", ".flax")

_MAP_MARKERS = set(range(0x80, 0x90)) | {0xDE, 0xDF}
_EXT_NDARRAY, _EXT_COMPLEX, _EXT_SCALAR = 1, 2, 3
_CHUNKED = "__msgpack_chunked_array__"


# ----------------------------------------------------------------------------------------------------------
# msgpack


def _import_msgpack() -> Any:
    try:
        import msgpack
    except ImportError:
        raise UnsupportedModelError(
            "reading Flax msgpack files needs flax or msgpack: pip install 'relusym[jax]'"
        ) from None
    return msgpack


def _flax_serialization() -> Any:
    try:
        import flax.serialization as fs
    except Exception:  # not installed, or a broken jax install
        return None
    return fs


def _array_from_bytes(msgpack: Any, data: bytes) -> np.ndarray:
    shape, dtype_name, buffer = msgpack.unpackb(data, raw=True)
    name = dtype_name.decode() if isinstance(dtype_name, bytes) else str(dtype_name)
    if name == "bfloat16":
        try:
            import ml_dtypes

            return np.frombuffer(buffer, dtype=ml_dtypes.bfloat16).reshape(shape)
        except ImportError:
            pass
        bits = np.frombuffer(buffer, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(buffer, dtype=np.dtype(name)).reshape(shape)


def _restore_plain(data: bytes) -> Any:
    """flax.serialization.msgpack_restore without flax."""
    msgpack = _import_msgpack()

    def ext_hook(code: int, payload: bytes) -> Any:
        if code == _EXT_NDARRAY:
            return _array_from_bytes(msgpack, payload)
        if code == _EXT_SCALAR:
            return _array_from_bytes(msgpack, payload)[()]
        if code == _EXT_COMPLEX:
            re_, im = msgpack.unpackb(payload)
            return complex(re_, im)
        return msgpack.ExtType(code, payload)

    tree = msgpack.unpackb(data, ext_hook=ext_hook, raw=False, strict_map_key=False)
    return _unchunk(tree)


def _unchunk(tree: Any) -> Any:
    if isinstance(tree, dict):
        if tree.get(_CHUNKED):
            shape = tuple(tree["shape"][str(i)] for i in range(len(tree["shape"])))
            chunks = [tree["chunks"][str(i)] for i in range(len(tree["chunks"]))]
            return np.concatenate(chunks).reshape(shape)
        return {k: _unchunk(v) for k, v in tree.items()}
    return tree


def _serialize_plain(tree: Any) -> bytes:
    """flax.serialization.msgpack_serialize without flax (arrays below 2 GiB)."""
    msgpack = _import_msgpack()

    def default(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            payload = msgpack.packb((x.shape, x.dtype.name, np.ascontiguousarray(x).tobytes("C")), use_bin_type=True)
            return msgpack.ExtType(_EXT_NDARRAY, payload)
        raise TypeError(f"cannot serialize {type(x).__name__}")

    return bytes(msgpack.packb(tree, default=default, strict_types=False, use_bin_type=True))


# ----------------------------------------------------------------------------------------------------------
# trees


def _to_plain(tree: Any) -> Any:
    """Nested Mappings (dict, FrozenDict, nnx State) as plain dicts; leaves as numpy arrays."""
    if hasattr(tree, "to_pure_dict") and not isinstance(tree, dict):
        tree = tree.to_pure_dict()
    if isinstance(tree, Mapping):
        return {str(k): _to_plain(v) for k, v in tree.items()}
    if hasattr(tree, "value") and hasattr(tree.value, "shape"):  # nnx Variable / VariableState
        tree = tree.value
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        return np.asarray(tree)
    return tree


def _params_subtree(tree: Any, source: str) -> tuple[dict[str, Any], list[str]]:
    """The params dict and the chain of wrapper keys above it."""
    wrappers: list[str] = []
    while isinstance(tree, dict) and isinstance(tree.get("params"), dict):
        stats = [k for k in ("batch_stats",) if tree.get(k)]
        if stats:
            raise UnsupportedModelError(
                f"{source} holds '{stats[0]}' (a BatchNorm layer); relusym reads Dense → relu → Dense"
            )
        wrappers.append("params")
        tree = tree["params"]
    if not isinstance(tree, dict):
        raise UnsupportedModelError(f"{source} holds a {type(tree).__name__}, not a params dict")
    return tree, wrappers


def _flatten(tree: dict[str, Any], source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + str(k).split("/"))  # flat keys as Git Re-Basin's flatten_params writes them
            return
        name = "/".join(path)
        if not hasattr(node, "shape"):
            raise UnsupportedModelError(f"{source}: '{name}' is a {type(node).__name__}, not an array")
        if path[-1] == "kernel" and np.ndim(node) != 2:
            raise UnsupportedModelError(
                f"{source}: kernel '{name}' has shape {tuple(np.shape(node))}; only Dense (2-D) kernels are supported"
            )
        if path[-1] not in ("kernel", "bias"):
            raise UnsupportedModelError(
                f"{source}: '{name}' (shape {tuple(np.shape(node))}) is not the kernel or bias of a Dense layer"
            )
        out[name] = node

    walk(tree, [])
    return out


def _layers(tree: Any, source: str) -> tuple[LinearChain, list[str]]:
    params, wrappers = _params_subtree(_to_plain(tree), source)
    flat = _flatten(params, source)
    dtypes = {k: np.asarray(v).dtype.name for k, v in flat.items()}
    chain = chain_linear_layers(flat, source=source, ordered=False)

    def fix(layer: LinearLayer) -> LinearLayer:
        bias_dtype = dtypes[layer.bias_key] if layer.bias_key is not None else None
        return replace(layer, weight_dtype=dtypes[layer.weight_key], bias_dtype=bias_dtype)

    return LinearChain(tuple(fix(layer) for layer in chain.layers)), wrappers


def from_params(params: Any, *, source: str = "the params") -> Network | MLP:
    """A network from a Flax params tree of two Dense layers, or more (``{'params': ...}`` wrappers
    accepted)."""
    return _layers(params, source)[0].network()


def accepts(obj: Any) -> bool:
    """A Flax object (FrozenDict, nnx State or Module), or a dict with ``params``/``kernel`` keys."""
    if any((c.__module__ or "").startswith("flax") for c in type(obj).__mro__):
        return True
    if not isinstance(obj, Mapping):
        return False
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        node, depth = stack.pop()
        if "kernel" in node or "params" in node or any(str(k).endswith("/kernel") for k in node):
            return True
        if depth < 4:
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, Mapping))
    return False


def _is_module(obj: Any) -> str | None:
    """``"nnx"`` or ``"linen"`` for a Flax module object (not a params tree or an nnx State)."""
    mods = [(c.__module__ or "") for c in type(obj).__mro__]
    if any(m.startswith("flax.nnx") for m in mods) and callable(obj) and not hasattr(obj, "to_pure_dict"):
        return "nnx"
    if any(m.startswith("flax.linen") for m in mods) and hasattr(obj, "apply"):
        return "linen"
    return None


def object_records_activation(obj: Any) -> bool:
    """A module's forward is traced (its activation seen); a params tree holds weights only."""
    return _is_module(obj) is not None


_STRUCTURAL = {
    "dot_general",
    "add",
    "reshape",
    "broadcast_in_dim",
    "convert_element_type",
    "squeeze",
    "expand_dims",
    "copy",
    "copy_p",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_vjp_call_jaxpr",
    "jit",
    "pjit",
    "closed_call",
}


def _primitives(jaxpr: Any, out: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The primitives a jaxpr applies, in order, entering the calls it makes (jit, custom_jvp)."""
    for eqn in jaxpr.eqns:
        inner = [p for p in eqn.params.values() if hasattr(p, "eqns") or hasattr(p, "jaxpr")]
        if inner:
            sub = inner[0]
            _primitives(sub if hasattr(sub, "eqns") else sub.jaxpr, out)
            continue
        out.append((eqn.primitive.name, eqn))
    return out


def check_forward(fn: Any, m: int, source: str, layers: int = 2) -> None:
    """Trace ``fn`` (a Flax module's forward) with jax on a zero input of m features and check that it computes
    Dense → ReLU → Dense (or, for ``layers`` > 2, Dense → ReLU → … → Dense): that many matrix products with only
    a ``max(·, 0)`` between each two and bias additions and reshapes around them.  Anything else is refused,
    naming what was found (``tanh``, a missing ReLU, ...)."""
    import jax
    import jax.numpy as jnp

    try:
        closed = jax.make_jaxpr(fn)(jnp.zeros((1, m), dtype=jnp.float32))
    except Exception as exc:
        raise UnsupportedModelError(
            f"{source}: its forward could not be traced with jax ({str(exc).splitlines()[0][:120]}); pass its "
            "parameters (nnx.state(model, nnx.Param) or the params dict) if it computes Dense → relu → Dense"
        ) from None
    seq: list[str] = []
    for name, eqn in _primitives(closed.jaxpr, []):
        if name == "max":
            lits = [v for v in eqn.invars if type(v).__name__ == "Literal"]
            if any(float(np.asarray(v.val)) != 0.0 for v in lits):
                raise UnsupportedModelError(f"{source} applies max(·, c) with c ≠ 0, not a ReLU")
            if not seq or seq[-1] != "relu":
                seq.append("relu")
        elif name == "dot_general":
            seq.append("dense")
        elif name not in _STRUCTURAL:
            raise UnsupportedModelError(
                f"{source} applies '{name}' in its forward; relusym reads Dense → relu → … → Dense only"
            )
    expected = ["dense"] + ["relu", "dense"] * (layers - 1)
    if seq != expected:
        raise UnsupportedModelError(
            f"{source} computes {' → '.join(seq) or 'nothing'}, not {' → '.join(expected).replace('dense', 'Dense')}"
        )


def from_object(obj: Any) -> Network | MLP:
    """A network from a params tree (weights only) or a Flax module (nnx, or a bound linen module), whose
    forward is traced and must be Dense → relu → Dense."""
    kind = _is_module(obj)
    source = f"the {type(obj).__name__} module" if kind else "the params"
    if kind == "nnx":
        from flax import nnx

        net = from_params(nnx.state(obj, nnx.Param), source=source)
        check_forward(lambda x: obj(x), net.m, source, len(widths_of(net)) - 1)
        return net
    if kind == "linen":
        try:
            variables = obj.variables
        except ValueError:  # flax: "Can't access variables on unbound modules"
            variables = None
        if not variables:
            raise UnsupportedModelError(
                f"{source} is an unbound linen module, which holds no weights: pass module.bind(params) or the "
                "params dict"
            )
        net = from_params(variables, source=source)
        check_forward(lambda x: obj(x), net.m, source, len(widths_of(net)) - 1)
        return net
    return from_params(obj)


# ----------------------------------------------------------------------------------------------------------
# files


def sniff(path: Path, head: bytes) -> bool:
    """A msgpack map (the encoding of a params dict)."""
    if not head or head[0] not in _MAP_MARKERS:
        return False
    return path.suffix.lower() in SUFFIXES or any(s in head for s in (b"params", b"kernel", b"Dense"))


def _read_tree(path: Path) -> Any:
    data = Path(path).read_bytes()
    fs = _flax_serialization()
    try:
        tree = fs.msgpack_restore(data) if fs is not None else _restore_plain(data)
    except UnsupportedModelError:
        raise
    except Exception as exc:
        raise InvalidNetworkError(
            f"{Path(path).name} is not a readable Flax msgpack file (truncated or corrupted?): "
            f"{str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__}"
        ) from None
    if not isinstance(tree, Mapping):
        raise UnsupportedModelError(f"{Path(path).name} holds a {type(tree).__name__}, not a params dict")
    return tree


def load(path: Path) -> Network | MLP:
    """Read a msgpack file written by ``flax.serialization.to_bytes(params)``."""
    return from_params(_read_tree(Path(path)), source=Path(path).name)


def to_params(net: Network | MLP, like: Any = None, *, policy: WritePolicy | None = None) -> dict[str, Any]:
    """A params tree ``{'params': {'Dense_0': {'kernel', 'bias'}, 'Dense_1': ...}}`` (numpy arrays; ``Dense_i``
    for each layer of a deep network), or the names, nesting and dtypes of the ``like`` tree.  Every entry exact,
    or as ``policy`` allows."""
    policy = policy if policy is not None else WritePolicy()
    layers, wrappers = (None, ["params"]) if like is None else _layers(like, "like")
    if layers is None:
        arrays, bf16 = standard_arrays(net, policy)
        names = {}
        for i in range(len(widths_of(net)) - 1):
            names[f"{2 * i}.weight"] = f"Dense_{i}/kernel"
            names[f"{2 * i}.bias"] = f"Dense_{i}/bias"
        flat = {names[k]: (v.T.copy() if k.endswith("weight") else v) for k, v in arrays.items()}
        bf16 = frozenset(names[k] for k in bf16)
    else:
        flat, bf16 = layout_arrays(net, layers, policy)
    for key in bf16:
        flat[key] = _to_bfloat16(flat[key])
    tree: dict[str, Any] = {}
    for key, arr in flat.items():
        node = tree
        parts = key.split("/")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = arr
    if like is not None:
        tree = _reordered(tree, _params_subtree(_to_plain(like), "like")[0])
    for w in reversed(wrappers):
        tree = {w: tree}
    return tree


def _reordered(tree: dict[str, Any], like: Any) -> dict[str, Any]:
    """``tree`` with its keys in the order of ``like``'s (new keys last), recursively."""
    if not isinstance(like, dict):
        return tree
    keys = [k for k in like if k in tree] + [k for k in tree if k not in like]
    return {k: _reordered(tree[k], like.get(k)) if isinstance(tree[k], dict) else tree[k] for k in keys}


def _to_bfloat16(x: np.ndarray) -> np.ndarray:
    """bfloat16 values held in float32 as an ml_dtypes bfloat16 array (exact), or unchanged without ml_dtypes."""
    try:
        import ml_dtypes
    except ImportError:
        return x  # float32 holds every value exactly
    return x.astype(ml_dtypes.bfloat16)


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Write a msgpack params file readable by ``flax.serialization.from_bytes``/``msgpack_restore``."""
    tree = to_params(net, _read_tree(Path(like)) if like is not None else None, policy=policy)
    fs = _flax_serialization()
    data = fs.msgpack_serialize(tree) if fs is not None else _serialize_plain(tree)
    Path(path).write_bytes(data)


def to_nnx(net: Network | MLP, dtype: Any = None, *, allow_rounding: bool = False) -> Any:
    """A live ``nnx`` module computing the network: ``Linear(m, n) → nnx.relu → Linear(n, k)`` (attributes
    ``hidden`` and ``output``; for a deep network ``Linear → relu → … → Linear``, attributes ``layers[0]`` …)
    holding its weights exactly in ``dtype`` (default the network's widest float dtype), else refused unless
    ``allow_rounding``."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from relusym.io._layers import common_dtype

    name = np.dtype(dtype).name if dtype is not None else common_dtype(net).name
    if name == "float64" and not jax.config.read("jax_enable_x64"):
        raise UnsupportedModelError(
            "jax runs without 64-bit floats here, so a float64 network cannot be held exactly: call "
            "jax.config.update('jax_enable_x64', True) first, or pass dtype='float32' (with allow_rounding=True "
            "if its entries do not fit)"
        )
    policy = WritePolicy(allow_rounding=allow_rounding, dtype=name)
    arrays, _ = standard_arrays(net, policy)
    widths = widths_of(net)
    jdt = getattr(jnp, name)

    def linear(i: int, rngs: Any) -> Any:
        lin = nnx.Linear(widths[i], widths[i + 1], rngs=rngs, param_dtype=jdt, dtype=jdt)
        lin.kernel.value = jnp.asarray(arrays[f"{2 * i}.weight"].T)
        lin.bias.value = jnp.asarray(arrays[f"{2 * i}.bias"])  # type: ignore[union-attr]
        return lin

    if len(widths) == 3:

        class ReluNetwork(nnx.Module):
            """Dense → relu → Dense, as relusym reads it."""

            def __init__(self) -> None:
                rngs = nnx.Rngs(0)
                self.hidden = linear(0, rngs)
                self.output = linear(1, rngs)

            def __call__(self, x: Any) -> Any:
                return self.output(nnx.relu(self.hidden(x)))

        return ReluNetwork()

    class DeepReluNetwork(nnx.Module):
        """Dense → relu → … → Dense, as relusym reads it."""

        def __init__(self) -> None:
            rngs = nnx.Rngs(0)
            self.layers = nnx.List([linear(i, rngs) for i in range(len(widths) - 1)])

        def __call__(self, x: Any) -> Any:
            for lin in self.layers[:-1]:
                x = nnx.relu(lin(x))
            return self.layers[-1](x)

    return DeepReluNetwork()
