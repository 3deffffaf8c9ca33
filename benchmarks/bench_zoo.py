"""Model zoos: the vectorized normal-form digests, the zoo job end to end, its fibre column and its parallel runs,
each side by side with its baseline in one run.

* **digests** (per shape m-n-k, random float32 networks): the stack digests against a loop over
  ``normal_form(net).digest()`` (what a user would otherwise write; timed on a subsample, the digests compared
  there), against the bytes-read limit (one pass that reads every weight once: ``np.add.reduce`` over the
  stack) and against the floor of the digest's definition (one SHA-256 call per network over as many bytes as
  its digest string has); CPU time of this process, wall time, and the load beside each row;
* **growth** of the digest time over 10^4 … 10^6 networks of 8-64-1 (generated chunk by chunk, as a job reads
  them);
* **the zoo job** on one stacked shard (``scan_zoo``): fibre column off, the default fibre column (decided in
  bounded time), and the fibre searches (on a subsample), per network, with the undecided rates;
* **parallel**: the same job serial, on a process pool of 2 and on a real multi-worker Dask ``LocalCluster`` (2
  workers on 127.0.0.1; the cluster's start-up timed apart), on a stacked shard and on a folder of model files;
  the tables compared byte for byte;
* **end to end, larger shapes** (``--end-to-end B1 B2``): ``relusym zoo --no-fibre`` in a fresh process on a
  stacked shard of B1 networks of 64-256-10 and B2 of 784-128-10 (imports, the numba kernel's load, reading,
  the digests, the probe values, the table), and on their first quarter, against the loop over
  ``normal_form(net).digest()`` of this process, per network, in one run: all in, and per further network
  beyond the fixed cost (the slope between the two sizes);
* **probe values** (``--probes``): the near-duplicate filter's values at the probe points, by the compiled
  loops, by a compiled BLAS product per network and by the numpy path, per shape, and the way a job takes;
* **the CLI** (``--cli N``): ``relusym zoo --no-fibre`` in fresh processes, serial, ``--workers 2``,
  ``--dask-local 2`` (its cluster's start-up included) and ``--scheduler ADDR`` of a real ``LocalCluster`` of 2
  workers started before (the cluster user's case: its first job, and a job once the cluster is warm), on a
  stacked shard and a folder, with the load before and after each run;
* **the CLI's scaling** (``--cli-scaling B …``, ``--cli-scaling-files F …``): serial, ``--workers 2``,
  ``--dask-local 2`` and ``--scheduler ADDR`` of a warm ``LocalCluster`` on stacked shards of B networks of
  8-64-1 (written block by block, a few seconds a 10^6) or folders of F files, and the straight lines through the wall
  times: each run's fixed seconds (imports, numba's load, the end of the job) and its seconds per 10^6 networks,
  the ratio those give a large job, and the size from which two workers give 1.8×.

BLAS runs on one thread per process (set OPENBLAS_NUM_THREADS to override).  The machine's load matters: compare
the ratios measured in one run, and read the load column.

    python benchmarks/bench_zoo.py --quick
    python benchmarks/bench_zoo.py --growth 10000 100000 1000000 --parallel 100000
    python benchmarks/bench_zoo.py --cli 50000 --files 1000 --only-cli
    python benchmarks/bench_zoo.py --end-to-end 5000 1000 --only-cli
    python benchmarks/bench_zoo.py --probes
    python benchmarks/bench_zoo.py --cli-scaling 250000 1000000 4000000 --cli-scaling-files 20000 60000 --only-cli
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from relusym import Network, normal_form  # noqa: E402
from relusym._zoo._digest import stack_digests  # noqa: E402
from relusym.zoo import scan_zoo  # noqa: E402

SHAPES = ((8, 64, 1), (64, 256, 10), (784, 128, 10))


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def stack(m: int, n: int, k: int, B: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((B, k, n)).astype(np.float32),
        rng.standard_normal((B, n, m)).astype(np.float32),
        rng.standard_normal((B, n)).astype(np.float32),
        rng.standard_normal((B, k)).astype(np.float32),
    )


class Clock:
    """Wall and CPU seconds of this process (children included when asked: the pool's and the cluster's workers
    are other processes, so the parallel rows report wall time)."""

    def __enter__(self) -> Clock:
        self.t, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.t, time.process_time() - self.c


class _NoJit(argparse.Action):
    """``--no-jit``: RELUSYM_NO_JIT=1 for this process and the ones it starts."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *args: object) -> None:
        os.environ["RELUSYM_NO_JIT"] = "1"


def jit_row() -> str:
    """Whether the compiled kernel runs (numba, ``relusym[fast]``), and the CPU time of its first call in this
    process: a compile, or a load from numba's cache (cache=True) when an earlier process compiled it."""
    from relusym._zoo import _digest_jit

    if not _digest_jit.jit_available():
        return "compiled kernel: off (numba missing or RELUSYM_NO_JIT=1): the numpy path"
    import numba

    with Clock() as first:  # numba's import and the first call (a process loads the kernel after 2^24 weights)
        _digest_jit.jit_available()
        stack_digests(*stack(8, 4, 1, 1, seed=0))
    st = _digest_jit._kernel().stats
    how = "loaded from numba's cache" if st.cache_hits else "compiled (no cache yet)"
    return f"compiled kernel: numba {numba.__version__}, first call {first.cpu:.2f} s CPU ({how}), load {load()}"


def _numpy_path_cpu(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    """CPU seconds of the stack digests by the numpy path (RELUSYM_NO_JIT=1), for the side-by-side column."""
    old = os.environ.get("RELUSYM_NO_JIT")
    os.environ["RELUSYM_NO_JIT"] = "1"
    try:
        with Clock() as t:
            stack_digests(V, A, b, c)
    finally:
        if old is None:
            del os.environ["RELUSYM_NO_JIT"]
        else:
            os.environ["RELUSYM_NO_JIT"] = old
    return t.cpu


def digest_row(m: int, n: int, k: int, B: int, L: int) -> str:
    V, A, b, c = stack(m, n, k, B, seed=m * 1000 + n)
    with Clock() as read:
        for x in (V, A, b, c):
            np.add.reduce(x, axis=None)
    with Clock() as vec:
        fast = stack_digests(V, A, b, c).digest
    la = load()
    numpy_cpu = _numpy_path_cpu(V, A, b, c)
    with Clock() as loop:
        ref = [normal_form(Network(V[i], A[i], b[i], c[i])).digest() for i in range(L)]
    ll = load()
    if fast[:L] != ref:
        raise AssertionError(f"digests differ for {m}-{n}-{k}")
    size = sum(len(normal_form(Network(V[i], A[i], b[i], c[i])).digest_bytes()) for i in range(min(L, 20)))
    size //= min(L, 20)
    buf = memoryview(np.random.default_rng(0).integers(0, 256, B * size, dtype=np.uint8).data)
    with Clock() as sha:  # the floor of the definition: one SHA-256 call per network over its bytes
        for i in range(B):
            hashlib.sha256(buf[i * size : (i + 1) * size]).hexdigest()
    us_vec, us_loop = vec.cpu / B * 1e6, loop.cpu / L * 1e6
    return (
        f"| {m}-{n}-{k} | {B:,} | {us_vec:,.1f} µs ({vec.wall / B * 1e6:,.1f} µs wall, load {la}) | "
        f"{us_loop:,.0f} µs ({loop.wall / L * 1e6:,.0f} µs wall, load {ll}) | {us_loop / us_vec:.1f}× | "
        f"{read.cpu / B * 1e6:.2f} µs | {sha.cpu / B * 1e6:.2f} µs ({size:,} B) | "
        f"{vec.cpu / max(read.cpu, 1e-9):,.0f}× | {vec.cpu / max(sha.cpu, 1e-9):,.1f}× | "
        f"{numpy_cpu / B * 1e6:,.1f} µs ({numpy_cpu / vec.cpu:.1f}×) |"
    )


def digest_memory_row(m: int, n: int, k: int, B: int) -> str:
    """Peak temporary memory of the stack digests (tracemalloc: numpy's buffers included), against the stack's
    own weights."""
    import tracemalloc

    V, A, b, c = stack(m, n, k, B, seed=m * 1000 + n)
    weights = sum(x.nbytes for x in (V, A, b, c))
    stack_digests(V[:2], A[:2], b[:2], c[:2])
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        stack_digests(V, A, b, c)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return (
        f"| {m}-{n}-{k} | {B:,} | {weights / 1e6:,.1f} MB | {peak / 1e6:,.1f} MB | {peak / weights:.2f}× | "
        f"{peak / B / 1e3:,.1f} kB | {load()} |"
    )


def growth(total: int, chunk: int = 4096) -> str:
    wall = cpu = 0.0
    done = seed = 0
    while done < total:
        B = min(chunk, total - done)
        V, A, b, c = stack(8, 64, 1, B, seed)
        with Clock() as t:
            sd = stack_digests(V, A, b, c)
        wall, cpu = wall + t.wall, cpu + t.cpu
        if not sd.fast.all():
            raise AssertionError("a random float32 network left the vectorized path")
        done, seed = done + B, seed + 1
    return f"| {total:,} | {cpu:.1f} s | {wall:.1f} s | {cpu / total * 1e6:.1f} | {total / cpu:,.0f} | {load()} |"


def shard(path: Path, m: int, n: int, k: int, B: int) -> Path:
    V, A, b, c = stack(m, n, k, B, seed=7)
    np.savez(path, V=V, A=A, b=b, c=c)
    return path


def big_shard(path: Path, m: int, n: int, k: int, B: int, seed: int = 7, block: int = 1 << 17) -> Path:
    """A stacked shard of ``B`` random float32 networks m-n-k, as ``np.savez`` writes one (a stored zip of .npy
    members), written block by block of ``block`` networks: a few hundred megabytes of memory for any B (stack()
    holds the whole float64 draw)."""
    import zipfile

    shapes = {"V": (k, n), "A": (n, m), "b": (n,), "c": (k,)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for t, (name, shape) in enumerate(shapes.items()):
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                header = {"descr": "<f4", "fortran_order": False, "shape": (B, *shape)}
                np.lib.format.write_array_header_2_0(fh, header)
                for s in range(0, B, block):
                    rng = np.random.default_rng((seed, t, s))
                    fh.write(rng.standard_normal((min(block, B - s), *shape), dtype=np.float32).tobytes())
    return path


def files_folder(folder: Path, files: int) -> Path:
    """A folder of ``files`` model files (16-64-4, one .npz each), as a user's zoo folder."""
    folder.mkdir(exist_ok=True)
    V, A, b, c = stack(16, 64, 4, files, seed=3)
    for i in range(files):
        np.savez(folder / f"net{i:05d}.npz", V=V[i], A=A[i], b=b[i], c=c[i])
    return folder


def job_rows(tmp: Path, m: int, n: int, k: int, B: int, search: int) -> list[str]:
    src = shard(tmp / f"shard_{m}_{n}_{k}.npz", m, n, k, B)
    out = []
    for label, kw, count in (
        ("fibre column off", {"fibre": False}, B),
        ("default fibre column (bounded time)", {}, B),
        ("fibre searches (fibre_search=True, budget 1 s)", {"fibre_search": True}, search),
    ):
        source = src if count == B else shard(tmp / f"sub_{m}_{n}_{k}.npz", m, n, k, count)
        if count == 0:
            continue
        with Clock() as t:
            res = scan_zoo(source, tmp / "job.parquet", progress=False, **kw)
        und = res.summary.get("undecided_rate") or {}
        rate = ", ".join(f"{c_} {v:.0%}" for c_, v in und.items()) if und else "—"
        out.append(
            f"| {m}-{n}-{k} | {label} | {count:,} | {t.cpu / count * 1e6:,.0f} µs | {t.wall / count * 1e6:,.0f} µs | "
            f"{rate} | {load()} |"
        )
    return out


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _worker_cpu() -> float:
    import psutil

    t = psutil.Process().cpu_times()
    return float(t.user + t.system)


def parallel_rows(tmp: Path, B: int, files: int) -> list[str]:
    """Wall time serial / pool / Dask, and the CPU seconds of the client and of the workers (children's rusage for
    the pool, each Dask worker's own counters): on a loaded machine the wall ratio says little, while the CPU
    split says what an idle machine would give (the client's share and the workers' overhead over serial)."""
    from distributed import Client, LocalCluster

    out: list[str] = []
    cpu: list[str] = []
    src = shard(tmp / "par.npz", 8, 64, 1, B)
    folder = files_folder(tmp / "files", files)
    for name, source, kw in (
        (f"stacked shard, {B:,} × 8-64-1", src, {"chunk_size": max(1, B // 16)}),
        (f"folder, {files:,} files 16-64-4", folder, {"files_per_chunk": max(1, files // 16)}),
    ):
        with Clock() as serial:
            scan_zoo(source, tmp / "s.parquet", progress=False, fibre=False, **kw)
        ls = load()
        c0 = _children_cpu()
        with Clock() as pool:
            scan_zoo(source, tmp / "p.parquet", progress=False, fibre=False, workers=2, **kw)
        lp, pool_workers = load(), _children_cpu() - c0
        with Clock() as start:
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)
        try:
            with Client(cluster) as client:
                w0 = sum(client.run(_worker_cpu).values())
                with Clock() as dask:
                    addr = cluster.scheduler_address
                    scan_zoo(source, tmp / "d.parquet", progress=False, fibre=False, scheduler=addr, **kw)
                dask_workers = sum(client.run(_worker_cpu).values()) - w0
            ld = load()
        finally:
            if cluster is not None:
                cluster.close()
        same = (tmp / "s.parquet").read_bytes() == (tmp / "p.parquet").read_bytes() == (tmp / "d.parquet").read_bytes()
        out.append(
            f"| {name} | {serial.wall:.1f} s (load {ls}) | "
            f"{pool.wall:.1f} s, {serial.wall / pool.wall:.2f}× (load {lp}) | "
            f"{dask.wall:.1f} s, {serial.wall / dask.wall:.2f}× (+{start.wall:.1f} s start-up; load {ld}) | "
            f"{'identical' if same else 'DIFFER'} |"
        )
        cpu.append(
            f"| {name} | {serial.cpu:.1f} s | {pool.cpu:.1f} s + {pool_workers:.1f} s "
            f"({serial.cpu / max(pool.cpu, pool_workers / 2):.2f}×) | {dask.cpu:.1f} s + {dask_workers:.1f} s "
            f"({serial.cpu / max(dask.cpu, dask_workers / 2):.2f}×) |"
        )
    return out + cpu


def _uptime() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


class _Cluster:
    """A real multi-worker Dask ``LocalCluster`` started before the rows that use it (2 worker processes of one
    thread each on 127.0.0.1, as a cluster user runs one: Dask's defaults otherwise), for ``--scheduler ADDR``:
    the job then pays no start-up of its own.  :meth:`cpu` is the CPU seconds of its worker processes (their own
    counters) and of this process, which holds the scheduler and the nannies while the CLI runs in another."""

    def __init__(self, workers: int = 2) -> None:
        import logging

        from distributed import Client, LocalCluster

        self.cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
        self.client = Client(self.cluster)
        self.address = str(self.cluster.scheduler_address)

    def cpu(self) -> float:
        return sum(self.client.run(_worker_cpu).values()) + time.process_time()

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


def _cli_job(source: Path, dest: Path, extra: list[str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (the process and its children) of ``relusym zoo SOURCE -o DEST --no-fibre`` in a
    fresh process."""
    import resource
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "relusym", "zoo", str(source), "-o", str(dest), "--no-fibre", "--quiet"]
    subprocess.run(cmd + (extra or []), check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


_WARM: list[bool] = []


def _warm_cli(tmp: Path) -> None:
    """One small ``relusym zoo`` job in a fresh process before the timed ones, once: after a fresh install, numba
    compiles the kernels (the digests', the probe values' and the near-duplicate sweep's, about a minute) in the
    first job that loads them, which would otherwise be the first timed row (a serial run of 10^6 networks
    measured 24 s against 11 s)."""
    if not _WARM:
        src = shard(tmp / "warm_cli.npz", 8, 64, 1, 40_000)  # over 2^24 weights: the job loads the kernels
        _cli_job(src, tmp / "warm_cli.parquet")
        _WARM.append(True)


def end_to_end_rows(tmp: Path, sizes: list[int]) -> list[str]:
    """``relusym zoo --no-fibre`` on a stacked shard in a fresh process (everything a user waits for), at
    64-256-10 and 784-128-10, on B networks and on B/4 (the same networks' first quarter): CPU per network
    all in at B; per network beyond the fixed cost (the slope between the two runs: what each further network
    costs) and that fixed cost (imports, numba's load); against a loop over ``normal_form(net).digest()`` in this
    process on L of the networks (half timed before the jobs, half after, so that the machine's drift falls on
    both sides), the digests of those L checked against the table's."""
    import pyarrow.parquet as pq

    _warm_cli(tmp)
    out = []
    for (m, n, k), B, L in zip(((64, 256, 10), (784, 128, 10)), sizes, (60, 20), strict=False):
        src = shard(tmp / f"e2e_{m}_{n}_{k}.npz", m, n, k, B)
        with np.load(src) as z:
            V, A, b, c = (z[x] for x in "VAbc")
        small = tmp / f"e2e_{m}_{n}_{k}_q.npz"
        np.savez(small, V=V[: B // 4], A=A[: B // 4], b=b[: B // 4], c=c[: B // 4])
        V, A, b, c = (x[:L].copy() for x in (V, A, b, c))
        la = load()
        loop_cpu, ref = 0.0, []
        with Clock() as t:
            ref += [normal_form(Network(V[i], A[i], b[i], c[i])).digest() for i in range(L // 2)]
        loop_cpu += t.cpu
        dest = tmp / "e2e.parquet"
        _, cpu_q = _cli_job(small, dest)
        wall, cpu = _cli_job(src, dest)
        with Clock() as t:
            ref += [normal_form(Network(V[i], A[i], b[i], c[i])).digest() for i in range(L // 2, L)]
        loop_cpu += t.cpu
        if pq.read_table(dest, columns=["digest"]).column(0).to_pylist()[:L] != ref:
            raise AssertionError(f"digests differ for {m}-{n}-{k}")
        us_loop, us_job = loop_cpu / L * 1e6, cpu / B * 1e6
        us_more = (cpu - cpu_q) / (B - B // 4) * 1e6
        fixed = cpu - us_more * B * 1e-6
        out.append(
            f"| {m}-{n}-{k} | {B:,} | {us_job:,.0f} µs ({wall / B * 1e6:,.0f} µs wall), {us_loop / us_job:.1f}× | "
            f"{us_more:,.0f} µs, {us_loop / us_more:.1f}× | {fixed:.2f} s | {us_loop:,.0f} µs (L = {L}) | "
            f"{la} → {load()} |"
        )
        for x in (dest, src, small):
            x.unlink()
    return out


def _warm_cluster_shard(tmp: Path) -> Path:
    """The shard whose job warms a ``--scheduler`` cluster: its workers import relusym and load the compiled
    kernels.  A worker loads them once it has digested 2^24 weights, or at once for a task of 2^21 (``EAGER_JIT``);
    this job's tasks are below that, so it must bring each of two workers past 2^24: 100,000 networks of 8-64-1,
    3.2·10^7 weights each.  (The shard of 40,000 used before left them at 1.3·10^7, and the timed job loaded them
    midway: a 20,000-file folder 3.9-5.2 s against 3.1-3.3 s.)"""
    return big_shard(tmp / "warm_cluster.npz", 8, 64, 1, 100_000)


def cli_rows(tmp: Path, B: int, files: int) -> list[str]:
    """``relusym zoo --no-fibre`` as a user runs it (a fresh process each: imports, reading, the job, the table),
    serial against ``--workers 2``, ``--dask-local 2`` (the cluster's start-up included) and ``--scheduler ADDR``
    of a real ``LocalCluster`` of 2 workers started before (:class:`_Cluster`; its first job, whose workers import
    relusym and load the compiled kernels where their share reaches 2^24 weights, and a job once a shard has
    warmed it (:func:`_warm_cluster_shard`): the cluster user's steady state; a worker whose first job was a
    folder of 20,000 files of 16-64-4, 1.35·10^7 weights each, digests it on numpy's path and loads the kernels
    in the middle of its second job), on a stacked shard and on a folder of files: wall
    time, CPU time of the process and all its children (the pool's workers; the Dask nanny's workers are its
    grandchildren and are counted once they exit; for ``--scheduler``, the cluster's workers and scheduler too),
    the load before and after, and whether the tables are byte-identical."""
    _warm_cli(tmp)
    src = shard(tmp / "cli.npz", 8, 64, 1, B)
    folder = files_folder(tmp / "cli_files", files)
    warm = _warm_cluster_shard(tmp)
    out = []
    for name, source in ((f"stacked shard, {B:,} × 8-64-1", src), (f"folder, {files:,} files 16-64-4", folder)):
        tables = []
        walls = []
        cpus = []
        cluster: _Cluster | None = None  # started after the other rows, so that it idles through none of them
        try:
            for mode, extra in (
                ("serial", []),
                ("--workers 2", ["--workers", "2"]),
                ("--dask-local 2 (start-up included)", ["--dask-local", "2"]),
                (
                    "--scheduler ADDR (LocalCluster of 2 started before; its first job)",
                    ["--scheduler"],
                ),
                ("--scheduler ADDR (the same cluster, warm)", ["--scheduler"]),
            ):
                if "--scheduler" in extra:
                    if cluster is not None:  # warmed: its workers hold the kernels (see the docstring)
                        _cli_job(warm, tmp / "warm_cluster.parquet", ["--scheduler", cluster.address])
                    cluster = cluster or _Cluster(2)
                    extra = [*extra, cluster.address]
                dest = tmp / f"cli_{len(tables)}.parquet"
                before = _uptime()
                c0 = cluster.cpu() if cluster is not None else 0.0
                wall, cpu = _cli_job(source, dest, extra)
                if cluster is not None:
                    cpu += cluster.cpu() - c0
                tables.append(dest.read_bytes())
                walls.append(wall)
                cpus.append(cpu)
                ratio = "" if mode == "serial" else f", {walls[0] / wall:.2f}× serial"
                # the CPU of the client and all its workers against the serial run's: the overhead of going
                # parallel, which the load of a shared machine disturbs less than the wall ratio
                cpu_ratio = "" if mode == "serial" else f" ({cpu / cpus[0]:.2f}× serial)"
                out.append(
                    f"| {name} | {mode} | {wall:.1f} s{ratio} | {cpu:.1f} s{cpu_ratio} | {before} | {_uptime()} |"
                )
        finally:
            if cluster is not None:
                cluster.close()
        same = all(t == tables[0] for t in tables)
        out.append(f"| {name} | tables | {'byte-identical' if same else 'DIFFER'} | | | |")
    return out


def _line(x: list[float], y: list[float]) -> tuple[float, float]:
    """The least-squares line y = a + b·x: (a, b)."""
    b_, a_ = np.polyfit(np.asarray(x, dtype=float), np.asarray(y, dtype=float), 1)
    return float(a_), float(b_)


def scaling_rows(tmp: Path, sizes: list[int], files: bool = False) -> list[str]:
    """``relusym zoo --no-fibre`` serial, ``--workers 2``, ``--dask-local 2`` (its start-up included) and
    ``--scheduler ADDR`` of a ``LocalCluster`` of 2 workers started before that row and warmed by a first job (the
    cluster user's steady state; started for that row alone, so that it idles through no other) on stacked shards
    of 8-64-1 of each size, or on folders of that many files of 16-64-4 (``files``): fresh processes, one run
    each, the tables compared byte for byte.  Then for each way the line through its wall times: fixed seconds and
    seconds per 10^6 networks.  A job of B networks then takes a + b·B; two workers' ratio tends to
    b_serial / b_parallel as B grows, and passes 1.8× from B* = (1.8·a_parallel − a_serial) /
    (b_serial − 1.8·b_parallel) on (when the slopes allow it)."""
    import shutil

    _warm_cli(tmp)
    modes = (
        ("serial", []),
        ("--workers 2", ["--workers", "2"]),
        ("--dask-local 2", ["--dask-local", "2"]),
        ("--scheduler ADDR (warm)", ["--scheduler"]),
    )
    walls: dict[str, list[float]] = {name: [] for name, _ in modes}
    out = []
    kind = "files 16-64-4" if files else "8-64-1"
    warm = _warm_cluster_shard(tmp)
    for B in sizes:
        src = files_folder(tmp / "scale_files", B) if files else big_shard(tmp / "scale.npz", 8, 64, 1, B)
        tables = []
        for name, extra in modes:
            # the scheduler's cluster started and warmed for its row alone: an idle cluster polls (Dask's defaults)
            cluster = _Cluster(2) if "--scheduler" in extra else None
            try:
                if cluster is not None:
                    _cli_job(warm, tmp / "warm_cluster.parquet", ["--scheduler", cluster.address])
                    extra = [*extra, cluster.address]
                dest = tmp / f"scale_{len(tables)}.parquet"
                before = _uptime()
                c0 = cluster.cpu() if cluster is not None else 0.0
                wall, cpu = _cli_job(src, dest, extra)
                cpu += cluster.cpu() - c0 if cluster is not None else 0.0
            finally:
                if cluster is not None:
                    cluster.close()
            tables.append(dest.read_bytes())
            dest.unlink()
            walls[name].append(wall)
            ratio = "" if name == "serial" else f", {walls['serial'][-1] / wall:.2f}× serial"
            out.append(f"| {B:,} {kind} | {name} | {wall:.1f} s{ratio} | {cpu:.1f} s | {before} | {_uptime()} |")
        same = all(t == tables[0] for t in tables)
        out.append(f"| {B:,} {kind} | tables | {'byte-identical' if same else 'DIFFER'} | | | |")
        shutil.rmtree(src) if files else src.unlink()
    if len(sizes) >= 2:
        a_s, b_s = _line([float(x) for x in sizes], walls["serial"])
        for name, _ in modes[1:]:
            a_p, b_p = _line([float(x) for x in sizes], walls[name])
            denom = b_s - 1.8 * b_p
            star = (1.8 * a_p - a_s) / denom if denom > 0 else float("inf")
            where = "never" if star == float("inf") else ("any size" if star <= 0 else f"{star:,.0f} networks")
            out.append(
                f"| line ({kind}) | {name} | fixed {a_p:.2f} s + {b_p * 1e6:.2f} s per 10^6 (serial: fixed "
                f"{a_s:.2f} s + {b_s * 1e6:.2f} s per 10^6) | a large job's ratio {b_s / b_p:.2f}× | 1.8× from | "
                f"{where} |"
            )
    return out


PROBE_SHAPES = ((8, 64, 1), (16, 64, 4), (32, 64, 4), (64, 64, 10), (32, 128, 10), (64, 256, 10), (784, 128, 10))


def probe_rows() -> list[str]:
    """The probe values of the near-duplicate filter three ways, on the same stacks (200 to 20,000 networks, at
    most 2^25 weights of A a shape), best of 3, CPU per network: the compiled loops, the compiled per-network BLAS
    product, the numpy path (blocks of networks); their values compared (within 1e-12 of the values' scale), and
    the way a job takes."""
    from relusym._zoo import _planning, _summary

    _planning.load_kernels()
    if _summary.probe_kernel() is None:
        return ["| (the compiled kernels are off: numba missing or RELUSYM_NO_JIT=1) |"]
    out = []
    for m, n, k in PROBE_SHAPES:
        B = max(200, min(20000, (1 << 25) // (n * m)))
        V, A, b, c = stack(m, n, k, B, seed=m + n)
        X = _summary._probe_points(m, 8)
        times, vals = [], []
        la = load()
        for way in ("kernel", "blas", "numpy"):
            best = float("inf")
            for _ in range(3):
                v, d = np.empty((B, 8 * k)), np.empty((B, 5))
                with Clock() as t:
                    if way == "numpy":
                        old = _summary._PROBE_JIT["kernel"]
                        _summary._PROBE_JIT["kernel"] = None
                        try:
                            v, d = _summary.probe_stack(V, A, b, c, 8)
                        finally:
                            _summary._PROBE_JIT["kernel"] = old
                    else:
                        _summary._PROBE_JIT["kernel"](V, A, b, c, X, v, d, way == "blas")
                best = min(best, t.cpu)
            times.append(best / B * 1e6)
            vals.append(v)
        scale = np.abs(vals[0]).max() + 1.0
        if max(float(np.abs(x - vals[0]).max()) for x in vals[1:]) > 1e-12 * scale:
            raise AssertionError(f"probe values differ at {m}-{n}-{k}")
        pick = "BLAS" if _summary._blas_shape(n, m) else "loops"
        out.append(
            f"| {m}-{n}-{k} | {B:,} | {times[0]:,.1f} µs | {times[1]:,.1f} µs | {times[2]:,.1f} µs | "
            f"{times[0] / times[1]:.2f}× | {pick} | {la} → {load()} |"
        )
    return out


def _table(header: str, rows: Any) -> None:
    """Print a Markdown table: the header, its rule, then the rows ``rows(tmp)`` returns (tmp: a fresh temporary
    folder, removed afterwards)."""
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    with tempfile.TemporaryDirectory() as d:
        for row in rows(Path(d)):
            print(row, flush=True)
    print()


def _cli_tables(args: argparse.Namespace) -> bool:
    """The tables of ``--probes``, ``--cli`` and ``--end-to-end``; whether the run ends with them."""
    if args.probes:
        _table(
            "| shape m-n-k | networks | compiled loops, CPU per network | compiled BLAS per network | numpy path "
            "(blocks) | loops / BLAS | the job's way | load |",
            lambda tmp: probe_rows(),
        )
        return True
    if args.cli:
        _table(
            "| `relusym zoo --no-fibre` | run | wall | CPU (process + children) | load before | load after |",
            lambda tmp: cli_rows(tmp, args.cli, args.files if args.files is not None else 1000),
        )
    for sizes, files in ((args.cli_scaling, False), (args.cli_scaling_files, True)):
        if sizes:
            _table(
                "| networks | `relusym zoo --no-fibre` | wall | CPU (process + children; the cluster's too) | "
                "load before | load after |",
                lambda tmp, sizes=sizes, files=files: scaling_rows(tmp, sizes, files),
            )
    if args.end_to_end:
        _table(
            "| shape m-n-k | networks B | `relusym zoo --no-fibre`, fresh process: CPU per network, the loop / it | "
            "each further network (B/4 → B), the loop / it | fixed cost | loop over normal_form(net).digest(), "
            "CPU per network | load |",
            lambda tmp: end_to_end_rows(tmp, args.end_to_end),
        )
    return bool(args.only_cli)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    p.add_argument("--growth", type=int, nargs="*", default=None, help="zoo sizes for the growth table (8-64-1)")
    p.add_argument("--job", type=int, default=None, help="networks of the zoo job rows (8-64-1)")
    p.add_argument("--parallel", type=int, default=None, help="networks of the parallel shard (0: skip)")
    p.add_argument("--files", type=int, default=None, help="files of the parallel folder")
    p.add_argument(
        "--cli",
        type=int,
        default=0,
        help="networks of the CLI rows (relusym zoo: serial, pool, Dask, a cluster started before; 0: skip)",
    )
    p.add_argument(
        "--cli-scaling",
        type=int,
        nargs="*",
        default=None,
        metavar="B",
        help="shard sizes of the CLI's scaling rows (serial, --workers 2, --dask-local 2, --scheduler; the lines)",
    )
    p.add_argument(
        "--cli-scaling-files",
        type=int,
        nargs="*",
        default=None,
        metavar="F",
        help="folder sizes (files of 16-64-4) of the CLI's scaling rows, as --cli-scaling",
    )
    p.add_argument(
        "--end-to-end",
        type=int,
        nargs=2,
        default=None,
        metavar=("B1", "B2"),
        help="networks of the end-to-end CLI rows at 64-256-10 and 784-128-10 (fresh processes, against the loop)",
    )
    p.add_argument("--probes", action="store_true", help="only the probe-value rows (loops, BLAS, numpy)")
    p.add_argument("--only-cli", action="store_true", help="only the CLI rows (and the end-to-end rows)")
    p.add_argument("--only-digests", action="store_true", help="only the digest, memory and growth rows")
    p.add_argument("--no-jit", action=_NoJit, nargs=0, help="without the compiled kernel (RELUSYM_NO_JIT=1)")
    args = p.parse_args()
    q = args.quick
    sizes = {(8, 64, 1): (4096, 100), (64, 256, 10): (64, 8), (784, 128, 10): (24, 4)}
    if not q:
        sizes = {(8, 64, 1): (16384, 300), (64, 256, 10): (256, 24), (784, 128, 10): (64, 8)}
    print(f"load at start: {load()}\n")
    print(jit_row() + "\n")
    if _cli_tables(args):
        return
    print(
        "| shape m-n-k | networks | stack digests, CPU per network | loop over normal_form(net).digest(), CPU per "
        "network | ratio (CPU) | reading the weights once, CPU per network | SHA-256 of the digest's bytes, one call "
        "per network (its floor) | digest / read | digest / SHA-256 floor | numpy path (RELUSYM_NO_JIT=1), CPU per "
        "network (its / this) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        print(digest_row(*shape, *sizes[shape]), flush=True)
    print(
        "\n| shape m-n-k | networks | the stack's weights | peak temporaries of the digests | ratio | per network "
        "| load |"
    )
    print("|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        print(digest_memory_row(*shape, sizes[shape][0]), flush=True)
    sizes_g = args.growth if args.growth is not None else ([10_000] if q else [10_000, 100_000])
    if sizes_g:
        print("\n| networks (8-64-1) | digest CPU | wall | CPU µs per network | networks/s (CPU) | load |")
        print("|---|---|---|---|---|---|")
        for total in sizes_g:
            print(growth(total), flush=True)
    if args.only_digests:
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        jb = args.job if args.job is not None else (2000 if q else 20000)
        scan_zoo(shard(tmp / "warm.npz", 8, 64, 1, 64), progress=False)  # imports and caches warm
        print(
            "\n| shape | zoo job on a stacked shard | networks | CPU per network | wall per network | undecided "
            "| load |"
        )
        print("|---|---|---|---|---|---|---|")
        for row in job_rows(tmp, 8, 64, 1, jb, 20 if q else 50):
            print(row, flush=True)
        for row in job_rows(tmp, 64, 256, 10, 40 if q else 200, 4 if q else 10):
            print(row, flush=True)
        pb = args.parallel if args.parallel is not None else (20000 if q else 100000)
        if pb:
            files = args.files if args.files is not None else (200 if q else 1000)
            print(
                "\n| zoo job (fibre column off) | serial | process pool, 2 workers | Dask LocalCluster, 2 workers "
                "| tables |"
            )
            print("|---|---|---|---|---|")
            rows = parallel_rows(tmp, pb, files)
            for row in rows[: len(rows) // 2]:
                print(row, flush=True)
            print(
                "\n| CPU seconds | serial | pool: client + 2 workers (serial / max(client, workers / 2)) | "
                "Dask: client + 2 workers (same) |"
            )
            print("|---|---|---|---|")
            for row in rows[len(rows) // 2 :]:
                print(row, flush=True)


if __name__ == "__main__":
    main()
