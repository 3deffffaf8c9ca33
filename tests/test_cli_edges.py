"""The command line at the edges: deterministic JSON with a schema, provenance notes, no progress off a terminal,
writes exact or refused (exit 2, nothing written), readable numbers, the pickle opt-in."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relusym

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXE = shutil.which("relusym")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [EXE, *args] if EXE else [sys.executable, "-m", "relusym", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def runb(*args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [EXE, *args] if EXE else [sys.executable, "-m", "relusym", *args]
    return subprocess.run(cmd, capture_output=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("canon", "e13.json"),
        ("fiber", "e2.json"),
        ("stabilizer", "e13.json"),
        ("equiv", "e2.json", "e2_flipped.json"),
        ("orbit", "e12.json", "e12_second_orbit.json"),
    ],
)
def test_json_is_byte_for_byte_deterministic_with_a_schema(args):
    cmd, *files = args
    paths = [str(EXAMPLES / f) for f in files]
    first = runb(cmd, *paths, "--json")
    second = runb(cmd, *paths, "--json")
    assert first.stdout == second.stdout and first.stdout
    d = json.loads(first.stdout)
    assert d["schema"] == f"relusym.{cmd}/{2 if cmd == 'canon' else 1}"  # canon/2: the nf/2 digest
    assert [i["source"] for i in d["inputs"]] == paths
    assert "elapsed_seconds" not in json.dumps(d)
    assert first.stderr == b""  # not a terminal: no progress bar, no warning


def test_timings_only_on_request():
    r = run("fiber", str(EXAMPLES / "e2.json"), "--json", "--timings")
    assert r.returncode == 0 and "elapsed_seconds" in json.loads(r.stdout)


def test_no_progress_off_a_terminal_and_with_quiet(tmp_path):
    for extra in ((), ("--quiet",)):
        r = run("report", str(EXAMPLES / "e2.json"), "-o", str(tmp_path / "r.html"), *extra)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        r = run("fiber", str(EXAMPLES / "e13.json"), *extra)
        assert r.returncode == 0 and r.stderr == ""


def test_progress_enabled_shows_a_bar_on_a_tty_only(capsys):
    from relusym._base.progress import progress_bar

    with progress_bar(total=3, desc="x", progress=None) as bar:  # pytest's stderr is not a terminal
        bar.update(1)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_state_dict_input_says_the_activation_is_assumed(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    torch.save(model.state_dict(), tmp_path / "m.pt")
    r = run("canon", str(tmp_path / "m.pt"))
    assert r.returncode == 0 and "no activation is recorded" in r.stdout
    d = json.loads(run("canon", str(tmp_path / "m.pt"), "--json").stdout)
    assert d["inputs"][0]["activation"] == "assumed" and d["inputs"][0]["format"] == "torch"
    d = json.loads(run("canon", str(EXAMPLES / "e13.json"), "--json").stdout)
    assert d["inputs"][0]["activation"] == "recorded" and d["inputs"][0]["notes"] == []
    r = run("report", str(tmp_path / "m.pt"), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0 and "no activation is recorded" in (tmp_path / "r.html").read_text(encoding="utf-8")


def _bf16_file(tmp_path: Path) -> Path:
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).to(torch.bfloat16)
    with torch.no_grad():
        model[0].weight[2] = model[0].weight[0]  # neurons 0 and 2 on one hyperplane: their v's are summed
        model[0].bias[2] = model[0].bias[0]
        model[2].weight[0, 0], model[2].weight[0, 2] = 1.0, 2.0**-9  # 1 + 2⁻⁹ is not a bfloat16
    path = tmp_path / "model_bf16.safetensors"
    st.save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    return path


@pytest.mark.slow
def test_prune_bf16_refuses_names_the_entry_and_writes_nothing(tmp_path):
    src = _bf16_file(tmp_path)
    out = tmp_path / "small.safetensors"
    r = run("prune", str(src), "-o", str(out))
    assert r.returncode == 2 and not out.exists()
    assert "not exactly representable in bfloat16" in r.stderr and "V[0, " in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]
    # widening keeps it exact in the same format
    r = run("prune", str(src), "-o", str(out), "--dtype", "float64", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["write"]["exact"] and d["width"] == 2
    assert relusym.normal_form(relusym.load(out)) == relusym.normal_form(relusym.load(src))
    # rounding only when asked, and then the output says how far
    r = run("prune", str(src), "-o", str(out), "--allow-rounding")
    assert r.returncode == 0 and "distance" in r.stdout and "V" in r.stdout
    d = json.loads(run("prune", str(src), "-o", str(out), "--allow-rounding", "--json").stdout)
    assert not d["write"]["exact"] and d["write"]["rounded"] == ["V"] and d["write"]["max_change"] == 2.0**-9


def test_canon_shows_decimals_and_summarizes(tmp_path):
    net = relusym.Network([[1, -2]], [[1, 0], [0, 3]], ["1/3", "-4500015/62804"])
    (tmp_path / "r.json").write_text(json.dumps(net.to_dict()))
    r = run("canon", str(tmp_path / "r.json"))
    assert "1/3 ≈ 0.3333" in r.stdout and "-1500005/62804 ≈ -23.88" in r.stdout
    rng = np.random.default_rng(0)
    big = relusym.Network(rng.standard_normal((2, 30)), rng.standard_normal((30, 50)), rng.standard_normal(30))
    relusym.save(big, tmp_path / "big.npz")
    r = run("canon", str(tmp_path / "big.npz"))
    assert r.returncode == 0 and "… 20 more (use --all or --json)" in r.stdout and "… 43 more" in r.stdout
    assert len(r.stdout.splitlines()) < 30
    full = run("canon", str(tmp_path / "big.npz"), "--all")
    assert "more (use --all" not in full.stdout and len(full.stdout.splitlines()) > 30


def test_pickles_need_the_opt_in(tmp_path):
    joblib = pytest.importorskip("joblib")
    from sklearn.neural_network import MLPRegressor

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    est = MLPRegressor(hidden_layer_sizes=(3,), max_iter=5, random_state=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, X[:, 0])
    joblib.dump(est, tmp_path / "m.joblib")
    r = run("canon", str(tmp_path / "m.joblib"))
    assert r.returncode == 2 and "--allow-unsafe-pickle" in r.stderr
    r = run("canon", str(tmp_path / "m.joblib"), "--allow-unsafe-pickle", "--json")
    assert r.returncode == 0 and "runs any code" in r.stderr
    assert json.loads(r.stdout)["inputs"][0]["format"] == "sklearn"
    r = run("prune", str(tmp_path / "m.joblib"), "-o", str(tmp_path / "small.joblib"), "--allow-unsafe-pickle")
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_skl2onnx_classifier_has_a_command_line_route(tmp_path):
    pytest.importorskip("skl2onnx")
    import warnings

    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    est = MLPClassifier(hidden_layer_sizes=(4,), max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, (X[:, 0] > 0).astype(int))
        model = to_onnx(est, X[:1].astype(np.float32))
    (tmp_path / "clf.onnx").write_bytes(model.SerializeToString())
    r = run("canon", str(tmp_path / "clf.onnx"), "--json")
    assert r.returncode == 0, r.stderr
    notes = json.loads(r.stdout)["inputs"][0]["notes"]
    assert any("logits" in n for n in notes)
