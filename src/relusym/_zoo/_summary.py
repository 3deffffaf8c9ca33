"""The end of a zoo job, column by column: exact duplicate groups from the digests, near-duplicate clusters
from verified near pairs (tolerance mode, :mod:`relusym._zoo._near`), and the summary; and the probe values
of the near-duplicate filter, computed by the chunks' tasks."""

from __future__ import annotations

from typing import Any

import numpy as np

from relusym._base.rng import as_generator
from relusym._zoo._digest_jit import jit_loaded, readonly
from relusym._zoo._near import near_pairs, probe_sets
from relusym._zoo._sources import Chunk
from relusym._zoo._table import COLUMNS, SCHEMA, Options, public_schema

__all__ = ["finish_job", "group_codes", "probe_kernel", "probe_stack"]

# ----------------------------------------------------------------------------------------------------------
# the probe values of the near-duplicate filter (computed by the chunks' tasks, :mod:`relusym._zoo._run`)

_PROBE_SEED = 0x200_2026


def _probe_points(m: int, count: int) -> np.ndarray:
    """Fixed points of the closed unit ball of ℝ^m (the same on every machine)."""
    g = as_generator(_PROBE_SEED + m)
    X = g.standard_normal((count, m))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
    X *= g.random((count, 1)) ** (1.0 / m)
    return X


_PROBE_BLOCK = 128  # networks per block of the probe values: their float64 temporaries stay in cache


def probe_stack(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray, P: int) -> tuple[np.ndarray, np.ndarray]:
    """For each network of a stack (any float dtype, computed in float64): its values at the probe points
    (flattened P·k) and the scale quantities (T = Σ‖v_i‖‖(a_i, b_i)‖, max term, ‖c‖, n, max ‖(a_i, b_i)‖/‖a_i‖)
    of the near-duplicate filter.

    In a process that has loaded the compiled digest kernel, :mod:`relusym._zoo._jit_probe` computes them (float32 or
    float64 stacks).  Else the hidden layer's values come a block of networks at a time from one matrix product
    of all their rows (``A``'s rows against the probe points: one BLAS call per block, not one per network), so
    that the float64 temporaries of a block stay in cache; the norms come from the same float64 block."""
    B, n, m = A.shape
    k = V.shape[1]
    X = _probe_points(m, P)
    kernel = probe_kernel()
    if kernel is not None and B and len({x.dtype for x in (V, A, b, c)}) == 1 and V.dtype in (np.float32, np.float64):
        vals, nd = np.empty((B, P * k)), np.empty((B, 5))
        kernel(*(readonly(np.ascontiguousarray(x)) for x in (V, A, b, c)), X, vals, nd, _blas_shape(n, m))
        return vals, nd
    out = np.empty((B, k, P))
    an2 = np.empty((B, n))
    buf = np.empty((P, min(B, _PROBE_BLOCK) * n))
    for s in range(0, B, _PROBE_BLOCK):
        e = min(B, s + _PROBE_BLOCK)
        a = A[s:e].astype(np.float64)
        # the block's hidden values, probe-major (P × rows): adding b and the ReLU then run along long rows
        H = np.matmul(X, a.reshape(-1, m).T, out=buf[:, : (e - s) * n])
        H += b[s:e].reshape(-1)
        np.maximum(H, 0.0, out=H)
        np.matmul(V[s:e].astype(np.float64), H.reshape(P, e - s, n).transpose(1, 2, 0), out=out[s:e])
        np.einsum("bnm,bnm->bn", a, a, out=an2[s:e])
    c64 = c.astype(np.float64)
    vals = out.transpose(0, 2, 1) + c64[:, None, :]  # (B, P, k), the layout of the probe column
    V64 = V.astype(np.float64)
    h = np.sqrt(an2 + np.square(b, dtype=np.float64))  # ‖(a_i, b_i)‖
    an = np.sqrt(an2, out=an2)
    terms = np.sqrt(np.einsum("bkn,bkn->bn", V64, V64)) * h
    wn = np.divide(h, an, out=np.zeros_like(h), where=an > 0)
    nd = np.empty((B, 5))
    nd[:, 0] = terms.sum(axis=1)
    nd[:, 1] = terms.max(axis=1, initial=0.0)
    nd[:, 2] = np.sqrt(np.einsum("bk,bk->b", c64, c64))
    nd[:, 3] = float(n)
    nd[:, 4] = wn.max(axis=1, initial=0.0)
    return vals.reshape(B, -1), nd


def _blas_shape(n: int, m: int) -> bool:
    """Whether the compiled probe values (:mod:`relusym._zoo._jit_probe`) of networks of n neurons and m inputs
    come from BLAS, not from its loops (``python benchmarks/bench_zoo.py --probes``, CPU per network, loops
    against BLAS: 0.93× at 8-64-1, 1.2× at 16-64-4, 2.2× at 64-256-10, 3.6× at 784-128-10)."""
    return m >= 16 and n * m >= 1024


_PROBE_JIT: dict[str, Any] = {}


def probe_kernel() -> Any:
    """:func:`relusym._zoo._jit_probe.probe_values` (compiled by numba, cached on disk like the digest kernel), or
    None: only in a process that has loaded the compiled digest kernel (:mod:`relusym._zoo._digest_jit`: numba
    installed, ``RELUSYM_NO_JIT`` unset, and a job large enough), so that small jobs never import numba for it.
    About half the CPU time of the numpy path at 8-64-1 (2.1 µs a network against 5.6), a fifth at 784-128-10
    (97 against 462 µs, by BLAS)."""
    if "kernel" not in _PROBE_JIT:
        if not jit_loaded():
            return None
        try:
            from relusym._zoo._jit_probe import probe_values

            kernel: Any = probe_values
            for dtype in (np.float32, np.float64):  # compiled (first use) or loaded from numba's cache, now
                z = readonly(np.ones((1, 1, 1), dtype=dtype))  # the inputs as probe_stack passes them
                kernel(z, z, z[0], z[0], np.ones((1, 1)), np.empty((1, 1)), np.empty((1, 5)), False)
        except Exception:  # noqa: BLE001 - the numpy path is always there
            kernel = None
        _PROBE_JIT["kernel"] = kernel
    return _PROBE_JIT["kernel"]


# ----------------------------------------------------------------------------------------------------------
# the end of a job


def finish_job(raw: Any, chunks: list[Chunk], options: Options) -> tuple[Any, dict[str, Any]]:
    """The table (public columns, with the exact groups and near clusters) and the summary, column by column:
    groups are the digests' codes in order of first appearance (rows by index), near clusters the connected
    components of the groups joined by verified near pairs, numbered by their smallest group."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from relusym._zoo._categories import CATEGORIES

    raw, index = _by_index(raw)
    N = raw.num_rows
    ok = np.asarray(pc.fill_null(pc.equal(raw["status"], "ok"), False).to_numpy(zero_copy_only=False), dtype=bool)
    okrows = np.nonzero(ok)[0]
    ok_digests = raw["digest"] if ok.all() else raw["digest"].take(pa.array(okrows))
    codes, first = group_codes(ok_digests)
    G = len(first)
    singletons = G == okrows.size  # every network its own group (most zoos): codes and first are 0, 1, …
    if okrows.size == N:
        group = codes
    else:
        group = np.full(N, -1, dtype=np.int64)
        group[okrows] = codes
    rep = okrows if singletons else okrows[first]
    counts = np.bincount(codes, minlength=G)
    size = ok.astype(np.int64) if singletons else np.where(ok, counts[np.maximum(group, 0)] if G else 0, 0)
    # near-duplicate clusters: union-find over the groups, joined by verified pairs of their representatives
    probe_len = pc.list_value_length(raw["_probe"]).to_numpy(zero_copy_only=False)
    with_probe = rep[np.nan_to_num(probe_len[rep], nan=0) > 0] if G else rep
    pairs: list[tuple[int, int]] = []
    if with_probe.size >= 2 and (options.atol != 0 or options.rtol != 0):
        chunk_col = raw["_chunk"]
        for m, rows, probes, nd_max in probe_sets(raw, with_probe):

            def chunk_of(u: np.ndarray, rows: np.ndarray = rows) -> np.ndarray:
                return np.asarray(chunk_col.take(pa.array(rows[u])).to_numpy())

            found = near_pairs(index[rows], probes, nd_max, m, options, chunk_of, chunks)
            if found:
                row_of_index = {int(index[r]): int(r) for r in rows}
                pairs += [(row_of_index[a_], row_of_index[b_]) for a_, b_ in found]
    roots = cluster_of_group = np.zeros(0, dtype=np.int64)  # no near pairs (most zoos): each group its own cluster
    if pairs:
        parent = np.arange(G)
        for ra, rb in pairs:
            ga, gb = _root(parent, int(group[ra])), _root(parent, int(group[rb]))
            if ga != gb:
                parent[max(ga, gb)] = min(ga, gb)
        while not np.array_equal(parent, parent[parent]):
            parent = parent[parent]
        roots, cluster_of_group = np.unique(parent, return_inverse=True)
    # without near pairs each group is its own cluster: near is group (-1 on error rows, masked)
    near = np.where(ok, cluster_of_group.reshape(-1)[np.maximum(group, 0)] if G else 0, -1) if pairs else group
    public = [name for name, _, _ in COLUMNS if name not in ("group", "group_size", "near_cluster")]
    cols = {name: raw[name] for name in public}
    nok = ~ok
    cols["group"] = pa.array(group, type=pa.int64(), mask=nok)
    cols["group_size"] = pa.array(size.astype(np.int64, copy=False), type=pa.int64(), mask=nok)
    cols["near_cluster"] = pa.array(near.astype(np.int64, copy=False), type=pa.int64(), mask=nok)
    schema = public_schema(options)
    table = pa.Table.from_pydict(cols, schema=schema)
    # summary
    source = raw["source"]
    multi = np.nonzero(counts > 1)[0]
    exact = []
    if multi.size:
        by_group = okrows[np.argsort(group[okrows], kind="stable")]
        starts = np.concatenate([[0], np.cumsum(counts)])
        digest_of = dict(zip(multi.tolist(), raw["digest"].take(pa.array(rep[multi])).to_pylist(), strict=True))
        for g in multi.tolist():
            rows = by_group[starts[g] : starts[g + 1]]
            exact.append(
                {
                    "group": g,
                    "digest": digest_of[g],
                    "size": int(counts[g]),
                    "sources": source.take(pa.array(rows)).to_pylist(),
                }
            )
    near_groups = []
    if pairs:
        n_groups = np.bincount(cluster_of_group.reshape(-1), minlength=roots.size)
        for cid in np.nonzero(n_groups > 1)[0].tolist():
            rows = np.nonzero(near == cid)[0]
            near_groups.append(
                {
                    "cluster": cid,
                    "size": int(rows.size),
                    "distinct_digests": int(n_groups[cid]),
                    "sources": source.take(pa.array(rows)).to_pylist(),
                }
            )
    okt = raw.select(["fibre_type", "generic", "width"])  # not the probe lists: a filter would copy them too
    okt = okt if ok.all() else okt.filter(pa.array(ok))

    def counted(col: str) -> dict[str, int]:
        vc = pc.value_counts(okt[col].combine_chunks().drop_null()).to_pylist() if okt.num_rows else []
        return {x["values"]: int(x["counts"]) for x in vc}

    fib, gen = counted("fibre_type"), counted("generic")
    widths = _width_counts(okt["width"]) if okt.num_rows else {}
    bad = np.nonzero(~ok)[0]
    # (a take from the parts' chunks, even of no rows, combined the column first: 51 ms for 10^6 sources)
    err_src = source.take(pa.array(bad)).to_pylist() if bad.size else []
    err_msg = raw["error"].take(pa.array(bad)).to_pylist() if bad.size else []
    summary = {
        "schema": SCHEMA,
        "networks": N,
        "ok": int(ok.sum()),
        "errors": int(N - ok.sum()),
        "distinct_functions": G,
        "tolerance": {"atol": float(options.atol), "rtol": float(options.rtol)},
        "exact_duplicate_groups": exact,
        "near_duplicate_groups": near_groups,
        "fibre_types": {c: fib[c] for c in CATEGORIES if c in fib} if options.fibre else None,
        "generic": {g: gen[g] for g in ("true", "false", "undecided") if g in gen} if options.fibre else None,
        "fibre_search": bool(options.search) if options.fibre else None,
        "undecided_rate": (
            {
                "generic": gen.get("undecided", 0) / max(1, sum(gen.values())),
                "fibre_type": fib.get("undecided", 0) / max(1, sum(fib.values())),
                "width": widths.get("undecided", 0) / max(1, sum(widths.values())),
            }
            if options.fibre
            else None
        ),
        "widths": widths,
        "error_rows": [{"source": s_, "error": e_} for s_, e_ in zip(err_src, err_msg, strict=True)],
    }
    return table, summary


def _by_index(raw: Any) -> tuple[Any, np.ndarray]:
    """The rows sorted by index, and their indices: the parts come in chunk order, each sorted, so the rows are
    usually in order already (no sort).  The columns stay in their parts' chunks (the table written is the same;
    copying the probe lists into one buffer cost more than the groups)."""
    index = raw["index"].to_numpy()
    if raw.num_rows > 1 and not bool(np.all(index[1:] > index[:-1])):
        raw = raw.sort_by("index")
        index = raw["index"].to_numpy()
    return raw, index


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _fixed_width(arr: Any) -> np.ndarray | None:
    """The strings of a pyarrow string array without nulls as a (rows × width) uint8 view of its buffer, when
    they all have one width of at least 16 bytes; else None."""
    import pyarrow as pa

    N = len(arr)
    if arr.type != pa.string() or arr.null_count or N == 0:
        return None
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32, count=N + 1, offset=4 * arr.offset)
    width = int(offsets[1] - offsets[0])
    if width < 16 or not bool(np.all(np.diff(offsets) == width)):
        return None
    return np.frombuffer(buffers[2], dtype=np.uint8, count=N * width, offset=int(offsets[0])).reshape(N, width)


def _keys(digests: Any) -> np.ndarray | None:
    """64 bits of each digest's first 16 bytes, chunk by chunk (the strings are not copied), when every chunk
    is a fixed-width matrix (:func:`_fixed_width`) of one width; else None."""
    keys, widths = [], set()
    for ch in getattr(digests, "chunks", [digests]):
        if len(ch) == 0:
            continue
        data = _fixed_width(ch)
        if data is None:
            return None
        widths.add(data.shape[1])
        words = np.ascontiguousarray(data[:, :16]).view(np.uint64)
        keys.append(words[:, 0] * _MIX ^ words[:, 1])
    return np.concatenate(keys) if keys and len(widths) == 1 else None


def _width_counts(col: Any) -> dict[str, int]:
    """How many rows of the width column (a chunked int32 column, nulls undecided) have each width, by width, and
    ``undecided``: counted chunk by chunk on the chunks' values in place (widths are small non-negative integers),
    not through a float copy of the column with NaNs and a sort (30 against 3 ms at 10^6 rows)."""
    counts = np.zeros(0, dtype=np.int64)
    for chunk in col.chunks:
        values = chunk.drop_null().to_numpy() if chunk.null_count else chunk.to_numpy()
        if values.size:
            c = np.bincount(values.astype(np.int64, copy=False))
            if c.size > counts.size:
                c[: counts.size] += counts
                counts = c
            else:
                counts[: c.size] += c
    out = {str(w): int(counts[w]) for w in np.nonzero(counts)[0].tolist()}
    if col.null_count:
        out["undecided"] = int(col.null_count)
    return out


def group_codes(digests: Any) -> tuple[np.ndarray, np.ndarray]:
    """For a pyarrow string array or chunked array without nulls: each row's code (equal codes iff equal strings,
    numbered 0, 1, … in order of first appearance) and the first row of each code.

    The digests of a zoo have one length (64 hex digits): their bytes are then a fixed-width matrix, keyed by
    64 bits of their first 16 characters (read chunk by chunk, :func:`_keys`): when the keys are all distinct
    (most zoos), so are the digests, and one sort of the keys settles it; else they are grouped by one integer
    sort and every row is compared with its key's first row byte for byte, so a collision of keys (distinct
    digests, equal keys) is detected and the strings are grouped by a hash table instead
    (``pyarrow.compute.dictionary_encode``, which numbers the same way and cost the client five times as much)."""
    import pyarrow.compute as pc

    N = len(digests)
    if N == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = _keys(digests)
    if key is not None:
        ordered = np.sort(key)
        if not bool(np.any(ordered[1:] == ordered[:-1])):
            # distinct keys, so distinct digests (most zoos: one sort, a third of the general path's time)
            every = np.arange(N, dtype=np.int64)
            return every, every.copy()
    arr = digests.combine_chunks() if hasattr(digests, "combine_chunks") else digests
    data = _fixed_width(arr) if key is not None else None
    if key is not None and data is not None:
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        if np.array_equal(data, data[first[inverse.reshape(-1)]]):
            order = np.argsort(first, kind="stable")
            rank = np.empty(len(first), dtype=np.int64)
            rank[order] = np.arange(len(first))
            return rank[inverse.reshape(-1)], first[order].astype(np.int64)
    enc = pc.dictionary_encode(pc.fill_null(arr, ""))
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    _, first = np.unique(codes, return_index=True)
    return codes, first.astype(np.int64)


def _root(parent: np.ndarray, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = int(parent[x])
    return x
