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
from dataclasses import dataclass, field
from fractions import Fraction
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
    exact_float_array,
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
    "from_model",
    "to_model",
]

NAME = "onnx"
RECORDS_ACTIVATION = True
SUFFIXES: tuple[str, ...] = (".onnx",)

_OPSET = 17
_IR_VERSION = 8


def _import_onnx() -> Any:
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401
    except ImportError:
        raise UnsupportedModelError("reading .onnx files needs onnx: pip install 'relusym[onnx]'") from None
    return onnx


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
    onnx = _import_onnx()
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


# ----------------------------------------------------------------------------------------------------------
# reading


@dataclass
class _Layer:
    """One affine layer y = x Wᵀ + bias, with W out×in (exact: float array or Fraction array)."""

    W: np.ndarray
    bias: np.ndarray | None
    op: str
    weight_name: str
    bias_name: str | None
    weight_transposed: bool  # stored as out×in (Gemm transB=1)
    dtype: str
    data_first: bool = True
    alpha: float = 1.0
    beta: float = 1.0
    extra_bias: list[str] = field(default_factory=list)


@dataclass
class _Parsed:
    layers: list[_Layer]
    input_name: str
    output_name: str
    input_dims: list[Any]
    output_dims: list[Any]
    opsets: list[tuple[str, int]]
    ir_version: int
    head: str | None = None  # the classifier head (Sigmoid/Softmax ...) left out: the network is the logits
    noops: tuple[str, ...] = ()  # the no-op nodes passed over (Cast, Flatten, Reshape, Identity, Dropout)


def _is_pow2(s: float) -> bool:
    return s != 0 and math.frexp(abs(s))[0] == 0.5


def _scaled(arr: np.ndarray, s: float) -> np.ndarray:
    """s·arr exactly (s is a float32 attribute value)."""
    if s == 1.0:
        return arr
    if arr.dtype in (np.float16, np.float32) or (arr.dtype == np.float64 and _is_pow2(s)):
        # float32 × float32 has ≤ 48 significant bits: exact in float64 (a power of two is exact anyway,
        # which the division below double-checks against underflow)
        out = arr.astype(np.float64) * np.float64(s)
        if np.array_equal(out / np.float64(s), arr.astype(np.float64)):
            return out
    fs = Fraction(s)
    return np.array([Fraction(x) * fs for x in arr.ravel().tolist()], dtype=object).reshape(arr.shape)


def _added(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x + y exactly (float64 when TwoSum shows no rounding, else Fractions)."""
    if x.dtype != object and y.dtype != object:
        a, b = x.astype(np.float64), y.astype(np.float64)
        s = a + b
        bb = s - a
        err = (a - (s - bb)) + (b - bb)
        if not err.any() and np.isfinite(s).all():
            return s
    fx = [Fraction(v) for v in x.ravel().tolist()]
    fy = [Fraction(v) for v in y.ravel().tolist()]
    return np.array([p + q for p, q in zip(fx, fy, strict=True)], dtype=object).reshape(x.shape)


def _attrs(onnx: Any, node: Any) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _describe(node: Any) -> str:
    return f"{node.op_type} (node '{node.name}')" if node.name else node.op_type


def _parse(model: Any, source: str) -> _Parsed:
    onnx = _import_onnx()
    from onnx import numpy_helper

    graph = model.graph
    consts: dict[str, np.ndarray] = {}
    dtypes: dict[str, str] = {}
    for init in graph.initializer:
        try:
            arr = numpy_helper.to_array(init)
        except Exception as exc:
            raise InvalidNetworkError(f"{source}: initializer '{init.name}' cannot be read: {exc}") from None
        dtypes[init.name] = np.asarray(arr).dtype.name
        consts[init.name] = exact_float_array(arr, f"{source}: initializer '{init.name}'")
    nodes = []
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            at = _attrs(onnx, node)
            if "value" in at:
                arr = numpy_helper.to_array(at["value"])
            elif "value_float" in at or "value_floats" in at:
                arr = np.asarray(at.get("value_float", at.get("value_floats")), dtype=np.float32)
            elif "value_int" in at or "value_ints" in at:
                arr = np.asarray(at.get("value_int", at.get("value_ints")), dtype=np.int64)
            else:
                raise UnsupportedModelError(f"{source}: Constant node '{node.name}' has no numeric value")
            dtypes[node.output[0]] = np.asarray(arr).dtype.name
            consts[node.output[0]] = exact_float_array(arr, f"{source}: constant '{node.output[0]}'")
        else:
            nodes.append(node)
    data_inputs = [i for i in graph.input if i.name not in consts]
    if len(data_inputs) != 1:
        raise UnsupportedModelError(
            f"{source} has {len(data_inputs)} data inputs ({', '.join(i.name for i in data_inputs)}); "
            "relusym needs exactly one"
        )
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    shapes, shape_nodes = _shape_computations(onnx, nodes, data_inputs[0], consts)

    cur = data_inputs[0].name
    cur_dtype = _ELEM_NAMES.get(data_inputs[0].type.tensor_type.elem_type)
    orient: str | None = None  # "rows" (batch × features) or "cols" (features × batch)
    steps: list[Any] = []  # _Layer or "relu"
    visited: set[int] = set()
    head: str | None = None
    noops: list[str] = []
    reshapes: list[tuple[Any, list[int], bool]] = []  # (node, target shape, before the first layer)
    placed: list[tuple[Any, int]] = []  # (Flatten or Reshape node, the number of layers before it)

    def const(name: str, node: Any) -> np.ndarray:
        if name not in consts:
            raise UnsupportedModelError(
                f"{source}: {_describe(node)} takes '{name}', which is neither the data nor a constant initializer"
            )
        return consts[name]

    def need(want: str, node: Any) -> None:
        nonlocal orient
        if orient is None:
            orient = want
        elif orient != want:
            raise UnsupportedModelError(f"{source}: {_describe(node)} reads its data transposed; not supported")

    while True:
        cons = [c for c in consumers.get(cur, []) if id(c) not in shape_nodes]
        if not cons:
            break
        if len(cons) > 1:
            names = ", ".join(_describe(c) for c in cons)
            raise UnsupportedModelError(f"{source}: tensor '{cur}' feeds several nodes ({names}); not a chain")
        node = cons[0]
        visited.add(id(node))
        op = node.op_type
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedModelError(f"{source}: {_describe(node)} of domain '{node.domain}' is not supported")
        ins = list(node.input)
        n_layers = sum(isinstance(x, _Layer) for x in steps)
        if op in ("Identity", "Dropout"):
            if op == "Dropout" and len(ins) > 2 and ins[2]:
                mode = consts.get(ins[2])
                if mode is None or bool(np.asarray(mode).ravel()[0]):
                    raise UnsupportedModelError(f"{source}: {_describe(node)} may run in training mode")
            noops.append(op)
        elif op == "Cast":
            to = _ELEM_NAMES.get(int(_attrs(onnx, node).get("to", 0)))
            if to is None or (cur_dtype is not None and _WIDTH[to] < _WIDTH.get(cur_dtype, 0)):
                frm = cur_dtype or "?"
                raise UnsupportedModelError(
                    f"{source}: {_describe(node)} casts {frm} to {to or 'a non-float type'}, which rounds the data; "
                    "relusym reads casts that keep or widen the float type"
                )
            cur_dtype = to
            noops.append(op)
        elif op == "Flatten":
            axis = int(_attrs(onnx, node).get("axis", 1))
            if axis != 1:
                raise UnsupportedModelError(f"{source}: {_describe(node)} flattens from axis {axis}, not 1")
            placed.append((node, n_layers))
            noops.append(op)
        elif op == "Reshape":
            placed.append((node, n_layers))
            if ins[1] in shapes:  # computed from the input's shape, e.g. x.view(x.size(0), -1)
                target = [0 if t == "batch" else t for t in shapes[ins[1]]]
                if any(not isinstance(t, int) for t in target):
                    raise UnsupportedModelError(f"{source}: {_describe(node)} reshapes to a shape relusym cannot see")
            else:
                target = [int(t) for t in np.asarray(const(ins[1], node)).ravel().tolist()]
            reshapes.append((node, target, n_layers == 0))
            noops.append(op)
        elif op in ("Sigmoid", "Softmax", "LogSoftmax") and n_layers >= 2 and steps[-1] != "relu":
            head = op
            _mark_downstream(node, consumers, visited)
            break
        elif op == "Relu":
            steps.append("relu")
        elif op in ("Gemm", "MatMul"):
            at = _attrs(onnx, node)
            if ins[0] == cur and (len(ins) < 2 or ins[1] != cur):
                data_first = True
                wname = ins[1]
            elif len(ins) > 1 and ins[1] == cur and ins[0] != cur:
                data_first = False
                wname = ins[0]
            else:
                raise UnsupportedModelError(f"{source}: {_describe(node)} does not multiply data by a weight")
            Wst = const(wname, node)
            if Wst.ndim != 2:
                raise UnsupportedModelError(f"{source}: weight '{wname}' of {_describe(node)} has shape {Wst.shape}")
            if op == "Gemm":
                ta, tb = int(at.get("transA", 0)), int(at.get("transB", 0))
                alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
            else:
                ta = tb = 0
                alpha, beta = 1.0, 1.0
            if data_first:
                need("cols" if ta else "rows", node)
                W = Wst if tb else Wst.T  # out × in
                out_orient = "rows"
                stored_out_in = bool(tb)
            else:
                need("rows" if tb else "cols", node)
                W = Wst.T if ta else Wst
                out_orient = "cols"
                stored_out_in = not ta
            W = _scaled(W, alpha)
            bias = None
            bname = None
            if op == "Gemm" and len(ins) > 2 and ins[2]:
                bname = ins[2]
                bias = _broadcast_bias(_scaled(const(bname, node), beta), W.shape[0], out_orient, source, bname)
            steps.append(
                _Layer(W, bias, op, wname, bname, stored_out_in, dtypes.get(wname, "float32"), data_first, alpha, beta)
            )
            orient = out_orient
            if dtypes.get(wname) in _WIDTH:  # the product is in the weight's float type
                cur_dtype = dtypes[wname]
        elif op == "Add":
            if not steps or not isinstance(steps[-1], _Layer):
                raise UnsupportedModelError(f"{source}: {_describe(node)} is not a bias after a Gemm or MatMul")
            other = ins[1] if ins[0] == cur else ins[0]
            if other == cur:
                raise UnsupportedModelError(f"{source}: {_describe(node)} adds the data to itself")
            layer = steps[-1]
            add = _broadcast_bias(const(other, node), layer.W.shape[0], orient or "rows", source, other)
            if layer.bias is None:
                layer.bias, layer.bias_name = add, other
            else:
                layer.bias = _added(layer.bias, add)
                layer.extra_bias.append(other)
        else:
            raise UnsupportedModelError(
                f"{source}: found {_describe(node)}; relusym reads Gemm/MatMul(+Add) → Relu → Gemm/MatMul(+Add)"
            )
        if len(node.output) < 1:
            raise UnsupportedModelError(f"{source}: {_describe(node)} has no output")
        cur = node.output[0]
    if cur not in outputs and head is None:
        raise UnsupportedModelError(f"{source}: the chain from the input ends at '{cur}', which is not a graph output")
    stray = [n for n in nodes if id(n) not in visited and id(n) not in shape_nodes]
    if stray:
        raise UnsupportedModelError(
            f"{source}: {_describe(stray[0])} is not part of the chain Gemm/MatMul → Relu → … → Gemm/MatMul"
        )
    # collapse Relu∘Relu
    seq: list[Any] = []
    for s in steps:
        if s == "relu" and seq and seq[-1] == "relu":
            continue
        seq.append(s)
    pattern = ["relu" if s == "relu" else "layer" for s in seq]
    count = pattern.count("layer")
    if count < 2:
        raise UnsupportedModelError(
            f"{source} has {count} linear layer(s); relusym needs at least two (one hidden layer)"
        )
    for a, b in zip(seq, seq[1:], strict=False):
        if isinstance(a, _Layer) and isinstance(b, _Layer):
            raise UnsupportedModelError(
                f"{source} has no Relu between its linear layers '{a.weight_name}' and '{b.weight_name}'"
            )
    if pattern[0] != "layer" or pattern[-1] != "layer":
        raise UnsupportedModelError(
            f"{source} computes {' → '.join(pattern)}, not layer → Relu → … → layer (a Relu before the first or "
            "after the last linear layer)"
        )
    chain: list[_Layer] = [s for s in seq if isinstance(s, _Layer)]
    for la, lb in zip(chain, chain[1:], strict=False):
        if lb.W.shape[1] != la.W.shape[0]:
            raise InvalidNetworkError(
                f"{source}: linear layer '{la.weight_name}' has {la.W.shape[0]} outputs but the next one, "
                f"'{lb.weight_name}', takes {lb.W.shape[1]}"
            )
    for node, before in placed:
        if 0 < before < count:
            raise UnsupportedModelError(f"{source}: {_describe(node)} sits between two linear layers")
    l1, l2 = chain[0], chain[-1]

    def dims(vi: Any) -> list[Any]:
        out: list[Any] = []
        for d in vi.type.tensor_type.shape.dim:
            out.append(d.dim_param if d.dim_param else (int(d.dim_value) if d.HasField("dim_value") else None))
        return out

    m_in, k_out = l1.W.shape[1], l2.W.shape[0]
    for node, target, before in reshapes:
        size = m_in if before else k_out
        ok = (len(target) == 2 and target[1] in (size, -1) and target != [-1, -1] and target[0] >= -1) or (
            not before and target == [-1] and k_out == 1
        )
        if not ok:
            what = "input" if before else "output"
            raise UnsupportedModelError(
                f"{source}: {_describe(node)} reshapes the {what} to {target}, not [batch, {size}]"
            )
    out_vi = next((o for o in graph.output if o.name == cur), None)
    out_dims = dims(out_vi) if out_vi is not None else ["batch", k_out]
    opsets = [(o.domain, int(o.version)) for o in model.opset_import]
    return _Parsed(
        chain,
        data_inputs[0].name,
        cur,
        dims(data_inputs[0]),
        out_dims,
        opsets,
        int(model.ir_version),
        head,
        tuple(noops),
    )


def _shape_computations(
    onnx: Any, nodes: list[Any], data: Any, consts: dict[str, np.ndarray]
) -> tuple[dict[str, list[Any]], set[int]]:
    """The small integer computations on the data input's shape that exporters emit for ``x.view(x.size(0),
    -1)`` (Shape → Gather → Unsqueeze → Concat): each result as a list whose entries are ints or ``"batch"``
    (the input's first dimension), and the ids of those nodes.  Nodes are in topological order (ONNX requires
    it), so one pass suffices; anything else is left to the chain reader (which refuses it, naming it)."""
    dims: list[Any] = []
    for i, d in enumerate(data.type.tensor_type.shape.dim):
        dims.append("batch" if i == 0 else (int(d.dim_value) if d.HasField("dim_value") else ("dim", i)))
    values: dict[str, list[Any]] = {}
    ids: set[int] = set()

    def ints(name: str) -> list[Any] | None:
        if name in values:
            return values[name]
        if name in consts and consts[name].dtype.kind in "iu":
            return [int(v) for v in consts[name].ravel().tolist()]
        return None

    for node in nodes:
        op, ins = node.op_type, list(node.input)
        at = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        out: list[Any] | None = None
        if op == "Shape" and ins[0] == data.name and not at:
            out = list(dims)
        elif op == "Gather" and ins[0] in values and int(at.get("axis", 0)) == 0:
            idx = ints(ins[1])
            if idx is not None and all(isinstance(i, int) for i in idx):
                out = [values[ins[0]][i] for i in idx]
        elif op in ("Unsqueeze", "Squeeze", "Cast", "Identity") and ins[0] in values:
            out = values[ins[0]]
        elif op == "Concat" and any(i in values for i in ins):
            parts = [ints(i) for i in ins]
            if all(p is not None for p in parts):
                out = [t for p in parts for t in p]  # type: ignore[union-attr]
        if out is not None:
            values[node.output[0]] = out
            ids.add(id(node))
    return values, ids


_ELEM_NAMES = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}
_WIDTH = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}


def _mark_downstream(node: Any, consumers: dict[str, list[Any]], visited: set[int]) -> None:
    """Mark ``node`` and everything computed from it as read (a classifier head, outside the network)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if id(cur) in visited and cur is not node:
            continue
        visited.add(id(cur))
        for out in cur.output:
            stack.extend(consumers.get(out, []))


def _broadcast_bias(c: np.ndarray, out: int, orient: str, source: str, name: str) -> np.ndarray:
    shape = (1, out) if orient == "rows" else (out, 1)
    try:
        return np.broadcast_to(c, shape).reshape(out).copy()
    except ValueError:
        raise InvalidNetworkError(
            f"{source}: bias '{name}' has shape {c.shape}, which does not fit {out} outputs"
        ) from None


def from_model(model: Any, *, source: str = "the ONNX model") -> Network | MLP:
    """A network from an ``onnx.ModelProto``; a classifier head (Sigmoid/Softmax and what follows) is left
    out and the network is the logits, with a warning."""
    return _read_model(model, source)[0]


def _read_model(model: Any, source: str) -> tuple[Network | MLP, tuple[str, ...]]:
    _check_model(_import_onnx(), model, source)  # checker, dims against data, no cycle: before the walk
    p = _parse(model, source)
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


def _network_of(p: _Parsed) -> Network | MLP:
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
    onnx = _import_onnx()
    from onnx import TensorProto, helper, numpy_helper

    policy = policy if policy is not None else WritePolicy()
    parsed = _parse(like, "like") if like is not None else None
    ours = affine_layers(net)
    L = len(ours)
    if parsed is not None:
        check_depth(L, len(parsed.layers), "the like model")
        kept = _rewrite(net, like, parsed, policy)
        if kept is not None:
            return kept
    dt_name = common_dtype(net).name
    if parsed is not None:
        dt_name = parsed.layers[0].dtype if parsed.layers[0].dtype in FILE_DTYPES else "float32"
    if policy.dtype is not None:
        dt_name = policy.dtype
    elem = {
        "float16": TensorProto.FLOAT16,
        "bfloat16": TensorProto.BFLOAT16,
        "float32": TensorProto.FLOAT,
        "float64": TensorProto.DOUBLE,
    }[dt_name]
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
    scal = [(_keeps(W, s[0], hold), _keeps(B, s[1], hold)) for (W, B, _, _), s in zip(ours, scal, strict=True)]
    fitted = [
        (policy.fit(_unscaled(W, al), dt_name, wn), policy.fit(_unscaled(B, be), dt_name, bn))
        for (W, B, wn, bn), (al, be) in zip(ours, scal, strict=True)
    ]

    def tensor(arr: np.ndarray, name: str) -> Any:
        if dt_name != "bfloat16":
            return numpy_helper.from_array(np.ascontiguousarray(arr), name)
        bits = (np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
        return helper.make_tensor(name, TensorProto.BFLOAT16, list(arr.shape), vals=bits.tobytes(), raw=True)

    in_name = parsed.input_name if parsed else "input"
    out_name = parsed.output_name if parsed else "output"
    nodes: list[Any] = []
    inits: list[Any] = []

    def layer(idx: int, x: str, W: np.ndarray, bias: np.ndarray, y: str) -> None:
        alpha, beta = scal[idx]
        style = parsed.layers[idx] if parsed else None
        wname = style.weight_name if style else f"{2 * idx}.weight"
        bname = style.bias_name if style and style.bias_name else f"{wname}_bias" if style else f"{2 * idx}.bias"
        has_bias = bool(np.any(bias != 0)) or style is None or style.bias_name is not None
        if style is not None and style.op == "MatMul" and style.data_first:
            inits.append(tensor(np.ascontiguousarray(W.T), wname))
            if has_bias:
                inits.append(tensor(bias, bname))
                nodes.append(helper.make_node("MatMul", [x, wname], [y + "_matmul"]))
                nodes.append(helper.make_node("Add", [y + "_matmul", bname], [y]))
            else:
                nodes.append(helper.make_node("MatMul", [x, wname], [y]))
            return
        trans_b = 1
        if style is not None and style.op == "Gemm" and style.data_first:
            trans_b = 1 if style.weight_transposed else 0
        stored = W if trans_b else np.ascontiguousarray(W.T)
        inits.append(tensor(np.ascontiguousarray(stored), wname))
        ins = [x, wname]
        if has_bias:
            inits.append(tensor(bias, bname))
            ins.append(bname)
        nodes.append(helper.make_node("Gemm", ins, [y], transB=trans_b, alpha=alpha, beta=beta))

    x = in_name
    for idx, (W, B) in enumerate(fitted):
        if idx == L - 1:
            layer(idx, x, W, B, out_name)
            break
        hidden = "hidden" if L == 2 else f"hidden_{idx + 1}"
        layer(idx, x, W, B, hidden)
        nodes.append(helper.make_node("Relu", [hidden], [hidden + "_relu"]))
        x = hidden + "_relu"
    widths = widths_of(net)
    in_dims: list[Any] = ["batch", widths[0]]
    out_dims: list[Any] = ["batch", widths[-1]]
    if parsed is not None and len(parsed.input_dims) == 2 and len(parsed.output_dims) == 2:
        in_dims = [parsed.input_dims[0], widths[0]]
        out_dims = [parsed.output_dims[0], widths[-1]]
    graph = helper.make_graph(
        nodes,
        "relusym_network",
        [helper.make_tensor_value_info(in_name, elem, in_dims)],
        [helper.make_tensor_value_info(out_name, elem, out_dims)],
        initializer=inits,
    )
    opsets = [helper.make_opsetid(d, v) for d, v in parsed.opsets] if parsed else [helper.make_opsetid("", _OPSET)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="relusym")
    model.ir_version = parsed.ir_version if parsed else _IR_VERSION
    onnx.checker.check_model(model)
    return model


_ELEM_CODES = {"float32": 1, "float16": 10, "float64": 11, "bfloat16": 16}


def _rewrite(net: Network | MLP, like: Any, parsed: _Parsed, policy: WritePolicy) -> Any:
    """A copy of the ``like`` model with the layers' weights and biases replaced by the network's (new shapes,
    each in its tensor's own float type), everything else kept: the input and output names, types and shapes,
    the nodes passed over before the first layer (Flatten, Reshape, Cast), the classifier head with all its
    outputs (Softmax, a label and probabilities), the opsets and metadata.  None when the network does not
    fit that frame (other input or output sizes, a ``dtype`` that changes the model's float type, a weight
    shared between layers): then the model is rebuilt from the network alone."""
    onnx = _import_onnx()
    from onnx import helper, numpy_helper

    widths = widths_of(net)
    if widths[0] != parsed.layers[0].W.shape[1] or widths[-1] != parsed.layers[-1].W.shape[0]:
        return None
    model = onnx.ModelProto()
    model.CopyFrom(like)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    const_nodes = {n.output[0]: n for n in graph.node if n.op_type == "Constant" and n.output}
    uses: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1

    def elem_of(name: str) -> str | None:
        if name in inits:
            return _ELEM_NAMES.get(inits[name].data_type)
        node = const_nodes.get(name)
        if node is not None:
            for a in node.attribute:
                if a.name == "value":
                    return _ELEM_NAMES.get(a.t.data_type)
        return None

    names = [n for ly in parsed.layers for n in (ly.weight_name, ly.bias_name, *ly.extra_bias) if n]
    if len(set(names)) != len(names) or any(uses.get(n, 0) != 1 for n in names):
        return None
    if any(elem_of(n) is None for n in names):
        return None
    if policy.dtype is not None and any(elem_of(n) != policy.dtype for n in names):
        return None  # another float type for the whole model: rebuilt

    declared = {vi.name: vi for vi in graph.input}

    def put(name: str, arr: np.ndarray, dt: str) -> None:
        t = _tensor_as(helper, numpy_helper, onnx, arr, name, dt)
        if name in declared:  # an initializer also listed as a graph input (older exporters): its new shape
            dims = declared[name].type.tensor_type.shape
            del dims.dim[:]
            for d in arr.shape:
                dims.dim.add().dim_value = int(d)
        if name in inits:
            inits[name].CopyFrom(t)
            return
        node = const_nodes[name]
        del node.attribute[:]
        node.attribute.extend([helper.make_attribute("value", t)])

    def set_attr(node: Any, key: str, value: float) -> None:
        for a in node.attribute:
            if a.name == key:
                a.f = value
                return
        node.attribute.extend([helper.make_attribute(key, value)])

    nodes_by_weight = {n.input[i]: n for n in graph.node if n.op_type in ("Gemm", "MatMul") for i in (0, 1)}
    fresh = 0
    for ly, (W, B, wn, bn) in zip(parsed.layers, affine_layers(net), strict=True):
        node = nodes_by_weight[ly.weight_name]
        out = W.shape[0]
        wdt = elem_of(ly.weight_name) or "float32"
        hold = np.dtype(np.float32) if wdt == "bfloat16" else np.dtype(wdt)
        alpha = _keeps(W, ly.alpha, hold) if ly.op == "Gemm" else 1.0
        Wf = policy.fit(_unscaled(W, alpha), wdt, wn)
        put(ly.weight_name, Wf if ly.weight_transposed else np.ascontiguousarray(Wf.T), wdt)
        if ly.op == "Gemm" and alpha != ly.alpha:
            set_attr(node, "alpha", alpha)
        zero = all(x == 0 for x in B.ravel().tolist())
        if ly.bias_name is None and zero:
            continue
        if ly.bias_name is None:  # the like layer has no bias; the network's is not zero
            fresh += 1
            bname = f"{ly.weight_name}_relusym_bias{fresh}"
            Bf = policy.fit(B, wdt, bn)
            shape = (1, out) if ly.data_first else (out, 1)
            graph.initializer.append(_tensor_as(helper, numpy_helper, onnx, Bf.reshape(shape), bname, wdt))
            if ly.op == "Gemm" and ly.data_first:
                node.input.append(bname)
                set_attr(node, "beta", 1.0)
            else:
                y = node.output[0]
                mid = f"{y}_relusym_product"
                node.output[0] = mid
                add = helper.make_node("Add", [mid, bname], [y])
                pos = list(graph.node).index(node)
                graph.node.insert(pos + 1, add)
            continue
        bdt = elem_of(ly.bias_name) or wdt
        bhold = np.dtype(np.float32) if bdt == "bfloat16" else np.dtype(bdt)
        beta = _keeps(B, ly.beta, bhold) if ly.op == "Gemm" and node.input[2:3] == [ly.bias_name] else 1.0
        Bf = policy.fit(_unscaled(B, beta), bdt, bn)
        old = _stored_shape(inits, const_nodes, ly.bias_name)
        put(ly.bias_name, Bf.reshape(_bias_shape(old, out, ly.data_first)), bdt)
        if ly.op == "Gemm" and node.input[2:3] == [ly.bias_name] and beta != ly.beta:
            set_attr(node, "beta", beta)
        for extra in ly.extra_bias:  # the whole bias went into the first one
            odt = elem_of(extra) or bdt
            eshape = _stored_shape(inits, const_nodes, extra)
            zeros = np.zeros(_bias_shape(eshape, out, ly.data_first) if eshape else (), dtype=np.float32)
            put(extra, zeros.astype(np.float32 if odt == "bfloat16" else odt), odt)
    # the shapes recorded for intermediate tensors changed with the widths: recomputed where onnx can
    del graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an operator shape inference does not know: the annotations are optional
        inferred = model
    # the annotations the like model had, with their new shapes; the outputs exactly as declared (inference
    # fills unknown dimensions with names of its own)
    had = {vi.name for vi in like.graph.value_info}
    kept_info = [vi for vi in inferred.graph.value_info if vi.name in had]
    del inferred.graph.value_info[:]
    inferred.graph.value_info.extend(kept_info)
    del inferred.graph.output[:]
    inferred.graph.output.extend(like.graph.output)
    model = inferred
    onnx.checker.check_model(model)
    return model


def _tensor_as(helper: Any, numpy_helper: Any, onnx: Any, arr: np.ndarray, name: str, dt: str) -> Any:
    if dt == "bfloat16":
        bits = (np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
        return helper.make_tensor(name, onnx.TensorProto.BFLOAT16, list(arr.shape), vals=bits.tobytes(), raw=True)
    return numpy_helper.from_array(np.ascontiguousarray(arr), name)


def _stored_shape(inits: dict[str, Any], const_nodes: dict[str, Any], name: str) -> tuple[int, ...]:
    if name in inits:
        return tuple(int(d) for d in inits[name].dims)
    for a in const_nodes[name].attribute:
        if a.name == "value":
            return tuple(int(d) for d in a.t.dims)
    return ()


def _bias_shape(old: tuple[int, ...], out: int, data_first: bool) -> tuple[int, ...]:
    """The shape of a rewritten bias: the stored one's rank and orientation with ``out`` entries."""
    if not data_first:
        return (out, 1)
    return (1, out) if len(old) == 2 else (out,)


def _keeps(x: np.ndarray, s: float, dt: np.dtype) -> float:
    """``s`` when x/s is exactly representable in ``dt`` (so a like file's Gemm alpha/beta can be kept), else 1."""
    if s == 1.0 or x.dtype == object or s == 0:
        return 1.0
    q = x.astype(np.float64) / np.float64(s)
    with np.errstate(over="ignore"):
        back = q.astype(dt).astype(np.float64)
    return s if np.array_equal(back * np.float64(s), x.astype(np.float64)) and np.array_equal(back, q) else 1.0


def _unscaled(x: np.ndarray, s: float) -> np.ndarray:
    return x if s == 1.0 else x.astype(np.float64) / np.float64(s)


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Write an ONNX model file (the layout of ``like`` when given)."""
    onnx = _import_onnx()
    like_model = onnx.load(str(like)) if like is not None else None
    onnx.save(to_model(net, like_model, policy=policy), str(path))
