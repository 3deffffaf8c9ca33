"""The near-duplicate pairs of a zoo job (tolerance mode): candidates from the networks' values at fixed probe
points (computed by the chunks' tasks, :func:`relusym._zoo._summary.probe_stack`), found by a grid sweep over
two coordinates, each candidate then decided by ``equivalent_approx``.

The probe values reach the client as list columns of the job's parts, one chunk per part.  When every row is a
list of one length (a zoo of one shape, no errors, as most are), each chunk is read as a 2-D view of its buffer
(:func:`list_blocks`; the parts of a parallel job are memory-mapped) and never copied into one matrix: the sweep
gathers two coordinates of every row and the full rows of its candidates only.  Copying the columns into one
matrix cost the client of a 10^6-network job of 8-64-1 about 0.3 s, most of it the kernel's faults on fresh
memory."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._zoo._digest_jit import jit_loaded, readonly
from relusym._zoo._sources import Chunk, read_chunk
from relusym._zoo._table import Options

__all__ = ["close_pairs", "column_reduce", "list_blocks", "near_pairs", "probe_sets", "sweep_kernels"]


def list_blocks(col: Any, width: int) -> list[np.ndarray] | None:
    """The chunks of a list<double> column (a pyarrow ChunkedArray or Array) as 2-D arrays of ``width`` columns,
    one per nonempty chunk, without copying (views of the chunks' buffers), when every row is a list of ``width``
    values and nothing is null; else None."""
    if width < 1:
        return None
    out: list[np.ndarray] = []
    for ch in getattr(col, "chunks", [col]):
        if len(ch) == 0:
            continue
        if ch.null_count or not bool(np.all(np.diff(ch.offsets.to_numpy()) == width)):
            return None
        flat = ch.flatten()  # the values of the chunk's rows (its offset and slice taken into account)
        if flat.null_count:
            return None
        out.append(flat.to_numpy(zero_copy_only=True).reshape(len(ch), width))
    return out


def column_reduce(blocks: Sequence[np.ndarray], f: Any) -> np.ndarray:
    """``f.reduce`` (np.minimum or np.maximum) of each column over all rows of the blocks (2-D, one width, not
    empty).  Each block's rows are reduced as rows of about 256 values (several rows side by side, then their
    columns): numpy's reduction along the first axis of a narrow array runs an element at a time (58 ms for the
    8 columns of 10^6 rows, against 6 ms so); min and max are exact either way."""
    out = []
    for x in blocks:
        n, d = x.shape
        w = max(1, 256 // d)  # rows side by side
        q = n // w * w
        if q:
            out.append(f.reduce(f.reduce(x[:q].reshape(q // w, w * d), axis=0).reshape(w, d), axis=0))
        if q < n:
            out.append(f.reduce(x[q:], axis=0))
    return np.asarray(f.reduce(np.array(out), axis=0))


def _list_rows(col: Any, rows: np.ndarray) -> np.ndarray:
    """The rows ``rows`` of a list<double> column as a 2-D array (the rows all of one length), copied."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    every = len(rows) == len(arr) and bool(np.all(rows == np.arange(len(arr))))
    taken = arr if every else arr.take(pa.array(rows))
    flat = pc.list_flatten(taken).to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(flat, dtype=np.float64).reshape(len(rows), -1)


def probe_sets(raw: Any, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray, list[np.ndarray], np.ndarray]]:
    """The near-duplicate search's input, per shape (m, k) of the table's rows ``rows`` (rows with probe values,
    ascending): m, those rows, their probe values (blocks of rows, numbered as ``rows``) and the column maxima of
    their scale quantities (the ``_nd`` column).  Without copies when ``rows`` are all the table's rows, of one
    shape, with lists of one length (:func:`list_blocks`)."""
    import pyarrow.compute as pc

    if rows.size and rows.size == raw.num_rows:
        ms, ks = pc.min_max(raw["m"]).as_py(), pc.min_max(raw["k"]).as_py()
        if ms["min"] == ms["max"] and ks["min"] == ks["max"]:
            first = raw["_probe"][0]  # the first row's list (rows.size ≥ 1)
            width = len(first.values) if first.is_valid else 0
            probes, nd = list_blocks(raw["_probe"], width), list_blocks(raw["_nd"], 5)
            if probes is not None and nd is not None:
                yield int(ms["min"]), rows, probes, column_reduce(nd, np.maximum)
                return
    m_col = raw["m"].to_numpy(zero_copy_only=False)[rows].astype(np.int64)
    k_col = raw["k"].to_numpy(zero_copy_only=False)[rows].astype(np.int64)
    kinds, inv = np.unique(m_col << 32 | k_col, return_inverse=True)
    for j, mk in enumerate(kinds.tolist()):
        sub = rows if len(kinds) == 1 else rows[inv.reshape(-1) == j]
        if sub.size >= 2:
            yield mk >> 32, sub, [_list_rows(raw["_probe"], sub)], _list_rows(raw["_nd"], sub).max(axis=0)


def _networks_at(chunks: list[Chunk], wanted: dict[int, int]) -> dict[int, Network]:
    """The networks with the given indices (index → chunk), read again from their chunks."""
    by_chunk: dict[int, set[int]] = {}
    for idx, ch in wanted.items():
        by_chunk.setdefault(ch, set()).add(idx)
    out: dict[int, Network] = {}
    for ch, idxs in by_chunk.items():
        data = read_chunk(chunks[ch])
        for items, V, A, b, c in data.stacks:
            for t, item in enumerate(items):
                if item.index in idxs:
                    out[item.index] = item.net if isinstance(item.net, Network) else Network(V[t], A[t], b[t], c[t])
        for item in data.singles:
            if item.index in idxs and isinstance(item.net, Network):
                out[item.index] = item.net
    return out


def near_pairs(
    idx: np.ndarray,
    probes: np.ndarray | Sequence[np.ndarray],
    nd_max: np.ndarray,
    m: int,
    options: Options,
    chunk_of: Callable[[np.ndarray], np.ndarray],
    chunks: list[Chunk],
) -> list[tuple[int, int]]:
    """Pairs of distinct-digest networks of one shape that ``equivalent_approx`` accepts: ``idx`` the networks'
    indices, ``probes`` their probe values (rows in the order of ``idx``; one array or blocks of rows),
    ``nd_max`` the maxima of their scale quantities, ``chunk_of`` the chunks of rows (positions in ``idx``).

    Candidates come from the values at the probe points: for two networks accepted within (atol, rtol), the
    difference of their functions on the unit ball is at most
    √2·(n₁+n₂)·τ_κ·W + √2·(n₁+n₂)·τ_w·(T₁+T₂) + 2·τ_aff (each cluster's kink and the affine part are within
    their tolerances τ_κ, τ_aff; each neuron's hyperplane lies within (n₁+n₂)·τ_w of its cluster's first one),
    so no accepted pair is further apart than that bound (times √P) in probe space; every candidate is then
    decided by ``equivalent_approx`` itself."""
    from relusym._tolerance.approx import equivalent_approx

    if len(idx) < 2 or (options.atol == 0 and options.rtol == 0):
        return []
    T, tmax, cn, n, wmax = (float(x) for x in nd_max)
    atol, rtol = options.atol, options.rtol
    tol_kink = atol + rtol * max(cn, tmax)
    tol_aff = atol + rtol * 2 * (cn + T)
    tol_w = atol + rtol * wmax
    bound = math.sqrt(2) * 2 * n * (tol_kink * wmax + tol_w * 2 * T) + 2 * tol_aff
    P = (probes if isinstance(probes, np.ndarray) else probes[0]).shape[1]
    slack = 1e-12 * (n + m + 2) * (cn + T + 1.0)
    radius = math.sqrt(P) * (bound + slack)
    cand = close_pairs(probes, radius)
    if not len(cand):
        return []
    u = np.unique(cand)
    nets = _networks_at(chunks, dict(zip(idx[u].tolist(), np.asarray(chunk_of(u)).tolist(), strict=True)))
    pairs = []
    for i, j in cand.tolist():
        a, b = int(idx[i]), int(idx[j])
        if a in nets and b in nets and equivalent_approx(nets[a], nets[b], atol=atol, rtol=rtol):
            pairs.append((min(a, b), max(a, b)))
    return sorted(pairs)


def _gather(blocks: list[np.ndarray], starts: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The rows ``idx`` (numbered across the blocks, which begin at ``starts``) as one array."""
    if len(blocks) == 1:
        return np.asarray(blocks[0][idx])
    which = np.searchsorted(starts, idx, side="right") - 1
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(blocks) + 1))
    out = np.empty((len(idx), blocks[0].shape[1]), dtype=blocks[0].dtype)
    for t in np.nonzero(np.diff(bounds))[0].tolist():
        sel = order[bounds[t] : bounds[t + 1]]
        out[sel] = blocks[t][idx[sel] - starts[t]]
    return out


# The candidates of the grid (rows in the same or neighbouring cells of two coordinates) are first cut by the
# coordinate of third largest spread, copied into one array as the keys are computed: a pair within ``radius``
# differs by at most ``radius`` in each coordinate (that difference is exactly one of those the distance is
# computed from, and the distance's rounding, at most a few times dims·ε of it, is far below this factor's
# margin), so no pair the distance keeps is lost, and only the rows of the few left are gathered whole.  The
# rows lie in memory-mapped parts, one block a chunk: gathering two whole rows per candidate took 0.28 s for the
# 421,461 candidates of 3·10^6 networks of 8-64-1 (the candidates grow as the square of the rows).
_PRECUT = 1 + 1e-3

_SWEEP_PAIRS = 1 << 22  # the grid's candidate pairs at most (beyond: a k-d tree finds the close pairs)

_NEAR_JIT: dict[str, Any] = {}


def sweep_kernels() -> tuple[Any, Any] | None:
    """:func:`relusym._zoo._jit_near.cell_keys` and :func:`~relusym._zoo._jit_near.sweep_pairs` (compiled by numba,
    cached on disk), or None: only in a process that has loaded the compiled digest kernel (numba installed,
    ``RELUSYM_NO_JIT`` unset, a job large enough), as :func:`relusym._zoo._summary.probe_kernel`."""
    if "kernels" not in _NEAR_JIT:
        if not jit_loaded():
            return None
        try:
            from relusym._zoo._jit_near import cell_keys, sweep_pairs

            # the probe values as close_pairs passes them (read-only, :func:`readonly`): one version of cell_keys
            one = np.empty(1, dtype=np.float64)
            cell_keys(readonly(np.zeros((1, 2))), 0, 1, 0.0, 0.0, 1.0, 3, np.empty(1, dtype=np.int64), -1, one)
            kernels: Any = (cell_keys, sweep_pairs)
            sweep_pairs(np.zeros(2, dtype=np.int64), 3, np.empty((0, 2), dtype=np.int64), one, 1.0)
        except Exception:  # noqa: BLE001 - the numpy path is always there
            kernels = None
        _NEAR_JIT["kernels"] = kernels
    got: tuple[Any, Any] | None = _NEAR_JIT["kernels"]
    return got


def close_pairs(probes: np.ndarray | Sequence[np.ndarray], radius: float, compiled: bool | None = None) -> np.ndarray:
    """The pairs (i < j, as rows of an int array, sorted) of rows of ``probes`` (one 2-D array, or blocks of rows
    numbered one after the other) within Euclidean distance ``radius``.

    A grid over the two coordinates of largest spread, of cells no smaller than ``radius`` (widened by a relative
    1e-5, so that rounding cannot move a pair's cells more than one apart): two rows within ``radius`` lie in the
    same or neighbouring cells, so each row's partners are found among the rows sorted by cell; those pairs are
    then kept by their full distance.  Near-duplicate radii are small beside the spread of a zoo's probe values,
    so the neighbouring cells are nearly empty and this costs a sort (no k-d tree, whose import and build cost the
    client seconds on large zoos).  The candidates are cut by a third coordinate before their rows are compared
    (:data:`_PRECUT`); when the grid yields more than :data:`_SWEEP_PAIRS` of them (crowded cells, or a zoo of many
    millions), the compiled sweep applies that cut itself, and only beyond that does the k-d tree take over.  The
    cells' keys and the candidates come from :func:`sweep_kernels` where they are loaded (``compiled``: None, as
    loaded; False, the numpy path), else from numpy (the same pairs)."""
    blocks = [probes] if isinstance(probes, np.ndarray) else [x for x in probes if len(x)]
    N = sum(len(x) for x in blocks)
    if N < 2:
        return np.zeros((0, 2), dtype=np.int64)
    if blocks[0].shape[1] < 2 or not all(bool(np.isfinite(x).all()) for x in blocks):
        return _tree_pairs(blocks[0] if len(blocks) == 1 else np.concatenate(blocks), radius)
    starts = np.cumsum([0] + [len(x) for x in blocks])
    lo, hi = column_reduce(blocks, np.minimum), column_reduce(blocks, np.maximum)
    by_spread = np.argsort(hi - lo, kind="stable")[::-1]
    axes = by_spread[:2]
    size = max(radius * (1 + 1e-5), float((hi - lo)[axes].max()) / 2**30, 1e-300)
    kernels = sweep_kernels() if compiled is not False else None
    a0, a1 = int(axes[0]), int(axes[1])
    # floor is monotone: the largest cell of column 1, + 3 (two empty columns: the offset (+1, −1) of a cell in
    # column 0 finds nothing)
    n1 = int(np.floor((hi[a1] - lo[a1]) / size)) + 3
    key = np.empty(N, dtype=np.int64)
    c3 = int(by_spread[2]) if len(by_spread) > 2 else None
    third = np.empty(N, dtype=np.float64) if c3 is not None else None  # see _PRECUT
    c3_ = c3 if c3 is not None else -1
    for x, s in zip(blocks, starts.tolist(), strict=False):
        if kernels is not None:
            x64 = x if x.dtype == np.float64 and x.flags.c_contiguous else np.ascontiguousarray(x, dtype=np.float64)
            part = third[s : s + len(x)] if third is not None else np.empty(0)
            kernels[0](readonly(x64), a0, a1, float(lo[a0]), float(lo[a1]), size, n1, key[s : s + len(x)], c3_, part)
        else:  # the same float64 operations, block by block (a part's temporaries, not the zoo's)
            c0 = np.floor((x[:, a0].astype(np.float64) - lo[a0]) / size).astype(np.int64)
            c1 = np.floor((x[:, a1].astype(np.float64) - lo[a1]) / size).astype(np.int64)
            np.add(c0 * n1, c1, out=key[s : s + len(x)])
            if third is not None:
                third[s : s + len(x)] = x[:, c3]
    order = np.argsort(key)  # any order within a cell: the pairs are sorted at the end
    ks = key[order]
    runs = _runs(ks, n1, kernels)
    if runs is None and kernels is not None and third is not None:  # too many: cut in the sweep, see _PRECUT
        runs = _swept(ks, n1, kernels, third[order], radius * _PRECUT)
    if runs is None:
        return _tree_pairs(blocks[0] if len(blocks) == 1 else np.concatenate(blocks), radius)
    found: list[np.ndarray] = []
    for left, right in runs:
        a, b = order[left], order[right]
        if third is not None:  # a first cut on one more coordinate, see _PRECUT
            keep = np.abs(third[a] - third[b]) <= radius * _PRECUT
            a, b = a[keep], b[keep]
        d = np.linalg.norm(_gather(blocks, starts, a) - _gather(blocks, starts, b), axis=1)
        keep = d <= radius
        found.append(np.stack([np.minimum(a, b)[keep], np.maximum(a, b)[keep]], axis=1))
    pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def _runs(ks: np.ndarray, n1: int, kernels: Any) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The candidate pairs of the sorted cell keys ``ks`` as positions (left, right), in runs; None when there are
    more than :data:`_SWEEP_PAIRS`.  A row's candidates are half its neighbourhood: its own cell (the later rows)
    with the cell after it, and the three cells of the next column (cells are consecutive keys)."""
    if kernels is not None:
        return _swept(ks, n1, kernels, np.empty(0), 0.0)
    N = len(ks)
    pos = np.arange(N)
    runs = []
    total = 0
    for lo_off, hi_off in ((0, 1), (n1 - 1, n1 + 1)):
        start = pos + 1 if lo_off == 0 else np.searchsorted(ks, ks + lo_off, side="left")
        stop = np.searchsorted(ks, ks + hi_off, side="right")
        width = np.maximum(stop - start, 0)
        total += int(width.sum())
        if total > _SWEEP_PAIRS:
            return None
        if width.any():
            left = np.repeat(pos, width)
            runs.append((left, np.repeat(start - np.cumsum(width) + width, width) + np.arange(len(left))))
    return runs


def _swept(ks: np.ndarray, n1: int, kernels: Any, vals: np.ndarray, limit: float) -> list[Any] | None:
    """:func:`_runs` by the compiled sweep, its pairs cut by ``vals`` within ``limit`` when ``vals`` is not empty."""
    total = int(kernels[1](ks, n1, np.empty((0, 2), dtype=np.int64), vals, limit))  # counted, then written
    if total > _SWEEP_PAIRS:
        return None
    cand = np.empty((total, 2), dtype=np.int64)
    kernels[1](ks, n1, cand, vals, limit)
    return [(cand[:, 0], cand[:, 1])] if total else []


def _tree_pairs(probes: np.ndarray, radius: float) -> np.ndarray:
    """:func:`close_pairs` by a k-d tree over a random projection (distances shrink under it, so no pair is
    lost; the pairs found are then kept by their full distance)."""
    from scipy.spatial import cKDTree

    from relusym._tolerance.approx import project, projector

    Q = projector(probes.shape[1])
    tree = cKDTree(project(probes, Q))
    cand = tree.query_pairs(radius, output_type="ndarray")
    if len(cand):
        d = np.linalg.norm(probes[cand[:, 0]] - probes[cand[:, 1]], axis=1)
        cand = cand[d <= radius]
    pairs = np.asarray(cand, dtype=np.int64).reshape(-1, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]  # sorted, as the grid's (the tree's come in its order)
