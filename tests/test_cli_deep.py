"""The command line on deep networks made by torch and on the ACAS Xu NNet files: canon, equiv (exit 0/1/4), orbit
and prune, each answer checked against the test's own exact oracle."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from relusym.cli import main

from deep_oracles import forward

torch = pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "acasxu"


def _sequential(seed: int, widths=(3, 6, 5, 2)) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    mods: list[torch.nn.Module] = []
    for i in range(len(widths) - 1):
        mods.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


def _layers(model: torch.nn.Sequential):
    lins = [m for m in model if isinstance(m, torch.nn.Linear)]
    return [
        (
            [[Fraction(v) for v in row] for row in lin.weight.detach().double().tolist()],
            [Fraction(v) for v in lin.bias.detach().double().tolist()],
        )
        for lin in lins
    ]


def _planted_copy(model: torch.nn.Sequential, seed: int) -> torch.nn.Sequential:
    """Permute and rescale (by powers of two: exact in float32) every hidden layer."""
    rng = np.random.default_rng(seed)
    out = _sequential(
        0, tuple([model[0].in_features] + [m.out_features for m in model if isinstance(m, torch.nn.Linear)])
    )
    lins = [m for m in model if isinstance(m, torch.nn.Linear)]
    new = [m for m in out if isinstance(m, torch.nn.Linear)]
    W = [lin.weight.detach().clone() for lin in lins]
    b = [lin.bias.detach().clone() for lin in lins]
    for ell in range(len(lins) - 1):
        n = W[ell].shape[0]
        perm = torch.tensor(rng.permutation(n))
        d = torch.tensor(2.0 ** rng.integers(-2, 3, n), dtype=torch.float32)
        W[ell] = (W[ell] * d[:, None])[perm]
        b[ell] = (b[ell] * d)[perm]
        W[ell + 1] = (W[ell + 1] / d[None, :])[:, perm]
    with torch.no_grad():
        for lin, w, bb in zip(new, W, b, strict=True):
            lin.weight.copy_(w)
            lin.bias.copy_(bb)
    return out


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_equiv_and_canon_on_torch_files(tmp_path: Path, capsys) -> None:
    a = _sequential(1)
    b = _planted_copy(a, 2)
    torch.save(a.state_dict(), tmp_path / "a.pt")
    torch.save(b.state_dict(), tmp_path / "b.pt")
    code, out = _run(capsys, "equiv", str(tmp_path / "a.pt"), str(tmp_path / "b.pt"), "--json")
    d = json.loads(out)
    assert code == 0 and d["status"] == "equal" and d["certificate"]["method"] == "symmetry"
    # canon: one digest for both files, and for the same network written as relusym JSON
    digests = []
    for name in ("a.pt", "b.pt"):
        code, out = _run(capsys, "canon", str(tmp_path / name), "--json")
        assert code == 0
        digests.append(json.loads(out)["digest"])
    assert digests[0] == digests[1]
    code, _ = _run(capsys, "prune", str(tmp_path / "a.pt"), "-o", str(tmp_path / "a.json"))
    assert code == 0
    code, out = _run(capsys, "canon", str(tmp_path / "a.json"), "--json")
    assert json.loads(out)["digest"] == digests[0]


def test_equiv_finds_a_one_ulp_change_with_an_exact_counterexample(tmp_path: Path, capsys) -> None:
    a = _sequential(3)
    c = _sequential(3)
    with torch.no_grad():
        w = c[2].weight
        w[1, 2] = torch.nextafter(w[1, 2], torch.tensor(10.0))
    torch.save(a.state_dict(), tmp_path / "a.pt")
    torch.save(c.state_dict(), tmp_path / "c.pt")
    code, out = _run(capsys, "equiv", str(tmp_path / "a.pt"), str(tmp_path / "c.pt"), "--json")
    d = json.loads(out)
    assert code == 1 and d["status"] == "different"
    x = [Fraction(v) for v in d["counterexample"]["x"]]
    ya, yc = forward(_layers(a), x), forward(_layers(c), x)
    assert ya != yc
    assert [str(v) for v in ya] == [str(Fraction(v)) for v in d["counterexample"]["y1"]]


def test_equiv_says_undecided_with_exit_4(tmp_path: Path, capsys) -> None:
    # σ(h2 − h1) with h1 = σ(x1) ≥ h2 = σ(x1 − 1) never fires: its outgoing weight does not matter, which no
    # reduction on ℝ^m proves
    def net(c: float) -> dict:
        return {
            "format": "relusym.mlp/1",
            "weights": [[[1, 0], [1, 0]], [[-1, 1], [1, 0]], [[c, 1]]],
            "biases": [[0, -1], [0, 0], [0]],
        }

    (tmp_path / "a.json").write_text(json.dumps(net(1)))
    (tmp_path / "b.json").write_text(json.dumps(net(5)))
    code, out = _run(capsys, "equiv", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--budget", "1")
    assert code == 4 and out.startswith("UNDECIDED")


def test_orbit_reports_per_layer_moves(tmp_path: Path, capsys) -> None:
    a = _sequential(4)
    b = _planted_copy(a, 5)
    torch.save(a.state_dict(), tmp_path / "a.pt")
    torch.save(b.state_dict(), tmp_path / "b.pt")
    code, out = _run(capsys, "orbit", str(tmp_path / "a.pt"), str(tmp_path / "b.pt"), "--json")
    d = json.loads(out)
    assert code == 0 and d["in_orbit"] and len(d["symmetry"]["layers"]) == 2
    code, _ = _run(capsys, "orbit", str(tmp_path / "a.pt"), str(tmp_path / "a.pt"))
    assert code == 0
    other = _sequential(6)
    torch.save(other.state_dict(), tmp_path / "o.pt")
    code, _ = _run(capsys, "orbit", str(tmp_path / "a.pt"), str(tmp_path / "o.pt"))
    assert code == 1


def test_prune_writes_a_smaller_torch_file_that_torch_reloads(tmp_path: Path, capsys) -> None:
    model = _sequential(7, (3, 5, 4, 2))
    with torch.no_grad():
        # unit 4 of layer 1 = 2 × unit 0 (merged); unit 3 of layer 2 has no output (removed)
        model[0].weight[4] = 2 * model[0].weight[0]
        model[0].bias[4] = 2 * model[0].bias[0]
        model[2].weight[:, 4] = torch.tensor([0.5, -0.25, 1.0, 2.0])
        model[4].weight[:, 3] = 0.0
        model[2].weight[:, 0] = torch.tensor([1.0, 0.5, -1.5, 0.25])
    torch.save(model.state_dict(), tmp_path / "big.pt")
    code, out = _run(capsys, "prune", str(tmp_path / "big.pt"), "-o", str(tmp_path / "small.pt"), "--json")
    d = json.loads(out)
    assert code == 0 and d["widths"] == [3, 4, 3, 2] and d["write"]["exact"]
    state = torch.load(tmp_path / "small.pt", weights_only=True)
    small = _sequential(0, (3, 4, 3, 2))
    small.load_state_dict(state)
    rng = random.Random(0)
    for _ in range(20):
        x = [Fraction(rng.randint(-40, 40), 8) for _ in range(3)]
        assert forward(_layers(model), x) == forward(_layers(small), x)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.nnet")))
def test_acas_xu_canon_and_equiv_with_itself(name: str, tmp_path: Path, capsys) -> None:
    path = str(DATA / name)
    code, out = _run(capsys, "canon", path, "--json")
    d = json.loads(out)
    assert code == 0 and d["widths"] == [5, 50, 50, 50, 50, 50, 50, 5]
    code, out = _run(capsys, "equiv", path, path, "--json")
    assert code == 0 and json.loads(out)["status"] == "equal"


def test_zoo_digests_and_groups_deep_files(tmp_path: Path, capsys) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    import relusym

    zoo = tmp_path / "zoo"
    zoo.mkdir()
    a = _sequential(8)
    torch.save(a.state_dict(), zoo / "a.pt")
    torch.save(_planted_copy(a, 9).state_dict(), zoo / "a_copy.pt")
    torch.save(_sequential(10).state_dict(), zoo / "other.pt")
    torch.save(_sequential(11, (3, 4, 2)).state_dict(), zoo / "shallow.pt")
    out = tmp_path / "zoo.parquet"
    code, _ = _run(capsys, "zoo", str(zoo), "-o", str(out), "--no-fibre", "--json")
    assert code == 0
    table = pq.read_table(out).to_pydict()
    rows = dict(zip(table["source"], range(len(table["source"])), strict=True))
    assert all(s == "ok" for s in table["status"])
    for name in rows:
        assert table["digest"][rows[name]] == relusym.normal_form(relusym.load(zoo / name)).digest()
    assert table["group"][rows["a.pt"]] == table["group"][rows["a_copy.pt"]] != table["group"][rows["other.pt"]]
    assert table["n"][rows["a.pt"]] == 11 and table["width"][rows["a.pt"]] is None


def test_plot_and_report_of_deep_files(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    import relusym
    from relusym._plots.deep import plot_deep

    from deep_oracles import layers_of, network_pwl

    net = relusym.MLP([[[1], [-1], [2]], [[1, 1, 0], [1, -1, 1]], [[1, -2]]], [[0, 0, -1], [-1, 0], [0]])
    (tmp_path / "m1.json").write_text(json.dumps(net.to_dict()))
    code, _ = _run(capsys, "plot", str(tmp_path / "m1.json"), "-o", str(tmp_path / "m1.png"))
    assert code == 0 and (tmp_path / "m1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the dots are the exact breakpoints: every point where the oracle's slope changes is among them
    fig = plot_deep([net])
    dots = {round(float(x), 12) for line in fig.axes[0].lines if line.get_marker() == "o" for x in line.get_xdata()}
    f = network_pwl(layers_of(net))[0]
    slopes = [f.left] + [(f.ys[i + 1] - f.ys[i]) / (f.xs[i + 1] - f.xs[i]) for i in range(len(f.xs) - 1)] + [f.right]
    kinks = {round(float(x), 12) for i, x in enumerate(f.xs) if slopes[i] != slopes[i + 1]}
    assert kinks and kinks <= dots
    code, _ = _run(capsys, "report", str(tmp_path / "m1.json"), "-o", str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert code == 0 and relusym.normal_form(net).digest() in page and "data:image/png;base64," in page


def _box_net() -> dict:
    # on [0, 1]²: unit 2 of layer 1 (x1 + x2 − 3) never fires there (it does beyond), unit 0 of layer 2 crosses
    return {
        "format": "relusym.mlp/1",
        "weights": [[[1, -1], [-1, 2], [1, 1]], [[1, 1, 5], [2, -1, 1]], [[1, -1]]],
        "biases": [[0, "1/4", -3], ["-1/2", 0], [0]],
    }


def test_units_prune_and_equiv_on_a_box(tmp_path: Path, capsys) -> None:
    import relusym

    (tmp_path / "n.json").write_text(json.dumps(_box_net()))
    code, out = _run(capsys, "units", str(tmp_path / "n.json"), "--box", "0:1", "--json")
    d = json.loads(out)
    assert code == 0 and d["statuses"][0][2] == "dead"
    code, out = _run(
        capsys, "prune", str(tmp_path / "n.json"), "--box", "0:1", "-o", str(tmp_path / "p.json"), "--json"
    )
    d = json.loads(out)
    assert code == 0 and d["widths"][1] == 2 and [1, 2] in d["dead_on_box"]
    big = relusym.load(tmp_path / "n.json")
    small = relusym.load(tmp_path / "p.json")
    grid = [Fraction(i, 8) for i in range(9)]
    assert all(big([x, y]) == small([x, y]) for x in grid for y in grid)  # equal on the box, exactly
    assert big([2, 2]) != small([2, 2])  # and only there: unit 2 fires at (2, 2)
    code, out = _run(
        capsys, "equiv", str(tmp_path / "n.json"), str(tmp_path / "p.json"), "--box", "0:1", "--budget", "1", "--json"
    )
    assert code in (0, 4) and json.loads(out)["status"] in ("equal", "undecided")
    code, out = _run(capsys, "equiv", str(tmp_path / "n.json"), str(tmp_path / "p.json"), "--json")
    assert code == 1 and json.loads(out)["status"] == "different"  # on all of ℝ² they differ
    # the verifiers' question on the box: |f − g| ≤ atol?
    other = _box_net()
    other["biases"][2] = ["1/1000"]
    (tmp_path / "o.json").write_text(json.dumps(other))
    code, out = _run(
        capsys,
        "equiv",
        str(tmp_path / "n.json"),
        str(tmp_path / "o.json"),
        "--box",
        "0:1",
        "--atol",
        "0.01",
        "--budget",
        "1",
        "--json",
    )
    d = json.loads(out)
    # the gap is 1/1000 everywhere: never "no"; "yes" once the upper bound is below 0.01, else "undecided"
    assert Fraction(d["lower"]) == Fraction(1, 1000) <= Fraction(d["upper"])
    assert (code, d["answer"]) in ((0, "yes"), (4, "undecided"))
    code, out = _run(
        capsys,
        "equiv",
        str(tmp_path / "n.json"),
        str(tmp_path / "o.json"),
        "--box",
        "0:1",
        "--atol",
        "0.0001",
        "--json",
    )
    d = json.loads(out)
    assert code == 1 and d["answer"] == "no"
    x = [Fraction(v) for v in d["point"]]
    assert abs(big(x)[0] - relusym.load(tmp_path / "o.json")(x)[0]) > Fraction(1, 10000)
