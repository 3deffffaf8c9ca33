"""Every command's --json object follows one key order (docs/cli.md, "The JSON output"): ``schema`` first, then
the shape keys that the command has (m, n, k, N, in that order), then its own keys, and ``inputs`` last; canon's
order is exactly the documented one."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from relusym import MLP, Network, normal_form
from relusym._cli.canon_json import KEY_ORDER, write_canon
from relusym._cli.runtime import json_object
from relusym.cli import main
from relusym.io import save

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DOCS = Path(__file__).resolve().parent.parent / "docs"
SHAPE = ("m", "n", "k", "N")


def _keys(text: str) -> list[str]:
    pairs = json.loads(text, object_pairs_hook=lambda p: p)
    return [k for k, _ in pairs]


def _check_convention(keys: list[str], command: str) -> None:
    assert keys[0] == "schema", (command, keys)
    assert keys[-1] == "inputs", (command, keys)
    assert len(set(keys)) == len(keys), (command, keys)
    shape = [k for k in keys if k in SHAPE]
    assert keys[1 : 1 + len(shape)] == shape, (command, keys)  # right after schema
    assert shape == [k for k in SHAPE if k in shape], (command, keys)  # in the one order


def _run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code in (0, 1, 4), (argv, out)
    return _keys(out)


def test_canon_json_is_in_the_documented_order(capsys: pytest.CaptureFixture[str]) -> None:
    keys = _run_json(capsys, "canon", str(EXAMPLES / "e13.json"))
    assert keys == list(KEY_ORDER)
    _check_convention(keys, "canon")
    # the table of docs/cli.md lists canon's keys in this order
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    section = text.split("### `relusym canon NET`")[1].split("###")[0]
    cells = re.findall(r"^\| (`[^|]+`) \|", section, flags=re.M)
    documented = [k for cell in cells for k in re.findall(r"`(\w+)`", cell)]
    assert documented == [k for k in KEY_ORDER if k not in ("schema", "inputs")]
    example = re.search(r"```json\n(.*?)```", section, flags=re.S)
    assert example is not None and _keys(example.group(1).replace("[...]", "[]")) == list(KEY_ORDER)


def test_canon_summary_keeps_the_order_and_the_values() -> None:
    net = Network([[1, -2]], [[1], [3]], [0, -1], [5])
    nf = normal_form(net)
    for full in (False, True):
        buf = io.BytesIO()
        write_canon(nf, buf, net.n, full=full, inputs=[])
        keys = _keys(buf.getvalue().decode())
        assert keys == [k for k in KEY_ORDER if full or k not in ("kinks", "M", "e")]
        d = json.loads(buf.getvalue())
        assert d["digest"] == nf.digest() and d["full"] is full and (d["m"], d["n"], d["k"], d["N"]) == (1, 2, 1, 2)
        if full:  # the values are the normal form's own JSON form
            ref = nf.to_dict()
            assert (d["kinks"], d["M"], d["e"]) == (ref["kinks"], ref["M"], ref["e"])


def test_every_command_follows_one_key_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    e2, flipped = str(EXAMPLES / "e2.json"), str(EXAMPLES / "e2_flipped.json")
    runs = {
        "canon": ("canon", e2),
        "stabilizer": ("stabilizer", e2),
        "fiber": ("fiber", e2),
        "equiv": ("equiv", e2, flipped),
        "equiv --atol": ("equiv", e2, flipped, "--atol", "1e-9"),
        "equiv --box": ("equiv", e2, flipped, "--box=-1:1"),
        "orbit": ("orbit", e2, flipped),
        "align": ("align", e2, flipped),
        "prune": ("prune", e2, "-o", str(tmp_path / "p.json")),
        "units": ("units", e2, "--box=-1:1"),
    }
    rng = np.random.default_rng(0)
    deep = MLP([rng.integers(-3, 4, (3, 1)), rng.integers(-3, 4, (2, 3)), rng.integers(-3, 4, (1, 2))])
    save(deep, tmp_path / "deep.json")
    d = str(tmp_path / "deep.json")
    runs |= {"canon deep": ("canon", d), "equiv deep": ("equiv", d, d), "orbit deep": ("orbit", d, d)}
    for name, argv in runs.items():
        _check_convention(_run_json(capsys, *argv), name)


def test_the_one_order_is_imposed_on_any_command() -> None:
    """identify's own dict starts with ``mode``, a deep canon's carries ``inputs`` inside: the printed object still
    has schema, the shape, the rest in its order, inputs last."""
    data = {"mode": "exact", "k": 1, "n": 2, "inputs": ["stale"], "m": 1, "kinks": 2}
    out = json_object("identify", data, [{"source": "x"}])
    assert list(out) == ["schema", "m", "n", "k", "mode", "kinks", "inputs"]
    assert out["schema"] == "relusym.identify/1" and out["inputs"] == [{"source": "x"}]
