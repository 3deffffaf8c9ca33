"""safetensors files holding the two linear layers of a one-hidden-layer ReLU network.

Read with the ``safetensors.numpy`` API (no torch needed); the key heuristics are those of
:mod:`relusym.io._layers` (``*.weight`` out×in or ``*.kernel`` in×out, paired by shape, optional biases).
``BF16`` tensors, which numpy cannot hold, are decoded here from their bytes into float32 (exact).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .._network import Network
from ..errors import InvalidNetworkError, UnsupportedModelError
from ._layers import LinearLayer, TwoLayers, WritePolicy, layout_arrays, pair_linear_layers

__all__ = ["NAME", "SUFFIXES", "RECORDS_ACTIVATION", "sniff", "load", "save", "accepts", "from_object", "read_arrays"]

NAME = "safetensors"
RECORDS_ACTIVATION = False
SUFFIXES: tuple[str, ...] = (".safetensors",)

_MAX_HEADER = 100 * 1024 * 1024
_DTYPES = {
    "F16": np.float16,
    "F32": np.float32,
    "F64": np.float64,
    "I8": np.int8,
    "I16": np.int16,
    "I32": np.int32,
    "I64": np.int64,
    "U8": np.uint8,
    "U16": np.uint16,
    "U32": np.uint32,
    "U64": np.uint64,
}
_CODES = {np.dtype(v).name: k for k, v in _DTYPES.items()}


def _import_safetensors() -> Any:
    try:
        import safetensors.numpy as stn
    except ImportError:
        raise UnsupportedModelError(
            "reading .safetensors files needs safetensors: pip install 'relusym[safetensors]'"
        ) from None
    return stn


def sniff(path: Path, head: bytes) -> bool:
    """8-byte little-endian header length, then a JSON object."""
    if len(head) < 9:
        return False
    size = int.from_bytes(head[:8], "little")
    return 2 <= size <= _MAX_HEADER and head[8:9] == b"{"


def _read_header(path: Path) -> tuple[dict[str, Any], int]:
    """The JSON header (checked against the file size) and the offset of the data section."""
    total = path.stat().st_size
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            raise InvalidNetworkError(f"{path.name} is not a safetensors file: it is only {total} bytes long")
        size = int.from_bytes(raw, "little")
        if size > min(total - 8, _MAX_HEADER):
            raise InvalidNetworkError(
                f"{path.name} is not a valid safetensors file: its header claims {size} bytes but the file has "
                f"{total} (truncated or corrupted)"
            )
        try:
            header = json.loads(fh.read(size).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise InvalidNetworkError(f"{path.name} is not a valid safetensors file: its header is not JSON") from None
    if not isinstance(header, dict):
        raise InvalidNetworkError(f"{path.name} is not a valid safetensors file: its header is not an object")
    data_len = total - 8 - size
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            start, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise InvalidNetworkError(f"{path.name}: tensor '{key}' has no valid data_offsets") from None
        if not 0 <= start <= end <= data_len:
            raise InvalidNetworkError(
                f"{path.name} is truncated or corrupted: tensor '{key}' ends at byte {end} of a {data_len}-byte "
                "data section"
            )
    return header, 8 + size


def read_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """All tensors of a safetensors file as numpy arrays (BF16 widened to float32), and their file dtypes."""
    path = Path(path)
    header, offset = _read_header(path)
    dtypes = {k: str(v.get("dtype")) for k, v in header.items() if k != "__metadata__"}
    plain = [k for k, d in dtypes.items() if d != "BF16"]
    arrays: dict[str, np.ndarray] = {}
    if plain:
        _import_safetensors()
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="np") as fh:
                for key in plain:
                    arrays[key] = fh.get_tensor(key)
        except TypeError as exc:  # a dtype numpy does not know (e.g. F8_E4M3)
            raise UnsupportedModelError(f"{path.name}: {exc}; relusym reads F16/F32/F64/BF16 tensors") from None
        except Exception as exc:
            raise InvalidNetworkError(f"{path.name} is not a valid safetensors file: {exc}") from None
    for key in (k for k, d in dtypes.items() if d == "BF16"):
        info = header[key]
        start, end = (int(x) for x in info["data_offsets"])
        shape = tuple(int(s) for s in info["shape"])
        with open(path, "rb") as fh:
            fh.seek(offset + start)
            raw = fh.read(end - start)
        if len(raw) != 2 * int(np.prod(shape, dtype=np.int64)):
            raise InvalidNetworkError(f"{path.name}: tensor '{key}' has {len(raw)} bytes for shape {shape}")
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        arrays[key] = bits.view(np.float32).reshape(shape)
    order = list(header)  # keep the header's order (it is sorted by name in files written by safetensors)
    arrays = {k: arrays[k] for k in order if k in arrays}
    return arrays, dtypes


def _layers(path: Path) -> TwoLayers:
    arrays, dtypes = read_arrays(path)
    two = pair_linear_layers(arrays, source=Path(path).name, ordered=False)

    def fix(layer: LinearLayer) -> LinearLayer:
        w = "bfloat16" if dtypes.get(layer.weight_key) == "BF16" else layer.weight_dtype
        b = layer.bias_dtype
        if layer.bias_key is not None and dtypes.get(layer.bias_key) == "BF16":
            b = "bfloat16"
        return replace(layer, weight_dtype=w, bias_dtype=b)

    return TwoLayers(fix(two.first), fix(two.second))


def load(path: Path) -> Network:
    """Read a network from a safetensors file."""
    return _layers(Path(path)).network()


def accepts(obj: Any) -> bool:
    """safetensors has no in-memory model object; dicts of arrays are read by the torch or flax modules."""
    return False


def from_object(obj: Any) -> Network:
    raise UnsupportedModelError("safetensors is a file format; pass a path to a .safetensors file")


def save(net: Network, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Write a safetensors file: with ``like``, its keys, orientation and dtypes; else ``0.weight, 0.bias,
    2.weight, 2.bias`` in the network's float dtypes.  Every entry exact, or as ``policy`` allows."""
    layers = _layers(Path(like)) if like is not None else None
    arrays, bf16 = layout_arrays(net, layers, policy if policy is not None else WritePolicy())
    metadata = {"format": "pt", "producer": "relusym"}
    if not bf16:
        stn = _import_safetensors()
        stn.save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path), metadata=metadata)
        return
    # numpy has no bfloat16: write the (simple) file format directly; the values are bfloat16 values, so
    # keeping the high half of their float32 bits is exact
    header: dict[str, Any] = {"__metadata__": metadata}
    blobs: list[bytes] = []
    pos = 0
    for key in sorted(arrays):
        arr = arrays[key]
        if key in bf16:
            bits = (np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
            blob, code = bits.tobytes(), "BF16"
        else:
            a = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
            blob, code = a.tobytes(), _CODES[arr.dtype.name]
        header[key] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [pos, pos + len(blob)]}
        blobs.append(blob)
        pos += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(len(text).to_bytes(8, "little"))
        fh.write(text)
        for blob in blobs:
            fh.write(blob)
