"""Writing a network into a copy of a ``like`` ONNX model: its weights and biases replaced (each in its tensor's
own float type), everything else kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.io._layers import WritePolicy, affine_layers, widths_of
from relusym.io._onnx_graph import ELEM_NAMES, Layer, Parsed, import_onnx

__all__ = ["keeps", "rewrite_like", "tensor_as", "unscaled"]


def rewrite_like(net: Network | MLP, like: Any, parsed: Parsed, policy: WritePolicy) -> Any:
    """A copy of the ``like`` model with the layers' weights and biases replaced by the network's (new shapes,
    each in its tensor's own float type), everything else kept: the input and output names, types and shapes,
    the nodes passed over before the first layer (Flatten, Reshape, Cast), the classifier head with all its
    outputs (Softmax, a label and probabilities), the opsets and metadata.  None when the network does not
    fit that frame (other input or output sizes, a ``dtype`` that changes the model's float type, a weight
    shared between layers): then the model is rebuilt from the network alone."""
    onnx = import_onnx()
    widths = widths_of(net)
    if widths[0] != parsed.layers[0].W.shape[1] or widths[-1] != parsed.layers[-1].W.shape[0]:
        return None
    model = onnx.ModelProto()
    model.CopyFrom(like)
    rw = _Rewriter(onnx, model, policy)
    names = [n for ly in parsed.layers for n in (ly.weight_name, ly.bias_name, *ly.extra_bias) if n]
    if len(set(names)) != len(names) or any(rw.uses.get(n, 0) != 1 for n in names):
        return None
    if any(rw.elem_of(n) is None for n in names):
        return None
    if policy.dtype is not None and any(rw.elem_of(n) != policy.dtype for n in names):
        return None  # another float type for the whole model: rebuilt
    for ly, (W, B, wn, bn) in zip(parsed.layers, affine_layers(net), strict=True):
        rw.layer(ly, W, B, wn, bn)
    return _reannotated(onnx, model, like)


class _Rewriter:
    """The tensors of a copied model, replaced one layer at a time."""

    def __init__(self, onnx: Any, model: Any, policy: WritePolicy) -> None:
        from onnx import helper, numpy_helper

        self.onnx, self.helper, self.numpy_helper, self.policy = onnx, helper, numpy_helper, policy
        self.graph = graph = model.graph
        self.inits = {t.name: t for t in graph.initializer}
        self.const_nodes = {n.output[0]: n for n in graph.node if n.op_type == "Constant" and n.output}
        self.uses: dict[str, int] = {}
        for node in graph.node:
            for name in node.input:
                self.uses[name] = self.uses.get(name, 0) + 1
        self.declared = {vi.name: vi for vi in graph.input}
        self.by_weight = {n.input[i]: n for n in graph.node if n.op_type in ("Gemm", "MatMul") for i in (0, 1)}
        self.fresh = 0

    def elem_of(self, name: str) -> str | None:
        if name in self.inits:
            return ELEM_NAMES.get(self.inits[name].data_type)
        node = self.const_nodes.get(name)
        if node is not None:
            for a in node.attribute:
                if a.name == "value":
                    return ELEM_NAMES.get(a.t.data_type)
        return None

    def tensor(self, arr: np.ndarray, name: str, dt: str) -> Any:
        return tensor_as(self.helper, self.numpy_helper, self.onnx, arr, name, dt)

    def put(self, name: str, arr: np.ndarray, dt: str) -> None:
        t = self.tensor(arr, name, dt)
        if name in self.declared:  # an initializer also listed as a graph input (older exporters): its new shape
            dims = self.declared[name].type.tensor_type.shape
            del dims.dim[:]
            for d in arr.shape:
                dims.dim.add().dim_value = int(d)
        if name in self.inits:
            self.inits[name].CopyFrom(t)
            return
        node = self.const_nodes[name]
        del node.attribute[:]
        node.attribute.extend([self.helper.make_attribute("value", t)])

    def set_attr(self, node: Any, key: str, value: float) -> None:
        for a in node.attribute:
            if a.name == key:
                a.f = value
                return
        node.attribute.extend([self.helper.make_attribute(key, value)])

    def stored_shape(self, name: str) -> tuple[int, ...]:
        if name in self.inits:
            return tuple(int(d) for d in self.inits[name].dims)
        for a in self.const_nodes[name].attribute:
            if a.name == "value":
                return tuple(int(d) for d in a.t.dims)
        return ()

    def layer(self, ly: Layer, W: np.ndarray, B: np.ndarray, wn: str, bn: str) -> None:
        """The weight of one layer, and its bias (in the like layer's bias, or a new one where it had none)."""
        node = self.by_weight[ly.weight_name]
        wdt = self.elem_of(ly.weight_name) or "float32"
        hold = np.dtype(np.float32) if wdt == "bfloat16" else np.dtype(wdt)
        alpha = keeps(W, ly.alpha, hold) if ly.op == "Gemm" else 1.0
        Wf = self.policy.fit(unscaled(W, alpha), wdt, wn)
        self.put(ly.weight_name, Wf if ly.weight_transposed else np.ascontiguousarray(Wf.T), wdt)
        if ly.op == "Gemm" and alpha != ly.alpha:
            self.set_attr(node, "alpha", alpha)
        zero = all(x == 0 for x in B.ravel().tolist())
        if ly.bias_name is None and not zero:  # the like layer has no bias; the network's is not zero
            self.new_bias(ly, node, B, bn, wdt, W.shape[0])
        elif ly.bias_name is not None:
            self.bias(ly, node, B, bn, wdt, W.shape[0])

    def new_bias(self, ly: Layer, node: Any, B: np.ndarray, bn: str, wdt: str, out: int) -> None:
        self.fresh += 1
        bname = f"{ly.weight_name}_relusym_bias{self.fresh}"
        Bf = self.policy.fit(B, wdt, bn)
        shape = (1, out) if ly.data_first else (out, 1)
        self.graph.initializer.append(self.tensor(Bf.reshape(shape), bname, wdt))
        if ly.op == "Gemm" and ly.data_first:
            node.input.append(bname)
            self.set_attr(node, "beta", 1.0)
        else:
            y = node.output[0]
            mid = f"{y}_relusym_product"
            node.output[0] = mid
            add = self.helper.make_node("Add", [mid, bname], [y])
            pos = list(self.graph.node).index(node)
            self.graph.node.insert(pos + 1, add)

    def bias(self, ly: Layer, node: Any, B: np.ndarray, bn: str, wdt: str, out: int) -> None:
        assert ly.bias_name is not None
        bdt = self.elem_of(ly.bias_name) or wdt
        bhold = np.dtype(np.float32) if bdt == "bfloat16" else np.dtype(bdt)
        in_gemm = ly.op == "Gemm" and node.input[2:3] == [ly.bias_name]
        beta = keeps(B, ly.beta, bhold) if in_gemm else 1.0
        Bf = self.policy.fit(unscaled(B, beta), bdt, bn)
        old = self.stored_shape(ly.bias_name)
        self.put(ly.bias_name, Bf.reshape(_bias_shape(old, out, ly.data_first)), bdt)
        if in_gemm and beta != ly.beta:
            self.set_attr(node, "beta", beta)
        for extra in ly.extra_bias:  # the whole bias went into the first one
            odt = self.elem_of(extra) or bdt
            eshape = self.stored_shape(extra)
            zeros = np.zeros(_bias_shape(eshape, out, ly.data_first) if eshape else (), dtype=np.float32)
            self.put(extra, zeros.astype(np.float32 if odt == "bfloat16" else odt), odt)


def _reannotated(onnx: Any, model: Any, like: Any) -> Any:
    """The rewritten model with the shape annotations of the like model recomputed for the new widths."""
    # the shapes recorded for intermediate tensors changed with the widths: recomputed where onnx can
    del model.graph.value_info[:]
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
    onnx.checker.check_model(inferred)
    return inferred


def tensor_as(helper: Any, numpy_helper: Any, onnx: Any, arr: np.ndarray, name: str, dt: str) -> Any:
    """An ONNX tensor holding ``arr`` in the float type ``dt`` (bfloat16 as its raw upper halves of float32)."""
    if dt == "bfloat16":
        bits = (np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
        return helper.make_tensor(name, onnx.TensorProto.BFLOAT16, list(arr.shape), vals=bits.tobytes(), raw=True)
    return numpy_helper.from_array(np.ascontiguousarray(arr), name)


def _bias_shape(old: tuple[int, ...], out: int, data_first: bool) -> tuple[int, ...]:
    """The shape of a rewritten bias: the stored one's rank and orientation with ``out`` entries."""
    if not data_first:
        return (out, 1)
    return (1, out) if len(old) == 2 else (out,)


def keeps(x: np.ndarray, s: float, dt: np.dtype) -> float:
    """``s`` when x/s is exactly representable in ``dt`` (so a like file's Gemm alpha/beta can be kept), else 1."""
    if s == 1.0 or x.dtype == object or s == 0:
        return 1.0
    q = x.astype(np.float64) / np.float64(s)
    with np.errstate(over="ignore"):
        back = q.astype(dt).astype(np.float64)
    return s if np.array_equal(back * np.float64(s), x.astype(np.float64)) and np.array_equal(back, q) else 1.0


def unscaled(x: np.ndarray, s: float) -> np.ndarray:
    return x if s == 1.0 else x.astype(np.float64) / np.float64(s)
