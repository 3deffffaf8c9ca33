"""``relusym canon``'s JSON and files for programs: the streamed object, --full, and the exact npz/parquet/json
encodings read back and compared with the normal form in Fractions."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relusym import Network, normal_form
from relusym._core.nf_export import FULL_BY_DEFAULT, SCHEMA, export_normal_form, read_export, write_canon_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relusym", *args], capture_output=True, text=True, timeout=120)


def nets():
    rng = np.random.default_rng(3)
    f32 = Network(
        rng.standard_normal((3, 12)).astype(np.float32),
        (rng.standard_normal((12, 4)) * 2.0 ** rng.integers(-30, 30, (12, 1))).astype(np.float32),
        rng.standard_normal(12).astype(np.float32),
        rng.standard_normal(3).astype(np.float32),
    )
    f64 = Network(rng.standard_normal((2, 6)), rng.standard_normal((6, 3)) * 1e-200, rng.standard_normal(6))
    rat = Network([["1/3", 2, "-5/7"]], [[1, "2/9"], ["-3/11", 4], [0, 1]], ["1/13", 0, "7/2"], ["1/17"])
    return [f32, f64, rat]


def as_fractions(nf):
    return [(tuple(u), tuple(k)) for u, k in nf.K], [tuple(r) for r in nf.M], tuple(nf.e)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_streamed_json_is_the_normal_form(which):
    net = nets()[which]
    nf = normal_form(net)
    buf = io.BytesIO()
    digest = write_canon_json(nf, buf, net.n, full=True)
    d = json.loads(buf.getvalue())
    assert d["schema"] == SCHEMA and d["full"] is True and d["digest"] == digest == nf.digest()
    ref = nf.to_dict()
    assert d["kinks"] == ref["kinks"] and d["M"] == ref["M"] and d["e"] == ref["e"]
    assert (d["m"], d["n"], d["k"], d["N"]) == (net.m, net.n, net.k, nf.N)
    small = io.BytesIO()
    write_canon_json(nf, small, net.n, full=False)
    s = json.loads(small.getvalue())
    assert s["full"] is False and "kinks" not in s and s["digest"] == digest
    assert s["shapes"] == {"kinks": [nf.N, net.m + 1], "kink_values": [nf.N, net.k], "M": [net.k, net.m], "e": [net.k]}


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
def test_exact_files_read_back(tmp_path, which, suffix):
    pytest.importorskip("pyarrow")
    net = nets()[which]
    nf = normal_form(net)
    path = str(tmp_path / f"nf{suffix}")
    export_normal_form(nf, path, net.n)
    back = read_export(path)
    K, M, e = as_fractions(nf)
    assert back["kinks"] == K and back["M"] == M and back["e"] == e and back["digest"] == nf.digest()
    if which == 0 and suffix == ".npz":  # wide exponent spread: kinks do not fit one power of two in int64
        z = np.load(path)
        assert z["hyperplane_num"].dtype == np.int64 and "kink" in z


def test_float32_network_uses_the_integer_encoding(tmp_path):
    rng = np.random.default_rng(4)
    net = Network(*(rng.standard_normal(s).astype(np.float32) for s in ((3, 40), (40, 5), (40,), (3,))))
    path = str(tmp_path / "nf.npz")
    export_normal_form(normal_form(net), path, net.n)
    z = np.load(path)
    assert z["hyperplane_num"].dtype == np.int64 and z["kink_num"].dtype == np.int64
    assert {"kink_den_log2", "M_num", "M_den_log2", "e_num", "e_den_log2"} <= set(z.files)
    back = read_export(path)
    assert back["kinks"] == list(normal_form(net).K) and back["M"] == list(normal_form(net).M)


def test_cli_canon_full_and_outputs(tmp_path):
    r = run("canon", str(EXAMPLES / "e13.json"), "--json", "--full", "-o", str(tmp_path / "nf.json"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema"] == SCHEMA and d["kinks"][0] == {"hyperplane": ["0", "1", "0"], "kink": ["3"]}
    assert d["inputs"][0]["source"] == str(EXAMPLES / "e13.json")  # stdout adds where the network came from
    assert json.loads((tmp_path / "nf.json").read_text()) == {key: v for key, v in d.items() if key != "inputs"}
    r = run("canon", str(EXAMPLES / "e13.json"), "-o", str(tmp_path / "nf.txt"))
    assert r.returncode == 2 and "unknown output format" in r.stderr and not (tmp_path / "nf.txt").exists()


def test_big_normal_forms_are_summarized_by_default(tmp_path):
    rng = np.random.default_rng(0)
    m, n = 200, FULL_BY_DEFAULT // 200 + 10
    net = Network(
        rng.standard_normal((1, n)).astype(np.float32),
        rng.standard_normal((n, m)).astype(np.float32),
        rng.standard_normal(n).astype(np.float32),
    )
    path = tmp_path / "big.npz"
    np.savez(path, V=net.V, A=net.A, b=net.b, c=net.c)
    r = run("canon", str(path), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["full"] is False and "kinks" not in d and d["N"] == n and d["digest"] == normal_form(net).digest()
