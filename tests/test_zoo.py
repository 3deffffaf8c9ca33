"""relusym.zoo: batched digests equal the single-network definition; a planted zoo in six formats gives exactly
the planted duplicate groups and one error row per bad input; the table does not depend on the executor; a job
killed with SIGKILL (or losing a Dask worker) and resumed ends with the same table."""

from __future__ import annotations

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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relusym
from digest_helpers import expected_digest, stack_definition
from relusym import Network
from relusym._base.fileio import TMP_MARK
from relusym._zoo._digest import stack_digests
from test_census_table import KILL_AT_PART

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from relusym.zoo import SCHEMA, read_zoo_table, scan_zoo  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")


# ----------------------------------------------------------------------------------------------------------
# vectorized digests against the definition


def _stack_with_structure(rng: np.random.Generator, B: int, m: int, n: int, k: int, kind: str):
    """Stacks rich in the cases exactness hinges on: ties and shared hyperplanes (small integers), cancelling
    kinks, opposite pairs, hidden flips, dead and constant neurons, split duplicates, tiny and huge exponents."""
    if kind == "int":
        V = rng.integers(-2, 3, (B, k, n)).astype(np.float32)
        A = rng.integers(-2, 3, (B, n, m)).astype(np.float32)
        b = rng.integers(-2, 3, (B, n)).astype(np.float32)
        c = rng.integers(-2, 3, (B, k)).astype(np.float32)
    elif kind == "dyadic":
        V = (rng.integers(-8, 9, (B, k, n)) / 4).astype(np.float32)
        A = (rng.integers(-8, 9, (B, n, m)) / 8).astype(np.float32)
        b = (rng.integers(-8, 9, (B, n)) / 2).astype(np.float32)
        c = (rng.integers(-8, 9, (B, k)) / 4).astype(np.float32)
    else:
        V = rng.standard_normal((B, k, n)).astype(np.float32)
        A = rng.standard_normal((B, n, m)).astype(np.float32)
        b = rng.standard_normal((B, n)).astype(np.float32)
        c = rng.standard_normal((B, k)).astype(np.float32)
        if kind == "wide":  # exponents far apart: sums need many limbs, quotients big numerators
            A *= (2.0 ** rng.integers(-60, 60, (B, n, m))).astype(np.float32)
            V *= (2.0 ** rng.integers(-60, 60, (B, k, n))).astype(np.float32)
    if n >= 2:
        t = B // 4
        # split duplicates and opposite pairs, cancelling kinks (v and −v on one hyperplane)
        A[:t, 1] = A[:t, 0] * np.float32(2.0)
        b[:t, 1] = b[:t, 0] * np.float32(2.0)
        V[t : 2 * t, :, 1] = -V[t : 2 * t, :, 0]
        A[t : 2 * t, 1] = -A[t : 2 * t, 0]
        b[t : 2 * t, 1] = -b[t : 2 * t, 0]
        V[2 * t : 3 * t, :, 1] = -V[2 * t : 3 * t, :, 0]  # a flip pair: v₀a₀ + v₁a₁ = 0
        A[2 * t : 3 * t, 1] = A[2 * t : 3 * t, 0]
        A[3 * t :, -1] = 0.0  # constant (b > 0) or null neurons
        V[3 * t :, :, 0] = 0.0  # dead neuron
    return V, A, b, c


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 4),
    n=st.integers(0, 9),
    k=st.integers(1, 3),
    kind=st.sampled_from(["int", "dyadic", "normal", "wide"]),
)
def test_stack_digests_equal_thestack_definition(seed, m, n, k, kind):
    rng = np.random.default_rng(seed)
    V, A, b, c = _stack_with_structure(rng, 64, m, n, k, kind)
    sd = stack_digests(V, A, b, c)
    assert sd.digest == stack_definition(V, A, b, c)
    assert sd.fast.all()
    for i in range(0, 64, 9):  # the width shortcut agrees with minimal_width
        if sd.width[i] >= 0:
            assert sd.width[i] == relusym.minimal_width(Network(V[i], A[i], b[i], c[i]))


def test_stack_digests_flips_and_fallbacks():
    rng = np.random.default_rng(5)
    V, A, b, c = _stack_with_structure(rng, 40, 3, 6, 2, "dyadic")
    # a hidden flip of the pair (0, 1) where Σ_T v_i a_iᵀ = 0: same function, same digest
    i = 40 // 4 * 2
    net = Network(V[i], A[i], b[i], c[i])
    flipped = relusym.flip(net, [0, 1])
    assert relusym.equivalent(net, flipped)
    V2, A2, b2, c2 = (
        np.stack([x, y]) for x, y in zip(net.to_float(np.float32), flipped.to_float(np.float32), strict=True)
    )
    sd = stack_digests(V2, A2, b2, c2)
    assert sd.digest[0] == sd.digest[1] == expected_digest(net)
    # float64 entries beyond the vectorized range (exponents 2000 bits apart), NaN and infinity: the
    # single-network path or an error; float64 entries that are not float32 values stay vectorized
    V64, A64, b64, c64 = (x.astype(np.float64) for x in (V, A, b, c))
    A64[0, 0, 0] = 1e-300
    A64[0, 0, 1] = 1e300
    A64[1, 0, 0] = np.nan
    c64[2, 0] = np.inf
    A64[3, 0, 0] = 0.1
    sd = stack_digests(V64, A64, b64, c64)
    assert not sd.fast[:3].any() and sd.fast[3:].all()
    assert sd.digest[1] is None and "nan" in (sd.error[1] or "") and sd.digest[2] is None
    assert sd.digest == stack_definition(V64, A64, b64, c64)


@pytest.mark.slow
def test_stack_digests_thousands_of_random_networks():
    rng = np.random.default_rng(11)
    # the last two shapes have n·k·m > 4096: M comes from exact matrix products of 16-bit limbs
    for m, n, k, B in ((2, 16, 1, 600), (8, 24, 1, 300), (3, 7, 4, 400), (6, 48, 16, 30), (16, 40, 8, 20)):
        for kind in ("normal", "int", "wide"):
            V, A, b, c = _stack_with_structure(rng, B, m, n, k, kind)
            assert stack_digests(V, A, b, c).digest == stack_definition(V, A, b, c)


# ----------------------------------------------------------------------------------------------------------
# a planted zoo


def _base(rng: np.random.Generator) -> Network:
    """A random 2-4-1 network with dyadic float32 entries and a hidden flip (neurons 0 and 1: v₁ = −v₀, a₁ = a₀)."""
    V = (rng.integers(1, 9, (1, 4)) / 4 * rng.choice([-1, 1], (1, 4))).astype(np.float32)
    A = (rng.integers(1, 9, (4, 2)) / 8 * rng.choice([-1, 1], (4, 2))).astype(np.float32)
    b = (rng.integers(-8, 9, 4) / 4).astype(np.float32)
    V[0, 1] = -V[0, 0]
    A[1] = A[0]
    b[1] = b[0] + 1
    c = (rng.integers(-4, 5, 1) / 4).astype(np.float32)
    return Network(V, A, b, c)


def _rescaled(net: Network, rng: np.random.Generator, exact: bool) -> Network:
    """π·diag(d) of θ: permuted, neuron i scaled by d_i (powers of two stay float32; exact=True uses thirds)."""
    perm = rng.permutation(net.n)
    d = [Fraction(3) ** int(e) if exact else Fraction(2) ** int(e) for e in rng.integers(-2, 3, net.n)]
    F = net.to_fractions()
    V = [[F.V[0, p] / d[p] for p in perm]]
    A = [[F.A[p, j] * d[p] for j in range(net.m)] for p in perm]
    b = [F.b[p] * d[p] for p in perm]
    out = Network(V, A, b, list(F.c))
    return out if exact else Network(*(np.asarray(x, dtype=np.float32) for x in out.to_float()))


def _padded(net: Network) -> Network:
    """θ with a dead neuron (v = 0), a null neuron (a = 0, b < 0) and neuron 2 split in two halves."""
    V, A, b, c = (np.asarray(x, dtype=np.float32) for x in net.to_float())
    V2 = np.concatenate([V, np.zeros((1, 1)), np.ones((1, 1)), V[:, 2:3] / 2], axis=1)
    V2[0, 2] /= 2
    A2 = np.concatenate([A, [[1.0, -1.0]], [[0.0, 0.0]], A[2:3]])
    b2 = np.concatenate([b, [0.5, -1.0], b[2:3]])
    return Network(V2.astype(np.float32), A2.astype(np.float32), b2.astype(np.float32), c)


def _torch_state(net: Network):
    torch = pytest.importorskip("torch")
    V, A, b, c = net.to_float(np.float32)
    model = torch.nn.Sequential(torch.nn.Linear(net.m, net.n), torch.nn.ReLU(), torch.nn.Linear(net.n, net.k))
    with torch.no_grad():
        model[0].weight.copy_(torch.from_numpy(A))
        model[0].bias.copy_(torch.from_numpy(b))
        model[2].weight.copy_(torch.from_numpy(V))
        model[2].bias.copy_(torch.from_numpy(c))
    return model.state_dict()


def _tanh_onnx(path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    W1, b1 = np.ones((3, 2), np.float32), np.zeros(3, np.float32)
    W2, b2 = np.ones((1, 3), np.float32), np.zeros(1, np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1),
        helper.make_node("Tanh", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1),
    ]
    inits = [numpy_helper.from_array(a, name) for a, name in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 1])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _planted_zoo(root: Path, seed: int = 0) -> tuple[list[set[str]], set[str]]:
    """Write a zoo; return the planted duplicate groups (sets of sources) and the sources of the bad inputs."""
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "sub").mkdir()
    groups: list[set[str]] = []
    shard_nets: list[Network] = []
    table_nets: list[Network] = []
    for g in range(4):
        base = _base(rng)
        names = set()
        relusym.save(base, root / f"base{g}.json")
        names.add(f"base{g}.json")
        relusym.save(_rescaled(base, rng, exact=True), root / "sub" / f"thirds{g}.json")
        names.add(f"sub/thirds{g}.json")
        relusym.save(_rescaled(base, rng, exact=False), root / f"perm{g}.npz")
        names.add(f"perm{g}.npz")
        flipped = relusym.flip(base, [0, 1])
        torch.save(_torch_state(flipped), root / f"flipped{g}.pt")
        names.add(f"flipped{g}.pt")
        st_torch.save_file(_torch_state(_padded(base)), str(root / f"padded{g}.safetensors"))
        names.add(f"padded{g}.safetensors")
        names.add(f"shard.npz#{len(shard_nets)}")
        shard_nets.append(_rescaled(flipped, rng, exact=False))
        names.add(f"tables/rows.parquet#{len(table_nets)}")
        table_nets.append(_rescaled(base, rng, exact=False))
        groups.append(names)
    # distinct random networks in the shard and the table, one NaN network in the shard
    for _ in range(6):
        shard_nets.append(_base(rng))
        table_nets.append(_base(rng))
    V, A, b, c = (np.stack([x.to_float(np.float32)[j] for x in shard_nets]) for j in range(4))
    A[-1, 0, 0] = np.nan
    np.savez(root / "shard.npz", V=V, A=A, b=b, c=c)
    (root / "tables").mkdir()
    w = [np.concatenate([x.ravel() for x in net.to_float(np.float32)]).tolist() for net in table_nets]
    tab = pa.table(
        {
            "m": [2] * len(w),
            "n": [4] * len(w),
            "k": [1] * len(w),
            "weights": pa.array(w, type=pa.list_(pa.float32())),
        }
    )
    pq.write_table(tab, root / "tables" / "rows.parquet", row_group_size=3)
    # bad inputs
    (root / "corrupt.npz").write_bytes(b"PK\x03\x04 this is not a zip archive")
    _tanh_onnx(root / "tanh.onnx")
    bad = {"corrupt.npz", "tanh.onnx", f"shard.npz#{len(shard_nets) - 1}"}
    return groups, bad


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("zoo") / "zoo"
    groups, bad = _planted_zoo(root)
    return root, groups, bad


def _groups_of(table) -> list[set[str]]:
    d = table.to_pydict()
    by: dict[int, set[str]] = {}
    for src, g, s in zip(d["source"], d["group"], d["status"], strict=True):
        if s == "ok":
            by.setdefault(g, set()).add(src)
    return [x for x in by.values() if len(x) > 1]


def test_planted_zoo_groups_and_errors(planted, tmp_path):
    root, groups, bad = planted
    res = scan_zoo(root, tmp_path / "zoo.parquet", chunk_size=4, files_per_chunk=5, progress=False, fibre_search=True)
    table = read_zoo_table(tmp_path / "zoo.parquet")
    assert table.equals(res.table)
    assert table.schema.metadata[b"schema"] == SCHEMA.encode()
    found = _groups_of(table)
    assert sorted(map(sorted, found)) == sorted(map(sorted, groups))
    d = table.to_pydict()
    errors = {s for s, st_ in zip(d["source"], d["status"], strict=True) if st_ == "error"}
    assert errors == bad
    msgs = dict(zip(d["source"], d["error"], strict=True))
    assert "nan" in msgs[max(bad - {"corrupt.npz", "tanh.onnx"})].lower()
    assert "Tanh" in msgs["tanh.onnx"] or "tanh" in msgs["tanh.onnx"].lower()
    assert len(d["source"]) == len(set(d["source"]))  # one row per network
    # every digest is the definition's, computed here from the files themselves
    for src, dg, st_ in zip(d["source"], d["digest"], d["status"], strict=True):
        if st_ == "ok" and "#" not in src:
            assert dg == expected_digest(relusym.load(root / src))
    # the planted copies really compute the base's function (the oracle is relusym.equivalent on the files)
    for g in groups:
        files = sorted(x for x in g if "#" not in x)
        first = relusym.load(root / files[0])
        assert all(relusym.equivalent(first, relusym.load(root / f)) for f in files[1:])
    # hidden flips and widths: every base has the flip {0, 1}, and width 4 (the padded copies too)
    w = dict(zip(d["source"], d["width"], strict=True))
    assert {w[f"base{g}.json"] for g in range(4)} == {4} and {w[f"padded{g}.safetensors"] for g in range(4)} == {4}
    gen = dict(zip(d["source"], d["generic"], strict=True))
    flips = dict(zip(d["source"], d["flip_sets"], strict=True))
    assert all(gen[f"base{g}.json"] == "false" and flips[f"base{g}.json"] >= 1 for g in range(4))
    s = res.summary
    assert s["schema"] == SCHEMA and s["errors"] == len(bad) and s["networks"] == len(d["source"])
    assert sorted(map(sorted, (set(x["sources"]) for x in s["exact_duplicate_groups"]))) == sorted(map(sorted, groups))
    assert json.loads((tmp_path / "zoo.summary.json").read_text()) == s
    assert not (tmp_path / "zoo.parquet.parts").exists()
    assert not [p for p in tmp_path.rglob("*") if TMP_MARK in p.name]


def test_cheap_fibre_columns_agree_with_the_search(planted, tmp_path):
    """The default fibre columns (no search) decide only what the search decides the same way: on a zoo of
    generic networks, hidden flips, dead, constant and duplicate neurons, every value other than "undecided"
    equals :func:`relusym.fiber`'s, computed here network by network; the summary reports the undecided rates."""
    root, _, _ = planted
    rng = np.random.default_rng(5)
    nets = []
    for t in range(12):  # n ≤ km: the certificate of no hidden flips applies
        m, n, k = 3, 4, 2
        V, A, b, c = rng.integers(-3, 4, (k, n)), rng.integers(-3, 4, (n, m)), rng.integers(-3, 4, n), [0] * k
        if t % 4 == 1:
            V[:, 0] = 0  # a dead neuron
        elif t % 4 == 2:
            A[1], b[1] = 2 * A[0], 2 * b[0]  # a duplicate
        nets.append((f"extra{t}", Network(V.astype(float), A.astype(float), b.astype(float), np.array(c, float))))
    res = scan_zoo(list(nets), progress=False)
    full = [relusym.fiber(net, budget=30) for _, net in nets]
    d = res.table.to_pydict()
    decided = 0
    for r, fb in enumerate(full):
        want_g = {True: "true", False: "false", None: "undecided"}[fb.generic]
        if d["generic"][r] != "undecided":
            assert d["generic"][r] == want_g
            decided += 1
        if d["fibre_type"][r] != "undecided":
            from relusym.census import fibre_category

            assert d["fibre_type"][r] == fibre_category(fb)
    assert decided >= 8  # the dead and duplicate neurons, and most generic networks, are decided without search
    s = res.summary
    assert s["fibre_search"] is False
    assert s["undecided_rate"]["generic"] == d["generic"].count("undecided") / len(nets)
    res2 = scan_zoo(root, chunk_size=4, files_per_chunk=5, progress=False)
    assert res2.summary["undecided_rate"]["fibre_type"] <= 1.0


def test_same_table_serial_threads_pool(planted, tmp_path):
    root, _, _ = planted
    scan_zoo(root, tmp_path / "a.parquet", chunk_size=3, files_per_chunk=4, progress=False)
    with ThreadPoolExecutor(3) as ex:
        scan_zoo(root, tmp_path / "b.parquet", chunk_size=3, files_per_chunk=4, executor=ex, progress=False)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_same_table_whether_the_parts_are_mapped_or_copied(planted, tmp_path, monkeypatch):
    """A serial job keeps its parts as memory-mapped files where the system maps them (POSIX) and as tables
    where it does not (Windows): the same table and summary byte for byte, and no parts folder left either way."""
    from relusym._zoo._jobs import PartsFolder

    root, _, _ = planted
    scan_zoo(root, tmp_path / "a.parquet", chunk_size=3, files_per_chunk=4, progress=False)
    monkeypatch.setattr(PartsFolder, "mapped", property(lambda self: False))
    scan_zoo(root, tmp_path / "b.parquet", chunk_size=3, files_per_chunk=4, progress=False)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    summaries = [(tmp_path / f"{x}.summary.json").read_text() for x in "ab"]
    assert summaries[0] == summaries[1]
    assert not list(tmp_path.glob("*.parts"))


def test_planning_on_the_workers_finds_the_same_chunks(planted, tmp_path, monkeypatch):
    """A folder's stacked shards found by planning tasks on the job's executor (one file per task here) give the
    chunks and the table of the serial planning, byte for byte (the oracle: the serial job); the file identities
    those tasks return are what a ``stat`` gives, so the job's fingerprint (what a resume matches) is the serial
    job's."""
    import relusym._zoo._planning as run
    from relusym._zoo._run import Options, _fingerprint
    from relusym._zoo._sources import plan_job, stack_headers, stack_shapes

    root, _, _ = planted
    calls: list[int] = []
    tasks: list[int] = []

    def counted(paths):
        calls.append(len(paths))
        return stack_shapes(paths)

    def counted_task(paths):
        tasks.append(len(paths))
        return stack_headers(paths)

    monkeypatch.setattr(run, "_PLAN_FILES", 1)
    monkeypatch.setattr(run, "stack_shapes", counted)
    monkeypatch.setattr(run, "stack_headers", counted_task)
    scan_zoo(root, tmp_path / "a.parquet", chunk_size=3, files_per_chunk=4, progress=False)
    assert len(calls) == 1 and not tasks  # serial: one call, in the client
    serial = plan_job(root, chunk_size=3, files_per_chunk=4)
    with ThreadPoolExecutor(2) as ex:
        identities: dict[str, list[object]] = {}
        probe = run._shapes_on(run.Runner(executor=ex), identities)
        chunks = plan_job(root, chunk_size=3, files_per_chunk=4, shapes=probe)[0]
        assert chunks == serial[0]
        assert sorted(tasks) == [1] * len(tasks) and len(tasks) > 1  # one task per file
        assert len(identities) == len(tasks)
        for path, ident in identities.items():
            st = os.stat(path)
            assert ident == [st.st_size, st.st_mtime_ns]
        assert _fingerprint(chunks, Options(), identities) == _fingerprint(serial[0], Options())
        scan_zoo(root, tmp_path / "b.parquet", chunk_size=3, files_per_chunk=4, executor=ex, progress=False)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_a_dask_task_result_is_sent_as_one_object():
    """A Dask worker sends a task's result as it serializes it (``to_serialize``), which takes a list or a dict
    apart element by element; boxed in ``Whole`` (as ``run_tuned`` returns every task's result) a dict of 2,000
    census functions is pickled whole, a frame or two, and arrives equal, tuples and bytes kept."""
    protocol = pytest.importorskip("distributed.protocol")
    from relusym._zoo._processes import Whole

    value = {bytes([i % 256, i // 256]): (i, [i, None]) for i in range(2000)}
    header, frames = protocol.serialize(protocol.to_serialize(Whole(value)))
    assert len(frames) <= 2
    back = protocol.deserialize(header, frames)
    assert type(back) is Whole and back.value == value
    shapes = [(3, 8, 64, 1), None, (1, 2, 3, 4)]  # a planning task's answer
    assert protocol.deserialize(*protocol.serialize(protocol.to_serialize(Whole(shapes)))).value == shapes


@pytest.mark.slow
def test_same_table_process_pool_and_dask_cluster(planted, tmp_path, monkeypatch):
    import relusym._zoo._planning as run

    distributed = pytest.importorskip("distributed")
    root, _, _ = planted
    scan_zoo(root, tmp_path / "a.parquet", chunk_size=3, files_per_chunk=4, progress=False)
    monkeypatch.setattr(run, "_PLAN_FILES", 1)  # the pool and the cluster find the folder's shards too, a file a task
    scan_zoo(root, tmp_path / "b.parquet", chunk_size=3, files_per_chunk=4, workers=2, progress=False)
    shard = tmp_path / "shard.npz"  # a stacked shard, the default fibre column, tasks of 97 rows
    _fault_zoo(shard, 600)
    scan_zoo(shard, tmp_path / "s1.parquet", chunk_size=97, progress=False)
    scan_zoo(shard, tmp_path / "s2.parquet", chunk_size=97, workers=2, progress=False)
    with distributed.LocalCluster(n_workers=2, host="127.0.0.1", processes=True, dashboard_address=None) as cluster:
        scan_zoo(
            root,
            tmp_path / "c.parquet",
            chunk_size=3,
            files_per_chunk=4,
            scheduler=cluster.scheduler_address,
            progress=False,
        )
        scan_zoo(shard, tmp_path / "s3.parquet", chunk_size=97, scheduler=cluster.scheduler_address, progress=False)
    s1 = (tmp_path / "s1.parquet").read_bytes()
    assert s1 == (tmp_path / "s2.parquet").read_bytes() == (tmp_path / "s3.parquet").read_bytes()
    a = (tmp_path / "a.parquet").read_bytes()
    assert a == (tmp_path / "b.parquet").read_bytes() == (tmp_path / "c.parquet").read_bytes()
    t = pq.read_table(tmp_path / "c.parquet").sort_by("source")
    assert t.equals(pq.read_table(tmp_path / "a.parquet").sort_by("source"))


def test_inputs_parquet_columns_dataset_and_memory(tmp_path):
    ds = pytest.importorskip("pyarrow.dataset")
    rng = np.random.default_rng(3)
    nets = [_base(rng) for _ in range(5)]
    nets.append(_rescaled(nets[0], rng, exact=False))
    folder = tmp_path / "ds"
    folder.mkdir()
    for part, sl in (("p0.parquet", nets[:3]), ("p1.parquet", nets[3:])):
        cols = {x: [np.asarray(getattr(n, x), dtype=np.float64).ravel().tolist() for n in sl] for x in "VAbc"}
        pq.write_table(pa.table({"m": [2] * len(sl), "n": [4] * len(sl), "k": [1] * len(sl), **cols}), folder / part)
    r1 = scan_zoo(ds.dataset(str(folder), format="parquet"), chunk_size=2, progress=False, fibre=False)
    r2 = scan_zoo(folder, chunk_size=2, progress=False, fibre=False)
    r3 = scan_zoo([(f"net{i}", n) for i, n in enumerate(nets)], chunk_size=4, progress=False, fibre=False)
    digests = [expected_digest(n) for n in nets]
    for r in (r1, r2, r3):
        d = r.table.to_pydict()
        assert d["digest"] == digests and d["group"][5] == d["group"][0] and d["group_size"][0] == 2
        assert d["width"] == [relusym.minimal_width(n) for n in nets]
        assert d["generic"] == [None] * 6
    assert r1.table.to_pydict()["source"][3] == "p1.parquet#0"


def test_near_duplicates_follow_equivalent_approx(tmp_path):
    rng = np.random.default_rng(8)
    base = [_base(rng) for _ in range(4)]
    noisy = []
    for net in base[:2]:
        V, A, b, c = net.to_float(np.float64)
        noisy.append(Network(V * (1 + 1e-7), A, b + 1e-8, c))
    nets = base + noisy
    loose = scan_zoo(list(nets), atol=1e-6, rtol=1e-6, progress=False, fibre=False)
    strict = scan_zoo(list(nets), progress=False, fibre=False)
    for res, atol, rtol in ((loose, 1e-6, 1e-6), (strict, 0.0, 1e-9)):
        d = res.table.to_pydict()
        for i in range(len(nets)):
            for j in range(i + 1, len(nets)):
                same = d["near_cluster"][i] == d["near_cluster"][j]
                assert same == bool(relusym.equivalent_approx(nets[i], nets[j], atol=atol, rtol=rtol))
        assert len(set(d["group"])) == 6  # no exact duplicates
    s = loose.summary
    assert s["tolerance"] == {"atol": 1e-6, "rtol": 1e-6} and len(s["near_duplicate_groups"]) == 2
    assert {tuple(g["sources"]) for g in s["near_duplicate_groups"]} == {("#0", "#4"), ("#1", "#5")}


# ----------------------------------------------------------------------------------------------------------
# the command line, resuming


def _cli(*args: str, **kw):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "relusym", *args], capture_output=True, text=True, env=env, **kw)


def test_cli_summary_json_and_bad_input(planted, tmp_path):
    root, groups, bad = planted
    out = tmp_path / "z.parquet"
    r = _cli("zoo", str(root), "-o", str(out), "--json", "--quiet", "--chunk-size", "5")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["schema"] == SCHEMA and len(s["exact_duplicate_groups"]) == len(groups) and s["errors"] == len(bad)
    r = _cli("zoo", str(root), "-o", str(tmp_path / "t.parquet"), "--quiet", "--no-fibre")
    assert r.returncode == 0 and "exact duplicate groups (same function): 4" in r.stdout
    r = _cli("zoo", str(tmp_path / "missing"), "-o", str(tmp_path / "x.parquet"))
    assert r.returncode == 2 and "no such file" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "x.parquet").exists()
    r = _cli("zoo", str(root), "-o", str(tmp_path / "y.parquet"), "--budget", "-1")
    assert r.returncode == 2 and "budget" in r.stderr


def _fault_zoo(path: Path, count: int) -> None:
    """A shard of random networks with exact duplicates (fibre analysis off: its budgets depend on the machine's
    speed, while the digest columns do not)."""
    rng = np.random.default_rng(2)
    V, A, b, c = (
        rng.standard_normal(s).astype(np.float32) for s in ((count, 1, 10), (count, 10, 2), (count, 10), (count, 1))
    )
    V[1::7], A[1::7], b[1::7], c[1::7] = V[0], A[0], b[0], c[0]
    np.savez(path, V=V, A=A, b=b, c=c)


def test_a_safetensors_shard_gives_the_table_of_the_same_npz_shard(tmp_path):
    """A stacked shard written by safetensors' own writer gives the table of the same networks in an .npz (whose
    tasks' rows, 1.2 MiB of A each, are memory-mapped), every column but the source, exact duplicates included."""
    st_np = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(5)
    count = 700
    shapes = ((count, 2, 64), (count, 64, 16), (count, 64), (count, 2))
    V, A, b, c = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    V[3::11], A[3::11], b[3::11], c[3::11] = V[0], A[0], b[0], c[0]
    np.savez(tmp_path / "s.npz", V=V, A=A, b=b, c=c)
    st_np.save_file({"V": V, "A": A, "b": b, "c": c}, str(tmp_path / "s.safetensors"))
    tables = []
    for name in ("s.npz", "s.safetensors"):
        res = scan_zoo(tmp_path / name, tmp_path / f"{name}.parquet", chunk_size=300, fibre=False, progress=False)
        tables.append(res.table.drop_columns(["source"]))
        assert [g["size"] for g in res.summary["exact_duplicate_groups"]] == [65]  # row 0 and rows 3, 14, …, 696
    assert tables[0].equals(tables[1])
    digests = tables[1].column("digest").to_pylist()
    for i in (0, 1, 299, 300, 699):  # the first and last rows of tasks, against the definition
        assert digests[i] == relusym.normal_form(Network(V[i], A[i], b[i], c[i])).digest()


@pytest.mark.slow
def test_sigkill_and_resume_gives_the_same_table(tmp_path):
    src = tmp_path / "shard.npz"
    _fault_zoo(src, 3000)
    args = [str(src), "--chunk-size", "30", "--quiet", "--no-fibre"]
    ref = tmp_path / "ref.parquet"
    assert _cli("zoo", *args, "-o", str(ref)).returncode == 0
    out = tmp_path / "out" / "z.parquet"
    out.parent.mkdir()
    parts = out.with_name(out.name + ".parts")
    # SIGKILL in the middle of writing the 6th of 100 parts (its data written, not yet renamed into place): the
    # process kills itself there (test_census_table.KILL_AT_PART), whatever the machine's speed
    env = dict(os.environ, PYTHONPATH=SRC, RELUSYM_TEST_KILL_AT_PART="6")
    proc = subprocess.run([sys.executable, "-c", KILL_AT_PART, "zoo", *args, "-o", str(out)], env=env, timeout=600)
    assert proc.returncode == -signal.SIGKILL
    assert len(list(parts.glob("part-*.arrow"))) == 5 and not out.exists()
    assert [p for p in parts.iterdir() if TMP_MARK in p.name]  # the 6th part's temporary, left by the kill
    # a resumed run with other options is refused, one sentence, exit 2
    r = _cli("zoo", *args, "-o", str(out), "--resume", "--rtol", "1e-3")
    assert r.returncode == 2 and "different job" in r.stderr
    r = _cli("zoo", *args, "-o", str(out), "--resume")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == ref.read_bytes()
    t = pq.read_table(out)
    assert t.num_rows == 3000 and len(set(t.column("index").to_pylist())) == 3000
    assert not parts.exists() and not [p for p in tmp_path.rglob("*") if TMP_MARK in p.name]


@pytest.mark.slow
def test_dask_worker_killed_job_completes(tmp_path):
    distributed = pytest.importorskip("distributed")
    from relusym._zoo._run import Options, run_job

    src = tmp_path / "shard.npz"
    _fault_zoo(src, 1200)
    ref = scan_zoo(src, tmp_path / "ref.parquet", chunk_size=50, fibre=False, progress=False)
    with distributed.LocalCluster(n_workers=2, host="127.0.0.1", processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            pids = client.run(os.getpid)
        killed = []

        def on_part(index: int) -> None:
            if not killed:
                pid = next(iter(pids.values()))
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        res = run_job(
            src,
            tmp_path / "z.parquet",
            options=Options(fibre=False),
            scheduler=cluster.scheduler_address,
            chunk_size=50,
            on_part=on_part,
            progress=False,
        )
    assert killed
    assert res.table.equals(ref.table)
    assert (tmp_path / "z.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()


@pytest.mark.slow
def test_dask_local_cluster_same_bytes_as_serial(tmp_path):
    """``dask_local=2``: the job's own LocalCluster (its workers forked on Linux, see local_start_method) writes
    the serial table byte for byte, on a stacked shard and on a folder of files; its workers are gone after."""
    pytest.importorskip("distributed")
    import psutil

    src = tmp_path / "shard.npz"
    _fault_zoo(src, 400)
    folder = tmp_path / "files"
    folder.mkdir()
    rng = np.random.default_rng(3)
    for i in range(24):
        np.savez(
            folder / f"n{i:02d}.npz",
            V=rng.standard_normal((2, 5)),
            A=rng.standard_normal((5, 3)),
            b=rng.standard_normal(5),
            c=rng.standard_normal(2),
        )
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    for source, kw in ((src, {"chunk_size": 37}), (folder, {"files_per_chunk": 5})):
        scan_zoo(source, tmp_path / "serial.parquet", progress=False, **kw)
        scan_zoo(source, tmp_path / "dask.parquet", dask_local=2, progress=False, **kw)
        assert (tmp_path / "serial.parquet").read_bytes() == (tmp_path / "dask.parquet").read_bytes()
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()]
    assert all(p.status() == psutil.STATUS_ZOMBIE for p in left)


# ----------------------------------------------------------------------------------------------------------
# the census on executors


def _census_core(c) -> list[tuple]:
    return [
        (r.family, r.total, r.counts, r.widths, r.orbit_counts, r.samples, r.orbit_checks, r.flip_checks)
        for r in c.rows
    ]


@pytest.mark.slow
def test_census_chunked_reproduces_the_census():
    from relusym.census import run_census, run_census_chunked

    ref = run_census(sample_231=30, limit_121=200)
    a = run_census_chunked(sample_231=30, limit_121=200, chunk_size=37, progress=False)
    with ThreadPoolExecutor(2) as ex:
        b = run_census_chunked(sample_231=30, limit_121=200, chunk_size=37, executor=ex, progress=False)
    assert _census_core(a) == _census_core(ref) and a.ok and ref.ok
    assert [r.to_dict() for r in a.rows] == [r.to_dict() for r in b.rows]  # hidden-flip counts included


@pytest.mark.slow
def test_census_on_a_process_pool_and_a_dask_cluster():
    distributed = pytest.importorskip("distributed")
    from relusym.census import run_census_chunked

    kw = dict(sample_231=40, limit_121=300, chunk_size=50, progress=False)
    a = run_census_chunked(**kw)
    b = run_census_chunked(workers=2, **kw)
    with distributed.LocalCluster(n_workers=2, host="127.0.0.1", processes=True, dashboard_address=None) as cl:
        c = run_census_chunked(scheduler=cl.scheduler_address, **kw)
    assert [r.to_dict() for r in a.rows] == [r.to_dict() for r in b.rows] == [r.to_dict() for r in c.rows]
    r = _cli("census", "--sample", "10", "--limit-121", "40", "--workers", "2", "--chunk-size", "20", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["ok"]


def test_cli_fibre_search_on_request_and_the_undecided_rate(tmp_path, capsys):
    """The default fibre column decides only what is bounded per network and says how much it left undecided;
    ``--fibre-search`` runs the searches, and what both decide agrees with ``relusym.fiber``."""
    from relusym.cli import main

    rng = np.random.default_rng(4)
    V = rng.standard_normal((6, 1, 5)).astype(np.float32)
    A = rng.standard_normal((6, 5, 2)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32)
    c = rng.standard_normal((6, 1)).astype(np.float32)
    shard = tmp_path / "s.npz"
    np.savez(shard, V=V, A=A, b=b, c=c)
    assert main(["zoo", str(shard), "-o", str(tmp_path / "a.parquet"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "undecided: generic 100%" in out  # n = 5 > k·m = 2: no flip certificate without the search
    assert main(["zoo", str(shard), "-o", str(tmp_path / "b.parquet"), "--quiet", "--fibre-search"]) == 0
    out = capsys.readouterr().out
    searched = read_zoo_table(tmp_path / "b.parquet").to_pylist()
    for row in searched:
        t = row["index"]
        fb = relusym.fiber(Network(V[t], A[t], b[t], c[t]), budget=60)
        if row["generic"] != "undecided":
            assert row["generic"] == str(fb.generic).lower()
    assert "undecided: generic" in out
