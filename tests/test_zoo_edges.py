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

import numpy as np
import pytest

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
        for _ in range(HANG_SECONDS * 10):  # until the pool's workers (and the resource tracker) exist
            kids = _children(parent.pid)
            if len(kids) >= 3 or parent.poll() is not None:
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
