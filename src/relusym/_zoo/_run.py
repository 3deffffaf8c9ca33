"""Running a zoo job: the work of one chunk (read, digest, width, fibre), its part, the executors, resuming,
and the final table with exact duplicate groups and near-duplicate clusters."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.progress import progress_bar
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym._zoo._digest import network_digest, stack_digests
from relusym._zoo._digest_jit import JIT_WORK, jit_available
from relusym._zoo._jobs import PartsFolder, Runner, owns_folder, part_name, write_outputs, write_part
from relusym._zoo._sources import Chunk, Item, item_indices, item_sources, plan_job, read_chunk, stack_shapes
from relusym._zoo._stream import TableStream, parquet_options
from relusym._zoo._summary import finish_job, probe_kernel, probe_stack
from relusym._zoo._table import COLUMNS, SCHEMA, Options, ZooResult, part_table, public_schema, table_schema
from relusym.errors import BudgetExceededError, InvalidNetworkError, UnsupportedModelError

__all__ = [
    "SCHEMA",
    "Options",
    "PartWritten",
    "ZooResult",
    "run_chunk",
    "run_chunk_part",
    "planned_shapes",
    "run_job",
    "COLUMNS",
]  # the table's names re-exported for zoo.py


# ----------------------------------------------------------------------------------------------------------
# one chunk


_CERTIFY_MAX_N = 64  # the certificate of no hidden flips in the default fibre column: an n×n LU modulo p, n ≤ 64


def _certifiable(m: int, n: int, k: int) -> bool:
    """Whether the default fibre column certifies the absence of hidden flips (an n×n minor of the flip matrix
    modulo a prime): possible when n ≤ km, and cheap beside the digest when n ≤ 64 (larger n: on request)."""
    return n <= k * m and n <= _CERTIFY_MAX_N


def _cheap_fibre(net: Network, unmixed: bool | None, class_a: bool | None) -> dict[str, Any]:
    """The fibre columns decided in bounded time per network (no search; docs/math/fibres.md):

    * outside class A (G-a or G-b fails: a dead, null or constant neuron, two proportional rows) θ is not
      generic; when moreover no hyperplane class carries neurons of both orientations (``unmixed``), its own
      configuration has cost 0, w = N < n and the fibre has dimension N + (n − N)δ > 0: "positive-dimensional";
    * in class A, (G-c) holds when the rows vec(v_i a_iᵀ) are certified independent (an n×n minor nonsingular
      modulo a prime, possible when n ≤ km; tried when n ≤ 64, :func:`_certifiable`): then θ is generic, its
      only flip set ∅;
    * everything else (hidden flips possible, mixed classes outside class A) is "undecided" until searched.

    ``unmixed`` and ``class_a`` come from the stack's digests; None: from θ's analysis."""
    from relusym._core.analysis import Analysis

    an = Analysis(net)
    if class_a is None:
        from relusym._fibre.genericity import generic_conditions

        ga, _, gb, _ = generic_conditions(an)
        class_a = ga and gb
    if unmixed is None:
        unmixed = not an.mixed
    if not class_a:
        return {"generic": "false", "fibre_type": "positive-dimensional" if unmixed else "undecided"}
    from relusym._fibre.flips import flips_certified_absent

    if _certifiable(net.m, net.n, net.k) and flips_certified_absent(an):
        return {"generic": "true", "fibre_type": "generic", "flip_sets": 0, "flips_complete": True}
    return {"generic": "undecided", "fibre_type": "undecided"}


def _analyse(net: Network, width: int | None, options: Options, class_a: bool | None = None) -> dict[str, Any]:
    """Width (when it needs the search) and fibre columns of one valid network; ``width`` the digests' width
    (−1: a mixed class; None: unknown) and ``class_a`` whether G-a and G-b hold, when the digests know them."""
    from relusym._fibre.width import minimal_width

    row: dict[str, Any] = {}
    unmixed = None if width is None else width >= 0  # no class carries neurons of both orientations
    if width is None or width < 0:
        try:
            width = minimal_width(net, budget=options.budget, progress=False)
        except BudgetExceededError:
            width = -1
    row["width"] = width if width >= 0 else None
    if options.fibre and not options.search:
        row.update(_cheap_fibre(net, unmixed, class_a))
    elif options.fibre:
        from relusym._fibre.fiber import fiber
        from relusym._zoo._categories import fibre_category

        fb = fiber(net, budget=options.budget, progress=False)  # the zoo's own bar is the only one
        row["generic"] = {True: "true", False: "false", None: "undecided"}[fb.generic]
        row["fibre_type"] = fibre_category(fb)
        if fb.flips is not None:
            row["flip_sets"] = len([T for T in fb.flips if T])
            row["flips_complete"] = bool(fb.flips_complete)
        if row["width"] is None and fb.width is not None:
            row["width"] = int(fb.width)
    return row


def _deep_row(item: Item, chunk: Chunk, net: MLP) -> dict[str, Any]:
    """A network with two or more hidden layers: n is its number of hidden units, the digest that of its deep
    normal form (equal digests: the same function; the converse may fail, see docs/math/deep.md); width, fibre
    and near-duplicate columns do not apply (null; its near cluster is its exact group)."""
    row: dict[str, Any] = {
        "index": item.index,
        "source": item.source,
        "status": "ok",
        "m": net.m,
        "n": sum(net.hidden_widths),
        "k": net.k,
        "_chunk": chunk.index,
        "_probe": [],
        "_nd": [],
    }
    try:
        from relusym._deep.canonical import deep_normal_form

        row["digest"] = deep_normal_form(net).form.digest()
    except Exception as exc:  # noqa: BLE001 - a failing network is that network's error row
        row.update(status="error", error=f"{type(exc).__name__}: {exc}")
    return row


def _error_row(item: Item, chunk: Chunk, msg: str, shape: tuple[int, int, int] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "index": item.index,
        "source": item.source,
        "status": "error",
        "error": msg,
        "_chunk": chunk.index,
    }
    if shape is not None:
        row["m"], row["n"], row["k"] = shape
    return row


# A task whose stacks hold this many weights loads the compiled digest kernel (when installed) before its first
# digest, instead of after its process's first 2^24 weights (_digest_jit): an eighth of the default task of a
# shard (2^24 weights, :func:`relusym._zoo._sources.auto_rows`, whose rows are a little under it), so the default
# tasks of any shard cut by weight (not by the 1/16 bound) load it first; the numpy path's first 2^24 weights
# (about 1 s of CPU time at 8-64-1, twice the kernel's time on them) are saved in each process.
_EAGER_JIT = 1 << 21


_KERNELS: dict[str, bool] = {}


def _load_kernels() -> None:
    """Load the compiled kernels of the digests and of the probe values in this process (when numba is installed
    and ``RELUSYM_NO_JIT`` unset), for float32 and float64 stacks: numba's first call of a kernel loads it from
    its cache (about 0.6 s of CPU time, once per process), which a forked worker inherits when done before.  Once
    per process (a forked worker inherits that it was done)."""
    if _KERNELS.get("loaded") or not jit_available():
        return
    _KERNELS["loaded"] = True
    for dtype in (np.float32, np.float64):
        one = np.ones((1, 1, 1), dtype=dtype)
        stack_digests(one, one, one[0], one[0])
    probe_kernel()


def run_chunk(chunk: Chunk, options: Options) -> Any:
    """The part table of one chunk (public columns without the global ones, plus private columns for the
    near-duplicate search).  Runs in a worker; reads the chunk's data itself; never raises for bad networks."""
    data = read_chunk(chunk)
    rows: list[dict[str, Any]] = []
    parts: list[Any] = []
    if sum(x.size for _, *arrays in data.stacks for x in arrays) >= _EAGER_JIT:
        _load_kernels()  # see _EAGER_JIT
    for items, V, A, b, c in data.stacks:
        try:
            sd = stack_digests(V, A, b, c)
        except Exception as exc:  # noqa: BLE001 - arrays no network can have: one error row each, not the job's end
            msg = exc.args[0] if isinstance(exc, InvalidNetworkError) and exc.args else f"{type(exc).__name__}: {exc}"
            rows += [_error_row(item, chunk, str(msg)) for item in items]
            continue
        parts.append(_stack_part(items, chunk, sd, (V, A, b, c), options))
    for item in data.singles:
        if item.error is not None or item.net is None:
            rows.append(_error_row(item, chunk, item.error or "no network"))
            continue
        if isinstance(item.net, MLP):
            rows.append(_deep_row(item, chunk, item.net))
            continue
        net = item.net
        row = {
            "index": item.index,
            "source": item.source,
            "status": "ok",
            "m": net.m,
            "n": net.n,
            "k": net.k,
            "_chunk": chunk.index,
        }
        try:
            row["digest"] = network_digest(net)
            Vf, Af, bf, cf = net.to_float(np.float64)
            p, q = probe_stack(Vf[None], Af[None], bf[None], cf[None], options.probes)
            row["_probe"], row["_nd"] = p[0].tolist(), q[0].tolist()
            row.update(_analyse(net, None, options))
        except Exception as exc:  # noqa: BLE001
            row.update(status="error", error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    import pyarrow as pa

    table = pa.concat_tables([*parts, part_table(rows)]) if parts else part_table(rows)
    return table.sort_by("index") if len(parts) + bool(rows) > 1 else table


@dataclass(frozen=True)
class PartWritten:
    """What a parallel task returns when it wrote its part itself: the part's rows (the table stays on disk)."""

    rows: int


def run_chunk_part(chunk: Chunk, options: Options, part: str | None, fingerprint: str) -> Any:
    """:func:`run_chunk` as a parallel task: the part written by the task itself when the job's parts folder is
    visible here (:func:`owns_folder`), so that the client receives a few bytes per task instead of the table
    (about 230 bytes per network; on a Dask cluster, receiving them cost the client's event loop 1.6 s of CPU
    time per 200,000 networks, more than reading the parts back from disk); else the table."""
    table = run_chunk(chunk, options)
    if part is not None and owns_folder(Path(part).parent, fingerprint):
        write_part(table, Path(part))
        return PartWritten(table.num_rows)
    return table


def _stack_part(items: Sequence[Item], chunk: Chunk, sd: Any, arrays: tuple[np.ndarray, ...], options: Options) -> Any:
    """The part table of the networks of one stack, column by column: digests, widths and (by default) the
    fibre columns come vectorized from :func:`stack_digests`; only the networks that need more (a width search
    for a mixed class, the certificate of no hidden flips in class A when n ≤ km, the fibre searches on
    request, a network outside the vectorized path) are analysed one by one."""
    import pyarrow as pa

    V, A, b, c = arrays
    B = len(items)
    k, n, m = V.shape[1], V.shape[2], A.shape[2]
    ok = np.array([d is not None for d in sd.digest], dtype=bool)
    good = np.nonzero(ok)[0]
    P = options.probes
    if good.size:
        if good.size == B:
            probes, nd = probe_stack(V, A, b, c, P)
        else:
            probes, nd = probe_stack(V[good], A[good], b[good], c[good], P)
    else:
        probes, nd = np.zeros((0, P * k)), np.zeros((0, 5))
    every = good.size == B
    status: list[str] = [] if every else ["ok" if x else "error" for x in ok.tolist()]
    error: list[str | None] = (
        [] if every else [None if x else (sd.error[t] or "invalid network") for t, x in enumerate(ok.tolist())]
    )
    width = np.where(ok, sd.width, -1)
    generic: list[str | None] = [None] * B
    ftype: list[str | None] = [None] * B
    flips: list[int | None] = [None] * B
    complete: list[bool | None] = [None] * B
    fast = np.asarray(sd.fast, dtype=bool)
    class_a = np.asarray(sd.class_a, dtype=bool) if sd.class_a is not None else np.zeros(B, dtype=bool)
    need = ok & (width < 0)
    if options.fibre and not options.search:
        certify = _certifiable(m, n, k)
        need |= ok & (~fast | (class_a & certify))
        for t in np.nonzero(ok & fast & ~need)[0].tolist():  # decided by the digests alone
            if class_a[t]:
                generic[t], ftype[t] = "undecided", "undecided"
            else:
                generic[t], ftype[t] = "false", "positive-dimensional"
    elif options.fibre:
        need |= ok
    analysed = bool(need.any()) or options.fibre
    if analysed and every:  # the lists filled below, entry by entry
        status, error = ["ok"] * B, [None] * B
    for t in np.nonzero(need)[0].tolist():
        item = items[t]
        net = item.net if isinstance(item.net, Network) else Network(V[t], A[t], b[t], c[t])
        try:
            res = _analyse(net, int(sd.width[t]) if fast[t] else None, options, bool(class_a[t]) if fast[t] else None)
        except Exception as exc:  # noqa: BLE001 - a failing analysis is that network's error, not the job's
            status[t], error[t] = "error", f"fibre analysis failed: {type(exc).__name__}: {exc}"
            continue
        width[t] = res["width"] if res.get("width") is not None else -1
        generic[t], ftype[t] = res.get("generic"), res.get("fibre_type")
        flips[t], complete[t] = res.get("flip_sets"), res.get("flips_complete")
    lengths = np.zeros(B, dtype=np.int32)
    lengths[good] = P * k
    offsets = np.zeros(B + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    nd_off = np.zeros(B + 1, dtype=np.int32)
    np.cumsum(np.where(ok, 5, 0).astype(np.int32), out=nd_off[1:])
    null = pa.array(~ok)
    schema = table_schema(private=True)
    cols = {
        "index": pa.array(item_indices(items), type=pa.int64()),
        "source": item_sources(items),
        "status": pa.array(status, type=pa.string()) if status else pa.repeat(pa.scalar("ok"), B),
        "error": pa.array(error, type=pa.string()) if error else pa.nulls(B, pa.string()),
        "m": pa.array(np.full(B, m, dtype=np.int32)),
        "n": pa.array(np.full(B, n, dtype=np.int32)),
        "k": pa.array(np.full(B, k, dtype=np.int32)),
        "digest": pa.array(sd.digest, type=pa.string()),
        "width": pa.array(width.astype(np.int32), mask=width < 0),
        "generic": pa.array(generic, type=pa.string()) if analysed else pa.nulls(B, pa.string()),
        "fibre_type": pa.array(ftype, type=pa.string()) if analysed else pa.nulls(B, pa.string()),
        "flip_sets": pa.array(flips, type=pa.int32()) if analysed else pa.nulls(B, pa.int32()),
        "flips_complete": pa.array(complete, type=pa.bool_()) if analysed else pa.nulls(B, pa.bool_()),
        "_chunk": pa.array(np.full(B, chunk.index, dtype=np.int64)),
        "_probe": pa.ListArray.from_arrays(pa.array(offsets), pa.array(probes.ravel()), mask=null),
        "_nd": pa.ListArray.from_arrays(pa.array(nd_off), pa.array(nd.ravel()), mask=null),
    }
    return pa.Table.from_pydict(cols, schema=schema)


# ----------------------------------------------------------------------------------------------------------
# the job


def _written(parts: PartsFolder | None, chunk: Chunk, options: Options) -> Any:
    """The part a worker wrote itself, read back; computed here when this client does not see it (a worker that
    saw a folder of the same name and job on another file system)."""
    if parts is not None and parts.has(chunk.index):
        return parts.read(chunk.index)
    table = run_chunk(chunk, options)
    if parts is not None:
        parts.write(chunk.index, table)
    return table


_PLAN_FILES = 2048  # files per planning task: the header reads of a folder's .npz files, on the job's workers


def planned_shapes(paths: list[str]) -> str:
    """:func:`stack_shapes` as a planning task: its answer as one JSON text (a list of shapes and nulls).  Dask
    serializes a returned list element by element; a folder of 20,000 files (ten tasks of 2,048 answers) took
    0.55-0.59 s of planning on a local cluster that way against 0.23-0.25 s as text (and 0.035 s a task either
    way on the worker)."""
    return json.dumps([list(s) if s is not None else None for s in stack_shapes(paths)])


def _unpacked(text: str) -> list[tuple[int, ...] | None]:
    """The shapes of :func:`planned_shapes`'s text (the JSON of a planning task relusym ran itself)."""
    return [tuple(int(x) for x in s) if s is not None else None for s in json.loads(text)]


def _shapes_on(runner: Runner) -> Callable[[list[str]], list[tuple[int, ...] | None]]:
    """How the planning of a folder finds its stacked shards: on the job's process pool, local Dask cluster,
    executor or Dask scheduler (the runner of its chunks, started here then) when it has more than
    :data:`_PLAN_FILES` ``.npz`` / ``.safetensors`` files (one header read each: serial in the client, they were
    half of its time on a folder of 20,000 files, and on a cluster the files are the workers' to read); else
    here.  A pool or a local cluster started here forks its workers after the client loaded the kernels when the
    files' weights would make each worker load them (:func:`_each_pays`).  The shapes, and so the chunks and the
    job's fingerprint, are the same wherever they are read."""
    if not runner.parallel:
        return stack_shapes

    def shapes(paths: list[str]) -> list[tuple[int, ...] | None]:
        if len(paths) <= _PLAN_FILES:
            return stack_shapes(paths)
        forks = runner.workers or runner.dask_local  # a pool or a local cluster, started here for these tasks
        if forks and not runner.started and _file_weights(paths) >= JIT_WORK * forks:
            _load_kernels()  # before its workers fork, as _plan would before the chunks (_each_pays)
        batches = [(paths[s : s + _PLAN_FILES],) for s in range(0, len(paths), _PLAN_FILES)]
        found: list[list[tuple[int, ...] | None]] = [[] for _ in batches]
        key = hashlib.sha256("\0".join(paths).encode()).hexdigest()[:16]
        for t, res in runner.run(planned_shapes, batches, key=f"zoo-plan-{key}"):
            found[t] = _unpacked(res)
        return [x for part in found for x in part]

    return shapes


def _eager(chunk: Chunk, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Whether ``chunk`` is a task of a stacked shard with :data:`_EAGER_JIT` weights or more (its shape's A is
    B×n×m; V and c are not counted, as in :func:`relusym._zoo._sources.auto_rows`).  The client of such a job
    loads the compiled kernel before its workers start: a process pool's workers and a local Dask cluster's are
    forked from it on Linux (under Python 3.11; see :func:`relusym._zoo._jobs.local_start_method`) and inherit
    the loaded kernel, so that the job pays numba's import and the kernel's load once, not once per worker (a
    spawned worker or one of a fork server loads it itself, on its first task, as before)."""
    shape = shapes.get(chunk.paths[0]) if chunk.kind == "shard" and chunk.paths else None
    return shape is not None and chunk.size * int(shape[1]) * (int(shape[2]) + 1) >= _EAGER_JIT


_SAMPLE = 64  # files whose sizes estimate the weights of a folder's model files (_file_weights)


def _file_weights(paths: Sequence[str]) -> int:
    """An estimate of the weights held by the model files ``paths``: their bytes / 4 (float32 weights; headers and
    float64 weights count more, float16 less), from the sizes of at most :data:`_SAMPLE` of them evenly spread (a
    ``stat`` each), scaled to all.  It only chooses when the kernels load (:func:`_each_pays`), never a result."""
    if not paths:
        return 0
    sample = list(paths[:: max(1, len(paths) // _SAMPLE)][:_SAMPLE])
    size = 0
    for p in sample:
        try:
            size += os.stat(p).st_size
        except OSError:
            pass
    return size * len(paths) // (4 * len(sample))


def _each_pays(chunks: list[Chunk], shapes: dict[str, tuple[int, ...]], runner: Runner) -> bool:
    """Whether the job's stacked shards and model files hold so many weights that every process of the run (the
    client of a serial run, each worker of a pool or local cluster relusym starts, sharing them evenly) digests
    at least ``JIT_WORK`` (2^24) of them, so that each would load the compiled kernel anyway
    (:func:`relusym._zoo._digest_jit.jit_digests`): then it is loaded before the first task, as :func:`_eager`
    does, and the numpy path's first 2^24 weights are saved in each process (about 0.4-0.7 s of CPU time: a
    shard of 1,250 networks of 64-256-10 has tasks of 79, each below :data:`_EAGER_JIT`; a folder of 20,000
    files of 16-64-4 took 4.3 s serially with the kernels loaded first, 4.9-5.1 s without).  A shard's weights
    counted as in :func:`_eager`, a folder's files' estimated from their sizes (:func:`_file_weights`)."""
    weights = _file_weights([p for c in chunks if c.kind == "files" for p in c.paths])
    for c in chunks:
        shape = shapes.get(c.paths[0]) if c.kind == "shard" and c.paths else None
        if shape is not None:
            weights += c.size * int(shape[1]) * (int(shape[2]) + 1)
    return weights >= JIT_WORK * max(1, runner.workers or 0, runner.dask_local or 0)


def _fingerprint(chunks: list[Chunk], options: Options) -> str:
    d = {"schema": SCHEMA, "options": asdict(options), "chunks": [c.describe() for c in chunks]}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()


def _plan(source: Any, runner: Runner, chunk_size: int | None, files_per_chunk: int | None) -> tuple[list[Chunk], int]:
    """A job's chunks and skipped files, a folder's headers read on ``runner``; the kernels loaded first where
    every process would load them (:func:`_eager`, :func:`_each_pays`)."""
    probe = _shapes_on(runner)
    found: dict[str, tuple[int, ...]] = {}

    def shapes(paths: list[str]) -> list[tuple[int, ...] | None]:
        res = probe(paths)
        found.update((p, x) for p, x in zip(paths, res, strict=True) if x is not None)
        return res

    chunks, skipped = plan_job(source, chunk_size=chunk_size, files_per_chunk=files_per_chunk, shapes=shapes)
    if not runner.started and runner.executor is None and runner.scheduler is None:
        if any(_eager(c, found) for c in chunks) or _each_pays(chunks, found, runner):
            _load_kernels()
    return chunks, skipped


def _run_chunks(
    source: Any,
    output: str | os.PathLike[str] | None,
    runner: Runner,
    options: Options,
    chunk_size: int | None,
    files_per_chunk: int | None,
    resume: bool,
    progress: bool | None,
    on_part: Callable[[int], None] | None,
) -> tuple[Any, list[Chunk], int, PartsFolder | None, TableStream | None]:
    """The planning and the chunks of a job on ``runner``: the rows of all chunks (the parts of an earlier run
    too, when resumed), the chunks, the skipped files, the parts folder and the table streamed to ``output`` as
    the parts came (:mod:`relusym._zoo._stream`; discarded if this raises)."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401 - imported before the runner forks its workers: see below
    import pyarrow.parquet  # noqa: F401

    # the client needs pyarrow.compute and pyarrow.parquet anyway (the table's end and its write); imported
    # before a pool or a local cluster forks its workers, they are there too (each worker's first task imported
    # them: 0.1 s of CPU time per worker, on the path to its first part)
    chunks, skipped = _plan(source, runner, chunk_size, files_per_chunk)
    key = _fingerprint(chunks, options)
    out = Path(output) if output is not None else None
    parts: PartsFolder | None = None
    stream: TableStream | None = None
    tables: dict[int, Any] = {}
    if out is not None:
        if not (out.parent if str(out.parent) else Path(".")).is_dir():
            raise InvalidNetworkError(f"cannot write {out}: folder {out.parent} does not exist")
        parts = PartsFolder(out, schema=SCHEMA, fingerprint=key, chunks=len(chunks), resume=resume)
        if resume:  # the parts of an earlier run (mapped: nothing is read yet)
            size = {c.index: c.size for c in chunks}
            tables = {i: parts.read(i) for i in sorted(parts.done(list(size), rows=size.__getitem__))}
        names = table_schema(private=False).names
        writing = parquet_options(names, _DISTINCT, _SEQUENTIAL)
        stream = TableStream(out, public_schema(options), [c.index for c in chunks], writing)
    try:
        if stream is not None:
            for i, table in tables.items():
                stream.add(i, table)
        _collect(chunks, tables, runner, options, key, parts, stream, progress, on_part)
    except (InvalidNetworkError, UnsupportedModelError):
        # a refusal (exit 2) leaves nothing behind unless finished parts are worth resuming from
        if stream is not None:
            stream.abort()
        if parts is not None and not parts.done([c.index for c in chunks]):
            parts.remove()
        raise
    except BaseException:
        if stream is not None:
            stream.abort()
        raise
    done_tables = [tables[c.index] for c in chunks]
    schema = table_schema(private=True)
    raw = pa.concat_tables([p.cast(schema) for p in done_tables]) if done_tables else schema.empty_table()
    return raw, chunks, skipped, parts, stream


def _collect(
    chunks: list[Chunk],
    tables: dict[int, Any],
    runner: Runner,
    options: Options,
    key: str,
    parts: PartsFolder | None,
    stream: TableStream | None,
    progress: bool | None,
    on_part: Callable[[int], None] | None,
) -> None:
    """Run the chunks not in ``tables`` on ``runner`` and put their tables there as they finish, each part written
    (by the worker, or here) and streamed to the output."""
    todo = [c for c in chunks if c.index not in tables]
    with progress_bar(total=sum(c.size for c in chunks), desc="zoo", unit="net", progress=progress) as bar:
        bar.update(sum(c.size for c in chunks if c.index in tables))
        # workers write their own parts, by absolute path (a Dask scheduler's workers run in their own directories)
        here = Path(os.path.abspath(parts.path)) if parts is not None and runner.parallel else None
        for t, table in runner.run(
            run_chunk_part,
            [(c, options, str(here / part_name(c.index)) if here else None, key) for c in todo],
            key=f"zoo-{key[:16]}",
            labels=[c.index for c in todo],
        ):
            chunk = todo[t]
            if isinstance(table, PartWritten):
                table = _written(parts, chunk, options)
            elif parts is not None:
                parts.write(chunk.index, table)
                if parts.mapped:  # the part's memory freed for the next one: its file's pages are the table
                    table = parts.read(chunk.index)
            tables[chunk.index] = table
            if stream is not None:
                stream.add(chunk.index, table)
            bar.update(chunk.size)
            if on_part is not None:
                on_part(chunk.index)


# the table's columns of mostly distinct values, and those of integers that mostly count up (see parquet_options)
_DISTINCT, _SEQUENTIAL = ("digest", "source"), ("index", "group", "near_cluster")


def run_job(
    source: Any,
    output: str | os.PathLike[str] | None = None,
    *,
    options: Options | None = None,
    workers: int | None = None,
    executor: Executor | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    chunk_size: int | None = None,
    files_per_chunk: int | None = None,
    resume: bool = False,
    progress: bool | None = None,
    on_part: Callable[[int], None] | None = None,
) -> ZooResult:
    """Run a zoo job (see :func:`relusym.zoo.scan_zoo`)."""
    options = options or Options()
    runner = Runner(workers=workers, executor=executor, scheduler=scheduler, dask_local=dask_local)
    with runner:  # the end of the job too: the client holds one BLAS thread until it is written (one_blas_thread)
        raw, chunks, skipped, parts, stream = _run_chunks(
            source, output, runner, options, chunk_size, files_per_chunk, resume, progress, on_part
        )
        # the workers end first: the end of the job's arrays then take the pages they freed
        runner.close()
        try:
            table, summary = finish_job(raw, chunks, options)
        except BaseException:
            if stream is not None:
                stream.abort()
            raise
        summary["skipped_files"] = skipped
        out = Path(output) if output is not None else None
        summary_path = None
        if out is not None:
            written = stream is not None and stream.commit(table)
            summary_path = write_outputs(table, summary, out, parts, _DISTINCT, sequential=_SEQUENTIAL, written=written)
    return ZooResult(table, summary, out, summary_path)
