"""Align a permuted, positively rescaled, noisy copy of a network: relusym.align against weight matching.

Weight matching (as in Git Re-Basin) solves an n×n linear assignment (scipy.optimize.linear_sum_assignment)
on the similarity matrix of the neuron rows [a_i | b_i | v_i]; it assumes the copy is only permuted.
``align`` matches scale-invariant neuron coordinates by nearest-neighbour search (cKDTree), no n×n matrix.

For every shape (m, n, k), log-normal scale spread σ and relative noise, the table gives the fraction of
neurons sent to their planted partner and the time of each method, and the ratio of the times.  The
assignment is skipped (and the table says so) when its n×n matrix would not fit the memory budget or n is
above ``--max-assign-n``.

    python benchmarks/bench_align.py --quick
    python benchmarks/bench_align.py --m 2 10 64 784 --n 1000 8000 30000 100000 --k 1 10 --sigma 0 1 3
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from relusym._core.network import Network  # noqa: E402
from relusym._tolerance.alignment import align  # noqa: E402


def planted_pair(m: int, n: int, k: int, sigma: float, noise: float, seed: int) -> tuple[Network, Network, np.ndarray]:
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((k, n))
    A = rng.standard_normal((n, m))
    b = rng.standard_normal(n)
    c = rng.standard_normal(k)
    perm = rng.permutation(n)
    d = np.exp(sigma * rng.standard_normal(n))
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    V2, A2, b2 = (V / d)[:, inv], (A * d[:, None])[inv], (b * d)[inv]
    if noise:
        V2 *= 1 + noise * rng.standard_normal(V2.shape)
        A2 *= 1 + noise * rng.standard_normal(A2.shape)
        b2 *= 1 + noise * rng.standard_normal(b2.shape)
    return Network(V, A, b, c), Network(V2, A2, b2, c), perm


def weight_matching(net1: Network, net2: Network) -> np.ndarray:
    """Git Re-Basin style: maximise Σ_i <row_i(θ1), row_π(i)(θ2)> over permutations, rows [a | b | v]."""
    from scipy.optimize import linear_sum_assignment

    def rows(net: Network) -> np.ndarray:
        V, A, b, _ = net.to_float()
        return np.concatenate([A, b[:, None], V.T], axis=1)

    S = rows(net1) @ rows(net2).T
    _, cols = linear_sum_assignment(S, maximize=True)
    return np.asarray(cols)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, nargs="+", default=[2, 10, 64, 784])
    p.add_argument("--n", type=int, nargs="+", default=[1000, 8000, 30000, 100000])
    p.add_argument("--k", type=int, nargs="+", default=[1, 10])
    p.add_argument("--sigma", type=float, nargs="+", default=[0.0, 1.0, 3.0], help="log-normal scale spread")
    p.add_argument("--noise", type=float, nargs="+", default=[0.0, 1e-6], help="relative Gaussian noise")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a small subset: m ∈ {2, 64}, n ∈ {1000, 3000}, k = 1, σ ∈ {0, 3}, noise ∈ {0, 1e-6}",
    )
    p.add_argument("--max-assign-n", type=int, default=8000, help="skip the n×n assignment above this n")
    p.add_argument("--memory-gb", type=float, default=4.0, help="skip the assignment if n×n floats exceed this")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.quick:
        args.m, args.n, args.k, args.sigma, args.noise = [2, 64], [1000, 3000], [1], [0.0, 3.0], [0.0, 1e-6]

    warm1, warm2, _ = planted_pair(2, 20, 1, 0.0, 0.0, 0)  # imports and first calls outside the timings
    align(warm1, warm2)
    weight_matching(warm1, warm2)

    head = (
        f"{'m':>4} {'n':>7} {'k':>3} {'sigma':>5} {'noise':>7} | {'align ok':>9} {'align s':>8} | "
        f"{'assign ok':>9} {'assign s':>9} | {'ratio':>8}"
    )
    print(head)
    print("-" * len(head))
    for m in args.m:
        for n in args.n:
            for k in args.k:
                for sigma in args.sigma:
                    for noise in args.noise:
                        net1, net2, perm = planted_pair(m, n, k, sigma, noise, args.seed)
                        t0 = time.perf_counter()
                        al = align(net1, net2)
                        t_align = time.perf_counter() - t0
                        ok_align = float(np.mean(al.permutation == perm))
                        gb = n * n * 8 / 2**30
                        if n > args.max_assign_n or gb > args.memory_gb:
                            assign = f"{'skipped':>9} {f'n×n {gb:.0f}GB' if gb >= 1 else 'n>max':>9}"
                            ratio = "-"
                        else:
                            t0 = time.perf_counter()
                            cols = weight_matching(net1, net2)
                            t_lsa = time.perf_counter() - t0
                            assign = f"{np.mean(cols == perm):>9.4f} {t_lsa:>9.3f}"
                            ratio = f"{t_lsa / t_align:>7.1f}x"
                        print(
                            f"{m:>4} {n:>7} {k:>3} {sigma:>5g} {noise:>7g} | {ok_align:>9.4f} {t_align:>8.3f} | "
                            f"{assign} | {ratio:>8}",
                            flush=True,
                        )
                        del net1, net2, perm, al
                        gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
