"""The exact deep operations beside one float forward pass (the array fast paths of relusym._deep.dyadic).

On a random float32 MLP (weights N(0, 1)/√fan-in, biases N(0, 0.1²)) each row is timed as the best of
``--repeat`` runs, in CPU time (this process, all threads) and in wall-clock time, and printed as a ratio to the
best of ``--repeat`` float32 forward passes of 1024 inputs through the same network (numpy, X @ Wᵀ + b and ReLU
per layer) measured in the same process:

* ``normal_form(θ)`` (the reductions checked, the canonical form built);
* ``normal_form(θ).digest()`` (the form and its SHA-256 text);
* ``prune(θ)`` (nothing applies: the float arrays are kept);
* ``equivalent(θ, h·θ)`` for h a random per-layer permutation with power-of-two scales (a planted copy, still
  float32): "equal" with its symmetry.

Every answer is checked (the verdict, the digests of θ and h·θ, the widths of the pruned network).  The load
average is printed with the table: on a shared machine the CPU-time ratio is the stable one.

Run:  python benchmarks/bench_deep_speed.py                      (784-512-512-512-10 and 5-50×6-5)
      python benchmarks/bench_deep_speed.py --shape 784-1024-1024-10 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import relusym
from relusym import MLP


def network(widths: list[int], seed: int) -> MLP:
    rng = np.random.default_rng(seed)
    Ws = [
        (rng.standard_normal((widths[i + 1], widths[i])) / np.sqrt(widths[i])).astype(np.float32)
        for i in range(len(widths) - 1)
    ]
    bs = [(rng.standard_normal(widths[i + 1]) * 0.1).astype(np.float32) for i in range(len(widths) - 1)]
    return MLP(Ws, bs)


def planted(net: MLP, seed: int) -> MLP:
    """h·θ for a random per-layer permutation and power-of-two scales (exact in float32)."""
    rng = np.random.default_rng(seed)
    Ws = [np.array(W) for W in net.weights]
    bs = [np.array(b) for b in net.biases]
    for ell in range(len(Ws) - 1):
        n = Ws[ell].shape[0]
        p = rng.permutation(n)
        s = (2.0 ** rng.integers(-3, 4, n)).astype(np.float32)
        Ws[ell] = (Ws[ell] * s[:, None])[p]
        bs[ell] = (bs[ell] * s)[p]
        Ws[ell + 1] = (Ws[ell + 1] / s[None, :])[:, p]
    return MLP(Ws, bs)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best CPU seconds, best wall seconds of ``repeat`` calls, and the last result."""
    cpu, wall, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return cpu, wall, out


def table(widths: list[int], repeat: int, seed: int) -> list[str]:
    net = network(widths, seed)
    copy = planted(net, seed + 1)
    X = np.random.default_rng(seed + 2).standard_normal((1024, widths[0])).astype(np.float32)
    layers = list(zip(net.weights, net.biases, strict=True))

    def forward() -> np.ndarray:
        H = X
        for ell, (W, b) in enumerate(layers):
            H = H @ W.T + b
            if ell < len(layers) - 1:
                H = np.maximum(H, 0)
        return H

    relusym.equivalent(network([3, 4, 4, 2], 0), network([3, 4, 4, 2], 0))  # imports and first-call costs
    fc, fw, _ = timed(forward, repeat)
    rows = [
        ("normal_form", lambda: relusym.normal_form(net)),
        ("digest", lambda: relusym.normal_form(net).digest()),
        ("prune", lambda: relusym.prune(net)),
        ("equivalent(θ, h·θ)", lambda: relusym.equivalent(net, copy)),
    ]
    shape = "-".join(map(str, widths))
    out = [
        f"### {shape} float32 ({net.num_parameters} parameters), load average {os.getloadavg()[0]:.2f}",
        "",
        f"forward pass of 1024 inputs: {fc * 1e3:.1f} ms CPU, {fw * 1e3:.1f} ms wall",
        "",
        "| operation | CPU s | wall s | CPU / forward | wall / forward |",
        "|---|---|---|---|---|",
    ]
    for name, fn in rows:
        c, w, res = timed(fn, repeat)
        check(name, res, net, copy)
        out.append(f"| {name} | {c:.3f} | {w:.3f} | {c / fc:.1f} | {w / fw:.1f} |")
    return out


def check(name: str, res: Any, net: MLP, copy: MLP) -> None:
    if name == "digest":
        assert res == relusym.normal_form(copy).digest(), "the planted copy has another digest"
    elif name == "prune":
        assert res.widths == net.widths
    elif name.startswith("equivalent"):
        assert res.status == "equal" and res.certificate.method == "symmetry", res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", help="widths such as 784-512-512-512-10 (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    shapes = args.shape or ["784-512-512-512-10", "5-" + "-".join(["50"] * 6) + "-5"]
    for s in shapes:
        print("\n".join(table([int(v) for v in s.split("-")], args.repeat, args.seed)))
        print()


if __name__ == "__main__":
    main()
