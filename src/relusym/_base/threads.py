"""Threads beside BLAS: one BLAS thread while relusym runs work of its own on the other cores.

The digest of a large float network computes its affine part with BLAS in a worker thread while the calling
thread encodes the hyperplane block (numpy, BLAS and hashlib release the GIL).  A multithreaded BLAS beside the
two threads puts more busy threads than cores on the machine (OpenBLAS's threads also spin for a while after
each call, waiting for the next), and both halves slow down, to worse than doing the two one after the other;
with BLAS on one thread meanwhile, the two threads share the cores.

BLAS's thread count is process-wide, and threadpoolctl (3.6 and later) lets only one Python thread at a time
control OpenBLAS's: the first that sets a limit, while it lives.  So :func:`single_blas_thread` sets the limit
only from the main thread (nested uses share it; the outermost restores the previous limits) and says whether it
holds: called from another thread, or where another thread controls BLAS, it changes nothing and yields False,
and the caller then does its work in one thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["single_blas_thread"]

_state: dict[str, Any] = {"depth": 0, "controller": None, "limit": None, "holds": False}  # main thread only


@contextmanager
def single_blas_thread() -> Iterator[bool]:
    """Limit the BLAS libraries numpy has loaded to one thread for the block, from the main thread; yields
    whether BLAS runs on one thread inside the block (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    if _state["depth"] == 0:
        if _state["controller"] is None:
            from threadpoolctl import ThreadpoolController

            _state["controller"] = ThreadpoolController()  # finds the loaded libraries once (a few ms)
        ctl = _state["controller"]
        _state["limit"] = ctl.limit(limits=1, user_api="blas")
        _state["holds"] = all(lib.num_threads == 1 for lib in ctl.lib_controllers if lib.user_api == "blas")
    _state["depth"] += 1
    try:
        yield bool(_state["holds"])
    finally:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            _state["limit"].restore_original_limits()
            _state["limit"] = None
