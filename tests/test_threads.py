"""One BLAS thread while the digest runs its worker thread: from the main thread the limit holds inside, nested
uses share it and the previous limits come back at the end (after an error too, and after the digest of a large
network); from another thread nothing changes and the digest, then computed in one thread, is the same."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from relusym import Network, normal_form
from relusym._base.threads import single_blas_thread


def blas_threads() -> set[int]:
    return {int(lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def two_blas_threads():
    if not blas_threads():
        pytest.skip("numpy has no BLAS that threadpoolctl can control")
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != {2}:
            pytest.skip("this BLAS cannot run two threads")
        yield


def test_nested_uses_share_one_limit(two_blas_threads):
    with single_blas_thread() as alone:
        assert alone and blas_threads() == {1}
        with single_blas_thread() as inner:
            assert inner and blas_threads() == {1}
        assert blas_threads() == {1}  # the inner one left, the outer one still holds the limit
    assert blas_threads() == {2}


def test_the_limit_is_restored_after_an_error(two_blas_threads):
    with pytest.raises(ZeroDivisionError), single_blas_thread():
        1 / 0  # noqa: B018
    assert blas_threads() == {2}


def large_network() -> Network:
    rng = np.random.default_rng(0)
    n, m = 300, 300  # above the size from which the digest uses a worker thread
    return Network(*(rng.standard_normal(s).astype(np.float32) for s in [(2, n), (n, m), (n,), (2,)]))


def test_a_large_digest_leaves_the_blas_threads_as_they_were(two_blas_threads):
    assert len(normal_form(large_network()).digest()) == 64
    assert blas_threads() == {2}


def test_another_thread_changes_nothing_and_gets_the_same_digest(two_blas_threads):
    net = large_network()
    seen: dict[str, Any] = {}

    def other() -> None:
        with single_blas_thread() as alone:
            seen["alone"] = alone
        seen["digest"] = normal_form(net).digest()  # one thread: BLAS cannot be held to one from here

    t = threading.Thread(target=other)
    t.start()
    t.join(60)
    assert seen["alone"] is False and blas_threads() == {2}
    assert seen["digest"] == normal_form(net).digest()


def blas_threads_here(_: int) -> list[int]:
    """(run in a worker process) the thread counts of this process's BLAS libraries."""
    import numpy  # noqa: F401  (the BLAS numpy loads)

    return sorted(blas_threads())


def os_threads_here(_: int) -> tuple[list[int], int]:
    """(run in a worker process) its BLAS libraries' thread counts, and how many threads the process runs."""
    return blas_threads_here(0), len(os.listdir("/proc/self/task"))


def test_the_process_pools_workers_run_blas_on_one_thread(two_blas_threads):
    # the zoo's and the census's process pools: workers that share the cores hold BLAS to one thread each
    from relusym._zoo._jobs import execute

    seen = [threads for _, threads in execute(blas_threads_here, [(0,), (1,)], workers=2)]
    assert seen == [[1], [1]]
    assert blas_threads() == {2}  # and the parent is left as it was


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the threads in /proc")
def test_the_pools_workers_start_no_blas_threads(two_blas_threads):
    # forked while the parent holds one BLAS thread, a worker inherits it and restarts no BLAS thread pool (setting
    # OpenBLAS's count in a forked process restarts its pool, whose threads spun on the other workers' cores)
    from relusym._zoo._jobs import execute

    np.ones((64, 64)) @ np.ones((64, 64))  # the parent's BLAS threads have run
    seen = [threads for _, threads in execute(os_threads_here, [(0,), (1,), (2,)], workers=2)]
    assert seen == [([1], 1)] * 3
    assert blas_threads() == {2}


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the workers come from a fork server there")
def test_a_local_dask_clusters_workers_inherit_one_blas_thread(two_blas_threads):
    # forked by the nannies while the client holds one BLAS thread: before any task of relusym's has set it
    pytest.importorskip("distributed")
    from relusym._zoo._jobs import Runner

    with Runner(dask_local=2) as runner:
        runner.start()
        client = runner._client
        seen = {tuple(f.result()) for f in [client.submit(blas_threads_here, i, pure=False) for i in range(4)]}
    assert seen == {(1,)}
    assert blas_threads() == {2}


def freeze_count_here(_: int) -> int:
    """(run in a worker process) how many objects the garbage collector holds frozen there."""
    import gc

    return gc.get_freeze_count()


def test_the_pools_workers_freeze_the_heap_they_inherit():
    # their collections then skip the client's objects (see forked_heap_frozen); the client's own GC is untouched
    import gc

    from relusym._zoo._jobs import execute

    before = gc.get_freeze_count()
    seen = [n for _, n in execute(freeze_count_here, [(0,), (1,)], workers=2)]
    assert min(seen) > 10_000  # numpy's, relusym's and the pool's objects at least
    assert gc.get_freeze_count() == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks a child")
def test_a_heap_frozen_for_a_fork_is_frozen_in_the_child_and_thawed_in_the_parent():
    import gc
    import multiprocessing

    from relusym._zoo._jobs import forked_heap_frozen

    gc.unfreeze()
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as unfrozen:
        assert unfrozen.apply(freeze_count_here, (0,)) == 0
    with forked_heap_frozen():
        assert gc.get_freeze_count() > 10_000
        with context.Pool(1) as pool:  # forked here: the child holds the frozen objects
            frozen = pool.apply(freeze_count_here, (0,))
    assert frozen > 10_000 and gc.get_freeze_count() == 0
    probe: list[object] = []  # the caller's own freeze is left as it is: its objects stay frozen (the count
    gc.freeze()  # itself may fall meanwhile, as other threads free frozen objects)
    try:
        with forked_heap_frozen():
            pass
        assert gc.get_freeze_count() > 10_000 and not any(o is probe for o in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(o is probe for o in gc.get_objects())


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the workers come from a fork server there")
def test_a_local_dask_clusters_workers_start_with_the_clients_heap_frozen():
    pytest.importorskip("distributed")
    import gc

    from relusym._zoo._jobs import Runner

    with Runner(dask_local=2) as runner:
        runner.start()
        client = runner._client
        seen = [f.result() for f in [client.submit(freeze_count_here, i, pure=False) for i in range(4)]]
        assert gc.get_freeze_count() == 0
    assert min(seen) > 10_000


def test_a_process_that_ends_with_its_command_leaves_blas_at_one_thread(two_blas_threads, monkeypatch):
    # the relusym program ends after its command: a job's end restarts no OpenBLAS thread pool for the exit (their
    # new threads spin beside the interpreter's shutdown); any other process gets its thread counts back
    import gc

    from relusym import cli
    from relusym._zoo import _processes

    changed: dict[str, int] = {}
    _processes.one_blas_thread(changed)
    assert blas_threads() == {1} and changed
    _processes.restore_blas_threads(changed)
    assert blas_threads() == {2} and not changed
    monkeypatch.setitem(_processes._ENDING, "with the command", False)
    monkeypatch.setattr(cli, "main", lambda: 0)
    try:
        assert cli.script() == 0
    finally:
        gc.unfreeze()  # script() froze this process's heap for its exit
    assert _processes._ENDING["with the command"]
    _processes.one_blas_thread(changed)
    assert blas_threads() == {1} and changed
    _processes.restore_blas_threads(changed)
    assert blas_threads() == {1} and not changed
