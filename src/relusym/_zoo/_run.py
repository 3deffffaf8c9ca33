"""Running a zoo job: the work of one chunk (read, digest, width, fibre), its part, the executors, resuming,
and the final table with exact duplicate groups and near-duplicate clusters."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.progress import progress_bar
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym._zoo._digest import network_digest, stack_digests
from relusym._zoo._jobs import PartsFolder, Runner, owns_folder, part_name, write_outputs, write_part
from relusym._zoo._planning import EAGER_JIT, load_kernels, plan
from relusym._zoo._sources import Chunk, Item, item_indices, item_sources, read_chunk
from relusym._zoo._stream import TableStream, parquet_options
from relusym._zoo._summary import finish_job, probe_stack
from relusym._zoo._table import COLUMNS, SCHEMA, Options, ZooResult, part_table, public_schema, table_schema
from relusym.errors import BudgetExceededError, InvalidNetworkError, UnsupportedModelError

__all__ = [
    "SCHEMA",
    "Options",
    "PartWritten",
    "ZooResult",
    "run_chunk",
    "run_chunk_part",
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


def run_chunk(chunk: Chunk, options: Options) -> Any:
    """The part table of one chunk (public columns without the global ones, plus private columns for the
    near-duplicate search).  Runs in a worker; reads the chunk's data itself; never raises for bad networks."""
    data = read_chunk(chunk)
    rows: list[dict[str, Any]] = []
    parts: list[Any] = []
    if sum(x.size for _, *arrays in data.stacks for x in arrays) >= EAGER_JIT:
        load_kernels()  # see EAGER_JIT
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


def _fingerprint(chunks: list[Chunk], options: Options, identities: Mapping[str, list[Any]] | None = None) -> str:
    """What identifies a job for resuming (:class:`PartsFolder`): its table's schema, options and chunks, the files
    by their identities (``identities``: those its planning tasks found, the same as a ``stat`` here gives)."""
    d = {"schema": SCHEMA, "options": asdict(options), "chunks": [c.describe(identities) for c in chunks]}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()


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
    chunks, skipped, meanwhile, identities = plan(source, runner, chunk_size, files_per_chunk)  # and pyarrow
    import pyarrow as pa

    key = _fingerprint(chunks, options, identities)
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
        _collect(chunks, tables, runner, options, key, parts, stream, progress, on_part, meanwhile)
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
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Run the chunks not in ``tables`` on ``runner`` and put their tables there as they finish, each part written
    (by the worker, or here) and streamed to the output; ``meanwhile`` runs here once they are submitted."""
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
            on_submitted=meanwhile,
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
