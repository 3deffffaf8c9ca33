"""The census table (relusym.census.run_census_table, ``relusym census --shape``): the networks are rebuilt from
their indices, the vectorized function keys are exactly the normal forms, the table equals ``fiber`` run on
every network of small grids (degenerate networks included), and a job killed with SIGKILL resumes to the same
bytes; a resume with other options is refused."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from relusym import Network, fiber, normal_form
from relusym._base.fileio import TMP_MARK
from relusym.census import (
    CensusSpec,
    census_entries,
    census_network,
    census_part,
    fibre_category,
    integer_function_keys,
    networks_121,
    read_census_table,
    run_census_table,
)
from relusym.errors import InvalidNetworkError
from test_census import _independent_121_counts

pq = pytest.importorskip("pyarrow.parquet")

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run(
        [sys.executable, "-m", "relusym", "census", *args], capture_output=True, text=True, env=env, timeout=300
    )


def _reference(net: Network, budget: float = 5.0) -> tuple[object, ...]:
    """What the table must say of θ, read from relusym.fiber(θ) itself."""
    fb = fiber(net, budget=budget)
    flips = None if fb.flips is None else sum(1 for T in fb.flips if T)
    return fibre_category(fb), fb.width, fb.dimension, flips, fb.orbits


def _row(table: dict[str, list[object]], r: int) -> tuple[object, ...]:
    return tuple(table[c][r] for c in ("fibre_type", "width", "dimension", "flip_sets", "orbits"))


def _assert_table_equals_fiber(spec: CensusSpec, indices: list[int] | None = None) -> None:
    res = run_census_table(spec, progress=False)
    t = res.table.to_pydict()
    assert t["index"] == list(range(spec.total))
    for i in indices if indices is not None else range(spec.total):
        assert _row(t, i) == _reference(census_network(spec, i), spec.budget), (i, census_network(spec, i).to_dict())


# ----------------------------------------------------------------------------------------------------------
# the enumeration


def test_grid_order_is_that_of_the_checked_census():
    spec = CensusSpec((1, 2, 1), (-1, 0, 1))
    assert spec.total == 3**7
    want = [n.to_dict() for n in networks_121()]
    assert [census_network(spec, i).to_dict() for i in range(spec.total)] == want
    num, den = census_entries(spec, 100, 200)
    assert (den == 1).all()
    assert num.tolist() == [list(e) for e in itertools.islice(itertools.product((-1, 0, 1), repeat=7), 100, 200)]


def test_samples_are_rebuilt_from_their_index_whatever_the_chunks():
    for dist in ("int", "rational", "float32"):
        spec = CensusSpec((2, 3, 1), (-2, -1, 0, 1, 2), sample=2500, distribution=dist, seed=7, denominators=4)
        whole, whole_den = census_entries(spec, 0, 2500)
        for a, b in ((0, 1), (1000, 1030), (1023, 1025), (2047, 2500)):
            num, den = census_entries(spec, a, b)
            assert np.array_equal(num, whole[a:b])
            assert den is None if dist == "float32" else np.array_equal(den, whole_den[a:b])
        net = census_network(spec, 1500)
        if dist == "int":
            assert set(np.unique(whole).tolist()) == {-2, -1, 0, 1, 2}
            assert [int(x) for x in net.to_dict()["b"]] == whole[1500, 9:12].tolist()
        elif dist == "rational":
            assert set(np.unique(whole_den).tolist()) == {1, 2, 3, 4}
            assert [Fraction(x) for x in net.to_dict()["b"]] == [
                Fraction(int(p), int(q)) for p, q in zip(whole[1500, 9:12], whole_den[1500, 9:12], strict=True)
            ]
        else:
            assert whole.dtype == np.float32 and whole.min() >= -1 and whole.max() < 1
            assert np.array_equal(whole * 2**23, np.round(whole * 2**23))  # the grid j·2^-23
            assert len(np.unique(whole)) > 7000
    other = census_entries(CensusSpec((2, 3, 1), (-2, -1, 0, 1, 2), sample=2500, seed=8), 0, 2500)[0]
    assert not np.array_equal(other, census_entries(CensusSpec((2, 3, 1), (-2, -1, 0, 1, 2), sample=2500), 0, 2500)[0])
    with pytest.raises(InvalidNetworkError, match="index 2500"):
        census_network(spec, 2500)


# ----------------------------------------------------------------------------------------------------------
# the fast path is exact


def _keys_against_digests(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray, bound: int) -> int:
    """Equal keys iff equal normal-form digests; returns the number of distinct functions."""
    K = integer_function_keys(V, A, b, c, bound)
    keys = [K[t].tobytes() for t in range(len(K))]
    digests = [normal_form(Network(V[t], A[t], b[t], c[t])).digest() for t in range(len(K))]
    by_key: dict[bytes, str] = {}
    by_digest: dict[str, bytes] = {}
    for key, dg in zip(keys, digests, strict=True):
        assert by_key.setdefault(key, dg) == dg  # equal keys: equal functions
        assert by_digest.setdefault(dg, key) == key  # equal functions: equal keys
    assert 1 < len(by_key) < len(keys)
    return len(by_key)


def _stack(spec: CensusSpec, start: int, stop: int) -> tuple[np.ndarray, ...]:
    m, n, k = spec.shape
    num, den = census_entries(spec, start, stop)
    assert (den == 1).all()
    o = [k * n, k * n + n * m, k * n + n * m + n]
    return num[:, : o[0]].reshape(-1, k, n), num[:, o[0] : o[1]].reshape(-1, n, m), num[:, o[1] : o[2]], num[:, o[2] :]


@pytest.mark.slow
def test_integer_keys_are_exactly_the_normal_forms():
    # every network of Ω(1,2,1) with entries in {−1, 0, 1}: all the degenerate ones (null, constant, dead,
    # duplicate, opposite and cancelling neurons) are there
    spec = CensusSpec((1, 2, 1), (-1, 0, 1))
    distinct = _keys_against_digests(*_stack(spec, 0, spec.total), 1)
    assert run_census_table(spec, progress=False).summary["distinct_functions"] == distinct
    # two inputs, two outputs, five neurons (the last two zero) on a few hyperplanes with scales 1..3 (equal
    # classes, gcd > 1); each network is followed by a copy in which neuron 0 is turned around,
    # v σ(z) = v σ(−z) + v σ(z) − v σ(−z), the opposite pair taking the places of the zero neurons, and the
    # neurons are permuted
    rng = np.random.default_rng(3)
    B = 300
    A = rng.integers(-1, 2, (B, 5, 2)) * rng.integers(1, 4, (B, 5, 1))
    b = rng.integers(-3, 4, (B, 5))
    V = rng.integers(-3, 4, (B, 2, 5))
    c = rng.integers(-3, 4, (B, 2))
    A[:, 3:], b[:, 3:], V[:, :, 3:] = 0, 0, 0
    A2, b2, V2 = A.copy(), b.copy(), V.copy()
    A2[:, 0], b2[:, 0] = -A[:, 0], -b[:, 0]
    A2[:, 3], b2[:, 3], V2[:, :, 3] = A[:, 0], b[:, 0], V[:, :, 0]
    A2[:, 4], b2[:, 4], V2[:, :, 4] = -A[:, 0], -b[:, 0], -V[:, :, 0]
    perm = rng.permutation(5)
    stack = [np.concatenate(x) for x in ((V, V2[:, :, perm]), (A, A2[:, perm]), (b, b2[:, perm]), (c, c))]
    assert _keys_against_digests(*stack, 9) <= B


@pytest.mark.slow
def test_integer_keys_are_exactly_the_normal_forms_on_a_larger_grid():
    spec = CensusSpec((1, 2, 1), (-1, 0, 1, 2))
    _keys_against_digests(*_stack(spec, 0, spec.total), 2)


def test_table_equals_fiber_on_every_network_of_a_small_grid():
    _assert_table_equals_fiber(CensusSpec((1, 2, 1), (-1, 0, 1), check_every=0, chunk_size=700))


@pytest.mark.slow
def test_table_equals_fiber_on_thousands_of_larger_networks():
    # three chunks of the 4^10 grid of Ω(1,3,1) (consecutive indices: b and c run fastest), every row
    spec = CensusSpec((1, 3, 1), (-1, 0, 1, 2), check_every=0, chunk_size=400)
    for chunk in (0, 1023):
        t = census_part(spec, chunk).to_pydict()
        assert t["index"] == list(range(400 * chunk, 400 * (chunk + 1)))
        for r, i in enumerate(t["index"]):
            assert _row(t, r) == _reference(census_network(spec, i)), (i, census_network(spec, i).to_dict())
    _assert_table_equals_fiber(CensusSpec((2, 3, 1), (-1, 0, 1), sample=400, seed=1, check_every=0))
    _assert_table_equals_fiber(CensusSpec((1, 2, 1), (-1, 0, 1, 2), sample=120, distribution="rational"))
    _assert_table_equals_fiber(CensusSpec((2, 3, 1), (-1, 0, 1), sample=60, distribution="float32"))


@pytest.mark.slow
def test_table_equals_fiber_on_every_network_of_larger_grids():
    _assert_table_equals_fiber(CensusSpec((1, 2, 1), (-1, 0, 1, 2), check_every=0))


def test_table_counts_are_those_of_the_checked_census():
    res = run_census_table(CensusSpec((1, 2, 1), (-1, 0, 1), chunk_size=300, check_every=7), progress=False)
    s = res.summary
    assert s["networks"] == 2187 and s["differs"] == [] and s["checked"] == len(range(0, 2187, 7))
    expected = _independent_121_counts()  # counted without relusym
    for cat, count in expected.items():
        assert s["fibre_types"][cat] == count
    assert s["fibre_types"]["positive-dimensional"] == 2187 - sum(expected.values())
    assert s["by_type"]["finitely many orbits"]["flip_sets"] == {"1": 144}
    assert s["by_type"]["finitely many orbits"]["orbits"] == {"2": 144}
    assert s["by_type"]["generic"]["widths"] == {"2": 144} and s["by_type"]["generic"]["dimensions"] == {"2": 144}
    check = res.table.column("check").to_pylist()
    assert [i for i, x in enumerate(check) if x is not None] == list(range(0, 2187, 7))
    assert set(check) == {None, "agrees"}


def test_executors_and_chunks_do_not_change_the_table(tmp_path):
    spec = CensusSpec((2, 3, 1), (-1, 0, 1), sample=400, seed=5, chunk_size=64, check_every=9)
    a = run_census_table(spec, tmp_path / "a.parquet", progress=False)
    with ThreadPoolExecutor(2) as ex:
        b = run_census_table(spec, tmp_path / "b.parquet", executor=ex, progress=False)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert a.summary == b.summary
    other = run_census_table(
        CensusSpec((2, 3, 1), (-1, 0, 1), sample=400, seed=5, chunk_size=150, check_every=9), progress=False
    )
    assert other.table.to_pydict() == a.table.to_pydict()
    spec_read, table = read_census_table(tmp_path / "a.parquet")
    assert spec_read == spec and table.to_pydict() == a.table.to_pydict()
    assert json.loads((tmp_path / "a.summary.json").read_text()) == a.summary
    assert not list(tmp_path.glob("*.parts"))


# ----------------------------------------------------------------------------------------------------------
# the job


# ``python -m relusym`` that SIGKILLs itself in the middle of writing its n-th part of a job (n from the environment):
# after the part's data is in its temporary file, before the rename that publishes it
KILL_AT_PART = """
import os, runpy, signal, sys
import pyarrow.ipc as ipc
new_file, left = ipc.new_file, [int(os.environ["RELUSYM_TEST_KILL_AT_PART"])]
class Writer:  # a part's writer (parts are Arrow IPC files) that kills the process once the Nth part's data is in
    def __init__(self, w):
        self.w = w
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return self.w.__exit__(*exc)
    def write_table(self, table, *args, **kwargs):
        self.w.write_table(table, *args, **kwargs)
        left[0] -= 1
        if left[0] == 0:
            os.kill(os.getpid(), signal.SIGKILL)
ipc.new_file = lambda sink, schema, *args, **kwargs: Writer(new_file(sink, schema, *args, **kwargs))
sys.argv = ["relusym", *sys.argv[1:]]
runpy.run_module("relusym", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
def test_sigkill_and_resume_give_the_same_table(tmp_path):
    args = ["--shape", "1,2,1", "--values=-1,0,1", "--chunk-size", "40", "--check-every", "1", "--quiet"]
    ref = tmp_path / "ref.parquet"
    r = _cli(*args, "-o", str(ref))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out" / "c.parquet"
    out.parent.mkdir()
    parts = out.with_name(out.name + ".parts")
    # SIGKILL in the middle of writing the 4th of 55 parts (its data written, not yet renamed into place): the
    # process kills itself there, so the moment does not depend on how fast it runs next to this one
    env = dict(os.environ, PYTHONPATH=SRC, RELUSYM_TEST_KILL_AT_PART="4")
    proc = subprocess.run([sys.executable, "-c", KILL_AT_PART, "census", *args, "-o", str(out)], env=env, timeout=600)
    assert proc.returncode == -signal.SIGKILL
    assert len(list(parts.glob("part-*.arrow"))) == 3 and not out.exists()
    assert [p for p in parts.iterdir() if TMP_MARK in p.name]  # the 4th part's temporary, left by the kill
    written = 3
    # a resume with other options is refused: exit 2, one sentence naming the option
    for bad, word in (
        (["--chunk-size", "41", "--values=-1,0,1"], "chunk_size"),
        (["--chunk-size", "40", "--values=-1,0,2"], "values"),
    ):
        r = _cli("--shape", "1,2,1", *bad, "--check-every", "1", "--quiet", "-o", str(out), "--resume")
        assert r.returncode == 2 and word in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert len(list(parts.glob("part-*.arrow"))) == written  # the refusal touched nothing
    r = _cli(*args, "-o", str(out), "--resume")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == ref.read_bytes()
    assert out.with_name("c.summary.json").read_bytes() == ref.with_name("ref.summary.json").read_bytes()
    t = pq.read_table(out)
    assert t.column("index").to_pylist() == list(range(2187))
    assert not parts.exists() and not [p for p in tmp_path.rglob("*") if TMP_MARK in p.name]


@pytest.mark.slow
def test_process_pool_and_dask_give_the_same_table(tmp_path):
    pytest.importorskip("distributed")
    spec = CensusSpec((2, 3, 1), (-1, 0, 1), sample=600, seed=4, chunk_size=100, check_every=11)
    ref = run_census_table(spec, tmp_path / "a.parquet", progress=False)
    pool = run_census_table(spec, tmp_path / "b.parquet", workers=2, progress=False)
    dask = run_census_table(spec, tmp_path / "c.parquet", dask_local=2, progress=False)
    assert ref.summary == pool.summary == dask.summary
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "c.parquet").read_bytes()


def test_cli_refusals_and_text(tmp_path):
    r = _cli("--shape", "1,1,1", "--resume")
    assert r.returncode == 2 and "-o" in r.stderr
    r = _cli("--shape", "1,1,1", "--distribution", "rational")
    assert r.returncode == 2 and "sample" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _cli("--shape", "1,1,1", "--limit-121", "5")
    assert r.returncode == 2 and "checked census" in r.stderr
    r = _cli("--shape", "0,1,1")
    assert r.returncode == 2 and "M,N,K" in r.stderr
    r = _cli("--shape", "1,1,1", "--values=1,1")
    assert r.returncode == 2 and "distinct" in r.stderr
    r = _cli("--shape", "1,1,1", "-o", str(tmp_path / "no" / "x.parquet"))
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = _cli("--shape", "1,1,1", "--values=-1,0,1", "-o", str(tmp_path / "x.parquet"))
    assert r.returncode == 0, r.stderr
    assert "81 networks" in r.stdout and "| fibre type |" in r.stdout
    r = _cli("--shape", "1,1,1", "--sample", "30", "--distribution", "float32", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema"] == "relusym.census-table/1" and d["networks"] == 30
    assert sum(d["fibre_types"].values()) == 30


@pytest.mark.parametrize("spec", [
    CensusSpec((1, 2, 1), (-1, 0, 1, 2), chunk_size=2048, check_every=97),  # integer keys, 8 chunks
    CensusSpec((2, 3, 1), (-1, 0, 1), sample=300, seed=7, chunk_size=60, check_every=13),  # digest keys
])  # fmt: skip
def test_a_parallel_census_computes_each_function_once_and_the_serial_table(spec, tmp_path, monkeypatch, capsys):
    """On workers (threads here, so that ``fiber`` can be counted) a census runs ``fiber`` once per distinct
    function of the grid and once per checked network, not once per function per worker, and writes the serial
    table byte for byte; resumed after three parts, it computes only the functions the finished parts lack."""
    import relusym.census._table as table_module

    calls: list[int] = []
    real = table_module.fiber

    def counted(net, **kw):
        calls.append(1)
        return real(net, **kw)

    ref = run_census_table(spec, tmp_path / "ref.parquet", progress=False)
    checked = len(range(0, spec.total, spec.check_every))

    class Forgetful(dict):  # each task as if in a process of its own: no memo shared by the threads
        def __contains__(self, key: object) -> bool:
            return False

    monkeypatch.setattr(table_module, "fiber", counted)
    monkeypatch.setattr(table_module, "_FIBRES", Forgetful())
    with ThreadPoolExecutor(2) as ex:
        got = run_census_table(spec, tmp_path / "par.parquet", executor=ex, progress=True)
    shown = capsys.readouterr().err  # the functions' pass shows its own bar, then the parts'
    functions = ref.summary["distinct_functions"]
    assert f"census functions:   0%|          | 0/{functions} [" in shown
    assert f"census:   0%|          | 0/{spec.total} [" in shown
    assert len(calls) == ref.summary["distinct_functions"] + checked
    assert (tmp_path / "par.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()
    assert got.summary == ref.summary

    def stop_after_three(index: int) -> None:
        if index == 2:
            raise KeyboardInterrupt

    out = tmp_path / "resumed.parquet"
    with pytest.raises(KeyboardInterrupt):
        run_census_table(spec, out, progress=False, on_part=stop_after_three)  # serial: parts 0, 1, 2
    first = 3 * spec.chunk_size  # the functions of the finished parts' unchecked rows are known; the rest computed
    keys = table_module.function_keys(spec, *table_module.census_entries(spec, 0, spec.total))
    known = {k for i, k in enumerate(keys[:first]) if i % spec.check_every}
    want = len(set(keys[first:]) - known) + len(range(first + -first % spec.check_every, spec.total, spec.check_every))
    calls.clear()
    with ThreadPoolExecutor(2) as ex:
        run_census_table(spec, out, executor=ex, resume=True, progress=False)
    assert out.read_bytes() == (tmp_path / "ref.parquet").read_bytes()
    assert len(calls) == want < ref.summary["distinct_functions"] + checked
