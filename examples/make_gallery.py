"""Render the pictures of docs/gallery.md into docs/gallery/*.png (needs matplotlib: relusym[plot]).

Run from anywhere:  python examples/make_gallery.py  [output folder]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from relusym import Network, flip
from relusym.plot import plot_to_file

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = Path(__file__).resolve().parent
DPI = 85


def example(name: str) -> Network:
    """A worked example network (docs/math/examples.md), from examples/*.json."""
    return Network.from_dict(json.loads((EXAMPLES / f"{name}.json").read_text()))


def spec_network(name: str) -> Network:
    """A worked example network (E1–E16, docs/math/examples.md) from the test data."""
    data = json.loads((ROOT / "tests" / "data" / "spec_examples.json").read_text())
    return Network.from_dict(data["networks"][name]["network"])


def main(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def draw(nets: list[Network], name: str, labels: list[str], **kw: object) -> None:
        path = out / f"{name}.png"
        plot_to_file(nets, path, labels=labels, dpi=DPI, **kw)
        written.append(path)

    e2 = example("e2")
    # E2 and its flip T = {1, 2}: the same function, not in the same H_n-orbit
    assert example("e2_flipped") == flip(e2, [0, 1])
    draw([e2, example("e2_flipped")], "e2_flip", ["E2 (examples/e2.json)", "examples/e2_flipped.json"])
    # E3: |x| = σ(x) + σ(−x)
    draw([example("e3")], "e3_abs", ["E3: |x| = σ(x) + σ(−x)"])
    # E4: σ(x) − σ(−x) = x, and the offset-shifted pair of E4 (O6)
    e4b = Network([[2, "-1/2"]], [["1/2"], [-2]], [3, -12], [-6])
    draw([example("e4"), e4b], "e4_affine_pair", ["E4: σ(x) − σ(−x) = x", "shifted pair (O6), c = −6"])
    # E12: the four orbits of the fibre
    e12 = [
        example("e12"),
        Network([[4, -2, 3]], [[1], [-1], [-1]], [0, 0, 1], [-3]),
        Network([[2, 2, 1]], [[1], [1], [-1]], [0, -1, 1], [-1]),
        Network([[2, 4, -1]], [[-1], [1], [-1]], [0, -1, 1], [1]),
    ]
    draw(e12, "e12_four_orbits", ["E12", "second orbit", "third orbit", "fourth orbit"])
    # m = 2: E13 and the equivalent network with a cancelling pair
    e13b = Network([[2, 3, -1, 1]], [[1, 0], [0, 1], [1, 2], [-1, -2]], [0, 0, 1, -1], [1])
    draw([example("e13"), e13b], "e13_arrangement", ["E13", "two singles + a cancelling pair, c = 1"])
    # m = 3: a slice through a random network with integer weights
    rng = np.random.default_rng(3)
    V = rng.integers(-3, 4, size=(1, 5))
    A = rng.integers(-2, 3, size=(5, 3))
    A[A.sum(axis=1) == 0, 0] = 1
    b = rng.integers(-2, 3, size=5)
    net3 = Network(V.tolist(), A.tolist(), b.tolist(), [0])
    draw([net3], "m3_slice", ["a random 3-5-1 network"])
    # a counterexample: E2 against its flip without the bias correction (c = 0)
    draw([e2, example("e2_flipped_wrong_bias")], "counterexample", ["E2", "flip with c = 0 (wrong bias)"])
    # the same in the plane: E6 against E7 (one output weight changed)
    draw([spec_network("E6"), spec_network("E7")], "counterexample_m2", ["E6", "E7 (v₃ = −1)"])
    # a large float network: 1-1000-1, contributions capped
    big = Network(rng.standard_normal((1, 1000)), rng.standard_normal((1000, 1)), rng.standard_normal(1000))
    draw([big], "large_n", ["random float network, n = 1000 (window x ∈ [−4, 4])"], domain=[(-4, 4)])
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "gallery"
    for p in main(target):
        print(f"{p}  {p.stat().st_size // 1024} KB")
