"""Archives, links and claims refused before the work, in bounded memory (issue 21, item 3).

Every hostile file is made by the software that owns its format (zipfile, h5py, safetensors, torch, onnx, keras,
numpy), never by relusym.  Each reader runs in a subprocess under an address-space limit (``RLIMIT_AS``) far below
what inflating the bomb or materializing the claimed shape takes, and must end with exit code 2 and one sentence
naming the limit: killed, a MemoryError or a traceback all fail.  Nothing here measures wall-clock time; the
subprocess timeout only guards against a hang.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
AS_LIMIT = 1536 << 20  # 1.5 GiB of address space: the bombs inflate to 2 GiB, a claimed (0, 10^9) layer takes 8 GB
HANG_SECONDS = 600  # only against a hang, never the property under test

_RUNNER = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
sys.path.insert(0, {src!r})
from relusym.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_capped(*args: str, cwd: Path, cap: int = AS_LIMIT) -> subprocess.CompletedProcess[str]:
    code = _RUNNER.format(cap=cap, src=SRC)
    env = {"PATH": "/usr/bin:/bin", "KERAS_BACKEND": "torch", "PYTHONPATH": SRC, "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-c", code, "--quiet", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env=env,
    )


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """The run ended with exit 2 and one sentence (no traceback) containing every word."""
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and "MemoryError" not in err, err[-2000:]
    assert len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


# ----------------------------------------------------------------------------------------------------------
# zip bombs, built by hand from a real deflate stream (a 2 GiB member in about 2 MB)

_CHUNK = 1 << 24  # 16 MiB of zeros per deflate block


def _zeros_deflate(total: int) -> tuple[bytes, int]:
    """A raw deflate stream of ``total`` zero bytes (a multiple of 16 MiB) and its CRC-32: every 16 MiB block after
    the first compresses to the same bytes, so the stream is built without compressing 2 GiB."""
    assert total % _CHUNK == 0
    chunk = bytes(_CHUNK)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    assert again == c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    count = total // _CHUNK
    stream = first + again * (count - 1) + c.flush()
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)
    return stream, crc


def _write_zip(path: Path, members: list[tuple[str, bytes | tuple[bytes, int, int]]]) -> None:
    """A zip archive: plain members are stored; a (deflate stream, crc, size) member is written deflated as is."""
    out = bytearray()
    central = bytearray()
    for name, data in members:
        raw = name.encode()
        if isinstance(data, tuple):
            payload, crc, size, method = data[0], data[1], data[2], 8
        else:
            payload, crc, size, method = data, zlib.crc32(data), len(data), 0
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(payload), size, len(raw), 0)
        out += raw + payload
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc, len(payload), size, len(raw), 0, 0, 0,
            0, 0, offset,
        )  # fmt: skip
        central += raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    path.write_bytes(bytes(out + central + end))


@pytest.fixture(scope="module")
def bomb() -> tuple[bytes, int, int]:
    size = 2 << 30
    stream, crc = _zeros_deflate(size)
    return stream, crc, size


def _small_keras(folder: Path) -> Path:
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
    path = folder / "small.keras"
    model.save(path)
    return path


def test_the_handmade_bomb_is_a_valid_zip(tmp_path: Path) -> None:
    stream, crc = _zeros_deflate(2 * _CHUNK)
    _write_zip(tmp_path / "b.zip", [("a.txt", b"hello"), ("z.bin", (stream, crc, 2 * _CHUNK))])
    with zipfile.ZipFile(tmp_path / "b.zip") as zf:
        assert zf.read("a.txt") == b"hello"
        assert zf.read("z.bin") == bytes(2 * _CHUNK)


def test_keras_weights_bomb_refused(tmp_path: Path, bomb: tuple[bytes, int, int]) -> None:
    pytest.importorskip("keras")
    pytest.importorskip("h5py")
    small = _small_keras(tmp_path)
    with zipfile.ZipFile(small) as zf:
        config, metadata = zf.read("config.json"), zf.read("metadata.json")
    path = tmp_path / "bomb.keras"
    _write_zip(path, [("metadata.json", metadata), ("config.json", config), ("model.weights.h5", bomb)])
    assert path.stat().st_size < 4 << 20
    refused(run_capped("canon", path.name, cwd=tmp_path), "bomb.keras", "model.weights.h5", "zip_ratio")


def test_keras_config_of_a_gigabyte_of_spaces_refused(tmp_path: Path, bomb: tuple[bytes, int, int]) -> None:
    pytest.importorskip("keras")
    pytest.importorskip("h5py")
    small = _small_keras(tmp_path)
    with zipfile.ZipFile(small) as zf:
        weights, metadata = zf.read("model.weights.h5"), zf.read("metadata.json")
    size = 1 << 30
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    spaces = b" " * _CHUNK
    first = c.compress(spaces) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(spaces) + c.flush(zlib.Z_FULL_FLUSH)
    stream = first + again * (size // _CHUNK - 1) + c.flush()
    crc = 0
    for _ in range(size // _CHUNK):
        crc = zlib.crc32(spaces, crc)
    path = tmp_path / "spaces.keras"
    _write_zip(path, [("metadata.json", metadata), ("config.json", (stream, crc, size)), ("model.weights.h5", weights)])
    refused(run_capped("canon", path.name, cwd=tmp_path), "config.json", "header_bytes")


def test_torch_bomb_refused(tmp_path: Path, bomb: tuple[bytes, int, int]) -> None:
    torch = pytest.importorskip("torch")
    src = tmp_path / "src.pt"
    torch.save({"0.weight": torch.ones(4, 3), "0.bias": torch.ones(4), "2.weight": torch.ones(2, 4)}, src)
    with zipfile.ZipFile(src) as zf:
        members: list[tuple[str, bytes | tuple[bytes, int, int]]] = [(n, zf.read(n)) for n in zf.namelist()]
    data = next(i for i, (n, _) in enumerate(members) if n.endswith("/data/0"))
    members[data] = (members[data][0], bomb)
    path = tmp_path / "bomb.pt"
    _write_zip(path, members)
    assert path.stat().st_size < 4 << 20
    refused(run_capped("canon", path.name, cwd=tmp_path), "bomb.pt", "data/0", "zip_ratio")


def test_npz_bomb_refused(tmp_path: Path, bomb: tuple[bytes, int, int]) -> None:
    import io

    members: list[tuple[str, bytes | tuple[bytes, int, int]]] = []
    for key, arr in (("V", np.ones((2, 4))), ("b", np.ones(4)), ("c", np.ones(2))):
        buf = io.BytesIO()
        np.save(buf, arr)
        members.append((f"{key}.npy", buf.getvalue()))
    members.append(("A.npy", bomb))
    path = tmp_path / "bomb.npz"
    _write_zip(path, members)
    refused(run_capped("canon", path.name, cwd=tmp_path), "bomb.npz", "zip_ratio")


# ----------------------------------------------------------------------------------------------------------
# tiny files that claim a huge shape: (0, 10^9) holds no entries, so nothing backs the 10^9

_HUGE = 10**9


def _claim_arrays(kind: str) -> dict[str, np.ndarray]:
    if kind == "wide":  # n = 0, m = 10^9
        return {
            "A": np.zeros((0, _HUGE), np.float32),
            "b": np.zeros(0, np.float32),
            "V": np.zeros((1, 0), np.float32),
            "c": np.zeros(1, np.float32),
        }
    return {"A": np.zeros((0, 1), np.float32), "b": np.zeros(0, np.float32), "V": np.zeros((_HUGE, 0), np.float32)}


@pytest.mark.parametrize("kind", ["wide", "tall"])
def test_npz_claim_refused(tmp_path: Path, kind: str) -> None:
    np.savez(tmp_path / "claim.npz", **_claim_arrays(kind))  # type: ignore[arg-type]
    refused(run_capped("canon", "claim.npz", cwd=tmp_path), "claim.npz", "max_declared_dim")


def test_safetensors_claim_refused(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.numpy")
    arrays = _claim_arrays("wide")
    st.save_file({"0.weight": arrays["A"], "0.bias": arrays["b"], "2.weight": arrays["V"], "2.bias": arrays["c"]},
                 str(tmp_path / "claim.safetensors"))  # fmt: skip
    refused(run_capped("canon", "claim.safetensors", cwd=tmp_path), "claim.safetensors", "max_declared_dim")


def test_torch_claim_refused(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    sd = {"0.weight": torch.zeros(0, _HUGE), "0.bias": torch.zeros(0), "2.weight": torch.zeros(1, 0)}
    torch.save({**sd, "2.bias": torch.zeros(1)}, tmp_path / "claim.pt")
    refused(run_capped("canon", "claim.pt", cwd=tmp_path), "claim.pt", "max_declared_dim")


def test_onnx_claim_refused(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    arrays = _claim_arrays("wide")
    inits = [numpy_helper.from_array(arrays[k], name) for k, name in (("A", "W1"), ("b", "B1"), ("V", "W2"))]
    inits.append(numpy_helper.from_array(arrays["c"], "B2"))
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "B1"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "W2", "B2"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", _HUGE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(tmp_path / "claim.onnx"))
    refused(run_capped("canon", "claim.onnx", cwd=tmp_path), "claim.onnx", "max_declared_dim")


def test_hdf5_dataset_declared_without_storage_refused(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "claim.weights.h5", "w") as f:
        v0 = f.create_group("layers/dense/vars")
        v0.attrs["name"] = "dense"
        v0.create_dataset("0", shape=(20_000, 20_000), dtype="f4")  # 1.6 GB declared, never written: no storage
        v0.create_dataset("1", data=np.zeros(20_000, np.float32))
        v1 = f.create_group("layers/dense_1/vars")
        v1.attrs["name"] = "dense_1"
        v1.create_dataset("0", data=np.ones((20_000, 1), np.float32))
        v1.create_dataset("1", data=np.zeros(1, np.float32))
    assert (tmp_path / "claim.weights.h5").stat().st_size < 1 << 20
    refused(run_capped("canon", "claim.weights.h5", cwd=tmp_path), "layers/dense/vars/0", "zip_ratio")


# ----------------------------------------------------------------------------------------------------------
# HDF5 links are never followed


def _weights_h5(path: Path, link: str | None, target: Path | None = None) -> None:
    h5py = pytest.importorskip("h5py")
    with h5py.File(path, "w") as f:
        for group, shape in (("dense", (3, 4)), ("dense_1", (4, 2))):
            vars_ = f.create_group(f"layers/{group}/vars")
            vars_.attrs["name"] = group
            if group == "dense" and link == "external":
                vars_["0"] = h5py.ExternalLink(str(target), "/secret")
            elif group == "dense" and link == "soft":
                f.create_dataset("elsewhere", data=np.ones(shape, np.float32))
                vars_["0"] = h5py.SoftLink("/elsewhere")
            elif group == "dense" and link == "storage":
                vars_.create_dataset("0", shape=shape, dtype="f4", external=[(str(target), 0, 48)])
            else:
                vars_.create_dataset("0", data=np.ones(shape, np.float32))
            vars_.create_dataset("1", data=np.zeros(shape[1], np.float32))


def test_hdf5_external_link_refused(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    outside = tmp_path / "outside"
    outside.mkdir()
    with h5py.File(outside / "secret.h5", "w") as f:
        f.create_dataset("secret", data=np.full((3, 4), 7, np.float32))
    model = tmp_path / "model"
    model.mkdir()
    _weights_h5(model / "m.weights.h5", "external", outside / "secret.h5")
    err = refused(run_capped("canon", "m.weights.h5", cwd=model), "external link")
    assert "secret.h5" in err


def test_hdf5_soft_link_refused(tmp_path: Path) -> None:
    _weights_h5(tmp_path / "m.weights.h5", "soft")
    refused(run_capped("canon", "m.weights.h5", cwd=tmp_path), "SoftLink")


def test_hdf5_external_storage_refused(tmp_path: Path) -> None:
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.ones(12, np.float32).tobytes())
    _weights_h5(tmp_path / "m.weights.h5", "storage", raw)
    refused(run_capped("canon", "m.weights.h5", cwd=tmp_path), "external storage")


def test_plain_weights_h5_still_reads(tmp_path: Path) -> None:
    _weights_h5(tmp_path / "m.weights.h5", None)
    proc = run_capped("canon", "m.weights.h5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


# ----------------------------------------------------------------------------------------------------------
# Keras activations given as serialized objects


def _keras_with_activation(tmp_path: Path, activation: object) -> Path:
    small = _small_keras(tmp_path)
    with zipfile.ZipFile(small) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    config = json.loads(members["config.json"])
    dense = next(ly for ly in config["config"]["layers"] if ly["class_name"] == "Dense")
    dense["config"]["activation"] = activation
    members["config.json"] = json.dumps(config).encode()
    path = tmp_path / "act.keras"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_keras_activation_as_serialized_function_reads(tmp_path: Path) -> None:
    act = {"module": "keras.activations", "class_name": "function", "config": "relu", "registered_name": "function"}
    path = _keras_with_activation(tmp_path, act)
    proc = run_capped("canon", path.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "act",
    [
        {"module": "keras.activations", "class_name": "function", "config": 5},
        {"class_name": "Thing", "config": [1, 2]},
        ["relu"],
    ],
)
def test_keras_unreadable_activation_object_refused(tmp_path: Path, act: object) -> None:
    path = _keras_with_activation(tmp_path, act)
    err = refused(run_capped("canon", path.name, cwd=tmp_path), "act.keras", "activation")
    assert "layer 'dense" in err


def test_keras_non_relu_serialized_activation_refused(tmp_path: Path) -> None:
    act = {"module": "keras.activations", "class_name": "function", "config": "tanh", "registered_name": "function"}
    path = _keras_with_activation(tmp_path, act)
    refused(run_capped("canon", path.name, cwd=tmp_path), "tanh")


# ----------------------------------------------------------------------------------------------------------
# JSON: duplicate keys and digits other than 0-9


def test_json_duplicate_key_refused(tmp_path: Path) -> None:
    (tmp_path / "dup.json").write_text('{"V": [["1"]], "A": [["1"]], "b": ["0"], "b": ["1"], "c": ["0"]}')
    refused(run_capped("canon", "dup.json", cwd=tmp_path), "dup.json", "'b' twice")


@pytest.mark.parametrize("cell", ['"\u0661\u0662"', '"1/\u0663"', '"\uff11.5"'])
def test_json_non_ascii_digits_refused(tmp_path: Path, cell: str) -> None:
    (tmp_path / "nd.json").write_text(f'{{"V": [["1"]], "A": [[{cell}]], "b": ["0"], "c": ["0"]}}', encoding="utf-8")
    refused(run_capped("canon", "nd.json", cwd=tmp_path), "nd.json", "A[0, 0]", "non-ASCII digit")


def test_keras_config_duplicate_key_refused(tmp_path: Path) -> None:
    small = _small_keras(tmp_path)
    with zipfile.ZipFile(small) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    text = members["config.json"].decode()
    members["config.json"] = text.replace('{"module"', '{"module": "x", "module"', 1).encode()
    with zipfile.ZipFile(tmp_path / "dup.keras", "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    refused(run_capped("canon", "dup.keras", cwd=tmp_path), "config.json", "'module' twice")


# ----------------------------------------------------------------------------------------------------------
# budgets: one check, one sentence


@pytest.mark.parametrize("budget", [float("nan"), -1, float("inf"), True, "5"])
def test_every_budget_is_checked_once(budget: object) -> None:
    import relusym
    from relusym.errors import InvalidNetworkError

    net = relusym.Network([[1, 1]], [[1], [-1]], [0, 1])
    for fn in (relusym.fiber, relusym.minimal_width, relusym.prune):
        with pytest.raises(InvalidNetworkError, match="budget must be a finite non-negative number of seconds"):
            fn(net, budget=budget)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------------
# the command line as a person meets it (item 5)


def _plain_run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relusym", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": SRC, "HOME": str(cwd)},
    )


def _two_nets(tmp_path: Path) -> None:
    net = {"V": [["1", "1"]], "A": [["1"], ["-1"]], "b": ["0", "1"]}
    (tmp_path / "e1.json").write_text(json.dumps(net))
    (tmp_path / "e2.json").write_text(json.dumps(net))


def test_negative_box_bound_without_equals(tmp_path: Path) -> None:
    _two_nets(tmp_path)
    proc = _plain_run("equiv", "e1.json", "e2.json", "--box", "-1:1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("EQUIVALENT on the box")


def test_box_with_tolerance_answers_the_verifiers_question(tmp_path: Path) -> None:
    """``--box -1:1 --atol 0.1`` (once refused with what to do) asks "is |NET1 − NET2| ≤ 0.1 on the box?": the two
    networks agree there, so the answer is yes with the exact maximum 0; a negative tolerance is one sentence."""
    _two_nets(tmp_path)
    proc = _plain_run("equiv", "e1.json", "e2.json", "--box", "-1:1", "--atol", "0.1", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("YES: max over the box of |NET1 − NET2| is 0"), proc.stderr
    proc = _plain_run("equiv", "e1.json", "e2.json", "--box", "-1:1", "--atol", "-1", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--atol" in proc.stderr


def test_output_errors_name_the_path_as_typed(tmp_path: Path) -> None:
    _two_nets(tmp_path)
    proc = _plain_run("prune", "e1.json", "-o", "missing/out.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot write missing/out.json: the folder missing does not exist" in proc.stderr
    assert str(tmp_path) not in proc.stderr


def test_fibre_report_summarizes_long_flip_sets() -> None:
    import dataclasses

    import relusym

    fb = relusym.fiber(relusym.Network([[1, 1]], [[1], [-1]], [0, 1]))
    assert fb.flip_sets is not None
    sets = dataclasses.replace(fb.flip_sets, sets=((), tuple(range(1000))), complete=True, count=2)
    big = dataclasses.replace(fb, flip_sets=sets)
    text = big.report()
    assert "{0, 1, 2, 3, 4, 5, 6, 7, …, 999} (1000 neurons)" in text
    assert len(text) < 3000


def test_a_zip_member_claiming_an_unknown_zip_version_is_refused_in_one_sentence(tmp_path) -> None:
    # zipfile raises NotImplementedError ("zip file version 6.4") for it; hypothesis found it in the npz fuzzer
    import io
    import zipfile

    import numpy as np
    import pytest

    import relusym
    from relusym.errors import InvalidNetworkError, UnsupportedModelError

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, arr in (("A", np.ones((2, 1))), ("b", np.zeros(2)), ("V", np.ones((1, 2))), ("c", np.zeros(1))):
            with zf.open(f"{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, arr)
    data = bytearray(buf.getvalue())
    central = data.find(b"PK\x01\x02")
    data[central + 6] = 64  # "version needed to extract" of the first member: 6.4
    path = tmp_path / "net.npz"
    path.write_bytes(bytes(data))
    with pytest.raises((InvalidNetworkError, UnsupportedModelError)):
        relusym.load(path)


def test_a_non_ascii_non_digit_beside_digits_is_one_sentence() -> None:
    # "0´" (an acute accent after an ASCII digit) ended in StopIteration inside the non-ASCII-digit check
    import pytest

    from relusym import Network
    from relusym.errors import InvalidNetworkError

    with pytest.raises(InvalidNetworkError, match="is not a rational number"):
        Network([["0´"]], [[1]], [0])
