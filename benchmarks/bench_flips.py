"""Benchmarks of relusym._fibre.flipsearch: flip sets, the hidden symmetries behind genericity condition (G-c).

See docs/math/hidden-symmetries.md for the mathematics.

Shapes are written m-n-k (inputs, hidden neurons, outputs); weights are float32 draws from N(0, 1), read at
their exact binary values.  Rows:

* rank certificate, 784-4096-10: the 4096 rows vec(v_i a_iᵀ) of the 4096 × 7840 flip matrix are independent
  modulo a prime (recursive LU with exact float64 BLAS products), so there is no flip set.  Also the time
  of building the flip matrix in factored form, and of materialising it as Python ints (optional).
* k-tree, 1-1000-1 and 2-1000-1: k·m = d is tiny, 2^1000 subsets against ~60·d bits: flip sets exist, and
  the generalized-birthday search on the exact integers finds some.
* frontier: n ∈ {1000, 4096} and d = m ∈ {1, 2, 3, 4} (k = 1): is a flip set found within the budget?
* --frontier: for each n, d = k·m = 1, 2, 3, ... (k = 1, m = d; weights N(0, 1)/sqrt(fan-in) as in
  benchmarks/bench_speed.py) until no flip set is found within the budget (10 s by default): the largest
  k·m reached, as a table.

Every flip set found is checked again here with Fractions of the original weights.

Run:  python benchmarks/bench_flips.py                 (everything, 60 s budget per frontier case)
      python benchmarks/bench_flips.py --quick         (certificate and the two k-tree rows)
      python benchmarks/bench_flips.py --frontier      (the frontier table, 10 s per case)
      OPENBLAS_NUM_THREADS=1 python benchmarks/bench_flips.py   (recommended on a one-core machine)
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

from relusym._fibre import flipsearch as fs


def exact_zero(V: np.ndarray, A: np.ndarray, T: tuple[int, ...]) -> bool:
    k, m = V.shape[0], A.shape[1]
    return all(
        sum(Fraction(float(V[j, i])) * Fraction(float(A[i, l])) for i in T) == 0 for j in range(k) for l in range(m)
    )


def net(rng: np.random.Generator, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal((k, n)).astype(np.float32), rng.standard_normal((n, m)).astype(np.float32)


def row(case: str, secs: float, result: str) -> tuple[str, str, str]:
    return (case, f"{secs:8.2f}", result)


def bench_certificate(rng: np.random.Generator, materialise: bool) -> list[tuple[str, str, str]]:
    V, A = net(rng, 784, 4096, 10)
    out = []
    t = time.perf_counter()
    F = fs.flip_factors(V, A)
    out.append(row("784-4096-10 flip_factors", time.perf_counter() - t, f"shape {F.shape}"))
    t = time.perf_counter()
    res = fs.find_flip_sets(F)
    secs = time.perf_counter() - t
    msg = f"count={res.count} complete={res.complete}: {res.certificate}"
    out.append(row("784-4096-10 find_flip_sets", secs, msg))
    if materialise:
        t = time.perf_counter()
        X = fs.flip_matrix(V, A)
        out.append(row("784-4096-10 flip_matrix", time.perf_counter() - t, f"dtype {X.dtype}, {X.shape}"))
        del X
    return out


def bench_search(rng: np.random.Generator, m: int, n: int, k: int, budget: float) -> tuple[str, str, str]:
    V, A = net(rng, m, n, k)
    t = time.perf_counter()
    res = fs.network_flip_sets(V, A, budget=budget, max_sets=20)
    secs = time.perf_counter() - t
    ok = all(exact_zero(V, A, T) for T in res.sets)
    if res.sets:
        sizes = sorted(len(T) for T in res.sets)
        msg = f"found {len(res.sets)} verified={ok} sizes {sizes[0]}..{sizes[-1]}"
    else:
        msg = "none found"
    est = res.count_estimate_log2
    msg += f"; est. 2^{est:.0f} flip sets" if est is not None else ""
    info = ""
    if res.undecided and "(k-tree: " in res.undecided:
        info = res.undecided.split("(k-tree: ")[-1]
        info = info[:-1] if info.endswith(")") else info
    if info:
        msg += f"; {info}"
    return row(f"{m}-{n}-{k} (d={k * m})", secs, msg)


def scaled_net(rng: np.random.Generator, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 weights N(0, 1)/sqrt(fan-in), as ``random_net`` in benchmarks/bench_speed.py."""
    V = (rng.standard_normal((k, n)) / np.sqrt(n)).astype(np.float32)
    A = (rng.standard_normal((n, m)) / np.sqrt(m)).astype(np.float32)
    return V, A


def frontier(widths: list[int], budget: float, seeds: int, dmax: int) -> None:
    """For each n, k·m = d = 1, 2, ... until no seed finds a flip set within the budget."""
    print(f"frontier: k = 1, m = d, float32 N(0, 1)/sqrt(fan-in), budget {budget:g} s per case, {seeds} seed(s)\n")
    print("| n | k·m | found (seeds) | seconds to the verdict (each seed) | bits | tree |")
    print("|---|---|---|---|---|---|")
    reach: dict[int, int] = {}
    for n in widths:
        for d in range(1, dmax + 1):
            hits, secs, bits, tree = 0, [], "", ""
            for seed in range(seeds):
                V, A = scaled_net(np.random.default_rng(1000 * n + 10 * d + seed), d, n, 1)
                t = time.perf_counter()
                res = fs.network_flip_sets(V, A, budget=budget, max_sets=20)
                secs.append(time.perf_counter() - t)
                if res.sets and all(exact_zero(V, A, T) for T in res.sets):
                    hits += 1
                und = res.undecided or ""
                if "k-tree: " in und:
                    info = und.split("k-tree: ")[-1]
                    bits = info.split(" bits")[0].split()[-1] if " bits" in info else bits
                    if "out of reach" in info:  # the plan expects too little to be worth a round
                        tree = "not run: " + info.split("elements; ")[-1].split("; not run")[0]
                    else:
                        tree = info.split("), ")[-1].split(" round(s)")[0] + " round(s)"
            print(f"| {n} | {d} | {hits}/{seeds} | {', '.join(f'{x:.2f}' for x in secs)} | {bits} | {tree} |",
                  flush=True)  # fmt: skip
            if hits:
                reach[n] = d
            else:
                break
    print()
    for n in widths:
        print(f"n = {n}: largest k·m with flip sets found within {budget:g} s: {reach.get(n, 0)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per frontier case (default 60)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="only the certificate and the two k-tree rows")
    ap.add_argument("--materialise", action="store_true", help="also time flip_matrix on 784-4096-10")
    ap.add_argument("--dims", type=int, nargs="*", default=[1, 2, 3, 4], help="frontier values of d = m")
    ap.add_argument("--widths", type=int, nargs="*", default=[1000, 4096], help="frontier values of n")
    ap.add_argument("--frontier", action="store_true", help="only the frontier table (k·m = 1, 2, ... per n)")
    ap.add_argument("--seeds", type=int, default=3, help="networks per frontier case (default 3)")
    ap.add_argument("--dmax", type=int, default=6, help="largest k·m tried by --frontier")
    args = ap.parse_args()
    if args.frontier:
        frontier(args.widths, 10.0 if args.budget == 60.0 else args.budget, args.seeds, args.dmax)
        return
    rng = np.random.default_rng(args.seed)
    rows: list[tuple[str, str, str]] = []
    rows += bench_certificate(rng, args.materialise)
    rows.append(bench_search(rng, 1, 1000, 1, 10.0))
    rows.append(bench_search(rng, 2, 1000, 1, args.budget))
    if not args.quick:
        for n in args.widths:
            for d in args.dims:
                rows.append(bench_search(rng, d, n, 1, args.budget))
    w0 = max(len(r[0]) for r in rows)
    print(f"{'case':<{w0}}  {'seconds':>8}  result")
    print("-" * (w0 + 20))
    for case, secs, res in rows:
        print(f"{case:<{w0}}  {secs}  {res}")


if __name__ == "__main__":
    main()
