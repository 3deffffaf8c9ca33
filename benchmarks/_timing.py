"""Timing shared by the benchmarks (run as scripts: this folder is on sys.path)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall-clock seconds of ``repeat`` calls of ``fn``, and the last result."""
    out, t_best = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t0)
    return t_best, out
