"""relusym zoo at its edges (issue 21, items 3 and 5): a truncated Parquet file or a table of nested lists is an
error row, not the end of the job; files that are not model files are skipped and counted; a refusal leaves no
parts folder; after SIGKILL of ``relusym zoo --workers 2`` its pool workers do not outlive it; the summary says
how many groups it does not list.  No test here measures wall-clock time: timeouts and polls only guard
against a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SRC = str(Path(__file__).resolve().parents[1] / "src")
HANG_SECONDS = 600


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "relusym", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=HANG_SECONDS
    )


def _npz(path: Path, rng: np.random.Generator, n: int = 3) -> None:
    np.savez(path, V=rng.standard_normal((1, n)), A=rng.standard_normal((n, 2)), b=rng.standard_normal(n), c=[0.0])


def test_truncated_parquet_and_readme_in_a_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for i in range(3):
        _npz(zoo / f"n{i}.npz", rng)
    table = pa.table({"m": [2, 2], "n": [3, 3], "k": [1, 1], "weights": [list(rng.standard_normal(13)) for _ in "ab"]})
    pq.write_table(table, zoo / "good.parquet")
    data = (zoo / "good.parquet").read_bytes()
    (zoo / "trunc.parquet").write_bytes(data[: len(data) // 2])
    (zoo / "README.md").write_text("# my zoo\n")
    (zoo / "notes.txt").write_text("nothing\n")
    proc = _cli("zoo", "zoo", "-o", "out.parquet", "--no-fibre", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "skipped 2 file(s)" in proc.stdout
    out = pq.read_table(tmp_path / "out.parquet").to_pydict()
    status = dict(zip(out["source"], out["status"], strict=True))
    assert status.pop("trunc.parquet") == "error"
    assert "README.md" not in status and "notes.txt" not in status
    assert set(status.values()) == {"ok"} and len(status) == 5


def test_nested_list_columns_are_error_rows(tmp_path: Path) -> None:
    tables = {
        "weights.parquet": pa.table({"m": [1], "n": [1], "k": [1], "weights": [[[1.0], [1.0], [1.0], [0.0]]]}),
        "flat.parquet": pa.table(
            {"m": [1], "n": [1], "k": [1], "V": [[[[1.0]]]], "A": [[[1.0]]], "b": [[1.0]], "c": [[0.0]]}
        ),
    }
    for name, table in tables.items():
        pq.write_table(table, tmp_path / name)
        proc = _cli("zoo", name, "-o", "out.parquet", "--no-fibre", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "nested lists" in proc.stdout
        assert not (tmp_path / "out.parquet.parts").exists()
        out = pq.read_table(tmp_path / "out.parquet").to_pydict()
        assert out["status"] == ["error"]


def test_a_refusal_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("# no models here\n")
    proc = _cli("zoo", "docs", "-o", "out.parquet", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "no model files" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_summary_says_how_many_groups_it_does_not_list(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for g in range(25):
        arrays = {"V": rng.standard_normal((1, 2)), "A": rng.standard_normal((2, 2)), "b": rng.standard_normal(2)}
        for copy in range(2):
            np.savez(zoo / f"g{g:02d}_{copy}.npz", **arrays)
    proc = _cli("zoo", "zoo", "-o", "out.parquet", "--no-fibre", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "exact duplicate groups (same function): 25" in proc.stdout
    assert "… and 5 more groups" in proc.stdout


def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_die_with_their_parent(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for i in range(400):
        _npz(zoo / f"n{i:03d}.npz", rng, n=12)
    env = {**os.environ, "PYTHONPATH": SRC}
    args = ["zoo", "zoo", "-o", "out.parquet", "--workers", "2", "--files-per-chunk", "1", "--quiet"]
    parent = subprocess.Popen([sys.executable, "-m", "relusym", *args], cwd=tmp_path, env=env)
    kids: set[int] = set()
    try:
        for _ in range(HANG_SECONDS * 10):  # until the pool's workers exist (forked: no resource tracker)
            kids = _children(parent.pid)
            if len(kids) >= 2 or parent.poll() is not None:
                break
            time.sleep(0.1)
        assert parent.poll() is None, "the job ended before its workers could be seen; make it longer"
        assert len(kids) >= 2
        time.sleep(0.5)
        kids = _children(parent.pid) or kids
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=HANG_SECONDS)
        for _ in range(HANG_SECONDS * 10):  # a bounded poll against a hang, never a speed check
            if not any(_alive(k) for k in kids):
                break
            time.sleep(0.1)
        assert not any(_alive(k) for k in kids), f"orphans still running: {sorted(k for k in kids if _alive(k))}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for k in kids:  # the processes this test started, by their id: none may outlive it
            if _alive(k):
                os.kill(k, signal.SIGKILL)


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_rows_read_only_the_rows_asked(tmp_path, compressed):
    """A chunk of a stacked .npz reads its rows from the member (stored or deflated), equal to slicing the whole
    array, at the edges too; a Fortran-ordered member falls back to the whole array."""
    import zipfile

    from relusym._zoo._shards import npz_rows as _npz_rows

    rng = np.random.default_rng(3)
    arrays = {"A": rng.standard_normal((37, 5, 3)).astype(np.float32), "b": rng.standard_normal((37, 5))}
    arrays["F"] = np.asfortranarray(rng.standard_normal((37, 4)))
    path = tmp_path / "s.npz"
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    with zipfile.ZipFile(path) as zf:
        for name, x in arrays.items():
            for start, stop in ((0, 37), (0, 1), (5, 17), (36, 37), (30, 99), (37, 37)):
                got = _npz_rows(zf, name, start, stop)
                assert got.dtype == x.dtype and np.array_equal(got, x[start:stop])


def test_stacked_shard_chunks_by_weights_and_same_table_on_executors(tmp_path):
    """By default a shard is cut into tasks of about 2^24 weights (here forced small through the module constant),
    a multiple of 12 of them: the table is the same whatever the chunks and the executor."""
    from concurrent.futures import ThreadPoolExecutor

    import relusym._zoo._sources as sources
    from relusym._zoo._sources import auto_rows, plan_chunks
    from relusym.zoo import scan_zoo

    # 10^6 of 8-64-1: 2^24 // 576 = 29,127 rows would be 35 tasks; 36 tasks of 27,778 rows (the last 27,770)
    assert auto_rows((10**6, 64, 8)) == 27_778 and 35 * 27_778 < 10**6 <= 36 * 27_778
    assert auto_rows((10, 10**6, 100)) == 16 and auto_rows((10**7, 1, 1)) == 65536
    assert auto_rows((50_000, 64, 8)) == 2084 and auto_rows((100, 1, 1)) == 16  # 24 tasks (at least 16, by 12)
    rng = np.random.default_rng(4)
    B, k, n, m = 300, 2, 6, 3
    V, A, b, c = (rng.integers(-2, 3, s).astype(np.float32) for s in ((B, k, n), (B, n, m), (B, n), (B, k)))
    V[::7] = V[3]  # duplicates
    A[::7], b[::7], c[::7] = A[3], b[3], c[3]
    np.savez(tmp_path / "s.npz", V=V, A=A, b=b, c=c)
    old = sources._TASK_WEIGHTS
    try:
        sources._TASK_WEIGHTS = 40 * n * (m + 1)
        assert len(plan_chunks(tmp_path / "s.npz")) == -(-B // 16)  # 24 tasks of 13 rows, raised to 16 rows
        a = scan_zoo(tmp_path / "s.npz", tmp_path / "a.parquet", progress=False)
        with ThreadPoolExecutor(2) as ex:
            scan_zoo(tmp_path / "s.npz", tmp_path / "b.parquet", progress=False, executor=ex)
    finally:
        sources._TASK_WEIGHTS = old
    scan_zoo(tmp_path / "s.npz", tmp_path / "c.parquet", progress=False, chunk_size=1000)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    import pyarrow.parquet as pq

    ta, tc = (pq.read_table(tmp_path / f"{x}.parquet") for x in "ac")
    assert ta.equals(tc)
    d = a.table.to_pydict()
    assert d["group"][0::7] == [d["group"][3]] * len(d["group"][0::7])
    assert a.summary["undecided_rate"] is not None


@given(st.integers(1, 10**7), st.integers(1, 4096), st.integers(1, 4096))
@settings(max_examples=300, deadline=None)
def test_default_shard_tasks_bounded_and_balanced(B, n, m):
    """The default rows per task of a shard: within [16, 65536]; at most 2^24 weights unless held at 16 rows; at
    least 16 tasks for a shard of 256 rows or more (unless held at 16 rows); and, where the weight bound cut the
    shard into tasks no more numerous than their rows, tasks in a multiple of 12, two or three workers' shares
    differing by less than one task."""
    from relusym._zoo._sources import auto_rows

    rows = auto_rows((B, n, m))
    assert 16 <= rows <= 65536
    assert rows * n * (m + 1) <= 1 << 24 or rows == 16
    tasks = -(-B // rows)
    if B >= 256 and rows > 16:
        assert tasks >= 16
    if 16 < rows < 65536 and rows * rows >= 2 * B and tasks > 1:  # (equal shares need B ≥ T(T - 1))
        assert tasks % 12 == 0
        sizes = [rows] * (tasks - 1) + [B - (tasks - 1) * rows]
        for w in (2, 3):
            shares = [sum(sizes[i::w]) for i in range(w)]
            assert max(shares) - min(shares) < rows


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(0, 40),
    start=st.integers(0, 45),
    length=st.integers(0, 45),
    extra=st.binary(max_size=24).map(lambda x: x[: len(x) // 4 * 4]),
    dtype=st.sampled_from(["<f4", ">f8", "<f2", "<i8"]),
)
def test_stored_members_are_read_from_their_offset(tmp_path_factory, rows, start, length, extra, dtype):
    """A stored member is read straight from its offset in the archive, past a local header with an extra field
    of any length and members before it; the rows equal slicing the whole array (the oracle: numpy.load)."""
    import io
    import zipfile

    from relusym._zoo._shards import npz_rows as _npz_rows

    rng = np.random.default_rng(rows * 1000 + start)
    x = (rng.standard_normal((rows, 3, 2)) * 100).astype(dtype)
    path = tmp_path_factory.mktemp("npz") / "s.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("first.npy", b"\x00" * 17)
        info = zipfile.ZipInfo("A.npy")
        info.extra = (b"\xfe\xca" + len(extra).to_bytes(2, "little") + extra) if extra else b""
        bio = io.BytesIO()
        np.save(bio, x)
        zf.writestr(info, bio.getvalue())
    with zipfile.ZipFile(path) as zf:
        got = _npz_rows(zf, "A", start, start + length)
    want = np.load(path)["A"][start : start + length]
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("start", [0, 3, 129])
def test_rows_of_a_megabyte_or_more_are_mapped_and_equal_the_read_rows(tmp_path, start):
    """A task's rows of a stored member of at least 1 MiB are memory-mapped (the map's offset rounded down to the
    allocation granularity, the member's data at an odd offset in the archive); they equal numpy.load's rows and
    the rows read from an archive in memory (no file descriptor: read, not mapped)."""
    import io
    import mmap
    import zipfile

    from relusym._zoo._shards import npz_rows as _npz_rows

    x = np.random.default_rng(start).standard_normal((720, 32, 17)).astype("<f4")  # 2,176 bytes a row
    bio = io.BytesIO()
    np.save(bio, x)
    path = tmp_path / "big.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("first.npy", b"\x00" * 13)
        info = zipfile.ZipInfo("A.npy")
        info.extra = b"\xfe\xca\x03\x00abc"
        zf.writestr(info, bio.getvalue())
    want = np.load(path)["A"][start : start + 590]
    with zipfile.ZipFile(path) as zf:
        got = _npz_rows(zf, "A", start, start + 590)
    assert got.nbytes >= 1 << 20 and np.array_equal(got, want) and not got.flags.writeable

    def owner(a: Any) -> Any:
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a.obj if isinstance(a, memoryview) else a

    assert isinstance(owner(got), mmap.mmap)
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as zf:
        read = _npz_rows(zf, "A", start, start + 590)
    assert np.array_equal(read, want) and isinstance(owner(read), bytes)


def test_a_stored_member_whose_header_claims_more_rows_is_refused_without_reading_them(tmp_path):
    """A shard's task reads a stored .npy member from its offset; a header claiming 10^9 rows of a member that
    holds 4 is refused in one sentence (no read past the member, no allocation of the claimed size), while the
    rows it holds read exactly as numpy's own reader gives them."""
    import io
    import zipfile

    from relusym._zoo._shards import npz_rows as _npz_rows
    from relusym.errors import InvalidNetworkError

    A = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2)
    path = tmp_path / "claims.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, shape in (("A", A.shape), ("B", (10**9, 3, 2))):
            buf = io.BytesIO()
            np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
            zf.writestr(name + ".npy", buf.getvalue() + A.tobytes())
        zf.writestr("tail.bin", b"x" * 4096)  # bytes after the member that a careless reader would take as rows
    with zipfile.ZipFile(path) as zf:
        assert np.array_equal(_npz_rows(zf, "A", 1, 3), A[1:3])
        with pytest.raises(InvalidNetworkError, match="claims more rows"):
            _npz_rows(zf, "B", 0, 10**6)
        with pytest.raises(InvalidNetworkError, match="claims more rows"):
            _npz_rows(zf, "B", 4, 6)


def test_close_pairs_cut_in_the_sweep_when_the_grid_yields_too_many(monkeypatch) -> None:
    """Beyond the grid's bound on candidates, the compiled sweep keeps only the pairs within the radius in one more
    coordinate (before, and without numba still, a k-d tree took over): the same pairs as brute force over all pairs,
    on dense points with a crowded cluster, on lattices with ties and on float32-valued points (the grid alone over
    the bound and the cut under it in two thirds of the cases or more; the tree where even the cut pairs exceed it)."""
    import relusym._zoo._near as near

    pytest.importorskip("numba")
    import relusym._zoo._jit_kernel  # noqa: F401 - the compiled sweep loads beside the digest kernel

    if near.sweep_kernels() is None:
        pytest.skip("the compiled sweep is off (RELUSYM_NO_JIT)")
    sweeps: list[tuple[bool, bool]] = []  # (cut by a coordinate, within the bound)
    real = near._swept

    def swept(ks, n1, kernels, vals, limit):
        got = real(ks, n1, kernels, vals, limit)
        sweeps.append((len(vals) > 0, got is not None))
        return got

    monkeypatch.setattr(near, "_swept", swept)
    cut = 0
    for t in range(120):
        rng = np.random.default_rng(t)
        n, dim = int(rng.integers(300, 600)), int(rng.integers(3, 7))
        radius = float(rng.uniform(0.06, 0.1))
        X = rng.uniform(0.0, 1.0, (n, dim))  # dense in the grid's two coordinates: many candidates
        if t % 3 == 1:
            X = np.round(X / radius) * radius  # ties at the radius and on the cells' borders
        if t % 3 == 2:
            X = X.astype(np.float32).astype(np.float64)
        X[: n // 10] = X[0] + rng.standard_normal((n // 10, dim)) * radius / 4  # a crowded cluster
        i, j = np.triu_indices(n, 1)
        d = np.linalg.norm(X[i] - X[j], axis=1)
        want = np.stack([i[d <= radius], j[d <= radius]], axis=1)
        monkeypatch.setattr(near, "_SWEEP_PAIRS", 8 * n)
        sweeps.clear()
        assert np.array_equal(near.close_pairs(np.split(X, [n // 3]), radius, compiled=True), want)
        cut += sweeps == [(False, False), (True, True)]  # too many for the grid alone, few enough once cut
    assert cut >= 80


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 120),
    dim=st.integers(2, 6),
    radius=st.floats(1e-3, 3.0),
    grid=st.sampled_from([0.0, 0.5, 0.1]),
    seed=st.integers(0, 2**32 - 1),
)
def test_close_pairs_are_all_pairs_within_the_radius(n: int, dim: int, radius: float, grid: float, seed: int) -> None:
    """The near-duplicate search's candidate pairs (a grid over two coordinates, no k-d tree) are exactly the pairs
    within the radius, against brute force over all pairs: points in clusters, on a lattice (ties at the radius and
    at cell borders), repeated points; by numpy and by the compiled sweep (when numba is installed), on one array
    and on blocks of rows (a job's parts, an empty one among them, read-only as the parts' mapped columns)."""
    from relusym._zoo._near import close_pairs, sweep_kernels

    try:  # the compiled sweep is loaded beside the digest kernel, as in a large job's process
        import relusym._zoo._jit_kernel  # noqa: F401
    except ImportError:
        pass
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim)) * rng.uniform(0.05, 4.0, size=dim)
    if grid:
        X = np.round(X / grid) * grid
    X[: n // 4] = X[0] + rng.standard_normal((n // 4, dim)) * radius / 4  # a crowded cluster
    i, j = np.triu_indices(n, 1)
    d = np.linalg.norm(X[i] - X[j], axis=1)
    want = np.stack([i[d <= radius], j[d <= radius]], axis=1)
    cuts = np.sort(rng.integers(0, n + 1, size=int(rng.integers(1, 6))))
    blocks = np.split(X.copy(), cuts)
    for block in blocks:
        block.flags.writeable = False
    for compiled in (False, True) if sweep_kernels() is not None else (False,):
        assert np.array_equal(close_pairs(X, radius, compiled=compiled), want)
        assert np.array_equal(close_pairs(blocks, radius, compiled=compiled), want)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 300), min_size=1, max_size=5),
    width=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
)
def test_column_reduce_is_the_columns_min_and_max(sizes: list[int], width: int, seed: int) -> None:
    """The columns' minima and maxima over blocks of rows (reduced as wide rows, then folded) equal numpy's own
    reductions over all the rows at once: widths that divide 256 and do not, blocks shorter than the fold, ties."""
    from relusym._zoo._near import column_reduce

    rng = np.random.default_rng(seed)
    blocks = [np.round(rng.standard_normal((n, width)) * 4) / 4 for n in sizes]  # quarter steps: many ties
    whole = np.concatenate(blocks)
    assert np.array_equal(column_reduce(blocks, np.minimum), whole.min(axis=0))
    assert np.array_equal(column_reduce(blocks, np.maximum), whole.max(axis=0))


def test_the_compiled_sweep_is_there_once_the_digest_kernel_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a process that has loaded the compiled digest kernel, the near-duplicate sweep is compiled too (so the
    property test above checks both ways): its candidates equal the numpy path's on a grid with many ties."""
    pytest.importorskip("numba")
    monkeypatch.delenv("RELUSYM_NO_JIT", raising=False)
    import relusym._zoo._jit_kernel  # noqa: F401 - what a large job's process has loaded
    from relusym._zoo._near import _runs, sweep_kernels

    kernels = sweep_kernels()
    assert kernels is not None
    ks = np.sort(np.random.default_rng(1).integers(0, 60, size=400)).astype(np.int64)
    got = _runs(ks, 7, kernels)
    ref = _runs(ks, 7, None)
    assert got is not None and ref is not None
    pairs = {tuple(p) for left, right in got for p in zip(left.tolist(), right.tolist(), strict=True)}
    expected = {tuple(p) for left, right in ref for p in zip(left.tolist(), right.tolist(), strict=True)}
    assert pairs == expected and len(pairs) == sum(len(left) for left, _ in got)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 9), min_size=1, max_size=6),
    width=st.integers(1, 4),
    cut=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
)
def test_list_blocks_are_the_rows_of_each_chunk(sizes: list[int], width: int, cut: int, seed: int) -> None:
    """The probe values' blocks (2-D views of each chunk of a list column, no copy) hold each chunk's lists, row
    for row, against the lists as Python values, on chunks sliced out of larger arrays; a column with a null list
    or a list of another length has none (the search then copies, as before), and the near-duplicate search's
    input per shape (:func:`probe_sets`) is the same by either way."""
    import pyarrow as pa

    from relusym._zoo._near import list_blocks, probe_sets

    rng = np.random.default_rng(seed)
    chunks, lists = [], []
    for size in sizes:
        rows = [rng.standard_normal(width).tolist() for _ in range(size + cut)]
        chunks.append(pa.array(rows, type=pa.list_(pa.float64())).slice(cut))
        lists += rows[cut:]
    col = pa.chunked_array(chunks, type=pa.list_(pa.float64()))
    blocks = list_blocks(col, width)
    assert blocks is not None
    got = [row.tolist() for block in blocks for row in block]
    assert got == lists
    assert all(not block.flags.owndata for block in blocks)  # views of the chunks' buffers
    if lists:
        assert list_blocks(col, width + 1) is None
        holed = pa.chunked_array([*chunks, pa.array([None], type=pa.list_(pa.float64()))])
        assert list_blocks(holed, width) is None
    N = len(lists)
    if N >= 2:
        nd = [rng.standard_normal(5).tolist() for _ in range(N)]
        cuts = np.cumsum([0, *sizes])
        table = pa.table(
            {
                "m": pa.array([3] * N, type=pa.int32()),
                "k": pa.array([1] * N, type=pa.int32()),
                "_probe": col,
                "_nd": pa.chunked_array(
                    [pa.array(nd[a:b], type=pa.list_(pa.float64())) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
                ),
            }
        )
        rows = np.arange(N)
        ((m, got_rows, got_blocks, nd_max),) = list(probe_sets(table, rows))
        assert m == 3 and np.array_equal(got_rows, rows)
        assert np.concatenate(got_blocks).tolist() == lists
        assert nd_max.tolist() == np.max(np.array(nd), axis=0).tolist()
        rest = list(probe_sets(table, rows[1:]))  # not every row: copied (a shape of one row has no pairs)
        assert len(rest) == (N >= 3)
        for _, sub, sub_blocks, sub_max in rest:
            assert np.array_equal(sub, rows[1:]) and np.concatenate(sub_blocks).tolist() == lists[1:]
            assert sub_max.tolist() == np.max(np.array(nd[1:]), axis=0).tolist()


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["<f2", "<f4", ">f8", "<f8"])
def test_npz_read_from_one_handle_equals_np_load(tmp_path: Path, order: str, dtype: str) -> None:
    """An NPZ read from one handle (headers checked and data read in one pass) gives exactly np.load's arrays:
    dtype, byte order, memory order and values; a member cut short is refused in one sentence."""
    import zipfile

    from relusym.errors import InvalidNetworkError
    from relusym.io import load

    rng = np.random.default_rng(5)
    arrays = {
        "V": np.asarray(rng.standard_normal((2, 3)), dtype=dtype, order=order),
        "A": np.asarray(rng.standard_normal((3, 4)), dtype=dtype, order=order),
        "b": rng.standard_normal(3).astype(dtype),
        "c": rng.standard_normal(2).astype(dtype),
    }
    path = tmp_path / "net.npz"
    np.savez(path, **arrays)
    from relusym.io._npz_format import _read_arrays

    got = _read_arrays(path, allow_unsafe_pickle=False)
    with np.load(path) as ref:
        assert sorted(got) == sorted(ref.files)
        for key in ref.files:
            assert got[key].dtype == ref[key].dtype and got[key].shape == ref[key].shape
            assert got[key].flags.f_contiguous == ref[key].flags.f_contiguous and got[key].flags.writeable
            assert np.array_equal(got[key], ref[key])
    from relusym.io._npz_format import from_arrays

    with np.load(path) as ref:
        assert load(path) == from_arrays(dict(ref), source=path.name)
    short = tmp_path / "short.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(short, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info.filename, data[:-2] if info.filename == "A.npy" else data)
    with pytest.raises(InvalidNetworkError, match="array 'A' declares shape .* but holds"):
        load(short)


@settings(max_examples=80, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(
            [
                "0" * 64,
                "0" * 63 + "1",  # the same first 16 characters: one key, two digests (a key collision)
                "0" * 16 + "f" * 48,
                "ab" * 32,
                "ab" * 31 + "ba",
                "c" * 64,
                "short",  # another length: not a fixed-width matrix
                "",
            ]
        ),
        min_size=0,
        max_size=40,
    ),
    fixed=st.booleans(),
    cut=st.integers(0, 3),
)
def test_group_codes_number_by_first_appearance(words: list[str], fixed: bool, cut: int) -> None:
    """The exact groups' codes (integer keys of fixed-width digests, checked byte for byte, else a hash table) are
    the strings' ranks in order of first appearance, against a dict built row by row: equal strings share a
    code, distinct strings with equal keys do not; also on a slice of an array (an offset into its buffers)."""
    from relusym._zoo._summary import group_codes

    if fixed:
        words = [w for w in words if len(w) == 64]
    arr = pa.array(["x" * 64] * cut + words, type=pa.string()).slice(cut)
    codes, first = group_codes(arr)
    seen: dict[str, int] = {}
    want = [seen.setdefault(w, len(seen)) for w in words]
    assert codes.tolist() == want
    assert first.tolist() == [words.index(w) for w in seen]
    # the same strings in chunks (a job's parts; each sliced, some empty): keyed chunk by chunk, same codes
    bounds = sorted({0, len(words), *[(7 * t + cut) % (len(words) + 1) for t in range(3)]})
    parts = [
        pa.array(["y" * 64] + words[a:b], type=pa.string()).slice(1)
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    chunked = pa.chunked_array([pa.array([], type=pa.string()), *parts], type=pa.string())
    c2, f2 = group_codes(chunked)
    assert c2.tolist() == want and f2.tolist() == first.tolist()


def test_probe_values_and_scales_against_exact_evaluation() -> None:
    """The near-duplicate filter's probe values (a block of networks per BLAS product, blocks of several sizes)
    against each network evaluated exactly at the probe points in rationals, and its scale quantities against
    their per-network definitions: float64 rounding only (relative 1e-12 of the terms)."""
    from fractions import Fraction

    import relusym._zoo._summary as run  # the probe values live with the near-duplicate filter

    rng = np.random.default_rng(11)
    B, n, m, k, P = 7, 5, 3, 2, 4
    V = rng.standard_normal((B, k, n)).astype(np.float32)
    A = rng.standard_normal((B, n, m)).astype(np.float32)
    b = rng.standard_normal((B, n)).astype(np.float32)
    c = rng.standard_normal((B, k)).astype(np.float32)
    A[2, 1] = 0.0  # a null row: its ratio ‖(a, b)‖/‖a‖ is left out
    X = run._probe_points(m, P)
    old, jit = run._PROBE_BLOCK, dict(run._PROBE_JIT)
    run._PROBE_JIT["kernel"] = None  # the numpy path's blocks (tests/test_zoo_parallel.py: the compiled one)
    try:
        for block in (1, 3, 128):
            run._PROBE_BLOCK = block
            vals, nd = run.probe_stack(V, A, b, c, P)
            assert vals.shape == (B, P * k) and nd.shape == (B, 5)
            for t in range(B):
                for p in range(P):
                    x = [Fraction(float(v)) for v in X[p]]
                    pre = [
                        sum(Fraction(float(A[t, i, j])) * x[j] for j in range(m)) + Fraction(float(b[t, i]))
                        for i in range(n)
                    ]
                    h = [max(Fraction(0), z) for z in pre]
                    for o in range(k):
                        exact = sum(Fraction(float(V[t, o, i])) * h[i] for i in range(n)) + Fraction(float(c[t, o]))
                        scale = sum(abs(float(V[t, o, i])) * (float(h[i]) + 1) for i in range(n)) + abs(float(c[t, o]))
                        assert abs(Fraction(float(vals[t, p * k + o])) - exact) <= Fraction(scale) * Fraction(1, 10**12)
                a64, b64, v64 = A[t].astype(float), b[t].astype(float), V[t].astype(float)
                an = np.sqrt((a64 * a64).sum(axis=1))
                hn = np.sqrt((a64 * a64).sum(axis=1) + b64 * b64)
                terms = np.sqrt((v64 * v64).sum(axis=0)) * hn
                ratio = np.where(an > 0, hn / np.where(an > 0, an, 1.0), 0.0)
                want = [terms.sum(), terms.max(), np.sqrt((c[t].astype(float) ** 2).sum()), n, ratio.max()]
                assert np.allclose(nd[t], want, rtol=1e-12, atol=0)
    finally:
        run._PROBE_BLOCK = old
        run._PROBE_JIT.clear()
        run._PROBE_JIT.update(jit)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
    dtype=st.sampled_from(["<f2", "<f4", ">f8", "<i8", "|u1", "|b1", "<c16", "<U3", "|S2", "<M8[s]"]),
    fortran=st.booleans(),
    version=st.sampled_from([(1, 0), (2, 0)]),
)
def test_npy_header_equals_numpys_reader(shape: list[int], dtype: str, fortran: bool, version: tuple[int, int]) -> None:
    """The .npy header reader (a pattern for the headers numpy writes, numpy's parser for the rest) returns what
    numpy's ``read_array_header_*`` returns and leaves the handle at the data, for every header numpy writes."""
    import io

    from numpy.lib import format as npformat

    from relusym._base.limits import npy_header

    arr = np.zeros(shape, dtype=dtype, order="F" if fortran else "C")
    buf = io.BytesIO()
    npformat.write_array(buf, arr, version=version)
    raw = buf.getvalue()
    want_fh, got_fh = io.BytesIO(raw), io.BytesIO(raw)
    v = npformat.read_magic(want_fh)
    reader = npformat.read_array_header_1_0 if v == (1, 0) else npformat.read_array_header_2_0
    want = reader(want_fh)
    got = npy_header(got_fh, npformat.read_magic(got_fh), 10000)
    assert got == want and got_fh.tell() == want_fh.tell()


@pytest.mark.parametrize(
    "header",
    [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (03,), }",  # a literal Python refuses
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1, }",  # a key numpy refuses
        "{'descr': '<q9', 'fortran_order': False, 'shape': (3,), }",  # no such dtype
        "{'descr': 'f', 'fortran_order': False, 'shape': (3,), }",  # a dtype the pattern leaves to numpy
    ],
)
def test_npy_header_refuses_what_numpy_refuses(header: str) -> None:
    import io

    from numpy.lib import format as npformat

    from relusym._base.limits import npy_header

    body = header.encode() + b" " * (63 - (len(header) + 10) % 64) + b"\n"
    raw = b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body

    def outcome(read: Any) -> Any:
        fh = io.BytesIO(raw)
        npformat.read_magic(fh)
        try:
            return read(fh)
        except ValueError as exc:
            return ("ValueError", str(exc))

    assert outcome(lambda fh: npy_header(fh, (1, 0), 10000)) == outcome(npformat.read_array_header_1_0)


@pytest.mark.parametrize("kind", ["stored", "compressed", "comment", "no A", "single"])
def test_stack_shape_from_the_central_directory_equals_zipfile(tmp_path: Path, kind: str) -> None:
    """Planning a folder finds a stacked shard's shape from the zip's central directory by hand; it agrees with
    reading the archive by ``zipfile`` (and defers to it for a compressed member or an archive comment)."""
    import zipfile

    from relusym._zoo._shards import stack_shape as _stack_shape
    from relusym._zoo._shards import stored_shape as _stored_shape

    rng = np.random.default_rng(4)
    path = tmp_path / "s.npz"
    A = rng.standard_normal((5, 3, 2) if kind != "single" else (3, 2)).astype(np.float32)
    arrays = {"V": rng.standard_normal((5, 1, 3)), "b": rng.standard_normal((5, 3))}
    if kind != "no A":
        arrays["A"] = A
    (np.savez_compressed if kind == "compressed" else np.savez)(path, **arrays)
    if kind == "comment":
        with zipfile.ZipFile(path, "a") as zf:
            zf.comment = b"a comment"
    with zipfile.ZipFile(path) as zf:
        want = None
        if "A.npy" in zf.namelist():
            with zf.open("A.npy") as fh:
                version = np.lib.format.read_magic(fh)
                shape = np.lib.format.read_array_header_1_0(fh)[0] if version == (1, 0) else None
                want = shape if shape is not None and len(shape) == 3 else None
    assert _stack_shape(path) == want
    fast = _stored_shape(path, b"A.npy")
    if kind in ("compressed", "comment"):
        assert fast == (-1,)  # left to zipfile
    else:
        assert fast == (None if kind == "no A" else A.shape)


def _damage_parts(parts: Path) -> None:
    """What a power loss can leave of parts renamed into place before their data reached the disk (they are
    written without an fsync): part 1 cut to half, part 2 empty, part 3 zeros of its length, part 5 gone."""
    p1, p2, p3, p5 = (parts / f"part-{i:07d}.arrow" for i in (1, 2, 3, 5))
    p1.write_bytes(p1.read_bytes()[: p1.stat().st_size // 2])
    p2.write_bytes(b"")
    p3.write_bytes(bytes(p3.stat().st_size))
    p5.unlink()


def test_resume_recomputes_the_parts_that_do_not_read_back_whole(tmp_path, monkeypatch):
    """A resumed zoo job and a resumed census reopen every part they keep: a part cut short, emptied or zeroed
    (what a power loss can leave of a part written without an fsync) is recomputed, like a missing one, and the
    table is byte for byte that of an uninterrupted run (the oracle)."""
    import relusym._zoo._run as zrun
    import relusym.census._table as ctable
    from relusym.census import CensusSpec
    from relusym.census._table import run_census_table
    from relusym.zoo import scan_zoo

    rng = np.random.default_rng(11)
    B = 240
    V, A, b, c = (rng.integers(-3, 4, s).astype(np.float32) for s in ((B, 1, 4), (B, 4, 2), (B, 4), (B, 1)))
    np.savez(tmp_path / "s.npz", V=V, A=A, b=b, c=c)
    scan_zoo(tmp_path / "s.npz", tmp_path / "ref.parquet", chunk_size=40, fibre=False, progress=False)

    def stop(index: int) -> None:
        if index == 5:  # every part written (the job runs serially, in order): the job dies before its end
            raise RuntimeError("killed")

    out = tmp_path / "z.parquet"
    with pytest.raises(RuntimeError, match="killed"):
        zrun.run_job(tmp_path / "s.npz", out, options=zrun.Options(fibre=False), chunk_size=40, on_part=stop)
    parts = tmp_path / "z.parquet.parts"
    assert len(list(parts.glob("part-*.arrow"))) == 6 and not out.exists()
    _damage_parts(parts)
    computed: list[int] = []
    run_chunk = zrun.run_chunk
    monkeypatch.setattr(
        zrun, "run_chunk", lambda chunk, options: computed.append(chunk.index) or run_chunk(chunk, options)
    )
    scan_zoo(tmp_path / "s.npz", out, chunk_size=40, fibre=False, progress=False, resume=True)
    assert sorted(computed) == [1, 2, 3, 5]
    assert out.read_bytes() == (tmp_path / "ref.parquet").read_bytes() and not parts.exists()

    spec = CensusSpec((1, 2, 1), (-1, 0, 1), chunk_size=40)
    run_census_table(spec, tmp_path / "cref.parquet", progress=False)
    cout = tmp_path / "c.parquet"
    with pytest.raises(RuntimeError, match="killed"):
        run_census_table(spec, cout, progress=False, on_part=stop)
    _damage_parts(tmp_path / "c.parquet.parts")
    computed.clear()
    census_part = ctable.census_part
    monkeypatch.setattr(ctable, "census_part", lambda s, chunk: computed.append(chunk) or census_part(s, chunk))
    run_census_table(spec, cout, progress=False, resume=True)
    assert sorted(computed) == [1, 2, 3, 5] + list(range(6, spec.chunks))
    assert cout.read_bytes() == (tmp_path / "cref.parquet").read_bytes()


@given(st.lists(st.lists(st.one_of(st.none(), st.integers(0, 300)), max_size=30), max_size=6))
@settings(max_examples=200, deadline=None)
def test_width_counts_against_counting_the_values(chunks):
    """The summary's widths, counted chunk by chunk on the width column's values in place, equal a count of the
    column as Python values (nulls: "undecided"), over empty chunks, all-null chunks and widths of any size."""
    from collections import Counter

    import pyarrow as pa

    from relusym._zoo._summary import _width_counts

    col = pa.chunked_array([pa.array(c, type=pa.int32()) for c in chunks], type=pa.int32())
    want = {str(w): n for w, n in Counter(x for c in chunks for x in c if x is not None).items()}
    undecided = sum(x is None for c in chunks for x in c)
    if undecided:
        want["undecided"] = undecided
    assert _width_counts(col) == want


@given(st.integers(0, 3_000_000))
@settings(max_examples=300, deadline=None)
def test_default_folder_tasks_bounded_and_balanced(files):
    """The default model files per task of a folder: at most 1024; at least 16 tasks (one per file below 16),
    and two or three workers' shares of the files differ by at most one task."""
    from relusym._zoo._sources import auto_files

    per = auto_files(files)
    assert 1 <= per <= 1024
    tasks = -(-files // per)
    assert tasks >= min(16, files)
    sizes = [per] * (tasks - 1) + [files - (tasks - 1) * per] if tasks else []
    for w in (2, 3):
        shares = [sum(sizes[i::w]) for i in range(w)]
        assert max(shares) - min(shares) <= per


def test_default_folder_chunks_on_a_folder(tmp_path):
    """A folder of 40 model files and a stacked shard among them: by default the loose files go in tasks of
    auto_files(40) = 1 (40 tasks: 24 would hold 1.7 files), the shard in its own tasks; an explicit
    ``files_per_chunk`` still rules."""
    from relusym._zoo._sources import auto_files, plan_chunks

    rng = np.random.default_rng(3)
    for i in range(40):
        V, A, b, c = (
            rng.standard_normal((1, 3)),
            rng.standard_normal((3, 2)),
            rng.standard_normal(3),
            rng.standard_normal(1),
        )
        np.savez(tmp_path / f"n{i:02d}.npz", V=V, A=A, b=b, c=c)
    B = 300
    np.savez(
        tmp_path / "n20_stack.npz",
        **{x: rng.standard_normal(s) for x, s in zip("VAbc", ((B, 1, 3), (B, 3, 2), (B, 3), (B, 1)), strict=True)},
    )
    assert auto_files(40) == 1 and auto_files(20_000) == 833 and auto_files(10**6) == 1016
    chunks = plan_chunks(tmp_path)
    files = [c for c in chunks if c.kind == "files"]
    assert [len(c.paths) for c in files] == [1] * 40 and sum(c.size for c in chunks) == 40 + B
    # files sorted by path: n00..n20, then the shard n20_stack (it ends a run of loose files), then n21..n39
    assert [len(c.paths) for c in plan_chunks(tmp_path, files_per_chunk=7) if c.kind == "files"] == [7, 7, 7, 7, 7, 5]
