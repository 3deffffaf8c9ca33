"""JSON (relusym.network/1) and NPZ reading and writing; atomic saves; clear errors."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from relusym import InvalidNetworkError, Network, UnsupportedModelError, load, normal_form, save

F = Fraction


def test_json_reads_decimals_and_rationals_exactly(tmp_path):
    p = tmp_path / "net.json"
    p.write_text('{"format": "relusym.network/1", "V": [[1, 2]], "A": [[1], [-1]], "b": [0.1, "1/2"], "c": [0]}')
    net = load(p)
    assert net.b.tolist() == [F(1, 10), F(1, 2)]
    out = tmp_path / "copy.json"
    save(net, out)
    assert load(out).same_parameters(net)
    assert json.loads(out.read_text())["b"] == ["1/10", "1/2"]


def test_json_n_zero_needs_m(tmp_path):
    p = tmp_path / "affine.json"
    p.write_text('{"m": 2, "V": [[]], "A": [], "b": [], "c": [3]}')
    assert load(p).shape == (2, 0, 1)
    p.write_text('{"V": [[]], "A": [], "b": [], "c": [3]}')
    with pytest.raises(InvalidNetworkError, match="m must be given"):
        load(p)


def test_npz_round_trip_keeps_dtypes(tmp_path):
    rng = np.random.default_rng(0)
    net = Network(
        rng.standard_normal((2, 5)).astype(np.float32),
        rng.standard_normal((5, 3)).astype(np.float32),
        rng.standard_normal(5).astype(np.float32),
        rng.standard_normal(2).astype(np.float32),
    )
    p = tmp_path / "net.npz"
    save(net, p)
    back = load(p)
    assert back.A.dtype == np.float32 and back.same_parameters(net)
    assert normal_form(back) == normal_form(net)


def test_npz_refuses_to_round_rationals(tmp_path):
    net = Network([["1/3"]], [[1]], [0])
    with pytest.raises(InvalidNetworkError, match="not exactly representable"):
        save(net, tmp_path / "x.npz")
    assert list(tmp_path.iterdir()) == []  # nothing half-written


@pytest.mark.parametrize(
    "content, match",
    [
        (b'{"V": [[1, 2]], "A": [[1]], "b": [0]}', "V must be k"),
        (b'{"V": [[1]], "A": [[1]], "b": [NaN]}', "NaN"),
        (b'{"V": [[1]], "A": [[1]], ', "not valid JSON"),
        (b'{"V": [[1]], "A": [["x"]], "b": [0]}', "A\\[0, 0\\]"),
        (b"", "empty"),
        (b"\x00\x01garbage", "recognise the format"),
    ],
)
def test_bad_files(tmp_path, content, match):
    p = tmp_path / "bad.json"
    if match == "recognise the format":
        p = tmp_path / "bad.xyz"
    p.write_bytes(content)
    with pytest.raises((InvalidNetworkError, UnsupportedModelError), match=match):
        load(p)


def test_missing_file_and_bad_npz(tmp_path):
    with pytest.raises(InvalidNetworkError, match="no such file"):
        load(tmp_path / "nope.json")
    p = tmp_path / "x.npz"
    np.savez(p, V=np.ones((1, 2)), A=np.ones((3, 1)), b=np.zeros(3))
    with pytest.raises(InvalidNetworkError, match="V must be k×n with n = 3"):
        load(p)
    np.savez(p, W=np.ones((1, 2)))
    with pytest.raises((InvalidNetworkError, UnsupportedModelError)):
        load(p)


def test_save_to_unknown_suffix_or_missing_folder_writes_nothing(tmp_path):
    net = Network([[1]], [[1]], [0])
    with pytest.raises(UnsupportedModelError, match="cannot write"):
        save(net, tmp_path / "net.weird")
    with pytest.raises(InvalidNetworkError, match="does not exist"):
        save(net, tmp_path / "no" / "net.json")
    assert list(tmp_path.iterdir()) == []


def test_load_from_objects():
    net = Network([[1]], [[1]], [0])
    assert load(net) is net
    assert load({"V": [[1]], "A": [[1]], "b": [0]}).same_parameters(net)
    with pytest.raises(UnsupportedModelError, match="cannot read a network from a builtins.int"):
        load(3)


def test_every_format_module_follows_the_protocol() -> None:
    """The io protocol (``relusym.io._protocol``, checked statically by mypy) also holds at run time: every
    format module is a ``Format``, and the capabilities ``relusym.io`` asks for are the functions it defines."""
    import importlib

    from relusym.io import FORMATS
    from relusym.io._protocol import Format, NotedReader, ObjectReader, ReadBack, Writer

    for name in (*FORMATS, "_folder_format"):
        mod = importlib.import_module(f"relusym.io.{name}")
        assert isinstance(mod, Format), name
        assert isinstance(mod, Writer) == hasattr(mod, "save"), name
        assert isinstance(mod, NotedReader) == hasattr(mod, "read"), name
        assert isinstance(mod, ObjectReader) == hasattr(mod, "from_object"), name
        assert isinstance(mod, ReadBack) == hasattr(mod, "read_back"), name
    assert not isinstance(importlib.import_module("relusym.io._folder_format"), Writer)


@pytest.mark.parametrize("dt", [">f8", ">f4", ">f2", "<f8"])
def test_big_endian_arrays_load_at_their_exact_values(tmp_path, dt):  # type: ignore[no-untyped-def]
    # a ">f8" array's dtype name is "float64", which the float6 prefix of ml_dtypes' names once matched: it was
    # read as float32, rounded
    from fractions import Fraction as Fr

    rng = np.random.default_rng(3)
    shallow = {
        k: rng.standard_normal(s).astype(dt) for k, s in {"V": (2, 3), "A": (3, 4), "b": (3,), "c": (2,)}.items()
    }
    np.savez(tmp_path / "shallow.npz", **shallow)
    net = load(tmp_path / "shallow.npz")
    for key in "VAbc":
        assert [Fr(x) for x in np.ravel(getattr(net, key)).tolist()] == [Fr(x) for x in shallow[key].ravel().tolist()]
    deep = {f"{i}.weight": rng.standard_normal((3, 4 if i == 0 else 3)).astype(dt) for i in range(3)}
    deep |= {f"{i}.bias": rng.standard_normal(3).astype(dt) for i in range(3)}
    np.savez(tmp_path / "deep.npz", **deep)
    mlp = load(tmp_path / "deep.npz")
    for i in range(3):
        assert [Fr(x) for x in np.ravel(mlp.weights[i]).tolist()] == [
            Fr(x) for x in deep[f"{i}.weight"].ravel().tolist()
        ]


@pytest.mark.parametrize("rows", [5, 3000])  # a small file (read once, whole) and one over io's 1 MiB threshold
@pytest.mark.parametrize("compressed", [False, True])
def test_npz_is_opened_once_and_its_archive_parsed_once(tmp_path, monkeypatch, rows, compressed):
    """The oracle: the arrays as ``np.load`` reads them, and counts of the file's opens and of the zip directory's
    parses while ``load`` reads it (a small file: one of each; a large one: its first bytes and the reader's
    open, the sniffer's parse and the reader's, where the limits' check parsed it a third time)."""
    import builtins
    import warnings
    import zipfile

    from relusym.io._opened import WHOLE

    rng = np.random.default_rng(rows)
    arrays = {
        "V": rng.standard_normal((3, rows)).astype(np.float32),
        "A": rng.standard_normal((rows, 100)).astype(np.float32),
        "b": rng.standard_normal(rows).astype(np.float32),
        "c": rng.standard_normal(3).astype(np.float32),
    }
    p = tmp_path / "net.npz"
    (np.savez_compressed if compressed else np.savez)(p, **arrays)
    small = p.stat().st_size <= WHOLE
    assert small == (rows == 5)
    opens, parses = [], []
    real_open, real_init = builtins.open, zipfile.ZipFile.__init__

    def counting_open(file, *args, **kw):
        if str(file) == str(p):
            opens.append(file)
        return real_open(file, *args, **kw)

    def counting_init(self, file, *args, **kw):
        parses.append(file)
        real_init(self, file, *args, **kw)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(zipfile.ZipFile, "__init__", counting_init)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = load(p)
    monkeypatch.undo()
    assert (len(opens), len(parses)) == ((1, 1) if small else (2, 2))
    with np.load(p) as ref:
        want = Network(ref["V"], ref["A"], ref["b"], ref["c"])
    assert net.same_parameters(want)
    assert all(x.dtype == np.float32 for x in (net.V, net.A, net.b, net.c))


def _outcome(path):
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            net = load(path)
    except (InvalidNetworkError, UnsupportedModelError) as exc:
        return type(exc).__name__, str(exc)
    return "ok", [x.tolist() for x in (net.V, net.A, net.b, net.c)]


@pytest.mark.parametrize("seed", range(3))
def test_npz_read_whole_agrees_with_reading_the_file_on_damaged_archives(tmp_path, monkeypatch, seed):
    """A small NPZ is read from its bytes (members sliced out, their CRC-32 checked); the oracle is the reading
    from the file (the threshold set to 0 bytes): on the intact archive and on copies with one byte changed
    anywhere (directory, local headers, names, .npy headers, data), the same network or the same refusal."""
    import relusym.io as rio

    rng = np.random.default_rng(seed)
    p = tmp_path / "net.npz"
    np.savez(p, V=rng.standard_normal((2, 3)), A=rng.standard_normal((3, 2)), b=rng.standard_normal(3), c=[0.5, 1.0])
    raw = p.read_bytes()
    damaged = tmp_path / "damaged.npz"
    for pos in [-1, *rng.choice(len(raw), 60, replace=False).tolist()]:
        data = bytearray(raw)
        if pos >= 0:
            data[pos] ^= 1 << int(rng.integers(8))
        damaged.write_bytes(bytes(data))
        whole = _outcome(damaged)
        monkeypatch.setattr(rio, "WHOLE", 0)
        from_file = _outcome(damaged)
        monkeypatch.undo()
        assert whole == from_file, pos
        if pos < 0:
            assert whole[0] == "ok"
