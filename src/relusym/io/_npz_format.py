"""NPZ files holding arrays ``V``, ``A``, ``b``, ``c`` (interfaces.md), read as data (``allow_pickle=False``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from .._limits import check_npy_members, check_zip
from .._network import Network
from ..errors import InvalidNetworkError

__all__ = ["NAME", "SUFFIXES", "sniff", "load", "save"]

NAME = "npz"
SUFFIXES = (".npz",)


def sniff(path: Path, head: bytes) -> bool:
    if not head.startswith(b"PK"):
        return False
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except zipfile.BadZipFile:
        return path.suffix.lower() == ".npz"
    return {"V.npy", "A.npy", "b.npy"} <= names


def load(path: Path) -> Network:
    check_zip(path, NAME)
    check_npy_members(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [key for key in ("V", "A", "b") if key not in data.files]
            if missing:
                raise InvalidNetworkError(
                    f"{path} has no array named {', '.join(missing)} (found: {', '.join(data.files) or 'none'})"
                )
            arrays = {key: data[key] for key in ("V", "A", "b", "c") if key in data.files}
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InvalidNetworkError(f"{path} is not a readable NPZ file ({exc})") from None
    except ValueError as exc:
        raise InvalidNetworkError(f"{path}: {exc}") from None
    A = arrays["A"]
    m = int(A.shape[1]) if A.ndim == 2 else None
    try:
        return Network(arrays["V"], A, arrays["b"], arrays.get("c"), m=m)
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"{path}: {exc}") from None


def save(net: Network, path: Path, like: Path | None = None) -> None:
    def arr(x: np.ndarray) -> np.ndarray:
        if x.dtype != object:
            return np.asarray(x)
        # exact rationals: float64 when exactly representable, else refuse rather than round
        out = np.array([float(v) for v in x.ravel().tolist()], dtype=np.float64).reshape(x.shape)
        if any(float(v) != v for v in x.ravel().tolist()):
            raise InvalidNetworkError(
                f"{path}: NPZ holds binary floats, and this network has entries that are "
                "not exactly representable; save it as JSON instead"
            )
        return out

    with open(path, "wb") as fh:
        np.savez(fh, V=arr(net.V), A=arr(net.A), b=arr(net.b), c=arr(net.c))
