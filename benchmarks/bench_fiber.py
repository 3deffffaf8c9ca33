"""The fibre of large float networks: how fast ``fiber`` settles genericity, and what it finds.

Cases (random float32 weights from N(0, 1)):

* 784-4096-10: the rank certificate (an n×n minor of the 4096 × 7840 flip matrix, nonzero modulo a prime)
  proves (G-c), so the network is generic and its fibre is its free H_n-orbit.  Goal: well under a second.
* 1-1000-1 and 2-1000-1: the flip matrix has rank km < n, so hidden flips exist by counting; the flip-set
  search (generalized birthday on the exact integers) looks for them.  Goal: a verified flip set of 1-1000-1
  in under 10 s.
* planted flips: 784-4096-10 (and 1-200-1) with neuron 1 := (−v_0, a_0, b_1), so flipping {0, 1} preserves the
  function; fiber must find exactly that flip set (the kernel of the flip matrix is one block of two rows).
* planted duplicates: 784-4096-10 with 16 neurons replaced by positive multiples of others (same oriented
  hyperplane): not generic (G-b), not rigid (R2), w = n − 16, dimension N + 16·δ.

Every flip set reported is verified by flipping (normal forms compared) before it is counted.  Times are the
best of ``--repeat`` runs (the first call on a large matrix pays for memory allocation and BLAS start-up).

Run:  python benchmarks/bench_fiber.py            (all cases)
      python benchmarks/bench_fiber.py --quick    (784-4096-10 and 1-1000-1 only)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from relusym import Network, flip, normal_form
from relusym._fibre.fiber import Fiber, fiber


def random_net(rng: np.random.Generator, m: int, n: int, k: int) -> Network:
    f32 = np.float32
    return Network(
        rng.standard_normal((k, n)).astype(f32),
        rng.standard_normal((n, m)).astype(f32),
        rng.standard_normal(n).astype(f32),
        rng.standard_normal(k).astype(f32),
    )


def planted_flip(net: Network) -> Network:
    V, A = np.array(net.V, copy=True), np.array(net.A, copy=True)
    V[:, 1] = -V[:, 0]
    A[1] = A[0]
    return Network(V, A, net.b, net.c)


def planted_duplicates(net: Network, count: int) -> Network:
    A, b = np.array(net.A, copy=True), np.array(net.b, copy=True)
    A[:count] = 2 * A[count : 2 * count]
    b[:count] = 2 * b[count : 2 * count]
    return Network(net.V, A, b, net.c)


def describe(fb: Fiber, net: Network, verify: int) -> str:
    found = [T for T in (fb.flips or ()) if T]
    checked = 0
    for T in found[:verify]:
        assert normal_form(flip(net, T)) == normal_form(net), T
        checked += 1
    parts = []
    if fb.flips is not None:
        if fb.flip_count is not None:
            parts.append(f"|𝒯| = {fb.flip_count}")
        else:
            lg = fb.flip_count_estimate_log2
            est = f", est. ≈ 2^{lg:.0f}" if lg is not None else ""
            parts.append(f"|𝒯| ≥ {fb.flip_count_lower_bound}{est}")
        if found:
            sizes = sorted(len(T) for T in found)
            parts.append(f"{len(found)} flip set(s) (sizes {sizes[0]}..{sizes[-1]}), {checked} verified by flipping")
    if fb.undecided and fb.generic is None:
        parts.append("G-c undecided within budget")
    if fb.flips is None:
        parts.append(fb.generic_reason.split(" (")[0] + "; " + fb.rigid_reason.split(",")[0])
    return "; ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="784-4096-10 and 1-1000-1 only")
    ap.add_argument("--budget", type=float, default=10.0, help="seconds for the hard searches (default 10)")
    ap.add_argument("--verify", type=int, default=20, help="flip sets verified by flipping per case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=2, help="runs per case; the best time is shown (default 2)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    cases: list[tuple[str, Network]] = []
    big = random_net(rng, 784, 4096, 10)
    cases.append(("784-4096-10", big))
    cases.append(("1-1000-1", random_net(rng, 1, 1000, 1)))
    if not args.quick:
        cases.append(("2-1000-1", random_net(rng, 2, 1000, 1)))
        cases.append(("784-4096-10 planted flip", planted_flip(big)))
        cases.append(("1-200-1 planted flip", planted_flip(random_net(rng, 1, 200, 1))))
        cases.append(("784-4096-10 16 duplicates", planted_duplicates(big, 16)))
    fiber(random_net(rng, 8, 64, 4))  # warm up BLAS threads and imports
    header = (
        f"{'case':>26} | {'time':>7} | {'generic':>9} | {'rigid':>5} | {'width':>5} | {'dim':>6} | "
        f"{'orbits':>6} | found"
    )
    print(header)
    print("-" * len(header))
    for name, net in cases:
        dt = float("inf")
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            fb = fiber(net, budget=args.budget)
            dt = min(dt, time.perf_counter() - t0)

        def s(x: object) -> str:
            return "?" if x is None else str(x)

        print(
            f"{name:>26} | {dt:6.2f}s | {s(fb.generic):>9} | {s(fb.rigid):>5} | {s(fb.width):>5} | "
            f"{s(fb.dimension):>6} | {s(fb.orbits):>6} | {describe(fb, net, args.verify)}"
        )


if __name__ == "__main__":
    main()
