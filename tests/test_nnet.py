"""The NNet format: files written here by a minimal writer of the published layout, read back by relusym; files
relusym writes, read by an independent minimal parser; both compared by exact evaluation."""

from __future__ import annotations

import random
import warnings
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

import relusym
from relusym import Network, equivalent
from relusym.cli import main
from relusym.errors import InvalidNetworkError, NNetClampWarning, UnsupportedModelError

from strategies import random_decimal, random_nnet_layers

# ----------------------------------------------------------------------------------------------------------
# an independent minimal writer and parser of the format


def write_nnet(path: Path, layers, mins, maxs, means, ranges, header=("// a test network", "// two lines")) -> None:
    """The published layout: header, sizes, layer sizes, flag, min, max, mean, range, then each layer's rows
    and biases.  Values are written as given (strings keep decimals exact)."""
    sizes = [len(layers[0][0][0])] + [len(W) for W, _ in layers]
    lines = list(header)
    lines.append(f"{len(layers)},{sizes[0]},{sizes[-1]},{max(sizes)},")
    lines.append(",".join(map(str, sizes)) + ",")
    lines.append("0,")
    for vals in (mins, maxs, means, ranges):
        lines.append(",".join(map(str, vals)) + ",")
    for W, bias in layers:
        for row in W:
            lines.append(", ".join(map(str, row)) + ",")
        for v in bias:
            lines.append(f"{v},")
    path.write_text("\n".join(lines) + "\n")


def parse_nnet(path: Path) -> dict:
    """Read an NNet file (independently of relusym): exact Fractions from the decimal text."""
    rows = [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.strip().startswith("//")]

    def vals(s: str) -> list[F]:
        return [F(x) for x in s.split(",") if x.strip()]

    L, m, k, _ = (int(x) for x in vals(rows[0]))
    sizes = [int(x) for x in vals(rows[1])]
    mins, maxs, means, ranges = (vals(rows[i]) for i in (3, 4, 5, 6))
    pos = 7
    layers = []
    for li in range(L):
        W = [vals(rows[pos + r]) for r in range(sizes[li + 1])]
        pos += sizes[li + 1]
        bias = [vals(rows[pos + r])[0] for r in range(sizes[li + 1])]
        pos += sizes[li + 1]
        layers.append((W, bias))
    return {"m": m, "k": k, "mins": mins, "maxs": maxs, "means": means, "ranges": ranges, "layers": layers}


def nnet_eval(d: dict, x: list[F], clamp: bool = True) -> list[F]:
    """The NNet semantics: clamp, normalise, ReLU layers, identity output layer, denormalise."""
    m = d["m"]
    z = [min(max(xi, lo), hi) if clamp else xi for xi, lo, hi in zip(x, d["mins"], d["maxs"], strict=True)]
    z = [(zi - d["means"][j]) / d["ranges"][j] for j, zi in enumerate(z)]
    for li, (W, bias) in enumerate(d["layers"]):
        z = [sum((w * zj for w, zj in zip(row, z, strict=True)), F(0)) + bi for row, bi in zip(W, bias, strict=True)]
        if li < len(d["layers"]) - 1:
            z = [v if v > 0 else F(0) for v in z]
    return [v * d["ranges"][m] + d["means"][m] for v in z]


def load_quiet(path) -> Network:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NNetClampWarning)
        return relusym.load(path)


# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_read_folds_the_normalisation_exactly(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    m, n, k = rng.randint(1, 4), rng.randint(1, 6), rng.randint(1, 3)
    layers = random_nnet_layers(rng, m, n, k)
    mins = [f"-{rng.randint(1, 9)}.5" for _ in range(m)]
    maxs = [f"{rng.randint(1, 9)}.25" for _ in range(m)]
    means = [random_decimal(rng) for _ in range(m + 1)]
    ranges = [f"{rng.randint(1, 400) / 8}" for _ in range(m + 1)]
    p = tmp_path / "net.nnet"
    write_nnet(p, layers, mins, maxs, means, ranges)
    with pytest.warns(NNetClampWarning, match="clamping"):
        net = relusym.load(p)
    assert net.shape == (m, n, k)
    d = parse_nnet(p)
    box = relusym.io.input_box(p)
    assert box.lo == tuple(F(x) for x in mins) and box.hi == tuple(F(x) for x in maxs)
    for _ in range(20):
        x = [lo + (hi - lo) * F(rng.randint(0, 64), 64) for lo, hi in zip(box.lo, box.hi, strict=True)]
        assert list(net.evaluate_exact(x)) == nnet_eval(d, x)  # inside the box the clamp is the identity
        far = [xi * 10 for xi in x]
        assert list(net.evaluate_exact(far)) == nnet_eval(d, far, clamp=False)  # the realization map: no clamp


def test_refuses_other_depths_and_bad_files(tmp_path: Path) -> None:
    rng = random.Random(1)
    W = random_nnet_layers(rng, 2, 3, 3)
    deep = W[:1] + [([[random_decimal(rng) for _ in range(3)] for _ in range(3)], ["0"] * 3)] + W[1:]
    p = tmp_path / "deep.nnet"
    write_nnet(p, deep, ["0"] * 2, ["1"] * 2, ["0"] * 3, ["1"] * 3)
    net = load_quiet(p)  # deep: read as an MLP (tests/test_io_deep.py)
    assert net.widths == (2, 3, 3, 3)
    for x in ([F(1, 3), F(-2)], [F(0), F(5, 7)]):
        assert list(net.evaluate_exact(x)) == nnet_eval(parse_nnet(p), x, clamp=False)
    p = tmp_path / "flat.nnet"
    write_nnet(p, W[:1], ["0"] * 2, ["1"] * 2, ["0"] * 3, ["1"] * 3)
    with pytest.raises(UnsupportedModelError, match="1 layer"):
        relusym.load(p)
    p = tmp_path / "bad.nnet"
    write_nnet(p, random_nnet_layers(rng, 2, 3, 1), ["0", "0"], ["1"], ["0"] * 3, ["1"] * 3)
    with pytest.raises(InvalidNetworkError, match="line 7.*maxima.*2 value"):
        relusym.load(p)
    p = tmp_path / "zero.nnet"
    write_nnet(p, random_nnet_layers(rng, 2, 3, 1), ["0", "0"], ["1", "1"], ["0"] * 3, ["1", "0", "1"])
    with pytest.raises(InvalidNetworkError, match="range of input 1 is 0"):
        relusym.load(p)
    p = tmp_path / "word.nnet"
    write_nnet(p, [([["1", "x"]], ["0"]), ([["1"]], ["0"])], ["0", "0"], ["1", "1"], ["0"] * 3, ["1"] * 3)
    with pytest.raises(InvalidNetworkError, match="'x'"):
        relusym.load(p)
    p = tmp_path / "short.nnet"
    p.write_text("// header\n2,1,1,1,\n1,1,1,\n0,\n0,\n1,\n0,0,\n1,1,\n2,\n")
    with pytest.raises(InvalidNetworkError, match="ends before"):
        relusym.load(p)
    assert main(["equiv", str(p), str(p)]) == 2


def test_write_is_read_by_an_independent_parser(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    nets = [
        Network(
            rng.standard_normal((2, 5)).astype(np.float32),
            rng.standard_normal((5, 3)).astype(np.float32),
            rng.standard_normal(5).astype(np.float32),
            rng.standard_normal(2).astype(np.float32),
        ),
        Network([["0.1", "-2.5e-3"]], [["1/8", "3"], ["-0.75", "0"]], ["12.5", "-1/1024"], ["1e-9"]),
    ]
    for i, net in enumerate(nets):
        p = tmp_path / f"out{i}.nnet"
        relusym.save(net, p)
        d = parse_nnet(p)
        for _ in range(10):
            x = [F(int(rng.integers(-50, 50)), int(rng.integers(1, 9))) for _ in range(net.m)]
            assert list(net.evaluate_exact(x)) == nnet_eval(d, x)
        back = load_quiet(p)
        assert back.to_fractions() == net.to_fractions()


def test_write_refuses_what_decimals_cannot_hold(tmp_path: Path) -> None:
    net = Network([["1/3"]], [[1]], [0])
    p = tmp_path / "third.nnet"
    with pytest.raises(InvalidNetworkError, match="1/3 has no finite decimal"):
        relusym.save(net, p)
    assert not p.exists() and not list(tmp_path.iterdir())  # nothing half-written
    from relusym.io import _nnet_format

    _nnet_format.save(net, p, allow_rounding=True)
    written = parse_nnet(p)["layers"][1][0][0][0]
    assert written != F(1, 3) and float(written) == float(F(1, 3))  # rounded to the nearest double's decimal


def test_like_keeps_the_bounds_and_box_from_decides(tmp_path: Path) -> None:
    # ρ1 = σ(x) on [0, 1]; ρ2 = σ(x) + σ(x − 2): equal on the file's box [0, 1], not on ℝ
    orig = tmp_path / "orig.nnet"
    write_nnet(orig, [([["1"]], ["0"]), ([["1"]], ["0"])], ["0"], ["1"], ["0", "0"], ["1", "1"])
    other = tmp_path / "other.nnet"
    relusym.save(Network([[1, 1]], [[1], [1]], [0, -2]), other, like=orig)
    assert relusym.io.input_box(other) == relusym.io.input_box(orig)
    n1, n2 = load_quiet(orig), load_quiet(other)
    assert not equivalent(n1, n2)
    assert bool(equivalent(n1, n2, domain=relusym.io.input_box(orig)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NNetClampWarning)
        assert main(["equiv", str(orig), str(other), "--box-from", str(orig)]) == 0
        assert main(["equiv", str(orig), str(other)]) == 1
        assert main(["equiv", str(orig), str(other), "--box=0:3"]) == 1
