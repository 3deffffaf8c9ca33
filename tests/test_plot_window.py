"""The window of an m = 1 picture is where the function changes (relusym.plot.auto_domain), checked against the
exact breakpoints and changes of slope computed here from the weights in Fractions; ``relusym plot --xlim`` and
``--box``/``--domain``/``--box-from`` are honoured, and bad values exit 2 with one sentence."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import relusym
from relusym import MLP, Network
from relusym.cli import main

pytest.importorskip("matplotlib")

from relusym import plot  # noqa: E402
from relusym._plots.geometry import KEEP_SHARE, TAIL_SHARE  # noqa: E402

F = Fraction


def exact_kinks(V, A, b) -> dict[Fraction, Fraction]:
    """x ↦ max over the outputs of |change of slope| at x, from the definition: σ(a x + b) turns at x = −b/a and
    its slope changes there by |a|, so output r changes slope by Σ v_ri |a_i| over the neurons turning at x."""
    per: dict[Fraction, list[Fraction]] = {}
    for i, (a_i, b_i) in enumerate(zip(A, b, strict=True)):
        a = F(a_i[0])
        if a == 0:
            continue
        x = -F(b_i) / a
        per.setdefault(x, [F(0)] * len(V))
        for r in range(len(V)):
            per[x][r] += F(V[r][i]) * abs(a)
    return {x: max(abs(d) for d in ds) for x, ds in per.items() if any(ds)}


def check_window(V, A, b, lo: float, hi: float) -> None:
    kinks = exact_kinks(V, A, b)
    if not kinks:
        return
    top, total = max(kinks.values()), sum(kinks.values())
    for x, w in kinks.items():
        if w >= KEEP_SHARE * top:
            assert lo < float(x) < hi, (x, w, lo, hi)  # every kink that matters is shown
    left = sum(w for x, w in kinks.items() if float(x) < lo)
    right = sum(w for x, w in kinks.items() if float(x) > hi)
    assert left <= TAIL_SHARE * total * (1 + 1e-9) and right <= TAIL_SHARE * total * (1 + 1e-9)


def trained_like(seed: int = 0) -> tuple[list, list, list]:
    """60 neurons turning in [−1, 1] with O(1) weights, and 10 with tiny input weights turning far away."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([rng.normal(0, 1, 60), rng.normal(0, 0.01, 10)])
    at = np.concatenate([rng.uniform(-1, 1, 60), rng.uniform(5, 40, 10) * rng.choice([-1, 1], 10)])
    V = [rng.normal(0, 1, 70).tolist()]
    return V, a[:, None].tolist(), (-a * at).tolist()


def test_a_trained_network_is_drawn_where_it_changes() -> None:
    V, A, b = trained_like()
    net = Network(V, A, b)
    ((lo, hi),) = plot.auto_domain(net)
    check_window(V, A, b, lo, hi)
    assert -2 < lo < -1 and 1 < hi < 2  # the fitted region [−1, 1], not the far kinks
    ((lo_all, hi_all),) = plot.auto_domain(net, every_kink=True)  # the old window: every breakpoint
    assert hi_all - lo_all > 20 * (hi - lo)
    kinks = exact_kinks(V, A, b)
    assert all(lo_all < float(x) < hi_all for x in kinks)
    fig = plot.plot_networks(net, figsize=(6, 4), dpi=40)
    assert fig.axes[0].get_xlim() == (lo, hi)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("10 kink(s) outside the window") for t in texts), texts


def test_random_networks_keep_every_kink_that_matters() -> None:
    rng = random.Random(3)
    for _ in range(150):
        n, k = rng.randint(1, 9), rng.randint(1, 2)
        A = [[F(rng.choice([-1, 1]) * rng.randint(1, 8), rng.choice([1, 16, 256]))] for _ in range(n)]
        b = [F(rng.randint(-40, 40), rng.choice([1, 4])) for _ in range(n)]
        V = [[F(rng.randint(-6, 6), rng.choice([1, 8, 64])) for _ in range(n)] for _ in range(k)]
        net = Network(V, A, b, [0] * k)
        ((lo, hi),) = plot.auto_domain(net)
        assert lo < hi
        check_window(V, A, b, lo, hi)
        ((lo2, hi2),) = plot.auto_domain(net, points=[(F(100),)])
        assert lo2 <= lo and hi2 > 100


def test_equal_kinks_are_all_shown_and_two_networks_each_keep_theirs() -> None:
    xs = list(range(0, 100, 3))
    A, b, V = [[1]] * len(xs), [-x for x in xs], [[1] * len(xs)]
    ((lo, hi),) = plot.auto_domain(Network(V, A, b))
    assert lo < 0 and hi > 99  # no kink is a tail when all carry the same change of slope
    small = Network([[1, 1]], [[1], [1]], [500, 510])  # kinks at −500 and −510
    ((lo, hi),) = plot.auto_domain([Network(V, A, b), small])
    assert lo < -510 and hi > 99


# ----------------------------------------------------------------------------------------------------------
# the command line


def _plot(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict | None, str]:
    code = main(["plot", *argv, "--json"])
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if cap.out else None), cap.err


def test_cli_xlim_is_honoured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    relusym.save(Network([[1, -2, 1]], [[1], [1], [-1]], [0, -1, 3]), tmp_path / "s.json")
    code, d, _ = _plot(capsys, str(tmp_path / "s.json"), "-o", str(tmp_path / "s.svg"), "--xlim", "-5:7")
    assert code == 0 and d is not None and d["window"] == [[-5.0, 7.0]]
    assert (tmp_path / "s.svg").read_bytes().lstrip().startswith(b"<?xml")


@pytest.mark.slow
def test_cli_window_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    V, A, b = trained_like()
    relusym.save(Network(V, A, b), tmp_path / "t.json")
    net, png = str(tmp_path / "t.json"), str(tmp_path / "t.png")
    code, d, _ = _plot(capsys, net, "-o", png)
    assert code == 0 and d is not None
    ((lo, hi),) = d["window"]
    assert [lo, hi] == list(plot.auto_domain(Network(V, A, b))[0])
    relusym.save(Network([[1, -2, 1]], [[1], [1], [-1]], [0, -1, 3]), tmp_path / "s.json")
    net = str(tmp_path / "s.json")
    for argv, want in (
        (("--xlim", "-5:7"), [-5.0, 7.0]),
        (("--xlim=-1/2:3",), [-0.5, 3.0]),
        (("--box", "-2:2"), [-2.0, 2.0]),
        (("--domain", "0:1"), [0.0, 1.0]),
    ):
        code, d, _ = _plot(capsys, net, "-o", png, *argv)
        assert code == 0 and d is not None and d["window"] == [want], argv
    # an NNet file's input box
    relusym.save(Network([[1]], [[1]], [0]), tmp_path / "box.nnet")
    lines = (tmp_path / "box.nnet").read_text().splitlines()
    lines[4], lines[5] = "-3,", "0.25,"
    (tmp_path / "box.nnet").write_text("\n".join(lines) + "\n")
    code, d, _ = _plot(capsys, net, "-o", png, "--box-from", str(tmp_path / "box.nnet"))
    assert code == 0 and d is not None and d["window"] == [[-3.0, 0.25]]
    # m = 2: the box in both coordinates
    relusym.save(Network([[1, -1]], [[1, 0], [1, 1]], [0, -1]), tmp_path / "two.json")
    code, d, _ = _plot(capsys, str(tmp_path / "two.json"), "-o", png, "--box=-1:3")
    assert code == 0 and d is not None and d["window"] == [[-1.0, 3.0], [-1.0, 3.0]]
    # a deep m = 1 network
    relusym.save(MLP([[[1], [-1]], [[1, 1]], [[2]]], [[0, 1], [-1], [0]]), tmp_path / "deep.json")
    code, d, _ = _plot(capsys, str(tmp_path / "deep.json"), "-o", png, "--xlim", "-4:4")
    assert code == 0 and d is not None and d["window"] == [[-4.0, 4.0]]


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (("--xlim", "3:1"), "--xlim"),
        (("--xlim", "1"), "--xlim"),
        (("--xlim", "a:b"), "--xlim"),
        (("--xlim", "nan:1"), "--xlim"),
        (("--xlim", "0:1e400"), "--xlim"),
        (("--xlim", "0:1", "--box", "0:1"), "not both"),
        (("--box", "2:1"), "empty"),
        (("--box", "zero"), "--box"),
    ],
)
def test_cli_bad_windows_exit_2_with_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], word: str
) -> None:
    relusym.save(Network([[1]], [[1]], [0]), tmp_path / "n.json")
    out = tmp_path / "n.png"
    code, d, err = _plot(capsys, str(tmp_path / "n.json"), "-o", str(out), *argv)
    assert code == 2 and d is None and word in err and err.count("\n") == 1, err
    assert not out.exists()


def test_cli_windows_that_do_not_fit_the_network(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    relusym.save(Network([[1, 1]], [[1, 0], [0, 1]], [0, 0]), tmp_path / "two.json")
    relusym.save(Network([[1]], [[1, 0, 2]], [0]), tmp_path / "three.json")
    png = str(tmp_path / "x.png")
    code, _, err = _plot(capsys, str(tmp_path / "two.json"), "-o", png, "--xlim", "0:1")
    assert code == 2 and "m = 1" in err and err.count("\n") == 1
    code, _, err = _plot(capsys, str(tmp_path / "three.json"), "-o", png, "--box", "0:1")
    assert code == 2 and "m ≤ 2" in err and err.count("\n") == 1
