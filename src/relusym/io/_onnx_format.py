"""ONNX models computing ``Gemm|MatMul(+Add) → Relu → Gemm|MatMul(+Add)`` (or deeper, a Relu between each two
layers), weights from initializers; one hidden layer reads as a ``Network``, more as an ``MLP``.

``Gemm``'s ``transA``/``transB``/``alpha``/``beta`` are honoured exactly (a float32 weight times a float32
``alpha`` is exact in float64; other products become exact rationals), and the data tensor may be either
operand.  Weights are read as data with ``onnx.numpy_helper`` (``Constant`` nodes count as initializers);
nothing in the model is executed.  Any other operator is rejected, naming it.  Writing produces a model that
onnxruntime runs (opset 17, or the ``like`` model's opsets, names and layer style).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import check_shape, file_limit, shorten
from relusym._base.limits import current as current_limits
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    FILE_DTYPES,
    WritePolicy,
    affine_layers,
    check_depth,
    common_dtype,
    shaped,
    widths_of,
)
from relusym.io._onnx_graph import Layer, Parsed, import_onnx, parse_graph
from relusym.io._onnx_rewrite import keeps, rewrite_like, tensor_as, unscaled

__all__ = [
    "NAME",
    "RECORDS_ACTIVATION",
    "SUFFIXES",
    "accepts",
    "from_model",
    "from_object",
    "load",
    "read",
    "save",
    "sniff",
    "to_model",
]

NAME = "onnx"


RECORDS_ACTIVATION = True


SUFFIXES: tuple[str, ...] = (".onnx",)


_OPSET = 17


_IR_VERSION = 8


def sniff(path: Path, head: bytes) -> bool:
    """A ModelProto starts with field 1 (ir_version, a small varint) followed by another ModelProto field."""
    if len(head) < 3 or head[0] != 0x08 or head[1] == 0 or head[1] > 0x7F:
        return False
    return head[2] in (0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72) or path.suffix.lower() in SUFFIXES


def load(path: Path) -> Network | MLP:
    """Read an ONNX model file."""
    return read(path)[0]


def read(path: Path) -> tuple[Network | MLP, tuple[str, ...], bool]:
    """Read an ONNX model file, with its notes (a classifier head read as logits)."""
    onnx = import_onnx()
    path = Path(path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise InvalidNetworkError(
            f"{path.name} is not a readable ONNX model (truncated or corrupted?): {_first_line(exc)}"
        ) from None
    if _external_tensors(model):  # external data only from regular files inside the model's folder
        _check_external(model, path)
        from onnx.external_data_helper import load_external_data_for_model

        try:
            load_external_data_for_model(model, str(path.parent))
        except Exception as exc:
            raise InvalidNetworkError(f"{path.name}: its external data cannot be read: {_first_line(exc)}") from None
    net, notes = _read_model(model, path.name)
    return net, notes, True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return shorten(text.splitlines()[0] if text else type(exc).__name__, 160)[1:-1]


def _external_tensors(model: Any) -> list[Any]:
    from onnx import TensorProto

    return [t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]


def _check_external(model: Any, path: Path) -> None:
    """External data files: relative locations inside the model's folder (symlinks resolved), regular files,
    holding the bytes each tensor's shape needs; in all within the limit onnx_bytes."""
    from onnx import helper

    base = path.parent.resolve()
    total = path.stat().st_size
    cap = file_limit(NAME)
    for t in _external_tensors(model):
        info = {e.key: e.value for e in t.external_data}
        where = f"{path.name}: initializer {shorten(t.name)}"
        loc = info.get("location", "")
        target = (base / loc).resolve() if loc else base
        if not loc or Path(loc).is_absolute() or not target.is_relative_to(base) or target == base:
            raise InvalidNetworkError(
                f"{where} keeps its data at {shorten(loc, 100)}, outside the model's folder {base}; refused"
            )
        if not target.is_file():
            raise InvalidNetworkError(f"{where} keeps its data in {target}, which is not a regular file")
        try:
            offset = int(info.get("offset", "0") or 0)
            length = int(info["length"]) if info.get("length") else target.stat().st_size - offset
        except ValueError:
            raise InvalidNetworkError(f"{where} has an external-data offset or length that is not an integer") from None
        dims = [int(d) for d in t.dims]
        if any(d < 0 for d in dims):
            raise InvalidNetworkError(f"{where} has the negative dimension {min(dims)}")
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
        except Exception:
            raise UnsupportedModelError(f"{where} has the unsupported element type {t.data_type}") from None
        if offset < 0 or length < 0 or offset + length > target.stat().st_size:
            raise InvalidNetworkError(f"{where} points past the end of its external data file {target.name}")
        if length != math.prod(dims) * itemsize:
            raise InvalidNetworkError(
                f"{where} declares dims {shorten(dims)} ({math.prod(dims) * itemsize} bytes) but its external data "
                f"holds {length} bytes"
            )
        total += length
        if total > cap:
            raise InvalidNetworkError(f"{path.name} with its external data exceeds the limit onnx_bytes = {cap}")


def _check_tensor(onnx: Any, t: Any, where: str) -> None:
    """Non-negative dims within max_elements, and (for data stored in the model) exactly the data they need."""
    from onnx import helper

    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise InvalidNetworkError(f"{where} has the negative dimension {min(dims)} in its shape {shorten(dims)}")
    count = math.prod(dims)
    lim = current_limits().max_elements
    if count > lim:
        raise InvalidNetworkError(f"{where} declares {count} entries, more than the limit max_elements = {lim}")
    check_shape(dims, where)  # a shape holding no entries, such as (0, 10^9), declares at most max_declared_dim
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return
    if t.HasField("raw_data"):
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
        except Exception:
            raise UnsupportedModelError(f"{where} has the unsupported element type {t.data_type}") from None
        if len(t.raw_data) != count * itemsize:
            raise InvalidNetworkError(
                f"{where} declares dims {shorten(dims)} ({count * itemsize} bytes) but holds {len(t.raw_data)} bytes"
            )
        return
    try:
        field_name = helper.tensor_dtype_to_field(t.data_type)
    except Exception:
        raise UnsupportedModelError(f"{where} has the unsupported element type {t.data_type}") from None
    held = len(getattr(t, field_name))
    per = 2 if t.data_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128) else 1
    if held != count * per and t.data_type != onnx.TensorProto.STRING:
        raise InvalidNetworkError(f"{where} declares dims {shorten(dims)} ({count} entries) but holds {held // per}")


def _check_model(onnx: Any, model: Any, source: str) -> None:
    """Before the graph is walked: onnx.checker accepts it, every tensor's dims match its data, no declared
    dimension is negative, and the nodes form no cycle."""
    graph = model.graph
    for init in graph.initializer:
        _check_tensor(onnx, init, f"{source}: initializer {shorten(init.name)}")
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                _check_tensor(onnx, attr.t, f"{source}: the tensor of node {shorten(node.name or node.op_type)}")
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value") and d.dim_value < 0:
                raise InvalidNetworkError(
                    f"{source}: {shorten(vi.name)} has the negative dimension {d.dim_value} in its declared shape"
                )
    _check_acyclic(graph, source)
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise InvalidNetworkError(f"{source} is not a valid ONNX model: {_first_line(exc)}") from None


def _check_acyclic(graph: Any, source: str) -> None:
    """Kahn's algorithm over the nodes (an edge from the producer of each input): a cycle is refused."""
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for out in node.output:
            if out:
                producer[out] = i
    indeg = [0] * len(graph.node)
    users: list[list[int]] = [[] for _ in graph.node]
    for i, node in enumerate(graph.node):
        for name in set(node.input):
            j = producer.get(name)
            if j is not None:
                indeg[i] += 1
                users[j].append(i)
    ready = [i for i, d in enumerate(indeg) if d == 0]
    done = 0
    while ready:
        j = ready.pop()
        done += 1
        for i in users[j]:
            indeg[i] -= 1
            if indeg[i] == 0:
                ready.append(i)
    if done != len(graph.node):
        stuck = next(graph.node[i] for i, d in enumerate(indeg) if d > 0)
        raise InvalidNetworkError(
            f"{source}: the graph has a cycle (through node {shorten(stuck.name or stuck.op_type)}); an ONNX "
            "graph must be acyclic"
        )


def accepts(obj: Any) -> bool:
    """An ``onnx.ModelProto`` (no onnx import)."""
    return (type(obj).__module__ or "").startswith("onnx") and type(obj).__name__ == "ModelProto"


def from_object(obj: Any) -> Network | MLP:
    return from_model(obj)


def from_model(model: Any, *, source: str = "the ONNX model") -> Network | MLP:
    """A network from an ``onnx.ModelProto``; a classifier head (Sigmoid/Softmax and what follows) is left
    out and the network is the logits, with a warning."""
    return _read_model(model, source)[0]


def _read_model(model: Any, source: str) -> tuple[Network | MLP, tuple[str, ...]]:
    _check_model(import_onnx(), model, source)  # checker, dims against data, no cycle: before the walk
    p = parse_graph(model, source)
    notes: tuple[str, ...] = ()
    if p.head is not None:
        from relusym.io._sklearn_format import LogitsOnlyWarning

        msg = (
            f"{source}: its output activation {p.head} (and the label and probability outputs computed from it) "
            "is outside the network x ↦ V·relu(Ax + b) + c (or its deep form); relusym reads and classifies the "
            "logits only"
        )
        warnings.warn(msg, LogitsOnlyWarning, stacklevel=3)
        notes = (msg,)
    return _network_of(p), notes


def _network_of(p: Parsed) -> Network | MLP:
    return shaped(
        [(ly.W, ly.bias if ly.bias is not None else np.zeros(ly.W.shape[0], dtype=np.float64)) for ly in p.layers]
    )


# ----------------------------------------------------------------------------------------------------------
# writing
def to_model(net: Network | MLP, like: Any = None, *, policy: WritePolicy | None = None) -> Any:
    """An ``onnx.ModelProto`` computing the network, runnable by onnxruntime.

    Default layout: input ``input`` [batch, m] → Gemm(``0.weight``, ``0.bias``, transB=1) → Relu → Gemm(
    ``2.weight``, ``2.bias``, transB=1) → output ``output`` (a deep network: ``4.weight``, … with a Relu between
    each two layers), in the network's widest float dtype.  With ``like`` (a ModelProto of a network with as many
    layers), its names, layer style (Gemm/MatMul+Add, transB), dtype and opsets.  Every entry exact in that dtype,
    or as ``policy`` allows (``policy.dtype`` overrides the dtype).
    """
    onnx = import_onnx()
    from onnx import helper

    policy = policy if policy is not None else WritePolicy()
    parsed = parse_graph(like, "like") if like is not None else None
    ours = affine_layers(net)
    L = len(ours)
    if parsed is not None:
        check_depth(L, len(parsed.layers), "the like model")
        kept = rewrite_like(net, like, parsed, policy)
        if kept is not None:
            return kept
    dt_name = _model_dtype(net, parsed, policy)
    if parsed is not None and parsed.head is not None:
        policy.notes.append(
            f"the like model's classifier head ({parsed.head} and the outputs computed from it) is not written: "
            "the file computes the logits, the network relusym read"
        )
    scal = [(1.0, 1.0)] * L
    if parsed is not None and dt_name != "bfloat16":
        scal = [(ly.alpha, ly.beta) if ly.op == "Gemm" and ly.data_first else (1.0, 1.0) for ly in parsed.layers]
    # keep a like model's Gemm alpha/beta where the weights divided by them fit its dtype exactly
    hold = np.dtype(np.float32) if dt_name == "bfloat16" else np.dtype(dt_name)
    scal = [(keeps(W, s[0], hold), keeps(B, s[1], hold)) for (W, B, _, _), s in zip(ours, scal, strict=True)]
    fitted = [
        (policy.fit(unscaled(W, al), dt_name, wn), policy.fit(unscaled(B, be), dt_name, bn))
        for (W, B, wn, bn), (al, be) in zip(ours, scal, strict=True)
    ]
    in_name = parsed.input_name if parsed else "input"
    out_name = parsed.output_name if parsed else "output"
    builder = _GraphBuilder(onnx, dt_name)
    x = in_name
    for idx, (W, B) in enumerate(fitted):
        style = parsed.layers[idx] if parsed else None
        if idx == L - 1:
            builder.layer(idx, style, scal[idx], x, W, B, out_name)
            break
        hidden = "hidden" if L == 2 else f"hidden_{idx + 1}"
        builder.layer(idx, style, scal[idx], x, W, B, hidden)
        builder.nodes.append(helper.make_node("Relu", [hidden], [hidden + "_relu"]))
        x = hidden + "_relu"
    widths = widths_of(net)
    in_dims: list[Any] = ["batch", widths[0]]
    out_dims: list[Any] = ["batch", widths[-1]]
    if parsed is not None and len(parsed.input_dims) == 2 and len(parsed.output_dims) == 2:
        in_dims = [parsed.input_dims[0], widths[0]]
        out_dims = [parsed.output_dims[0], widths[-1]]
    elem = _ELEM_CODES[dt_name]
    graph = helper.make_graph(
        builder.nodes,
        "relusym_network",
        [helper.make_tensor_value_info(in_name, elem, in_dims)],
        [helper.make_tensor_value_info(out_name, elem, out_dims)],
        initializer=builder.inits,
    )
    opsets = [helper.make_opsetid(d, v) for d, v in parsed.opsets] if parsed else [helper.make_opsetid("", _OPSET)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="relusym")
    model.ir_version = parsed.ir_version if parsed else _IR_VERSION
    onnx.checker.check_model(model)
    return model


_ELEM_CODES = {"float32": 1, "float16": 10, "float64": 11, "bfloat16": 16}  # onnx.TensorProto's codes


def _model_dtype(net: Network | MLP, parsed: Parsed | None, policy: WritePolicy) -> str:
    """The float type of a rebuilt model: the policy's, else the like model's, else the network's widest."""
    if policy.dtype is not None:
        return policy.dtype
    if parsed is not None:
        return parsed.layers[0].dtype if parsed.layers[0].dtype in FILE_DTYPES else "float32"
    return common_dtype(net).name


class _GraphBuilder:
    """The nodes and initializers of a model built from a network, one layer at a time."""

    def __init__(self, onnx: Any, dt_name: str) -> None:
        from onnx import helper, numpy_helper

        self.onnx, self.helper, self.numpy_helper, self.dt_name = onnx, helper, numpy_helper, dt_name
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def tensor(self, arr: np.ndarray, name: str) -> Any:
        return tensor_as(self.helper, self.numpy_helper, self.onnx, arr, name, self.dt_name)

    def layer(
        self,
        idx: int,
        style: Layer | None,
        scal: tuple[float, float],
        x: str,
        W: np.ndarray,
        bias: np.ndarray,
        y: str,
    ) -> None:
        """Layer ``idx`` from ``x`` to ``y`` in the like layer's style (Gemm, or MatMul + Add), else a Gemm."""
        helper = self.helper
        alpha, beta = scal
        wname = style.weight_name if style else f"{2 * idx}.weight"
        bname = style.bias_name if style and style.bias_name else f"{wname}_bias" if style else f"{2 * idx}.bias"
        has_bias = bool(np.any(bias != 0)) or style is None or style.bias_name is not None
        if style is not None and style.op == "MatMul" and style.data_first:
            self.inits.append(self.tensor(np.ascontiguousarray(W.T), wname))
            if has_bias:
                self.inits.append(self.tensor(bias, bname))
                self.nodes.append(helper.make_node("MatMul", [x, wname], [y + "_matmul"]))
                self.nodes.append(helper.make_node("Add", [y + "_matmul", bname], [y]))
            else:
                self.nodes.append(helper.make_node("MatMul", [x, wname], [y]))
            return
        trans_b = 1
        if style is not None and style.op == "Gemm" and style.data_first:
            trans_b = 1 if style.weight_transposed else 0
        stored = W if trans_b else np.ascontiguousarray(W.T)
        self.inits.append(self.tensor(np.ascontiguousarray(stored), wname))
        ins = [x, wname]
        if has_bias:
            self.inits.append(self.tensor(bias, bname))
            ins.append(bname)
        self.nodes.append(helper.make_node("Gemm", ins, [y], transB=trans_b, alpha=alpha, beta=beta))


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Write an ONNX model file (the layout of ``like`` when given)."""
    onnx = import_onnx()
    like_model = onnx.load(str(like)) if like is not None else None
    onnx.save(to_model(net, like_model, policy=policy), str(path))
