"""``relusym equiv NET1 NET2 --box … --atol EPS`` for one-hidden-layer networks: "is |NET1 − NET2| ≤ EPS at every
input of the box?" answered yes (exit 0), no (exit 1, with an exact input inside the box, re-checked here by exact
evaluation) or undecided (exit 4), as for deep networks.  For m = 1 the test's own oracle computes the maximum
exactly (at the breakpoints of both networks and the ends of the interval), so the answer is checked both ways."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

import relusym
from relusym import MLP, Network
from relusym.cli import main

from oracles import eval_oracle
from strategies import dyadic_parameters

F = Fraction


def _save(path: Path, t: tuple[list, list, list, list]) -> str:
    V, A, b, c = t
    relusym.save(Network(V, A, b, c), path)
    return str(path)


def _gap(t1: tuple, t2: tuple, x: tuple) -> Fraction:
    y1, y2 = eval_oracle(*t1, x), eval_oracle(*t2, x)
    return max(abs(p - q) for p, q in zip(y1, y2, strict=True))


def _max_gap_m1(t1: tuple, t2: tuple, lo: Fraction, hi: Fraction) -> Fraction:
    """max over [lo, hi] of |f1 − f2|: f1 − f2 is piecewise linear, so the maximum is at a breakpoint or an end."""
    pts = {lo, hi}
    for _, A, b, _ in (t1, t2):
        for a_i, b_i in zip(A, b, strict=True):
            if a_i[0] != 0 and lo < -b_i / a_i[0] < hi:
                pts.add(-b_i / a_i[0])
    return max(_gap(t1, t2, (x,)) for x in pts)


def _within(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["equiv", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_m1_answers_match_the_exact_maximum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(5)
    seen = set()
    for trial in range(12):
        t1, t2 = dyadic_parameters(rng, 1, rng.randint(1, 4)), dyadic_parameters(rng, 1, rng.randint(1, 4))
        if trial % 3 == 0:  # the same function up to a small change of the output bias
            t2 = (t1[0], t1[1], t1[2], [t1[3][0] + F(1, 8)])
        p1, p2 = _save(tmp_path / "a.json", t1), _save(tmp_path / "b.json", t2)
        lo, hi = F(rng.randint(-6, 0), 2), F(rng.randint(1, 6), 2)
        top = _max_gap_m1(t1, t2, lo, hi)
        for eps in sorted({e for e in (top, top + F(1, 64), top - F(1, 64), F(0)) if e >= 0}):
            code, d = _within(capsys, p1, p2, f"--box={lo}:{hi}", "--atol", str(float(eps)))
            e = F(float(eps))  # --atol is read as a float, at its exact binary value
            assert F(d["eps"]) == e and d["mode"] == "box"
            assert F(d["lower"]) == F(d["upper"]) == top and d["kind"] == "exact"  # m = 1: the maximum, exactly
            want = "yes" if top <= e else "no"
            assert d["answer"] == want and code == (0 if want == "yes" else 1)
            x = tuple(F(v) for v in d["point"])
            assert lo <= x[0] <= hi and _gap(t1, t2, x) == F(d["lower"])
            if want == "no":
                assert _gap(t1, t2, x) > e
            seen.add(want)
    assert seen == {"yes", "no"}


def test_m2_answers_are_sound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(11)
    seen = set()
    for _ in range(2):
        t1, t2 = dyadic_parameters(rng, 2, 3, 2), dyadic_parameters(rng, 2, 3, 2)
        p1, p2 = _save(tmp_path / "a.json", t1), _save(tmp_path / "b.json", t2)
        lo, hi = (F(-1), F(0)), (F(1), F(2))
        box = tmp_path / "box.json"
        box.write_text(json.dumps({"lo": [str(v) for v in lo], "hi": [str(v) for v in hi]}))
        grid = [(lo[0] + (hi[0] - lo[0]) * i / 8, lo[1] + (hi[1] - lo[1]) * j / 8) for i in range(9) for j in range(9)]
        sampled = max(_gap(t1, t2, x) for x in grid)
        for eps in (sampled / 2, sampled * 2, sampled):
            code, d = _within(capsys, p1, p2, "--box", str(box), "--atol", str(float(eps)), "--budget", "0.5")
            e, lower, upper = F(d["eps"]), F(d["lower"]), F(d["upper"])
            x = tuple(F(v) for v in d["point"])
            assert all(a <= v <= b_ for a, v, b_ in zip(lo, x, hi, strict=True))
            assert _gap(t1, t2, x) == lower <= upper and sampled <= upper  # lower attained; upper sound on the grid
            if d["answer"] == "yes":
                assert code == 0 and upper <= e and sampled <= e
            elif d["answer"] == "no":
                assert code == 1 and _gap(t1, t2, x) > e
            else:
                assert d["answer"] == "undecided" and code == 4 and lower <= e < upper
            seen.add(d["answer"])
    assert {"yes", "no"} <= seen


def test_box_from_an_nnet_file_and_the_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t1 = ([[F(1), F(-2)]], [[F(1)], [F(3)]], [F(0), F(-1)], [F(5)])
    t2 = ([[F(1), F(-2)]], [[F(1)], [F(3)]], [F(0), F(-1)], [F(5) + F(1, 4)])  # differs by 1/4 everywhere
    t3 = ([[F(1)]], [[F(1)]], [F(0)], [F(5)])  # equal to t1 on x ≤ 1/3, apart by 6x − 2 beyond
    p1, p2, p3 = (_save(tmp_path / f"{s}.json", t) for s, t in (("a", t1), ("b", t2), ("c", t3)))
    relusym.save(Network(*t1), tmp_path / "a.nnet")
    lines = (tmp_path / "a.nnet").read_text().splitlines()
    lines[4], lines[5] = "-1,", "1/2,".replace("1/2", "0.5")  # the input box [-1, 0.5]
    (tmp_path / "a.nnet").write_text("\n".join(lines) + "\n")
    nnet = str(tmp_path / "a.nnet")
    assert [str(v) for v in relusym.io.input_box(nnet).lo] == ["-1"]
    code, d = _within(capsys, p1, p2, "--box-from", nnet, "--atol", "0.25")
    assert code == 0 and d["answer"] == "yes" and F(d["upper"]) == F(1, 4)
    code, d = _within(capsys, p1, p2, "--box-from", nnet, "--atol", "0.125")
    assert code == 1 and d["answer"] == "no"
    # t1 − t3 = 6x − 2 beyond 1/3 (and 0 below): the maximum on [-1, 1/2] is 1 at x = 1/2
    code, d = _within(capsys, p1, p3, "--box-from", nnet, "--atol", "0.5")
    assert code == 1 and [F(v) for v in d["point"]] == [F(1, 2)] and _gap(t1, t3, (F(1, 2),)) == 1 > F(1, 2)
    code = main(["equiv", p1, p3, "--box-from", nnet, "--atol", "1"])
    assert code == 0 and capsys.readouterr().out.startswith("YES")
    for argv, word in (
        (("--box=-1:1", "--atol", "-1"), "--atol"),
        (("--box=-1:1", "--rtol", "0.1"), "--rtol"),
        (("--box=-1:1", "--atol", "nan"), "--atol"),
        (("--box=-1:1", "--box-from", nnet, "--atol", "1"), "either"),
    ):
        assert main(["equiv", p1, p2, *argv]) == 2
        err = capsys.readouterr().err
        assert word in err and err.count("\n") == 1


def test_one_and_two_hidden_layers_answer_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same function written with one hidden layer and as a depth-2 MLP (an identity layer inserted: the hidden
    values are ≥ 0, so σ(I·h) = h) gets the same answers against a third network."""
    t1 = ([[F(2), F(-1)]], [[F(1)], [F(-1)]], [F(0), F(1)], [F(0)])
    t2 = ([[F(2), F(-1)]], [[F(1)], [F(-1)]], [F(0), F(1)], [F(1, 2)])  # t1 + 1/2
    p1, p2 = _save(tmp_path / "a.json", t1), _save(tmp_path / "b.json", t2)
    V, A, b, c = t1
    relusym.save(MLP([A, [[1, 0], [0, 1]], V], [b, [0, 0], c]), tmp_path / "d.json")
    for atol, want in (("1", "yes"), ("0.25", "no")):
        answers = []
        for a in (p1, str(tmp_path / "d.json")):
            code, d = _within(capsys, a, p2, "--box=-1:2", "--atol", atol, "--budget", "1")
            x = tuple(F(v) for v in d["point"])
            assert -1 <= x[0] <= 2 and _gap(t1, t2, x) == F(d["lower"]) == F(1, 2)
            answers.append((code, d["answer"]))
        assert answers == [(0 if want == "yes" else 1, want)] * 2
