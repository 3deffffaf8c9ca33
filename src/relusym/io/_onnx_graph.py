"""Reading an ONNX graph as a chain of affine layers and Relus: the walk from the data input, node by node,
with the exact values of the weights (Gemm's alpha and beta applied exactly) and the checks that the chain
is ``layer → Relu → … → layer``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    exact_float_array,
)

__all__ = ["ELEM_NAMES", "Layer", "Parsed", "import_onnx", "parse_graph"]


def import_onnx() -> Any:
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401
    except ImportError:
        raise UnsupportedModelError("reading .onnx files needs onnx: pip install 'relusym[onnx]'") from None
    return onnx


# ----------------------------------------------------------------------------------------------------------
# reading
@dataclass
class Layer:
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
class Parsed:
    layers: list[Layer]
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


def _constants(onnx: Any, graph: Any, source: str) -> tuple[dict[str, np.ndarray], dict[str, str], list[Any]]:
    """The exact values of the initializers and Constant nodes, their stored dtypes, and the other nodes."""
    from onnx import numpy_helper

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
            arr = _constant_value(onnx, node, source)
            dtypes[node.output[0]] = np.asarray(arr).dtype.name
            consts[node.output[0]] = exact_float_array(arr, f"{source}: constant '{node.output[0]}'")
        else:
            nodes.append(node)
    return consts, dtypes, nodes


def _constant_value(onnx: Any, node: Any, source: str) -> Any:
    from onnx import numpy_helper

    at = _attrs(onnx, node)
    if "value" in at:
        return numpy_helper.to_array(at["value"])
    if "value_float" in at or "value_floats" in at:
        return np.asarray(at.get("value_float", at.get("value_floats")), dtype=np.float32)
    if "value_int" in at or "value_ints" in at:
        return np.asarray(at.get("value_int", at.get("value_ints")), dtype=np.int64)
    raise UnsupportedModelError(f"{source}: Constant node '{node.name}' has no numeric value")


def _weight_operand(node: Any, ins: list[str], cur: str, source: str) -> tuple[bool, str]:
    """Whether the data is the first operand of a Gemm or MatMul, and the name of the weight."""
    if ins[0] == cur and (len(ins) < 2 or ins[1] != cur):
        return True, ins[1]
    if len(ins) > 1 and ins[1] == cur and ins[0] != cur:
        return False, ins[0]
    raise UnsupportedModelError(f"{source}: {_describe(node)} does not multiply data by a weight")


class _Walk:
    """The walk along the chain of nodes from the data input, one node at a time: the layers and Relus met, the
    nodes passed over, and the data's orientation and float type so far."""

    def __init__(self, onnx: Any, model: Any, source: str) -> None:
        self.onnx, self.source = onnx, source
        graph = model.graph
        self.consts, self.dtypes, self.nodes = _constants(onnx, graph, source)
        data_inputs = [i for i in graph.input if i.name not in self.consts]
        if len(data_inputs) != 1:
            raise UnsupportedModelError(
                f"{source} has {len(data_inputs)} data inputs ({', '.join(i.name for i in data_inputs)}); "
                "relusym needs exactly one"
            )
        self.data = data_inputs[0]
        self.consumers: dict[str, list[Any]] = {}
        for node in self.nodes:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.shapes, self.shape_nodes = _shape_computations(onnx, self.nodes, self.data, self.consts)
        self.cur: str = self.data.name
        self.cur_dtype = ELEM_NAMES.get(self.data.type.tensor_type.elem_type)
        self.orient: str | None = None  # "rows" (batch × features) or "cols" (features × batch)
        self.steps: list[Any] = []  # Layer or "relu"
        self.visited: set[int] = set()
        self.head: str | None = None
        self.noops: list[str] = []
        self.reshapes: list[tuple[Any, list[int], bool]] = []  # (node, target shape, before the first layer)
        self.placed: list[tuple[Any, int]] = []  # (Flatten or Reshape node, the number of layers before it)

    def const(self, name: str, node: Any) -> np.ndarray:
        if name not in self.consts:
            raise UnsupportedModelError(
                f"{self.source}: {_describe(node)} takes '{name}', which is neither the data nor a constant initializer"
            )
        return self.consts[name]

    def need(self, want: str, node: Any) -> None:
        if self.orient is None:
            self.orient = want
        elif self.orient != want:
            raise UnsupportedModelError(f"{self.source}: {_describe(node)} reads its data transposed; not supported")

    def run(self) -> None:
        """Follow the data from node to node until the chain ends (or a classifier head begins)."""
        while True:
            node = self._next()
            if node is None:
                return
            op = node.op_type
            n_layers = sum(isinstance(x, Layer) for x in self.steps)
            if op in ("Sigmoid", "Softmax", "LogSoftmax") and n_layers >= 2 and self.steps[-1] != "relu":
                self.head = op
                _mark_downstream(node, self.consumers, self.visited)
                return
            handler = self._HANDLERS.get(op)
            if handler is None:
                raise UnsupportedModelError(
                    f"{self.source}: found {_describe(node)}; relusym reads Gemm/MatMul(+Add) → Relu → "
                    "Gemm/MatMul(+Add)"
                )
            handler(self, node, list(node.input), n_layers)
            if len(node.output) < 1:
                raise UnsupportedModelError(f"{self.source}: {_describe(node)} has no output")
            self.cur = node.output[0]

    def _next(self) -> Any:
        cons = [c for c in self.consumers.get(self.cur, []) if id(c) not in self.shape_nodes]
        if not cons:
            return None
        if len(cons) > 1:
            names = ", ".join(_describe(c) for c in cons)
            raise UnsupportedModelError(
                f"{self.source}: tensor '{self.cur}' feeds several nodes ({names}); not a chain"
            )
        node = cons[0]
        self.visited.add(id(node))
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedModelError(f"{self.source}: {_describe(node)} of domain '{node.domain}' is not supported")
        return node

    def _noop(self, node: Any, ins: list[str], n_layers: int) -> None:
        if node.op_type == "Dropout" and len(ins) > 2 and ins[2]:
            mode = self.consts.get(ins[2])
            if mode is None or bool(np.asarray(mode).ravel()[0]):
                raise UnsupportedModelError(f"{self.source}: {_describe(node)} may run in training mode")
        self.noops.append(node.op_type)

    def _cast(self, node: Any, ins: list[str], n_layers: int) -> None:
        to = ELEM_NAMES.get(int(_attrs(self.onnx, node).get("to", 0)))
        if to is None or (self.cur_dtype is not None and _WIDTH[to] < _WIDTH.get(self.cur_dtype, 0)):
            frm = self.cur_dtype or "?"
            raise UnsupportedModelError(
                f"{self.source}: {_describe(node)} casts {frm} to {to or 'a non-float type'}, which rounds the "
                "data; relusym reads casts that keep or widen the float type"
            )
        self.cur_dtype = to
        self.noops.append(node.op_type)

    def _flatten(self, node: Any, ins: list[str], n_layers: int) -> None:
        axis = int(_attrs(self.onnx, node).get("axis", 1))
        if axis != 1:
            raise UnsupportedModelError(f"{self.source}: {_describe(node)} flattens from axis {axis}, not 1")
        self.placed.append((node, n_layers))
        self.noops.append(node.op_type)

    def _reshape(self, node: Any, ins: list[str], n_layers: int) -> None:
        self.placed.append((node, n_layers))
        if ins[1] in self.shapes:  # computed from the input's shape, e.g. x.view(x.size(0), -1)
            target = [0 if t == "batch" else t for t in self.shapes[ins[1]]]
            if any(not isinstance(t, int) for t in target):
                raise UnsupportedModelError(f"{self.source}: {_describe(node)} reshapes to a shape relusym cannot see")
        else:
            target = [int(t) for t in np.asarray(self.const(ins[1], node)).ravel().tolist()]
        self.reshapes.append((node, target, n_layers == 0))
        self.noops.append(node.op_type)

    def _relu(self, node: Any, ins: list[str], n_layers: int) -> None:
        self.steps.append("relu")

    def _product(self, node: Any, ins: list[str], n_layers: int) -> None:
        op = node.op_type
        at = _attrs(self.onnx, node)
        data_first, wname = _weight_operand(node, ins, self.cur, self.source)
        Wst = self.const(wname, node)
        if Wst.ndim != 2:
            raise UnsupportedModelError(f"{self.source}: weight '{wname}' of {_describe(node)} has shape {Wst.shape}")
        if op == "Gemm":
            ta, tb = int(at.get("transA", 0)), int(at.get("transB", 0))
            alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
        else:
            ta = tb = 0
            alpha, beta = 1.0, 1.0
        if data_first:
            self.need("cols" if ta else "rows", node)
            W = Wst if tb else Wst.T  # out × in
            out_orient = "rows"
            stored_out_in = bool(tb)
        else:
            self.need("rows" if tb else "cols", node)
            W = Wst.T if ta else Wst
            out_orient = "cols"
            stored_out_in = not ta
        W = _scaled(W, alpha)
        bias = None
        bname = None
        if op == "Gemm" and len(ins) > 2 and ins[2]:
            bname = ins[2]
            bias = _broadcast_bias(_scaled(self.const(bname, node), beta), W.shape[0], out_orient, self.source, bname)
        wdtype = self.dtypes.get(wname, "float32")
        self.steps.append(Layer(W, bias, op, wname, bname, stored_out_in, wdtype, data_first, alpha, beta))
        self.orient = out_orient
        if self.dtypes.get(wname) in _WIDTH:  # the product is in the weight's float type
            self.cur_dtype = self.dtypes[wname]

    def _add(self, node: Any, ins: list[str], n_layers: int) -> None:
        if not self.steps or not isinstance(self.steps[-1], Layer):
            raise UnsupportedModelError(f"{self.source}: {_describe(node)} is not a bias after a Gemm or MatMul")
        other = ins[1] if ins[0] == self.cur else ins[0]
        if other == self.cur:
            raise UnsupportedModelError(f"{self.source}: {_describe(node)} adds the data to itself")
        layer = self.steps[-1]
        add = _broadcast_bias(self.const(other, node), layer.W.shape[0], self.orient or "rows", self.source, other)
        if layer.bias is None:
            layer.bias, layer.bias_name = add, other
        else:
            layer.bias = _added(layer.bias, add)
            layer.extra_bias.append(other)

    _HANDLERS: dict[str, Callable[[_Walk, Any, list[str], int], None]] = {
        "Identity": _noop,
        "Dropout": _noop,
        "Cast": _cast,
        "Flatten": _flatten,
        "Reshape": _reshape,
        "Relu": _relu,
        "Gemm": _product,
        "MatMul": _product,
        "Add": _add,
    }


def _chain(steps: list[Any], source: str) -> list[Layer]:
    """The linear layers of the walk, checked to alternate with Relus (Relu∘Relu collapsed) and to fit."""
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
        if isinstance(a, Layer) and isinstance(b, Layer):
            raise UnsupportedModelError(
                f"{source} has no Relu between its linear layers '{a.weight_name}' and '{b.weight_name}'"
            )
    if pattern[0] != "layer" or pattern[-1] != "layer":
        raise UnsupportedModelError(
            f"{source} computes {' → '.join(pattern)}, not layer → Relu → … → layer (a Relu before the first or "
            "after the last linear layer)"
        )
    chain: list[Layer] = [s for s in seq if isinstance(s, Layer)]
    for la, lb in zip(chain, chain[1:], strict=False):
        if lb.W.shape[1] != la.W.shape[0]:
            raise InvalidNetworkError(
                f"{source}: linear layer '{la.weight_name}' has {la.W.shape[0]} outputs but the next one, "
                f"'{lb.weight_name}', takes {lb.W.shape[1]}"
            )
    return chain


def _check_reshapes(walk: _Walk, chain: list[Layer]) -> None:
    """Flatten and Reshape only before the first or after the last layer, and only to [batch, width]."""
    source, count = walk.source, len(chain)
    for node, before in walk.placed:
        if 0 < before < count:
            raise UnsupportedModelError(f"{source}: {_describe(node)} sits between two linear layers")
    m_in, k_out = chain[0].W.shape[1], chain[-1].W.shape[0]
    for node, target, first in walk.reshapes:
        size = m_in if first else k_out
        ok = (len(target) == 2 and target[1] in (size, -1) and target != [-1, -1] and target[0] >= -1) or (
            not first and target == [-1] and k_out == 1
        )
        if not ok:
            what = "input" if first else "output"
            raise UnsupportedModelError(
                f"{source}: {_describe(node)} reshapes the {what} to {target}, not [batch, {size}]"
            )


def _dims(vi: Any) -> list[Any]:
    out: list[Any] = []
    for d in vi.type.tensor_type.shape.dim:
        out.append(d.dim_param if d.dim_param else (int(d.dim_value) if d.HasField("dim_value") else None))
    return out


def parse_graph(model: Any, source: str) -> Parsed:
    """The chain of layers that ``model`` computes from its one data input, or the sentence why it is none."""
    walk = _Walk(import_onnx(), model, source)
    walk.run()
    graph = model.graph
    if walk.cur not in {o.name for o in graph.output} and walk.head is None:
        raise UnsupportedModelError(
            f"{source}: the chain from the input ends at '{walk.cur}', which is not a graph output"
        )
    stray = [n for n in walk.nodes if id(n) not in walk.visited and id(n) not in walk.shape_nodes]
    if stray:
        raise UnsupportedModelError(
            f"{source}: {_describe(stray[0])} is not part of the chain Gemm/MatMul → Relu → … → Gemm/MatMul"
        )
    chain = _chain(walk.steps, source)
    _check_reshapes(walk, chain)
    out_vi = next((o for o in graph.output if o.name == walk.cur), None)
    out_dims = _dims(out_vi) if out_vi is not None else ["batch", chain[-1].W.shape[0]]
    opsets = [(o.domain, int(o.version)) for o in model.opset_import]
    return Parsed(
        chain,
        walk.data.name,
        walk.cur,
        _dims(walk.data),
        out_dims,
        opsets,
        int(model.ir_version),
        walk.head,
        tuple(walk.noops),
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


ELEM_NAMES = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}


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
