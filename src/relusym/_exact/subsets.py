"""Subset sums of integer vectors, exactly: the one home of this mechanism (flip sets and configurations)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = ["subset_sums", "subset_sums_by_doubling"]


def subset_sums_by_doubling(
    start: np.ndarray, rows: Iterable[np.ndarray], add: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """All 2^h sums start + Σ_{i ∈ mask} rows_i, by doubling: row index = bitmask of the subset.

    ``add(table, row)`` adds one row to every row of the table (plain integer addition, or addition of
    multi-limb integers with carries)."""
    sums = start
    for y in rows:
        sums = np.concatenate([sums, add(sums, y)], axis=0)
    return sums


def subset_sums(Y: list[list[int]], T: list[int]) -> np.ndarray:
    """All 2^len(Y) sums T + Σ_{i ∈ mask} Y_i, row index = bitmask (exact: int64 when safe, else Python
    ints)."""
    d = len(T)
    bound = max((abs(x) for x in T), default=0) + sum(max((abs(x) for x in y), default=0) for y in Y)
    dtype: Any = np.int64 if bound < 2**62 else object
    start = np.array([T], dtype=dtype).reshape(1, d)
    return subset_sums_by_doubling(start, (np.array(y, dtype=dtype) for y in Y), lambda t, y: t + y[None, :])
