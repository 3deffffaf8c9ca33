"""Key heuristics shared by the readers of named weight arrays (PyTorch state_dicts, safetensors, Flax, ONNX,
scikit-learn): a mapping of named arrays is a network when it holds two or more 2-D weights (``*.weight``,
out×in, or ``*.kernel``, in×out) that chain by shape (:func:`chain_linear_layers`, a :class:`LinearChain`), each
with an optional 1-D bias of the same prefix (an absent bias is zero).  Two layers give a ``Network``, more an
``MLP``.  Also the exact reading of float arrays, and the one representability check of every
writer (:class:`WritePolicy`): a value goes into a file of a float type only when that type holds it exactly,
unless the caller allowed rounding."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.display import exact_and_approx, float_value
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym._exact.dtypes import cast_to_dtype, first_inexact, to_bfloat16_values
from relusym._exact.numbers import check_finite
from relusym.errors import InvalidNetworkError, NotRepresentableError, UnsupportedModelError

__all__ = [
    "natural_key",
    "exact_float_array",
    "LinearLayer",
    "LinearChain",
    "TwoLayers",
    "chain_linear_layers",
    "pair_linear_layers",
    "shaped",
    "affine_layers",
    "as_model",
    "widths_of",
    "FILE_DTYPES",
    "WritePolicy",
    "to_bfloat16_values",
    "rounded",
    "warn_rounding",
    "default_dtype",
    "common_dtype",
    "layout_arrays",
    "standard_arrays",
    "check_depth",
]

_NOT_BIAS = ("weight", "scale", "gamma", "running_mean", "running_var", "num_batches_tracked", "kernel")


def natural_key(s: str) -> tuple[Any, ...]:
    """Sort key that orders ``layer2`` before ``layer10``."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s))


def exact_float_array(arr: Any, name: str) -> np.ndarray:
    """A parameter array as numpy without rounding: float16/32/64 and integers unchanged, narrower float types
    that numpy lacks (bfloat16, float8 from ml_dtypes) widened to float32 (exact).  Rejects NaN/inf naming
    ``name`` and the index, and non-numeric dtypes."""
    a = np.asarray(arr)
    if a.dtype.kind in "fiu" and not a.dtype.isnative:  # big-endian files: the same values in native byte order
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype in (np.float16, np.float32, np.float64) or a.dtype.kind in "iu":
        pass
    elif a.dtype.name == "bfloat16" or a.dtype.name.startswith(("float8_", "float6_", "float4_")):
        a = a.astype(np.float32)  # exact: these formats are subsets of float32
    else:
        raise UnsupportedModelError(f"{name} has dtype {a.dtype}; relusym reads real float or integer weights")
    if a.dtype.kind == "f":
        check_finite(a, name)
    return a


@dataclass(frozen=True)
class LinearLayer:
    """One linear layer found in a mapping of named arrays.

    ``weight`` is out×in (torch orientation) whatever the stored orientation; ``transposed`` says that the
    stored array was in×out (a ``kernel``)."""

    weight_key: str
    bias_key: str | None
    weight: np.ndarray
    bias: np.ndarray | None
    transposed: bool
    weight_dtype: str
    bias_dtype: str | None

    @property
    def prefix(self) -> str:
        return _prefix(self.weight_key)[0]

    @property
    def sep(self) -> str:
        return _prefix(self.weight_key)[1]


@dataclass(frozen=True)
class LinearChain:
    """The linear layers of a network in execution order: ``layers[0]`` reads the input (n_1×m), each next
    one reads the one before (through a ReLU), the last gives the output (k×n_{L−1}).  ``first`` and
    ``second`` name the two layers of a one-hidden-layer network."""

    layers: tuple[LinearLayer, ...]

    @property
    def first(self) -> LinearLayer:
        return self.layers[0]

    @property
    def second(self) -> LinearLayer:
        return self.layers[-1]

    def network(self) -> Network | MLP:
        """A ``Network`` for two layers (one hidden layer), else an ``MLP``."""
        if len(self.layers) == 2:
            A = self.first.weight
            V = self.second.weight
            b = self.first.bias if self.first.bias is not None else np.zeros(A.shape[0], dtype=_zero_dtype(A))
            c = self.second.bias
            if c is None:
                c = np.zeros(V.shape[0], dtype=_zero_dtype(V))
            return Network(V, A, b, c, m=A.shape[1])
        return self.mlp()

    def mlp(self) -> MLP:
        biases = [
            ly.bias if ly.bias is not None else np.zeros(ly.weight.shape[0], dtype=_zero_dtype(ly.weight))
            for ly in self.layers
        ]
        return MLP([ly.weight for ly in self.layers], biases)


TwoLayers = LinearChain  # the former name (a chain of two layers)


def shaped(layers: Sequence[tuple[Any, Any]]) -> Network | MLP:
    """A ``Network`` when there are two (weight, bias) layers (torch orientation), else an ``MLP``."""
    if len(layers) == 2:
        (A, b), (V, c) = layers
        A = np.asarray(A) if not isinstance(A, np.ndarray) else A
        if b is None:
            b = np.zeros(A.shape[0], dtype=_zero_dtype(A))
        return Network(V, A, b, c, m=A.shape[1])
    return MLP([W for W, _ in layers], [b for _, b in layers])


def affine_layers(net: Network | MLP) -> list[tuple[np.ndarray, np.ndarray, str, str]]:
    """(W, b, name of W, name of b) for each affine layer of a network in torch orientation: ``A, b, V, c`` for
    a ``Network``, ``weights[i], biases[i]`` for an ``MLP`` (the names its entries are refused under)."""
    if isinstance(net, Network):
        return [(net.A, net.b, "A", "b"), (net.V, net.c, "V", "c")]
    if isinstance(net, MLP):
        return [
            (W, b, f"weights[{i}]", f"biases[{i}]")
            for i, (W, b) in enumerate(zip(net.weights, net.biases, strict=True))
        ]
    raise InvalidNetworkError(f"expected a relusym Network or MLP, got {type(net).__name__}")


def as_model(net: Any) -> Network | MLP:
    """``net`` itself when it is a ``Network`` or a deep ``MLP``; an MLP with one hidden layer as its
    ``Network`` (every reader gives one hidden layer as a ``Network``); anything else refused."""
    if isinstance(net, Network):
        return net
    if isinstance(net, MLP):
        return net.to_network() if net.depth == 1 else net
    raise InvalidNetworkError(f"save needs a relusym Network or MLP, got {type(net).__name__}")


def widths_of(net: Network | MLP) -> tuple[int, ...]:
    """(m, n_1, …, k)."""
    return (net.m, net.n, net.k) if isinstance(net, Network) else net.widths


def _zero_dtype(a: np.ndarray) -> Any:
    return a.dtype if a.dtype.kind == "f" else np.float64


def _prefix(key: str) -> tuple[str, str]:
    for sep in (".", "/"):
        if sep in key:
            head, _, _ = key.rpartition(sep)
            return head, sep
    return "", ""


def _last(key: str) -> str:
    return re.split(r"[./]", key)[-1]


def _describe_extra(key: str, shape: tuple[int, ...]) -> str:
    last = _last(key).lower()
    if last in ("running_mean", "running_var", "num_batches_tracked"):
        why = "a BatchNorm buffer"
    elif len(shape) >= 3:
        why = "a convolution or other non-linear-layer weight"
    elif len(shape) == 0:
        why = "a scalar, not a weight or bias"
    elif last in ("weight", "scale", "gamma"):
        why = "a 1-D weight (a PReLU or normalisation layer?)"
    else:
        why = "not the bias of either linear layer"
    return f"tensor '{key}' with shape {tuple(shape)} is {why}"


def chain_linear_layers(
    arrays: Mapping[str, Any], *, source: str, ordered: bool = True, order_hint: Sequence[str] | None = None
) -> LinearChain:
    """Find the linear layers of a ReLU network (two or more) in a mapping of named arrays.

    Weights are the 2-D arrays (``kernel`` names are in×out, all others out×in); they are chained by shape
    (n_1×m, n_2×n_1, …, k×n_{L−1}).  When several orders chain (square weights), ``order_hint`` (the weight
    keys in execution order) decides, else the mapping's order (``ordered=True``) or the natural order of the
    names; when none of those chains but the shapes allow exactly one order, that one is taken.  Biases are the
    1-D arrays with the weight's prefix (or, failing that, the one free weight of their size); anything else is
    rejected, naming the tensor.
    """
    items = [(str(k), v) for k, v in arrays.items()]
    if not ordered:
        items.sort(key=lambda kv: natural_key(kv[0]))
    shapes = {k: tuple(np.shape(v)) for k, v in items}
    weights = [k for k, _ in items if len(shapes[k]) == 2]
    if len(weights) < 2:
        if not weights:
            raise UnsupportedModelError(f"{source} holds no 2-D weight, so no linear layer")
        raise UnsupportedModelError(
            f"{source} holds one linear layer ('{weights[0]}'); relusym needs at least two (Linear → ReLU → Linear)"
        )
    vectors = [k for k, _ in items if len(shapes[k]) == 1]
    extras = [k for k, _ in items if len(shapes[k]) not in (1, 2)]
    if extras:
        raise UnsupportedModelError(f"{source}: {_describe_extra(extras[0], shapes[extras[0]])}")
    values = dict(items)

    def oriented(key: str) -> tuple[int, int]:
        r, c = shapes[key]
        return (c, r) if _last(key).lower() == "kernel" else (r, c)

    order = _chain_order(weights, oriented, order_hint, source, shapes)
    bias_of = _match_biases(vectors, order, shapes, oriented, source)

    def layer(wkey: str) -> LinearLayer:
        out_size = oriented(wkey)[0]
        transposed = _last(wkey).lower() == "kernel"
        W = exact_float_array(values[wkey], f"{source}: weight '{wkey}'")
        if transposed:
            W = W.T
        bkey = bias_of.get(wkey)
        B = None
        if bkey is not None:
            B = exact_float_array(values[bkey], f"{source}: bias '{bkey}'")
            if B.shape != (out_size,):
                raise InvalidNetworkError(
                    f"{source}: bias '{bkey}' has shape {B.shape} but weight '{wkey}' has {out_size} outputs"
                )
        return LinearLayer(wkey, bkey, W, B, transposed, W.dtype.name, None if B is None else B.dtype.name)

    return LinearChain(tuple(layer(w) for w in order))


pair_linear_layers = chain_linear_layers  # the former name


def _match_biases(
    vectors: list[str], order: list[str], shapes: dict[str, tuple[int, ...]], oriented: Any, source: str
) -> dict[str, str]:
    """The bias of each weight: by name prefix first, then by shape when exactly one weight is free to own it;
    a vector that no weight claims is refused, naming it."""
    bias_of: dict[str, str] = {}
    unclaimed: list[str] = []
    for key in vectors:
        if _last(key).lower() in _NOT_BIAS:
            raise UnsupportedModelError(f"{source}: {_describe_extra(key, shapes[key])}")
        owners = [w for w in order if _prefix(w)[0] == _prefix(key)[0] and w not in bias_of]
        if len(owners) == 1:
            bias_of[owners[0]] = key
        else:
            unclaimed.append(key)
    for key in list(unclaimed):
        free = [w for w in order if w not in bias_of and shapes[key] == (oriented(w)[0],)]
        if len(free) == 1:
            bias_of[free[0]] = key
            unclaimed.remove(key)
    if unclaimed:
        raise UnsupportedModelError(f"{source}: {_describe_extra(unclaimed[0], shapes[unclaimed[0]])}")
    return bias_of


_MAX_ORDER_STEPS = 100_000


def _chain_order(
    weights: list[str],
    oriented: Any,
    order_hint: Sequence[str] | None,
    source: str,
    shapes: Mapping[str, tuple[int, ...]],
) -> list[str]:
    """The weights in execution order: the hint's or the given order when it chains, else the one order the
    shapes allow (refused when they allow none, or several)."""

    def chains(seq: Sequence[str]) -> bool:
        return all(oriented(b)[1] == oriented(a)[0] for a, b in zip(seq, seq[1:], strict=False))

    if order_hint is not None and all(w in order_hint for w in weights):
        hinted = sorted(weights, key=list(order_hint).index)
        if chains(hinted):
            return hinted
    if chains(weights):
        return list(weights)
    found: list[list[str]] = []
    steps = 0

    def search(path: list[str], rest: list[str]) -> None:
        nonlocal steps
        steps += 1
        if len(found) > 1 or steps > _MAX_ORDER_STEPS:
            return
        if not rest:
            found.append(list(path))
            return
        for w in rest:
            if not path or oriented(w)[1] == oriented(path[-1])[0]:
                search([*path, w], [r for r in rest if r != w])

    search([], list(weights))
    if len(found) == 1 and steps <= _MAX_ORDER_STEPS:
        return found[0]
    if not found:
        if len(weights) == 2:
            w0, w1 = weights
            raise InvalidNetworkError(
                f"{source}: the shapes of '{w0}' {shapes[w0]} and '{w1}' {shapes[w1]} do not chain into "
                "m → n → k (the output layer's input size must equal the hidden layer's output size)"
            )
        listed = ", ".join(f"'{w}' {shapes[w]}" for w in weights)
        raise InvalidNetworkError(
            f"{source}: the shapes of the weights {listed} do not chain into m → n_1 → … → k (each layer's input "
            "size must equal the output size of the layer before it)"
        )
    raise InvalidNetworkError(
        f"{source}: the weights {', '.join(repr(w) for w in weights)} chain by shape in more than one order and "
        "their names do not give one that does; name them in execution order (0.weight, 2.weight, …)"
    )


# ----------------------------------------------------------------------------------------------------------
# writing: the one representability check

FILE_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64")


def _holder(dtype_name: str) -> np.dtype:
    """The numpy dtype that carries values of a file dtype (bfloat16, which numpy lacks, rides in float32)."""
    return np.dtype(np.float32) if dtype_name == "bfloat16" else np.dtype(dtype_name)


@dataclass
class WritePolicy:
    """How a writer turns a network's exact entries into a file's floats: the one rounding policy.

    Every float array bound for a file goes through :meth:`fit`.  It returns the array in the target dtype
    when that dtype holds every entry exactly; otherwise it raises :class:`NotRepresentableError` naming the
    first entry that does not fit, unless ``allow_rounding`` (then it rounds to nearest and records the array
    in ``rounded``).  ``dtype`` overrides the file's own dtype for every array (e.g. float64 to widen a float16
    or bfloat16 file so that it keeps a pruned network exactly).  ``notes`` collects what a writer did besides
    the weights (entries of a checkpoint it dropped, ...)."""

    allow_rounding: bool = False
    dtype: str | None = None
    allow_unsafe_pickle: bool = False  # a writer may unpickle its ``like`` file (scikit-learn) to keep its head
    rounded: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.dtype is not None:
            name = np.dtype(self.dtype).name if self.dtype != "bfloat16" else "bfloat16"
            if name not in FILE_DTYPES:
                raise InvalidNetworkError(f"dtype must be one of {', '.join(FILE_DTYPES)}, got {self.dtype!r}")
            self.dtype = name

    def target(self, file_dtype: str | None, x: np.ndarray) -> str:
        """The dtype an array is written in: the override, else the file's, else the array's own float dtype
        (float64 for exact rationals)."""
        if self.dtype is not None:
            return self.dtype
        if file_dtype in FILE_DTYPES:
            return str(file_dtype)
        if file_dtype is not None and file_dtype.startswith("float8"):
            return "float32"  # wider than the file's: exact
        return default_dtype(x).name if x.dtype != object else "float64"

    def fit(self, x: np.ndarray, dtype_name: str, name: str) -> np.ndarray:
        """``x`` as ``dtype_name`` (bfloat16 values held in float32), exactly, or refused/rounded (see above)."""
        y = cast_to_dtype(x, dtype_name)
        bad = first_inexact(x, y)
        if bad is None:
            return y
        if not self.allow_rounding:
            idx = f"[{', '.join(map(str, bad))}]" if x.ndim else ""
            value = x[bad] if x.ndim else x[()]
            shown = exact_and_approx(value) if isinstance(value, Fraction | int) else float_value(float(value))
            beyond = "" if math.isfinite(float(y[bad] if x.ndim else y[()])) else " (it is beyond its range)"
            widen = "" if dtype_name == "float64" else "widen the file (dtype='float64', CLI --dtype float64), "
            raise NotRepresentableError(
                f"{name}{idx} = {shown} is not exactly representable in {dtype_name}{beyond}; {widen}write JSON "
                "to keep exact rationals, or pass allow_rounding=True (CLI --allow-rounding) to round"
            )
        if not np.isfinite(y.astype(np.float64)).all():
            raise NotRepresentableError(
                f"{name} has entries beyond the range of {dtype_name}: rounding would write infinities"
            )
        self.rounded.append(name)
        return y


def default_dtype(x: np.ndarray) -> np.dtype:
    return x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)


def common_dtype(net: Network | MLP) -> np.dtype:
    """One float dtype for a whole network: its widest float dtype, float64 for exact rationals."""
    arrs = [a for W, b, _, _ in affine_layers(net) for a in (W, b)]
    if any(a.dtype == object for a in arrs):
        return np.dtype(np.float64)
    return np.dtype(np.result_type(*[a.dtype for a in arrs]))


def layout_arrays(
    net: Network | MLP, layers: LinearChain | None, policy: WritePolicy
) -> tuple[dict[str, np.ndarray], frozenset[str]]:
    """The network's arrays under the keys, orientation and dtypes of ``layers`` (from a ``like`` file), or
    the nn.Sequential layout ``0.weight, 0.bias, 2.weight, 2.bias, …``; and the keys whose file dtype is bfloat16
    (their values are bfloat16 values held in float32).  A bias the layout lacks is added (as
    ``<prefix>.bias``) when it is not zero.  Every array passes ``policy``.  A pruned network keeps the layer
    names with new shapes; a ``like`` file with another number of layers is refused."""
    if layers is None:
        return standard_arrays(net, policy)
    ours = affine_layers(net)
    check_depth(len(ours), len(layers.layers), "the like file")
    out: dict[str, np.ndarray] = {}
    bf16: set[str] = set()
    for layer, (W, B, wname, bname) in zip(layers.layers, ours, strict=True):
        wdt = policy.target(layer.weight_dtype, W)
        arr = policy.fit(W, wdt, wname)
        out[layer.weight_key] = arr.T.copy() if layer.transposed else arr
        if wdt == "bfloat16":
            bf16.add(layer.weight_key)
        zero = all(x == 0 for x in B.ravel().tolist())
        if layer.bias_key is not None or not zero:
            key = layer.bias_key or (f"{layer.prefix}{layer.sep}bias" if layer.prefix else "bias")
            bdt = policy.target(layer.bias_dtype or layer.weight_dtype, B)
            out[key] = policy.fit(B, bdt, bname)
            if bdt == "bfloat16":
                bf16.add(key)
    return out, frozenset(bf16)


def check_depth(ours: int, theirs: int, what: str) -> None:
    """Refuse writing a network of ``ours`` affine layers in the layout of one with ``theirs``."""
    if ours != theirs:
        raise InvalidNetworkError(
            f"the network has {ours} linear layers ({ours - 1} hidden) but {what} has {theirs}; relusym writes "
            "a network in the layout of one with the same number of layers"
        )


def standard_arrays(net: Network | MLP, policy: WritePolicy) -> tuple[dict[str, np.ndarray], frozenset[str]]:
    """``0.weight, 0.bias, 2.weight, 2.bias, …`` (nn.Sequential's keys, torch orientation), each in the policy's
    dtype or its own."""
    out: dict[str, np.ndarray] = {}
    bf16: set[str] = set()
    for i, (W, B, wname, bname) in enumerate(affine_layers(net)):
        for key, x, name in ((f"{2 * i}.weight", W, wname), (f"{2 * i}.bias", B, bname)):
            dt = policy.target(None, x)
            out[key] = policy.fit(x, dt, name)
            if dt == "bfloat16":
                bf16.add(key)
    return out, frozenset(bf16)


# ----------------------------------------------------------------------------------------------------------
# the former helpers, kept for writers not yet given a ``policy`` (they go through the same check)


def rounded(x: np.ndarray, dtype: Any, name: str, lost: list[str]) -> np.ndarray:
    """``x`` as ``dtype`` through :meth:`WritePolicy.fit` with rounding allowed; appends ``name`` to ``lost``
    when that rounds.  New writers take a ``policy`` instead (which refuses by default)."""
    policy = WritePolicy(allow_rounding=True)
    name_ = "bfloat16" if str(dtype) == "bfloat16" else np.dtype(dtype).name
    out = policy.fit(x, name_, name)
    lost.extend(policy.rounded)
    return out


def warn_rounding(lost: Sequence[str], fmt: str) -> None:
    """Refuse what :func:`rounded` had to round: the one rounding policy has no silent path."""
    if lost:
        raise NotRepresentableError(
            f"writing {fmt} would round {', '.join(lost)} to the file's float type; widen it or write JSON"
        )
