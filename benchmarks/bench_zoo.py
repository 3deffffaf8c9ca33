"""Normal-form digests of a model zoo: the vectorized stack path of relusym.zoo against a loop over
``normal_form(net).digest()``, which is what a user would otherwise write.

For every shape (m, n, k) it times both on the same random float32 networks (the loop on a subsample, since it is
the slow side), checks that the digests agree on that subsample, and reports networks per second, the ratio, and the
peak memory per network of the vectorized path (tracemalloc over one stack). Then it times the vectorized path alone
on growing zoos (10^4, 10^5, ... networks, generated chunk by chunk as a job would read them, 4096 per chunk) to
show how the time grows, wall clock and CPU time of this process. The machine's load matters: compare the ratios,
measured in one run. BLAS runs on one thread (set OPENBLAS_NUM_THREADS to override).

    python benchmarks/bench_zoo.py --quick
    python benchmarks/bench_zoo.py --growth 10000 100000 1000000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

# one BLAS thread for both sides: on a shared machine (and in a zoo job's worker processes) BLAS threads
# competing for busy cores make the small batched matrix products of the digests up to 100 times slower
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from relusym import Network, normal_form  # noqa: E402
from relusym._zoo._digest import stack_digests  # noqa: E402

SHAPES = ((2, 16, 1), (8, 64, 1), (64, 256, 10))


def stack(m: int, n: int, k: int, B: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((B, k, n)).astype(np.float32),
        rng.standard_normal((B, n, m)).astype(np.float32),
        rng.standard_normal((B, n)).astype(np.float32),
        rng.standard_normal((B, k)).astype(np.float32),
    )


def _vectorized(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[list[str | None], float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    digests = stack_digests(V, A, b, c).digest
    return digests, time.perf_counter() - t0, time.process_time() - c0


def compare(m: int, n: int, k: int, B: int, loop_count: int) -> dict[str, float]:
    V, A, b, c = stack(m, n, k, B, seed=m * 1000 + n)
    fast, t1, c1 = _vectorized(V, A, b, c)
    L = min(loop_count, B)
    t0, c0 = time.perf_counter(), time.process_time()
    ref = [normal_form(Network(V[i], A[i], b[i], c[i])).digest() for i in range(L)]
    t_loop, c_loop = time.perf_counter() - t0, time.process_time() - c0
    _, t2, c2 = _vectorized(V, A, b, c)  # before and after the loop: the faster (the machine's load drifts)
    t_vec, c_vec = min(t1, t2), min(c1, c2)
    if fast[:L] != ref:
        raise AssertionError(f"digests differ for {m}-{n}-{k}")
    per = min(B, 256)
    tracemalloc.start()
    stack_digests(V[:per], A[:per], b[:per], c[:per])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "vec": B / t_vec,
        "loop": L / t_loop,
        "cpu_ratio": (c_loop / L) / (c_vec / B),
        "mem": peak / per + V[0].nbytes + A[0].nbytes + 8 * (n + k),
    }


def growth(m: int, n: int, k: int, total: int, chunk: int) -> tuple[float, float]:
    """Wall-clock and CPU seconds of the vectorized digests of ``total`` networks, chunk by chunk."""
    t = cpu = 0.0
    done = 0
    seed = 0
    while done < total:
        B = min(chunk, total - done)
        V, A, b, c = stack(m, n, k, B, seed)
        t0, c0 = time.perf_counter(), time.process_time()
        sd = stack_digests(V, A, b, c)
        t += time.perf_counter() - t0
        cpu += time.process_time() - c0
        if not sd.fast.all():
            raise AssertionError("a random float32 network left the vectorized path")
        done += B
        seed += 1
    return t, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    p.add_argument("--growth", type=int, nargs="*", default=None, help="zoo sizes for the growth table (8-64-1)")
    args = p.parse_args()
    sizes = {(2, 16, 1): (4000, 400), (8, 64, 1): (2000, 200), (64, 256, 10): (40, 8)}
    if args.quick:
        sizes = {(2, 16, 1): (2000, 200), (8, 64, 1): (1000, 100), (64, 256, 10): (20, 4)}
    print(
        "| shape m-n-k | vectorized (networks/s) | loop over normal_form(net).digest() (networks/s) | ratio | "
        "ratio (CPU time) | memory per network (vectorized, peak) |"
    )
    print("|---|---|---|---|---|---|")
    for shape in SHAPES:
        B, L = sizes[shape]
        r = compare(*shape, B, L)
        print(
            f"| {'-'.join(map(str, shape))} | {r['vec']:,.0f} | {r['loop']:,.0f} | {r['vec'] / r['loop']:.1f}× | "
            f"{r['cpu_ratio']:.1f}× | {r['mem'] / 1024:.1f} KiB |"
        )
    sizes_g = args.growth if args.growth is not None else ([10_000] if args.quick else [10_000, 100_000])
    if sizes_g:
        print(
            "\n| networks (8-64-1) | vectorized digest time (wall) | µs per network (wall) | networks/s | "
            "CPU µs per network |"
        )
        print("|---|---|---|---|---|")
        for total in sizes_g:
            t, cpu = growth(8, 64, 1, total, 4096)
            print(
                f"| {total:,} | {t:.1f} s | {t / total * 1e6:.0f} | {total / t:,.0f} | {cpu / total * 1e6:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
