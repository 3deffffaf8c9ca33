"""The installed ``relusym`` command, run as a subprocess: JSON keys and exit codes of interfaces.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXE = shutil.which("relusym")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [EXE, *args] if EXE else [sys.executable, "-m", "relusym", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_installed_command_exists():
    assert EXE is not None, "the relusym console script is not installed"


def test_equiv_hidden_symmetry_json():
    r = run("equiv", str(EXAMPLES / "e2.json"), str(EXAMPLES / "e2_flipped.json"), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["equivalent"] is True and d["flips"] == [0, 1]
    assert d["witness"] == {"permutation": [0, 1], "scales": ["1", "1"]}


def test_equiv_not_equivalent_exit_1_with_counterexample():
    r = run("equiv", str(EXAMPLES / "e2.json"), str(EXAMPLES / "e2_flipped_wrong_bias.json"), "--json")
    assert r.returncode == 1
    d = json.loads(r.stdout)
    assert d["equivalent"] is False and len(d["counterexample"]["x"]) == 1
    assert d["counterexample"]["y1"] != d["counterexample"]["y2"]
    r = run("equiv", str(EXAMPLES / "e2.json"), str(EXAMPLES / "e2_flipped_wrong_bias.json"))
    assert r.returncode == 1 and "NOT equivalent" in r.stdout and "counterexample" in r.stdout


def test_canon_json_keys():
    r = run("canon", str(EXAMPLES / "e13.json"), "--json")
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert d["kinks"] == [
        {"hyperplane": ["0", "1", "0"], "kink": ["3"]},
        {"hyperplane": ["1", "0", "0"], "kink": ["2"]},
    ]
    assert d["M"] == [["-1", "-2"]] and d["e"] == ["0"] and len(d["digest"]) == 64
    r2 = run("canon", str(EXAMPLES / "e13.json"))
    assert r2.returncode == 0 and d["digest"] in r2.stdout


def test_orbit_and_stabilizer(tmp_path):
    r = run("orbit", str(EXAMPLES / "e12.json"), str(EXAMPLES / "e12_second_orbit.json"), "--json")
    d = json.loads(r.stdout)
    assert r.returncode == 1 and {k: d[k] for k in ("in_orbit", "symmetry")} == {"in_orbit": False, "symmetry": None}
    assert d["schema"] == "relusym.orbit/1" and [i["activation"] for i in d["inputs"]] == ["recorded", "recorded"]
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps({"V": [["1/2", 1]], "A": [[2], [-1]], "b": [0, 1]}))
    r = run("orbit", str(EXAMPLES / "e2.json"), str(moved), "--json")
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert {k: d[k] for k in ("in_orbit", "symmetry")} == {
        "in_orbit": True,
        "symmetry": {"permutation": [0, 1], "scales": ["2", "1"]},
    }
    r = run("stabilizer", str(EXAMPLES / "e2.json"), "--json")
    d = json.loads(r.stdout)
    assert r.returncode == 0 and (d["inactive"], d["blocks"], d["order"]) == (0, [], 1)


@pytest.mark.parametrize(
    "content", [None, "{not json", '{"V": [[1, 2]], "A": [[1]], "b": [0]}', '{"V": [[1]], "A": [[1]], "b": [NaN]}']
)
def test_bad_input_exit_2_one_sentence(tmp_path, content):
    p = tmp_path / "bad.json"
    if content is not None:
        p.write_text(content)
    r = run("canon", str(p), "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("relusym canon:")
    r = run("equiv", str(p), str(EXAMPLES / "e2.json"))
    assert r.returncode == 2


@pytest.mark.parametrize("name", ["bad.npz", "bad.npy"])
def test_a_file_that_is_no_numpy_file_is_exit_2_one_sentence(tmp_path, name):
    """Bytes that are neither a zip archive nor an .npy array, named as numpy files: one sentence that says so (numpy
    took them for a pickle: relusym answered that they hold an object array, and with --allow-unsafe-pickle failed
    with an internal error)."""
    p = tmp_path / name
    p.write_bytes(b"garbage, not numpy")
    for extra in ([], ["--allow-unsafe-pickle"]):
        r = run("canon", str(p), *extra)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert r.stderr.count("\n") == 1 and "is not a numpy file" in r.stderr and "internal error" not in r.stderr


def test_shape_mismatch_between_networks_is_exit_2():
    r = run("equiv", str(EXAMPLES / "e2.json"), str(EXAMPLES / "e13.json"))
    assert r.returncode == 2 and "different shapes" in r.stderr


def test_no_command_prints_help_and_exit_2():
    r = run()
    assert r.returncode == 2 and "usage" in r.stdout


def _npz(path, V, A, b, c):
    import numpy as np

    f32 = np.float32
    np.savez(path, V=np.array(V, f32), A=np.array(A, f32), b=np.array(b, f32), c=np.array(c, f32))


def test_prune_float_file_writes_same_format_exactly(tmp_path):
    from relusym import equivalent, load

    src = tmp_path / "net.npz"
    # neuron 2 duplicates neuron 0 at scale 2, neuron 3 is dead
    _npz(
        src, [[1.5, -2.0, 0.25, 3.0]], [[1.0, 2.0], [0.5, -1.0], [2.0, 4.0], [0.0, 0.0]], [0.5, 1.0, 1.0, -1.0], [0.25]
    )
    out = tmp_path / "small.npz"
    r = run("prune", str(src), "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["width"] == 2 and d["n"] == 4
    small = load(out)
    assert small.n == 2 and small.A.dtype.name == "float32"
    assert equivalent(load(src), small)


def test_prune_refuses_to_round_and_writes_nothing(tmp_path):
    src = tmp_path / "net.npz"
    # merging the two neurons gives v = 1 + 2**-30 / 3-ish values that float32 cannot hold
    _npz(src, [[1.0, 2.0**-30]], [[1.0], [3.0]], [0.0, 0.0], [0.0])
    out = tmp_path / "small.npz"
    r = run("prune", str(src), "-o", str(out))
    if r.returncode == 0:  # the merge happened to be representable: then the file must be equivalent
        from relusym import equivalent, load

        assert equivalent(load(src), load(out))
    else:
        assert r.returncode == 2 and "--allow-rounding" in r.stderr and not out.exists()
        r = run("prune", str(src), "-o", str(tmp_path / "small.json"))
        assert r.returncode == 0 and (tmp_path / "small.json").exists()


def test_census_command_runs_a_small_census():
    r = run("census", "--limit-121", "200", "--sample", "20", "--samples", "1", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert isinstance(d, dict) and d


def test_script_returns_the_exit_code_and_keeps_the_output(monkeypatch, capsys):
    """``relusym.cli.script`` (the console script and ``python -m relusym``) returns :func:`main`'s exit code with
    its output flushed, and leaves the process's objects frozen for a fast exit; ``python -m relusym`` through it
    prints the whole answer and exits with the code of interfaces.md (1: not equivalent)."""
    import gc

    from relusym import cli
    from relusym._zoo import _processes

    monkeypatch.setitem(_processes._ENDING, "with the command", False)  # script() says the process ends
    monkeypatch.setattr(sys, "argv", ["relusym", "equiv", str(EXAMPLES / "e2.json"), str(EXAMPLES / "e2.json")])
    before = gc.get_freeze_count()
    try:
        assert cli.script() == 0
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
    assert "equivalent" in capsys.readouterr().out.lower()
    pair = [str(EXAMPLES / "e2.json"), str(EXAMPLES / "e2_flipped_wrong_bias.json")]
    r = subprocess.run(
        [sys.executable, "-m", "relusym", "equiv", *pair, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["equivalent"] is False
