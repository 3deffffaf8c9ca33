"""The zoo's table streamed to its file while the chunks run (``relusym._zoo._stream``): the file read back is the
job's table whether the speculation held (every network its own group, no near pair) or not (exact duplicates,
near duplicates), with error rows, in any chunking, serially and on a process pool (the same bytes); a failed job
leaves neither the file nor a temporary file; the integer columns that count up are delta-encoded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relusym._zoo import _run, _stream
from relusym.zoo import scan_zoo

pq = pytest.importorskip("pyarrow.parquet")


def _shard(path: Path, rows: int, seed: int, dups: list[tuple[int, int]], near: list[tuple[int, int]], bad: list[int]):
    """A stacked .npz shard of ``rows`` random 3-4-2 networks; row j a copy of row i for (i, j) in ``dups``, its
    hidden neurons permuted and rescaled (the same function); a copy with V scaled by 1 + 1e-12 for ``near``; a
    NaN weight in the rows ``bad``."""
    rng = np.random.default_rng(seed)
    V, A = rng.standard_normal((rows, 2, 4)), rng.standard_normal((rows, 4, 3))
    b, c = rng.standard_normal((rows, 4)), rng.standard_normal((rows, 2))
    for i, j in dups:
        p, s = rng.permutation(4), rng.uniform(0.5, 2.0, 4)
        V[j], A[j], b[j], c[j] = V[i][:, p] / s, A[i][p] * s[:, None], b[i][p] * s, c[i]
    for i, j in near:
        V[j], A[j], b[j], c[j] = V[i] * (1 + 1e-12), A[i], b[i], c[i]
    for j in bad:
        A[j, 0, 0] = np.nan
    np.savez(path, V=V, A=A, b=b, c=c)
    return path


def _committed(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    seen: list[bool] = []
    real = _stream.TableStream.commit

    def commit(self, table):
        seen.append(real(self, table))
        return seen[-1]

    monkeypatch.setattr(_stream.TableStream, "commit", commit)
    return seen


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.integers(2, 40),
    chunk=st.integers(1, 15),
    seed=st.integers(0, 2**16),
    kinds=st.lists(st.sampled_from(["dup", "near", "bad"]), max_size=3),
)
def test_the_file_is_the_table_whether_or_not_the_speculation_held(
    tmp_path_factory, monkeypatch, rows, chunk, seed, kinds
):
    folder = tmp_path_factory.mktemp("stream")
    rng = np.random.default_rng(seed)
    dups, near, bad = [], [], []
    used: set[int] = set()
    for kind in kinds:
        i, j = (int(x) for x in rng.choice(rows, 2, replace=False))
        if i in used or j in used:
            continue
        used |= {i, j}
        (dups if kind == "dup" else near if kind == "near" else bad).append((i, j) if kind != "bad" else j)
    src = _shard(folder / "zoo.npz", rows, seed, dups, near, bad)  # type: ignore[arg-type]
    seen = _committed(monkeypatch)
    out = folder / "zoo.parquet"
    res = scan_zoo(src, out, chunk_size=chunk, progress=False)
    back = pq.read_table(out)
    assert back.equals(res.table) and back.schema.equals(res.table.schema, check_metadata=True)
    # the oracle of the speculation: every successful row its own group and its own near cluster
    t = res.table.to_pydict()
    ok = [s == "ok" for s in t["status"]]
    singletons = (
        all(size == 1 for size, o in zip(t["group_size"], ok, strict=True) if o) and t["near_cluster"] == t["group"]
    )
    assert seen == [singletons]
    assert singletons == (not dups and not near)  # the planted duplicates are found (and nothing else)
    assert sum(not o for o in ok) == len(bad)
    assert pq.ParquetFile(out).metadata.num_row_groups == (-(-rows // chunk) if singletons else 1)
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.parametrize("dup", [False, True])
def test_serial_and_pool_write_the_same_bytes(tmp_path, monkeypatch, dup):
    src = _shard(tmp_path / "zoo.npz", 60, 3, [(4, 50)] if dup else [], [], [7])
    seen = _committed(monkeypatch)
    scan_zoo(src, tmp_path / "serial.parquet", chunk_size=9, progress=False)
    scan_zoo(src, tmp_path / "pool.parquet", chunk_size=9, workers=2, progress=False)
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "pool.parquet").read_bytes()
    assert seen == [not dup] * 2


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_a_failed_job_leaves_no_file(tmp_path, monkeypatch, error):
    src = _shard(tmp_path / "zoo.npz", 30, 4, [], [], [])
    out = tmp_path / "zoo.parquet"
    real = _run.run_chunk_part
    calls: list[int] = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:  # two parts streamed to the temporary file before
            raise error("stop")
        return real(*args, **kwargs)

    monkeypatch.setattr(_run, "run_chunk_part", failing)
    with pytest.raises(error):
        scan_zoo(src, out, chunk_size=5, progress=False)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_failed_end_leaves_no_file_and_an_old_table_untouched(tmp_path, monkeypatch):
    src = _shard(tmp_path / "zoo.npz", 30, 5, [], [], [])
    out = tmp_path / "zoo.parquet"
    out.write_bytes(b"an older table")

    def broken(*args, **kwargs):
        raise RuntimeError("the end failed")

    monkeypatch.setattr(_run, "finish_job", broken)
    with pytest.raises(RuntimeError):
        scan_zoo(src, out, chunk_size=5, progress=False)
    assert out.read_bytes() == b"an older table"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_counting_columns_are_delta_encoded_and_read_back(tmp_path):
    src = _shard(tmp_path / "zoo.npz", 50, 6, [], [], [3])
    res = scan_zoo(src, tmp_path / "zoo.parquet", chunk_size=20, progress=False)
    meta = pq.ParquetFile(tmp_path / "zoo.parquet").metadata
    names = res.table.column_names
    for g in range(meta.num_row_groups):
        for name in ("index", "group", "near_cluster"):
            assert "DELTA_BINARY_PACKED" in meta.row_group(g).column(names.index(name)).encodings
        assert "DELTA_BINARY_PACKED" not in meta.row_group(g).column(names.index("width")).encodings
    assert pq.read_table(tmp_path / "zoo.parquet").column("index").to_pylist() == list(range(50))


@pytest.mark.parametrize("where", ["write_table", "close", "fsync"])
def test_a_full_disk_while_streaming_is_one_sentence_and_leaves_nothing(tmp_path, monkeypatch, where):
    import errno

    from relusym.errors import OutputError

    src = _shard(tmp_path / "zoo.npz", 30, 7, [], [], [])
    out = tmp_path / "zoo.parquet"
    calls: list[int] = []

    def full(*args, **kwargs):
        calls.append(1)
        if where == "fsync" and not Path(os.readlink(f"/proc/self/fd/{args[0]}")).name.startswith(".zoo.parquet."):
            return real(*args, **kwargs)  # not the table's temporary file (job.json, the summary)
        if where != "write_table" or len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    if where == "fsync":  # the table's fsync, in its thread while the end of the job runs
        if not sys.platform.startswith("linux"):
            pytest.skip("finds the file of a descriptor in /proc")
        real = _stream.os.fsync
        monkeypatch.setattr(_stream.os, "fsync", full)
    else:
        real = getattr(pq.ParquetWriter, where)
        monkeypatch.setattr(pq.ParquetWriter, where, full)
    with pytest.raises(
        OutputError, match=r"cannot write .*zoo\.parquet: no space left on the device; nothing was written"
    ):
        scan_zoo(src, out, chunk_size=5, progress=False)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_parts_returned_by_the_workers_stream_the_same_bytes(tmp_path, monkeypatch):
    # workers that do not see the parts folder (a cluster without the client's file system) return their tables,
    # which the client writes as parts and streams: the serial table byte for byte (fork: the workers see the patch)
    src = _shard(tmp_path / "zoo.npz", 60, 8, [], [], [11])
    scan_zoo(src, tmp_path / "serial.parquet", chunk_size=7, progress=False)
    monkeypatch.setattr(_run, "owns_folder", lambda folder, fingerprint: False)
    seen = _committed(monkeypatch)
    written: list[int] = []
    real = _run.PartsFolder.write

    def write(self, index, table):
        written.append(index)
        real(self, index, table)

    monkeypatch.setattr(_run.PartsFolder, "write", write)
    scan_zoo(src, tmp_path / "pool.parquet", chunk_size=7, workers=2, progress=False)
    assert sorted(written) == list(range(9)) and seen == [True]  # every part came back as a table
    assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "pool.parquet").read_bytes()
