"""The census of small fibres (relusym.census)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from relusym import Network
from relusym.census import CATEGORIES, classify, main, networks_121, networks_231, run_census


def _independent_121_counts() -> dict[str, int]:
    """The three counts of Ω(1,2,1) with entries in {−1, 0, 1} that follow directly from §5.3 and §5.4,
    counted here without relusym: class A needs v_i, a_i ∈ {±1} and (a_2, b_2) ≠ ±(a_1, b_1) (4·4·6·3 = 288
    networks); half of them have v_1 a_1 + v_2 a_2 = 0 (a flip: two orbits), the other half are generic.
    Rigid but not generic: an opposite pair (a_2, b_2) = −(a_1, b_1) with v_1 = v_2 ≠ 0 (|x|-like),
    2·3·2·3 = 36."""
    generic = flips = rigid = 0
    for v1, v2, a1, a2, b1, b2, _c in itertools.product((-1, 0, 1), repeat=7):
        if 0 in (v1, v2, a1, a2):
            continue
        proportional = (a2, b2) in ((a1, b1), (-a1, -b1))
        if not proportional:
            if v1 * a1 + v2 * a2 == 0:
                flips += 1
            else:
                generic += 1
        elif (a2, b2) == (-a1, -b1) and v1 == v2:
            rigid += 1
    return {"generic": generic, "finitely many orbits": flips, "rigid, not generic": rigid}


@pytest.mark.slow
def test_full_121_census_counts():
    census = run_census(sample_231=0, samples=1)
    (row,) = census.rows
    assert row.total == 3**7 == sum(row.counts.values())
    assert census.ok, row.failures[:3]
    expected = _independent_121_counts()
    assert expected == {"generic": 144, "finitely many orbits": 144, "rigid, not generic": 36}
    for cat, count in expected.items():
        assert row.counts[cat] == count
    assert row.counts["undecided"] == 0
    assert row.counts["positive-dimensional"] == 3**7 - 144 - 144 - 36
    assert row.hidden_flips > 0 and row.orbit_checks >= 180


def test_231_sample_census_passes_its_checks():
    census = run_census(sample_231=40, samples=2, limit_121=50, seed=3)
    assert census.ok, [f for r in census.rows for f in r.failures][:3]
    assert [r.total for r in census.rows] == [50, 40]
    table = census.table()
    assert "| family |" in table and "Ω(2,3,1)" in table
    for cat in CATEGORIES:
        assert cat in table


def test_classify_examples():
    cat, fb, failures, stats = classify(Network([[1, 1]], [[1], [-1]], [0, 1]), samples=6, rng=1)  # E2
    assert cat == "finitely many orbits" and fb.orbits == 2 and not failures
    assert stats["flip_checks"] == 6
    cat, _, failures, _ = classify(Network([[1, 1]], [[1], [-1]], [0, 0]), samples=3, rng=1)  # E3 = |x|
    assert cat == "rigid, not generic" and not failures
    cat, _, failures, _ = classify(Network([[1, -1]], [[1], [-1]], [0, 0]), samples=3, rng=1)  # E4 = x
    assert cat == "positive-dimensional" and not failures


def test_families():
    assert sum(1 for _ in networks_121()) == 2187
    nets = list(networks_231(5, seed=1))
    assert [n.shape for n in nets] == [(2, 3, 1)] * 5
    assert [n.to_dict() for n in nets] == [n.to_dict() for n in networks_231(5, seed=1)]


def test_main_prints_table(capsys):
    code = main(["--sample", "5", "--samples", "1", "--limit-121", "100"])
    out = capsys.readouterr().out
    assert code == 0
    assert "all checks passed" in out and "| Ω(1,2,1)" in out


def _census_entry_points(*args: str) -> list[subprocess.CompletedProcess[str]]:
    """``relusym census ARGS`` and ``python -m relusym.census ARGS``, in a fresh process each."""
    return [
        subprocess.run([sys.executable, "-m", *entry, *args], capture_output=True, text=True, timeout=300)
        for entry in (["relusym", "census"], ["relusym.census"])
    ]


def test_both_entry_points_are_the_one_census_command() -> None:
    """``relusym census`` is a sub-command of the one parser; ``python -m relusym.census`` is the same command:
    the same output for the same options, the same exit codes, the same one-sentence usage errors."""
    small = ("--limit-121", "30", "--sample", "2", "--samples", "1", "--seed", "3", "--json")
    a, b = _census_entry_points(*small)
    assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert json.loads(a.stdout)["schema"] == "relusym.census/1" and "seconds" not in json.loads(a.stdout)
    for bad, word in ((("--sample", "-1"), "negative"), (("--shape", "1,2"), "M,N,K"), (("--frobnicate",), "frob")):
        runs = _census_entry_points(*bad)
        for r in runs:
            assert r.returncode == 2 and r.stdout == "", r
            assert r.stderr.startswith("relusym") and word in r.stderr and r.stderr.count("\n") == 1
        assert runs[0].stderr == runs[1].stderr
    # the refusals of the run itself, after parsing: exit 2 with the same sentence
    runs = _census_entry_points("--resume")
    assert [r.returncode for r in runs] == [2, 2] and runs[0].stderr == runs[1].stderr
    assert "--resume needs" in runs[0].stderr or "--shape" in runs[0].stderr
    # the library's main parses the same options
    with pytest.raises(SystemExit) as exc:
        main(["--sample", "-1"])
    assert exc.value.code == 2
