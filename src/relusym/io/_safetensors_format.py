"""safetensors files holding the linear layers of a ReLU network (two for one hidden layer, or more).

Read with the ``safetensors.numpy`` API (no torch needed); the key heuristics are those of
:mod:`relusym.io._layers` (``*.weight`` out×in or ``*.kernel`` in×out, paired by shape, optional biases).
``BF16`` tensors, which numpy cannot hold, are decoded here from their bytes into float32 (exact).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import check_shape, parse_json, shorten
from relusym._base.limits import current as current_limits
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, UnsupportedModelError
from relusym.io._layers import LinearChain, LinearLayer, WritePolicy, chain_linear_layers, layout_arrays

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
        cap = current_limits().header_bytes
        if size > cap:
            raise InvalidNetworkError(
                f"{path.name}: the safetensors header claims {size} bytes, more than the limit header_bytes = {cap}"
            )
        if size > total - 8:
            raise InvalidNetworkError(
                f"{path.name} is not a valid safetensors file: its header claims {size} bytes but the file has "
                f"{total} (truncated or corrupted)"
            )
        try:
            text = fh.read(size).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidNetworkError(f"{path.name} is not a valid safetensors file: its header is not UTF-8") from None
        header = parse_json(text, f"{path.name}: the safetensors header", exact=False)
    if not isinstance(header, dict):
        raise InvalidNetworkError(f"{path.name} is not a valid safetensors file: its header is not an object")
    data_len = total - 8 - size
    for key, info in header.items():
        if key == "__metadata__":
            continue
        _check_entry(path.name, key, info, data_len)
    return header, 8 + size


_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2}
_ITEMSIZE.update({"I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8})


_OWN_DECODE = ("BF16", "F8_E4M3", "F8_E5M2")  # dtypes numpy cannot hold: decoded here, exactly, from their bits


def _e4m3_table() -> np.ndarray:
    """The 256 values of float8_e4m3fn (4 exponent bits of bias 7, 3 mantissa bits, no infinities; 0x7F and 0xFF
    are NaN) as float32, which holds each exactly."""
    b = np.arange(256)
    sign = np.where(b >> 7, -1.0, 1.0)
    e, mnt = (b >> 3) & 15, b & 7
    val = np.where(e == 0, mnt / 8 * 2.0**-6, (1 + mnt / 8) * 2.0 ** (e - 7.0))
    val = np.where((e == 15) & (mnt == 7), np.nan, val)
    return (sign * val).astype(np.float32)


def _decode(dtype: str, raw: bytes) -> np.ndarray:
    if dtype == "BF16":  # the upper half of a float32
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32)
    if dtype == "F8_E5M2":  # the upper byte of a float16
        return (np.frombuffer(raw, dtype=np.uint8).astype("<u2") << 8).view(np.float16)
    return _e4m3_table()[np.frombuffer(raw, dtype=np.uint8)]


def _check_entry(name: str, key: str, info: Any, data_len: int) -> None:
    """One header entry: a known dtype, a shape of non-negative integers, and data_offsets holding exactly the
    bytes that shape needs, inside the data section (checked before anything is allocated)."""
    where = f"{name}: tensor {shorten(key)}"
    if not isinstance(info, dict):
        raise InvalidNetworkError(f"{where} is described by a {type(info).__name__}, not an object")
    dtype = info.get("dtype")
    if not isinstance(dtype, str) or dtype not in _ITEMSIZE:
        raise InvalidNetworkError(f"{where} has the unknown dtype {shorten(dtype)}")
    shape = info.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise InvalidNetworkError(f"{where} has the shape {shorten(shape)}, not a list of integers")
    if any(d < 0 for d in shape):
        raise InvalidNetworkError(f"{where} has the negative dimension {min(shape)} in its shape")
    offsets = info.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in offsets)
    ):
        raise InvalidNetworkError(f"{where} has no valid data_offsets (two integers)")
    start, end = offsets
    if not 0 <= start <= end <= data_len:
        raise InvalidNetworkError(
            f"{name} is truncated or corrupted: tensor {shorten(key)} ends at byte {shorten(end)} of a {data_len}-byte "
            "data section"
        )
    count = math.prod(check_shape(shape, where))  # entries within max_elements; (0, 10^9) holds no data
    if count * _ITEMSIZE[dtype] != end - start:
        raise InvalidNetworkError(
            f"{where} has shape {shorten(shape)} of {dtype} ({count * _ITEMSIZE[dtype]} bytes) but holds "
            f"{end - start} bytes"
        )


def read_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """All tensors of a safetensors file as numpy arrays (BF16 widened to float32), and their file dtypes."""
    path = Path(path)
    header, offset = _read_header(path)
    dtypes = {k: str(v.get("dtype")) for k, v in header.items() if k != "__metadata__"}
    plain = [k for k, d in dtypes.items() if d not in _OWN_DECODE]
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
    for key in (k for k, d in dtypes.items() if d in _OWN_DECODE):
        info = header[key]
        start, end = info["data_offsets"]  # checked by _check_entry: they hold exactly the shape's bytes
        shape = tuple(info["shape"])
        with open(path, "rb") as fh:
            fh.seek(offset + start)
            raw = fh.read(end - start)
        if len(raw) != end - start:
            raise InvalidNetworkError(f"{path.name}: tensor {shorten(key)} is truncated")
        arrays[key] = _decode(dtypes[key], raw).reshape(shape)
    order = list(header)  # keep the header's order (it is sorted by name in files written by safetensors)
    arrays = {k: arrays[k] for k in order if k in arrays}
    return arrays, dtypes


def _layers(path: Path) -> LinearChain:
    arrays, dtypes = read_arrays(path)
    chain = chain_linear_layers(arrays, source=Path(path).name, ordered=False)

    def fix(layer: LinearLayer) -> LinearLayer:
        w = "bfloat16" if dtypes.get(layer.weight_key) == "BF16" else layer.weight_dtype
        b = layer.bias_dtype
        if layer.bias_key is not None and dtypes.get(layer.bias_key) == "BF16":
            b = "bfloat16"
        return replace(layer, weight_dtype=w, bias_dtype=b)

    return LinearChain(tuple(fix(layer) for layer in chain.layers))


def load(path: Path) -> Network | MLP:
    """Read a network from a safetensors file."""
    return _layers(Path(path)).network()


def accepts(obj: Any) -> bool:
    """safetensors has no in-memory model object; dicts of arrays are read by the torch or flax modules."""
    return False


def from_object(obj: Any) -> Network | MLP:
    raise UnsupportedModelError("safetensors is a file format; pass a path to a .safetensors file")


def save(net: Network | MLP, path: Path, like: Path | None = None, *, policy: WritePolicy | None = None) -> None:
    """Write a safetensors file: with ``like``, its keys, orientation and dtypes; else ``0.weight, 0.bias,
    2.weight, 2.bias, …`` in the network's float dtypes.  Every entry exact, or as ``policy`` allows."""
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
