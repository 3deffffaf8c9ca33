"""The grid sweep of the zoo's near-duplicate search (:func:`relusym._zoo._near.close_pairs`), compiled by numba:
the rows' cell keys, block by block, and the candidate pairs of the sorted keys in one pass with two pointers
(the numpy path finds the same pairs by three binary searches over all rows and builds them by ``repeat``).

Imported only by :func:`relusym._zoo._near.sweep_kernels`, when the process has loaded the compiled digest kernel
(numba installed, ``RELUSYM_NO_JIT`` unset, a job large enough)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = ["cell_keys", "sweep_pairs"]


@numba.njit(cache=True, nogil=True)
def cell_keys(
    block: Any, a0: int, a1: int, lo0: float, lo1: float, size: float, n1: int, out: Any, a2: int, third: Any
) -> None:
    """out[i] = c0·n1 + c1 for row i of ``block``, with c = floor((x − lo) / size) on the axes a0 and a1: the
    numpy path's float64 operations in its order (no fastmath), so the same keys.  When a2 ≥ 0, also
    third[i] = the row's coordinate a2 (read in the same pass: the row is one cache line)."""
    for i in range(block.shape[0]):
        c0 = np.int64(np.floor((block[i, a0] - lo0) / size))
        c1 = np.int64(np.floor((block[i, a1] - lo1) / size))
        out[i] = c0 * n1 + c1
        if a2 >= 0:
            third[i] = block[i, a2]


@numba.njit(cache=True, nogil=True)
def sweep_pairs(ks: Any, n1: int, out: Any, vals: Any, limit: float) -> int:
    """The candidate pairs (i, j), i < j positions in the sorted keys ``ks``: j in i's cell or the next
    (ks[j] ≤ ks[i] + 1), or in the three cells of the next column (ks[i] + n1 − 1 ≤ ks[j] ≤ ks[i] + n1 + 1); when
    ``vals`` is not empty (one value per position), only those with |vals[i] − vals[j]| ≤ ``limit``.  Written into
    ``out`` (rows × 2) when it has room for all; returns their number either way (count first with an empty
    ``out``, then fill)."""
    N = ks.shape[0]
    room = out.shape[0]
    cut = vals.shape[0] > 0
    count = 0
    p = 0
    for i in range(N):
        k = ks[i]
        j = i + 1
        while j < N and ks[j] <= k + 1:
            if not cut or abs(vals[i] - vals[j]) <= limit:
                if count < room:
                    out[count, 0] = i
                    out[count, 1] = j
                count += 1
            j += 1
        while p < N and ks[p] < k + n1 - 1:  # the keys grow with i, so p only moves forward
            p += 1
        j = p
        while j < N and ks[j] <= k + n1 + 1:
            if not cut or abs(vals[i] - vals[j]) <= limit:
                if count < room:
                    out[count, 0] = i
                    out[count, 1] = j
                count += 1
            j += 1
    return count
