"""Hostile and broken input: every command refuses it with one sentence and exit code 2, in bounded time and
memory, never running a pickled payload and never writing anything; writes survive kills, full disks and
file-size limits; budgets are deadlines.

The corpus is made by :func:`make_corpus`, which never imports relusym (files of other software are made by that
software: torch, onnx, safetensors, numpy, joblib, msgpack).  Every run is a fresh process (``python -m relusym``,
or one process per file running every command through ``cli.main``) under a CPU-time limit (``RLIMIT_CPU``); it
reports its own CPU time and peak memory, which are checked against
generous bounds.  Neither depends on how loaded the machine is: no test here measures wall-clock time, which only
bounds a hang (a blocking read) with a timeout far above any run.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import resource
import signal
import struct
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
MAX_CPU_SECONDS = 30  # CPU time (not wall-clock): a refusal takes 1-3 s, an expansion of 1e999999999 far longer
HANG_SECONDS = 600  # wall-clock, only against a hang (a blocked read uses no CPU); never the property under test
MAX_RSS_KB = 1 << 20  # 1 GiB; reading /dev/zero to the end or allocating a declared 1e9-wide layer takes more

# ----------------------------------------------------------------------------------------------------------
# the corpus (no relusym import in here)


class Payload:
    """A pickle that, when loaded, writes a marker file (proof that pickled code ran)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def _valid_net(rng: np.random.Generator, m: int = 3, n: int = 4, k: int = 2) -> dict[str, np.ndarray]:
    return {
        "A": rng.standard_normal((n, m)).astype(np.float32),
        "b": rng.standard_normal(n).astype(np.float32),
        "V": rng.standard_normal((k, n)).astype(np.float32),
        "c": rng.standard_normal(k).astype(np.float32),
    }


def _safetensors_bytes(header: object, data: bytes = b"", raw_len: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    size = len(text) if raw_len is None else raw_len
    return struct.pack("<Q", size) + text + data


def _onnx_model(onnx, net, *, cycle=False, external=None, dims=None):  # type: ignore[no-untyped-def]
    from onnx import TensorProto, helper, numpy_helper

    W1 = numpy_helper.from_array(net["A"], "W1")
    B1 = numpy_helper.from_array(net["b"], "B1")
    W2 = numpy_helper.from_array(net["V"], "W2")
    B2 = numpy_helper.from_array(net["c"], "B2")
    if dims is not None:  # declared dims that do not match the data (make_tensor would refuse them)
        W1 = TensorProto(name="W1", data_type=TensorProto.FLOAT, raw_data=net["A"].tobytes())
        W1.dims.extend(dims)
    if external is not None:
        W1 = TensorProto(name="W1", data_type=TensorProto.FLOAT)
        W1.dims.extend(net["A"].shape)
        W1.data_location = TensorProto.EXTERNAL
        for key, value in (("location", external), ("offset", "0"), ("length", str(net["A"].nbytes))):
            e = W1.external_data.add()
            e.key, e.value = key, value
    first_in = "y2" if cycle else "x"
    nodes = [
        helper.make_node("Gemm", [first_in, "W1", "B1"], ["h"], transB=1, name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "W2", "B2"], ["y2" if cycle else "y"], transB=1, name="fc2"),
    ]
    if cycle:
        nodes.append(helper.make_node("Identity", ["y2"], ["y"], name="out"))
    m, k = net["A"].shape[1], net["V"].shape[0]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", m])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", k])],
        [W1, B1, W2, B2],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def make_corpus(folder: Path, marker: str) -> dict[str, Path]:
    """Hostile and broken files, by name.  Uses json/struct/numpy/torch/onnx/safetensors/msgpack, never relusym."""
    rng = np.random.default_rng(13)
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    def put(name: str, data: bytes | str) -> Path:
        p = folder / name
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        out[name] = p
        return p

    net = _valid_net(rng)
    plain = {k: v.tolist() for k, v in net.items()}
    valid_json = json.dumps(plain)

    # JSON bombs and broken JSON
    put("deep.json", '{"V": ' + "[" * 100_000 + "]" * 100_000 + "}")
    put("deep_obj.json", '{"V": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}")
    put("bigint.json", '{"V": [[1]], "A": [[1' + "0" * 1_000_000 + ']], "b": [0]}')
    put("exp_string.json", '{"V": [[1]], "A": [["1e999999999"]], "b": [0]}')
    put("exp_number.json", '{"V": [[1]], "A": [[1e999999999]], "b": [0]}')
    put("exp18.json", '{"V": [[1]], "A": [["1e' + "9" * 18 + '"]], "b": [0]}')
    big = "7" * 4000
    put("fraction4000.json", '{"V": [[1]], "A": [["' + big + "/" + big[:-1] + '3"]], "b": [0]}')
    put("longdecimal.json", '{"V": [[1]], "A": [["0.' + "1" * 100_000 + '"]], "b": [0]}')
    for tag, m in (("neg", "-1"), ("1e30", "1e30"), ("1e9", "1000000000"), ("1e8", "100000000"), ("str", '"3"')):
        put(f"m_{tag}.json", '{"V": [[]], "A": [], "b": [], "c": [0], "m": ' + m + "}")
    put("nan.json", '{"V": [[1, 2]], "A": [[1], [NaN]], "b": [0, 0]}')
    put("infinity.json", '{"V": [[1]], "A": [[Infinity]], "b": [0]}')
    put("longvalue.json", '{"V": [[1]], "A": [["' + "x" * 100_000 + '"]], "b": [0]}')
    put("notutf8.json", b'{"V": [[1]], "A": [["\xff\xfe"]], "b": [0]}')
    put("truncated.json", valid_json[: len(valid_json) // 2])
    put("ragged.json", '{"V": [[1, 2]], "A": [[1, 2], [3]], "b": [0, 0]}')
    put("empty.json", b"")
    put("array.json", "[1, 2, 3]")

    # safetensors headers
    f32 = np.zeros(4, np.float32).tobytes()

    def st(name: str, entry: object, data: bytes = f32) -> None:
        put(name, _safetensors_bytes({"w.weight": entry}, data))

    st("st_noshape.safetensors", {"dtype": "F32", "data_offsets": [0, 16]})
    st("st_negshape.safetensors", {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]})
    st("st_strshape.safetensors", {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]})
    st("st_huge.safetensors", {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 16]})
    st("st_offsets.safetensors", {"dtype": "F32", "shape": [4], "data_offsets": [0, 10**12]})
    st("st_dtype.safetensors", {"dtype": "Q7", "shape": [4], "data_offsets": [0, 16]})
    put("st_deep.safetensors", _safetensors_bytes(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))
    put("st_bigint.safetensors", _safetensors_bytes(b'{"a": {"shape": [1' + b"0" * 1_000_000 + b"]}}"))
    put("st_claims.safetensors", _safetensors_bytes({"a": 1}, raw_len=2**40))
    put("st_notjson.safetensors", _safetensors_bytes(b"{not json at all}"))
    from safetensors.numpy import save as st_save

    valid_st = st_save({"0.weight": net["A"], "0.bias": net["b"], "2.weight": net["V"], "2.bias": net["c"]})
    put("st_truncated.safetensors", valid_st[: len(valid_st) - 7])
    corrupt = bytearray(valid_st)
    corrupt[12:20] = b"\x00\xff" * 4
    put("st_corrupt.safetensors", bytes(corrupt))

    # NPZ
    import io as _io

    def npz(name: str, **arrays: np.ndarray) -> None:
        buf = _io.BytesIO()
        np.savez(buf, **arrays)  # type: ignore[arg-type]
        put(name, buf.getvalue())

    npz("valid_src.npz", **net)
    valid_npz = out.pop("valid_src.npz").read_bytes()
    (folder / "valid_src.npz").unlink()
    put("npz_truncated.npz", valid_npz[: len(valid_npz) // 2])
    npz("npz_object.npz", V=np.array([Payload(marker)], dtype=object), A=net["A"], b=net["b"])
    # a .npy member whose header declares 2^32 × 2^32 float64 with 32 bytes of data
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"
    header += " " * (-(len(header) + 11) % 64) + "\n"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + b"\x00" * 32
    buf = _io.BytesIO()
    import zipfile

    with zipfile.ZipFile(buf, "w") as zf:
        for key in ("V", "b"):
            member = _io.BytesIO()
            np.save(member, net[key])
            zf.writestr(f"{key}.npy", member.getvalue())
        zf.writestr("A.npy", npy)
    put("npz_hugeshape.npz", buf.getvalue())

    # pickles with payloads in every container
    put("payload.pkl", pickle.dumps(Payload(marker)))
    import joblib

    joblib.dump(Payload(marker), folder / "payload.joblib")
    out["payload.joblib"] = folder / "payload.joblib"
    buf = _io.BytesIO()
    np.save(buf, np.array([Payload(marker)], dtype=object), allow_pickle=True)
    put("payload.npy", buf.getvalue())
    import torch

    torch.save({"0.weight": torch.zeros(2, 2), "x": Payload(marker)}, folder / "payload.pt")
    out["payload.pt"] = folder / "payload.pt"
    torch.save(Payload(marker), folder / "payload_legacy.pt", _use_new_zipfile_serialization=False)
    out["payload_legacy.pt"] = folder / "payload_legacy.pt"
    sd = {"0.weight": torch.from_numpy(net["A"]), "0.bias": torch.from_numpy(net["b"])}
    sd |= {"2.weight": torch.from_numpy(net["V"]), "2.bias": torch.from_numpy(net["c"])}
    buf = _io.BytesIO()
    torch.save(sd, buf)
    valid_pt = buf.getvalue()
    put("pt_truncated.pt", valid_pt[: len(valid_pt) // 2])
    corrupt = bytearray(valid_pt)
    for i in range(200, len(corrupt), 97):
        corrupt[i] ^= 0x5A
    put("pt_corrupt.pt", bytes(corrupt))

    # ONNX
    import onnx

    model = _onnx_model(onnx, net)
    valid_onnx = model.SerializeToString()
    put("onnx_truncated.onnx", valid_onnx[: len(valid_onnx) // 2])
    put("onnx_cycle.onnx", _onnx_model(onnx, net, cycle=True).SerializeToString())
    put("onnx_hugedims.onnx", _onnx_model(onnx, net, dims=[2**40, 2**40]).SerializeToString())
    put("onnx_negdims.onnx", _onnx_model(onnx, net, dims=[-4, -3]).SerializeToString())
    sub = folder / "model_dir"
    sub.mkdir(exist_ok=True)
    (folder / "outside.bin").write_bytes(net["A"].tobytes())
    for tag, loc in (("updir", "../outside.bin"), ("abs", str(folder / "outside.bin"))):
        p = sub / f"onnx_ext_{tag}.onnx"
        p.write_bytes(_onnx_model(onnx, net, external=loc).SerializeToString())
        out[p.name] = p
    (sub / "link.bin").symlink_to(folder / "outside.bin")
    p = sub / "onnx_ext_symlink.onnx"
    p.write_bytes(_onnx_model(onnx, net, external="link.bin").SerializeToString())
    out[p.name] = p
    neg = onnx.helper.make_model(
        onnx.helper.make_graph(
            model.graph.node,
            "g",
            [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [-7, 3])],
            list(model.graph.output),
            list(model.graph.initializer),
        ),
        opset_imports=[onnx.helper.make_opsetid("", 17)],
        ir_version=8,
    )
    put("onnx_neginput.onnx", neg.SerializeToString())

    # Flax msgpack
    import msgpack

    put("flax_deep.msgpack", b"\x81\xa6params" + b"\x91" * 100_000 + b"\xc0")
    valid_mp = msgpack.packb({"params": {"Dense_0": {"kernel": [[1.0]], "bias": [0.0]}}})
    put("flax_truncated.msgpack", valid_mp[: len(valid_mp) // 2])
    put("flax_hugebin.msgpack", b"\x81\xa6params\xc6\xff\xff\xff\xf0abc")

    # NNet text files
    nnet = "// a network\n2,1,1,1,\n1,1,1,\n0,\n-1,\n1,\n0,0,\n1,1,\n{w},\n0,\n1,\n0,\n"
    put("nnet_exp.nnet", nnet.format(w="1e999999999"))
    put("nnet_digits.nnet", nnet.format(w="1" * 100_000))
    put("nnet_truncated.nnet", nnet.format(w="1")[:40])
    put("nnet_hugesize.nnet", "// x\n2,1000000000,1,1000000000,\n1000000000,1,1,\n0,\n")

    # not regular files, and other odd paths
    for suffix in (".json", ".onnx", ".msgpack", ".pt", ".safetensors", ".npz"):
        (folder / f"zero{suffix}").symlink_to("/dev/zero")
        out[f"zero{suffix}"] = folder / f"zero{suffix}"
    (folder / "urandom.json").symlink_to("/dev/urandom")
    out["urandom.json"] = folder / "urandom.json"
    os.mkfifo(folder / "fifo.json")
    out["fifo.json"] = folder / "fifo.json"
    (folder / "adir.json").mkdir()
    out["adir.json"] = folder / "adir.json"
    out["missing.json"] = folder / "missing.json"
    put("random.bin", rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    return out


# ----------------------------------------------------------------------------------------------------------
# running relusym


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("RELUSYM_LIMITS", None)
    env.update(extra)
    return env


class Run:
    def __init__(self, rc: int, out: str, err: str, cpu_seconds: float, rss_kb: int) -> None:
        self.rc, self.out, self.err, self.cpu_seconds, self.rss_kb = rc, out, err, cpu_seconds, rss_kb

    @property
    def lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


# ``python -m relusym`` under a CPU-time limit that also records its own CPU time and peak memory.  The rusage of
# a child (os.wait4, RUSAGE_CHILDREN) counts the memory of the parent it was forked from (this pytest process, with
# torch loaded), so the child reads its own high-water mark, VmHWM of its exec'd image, at exit, and its CPU time
# (all its threads) with getrusage.  Past the limit the kernel sends SIGXCPU: the run ends with -SIGXCPU.
_LAUNCH = """
import atexit, os, resource, runpy, sys
cpu = int(os.environ["RELUSYM_TEST_CPU"])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
def _report():
    use = resource.getrusage(resource.RUSAGE_SELF)
    try:
        with open("/proc/self/status") as fh:
            kb = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        kb = "0"
    try:
        with open(os.environ["RELUSYM_TEST_HWM"], "w") as out:
            out.write(f"{kb} {use.ru_utime + use.ru_stime}")
    except (OSError, KeyError):
        pass
atexit.register(_report)
sys.argv = ["relusym", *sys.argv[1:]]
runpy.run_module("relusym", run_name="__main__", alter_sys=True)
"""


def relusym(*args: str, cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None) -> Run:
    """``python -m relusym ARGS`` under a CPU-time limit of MAX_CPU_SECONDS, with its CPU time and its peak memory
    (0 where /proc is not available)."""
    hwm = cwd / f".hwm-{os.getpid()}-{time.monotonic_ns()}"
    env = dict(env or _env())
    env["RELUSYM_TEST_HWM"] = str(hwm)
    env["RELUSYM_TEST_CPU"] = str(MAX_CPU_SECONDS)
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, *args],
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        out, err = proc.communicate(stdin, timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"relusym {' '.join(args)} hangs: still running after {HANG_SECONDS} s")
    if proc.returncode == -signal.SIGXCPU:
        pytest.fail(f"relusym {' '.join(args)} used more than {MAX_CPU_SECONDS} s of CPU time")
    try:
        kb, cpu = hwm.read_text().split()
        rss, cpu_seconds = int(kb), float(cpu)
        hwm.unlink()
    except (OSError, ValueError):
        rss, cpu_seconds = 0, 0.0
    return Run(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), cpu_seconds, rss)


COMMANDS: dict[str, list[str]] = {
    "canon": ["canon", "{f}"],
    "equiv": ["equiv", "{f}", "{good}"],
    "orbit": ["orbit", "{good}", "{f}"],
    "stabilizer": ["stabilizer", "{f}"],
    "fiber": ["fiber", "--budget", "2", "{f}"],
    "prune": ["prune", "{f}", "-o", "{out}/pruned.json"],
    "align": ["align", "{f}", "{good}"],
    "plot": ["plot", "{f}", "-o", "{out}/fig.png"],
    "report": ["report", "{f}", "-o", "{out}/report.html"],
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path], Path]:
    root = tmp_path_factory.mktemp("hostile")
    marker = root / "MARKER"
    files = make_corpus(root / "corpus", str(marker))
    good = root / "good.json"
    good.write_text(json.dumps({"V": [[1, -2]], "A": [[1, 0, 2], [0, 1, -1]], "b": [0, 1], "c": [0]}))
    return root, files, good


def _check_refusal(run: Run, args: list[str], name: str, out_dir: Path, marker: Path) -> None:
    what = f"relusym {' '.join(args)}"
    assert run.rc == 2, f"{what}: exit {run.rc}, stderr {run.err[-2000:]!r}"
    assert len(run.lines) == 1, f"{what}: expected one line on stderr, got {run.err[-3000:]!r}"
    line = run.lines[0]
    assert line.startswith(f"relusym {args[0]}: "), line
    assert "Traceback" not in run.err and "internal error" not in line, line
    assert len(line) < 400, f"{what}: the message echoes too much ({len(line)} characters)"
    stem = name.rsplit(".", 1)[0]
    assert stem in line or "<stdin>" in line or "standard input" in line, f"{what}: does not name the file: {line}"
    assert not marker.exists(), f"{what}: a pickled payload ran"
    assert list(out_dir.iterdir()) == [], f"{what}: wrote {list(out_dir.iterdir())}"
    assert run.cpu_seconds < MAX_CPU_SECONDS, f"{what}: took {run.cpu_seconds:.1f} s of CPU time"
    assert run.rss_kb < MAX_RSS_KB, f"{what}: peak memory {run.rss_kb} KB"


def _corpus_runs(corpus, names, every_command: bool):  # type: ignore[no-untyped-def]
    root, files, good = corpus
    out_dir = root / "out"
    out_dir.mkdir(exist_ok=True)
    for i, name in enumerate(names):
        cmds = list(COMMANDS) if every_command else [list(COMMANDS)[i % len(COMMANDS)]]
        for cmd in cmds:
            args = [a.format(f=files[name], good=good, out=out_dir) for a in COMMANDS[cmd]]
            yield name, args, relusym(*args, cwd=root), out_dir, root / "MARKER"


# the files whose refusal depends on the process (blocking reads, memory, recursion, unpickling): as subprocesses
# in the default run; the whole corpus through every command in the slow run
_SUBPROCESS_SAMPLE = (
    "fifo.json",
    "zero.onnx",
    "deep.json",
    "bigint.json",
    "exp_string.json",
    "m_1e9.json",
    "st_huge.safetensors",
    "onnx_cycle.onnx",
    "payload.pt",
    "npz_hugeshape.npz",
)


def test_hostile_files_are_refused_in_bounded_time_and_memory(corpus):  # type: ignore[no-untyped-def]
    for name, args, run, out_dir, marker in _corpus_runs(corpus, _SUBPROCESS_SAMPLE, every_command=False):
        _check_refusal(run, args, name, out_dir, marker)


def test_every_hostile_file_is_refused_with_one_sentence(corpus, capsys):  # type: ignore[no-untyped-def]
    """The whole corpus in-process through cli.main, each file through one command (rotating through all)."""
    from relusym.cli import main

    root, files, good = corpus
    out_dir = root / "out"
    out_dir.mkdir(exist_ok=True)
    for i, name in enumerate(sorted(files)):
        cmd = list(COMMANDS)[i % len(COMMANDS)]
        args = [a.format(f=files[name], good=good, out=out_dir) for a in COMMANDS[cmd]]
        capsys.readouterr()
        t0 = time.process_time()  # CPU time of this process, whatever else the machine runs
        rc = main(args)
        cpu_seconds = time.process_time() - t0
        captured = capsys.readouterr()
        _check_refusal(Run(rc, captured.out, captured.err, cpu_seconds, 0), args, name, out_dir, root / "MARKER")


# One fresh process per group of hostile files runs every command on each through ``cli.main``, each command's CPU
# time its own (``getrusage`` around the call), under one RLIMIT_CPU for the group, stopping at the first command
# that writes anything; the process's peak memory (VmHWM) bounds every command's.  The commands' refusals do not
# depend on each other (nothing is cached between them: each opens its file anew), so this checks what one process
# per command would, at a 36th of the start-ups (539 s of the slow run with one process per command, 220 s with
# one per file under load).
_EVERY_COMMAND = """
import contextlib, io, json, os, resource, sys
from pathlib import Path
cpu = int(os.environ["RELUSYM_TEST_CPU"])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
from relusym.cli import main
out_dir = Path(sys.argv[1])
runs = []
for args in json.loads(sys.argv[2]):
    err, out = io.StringIO(), io.StringIO()
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (t1.ru_utime + t1.ru_stime) - (t0.ru_utime + t0.ru_stime)
    runs.append([args, rc, out.getvalue()[-4000:], err.getvalue()[-4000:], cpu_s])
    if any(out_dir.iterdir()):
        break
with open("/proc/self/status") as fh:
    kb = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
json.dump({"runs": runs, "rss_kb": int(kb)}, sys.stdout)
"""


_FILES_PER_PROCESS = 4  # the files sharing one process (one start-up and one matplotlib import for 36 commands)


@pytest.mark.slow
def test_every_hostile_file_through_every_command(corpus):  # type: ignore[no-untyped-def]
    root, files, good = corpus
    out_dir = root / "out"
    out_dir.mkdir(exist_ok=True)
    names = sorted(files)
    for first in range(0, len(names), _FILES_PER_PROCESS):
        group = names[first : first + _FILES_PER_PROCESS]
        commands = [
            [a.format(f=files[n], good=good, out=out_dir) for a in COMMANDS[c]] for n in group for c in COMMANDS
        ]
        env = _env(RELUSYM_TEST_CPU=str(MAX_CPU_SECONDS * len(commands)))
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _EVERY_COMMAND,
                    str(out_dir),
                    json.dumps([[str(a) for a in c] for c in commands]),
                ],
                cwd=root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=env,
                timeout=HANG_SECONDS,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"relusym on {group}: still running after {HANG_SECONDS} s (a hang)")
        assert proc.returncode == 0, (
            f"{group}: the process running every command ended {proc.returncode}: {proc.stderr[-2000:]!r}"
        )
        report = json.loads(proc.stdout)
        assert len(report["runs"]) == len(commands), f"{group}: a command wrote into the output folder"
        # the process's peak memory stands for each of its commands: a bound on all of them is a bound on each
        for i, (args, rc, out, err, cpu_seconds) in enumerate(report["runs"]):
            name = group[i // len(COMMANDS)]
            _check_refusal(Run(rc, out, err, cpu_seconds, report["rss_kb"]), args, name, out_dir, root / "MARKER")


def test_hostile_input_on_standard_input(corpus):  # type: ignore[no-untyped-def]
    root, files, _good = corpus
    out_dir = root / "out"
    out_dir.mkdir(exist_ok=True)
    for name in ("deep.json", "exp_string.json", "m_1e9.json", "st_huge.safetensors", "onnx_cycle.onnx", "payload.pt"):
        run = relusym("canon", "-", cwd=root, stdin=files[name].read_bytes())
        _check_refusal(run, ["canon", "-"], name, out_dir, root / "MARKER")
    run = relusym("canon", "-", cwd=root, stdin=b"\x00" * (1 << 22))
    _check_refusal(run, ["canon", "-"], "stdin", out_dir, root / "MARKER")


@pytest.mark.slow
def test_valid_input_from_standard_input_and_dev_stdin(tmp_path):  # type: ignore[no-untyped-def]
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(model.state_dict(), tmp_path / "net.pt")
    from relusym import load, normal_form

    digest = normal_form(load(tmp_path / "net.pt")).to_dict()["digest"]
    data = (tmp_path / "net.pt").read_bytes()
    for path in ("-", "/dev/stdin"):
        run = relusym("canon", "--json", path, cwd=tmp_path, stdin=data)  # a pipe: not seekable
        assert run.rc == 0, run.err
        assert json.loads(run.out)["digest"] == digest
    with open(tmp_path / "net.pt", "rb") as fh:  # /dev/stdin redirected from a regular file
        proc = subprocess.run(
            [sys.executable, "-m", "relusym", "canon", "--json", "/dev/stdin"],
            stdin=fh,
            capture_output=True,
            env=_env(),
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["digest"] == digest


@pytest.mark.slow
def test_non_utf8_file_names_work_everywhere(tmp_path):  # type: ignore[no-untyped-def]
    name = os.fsdecode(b"net-\xff\xfe.json")
    (tmp_path / name).write_text(json.dumps({"V": [[1, -2]], "A": [[1], [2]], "b": [0, 1]}))
    for cmd in (["canon", name], ["plot", name, "-o", os.fsdecode(b"\xfe.png")], ["report", name, "-o", "r.html"]):
        run = relusym(*cmd, cwd=tmp_path)
        assert run.rc == 0, run.err
        assert run.err == ""
    assert (tmp_path / os.fsdecode(b"\xfe.png")).stat().st_size > 0


# ----------------------------------------------------------------------------------------------------------
# output paths, the error path, signals


@pytest.fixture()
def net_json(tmp_path: Path) -> Path:
    p = tmp_path / "net.json"
    p.write_text(json.dumps({"V": [[1, 1, -1]], "A": [[1, 0], [0, 1], [-1, -1]], "b": [0, 0, 0]}))
    return p


@pytest.mark.parametrize("cmd", ["prune", *(pytest.param(c, marks=pytest.mark.slow) for c in ("plot", "report"))])
def test_unusable_output_paths_are_refused_up_front(tmp_path, net_json, cmd):  # type: ignore[no-untyped-def]
    suffix = {"prune": "json", "plot": "png", "report": "html"}[cmd]
    cases = {
        f"missing/dir/out.{suffix}": "does not exist",
        str(net_json): "is the input file",
        str(tmp_path): "is a folder",
    }
    if cmd != "prune":
        cases.pop(str(net_json))
        cases[str(net_json.with_suffix(f".{suffix}"))] = None  # fine: a new file
    for out, expect in cases.items():
        before = sorted(p.name for p in tmp_path.iterdir())
        run = relusym(cmd, str(net_json), "-o", out, cwd=tmp_path)
        if expect is None:
            assert run.rc == 0, run.err
            continue
        assert run.rc == 2 and len(run.lines) == 1, run.err
        assert expect in run.lines[0]
        assert f"cannot write {out}:" in run.lines[0]  # the path as typed, not made absolute
        assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert json.loads(net_json.read_text())["V"] == [[1, 1, -1]]


def test_read_only_folder_is_refused(tmp_path, net_json):  # type: ignore[no-untyped-def]
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a 0o555 folder is writable")
        run = relusym("prune", str(net_json), "-o", str(ro / "x.json"), cwd=tmp_path)
        assert run.rc == 2 and "is not writable" in run.err and str(ro) in run.err
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_internal_errors_are_marked_and_traceback_only_with_debug(net_json, monkeypatch, capsys):  # type: ignore[no-untyped-def]
    from relusym import cli
    from relusym._core import normal_form as _normal_form

    def broken(net):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(_normal_form, "normal_form", broken)
    assert cli.main(["canon", str(net_json)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ZeroDivisionError: simulated bug" in err
    assert "this is a bug in relusym" in err and "--debug" in err and "Traceback" not in err
    assert cli.main(["--debug", "canon", str(net_json)]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "simulated bug" in err
    assert cli.main(["canon", str(net_json), "--quiet"]) == 3  # global flags also after the command


def test_warnings_are_one_line(net_json, monkeypatch, capsys):  # type: ignore[no-untyped-def]
    import warnings

    from relusym import cli
    from relusym._core import normal_form as _normal_form

    real = _normal_form.normal_form

    def warns(net):  # type: ignore[no-untyped-def]
        warnings.warn("something to know\nover two lines", RuntimeWarning, stacklevel=2)
        return real(net)

    monkeypatch.setattr(_normal_form, "normal_form", warns)
    saved = warnings.showwarning
    try:
        assert cli.main(["canon", str(net_json)]) == 0
        err = capsys.readouterr().err
        assert err == "warning: something to know over two lines\n"
        with warnings.catch_warnings():
            assert cli.main(["--quiet", "canon", str(net_json)]) == 0
        assert capsys.readouterr().err == ""
    finally:
        warnings.showwarning = saved


def test_broken_pipe_exits_quietly_with_the_commands_code(tmp_path):  # type: ignore[no-untyped-def]
    n = 3000  # an --all listing far larger than a pipe buffer
    p = tmp_path / "wide.json"
    p.write_text(json.dumps({"V": [[1] * n], "A": [[1]] * n, "b": [str(j) for j in range(n)]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "relusym", "canon", "--all", str(p)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"normal form")
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read()
    assert proc.wait(timeout=HANG_SECONDS) == 0
    assert err == b""


def _slow_fiber_input(tmp_path: Path) -> Path:
    rng = np.random.default_rng(5)
    n, m = 40, 6
    A = rng.integers(-3, 4, size=(n, m)).tolist()
    p = tmp_path / "slow.json"
    p.write_text(json.dumps({"V": [rng.integers(1, 3, n).tolist()], "A": A, "b": [0] * n}))
    return p


def _wait_for_handlers(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    """Until the child catches SIGTERM (Linux: SigCgt in /proc), i.e. the CLI has installed its handlers."""
    status = Path(f"/proc/{proc.pid}/status")
    deadline = time.monotonic() + HANG_SECONDS  # only against a hang: a loaded machine may take long to start it
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return
        try:
            caught = next(line for line in status.read_text().splitlines() if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            pytest.skip("no /proc: cannot tell when the handlers are installed")
        if int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1:
            time.sleep(0.2)
            return
        time.sleep(0.1)
    pytest.fail("the handlers were never installed")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_and_terminate_are_quiet(tmp_path, sig, code):  # type: ignore[no-untyped-def]
    p = _slow_fiber_input(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "relusym", "fiber", "--budget", "60", str(p)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    _wait_for_handlers(proc)
    if proc.poll() is not None:
        pytest.skip("the fibre finished before the signal")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=HANG_SECONDS)
    assert proc.returncode == code, err
    assert err == b"" and out == b""


# ----------------------------------------------------------------------------------------------------------
# writes under faults


def _prune_input(tmp_path: Path, m: int = 784, n: int = 64) -> Path:
    """A float32 safetensors network whose pruned copy is a few hundred KB: two neurons on one hyperplane merge,
    with output weights 0.5 and 0.25, so that the merged weight 0.5 + 2·0.25 is again a float32."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(1)
    W1 = rng.standard_normal((n, m)).astype(np.float32)
    b1 = rng.standard_normal(n).astype(np.float32)
    W1[1], b1[1] = 2 * W1[0], 2 * b1[0]
    W2 = rng.standard_normal((1, n)).astype(np.float32)
    W2[0, :2] = (0.5, 0.25)
    p = tmp_path / "big.safetensors"
    save_file({"0.weight": W1, "0.bias": b1, "2.weight": W2, "2.bias": np.zeros(1, np.float32)}, str(p))
    return p


def _same_tensors(data: bytes, complete: bytes) -> bool:
    """The same safetensors content (safetensors writes its metadata map in a random order, so bytes may differ)."""
    from safetensors.numpy import load as st_load

    try:
        got = st_load(data)
    except Exception:
        return False
    want = st_load(complete)
    return got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)


def _temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if ".relusym-" in p.name]


def _kill_trials(tmp_path: Path, trials: int) -> None:
    src = _prune_input(tmp_path)
    out = tmp_path / "out" / "pruned.safetensors"
    out.parent.mkdir()
    t0 = time.monotonic()
    full = relusym("prune", str(src), "-o", str(out), cwd=tmp_path)
    duration = time.monotonic() - t0
    assert full.rc == 0, full.err
    complete = out.read_bytes()
    older = b"an older file"
    rnd = random.Random(13)
    outcomes = {"absent": 0, "complete": 0, "older": 0}
    for trial in range(trials):
        out.unlink(missing_ok=True)
        if trial % 2:
            out.write_bytes(older)
        sig = signal.SIGKILL if trial % 3 else signal.SIGTERM
        left = set(_temporaries(out.parent))  # what earlier SIGKILLed trials left: swept only by the next write
        proc = subprocess.Popen(
            [sys.executable, "-m", "relusym", "prune", str(src), "-o", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        time.sleep(rnd.uniform(0.3, 1.0) * duration)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=HANG_SECONDS)
        if out.exists():
            data = out.read_bytes()
            assert data == older or _same_tensors(data, complete), f"trial {trial}: a half-written output"
            outcomes["older" if data == older else "complete"] += 1
        else:
            assert trial % 2 == 0, f"trial {trial}: the older file vanished"
            outcomes["absent"] += 1
        if sig == signal.SIGTERM:
            own = set(_temporaries(out.parent)) - left  # a process stopped before its write never swept them
            assert not own, f"trial {trial}: SIGTERM left {sorted(own)}"
            assert proc.returncode in (0, 143, -signal.SIGTERM), err
            assert b"Traceback" not in err
    run = relusym("prune", str(src), "-o", str(out), cwd=tmp_path)  # the next run sweeps what SIGKILL left
    assert run.rc == 0, run.err
    assert _same_tensors(out.read_bytes(), complete)
    assert _temporaries(out.parent) == []


def test_killed_writes_leave_old_complete_or_nothing(tmp_path):  # type: ignore[no-untyped-def]
    _kill_trials(tmp_path, trials=4)


@pytest.mark.slow
def test_killed_writes_many_times(tmp_path):  # type: ignore[no-untyped-def]
    _kill_trials(tmp_path, trials=30)


def _limit_fsize() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


@pytest.mark.parametrize(
    "suffix", [".pt", ".safetensors", *(pytest.param(s, marks=pytest.mark.slow) for s in (".json", ".npz", ".onnx"))]
)
def test_file_size_limit_is_one_sentence_and_leaves_nothing(tmp_path, suffix):  # type: ignore[no-untyped-def]
    src = _prune_input(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    target = out / f"pruned{suffix}"
    proc = subprocess.run(
        [sys.executable, "-m", "relusym", "prune", str(src), "-o", str(target)],
        capture_output=True,
        env=_env(),
        preexec_fn=_limit_fsize,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "file-size limit" in err and str(target) in err, err
    assert list(out.iterdir()) == []


def test_full_disk_is_one_sentence_and_leaves_nothing(tmp_path):  # type: ignore[no-untyped-def]
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a 1 MB tmpfs here")
    try:
        src = _prune_input(tmp_path)
        filler = mnt / "filler"
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        filler.write_bytes(b"\0" * max(0, free - 48 * 1024))  # 48 KB left: the ~200 KB output cannot fit
        for suffix in (".pt", ".safetensors", ".json"):
            target = mnt / f"pruned{suffix}"
            run = relusym("prune", str(src), "-o", str(target), cwd=tmp_path)
            assert run.rc == 2, run.err
            assert len(run.lines) == 1 and "no space left" in run.lines[0] and str(target) in run.lines[0]
            assert [p.name for p in mnt.iterdir()] == ["filler"]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_api_save_wraps_writer_errors(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """safetensors' own error type (SafetensorError) reaches the caller as relusym's OutputError."""
    import safetensors.numpy

    from relusym import Network, save
    from relusym.errors import InvalidNetworkError, OutputError

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        from safetensors import SafetensorError

        raise SafetensorError("Error while serializing: IoError(Os { code: 28, kind: StorageFull })")

    monkeypatch.setattr(safetensors.numpy, "save_file", failing)
    net = Network(np.ones((1, 2), np.float32), np.ones((2, 3), np.float32), np.zeros(2, np.float32))
    with pytest.raises(OutputError, match="no space left on the device") as info:
        save(net, tmp_path / "x.safetensors")
    assert isinstance(info.value, InvalidNetworkError) and isinstance(info.value, OSError)
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------------------------------------
# budgets


def _budget_input(tmp_path: Path, k: int) -> Path:
    """3 neurons on 784 inputs, two of them an opposite pair: the width search must consider the pair."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 784))
    b = rng.standard_normal(3)
    A[1], b[1] = -0.7 * A[0], -0.7 * b[0]
    p = tmp_path / "slow.npz"
    np.savez(p, V=rng.standard_normal((k, 3)), A=A, b=b, c=np.zeros(k))
    return p


@pytest.mark.parametrize("budget", ["1", "0.01"])
def test_prune_budget_is_a_deadline(tmp_path, budget):  # type: ignore[no-untyped-def]
    src = _budget_input(tmp_path, k=4)
    run = relusym("prune", "--budget", budget, str(src), "-o", str(tmp_path / "p.json"), cwd=tmp_path)
    assert run.cpu_seconds < MAX_CPU_SECONDS  # and the CPU-time limit would have ended it with SIGXCPU
    if run.rc == 0:  # decided: the pruned network must compute the same function
        from relusym import equivalent, load

        assert equivalent(load(src), load(tmp_path / "p.json"))
    else:
        assert run.rc == 2 and "undecided within budget" in run.err, run.err
        assert not (tmp_path / "p.json").exists()


def test_configurations_stop_inside_the_inner_loop():  # type: ignore[no-untyped-def]
    """A deadline already passed: the search stops at once and says so, whatever the input width."""
    import tempfile

    from relusym._base.deadline import Deadline
    from relusym._core.analysis import KinkData
    from relusym._core.normal_form import normal_form
    from relusym._fibre.configurations import configurations
    from relusym.io import load

    with tempfile.TemporaryDirectory() as d:
        kd = KinkData.of(normal_form(load(_budget_input(Path(d), k=2))))
    cs = configurations(kd, 1, deadline=Deadline.at(time.monotonic() - 1))
    assert not cs.complete and "ran out of time" in cs.undecided
    full = configurations(kd, 1)
    assert full.complete


# ----------------------------------------------------------------------------------------------------------
# limits, numbers, subnormals


def test_limits_api_env_and_flag(tmp_path):  # type: ignore[no-untyped-def]
    from relusym.errors import InvalidNetworkError
    from relusym.io import Limits, limits, load

    p = tmp_path / "n.json"
    p.write_text(json.dumps({"V": [[1]], "A": [["1" + "0" * 2500]], "b": [0]}))
    with pytest.raises(InvalidNetworkError, match="max_digits = 2000"):
        load(p)
    with limits(max_digits=3000):
        assert load(p).A[0, 0] == 10**2500
    with limits(Limits(max_digits=10)):
        with pytest.raises(InvalidNetworkError, match="max_digits = 10"):
            load(p)
    with pytest.raises(InvalidNetworkError, match="unknown limit"):
        Limits().replace(max_digit=3)
    assert relusym("canon", str(p), cwd=tmp_path).rc == 2
    assert relusym("canon", "--limit", "max_digits=3000", str(p), cwd=tmp_path).rc == 0
    assert relusym("canon", str(p), cwd=tmp_path, env=_env(RELUSYM_LIMITS="max_digits=3e3")).rc == 0
    bad = relusym("canon", "--limit", "max_digits=-1", str(p), cwd=tmp_path)
    assert bad.rc == 2 and len(bad.lines) == 1 and "max_digits" in bad.err


def test_exact_numbers_within_limits_are_still_read_exactly():  # type: ignore[no-untyped-def]
    from relusym._exact.numbers import to_fraction

    assert to_fraction("1e-300") == Fraction(1, 10**300)
    assert to_fraction("-12.5e3") == -12500
    assert to_fraction("4.9406564584124654e-324") == Fraction(49406564584124654, 10**340)
    assert to_fraction(repr(5e-324)) == Fraction("5e-324")
    assert to_fraction("3/4") == Fraction(3, 4)


def _oracle(V, A, b, c, x):  # type: ignore[no-untyped-def]
    """ρ(θ)(x) with Fractions of the floats' exact values (independent of relusym)."""
    h = [
        max(Fraction(0), sum(Fraction(a) * xi for a, xi in zip(row, x, strict=True)) + Fraction(bb))
        for row, bb in zip(A, b, strict=True)
    ]
    return tuple(
        sum(Fraction(v) * hh for v, hh in zip(row, h, strict=True)) + Fraction(cc) for row, cc in zip(V, c, strict=True)
    )


def test_subnormal_weights_are_decided_exactly():  # type: ignore[no-untyped-def]
    from relusym import Network, equivalent

    f = np.float64
    one = Network(np.array([[1.0]], f), np.array([[0.0]], f), np.array([0.5], f))
    sub = Network(np.array([[1.0]], f), np.array([[5e-324]], f), np.array([0.5], f))
    v = equivalent(one, sub)
    assert not v
    x = v.counterexample.x
    assert abs(x[0]) > Fraction(10**308)  # the kink lies beyond float range
    y1 = _oracle([[1.0]], [[0.0]], [0.5], [0.0], x)
    y2 = _oracle([[1.0]], [[5e-324]], [0.5], [0.0], x)
    assert y1 != y2 and (y1, y2) == (v.counterexample.y1, v.counterexample.y2)
    # the same kink, scaled: 4σ(t) = 2σ(2t)
    a = Network(np.array([[4.0]], f), np.array([[5e-324]], f), np.array([0.5], f))
    b = Network(np.array([[2.0]], f), np.array([[1e-323]], f), np.array([1.0], f))
    assert equivalent(a, b)
    assert not equivalent(a, sub)


def test_f8_safetensors_are_read_exactly(tmp_path):  # type: ignore[no-untyped-def]
    import torch
    from safetensors.torch import save_file

    from relusym.io import load

    g = torch.Generator().manual_seed(0)
    for dt in (torch.float8_e4m3fn, torch.float8_e5m2):
        sd = {
            "0.weight": torch.randn(4, 3, generator=g).to(dt),
            "0.bias": torch.randn(4, generator=g).to(dt),
            "2.weight": torch.randn(2, 4, generator=g).to(dt),
            "2.bias": torch.randn(2, generator=g).to(dt),
        }
        save_file(sd, tmp_path / "f8.safetensors")
        net = load(tmp_path / "f8.safetensors")
        assert np.array_equal(np.asarray(net.A, dtype=np.float64), sd["0.weight"].double().numpy())
        assert np.array_equal(np.asarray(net.c, dtype=np.float64), sd["2.bias"].double().numpy())


# ----------------------------------------------------------------------------------------------------------
# fuzzing the readers: only the documented exceptions

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _documented(path: Path) -> None:
    from relusym.errors import InvalidNetworkError, UnsupportedModelError
    from relusym.io import load

    try:
        load(path)
    except (InvalidNetworkError, UnsupportedModelError) as exc:
        assert str(exc) and "\n" not in str(exc).strip()


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from("VAbcm"), children, max_size=5),
    max_leaves=30,
)


def _fuzz_json(tmp_path_factory, doc, noise, cut):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("fj")
    text = json.dumps(doc).encode()
    (d / "a.json").write_bytes(b"{" + text[:cut] + noise)
    _documented(d / "a.json")
    (d / "b.json").write_text(json.dumps({"V": doc, "A": [[1]], "b": [doc]}))
    _documented(d / "b.json")


@pytest.fixture(scope="module")
def valid_blobs() -> dict[str, bytes]:
    import io as _io

    import onnx

    rng = np.random.default_rng(2)
    net = _valid_net(rng)
    buf = _io.BytesIO()
    np.savez(buf, **net)  # type: ignore[arg-type]
    return {"npz": buf.getvalue(), "onnx": _onnx_model(onnx, net).SerializeToString()}


def _mutate(data: bytes, edits: list[tuple[int, int]], cut: int) -> bytes:
    out = bytearray(data[: max(1, len(data) - cut)])
    for pos, val in edits:
        out[pos % len(out)] = val
    return bytes(out)


_edits = st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=8)


def _fuzz_npz(tmp_path_factory, valid_blobs, edits, cut):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("fn")
    (d / "x.npz").write_bytes(_mutate(valid_blobs["npz"], edits, cut))
    _documented(d / "x.npz")


def _fuzz_onnx(tmp_path_factory, valid_blobs, edits, cut):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("fo")
    (d / "x.onnx").write_bytes(_mutate(valid_blobs["onnx"], edits, cut))
    _documented(d / "x.onnx")


_shape = st.one_of(
    st.lists(st.integers(-(2**70), 2**70), max_size=3),
    st.lists(st.integers(0, 5), max_size=3),
    st.text(max_size=5),
    st.none(),
    st.integers(),
)


_st_args = dict(
    entries=st.dictionaries(
        st.sampled_from(["0.weight", "0.bias", "2.weight", "2.bias", "__metadata__", "x"]),
        st.fixed_dictionaries(
            {},
            optional={
                "dtype": st.sampled_from(["F32", "F16", "BF16", "F64", "F8_E4M3", "I64", "Q1", 3]),
                "shape": _shape,
                "data_offsets": st.one_of(st.lists(st.integers(-5, 200), max_size=3), st.text(max_size=3)),
            },
        ),
        max_size=5,
    ),
    data=st.binary(max_size=200),
    claim=st.one_of(st.none(), st.integers(0, 2**64 - 1)),
)


def _fuzz_safetensors(tmp_path_factory, entries, data, claim):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("fs")
    (d / "x.safetensors").write_bytes(_safetensors_bytes(entries, data, raw_len=claim))
    _documented(d / "x.safetensors")


def test_values_beyond_float_range(tmp_path):  # type: ignore[no-untyped-def]
    """Exact commands decide them; float-mode commands (plot, align, tolerance) refuse them in one sentence."""
    p = tmp_path / "huge.json"
    p.write_text(json.dumps({"V": [["1e400", 1]], "A": [["1e-400"], [2]], "b": ["1e350", 1]}))
    q = tmp_path / "sub.npz"  # a subnormal weight: its kink lies at about 1e323, beyond float64
    np.savez(q, V=np.array([[1.0]]), A=np.array([[5e-324]]), b=np.array([0.5]))
    for args in (["canon", str(p)], ["fiber", str(p)], ["canon", str(q)], ["equiv", str(q), str(q)]):
        run = relusym(*args, cwd=tmp_path)
        assert run.rc == 0 and run.err == "", run.err
    for args in (["plot", str(p), "-o", "x.png"], ["plot", str(q), "-o", "x.png"], ["align", str(p), str(p)]):
        run = relusym(*args, cwd=tmp_path)
        assert run.rc == 2 and len(run.lines) == 1 and "range of float" in run.lines[0], run.err
        assert not (tmp_path / "x.png").exists()


_LONG = settings(_FUZZ, max_examples=500)
_json_args = dict(doc=_json_values, noise=st.binary(max_size=20), cut=st.integers(0, 400))
_blob_args = dict(edits=_edits, cut=st.integers(0, 64))
test_fuzz_json_reader = _FUZZ(given(**_json_args)(_fuzz_json))
test_fuzz_npz_reader = _FUZZ(given(**_blob_args)(_fuzz_npz))
test_fuzz_onnx_reader = _FUZZ(given(**_blob_args)(_fuzz_onnx))
test_fuzz_safetensors_header = _FUZZ(given(**_st_args)(_fuzz_safetensors))
test_fuzz_json_reader_long = pytest.mark.slow(_LONG(given(**_json_args)(_fuzz_json)))
test_fuzz_npz_reader_long = pytest.mark.slow(_LONG(given(**_blob_args)(_fuzz_npz)))
test_fuzz_onnx_reader_long = pytest.mark.slow(_LONG(given(**_blob_args)(_fuzz_onnx)))
test_fuzz_safetensors_header_long = pytest.mark.slow(_LONG(given(**_st_args)(_fuzz_safetensors)))


def test_fiber_budget_is_a_deadline(tmp_path):  # type: ignore[no-untyped-def]
    """Three neurons on one hyperplane of 784 inputs (orientations +, −, −): the strata witnesses are built in
    time linear in m (they took minutes when they formed m × m Gram matrices)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(784).astype(np.float32)
    b0 = np.float32(rng.standard_normal())
    A = np.stack([a, -a, -2 * a])
    b = np.array([b0, -b0, -2 * b0], dtype=np.float32)
    p = tmp_path / "line.npz"
    np.savez(p, V=np.array([[1.0, 1.0, -1.0]], np.float32), A=A, b=b, c=np.zeros(1, np.float32))
    run = relusym("fiber", "--json", "--budget", "1", str(p), cwd=tmp_path)
    assert run.cpu_seconds < MAX_CPU_SECONDS  # and the CPU-time limit would have ended it with SIGXCPU
    assert run.rc == 0, run.err
    assert json.loads(run.out)["width"] is not None


@pytest.mark.parametrize("fileio", ["absent", "importing", "writing"])
def test_the_signal_handler_imports_nothing(tmp_path, fileio):  # type: ignore[no-untyped-def]
    # SIGTERM may come while relusym._base.fileio is itself being imported (a CI dry run caught one: the handler's
    # import of it failed and the process ended with an internal error, exit 3): then no write has begun and the
    # handler exits 143 at once; during a write it removes the write's temporary first
    tmp = tmp_path / "x.tmp"
    code = {
        "absent": "import sys, relusym.cli as c; sys.modules.pop('relusym._base.fileio', None); c._on_signal(15, None)",
        "importing": "import sys, types, relusym.cli as c; "
        "sys.modules['relusym._base.fileio'] = types.ModuleType('x'); "
        "c._on_signal(15, None)",
        "writing": f"import relusym.cli as c, relusym._base.fileio as f; open({str(tmp)!r}, 'w').close(); "
        f"f._live.add({str(tmp)!r}); c._on_signal(15, None)",
    }[fileio]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, env=_env())
    assert r.returncode == 143 and r.stderr == b"", r.stderr
    assert not tmp.exists()
