"""The ``relusym.network/1`` JSON format (interfaces.md) and the deep ``relusym.mlp/1`` one (``widths``,
``weights``, ``biases``): decimals and rational strings, read exactly."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from relusym._base.document import schema_of
from relusym._base.limits import current, parse_json, shorten
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError

__all__ = ["NAME", "SUFFIXES", "RECORDS_ACTIVATION", "sniff", "parse", "load", "save", "from_mlp_dict"]

NAME = "json"
RECORDS_ACTIVATION = True
SUFFIXES = (".json",)


def sniff(path: Path, head: bytes) -> bool:
    return head.lstrip()[:1] == b"{"


def parse(text: str, where: str = "input") -> Any:
    """JSON with every number read exactly (``0.1`` is one tenth), within the input limits (nesting depth, digits
    and exponents of numbers: see relusym._base.limits)."""
    return parse_json(text, where, exact=True)


def _check_declared(data: Any, where: str) -> None:
    """``m`` must be a positive integer; without rows in A it is backed by no data, so it is bounded."""
    if not isinstance(data, dict) or "m" not in data or data["m"] is None:
        return
    m = data["m"]
    if isinstance(m, Fraction) and m.denominator == 1 and abs(m) < 1 << 64:
        m = int(m)
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise InvalidNetworkError(f"{where}: the field m must be a positive integer, got {shorten(m)}")
    rows = data.get("A")
    has_rows = isinstance(rows, list) and len(rows) > 0
    lim = current().max_declared_dim
    if not has_rows and m > lim:
        raise InvalidNetworkError(
            f"{where}: the field m = {m} declares inputs that no row of A holds, more than the limit "
            f"max_declared_dim = {lim}"
        )
    data["m"] = m


def _is_mlp(data: Any) -> bool:
    return isinstance(data, dict) and (
        schema_of(data) == "relusym.mlp/1" or ("V" not in data and isinstance(data.get("weights"), list))
    )


def from_mlp_dict(data: dict[str, Any], where: str) -> Network | MLP:
    """A ``relusym.mlp/1`` object: a ``Network`` when it has one hidden layer, else an ``MLP``."""
    widths = data.get("widths")
    if isinstance(widths, list):  # exact JSON numbers come as Fractions: integral ones as ints
        data = dict(data)
        data["widths"] = [
            int(w) if isinstance(w, Fraction) and w.denominator == 1 and abs(w) < 1 << 64 else w for w in widths
        ]
    try:
        net = MLP.from_dict(data)
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"{where}: {exc}") from None
    if isinstance(widths, list) and list(data["widths"]) != list(net.widths):
        raise InvalidNetworkError(
            f"{where}: the field widths {shorten(widths)} does not match the weights' {net.widths}"
        )
    return net.to_network() if net.depth == 1 else net


def load(path: Path) -> Network | MLP:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidNetworkError(f"{path} is not a UTF-8 text file") from None
    data = parse(text, str(path))
    if isinstance(data, dict) and "network" in data and "V" not in data and "weights" not in data:
        data = data["network"]
    if _is_mlp(data):
        return from_mlp_dict(data, str(path))
    _check_declared(data, str(path))
    try:
        return Network.from_dict(data)
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"{path}: {exc}") from None


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: Any = None) -> None:
    """Write ``relusym.network/1`` JSON (``relusym.mlp/1`` for a deep network): exact rationals, so nothing ever
    rounds (a float type does not apply)."""
    if policy is not None and getattr(policy, "dtype", None) is not None:
        raise InvalidNetworkError(
            f"JSON holds exact rationals, so dtype={policy.dtype!r} does not apply; choose a binary format for it"
        )
    path.write_text(json.dumps(net.to_dict(), indent=1) + "\n", encoding="utf-8")
