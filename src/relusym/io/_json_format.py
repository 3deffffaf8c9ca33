"""The ``relusym.network/1`` JSON format (interfaces.md): decimals and rational strings, read exactly."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from .._network import Network
from ..errors import InvalidNetworkError

__all__ = ["NAME", "SUFFIXES", "RECORDS_ACTIVATION", "sniff", "parse", "load", "save"]

NAME = "json"
RECORDS_ACTIVATION = True
SUFFIXES = (".json",)


def sniff(path: Path, head: bytes) -> bool:
    return head.lstrip()[:1] == b"{"


def parse(text: str, where: str = "input") -> Any:
    """JSON with every number read exactly (``0.1`` is one tenth)."""
    try:
        return json.loads(text, parse_float=Fraction, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidNetworkError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


def _reject_constant(name: str) -> Any:
    raise InvalidNetworkError(f"the JSON holds {name}; NaN and infinities are not allowed")


def load(path: Path) -> Network:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidNetworkError(f"{path} is not a UTF-8 text file") from None
    data = parse(text, str(path))
    if isinstance(data, dict) and "network" in data and "V" not in data:
        data = data["network"]
    try:
        return Network.from_dict(data)
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"{path}: {exc}") from None


def save(net: Network, path: Path, like: Path | None = None, *, policy: Any = None) -> None:
    """Write ``relusym.network/1`` JSON: exact rationals, so nothing ever rounds (a float type does not apply)."""
    if policy is not None and getattr(policy, "dtype", None) is not None:
        raise InvalidNetworkError(
            f"JSON holds exact rationals, so dtype={policy.dtype!r} does not apply; choose a binary format for it"
        )
    path.write_text(json.dumps(net.to_dict(), indent=1) + "\n", encoding="utf-8")
