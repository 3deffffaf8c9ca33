"""Representability in a float dtype, the one check: whether an exact value survives a cast to float16,
bfloat16, float32 or float64 unchanged (the writers' rounding policy, ``relusym.io._layers.WritePolicy``, and the
places that keep a result in its network's float dtype when it fits).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["cast_to_dtype", "exactly_in_dtype", "first_inexact", "float_or_inf", "to_bfloat16_values"]


# ----------------------------------------------------------------------------------------------------------
# representability in a float dtype: the one check (the writers' rounding policy, relusym.io._layers.WritePolicy,
# and the places that keep a result in its network's float dtype when it fits)
def float_or_inf(x: Any) -> float:
    """The correctly rounded float64 of an exact rational, ±inf beyond the float64 range."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def to_bfloat16_values(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to the nearest bfloat16 (ties to even), held as float32 (which holds every bfloat16 value).
    Magnitudes beyond bfloat16's range become ±inf, as a cast would."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    u = f.view(np.uint32)
    rounding = ((u >> 16) & 1) + np.uint32(0x7FFF)
    with np.errstate(over="ignore"):
        bits = ((u.astype(np.uint64) + rounding) >> 16).astype(np.uint32) << 16
    return bits.astype(np.uint32).view(np.float32).reshape(np.shape(x))


def cast_to_dtype(x: np.ndarray, dtype_name: str) -> np.ndarray:
    """``x`` (float or exact object array) rounded to nearest in ``dtype_name`` (``"bfloat16"`` values are held
    in float32); Fractions go through their correctly rounded float64, beyond-range values become ±inf."""
    if x.dtype == object:
        x = np.array([float_or_inf(v) for v in x.ravel().tolist()], dtype=np.float64).reshape(x.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype_name == "bfloat16":
            return to_bfloat16_values(x.astype(np.float32) if x.dtype != np.float32 else x)
        return x.astype(np.dtype(dtype_name))


def first_inexact(x: np.ndarray, y: np.ndarray) -> tuple[int, ...] | None:
    """The first index where ``y`` (a float array) differs from ``x`` (float or exact) as real numbers."""
    if x.dtype != object:
        with np.errstate(invalid="ignore"):
            bad = y.astype(np.float64) != x.astype(np.float64)
        if not bad.any():
            return None
        return tuple(int(i) for i in np.argwhere(bad)[0])
    for pos, (v, w) in enumerate(zip(x.ravel().tolist(), y.ravel().tolist(), strict=True)):
        if not math.isfinite(w) or Fraction(w) != v:
            return tuple(int(i) for i in np.unravel_index(pos, x.shape))
    return None


def exactly_in_dtype(values: Any, dtype: Any) -> np.ndarray | None:
    """``values`` as an array of the float ``dtype`` when that dtype holds every one of them exactly, else None."""
    x = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    y = cast_to_dtype(x, np.dtype(dtype).name)
    return y if first_inexact(x, y) is None else None
