"""The processes a zoo or census job's tasks run in, beside the client: how a process pool's and a local Dask
cluster's workers start (forked from the client where they can be, so that they inherit what it loaded) and how
each is tuned (one BLAS thread, freed memory reused, the inherited heap frozen out of the garbage collector, death
with the client)."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "ends_with_the_command",
    "forked_heap_frozen",
    "local_start_method",
    "one_blas_thread",
    "pool_start_method",
    "pool_worker",
    "restore_blas_threads",
    "reuse_memory",
    "run_tuned",
    "Whole",
]


@contextmanager
def forked_heap_frozen() -> Iterator[None]:
    """This process's objects out of the garbage collector's sight (:func:`gc.freeze`) while it forks its workers
    (a local Dask cluster's), and back in sight after.  A forked worker inherits the client's heap, about 130,000
    objects (numpy, pyarrow, numba, relusym); each of its full collections walked them all, writing to each
    object's header, so that the pages it shares with the client were copied, and the cache held them instead of
    its data.  Frozen in the fork, they stay out of its collections (the objects of its own are collected as
    before), as Python's documentation of :func:`gc.freeze` advises for a fork without exec.  A pool worker
    freezes its inherited heap itself (:func:`pool_worker`).  Measured here on the README's jobs with two workers
    (wall time of the job, runs alternated): a 10^6-network shard on a pool 5.37 s -> 5.20 s (five runs each), a
    20,000-file folder on a local cluster 3.12 s -> 3.04 s (four each).  Nothing is done when this process has
    frozen objects already (its own choice, inherited as they are)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def pool_worker(parent: int) -> None:
    """The initializer of the zoo's and the census's pool workers: one BLAS thread (:func:`one_blas_thread`), and
    death with the parent process ``parent``.  A parent killed with SIGKILL runs no cleanup, so each worker asks
    the kernel for SIGKILL when its parent dies (Linux), and checks its parent once a second elsewhere; the
    multiprocessing resource tracker then sees its last user gone and ends too.  Its heap, inherited from the
    client, is then frozen (:func:`forked_heap_frozen`)."""
    one_blas_thread()
    reuse_memory()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    if not sys.platform.startswith("linux"):

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="relusym-parent-watch", daemon=True).start()
    gc.freeze()  # see forked_heap_frozen


_TUNED = False


def reuse_memory() -> None:
    """Let this worker process reuse freed memory instead of returning it to the kernel (glibc): large temporaries
    then come from the heap already mapped, not from fresh pages the kernel must zero on first touch.  Dask's
    nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also freezes glibc's mmap threshold at
    128 KiB, so every array above that size is a fresh mapping: measured here, that cost the zoo's Dask workers
    about 20% more CPU time than the same chunks in a serial run.  Thresholds of 32 MiB (the largest that
    glibc's dynamic threshold reaches anyway) restore the serial run's behaviour.  Once per process; nothing
    on other C libraries."""
    global _TUNED
    if _TUNED or not sys.platform.startswith("linux"):
        return
    _TUNED = True
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-1, 32 << 20)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


class Whole:
    """A Dask task's result, sent to the client as one object.  Dask sends a returned list, tuple, set or dict
    element by element (each element serialized on its own, with a header of its own: ``iterate_collection`` in
    ``distributed.protocol.serialize``), about 27 µs an element here, both ends: eight tasks that each returned a
    dict of 2,000 functions took 0.44-0.47 s on a local cluster of two workers, against 0.03 s for the same dicts
    wrapped in an object, which Dask pickles whole, as it pickles any other object.  The census's tasks return
    such dicts and lists (its first pass took 0.16-0.25 s on a local cluster, 0.03 s on a pool; now 0.04-0.06 s),
    and a folder's planning tasks lists of shapes."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __reduce__(self) -> tuple[type[Whole], tuple[Any]]:
        return Whole, (self.value,)


def run_tuned(fn: Callable[..., Any], *args: Any) -> Whole:
    """``fn(*args)``, as a :class:`Whole`, after :func:`reuse_memory` and :func:`one_blas_thread` (once per
    process: a worker forked from the client inherits its BLAS threads, started before the nanny's one-thread
    variables could act): how a Dask worker runs a task (module-level, so that Dask pickles it by reference)."""
    global _ONE_BLAS
    reuse_memory()
    if not _ONE_BLAS:
        _ONE_BLAS = True
        one_blas_thread()
    return Whole(fn(*args))


_ONE_BLAS = False


def one_blas_thread(changed: dict[str, int] | None = None) -> None:
    """Hold BLAS to one thread in this process: the initializer of the zoo's and the census's process pools, whose
    workers already share the cores (a multithreaded BLAS in each would oversubscribe them; Dask's nanny sets the
    same limit for its workers), and a :class:`Runner`'s client while it runs a job (``changed`` then records the
    thread counts it changed, by library file, for :func:`restore_blas_threads`).  A serial job runs its chunks
    under it too: the zoo's matrix products are small (a block of networks), and OpenBLAS's threads spin between
    them, which cost the serial job more CPU time than the products themselves.

    Only the libraries not at one thread already are set: in a forked process, setting OpenBLAS's thread count
    restarts its thread pool (stopped at the fork), and the new threads spin before they sleep; measured here,
    numpy's and SciPy's OpenBLAS each spun 0.03-0.04 s of CPU time in every pool worker, during its first task,
    on the cores the other workers run on.  The client forks its workers while it holds one thread
    (:meth:`Runner.run`), so they inherit it and set nothing; it holds it until the job's end (its table and
    summary), where a restart would spin beside its own work."""
    from threadpoolctl import ThreadpoolController

    for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
        if lib.num_threads != 1:
            if changed is not None:
                changed.setdefault(lib.filepath, lib.num_threads)
            lib.set_num_threads(1)


_ENDING = {"with the command": False}


def ends_with_the_command() -> None:
    """Say that this process ends when its command does (the ``relusym`` program, :func:`relusym.cli.script`):
    a job's end then leaves the BLAS libraries at the one thread it held them to (:func:`restore_blas_threads`
    forgets what it changed).  A restore restarts OpenBLAS's thread pools, numpy's and SciPy's, whose new threads
    spin before they sleep, here beside the interpreter's shutdown: measured on two cores, the exit after a
    two-worker job on a 20,000-file folder took 0.085-0.095 s with the restore, 0.050 s without."""
    _ENDING["with the command"] = True


def restore_blas_threads(changed: dict[str, int]) -> None:
    """Give the BLAS libraries :func:`one_blas_thread` changed their thread counts back (and forget them); only
    forget them in a process that ends with its command (:func:`ends_with_the_command`)."""
    if not changed or _ENDING["with the command"]:
        changed.clear()
        return
    from threadpoolctl import ThreadpoolController

    for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
        n = changed.get(lib.filepath)
        if n is not None and lib.num_threads != n:
            lib.set_num_threads(n)
    changed.clear()


def local_start_method() -> str:
    """How a local Dask cluster starts its worker processes.  Dask's default, spawn, starts a fresh interpreter
    per worker that imports Dask, numpy and relusym again: measured here, 1.5 s of CPU time and 3 s of wall time
    for 2 workers before the first task, which is the whole gain of a second worker on a job of ten seconds.  On
    Linux a worker is forked from this process instead (it has imported all of that already: 0.07 s for 2
    workers, 1.6 s wall), under Python 3.11; from 3.12, which warns about forking a process with threads (the
    cluster's event loop runs in one), it comes from a fork server (0.2 s for 2 workers, plus the server's own
    imports once).  Elsewhere Dask's default.  A fork copies the import locks of the modules other threads are
    importing at that moment, held: the cluster is started before this process does anything else
    (:meth:`Runner.start`), so its main thread is waiting, not importing, while the nannies fork."""
    if not sys.platform.startswith("linux"):
        import dask

        return str(dask.config.get("distributed.worker.multiprocessing-method"))
    return pool_start_method()


def pool_start_method() -> str:
    """How the process pool starts its workers: as a local Dask cluster does (:func:`local_start_method`), forked
    on Linux under Python 3.11 (a spawned worker imported numpy, pyarrow and relusym again: about a second of
    CPU time each, and as much wall time before its first task), from a fork server from 3.12; spawned
    elsewhere."""
    if not sys.platform.startswith("linux"):
        return "spawn"
    return "fork" if sys.version_info < (3, 12) else "forkserver"
