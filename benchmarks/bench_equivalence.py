"""Exact equivalence against what users reach for today, side by side in one process.

For each shape m-n-k: a random float32 network θ and h·θ for a random h ∈ H_n (a permutation with power-of-two
scales, so h·θ is exactly a float32 network).  Timed, each the best of ``--repeat`` runs:

* relusym ``equivalent(θ, h·θ)``: the exact decision with its certificate (the witness h);
* relusym ``equivalent(θ, h·θ, certificate=False)``: the normal-form comparison alone;
* relusym ``equivalent(θ, θ')`` for θ' = θ with one weight moved by one ulp: the exact "no" with a verified
  counterexample;
* weight matching: scipy ``linear_sum_assignment`` on the n×n similarity matrix of the rows [a_i | b_i | v_i]
  (as Git Re-Basin does), with the fraction of neurons it matches correctly;
* one float32 forward pass of 1024 inputs (numpy).

Run:  python benchmarks/bench_equivalence.py            (all shapes; assignment skipped above --max-lsa-n)
      python benchmarks/bench_equivalence.py --quick    (784-4096-10 only)
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best

from relusym import Network, Symmetry, equivalent


def weight_matching(net1: Network, net2: Network) -> np.ndarray:
    from scipy.optimize import linear_sum_assignment

    def rows(net: Network) -> np.ndarray:
        V, A, b, _ = net.to_float(np.float32)
        return np.concatenate([A, b[:, None], V.T], axis=1)

    S = rows(net1) @ rows(net2).T
    r, c = linear_sum_assignment(S, maximize=True)
    perm = np.empty(net1.n, dtype=np.int64)
    perm[r] = c
    return perm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only 784-4096-10")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-lsa-n", type=int, default=8192, help="skip the assignment above this n")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    shapes = [(784, 4096, 10)] if args.quick else [(784, 4096, 10), (64, 16384, 1), (2, 100000, 1)]
    rng = np.random.default_rng(args.seed)
    header = (
        f"{'shape':>14} | {'exact+cert':>10} | {'exact NF':>9} | {'exact no+cx':>11} | {'assignment':>10} "
        f"| {'LSA ok':>7} | {'fwd 1024':>9} | {'LSA/exact':>9} | {'exact/fwd':>9} | right"
    )
    print(header)
    print("-" * len(header))
    for m, n, k in shapes:
        f32 = np.float32
        net = Network(
            rng.standard_normal((k, n)).astype(f32),
            rng.standard_normal((n, m)).astype(f32),
            rng.standard_normal(n).astype(f32),
            rng.standard_normal(k).astype(f32),
        )
        h = Symmetry.random(n, int(rng.integers(2**31)), dyadic=True, spread=4)
        moved = h.act(net)
        assert moved.is_float and moved.A.dtype == np.float32
        t_cert, v = best(lambda: equivalent(net, moved), args.repeat)
        t_nf, v_nf = best(lambda: equivalent(net, moved, certificate=False), args.repeat)
        A2 = np.array(moved.A, copy=True)
        A2[0, 0] = np.nextafter(A2[0, 0], np.float32(np.inf))
        wrong = Network(moved.V, A2, moved.b, moved.c)
        t_no, v_no = best(lambda: equivalent(net, wrong), 1)
        ce = v_no.counterexample
        right = (
            bool(v)
            and v.witness == h
            and bool(v_nf)
            and not v_no
            and ce is not None
            and net.evaluate_exact(ce.x) != wrong.evaluate_exact(ce.x)
        )
        X = rng.standard_normal((1024, m)).astype(f32)
        V32, A32, b32, c32 = net.V, net.A, net.b, net.c
        t_fwd, _ = best(lambda: np.maximum(X @ A32.T + b32, 0) @ V32.T + c32, args.repeat)
        if n <= args.max_lsa_n:
            t_lsa, perm = best(lambda: weight_matching(net, moved), 1)
            ok = float(np.mean(perm == np.asarray(h.permutation)))
            lsa, lsa_ok, ratio = f"{t_lsa:9.3f}s", f"{ok:7.1%}", f"{t_lsa / t_cert:8.0f}x"
        else:
            gb = n * n * 8 / 1e9
            why = f"n×n={gb:.0f}GB" if gb > 8 else "O(n³)"
            lsa, lsa_ok, ratio = "skipped", "-", why
        print(
            f"{m}-{n}-{k:>2} | {t_cert:9.3f}s | {t_nf:8.3f}s | {t_no:10.3f}s | {lsa:>10} | {lsa_ok:>7} "
            f"| {t_fwd:8.3f}s | {ratio:>9} | {t_cert / t_fwd:8.2f}x | {right}",
            flush=True,
        )


if __name__ == "__main__":
    main()
