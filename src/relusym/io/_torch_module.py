"""Reading a live ``torch.nn.Module`` or a state_dict: the Linear and ReLU modules in the order ``forward`` runs
them (traced where the module tree does not say), checked to alternate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relusym._base.limits import check_shape, shorten
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import (
    chain_linear_layers,
)

__all__ = ["alternation", "from_module", "from_state_dict", "import_torch", "tensor_to_numpy"]


# ----------------------------------------------------------------------------------------------------------
# lazy imports
def import_torch(what: str) -> Any:
    try:
        import torch
    except ImportError:
        raise UnsupportedModelError(f"{what} needs PyTorch: pip install 'relusym[torch]'") from None
    return torch


def tensor_to_numpy(t: Any) -> np.ndarray:
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
        arrays[str(key)] = tensor_to_numpy(value)
    return chain_linear_layers(arrays, source=source, ordered=True, order_hint=order_hint).network()


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
    torch = import_torch("reading PyTorch modules")
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
        arrays[f"{name}.weight"] = tensor_to_numpy(lin.weight)
        if lin.bias is not None:
            arrays[f"{name}.bias"] = tensor_to_numpy(lin.bias)
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


def alternation(collapsed: list[tuple[str, str]], what: str) -> list[str]:
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
    return alternation(kinds, mname)


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
