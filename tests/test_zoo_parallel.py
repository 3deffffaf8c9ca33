"""The zoo job's overheads outside the digest (issue 23 items 1 and 3): the compiled probe values against their
definition and the numpy path, the kernels loaded once by the client of a large job (its forked workers inherit
them) with tables byte-identical to serial, the shard sources written by pyarrow, and the census's options
added to the command line only when the census runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relusym
from relusym import Network
from relusym._zoo import _planning, _run, _summary
from relusym._zoo._sources import Chunk, Item, StackRows, item_sources

pa = pytest.importorskip("pyarrow")

from relusym.zoo import scan_zoo  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _numba() -> None:
    pytest.importorskip("numba")
    if os.environ.get("RELUSYM_NO_JIT", "") not in ("", "0"):
        pytest.skip("RELUSYM_NO_JIT is set")


def _definition(V, A, b, c, P):
    """The probe values and scale quantities from their definitions, network by network (float64)."""
    B, n, m = A.shape
    X = _summary._probe_points(m, P)
    vals, nd = [], []
    for i in range(B):
        V_, A_, b_, c_ = (np.asarray(x[i], dtype=np.float64) for x in (V, A, b, c))
        H = np.maximum(X @ A_.T + b_, 0.0)  # P × n
        vals.append((H @ V_.T + c_).ravel())  # P × k, probe-major
        an = np.linalg.norm(A_, axis=1)
        h = np.hypot(an, b_)
        terms = np.linalg.norm(V_, axis=0) * h
        w = [h[j] / an[j] for j in range(n) if an[j] > 0]
        nd.append([terms.sum(), max(terms.max(), 0.0), np.linalg.norm(c_), float(n), max(w, default=0.0)])
    return np.array(vals), np.array(nd)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape", [(64, 1, 64, 8), (30, 3, 5, 2), (12, 10, 7, 30), (6, 2, 1, 1), (3, 4, 64, 64), (5, 2, 64, 16)]
)
def test_probe_kernel_and_numpy_path_agree_with_the_definition(shape, dtype, monkeypatch):
    _numba()
    _planning.load_kernels()
    kernel = _summary.probe_kernel()
    assert kernel is not None
    B, k, n, m = shape
    rng = np.random.default_rng(B * 1000 + n)
    V = rng.standard_normal((B, k, n)).astype(dtype)
    A = (rng.standard_normal((B, n, m)) * 2.0 ** rng.integers(-20, 20, (B, n, 1))).astype(dtype)
    b = rng.standard_normal((B, n)).astype(dtype)
    c = rng.standard_normal((B, k)).astype(dtype)
    A[0, 0] = 0.0  # a constant neuron: no hyperplane, left out of the max of ‖(a, b)‖/‖a‖
    b[1 % B] = 0.0
    V[2 % B, :, -1] = 0.0
    want_vals, want_nd = _definition(V, A, b, c, 8)
    jit_vals, jit_nd = _summary.probe_stack(V, A, b, c, 8)
    both = []  # the compiled kernel both ways (loops, BLAS), whichever the shape picks
    for blas in (False, True):
        v, d = np.empty_like(want_vals), np.empty_like(want_nd)
        kernel(V, A, b, c, _summary._probe_points(m, 8), v, d, blas)
        both.append((v, d))
    assert _summary._blas_shape(n, m) == (shape in ((3, 4, 64, 64), (5, 2, 64, 16)))
    monkeypatch.setitem(_summary._PROBE_JIT, "kernel", None)
    np_vals, np_nd = _summary.probe_stack(V, A, b, c, 8)
    scale = np.abs(want_vals).max(axis=1, keepdims=True) + want_nd[:, [0]] + want_nd[:, [2]]
    for vals, nd in ((jit_vals, jit_nd), (np_vals, np_nd), *both):
        assert vals.shape == want_vals.shape and nd.shape == want_nd.shape
        assert np.all(np.abs(vals - want_vals) <= 1e-13 * scale)  # far inside the radius's slack of 1e-12
        assert np.allclose(nd, want_nd, rtol=1e-13, atol=0.0)


def test_kernels_load_once_per_process(monkeypatch):
    _numba()
    _planning.load_kernels()
    calls: list[int] = []
    monkeypatch.setattr(_planning, "stack_digests", lambda *a: calls.append(1))
    monkeypatch.setattr(_planning, "jit_available", lambda: calls.append(2) or True)
    for _ in range(3):
        _planning.load_kernels()
    assert calls == [] and _planning.probe_kernel() is not None


def test_probe_kernel_keeps_the_near_clusters(tmp_path, monkeypatch):
    """Near-duplicate clusters (and the whole table) are the same whether the probe values come from the compiled
    kernel or from numpy, and follow ``equivalent_approx``."""
    _numba()
    _planning.load_kernels()
    rng = np.random.default_rng(11)
    B, k, n, m = 40, 2, 6, 3
    V = rng.standard_normal((B, k, n))
    A = rng.standard_normal((B, n, m))
    b = rng.standard_normal((B, n))
    c = rng.standard_normal((B, k))
    for i in range(0, 12, 2):  # near duplicates: relative changes of 1e-12 .. 1e-7 (rtol 1e-9 splits them)
        eps = 10.0 ** -(12 - i // 2)
        V[i + 1], A[i + 1], b[i + 1], c[i + 1] = V[i] * (1 + eps), A[i], b[i] + eps, c[i]
    V[20], A[20], b[20], c[20] = V[3], A[3] * 2.0, b[3] * 2.0, c[3]  # V·relu(2x) / 2: not the same; kept apart
    V[20] /= 2.0
    np.savez(tmp_path / "shard.npz", V=V, A=A, b=b, c=c)
    jit = scan_zoo(tmp_path / "shard.npz", tmp_path / "jit.parquet", fibre=False, progress=False)
    monkeypatch.setitem(_summary._PROBE_JIT, "kernel", None)
    plain = scan_zoo(tmp_path / "shard.npz", tmp_path / "numpy.parquet", fibre=False, progress=False)
    assert (tmp_path / "jit.parquet").read_bytes() == (tmp_path / "numpy.parquet").read_bytes()
    assert jit.summary == plain.summary
    d = jit.table.to_pydict()
    nets = [Network(V[i], A[i], b[i], c[i]) for i in range(B)]
    for i in range(B):
        for j in range(i + 1, B):
            same = d["near_cluster"][i] == d["near_cluster"][j]
            assert same == bool(relusym.equivalent_approx(nets[i], nets[j], atol=0.0, rtol=1e-9)), (i, j)
    assert len(jit.summary["near_duplicate_groups"]) >= 3


@pytest.mark.parametrize("name", ["shard.npz", "zoo/ünïcode shard.npz", ""])
@pytest.mark.parametrize(("start", "stop"), [(0, 0), (0, 1), (7, 130), (99990, 100011)])
def test_shard_sources_are_the_names_row_by_row(name, start, stop):
    rows = StackRows(name, 5, start, stop)
    got = item_sources(rows)
    assert got.type == pa.string()
    assert got.to_pylist() == [f"{name}#{r}" for r in range(start, stop)] == [it.source for it in rows]
    items = [Item("a", 0), Item("b#3", 1)]
    assert item_sources(items).to_pylist() == ["a", "b#3"]


def test_eager_kernels_only_for_large_shard_tasks():
    from relusym._zoo._sources import auto_rows

    shapes = {"s.npz": (100000, 64, 8)}  # A: B × n × m, 576 weights a row counted
    default = auto_rows(shapes["s.npz"])  # a default task of a large shard: eager
    assert _planning._eager(Chunk(0, "shard", ("s.npz",), ("s.npz",), 0, default, 0), shapes)
    rows = -(-_planning.EAGER_JIT // (64 * 9))
    assert _planning._eager(Chunk(0, "shard", ("s.npz",), ("s.npz",), 0, rows, 0), shapes)
    assert not _planning._eager(Chunk(0, "shard", ("s.npz",), ("s.npz",), 0, rows - 1, 0), shapes)
    assert not _planning._eager(Chunk(0, "shard", ("t.npz",), ("t.npz",), 0, rows, 0), shapes)  # shape unknown
    assert not _planning._eager(Chunk(0, "files", ("s.npz",), ("s.npz",), 0, rows, 0), shapes)


def test_kernels_loaded_first_when_every_process_would_load_them(tmp_path, monkeypatch):
    """A shard of small tasks (each below the eager size) whose weights exceed 2^24 per process of the run: the
    kernels are loaded before the first task (serially; not with workers that each see less, not for a folder)."""
    from relusym._zoo._jobs import Runner
    from relusym._zoo._sources import auto_rows

    shapes = {"s.npz": (1250, 256, 64)}  # 64-256-10: 24 tasks of 53 networks, 8.8·10^5 weights each
    rows = auto_rows(shapes["s.npz"])
    assert rows == 53
    chunks = [
        Chunk(i, "shard", ("s.npz",), ("s.npz",), i * rows, min(1250, i * rows + rows), i * rows) for i in range(24)
    ]
    assert sum(c.size for c in chunks) == 1250 and not any(_planning._eager(c, shapes) for c in chunks)
    weights = 1250 * 256 * 65
    assert weights >= _planning.JIT_WORK
    assert _planning._each_pays(chunks, shapes, Runner())
    assert _planning._each_pays(chunks, shapes, Runner(workers=1))
    assert not _planning._each_pays(chunks, shapes, Runner(workers=2))  # 1.04·10^7 weights each: below 2^24
    assert not _planning._each_pays(chunks, shapes, Runner(dask_local=2))
    assert not _planning._each_pays(chunks, {}, Runner())  # shape unknown
    files = [Chunk(i, "files", ("s.npz",), ("s.npz",), c.start, c.stop, c.first) for i, c in enumerate(chunks)]
    assert not _planning._each_pays(files, shapes, Runner())
    # a real serial job: its client loads the kernels before its first task
    calls: list[int] = []
    monkeypatch.setattr(_planning, "load_kernels", lambda: calls.append(len(calls)))
    monkeypatch.setattr(_planning, "JIT_WORK", 64 * 3 * 5 + 1)
    rng = np.random.default_rng(2)
    V, A, b, c = (rng.standard_normal(x).astype(np.float32) for x in ((64, 1, 3), (64, 3, 4), (64, 3), (64, 1)))
    np.savez(tmp_path / "s.npz", V=V, A=A, b=b, c=c)
    scan_zoo(tmp_path / "s.npz", fibre=False, progress=False)
    assert calls == []  # 960 weights: below
    monkeypatch.setattr(_planning, "JIT_WORK", 64 * 3 * 5)
    scan_zoo(tmp_path / "s.npz", fibre=False, progress=False)
    assert calls == [0]


def _small_files(folder: Path, count: int, seed: int = 5) -> list[Path]:
    """``count`` single networks 3-4-2 of float32, one ``.npz`` each (their sizes differ by the zip's names)."""
    folder.mkdir()
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        V, A, b, c = (rng.standard_normal(x).astype(np.float32) for x in ((2, 4), (4, 3), (4,), (2,)))
        np.savez(folder / f"net{i:03d}.npz", V=V, A=A, b=b, c=c)
        out.append(folder / f"net{i:03d}.npz")
    return out


def test_folder_weights_estimated_from_file_sizes(tmp_path):
    """The estimate is the files' bytes / 4: exact when every file is sampled (at most 64), the sampled files'
    mean size times their count beyond; missing files count nothing."""
    paths = [str(x) for x in _small_files(tmp_path / "f", 150)]
    sizes = [os.stat(x).st_size for x in paths]
    assert _planning._file_weights(paths[:64]) == sum(sizes[:64]) // 4
    assert _planning._file_weights(paths[:10] + [str(tmp_path / "gone.npz")]) == sum(sizes[:10]) * 11 // (4 * 11)
    step = len(paths) // 64
    sample = sizes[::step][:64]
    assert _planning._file_weights(paths) == sum(sample) * 150 // (4 * 64)
    assert _planning._file_weights([]) == 0 and _planning._file_weights([str(tmp_path / "gone.npz")]) == 0


def test_kernels_loaded_first_for_a_folder_of_files_every_process_would_load_them(tmp_path, monkeypatch):
    """A folder of single-network files whose bytes / 4 reach 2^24 per process: the client loads the kernels before
    its first task (serially, when the folder is large enough; with a pool that plans on its workers, while a
    helper pool reads the headers, before the job's pool forks), and not when the files are too few."""
    from relusym._zoo._jobs import Runner

    paths = _small_files(tmp_path / "zoo", 12)
    total = sum(os.stat(x).st_size for x in paths) // 4
    chunks = [Chunk(0, "files", tuple(map(str, paths)), tuple(x.name for x in paths), 0, 0, 0)]
    monkeypatch.setattr(_planning, "JIT_WORK", total)
    assert _planning._each_pays(chunks, {}, Runner()) and not _planning._each_pays(chunks, {}, Runner(workers=2))
    events: list[str] = []
    monkeypatch.setattr(_planning, "load_kernels", lambda: events.append("load"))
    scan_zoo(tmp_path / "zoo", fibre=False, progress=False)
    assert events == ["load"]
    monkeypatch.setattr(_planning, "JIT_WORK", total + 1)
    scan_zoo(tmp_path / "zoo", fibre=False, progress=False)
    assert events == ["load"]  # below: nothing loaded first
    # a pool that reads the headers (one file a task) of files that reach 2^24 weights in all: on a helper pool
    # while the client loads the kernels, the job's pool forked after that (where pools fork); below, on the
    # job's own pool and nothing loaded first; nor when the client has loaded the kernels already
    real_start, real_helper = _run.Runner.start, _run.Runner.helper_pool

    def start(self):
        if not self.started:
            events.append("helper" if getattr(self, "helper", False) else "job")
        real_start(self)

    def helper_pool(self):
        pool = real_helper(self)
        pool.helper = True
        return pool

    monkeypatch.setattr(_run.Runner, "start", start)
    monkeypatch.setattr(_run.Runner, "helper_pool", helper_pool)
    monkeypatch.setattr(_planning, "jit_installed", lambda: True)
    monkeypatch.setitem(_planning._KERNELS, "loaded", False)
    monkeypatch.setattr(_planning, "_PLAN_FILES", 1)
    monkeypatch.setattr(_planning, "JIT_WORK", total)
    forks = Runner(workers=2).forks
    assert forks == (2 if sys.platform.startswith("linux") and sys.version_info < (3, 12) else 0)
    for jit_work, loaded, want in [
        (total, False, ["helper", "load", "job"] if forks else ["job"]),
        (total + 1, False, ["job"]),
        (total, True, ["job"]),
    ]:
        monkeypatch.setattr(_planning, "JIT_WORK", jit_work)
        monkeypatch.setitem(_planning._KERNELS, "loaded", loaded)
        events.clear()
        scan_zoo(tmp_path / "zoo", tmp_path / "pool.parquet", fibre=False, progress=False, workers=2)
        assert events == want, (jit_work, loaded)


def doubled_here(x: int) -> tuple[int, int]:
    """(a pool task) twice ``x``, and the process that computed it."""
    import time

    time.sleep(0.02)
    return 2 * x, os.getpid()


def test_a_pool_of_one_helper_and_the_client_share_the_tasks_it_has_not_started():
    """A helper pool of one worker (:meth:`Runner.helper_pool` leaves the client a core): once ``on_submitted``
    has run, the client runs the tasks the pool has not started, from the last, and every task's result comes
    once, right, from one process or the other."""
    from relusym._zoo._jobs import Runner

    seen: list[str] = []
    with Runner(workers=1, pool=True) as helper:
        assert helper.parallel
        tasks = [(i,) for i in range(40)]
        got = dict(helper.run(doubled_here, tasks, on_submitted=lambda: seen.append("s"), join=True))
    assert seen == ["s"] and sorted(got) == list(range(40))
    assert all(got[i][0] == 2 * i for i in range(40))
    here = [i for i in range(40) if got[i][1] == os.getpid()]
    assert 0 < len(here) < 40 and here == list(range(40 - len(here), 40))  # the client took the last ones
    with Runner(workers=1, pool=True) as helper:  # without join the pool runs them all
        assert {pid for _, pid in dict(helper.run(doubled_here, [(i,) for i in range(6)])).values()} != {os.getpid()}
    assert not Runner(workers=1).parallel  # --workers 1 stays a serial run


def _record_kernels_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every chunk run from now on, here or in a forked worker, leaves a file ``PID-INDEX`` in the folder returned,
    holding whether its process had loaded the kernels."""
    flags = tmp_path / "flags"
    flags.mkdir()
    real = _run.run_chunk

    def recorded(chunk, options):
        (flags / f"{os.getpid()}-{chunk.index}").write_text(str(bool(_planning._KERNELS.get("loaded"))))
        return real(chunk, options)

    monkeypatch.setattr(_run, "run_chunk", recorded)
    return flags


@pytest.mark.slow
def test_a_folder_planned_on_a_helper_pool_while_the_kernels_load_same_bytes(tmp_path, monkeypatch):
    """A folder of files whose weights reach 2^24 (the bound lowered), planned on two workers: the client loads the
    real kernels while a helper pool reads the headers, the job's pool forks after, and every one of its tasks
    finds them loaded (where pools fork); the table is the serial one, byte for byte, on a pool and on a local
    Dask cluster."""
    _numba()
    paths = _small_files(tmp_path / "zoo", 40)
    kw = {"fibre": False, "progress": False, "files_per_chunk": 5}
    scan_zoo(tmp_path / "zoo", tmp_path / "serial.parquet", **kw)
    flags = _record_kernels_loaded(tmp_path, monkeypatch)
    monkeypatch.setattr(_planning, "_PLAN_FILES", 4)
    monkeypatch.setattr(_planning, "JIT_WORK", sum(os.stat(x).st_size for x in paths) // 4)
    monkeypatch.setitem(_planning._KERNELS, "loaded", False)  # as in a fresh client
    scan_zoo(tmp_path / "zoo", tmp_path / "pool.parquet", workers=2, **kw)
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "pool.parquet").read_bytes()
    in_workers = {p.name: p.read_text() for p in flags.iterdir() if not p.name.startswith(f"{os.getpid()}-")}
    assert len(in_workers) == 8
    if sys.platform.startswith("linux") and sys.version_info < (3, 12):  # forked workers
        assert set(in_workers.values()) == {"True"}, in_workers
    pytest.importorskip("distributed")
    monkeypatch.setitem(_planning._KERNELS, "loaded", False)
    scan_zoo(tmp_path / "zoo", tmp_path / "local.parquet", dask_local=2, **kw)
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "local.parquet").read_bytes()


@pytest.mark.slow
def test_large_tasks_pool_inherits_the_kernels_same_bytes(tmp_path, monkeypatch):
    """A shard of default tasks (2^22 weights): the client loads the kernels before its pool forks and every task
    finds them loaded (on Linux, where the pool forks); serial, the pool and a resumed pool job write the same
    bytes."""
    _numba()
    monkeypatch.setitem(_planning._KERNELS, "loaded", False)  # as in a fresh client
    flags = _record_kernels_loaded(tmp_path, monkeypatch)
    rng = np.random.default_rng(5)
    B = 2 * 7281 + 100  # 8-64-1: tasks of 7281 rows (2^22 weights, the default task of a larger shard): three
    V = rng.standard_normal((B, 1, 64)).astype(np.float32)
    A = rng.standard_normal((B, 64, 8)).astype(np.float32)
    b = rng.standard_normal((B, 64)).astype(np.float32)
    c = rng.standard_normal((B, 1)).astype(np.float32)
    V[B // 2], A[B // 2], b[B // 2], c[B // 2] = V[0], A[0], b[0], c[0]  # one exact duplicate
    np.savez(tmp_path / "shard.npz", V=V, A=A, b=b, c=c)
    src = tmp_path / "shard.npz"
    kw = {"fibre": False, "progress": False, "chunk_size": 7281}
    serial = scan_zoo(src, tmp_path / "serial.parquet", **kw)
    pool = scan_zoo(src, tmp_path / "pool.parquet", workers=2, **kw)
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "pool.parquet").read_bytes()
    assert serial.summary == pool.summary and len(serial.summary["exact_duplicate_groups"]) == 1
    in_workers = {p.name: p.read_text() for p in flags.iterdir() if not p.name.startswith(f"{os.getpid()}-")}
    assert len(in_workers) == 3
    if sys.platform.startswith("linux") and sys.version_info < (3, 12):  # forked workers
        assert set(in_workers.values()) == {"True"}, in_workers
    seen: list[int] = []

    def stop_after_one(index: int) -> None:
        seen.append(index)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run.run_job(src, tmp_path / "resumed.parquet", options=_run.Options(fibre=False), workers=2,
                     progress=False, chunk_size=7281, on_part=stop_after_one)  # fmt: skip
    assert len(seen) == 1 and (tmp_path / "resumed.parquet.parts").is_dir()
    scan_zoo(src, tmp_path / "resumed.parquet", workers=2, resume=True, **kw)
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "resumed.parquet").read_bytes()


def _python(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


def test_cli_imports_the_census_only_for_the_census():
    code = (
        "import sys\n"
        "from relusym.cli import build_parser\n"
        "p = build_parser()\n"
        "a = p.parse_args(['zoo', 'x', '-o', 'y.parquet'])\n"
        "print(a.command, any(m.startswith('relusym.census') for m in sys.modules))\n"
        "a = p.parse_args(['census', '--shape', '1,2,1', '--values=-1,0,1', '--json'])\n"
        "print(a.command, a.shape, a.values, a.json, 'relusym.census._cli' in sys.modules)\n"
    )
    first, second = _python(code).splitlines()
    assert first == "zoo False"
    assert second == "census (1, 2, 1) (-1, 0, 1) True True"


def test_census_help_and_options_are_the_census_modules():
    import argparse

    from relusym._cli.census import HELP
    from relusym._cli.parser import build_parser
    from relusym.census import _cli as census_cli

    assert HELP == census_cli.HELP
    ref = argparse.ArgumentParser(prog="relusym census")
    census_cli.add_arguments(ref)
    argv = ["--shape", "1,3,1", "--values=-1,0,2", "--sample", "7", "--samples", "2", "--json"]
    want = vars(ref.parse_args(argv))
    got = vars(build_parser().parse_args(["census", *argv]))
    assert {k: got[k] for k in want} == want
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = sub.choices["census"].format_help()
    assert all(opt in text for opt in ("--shape", "--values", "--sample", "--json"))


# ----------------------------------------------------------------------------------------------------------
# one runner per job: the planning tasks and the chunks on the same pool, client and cluster


def _npz_folder(folder: Path, count: int, shard_rows: int = 0) -> Path:
    """A folder of ``count`` model files (.npz, 3-4-2) and, when ``shard_rows``, one stacked shard."""
    folder.mkdir()
    rng = np.random.default_rng(8)
    for i in range(count):
        np.savez(
            folder / f"n{i:02d}.npz",
            V=rng.standard_normal((2, 4)),
            A=rng.standard_normal((4, 3)),
            b=rng.standard_normal(4),
            c=rng.standard_normal(2),
        )
    if shard_rows:
        B = shard_rows
        np.savez(
            folder / "shard.npz",
            V=rng.standard_normal((B, 2, 4)),
            A=rng.standard_normal((B, 4, 3)),
            b=rng.standard_normal((B, 4)),
            c=rng.standard_normal((B, 2)),
        )
    return folder


def test_relative_sources_are_planned_as_absolute_paths_with_the_same_names(tmp_path, monkeypatch):
    """A folder or a shard named relative to the client's directory: the chunks hold absolute paths (the workers of
    a Dask scheduler run in their own directories), the names and the job's table are those of the absolute
    spelling, byte for byte."""
    from relusym._zoo._sources import plan_job

    folder = _npz_folder(tmp_path / "zoo", 5, shard_rows=30)
    monkeypatch.chdir(tmp_path)
    for rel in ("zoo", "zoo/shard.npz", "./zoo/../zoo"):
        chunks, _ = plan_job(rel, chunk_size=7, files_per_chunk=2)
        want, _ = plan_job(tmp_path / rel, chunk_size=7, files_per_chunk=2)
        assert all(os.path.isabs(x) and os.path.exists(x) for c in chunks for x in c.paths)
        assert [c.names for c in chunks] == [c.names for c in want]
        assert [c.describe() for c in chunks] == [c.describe() for c in want]
    scan_zoo("zoo", tmp_path / "rel.parquet", chunk_size=7, files_per_chunk=2, progress=False)
    scan_zoo(folder, tmp_path / "abs.parquet", chunk_size=7, files_per_chunk=2, progress=False)
    assert (tmp_path / "rel.parquet").read_bytes() == (tmp_path / "abs.parquet").read_bytes()


@pytest.mark.slow
def test_scheduler_workers_in_another_directory_read_a_relative_source(tmp_path, monkeypatch):
    """A real LocalCluster whose workers run in another directory than the client (as on a cluster): a zoo and an
    output named by relative paths are read and written by them (every row ok; every part written by a worker),
    the serial table byte for byte."""
    distributed = pytest.importorskip("distributed")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _npz_folder(tmp_path / "zoo", 6, shard_rows=25)
    monkeypatch.chdir(elsewhere)  # the workers' directory: no zoo there
    written: list[int] = []
    real = _run._written

    def counted(parts, chunk, options):
        written.append(chunk.index)
        return real(parts, chunk, options)

    monkeypatch.setattr(_run, "_written", counted)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        monkeypatch.chdir(tmp_path)
        res = scan_zoo("zoo", "dask.parquet", chunk_size=9, scheduler=cluster.scheduler_address, progress=False)
    assert res.summary["errors"] == 0 and res.summary["ok"] == 31
    # the output named relatively too: the workers found its parts folder and wrote every part themselves
    assert sorted(written) == list(range(len(written))) and len(written) >= 4
    scan_zoo("zoo", "serial.parquet", chunk_size=9, progress=False)
    assert (tmp_path / "dask.parquet").read_bytes() == (tmp_path / "serial.parquet").read_bytes()


def test_runner_refuses_two_executors_and_no_workers():
    from relusym._zoo._jobs import Runner
    from relusym.errors import InvalidNetworkError

    with pytest.raises(InvalidNetworkError, match="at most one"):
        Runner(workers=2, dask_local=2)
    with pytest.raises(InvalidNetworkError, match="at least 1 worker"):
        Runner(dask_local=0)
    with Runner() as serial:
        assert not serial.parallel and list(serial.run(divmod, [(7, 2), (9, 4)])) == [(0, (3, 1)), (1, (2, 1))]
        assert not serial.started  # a serial runner starts nothing


def test_planning_and_chunks_share_one_process_pool(tmp_path, monkeypatch):
    """A folder planned on the pool (one file per planning task here) and its chunks run on one process pool,
    started once, and write the serial table byte for byte (the oracle: the serial job)."""
    import concurrent.futures

    folder = _npz_folder(tmp_path / "zoo", 9, shard_rows=40)
    kw = {"chunk_size": 7, "files_per_chunk": 2, "progress": False}
    scan_zoo(folder, tmp_path / "serial.parquet", **kw)
    monkeypatch.setattr(_planning, "_PLAN_FILES", 1)
    real = concurrent.futures.ProcessPoolExecutor
    pools: list[object] = []

    def counted(*args, **kwargs):
        pool = real(*args, **kwargs)
        pools.append(pool)
        return pool

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counted)
    scan_zoo(folder, tmp_path / "pool.parquet", workers=2, **kw)
    assert len(pools) == 1
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "pool.parquet").read_bytes()


@pytest.mark.slow
def test_dask_planning_and_chunks_share_one_client_and_cluster(tmp_path, monkeypatch):
    """``scheduler=ADDR`` of a real LocalCluster started before (2 workers, one thread each, on 127.0.0.1): a
    folder planned on the cluster (one file per planning task) and its chunks use one client, and write the
    serial table byte for byte, in two jobs in a row; ``dask_local=2`` starts one cluster, for its planning tasks
    and its chunks."""
    distributed = pytest.importorskip("distributed")
    from relusym._zoo import _jobs

    folder = _npz_folder(tmp_path / "zoo", 9, shard_rows=40)
    kw = {"chunk_size": 7, "files_per_chunk": 2, "progress": False}
    scan_zoo(folder, tmp_path / "serial.parquet", **kw)
    want = (tmp_path / "serial.parquet").read_bytes()
    monkeypatch.setattr(_planning, "_PLAN_FILES", 1)
    real = _jobs._dask_client
    calls: list[tuple[object, object]] = []

    def counted(scheduler, dask_local):
        calls.append((scheduler, dask_local))
        return real(scheduler, dask_local)

    monkeypatch.setattr(_jobs, "_dask_client", counted)
    ran: list[str] = []
    real_run = _jobs.Runner.run

    def run(self, fn, tasks, **kwargs):
        ran.append(f"{fn.__name__} on {'a local cluster' if self.dask_local else 'a scheduler'}")
        return real_run(self, fn, tasks, **kwargs)

    monkeypatch.setattr(_jobs.Runner, "run", run)
    scan_zoo(folder, tmp_path / "local.parquet", dask_local=2, **kw)
    assert calls == [(None, 2)]
    assert ran == ["stack_headers on a local cluster", "run_chunk_part on a local cluster"]
    assert (tmp_path / "local.parquet").read_bytes() == want
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        addr = cluster.scheduler_address
        for name in ("first.parquet", "second.parquet"):
            scan_zoo(folder, tmp_path / name, scheduler=addr, **kw)
            assert (tmp_path / name).read_bytes() == want
    assert calls[1:] == [(addr, None), (addr, None)]


def test_a_scheduler_whose_workers_lack_relusym_or_run_another_is_refused_in_one_sentence():
    """Before a job's tasks go to a scheduler, each worker says which relusym it runs (one ``client.run``): the
    same version passes; a worker that cannot load the function (no relusym there) or that runs another version
    is refused in one sentence naming the scheduler and both versions."""
    from relusym._zoo import _jobs
    from relusym.errors import InvalidNetworkError

    class Client:
        def __init__(self, answer):
            self.answer, self.ran = answer, []

        def run(self, fn):
            self.ran.append(fn)
            if isinstance(self.answer, BaseException):
                raise self.answer
            return {w: fn() if v is None else v for w, v in self.answer.items()}

    same = Client({"tcp://w:1": None, "tcp://w:2": None})  # each worker runs the function itself
    _jobs._same_relusym(same, "tcp://s:9")
    assert same.ran == [_jobs._relusym_version] and _jobs._relusym_version() == relusym.__version__
    with pytest.raises(InvalidNetworkError) as exc:
        _jobs._same_relusym(Client(ModuleNotFoundError("No module named 'relusym'")), "tcp://s:9")
    assert str(exc.value) == (
        "the Dask workers of the scheduler at tcp://s:9 cannot run relusym (ModuleNotFoundError: No module named "
        f"'relusym'); install relusym {relusym.__version__} where they run"
    )
    with pytest.raises(InvalidNetworkError) as exc:
        _jobs._same_relusym(Client({"tcp://w:1": "0.0.9", "tcp://w:2": None, "tcp://w:3": "0.0.8"}), "tcp://s:9")
    assert str(exc.value) == (
        "the Dask workers of the scheduler at tcp://s:9 run relusym 0.0.8, 0.0.9 and this process "
        f"{relusym.__version__}; install the same version on both"
    )


_NO_RELUSYM = """
import sys


class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "relusym" or name.startswith("relusym."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocked())
for name in [n for n in sys.modules if n == "relusym" or n.startswith("relusym.")]:
    del sys.modules[name]
"""


@pytest.mark.slow
def test_real_schedulers_without_relusym_or_with_another_are_refused_by_the_cli_with_nothing_written(
    tmp_path, monkeypatch, capsys
):
    """On real LocalClusters: workers that cannot import relusym (a preload hides it from them), and workers of
    another version (this client's patched here), get exit 2 and one sentence from ``relusym zoo --scheduler``
    and nothing written; the same cluster with the same version then runs the job."""
    distributed = pytest.importorskip("distributed")
    from relusym.cli import main

    folder = _npz_folder(tmp_path / "zoo", 3, shard_rows=8)
    out = tmp_path / "out" / "zoo.parquet"
    out.parent.mkdir()
    blocker = tmp_path / "no_relusym.py"
    blocker.write_text(_NO_RELUSYM)
    args = ["zoo", str(folder), "-o", str(out), "--quiet", "--scheduler"]
    kw = {"n_workers": 1, "threads_per_worker": 1, "processes": True, "host": "127.0.0.1", "dashboard_address": None}
    with distributed.LocalCluster(preload=[str(blocker)], **kw) as cluster:
        capsys.readouterr()
        assert main([*args, cluster.scheduler_address]) == 2
        err = capsys.readouterr().err.strip().splitlines()
    assert list(out.parent.iterdir()) == [] and len(err) == 1
    assert f"the Dask workers of the scheduler at {cluster.scheduler_address} cannot run relusym (" in err[0]
    assert "No module named 'relusym'" in err[0] and err[0].endswith(
        f"install relusym {relusym.__version__} where they run"
    )
    real = relusym.__version__
    with distributed.LocalCluster(**kw) as cluster:
        addr = cluster.scheduler_address
        monkeypatch.setattr(relusym, "__version__", "0.0.0+other")
        assert main([*args, addr]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert list(out.parent.iterdir()) == []
        monkeypatch.setattr(relusym, "__version__", real)
        assert main([*args, addr]) == 0
    assert (
        len(err) == 1 and f"the Dask workers of the scheduler at {addr} run relusym {real} and this process" in err[0]
    )
    assert err[0].endswith("0.0.0+other; install the same version on both")


def test_a_scheduler_client_loads_its_end_kernels_while_the_chunks_run(tmp_path, monkeypatch):
    """On a Dask scheduler, a job of 10^6 networks or more (the bound lowered) has the client load the compiled
    kernels once its chunks are submitted (for its near-duplicate search), not before; a pool's client loads them
    before its workers fork as before, and a smaller job loads nothing."""
    from relusym._zoo._jobs import Runner

    rng = np.random.default_rng(3)
    V, A, b, c = (rng.standard_normal(x).astype(np.float32) for x in ((64, 1, 3), (64, 3, 4), (64, 3), (64, 1)))
    np.savez(tmp_path / "s.npz", V=V, A=A, b=b, c=c)
    loads: list[str] = []
    monkeypatch.setattr(_planning, "load_kernels", lambda: loads.append("load"))
    monkeypatch.setattr(_planning, "jit_installed", lambda: True)
    monkeypatch.setitem(_planning._KERNELS, "loaded", False)
    monkeypatch.setattr(_planning, "JIT_WORK", 64 * 3 * 5)  # the shard's weights, as _each_pays counts them
    monkeypatch.setattr(_planning, "_END_JIT_ROWS", 64)  # the shard's networks
    chunks, skipped, meanwhile, _ = _planning.plan(
        str(tmp_path / "s.npz"), Runner(scheduler="tcp://127.0.0.1:1"), 16, None
    )
    assert len(chunks) == 4 and skipped == 0 and meanwhile is _planning._end_kernels and loads == []
    assert _planning.plan(str(tmp_path / "s.npz"), Runner(workers=2), 16, None)[2] is None and loads == []
    assert _planning.plan(str(tmp_path / "s.npz"), Runner(), 16, None)[2] is None and loads == ["load"]
    monkeypatch.setattr(_planning, "_END_JIT_ROWS", 65)
    assert _planning.plan(str(tmp_path / "s.npz"), Runner(scheduler="tcp://127.0.0.1:1"), 16, None)[2] is None
    monkeypatch.setitem(_planning._KERNELS, "loaded", True)  # loaded already: nothing to do meanwhile
    monkeypatch.setattr(_planning, "_END_JIT_ROWS", 1)
    assert _planning.plan(str(tmp_path / "s.npz"), Runner(scheduler="tcp://127.0.0.1:1"), 16, None)[2] is None


@pytest.mark.slow
def test_a_scheduler_job_loads_the_end_kernels_meanwhile_same_bytes(tmp_path, monkeypatch):
    """A real LocalCluster's scheduler: the client runs the kernels' load after the chunks are submitted, uses the
    compiled near-duplicate sweep at the end, and writes the serial table byte for byte."""
    distributed = pytest.importorskip("distributed")
    _numba()
    from relusym._zoo import _near

    rng = np.random.default_rng(4)
    B = 300
    V, A, b, c = (rng.standard_normal(x).astype(np.float32) for x in ((B, 1, 8), (B, 8, 4), (B, 8), (B, 1)))
    V[7], A[7], b[7], c[7] = V[3] * np.float32(1 + 2**-20), A[3], b[3], c[3]  # a near duplicate
    np.savez(tmp_path / "s.npz", V=V, A=A, b=b, c=c)
    kw = {"fibre": False, "progress": False, "chunk_size": 50, "rtol": 1e-5}
    scan_zoo(tmp_path / "s.npz", tmp_path / "serial.parquet", **kw)
    events: list[str] = []
    real_end, real_close = _planning._end_kernels, _near.close_pairs

    def end() -> None:
        events.append("end kernels")
        real_end()

    def close_pairs(*args, **kwargs):
        events.append(f"near search, compiled: {_near.sweep_kernels() is not None}")
        return real_close(*args, **kwargs)

    monkeypatch.setattr(_planning, "_end_kernels", end)
    monkeypatch.setattr(_near, "close_pairs", close_pairs)
    monkeypatch.setattr(_planning, "_END_JIT_ROWS", B)
    monkeypatch.setitem(_planning._KERNELS, "loaded", False)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        got = scan_zoo(tmp_path / "s.npz", tmp_path / "cluster.parquet", scheduler=cluster.scheduler_address, **kw)
    assert events == ["end kernels", "near search, compiled: True"]
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "cluster.parquet").read_bytes()
    assert len(got.summary["near_duplicate_groups"]) == 1
