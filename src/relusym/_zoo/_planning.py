"""A zoo job's planning: its chunks (:func:`relusym._zoo._sources.plan_job`), a folder's headers read where
they cost least (here, on the job's workers, or on a helper pool while this process loads the compiled kernels),
and when the kernels load: once, in the client, before its workers fork, where every process would load them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relusym._zoo._digest import stack_digests
from relusym._zoo._digest_jit import JIT_WORK, jit_available, jit_installed
from relusym._zoo._jobs import Runner
from relusym._zoo._near import sweep_kernels
from relusym._zoo._sources import Chunk, plan_job, stack_headers, stack_shapes
from relusym._zoo._summary import probe_kernel

__all__ = ["EAGER_JIT", "client_modules", "load_kernels", "plan"]


# A task whose stacks hold this many weights loads the compiled digest kernel (when installed) before its first
# digest, instead of after its process's first 2^24 weights (_digest_jit): an eighth of the default task of a
# shard (2^24 weights, :func:`relusym._zoo._sources.auto_rows`, whose rows are a little under it), so the default
# tasks of any shard cut by weight (not by the 1/16 bound) load it first; the numpy path's first 2^24 weights
# (about 1 s of CPU time at 8-64-1, twice the kernel's time on them) are saved in each process.
EAGER_JIT = 1 << 21


_KERNELS: dict[str, bool] = {}


def load_kernels() -> None:
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


_PLAN_FILES = 2048  # files per planning task: the header reads of a folder's .npz files, on the job's workers


def client_modules() -> None:
    """Import pyarrow's compute and parquet modules, which the client of a job needs for the table's end and its
    write: before a pool or a local cluster forks its workers, which then have them too (each worker's first task
    imported them: 0.1 s of CPU time per worker, on the path to its first part)."""
    import pyarrow.compute  # noqa: F401
    import pyarrow.parquet  # noqa: F401


def _shapes_on(
    runner: Runner, identities: dict[str, list[Any]] | None = None
) -> Callable[[list[str]], list[tuple[int, ...] | None]]:
    """How the planning of a folder finds its stacked shards: on the job's process pool, local Dask cluster,
    executor or Dask scheduler (the runner of its chunks, started here then) when it has more than
    :data:`_PLAN_FILES` ``.npz`` / ``.safetensors`` files (one header read each: serial in the client, they were
    half of its time on a folder of 20,000 files, and on a cluster the files are the workers' to read); else
    here.  The shapes, and so the chunks and the job's fingerprint, are the same wherever they are read.

    A pool or a local cluster whose workers fork from this process (:attr:`Runner.forks`), for files whose weights
    reach ``JIT_WORK`` (2^24, where a serial run loads the compiled kernels first: :func:`_each_pays`), plans
    on a helper pool instead (:meth:`Runner.helper_pool`) while this process loads the kernels and its own
    modules (:func:`client_modules`; Dask's too, for a local cluster), then reads the headers of the planning
    tasks the helper has not started, beside it; the job's workers fork after that, and inherit them.  Before,
    such a pool planned on its own workers, which then digested on numpy (35% more CPU time a file of 16-64-4
    than the kernel), or, from 2^24 weights per worker, after this process had loaded the kernels with the second
    core idle (0.4 s).  Measured here, ``relusym zoo`` on 20,000 files of 16-64-4: a pool of two 2.82-3.01 s ->
    2.65-2.74 s (serial 4.3-4.5 s), a local cluster 3.22-3.32 s -> 3.07-3.16 s; the client's join on 60,000
    files: pool 7.0 -> 6.6 s, local cluster 7.4 -> 7.1 s.

    Those planning tasks return each file's identity too (:func:`relusym._zoo._sources.stack_headers`), put in
    ``identities`` for the job's fingerprint, which then ``stat``s only the files not planned there."""
    if not runner.parallel:
        return stack_shapes

    def shapes(paths: list[str]) -> list[tuple[int, ...] | None]:
        if len(paths) <= _PLAN_FILES:
            return stack_shapes(paths)
        batches = [(paths[s : s + _PLAN_FILES],) for s in range(0, len(paths), _PLAN_FILES)]
        found: list[list[tuple[int, ...] | None]] = [[] for _ in batches]
        key = hashlib.sha256("\0".join(paths).encode()).hexdigest()[:16]
        planner, meanwhile = runner, None
        forked = runner.forks and not runner.started and not _KERNELS.get("loaded") and jit_installed()
        if forked and _file_weights(paths) >= JIT_WORK:
            planner = runner.helper_pool()

            def meanwhile() -> None:
                load_kernels()
                client_modules()
                if runner.dask_local:
                    try:
                        import distributed  # noqa: F401 - what the cluster's start imports (0.2 s)
                    except ModuleNotFoundError:
                        pass  # refused in one sentence when the cluster starts

        elif not runner.started:
            client_modules()  # before the runner forks its workers for these tasks

        try:
            # the helper's tasks not started when the loads end are read here, beside it
            helper = planner is not runner
            tasks = planner.run(stack_headers, batches, key=f"zoo-plan-{key}", on_submitted=meanwhile, join=helper)
            for t, res in tasks:
                found[t] = [shape for shape, _ in res]
                if identities is not None:
                    identities.update((p, ident) for p, (_, ident) in zip(batches[t][0], res, strict=True))
        finally:
            if planner is not runner:
                planner.close()
        return [x for part in found for x in part]

    return shapes


def _eager(chunk: Chunk, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Whether ``chunk`` is a task of a stacked shard with :data:`EAGER_JIT` weights or more (its shape's A is
    B×n×m; V and c are not counted, as in :func:`relusym._zoo._sources.auto_rows`).  The client of such a job
    loads the compiled kernel before its workers start: a process pool's workers and a local Dask cluster's are
    forked from it on Linux (under Python 3.11; see :func:`relusym._zoo._processes.local_start_method`) and inherit
    the loaded kernel, so that the job pays numba's import and the kernel's load once, not once per worker (a
    spawned worker or one of a fork server loads it itself, on its first task, as before)."""
    shape = shapes.get(chunk.paths[0]) if chunk.kind == "shard" and chunk.paths else None
    return shape is not None and chunk.size * int(shape[1]) * (int(shape[2]) + 1) >= EAGER_JIT


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
    shard of 1,250 networks of 64-256-10 has tasks of 79, each below :data:`EAGER_JIT`; a folder of 20,000
    files of 16-64-4 took 4.3 s serially with the kernels loaded first, 4.9-5.1 s without).  A shard's weights
    counted as in :func:`_eager`, a folder's files' estimated from their sizes (:func:`_file_weights`)."""
    weights = _file_weights([p for c in chunks if c.kind == "files" for p in c.paths])
    for c in chunks:
        shape = shapes.get(c.paths[0]) if c.kind == "shard" and c.paths else None
        if shape is not None:
            weights += c.size * int(shape[1]) * (int(shape[2]) + 1)
    return weights >= JIT_WORK * max(1, runner.workers or 0, runner.dask_local or 0)


# a --scheduler job of this many networks loads the compiled kernels in the client while its chunks run (see
# plan): the compiled end saves 0.2 s per 10^6 networks, and the load costs 0.45 s of CPU time, half of it taken
# from the workers when they share the client's two cores (as in the benchmark); below, nothing to gain
_END_JIT_ROWS = 10**6


def _end_kernels() -> None:
    """The compiled kernels a job's end uses in the client (the near-duplicate search's sweep)."""
    load_kernels()
    sweep_kernels()


def plan(
    source: Any, runner: Runner, chunk_size: int | None, files_per_chunk: int | None
) -> tuple[list[Chunk], int, Callable[[], None] | None, dict[str, list[Any]]]:
    """A job's chunks and skipped files, a folder's headers read on ``runner`` (or on a helper pool: see
    :func:`_shapes_on`); the kernels loaded first where every process would load them (:func:`_eager`,
    :func:`_each_pays`), and the client's modules imported before any worker forks (:func:`client_modules`).

    Third, what the client loads while the chunks run, or None: on a Dask scheduler, whose workers load their
    own kernels, the client's end (the near-duplicate search) ran numpy's path, 0.4-0.5 s per 10^6 networks
    against 0.25 s compiled, and beyond the grid's bound on candidates (about 9·10^6 networks of 8-64-1) its k-d
    tree (130 s for 10^7 rows, against 2.6 s for the compiled sweep); for a job of :data:`_END_JIT_ROWS`
    networks or more the client loads the kernels once the chunks are submitted (:func:`_end_kernels`), on a
    core that a cluster leaves idle meanwhile.

    Fourth, the identities of the files whose headers planning tasks read (for :meth:`Chunk.describe`)."""
    identities: dict[str, list[Any]] = {}
    probe = _shapes_on(runner, identities)
    found: dict[str, tuple[int, ...]] = {}

    def shapes(paths: list[str]) -> list[tuple[int, ...] | None]:
        res = probe(paths)
        found.update((p, x) for p, x in zip(paths, res, strict=True) if x is not None)
        return res

    chunks, skipped = plan_job(source, chunk_size=chunk_size, files_per_chunk=files_per_chunk, shapes=shapes)
    eager = any(_eager(c, found) for c in chunks)
    meanwhile = None
    if not runner.started and runner.executor is None and runner.scheduler is None:
        if eager or _each_pays(chunks, found, runner):
            load_kernels()
    elif runner.scheduler is not None and not _KERNELS.get("loaded") and jit_installed():
        if sum(c.size for c in chunks) >= _END_JIT_ROWS:
            meanwhile = _end_kernels
    client_modules()
    return chunks, skipped, meanwhile, identities
