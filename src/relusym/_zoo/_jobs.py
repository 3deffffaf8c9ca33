"""Resumable chunked jobs, shared by the zoo and the census: the executors a chunk runs on (serial, a local
process pool, any ``concurrent.futures.Executor``, a Dask scheduler or a local Dask cluster) and the folder of
finished chunks (one part per chunk, an Arrow IPC file, written atomically, next to a ``job.json`` manifest that
names the job), so that a job killed at any point and restarted skips what is done."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, as_completed
from functools import partial
from pathlib import Path
from typing import Any

from relusym._base.fileio import atomic_path, atomic_write
from relusym._zoo._processes import (
    forked_heap_frozen,
    local_start_method,
    one_blas_thread,
    pool_start_method,
    pool_worker,
    restore_blas_threads,
    run_tuned,
)
from relusym.errors import InvalidNetworkError

__all__ = [
    "PartsFolder",
    "Runner",
    "execute",
    "owns_folder",
    "part_name",
    "write_outputs",
    "write_parquet",
    "write_part",
]


# ----------------------------------------------------------------------------------------------------------
# executors: ``fn(*args)`` for every task, results yielded as they finish, with the task's position


def execute(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    key: str = "job",
    labels: Sequence[int] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(*task)`` for every task and yield ``(position, result)`` as tasks finish: serially (in order), on a
    process pool of ``workers`` (each holding BLAS to one thread), on ``executor``, on the Dask scheduler at
    ``scheduler`` or on a local Dask cluster of ``dask_local`` workers.  ``fn`` must be a module-level function
    (it is pickled); ``key`` and ``labels`` (one per task, default the positions) name the Dask tasks.  One
    :class:`Runner`, started for these tasks and closed after them."""
    runner = Runner(workers=workers, executor=executor, scheduler=scheduler, dask_local=dask_local)
    if not tasks:
        return
    with runner:
        yield from runner.run(fn, tasks, key=key, labels=labels)


class Runner:
    """Where the tasks of one job run (see :func:`execute`), started on first use and kept until :meth:`close`, so
    that a job's planning tasks and its chunks share one process pool or one Dask client: a folder's planning on
    the workers then costs no second pool (forked workers, their start and shutdown) or client connection (with
    its handshake), and a local Dask cluster started once serves both (see :func:`relusym._zoo._planning.plan`;
    except where the client loads the compiled kernels meanwhile, on a helper pool: :meth:`helper_pool`).  A
    serial runner starts nothing."""

    def __init__(
        self,
        *,
        workers: int | None = None,
        executor: Executor | None = None,
        scheduler: str | None = None,
        dask_local: int | None = None,
        pool: bool = False,
    ) -> None:
        """``pool``: a process pool even of one worker (``workers=1`` is otherwise a serial run)."""
        if sum(x is not None for x in (workers, executor, scheduler, dask_local)) > 1:
            raise InvalidNetworkError("choose at most one of workers, executor, scheduler and dask_local")
        if dask_local is not None and dask_local < 1:
            raise InvalidNetworkError(f"dask_local must be at least 1 worker, got {dask_local}")
        self.workers, self.executor, self.scheduler, self.dask_local = workers, executor, scheduler, dask_local
        self.pool = pool
        self._pool: Any = None
        self._client: Any = None
        self._cluster: Any = None
        self._blas: dict[str, int] = {}  # see one_blas_thread

    @property
    def parallel(self) -> bool:
        """Whether the tasks run in other processes (or on ``executor``)."""
        dask = self.scheduler is not None or self.dask_local is not None
        return dask or self.executor is not None or (self.workers or 0) > (0 if self.pool else 1)

    @property
    def dask(self) -> bool:
        return self.scheduler is not None or self.dask_local is not None

    @property
    def forks(self) -> int:
        """How many workers this runner forks from this process when it starts (they then inherit what it loaded
        before): a process pool's or a local Dask cluster's, on Linux under Python 3.11 (see
        :func:`relusym._zoo._processes.local_start_method`); 0 for any other runner."""
        if self.workers and self.parallel and self.executor is None:
            return self.workers if pool_start_method() == "fork" else 0
        if self.dask_local:
            return self.dask_local if local_start_method() == "fork" else 0
        return 0

    def helper_pool(self) -> Runner:
        """A process pool for tasks before this runner starts, while this process loads what this runner's workers
        will then inherit (:func:`relusym._zoo._planning.plan`): as many workers as :attr:`forks`, but one core
        left to this process (on two cores, one helper: 20,000 files of 16-64-4 planned while the kernels loaded
        in 0.71-0.72 s on one, 0.77-0.80 s on two, which took the loading process's core), which joins the
        helper's tasks once it has loaded (``join`` of :meth:`run`).  This process holds one BLAS thread for this
        runner first, so that the helper, closed, gives back nothing."""
        one_blas_thread(self._blas)
        return Runner(workers=max(1, min(self.forks, _cores() - 1)), pool=True)

    @property
    def started(self) -> bool:
        """Whether a process pool, a Dask client or a local cluster has been started."""
        return self._pool is not None or self._client is not None

    def start(self) -> None:
        """Start the pool, or connect to the scheduler, or start the local cluster (once)."""
        if self.started or not self.parallel or self.executor is not None:
            return
        one_blas_thread(self._blas)  # the workers forked now inherit it (see one_blas_thread)
        if self.dask:
            try:
                import distributed  # noqa: F401
            except ModuleNotFoundError:
                raise InvalidNetworkError(
                    "running on Dask needs the packages dask and distributed: pip install 'relusym[zoo]'"
                ) from None
            self._client, self._cluster = _dask_client(self.scheduler, self.dask_local)
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context(pool_start_method())
        init = partial(pool_worker, os.getpid())
        self._pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=init)

    def run(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[tuple[Any, ...]],
        *,
        key: str = "job",
        labels: Sequence[int] | None = None,
        on_submitted: Callable[[], None] | None = None,
        join: bool = False,
    ) -> Iterator[tuple[int, Any]]:
        """``fn(*task)`` for every task, ``(position, result)`` yielded as tasks finish (see :func:`execute`).
        ``on_submitted`` runs here once the workers have every task (serially: before the first); then, with
        ``join``, this process runs the tasks a process pool has not started, from the last, beside its workers."""
        if not tasks:
            return
        if self.executor is not None:
            yield from _execute_futures(self.executor, fn, tasks, on_submitted)
            return
        one_blas_thread(self._blas)  # here, and in the workers forked from here (libraries loaded since too)
        if not self.parallel:
            if on_submitted is not None:
                on_submitted()
            for t, args in enumerate(tasks):
                yield t, fn(*args)
            return
        self.start()
        if self._pool is not None:
            yield from _execute_futures(self._pool, fn, tasks, on_submitted, join)
            return
        names = list(labels) if labels is not None else list(range(len(tasks)))
        yield from _execute_dask(self._client, fn, tasks, key, names, on_submitted)

    def close(self, failed: bool = False) -> None:
        """Stop what :meth:`start` started: a failed job's pool without waiting for its running tasks."""
        pool, client, cluster = self._pool, self._client, self._cluster
        self._pool = self._client = self._cluster = None
        if pool is not None:
            pool.shutdown(wait=not failed, cancel_futures=True)
        try:
            if client is not None:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        """:meth:`close`, then this process's BLAS libraries get back the thread counts they had before
        :meth:`run` held them to one (see :func:`one_blas_thread`)."""
        try:
            self.close(failed=exc_type is not None)
        finally:
            restore_blas_threads(self._blas)


def _cores() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def _execute_futures(
    ex: Executor,
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    on_submitted: Callable[[], None] | None = None,
    join: bool = False,
) -> Iterator[tuple[int, Any]]:
    futures = {ex.submit(fn, *args): t for t, args in enumerate(tasks)}
    try:
        if on_submitted is not None:
            on_submitted()
        if join:  # the pool takes its tasks from the first; a task it has not queued yet can be withdrawn
            for f in reversed(list(futures)):
                if f.cancel():
                    t = futures.pop(f)
                    yield t, fn(*tasks[t])
        for f in as_completed(futures):
            yield futures[f], f.result()
    finally:
        for f in futures:
            f.cancel()


def _execute_dask(
    client: Any,
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    key: str,
    labels: list[int],
    on_submitted: Callable[[], None] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Run the tasks on Dask, each task once on a worker (a lost worker's tasks are retried elsewhere), one
    future per task (a task is a chunk of seconds, described by a few hundred bytes: no graph per network).

    A local cluster is up before this process runs anything else (:meth:`Runner.start`, called by the job before
    its planning tasks or its chunks): it forks its workers (see :func:`local_start_method`) from the nannies'
    threads, and a fork while this process's main thread is inside an import copies that module's import lock
    held for ever into the worker, whose first task that imports it then waits for ever (seen with the client
    running tasks while the cluster started)."""
    from distributed import as_completed as dask_completed

    futures = {
        client.submit(run_tuned, fn, *tasks[t], key=f"relusym-{key}-{labels[t]}", retries=5, pure=False): t
        for t in range(len(tasks))
    }
    try:
        if on_submitted is not None:
            on_submitted()
        for f in dask_completed(futures):
            yield futures[f], f.result().value
    finally:
        for f in futures:
            f.cancel()


def _dask_client(scheduler: str | None, dask_local: int | None) -> tuple[Any, Any]:
    """A Dask client of the scheduler at ``scheduler``, or of a new local cluster of ``dask_local`` workers (and
    that cluster)."""
    from distributed import Client, LocalCluster

    if dask_local is None:
        try:
            client = Client(scheduler, timeout=30)
        except OSError as exc:
            raise InvalidNetworkError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from None
        try:
            _same_relusym(client, str(scheduler))
        except BaseException:
            client.close()
            raise
        return client, None
    import logging

    import dask

    for name in ("distributed", "tornado", "bokeh"):  # the cluster's own log lines are not relusym's output
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # the workers' statistical profiler samples their stacks every 10 ms (several % of a busy worker's CPU
    # time); malloc: see reuse_memory, which each task also applies; the cluster's own polling (the event
    # loops' 20 ms tick, the system monitors' 0.5 s, the nannies' 0.1 s memory checks, work stealing's
    # 0.1 s) cost the client 5% of a core and each worker 2% while it runs (measured idle: 0.54 s and
    # 0.41 s per 10 s; 0.09 s and 0.07 s with these intervals), which tasks of seconds of equal work do not need
    with dask.config.set(
        {
            "distributed.admin.tick.interval": "1s",
            "distributed.admin.system-monitor.interval": "5s",
            "distributed.scheduler.work-stealing": False,
            "distributed.worker.memory.monitor-interval": "1s",
            "distributed.worker.profile.enabled": False,
            "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 32 << 20,
            "distributed.worker.multiprocessing-method": local_start_method(),
        }
    ):
        with forked_heap_frozen():
            cluster = LocalCluster(
                n_workers=dask_local,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
    try:
        return Client(cluster), cluster
    except BaseException:
        cluster.close()
        raise


def _relusym_version() -> str:
    """This process's relusym version (run on a scheduler's workers by :func:`_same_relusym`)."""
    from relusym import __version__

    return __version__


def _same_relusym(client: Any, scheduler: str) -> None:
    """Refuse, in one sentence, a scheduler whose workers cannot import relusym or run another version than this
    process: a job's tasks are relusym's functions and objects, pickled by reference, which such a worker cannot
    load (a worker that could not import relusym failed on its first task's message and lost its connection to
    the scheduler, and the job made no progress for as long as it was watched, a minute) or loads as its own
    version's.  One round trip to each worker, once per job."""
    here = _relusym_version()
    try:
        found = client.run(_relusym_version)
    except Exception as exc:  # a worker that cannot load the function: relusym is not installed there
        reason = str(exc) if type(exc) is Exception else f"{type(exc).__name__}: {exc}"  # Dask wraps the worker's
        raise InvalidNetworkError(
            f"the Dask workers of the scheduler at {scheduler} cannot run relusym ({reason}); "
            f"install relusym {here} where they run"
        ) from None
    other = sorted({str(v) for v in found.values()} - {here})
    if other:
        raise InvalidNetworkError(
            f"the Dask workers of the scheduler at {scheduler} run relusym {', '.join(other)} and this process "
            f"{here}; install the same version on both"
        )


# ----------------------------------------------------------------------------------------------------------
# the parts folder


def part_name(index: int) -> str:
    """The file name of chunk ``index``'s part."""
    return f"part-{index:07d}.arrow"


def write_parquet(table: Any, path: Path, **options: Any) -> None:
    """Write a pyarrow table atomically (a reader sees the old file or the whole new one); ``options`` go to
    ``pyarrow.parquet.write_table``."""
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp:
        pq.write_table(table, str(tmp), **options)


def write_part(table: Any, path: Path) -> None:
    """Write a part atomically, by the client or by the worker that computed it (:func:`owns_folder`).  A part is
    read once, by the same job and the same pyarrow: an Arrow IPC file (the columns' buffers as they are in memory),
    written in a fifth of the CPU time of an uncompressed Parquet file (0.15 against 0.72 s per 10^6 rows of
    8-64-1) and read in a fifth (0.08 against 0.46 s).

    Renamed into place without an fsync (1.5-10 ms a part, 0.2-0.3 s of a 10^6-network job): a resumed job
    reopens the parts it keeps and recomputes any that does not read back whole (:meth:`PartsFolder.done`), so a
    part emptied or cut short by a power loss costs its chunk again, never a wrong table.  The table, its summary
    and the parts folder's manifest are fsynced."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with (
        atomic_path(path, sync=False) as tmp,
        pa.OSFile(str(tmp), "wb") as fh,
        ipc.new_file(fh, table.schema) as writer,
    ):
        writer.write_table(table)


def owns_folder(folder: Path, fingerprint: str) -> bool:
    """Whether ``folder`` is, as this process sees it, the parts folder of the job with ``fingerprint``: a worker
    writes its part there itself only then (on a cluster without the client's file system it returns the part
    to the client instead)."""
    try:
        d = json.loads((folder / "job.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(d, dict) and d.get("fingerprint") == fingerprint


def write_outputs(
    table: Any,
    summary: dict[str, Any],
    out: Path,
    parts: PartsFolder | None,
    distinct: Sequence[str] = (),
    *,
    sequential: Sequence[str] = (),
    written: bool = False,
) -> Path:
    """The end of a job: the table written atomically to ``out`` (unless ``written``: it was streamed there, see
    :mod:`relusym._zoo._stream`), its summary as ``OUT.summary.json`` beside it (atomically too), then the parts
    folder removed.  Returns the summary's path.  ``distinct`` and ``sequential``: see
    :func:`relusym._zoo._stream.parquet_options`."""
    from relusym._zoo._stream import parquet_options

    if not written:
        write_parquet(table, out, **parquet_options(table.column_names, distinct, sequential))
    summary_path = out.with_name(out.stem + ".summary.json")
    text = (json.dumps(summary, indent=1) + "\n").encode()
    atomic_write(summary_path, lambda fh: fh.write(text))
    if parts is not None:
        parts.remove()
    return summary_path


class PartsFolder:
    """``OUT.parts/`` beside the output ``OUT``: one part (an Arrow IPC file) per finished chunk and ``job.json``,
    the job's manifest (its schema, a fingerprint of everything that determines the parts, and optionally the job's
    description, so that a refusal can name what differs).

    Opening with ``resume=True`` keeps the parts of the same job and refuses a folder of another job; without it
    an old folder is discarded."""

    def __init__(
        self,
        output: Path,
        *,
        schema: str,
        fingerprint: str,
        chunks: int,
        resume: bool,
        description: dict[str, Any] | None = None,
        mismatch: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.path = output.with_name(output.name + ".parts")
        manifest = self.path / "job.json"
        if self.path.exists() and resume:
            try:
                old = json.loads(manifest.read_text())
            except (OSError, ValueError):
                old = {}
            if isinstance(old, dict) and old.get("schema") not in (None, schema):
                raise InvalidNetworkError(
                    f"{self.path} holds parts written under schema {old['schema']} (this relusym writes {schema}); "
                    "run without --resume to start over"
                )
            if not isinstance(old, dict) or old.get("fingerprint") != fingerprint:
                raise InvalidNetworkError(
                    mismatch(old if isinstance(old, dict) else {})
                    if mismatch is not None
                    else f"{self.path} holds the parts of a different job (other source, files or options); run "
                    "without --resume to start over"
                )
        elif self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(exist_ok=True)
        if not manifest.exists():
            d: dict[str, Any] = {"schema": schema, "fingerprint": fingerprint, "chunks": chunks}
            if description is not None:
                d["job"] = description
            text = json.dumps(d).encode()
            atomic_write(manifest, lambda fh: fh.write(text))

    def done(self, indices: Sequence[int], rows: Callable[[int], int] | None = None) -> set[int]:
        """Those of ``indices`` whose part is written; with ``rows`` (a part's expected rows), only those whose part
        opens as an Arrow IPC file holding that many rows, the others removed (written without an fsync, a part
        can be empty or short after a power loss: see :func:`write_part`)."""
        out = {i for i in indices if (self.path / part_name(i)).is_file()}
        if rows is None:
            return out
        whole = set()
        for i in sorted(out):
            if self._rows(i) == rows(i):
                whole.add(i)
            else:
                (self.path / part_name(i)).unlink(missing_ok=True)
        return whole

    def _rows(self, index: int) -> int | None:
        """The rows of part ``index`` as its file reads back (footer, schema and every batch), or None."""
        import pyarrow as pa

        try:
            return int(self.read(index).num_rows)
        except (OSError, pa.ArrowException):
            return None

    def write(self, index: int, table: Any) -> None:
        write_part(table, self.path / part_name(index))

    def has(self, index: int) -> bool:
        return (self.path / part_name(index)).is_file()

    @property
    def mapped(self) -> bool:
        """Whether :meth:`read` maps the parts (POSIX systems): reading a part back then costs nothing, so a
        serial job keeps its parts' files, not their tables (a table held cost the client its pages' faults, about
        0.4 s of system time per 10^6 rows of 8-64-1, and as much memory as the parts)."""
        return os.name == "posix"

    def read(self, index: int) -> Any:
        """A part, read back whole: memory-mapped on POSIX systems (the table's buffers are the file's pages; the
        folder can still be removed while the table lives, the pages stay until it is freed; a part is replaced only
        by renaming a new file over it, never written in place), copied elsewhere (Windows cannot remove a mapped
        file).  Copying cost the client of a parallel job 0.6 s of CPU time per 10^6 rows of 8-64-1, most of it the
        kernel's faults on fresh memory, on the cores its workers share."""
        import pyarrow as pa
        import pyarrow.ipc as ipc

        path = str(self.path / part_name(index))
        with pa.memory_map(path) if self.mapped else pa.OSFile(path) as fh:
            return ipc.open_file(fh).read_all()

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
