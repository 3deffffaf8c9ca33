"""Every exact answer beside one float forward pass, in one process (issue 14's table).

On a random float32 network θ of shape m-n-k (default 784-4096-10, weights N(0, 1) / √fan-in) every row is
timed as the best of ``--repeat`` runs and printed as a ratio to the best of ``--repeat`` numpy float32 forward
passes of 1024 inputs (X @ Aᵀ + b, ReLU, @ Vᵀ + c) measured in the same process:

* ``equivalent(θ, h·θ)`` with its witness (h a random permutation with power-of-two scales);
* ``equivalent(θ, θ')`` for θ' = θ with one weight moved by one ulp, a pivot entry a_00 and an entry off the
  pivot: the "no" and its verified counterexample;
* ``equivalent(θ, noisy copy)``: every weight of θ multiplied by 1 + ε, |ε| log-uniform in [1e-9, 1e-3];
* ``normal_form(θ).digest()`` (from the network, classes included; checked against the digest computed from
  another thread, which encodes in one thread);
* ``relusym canon net.npz --json``, end to end in a fresh process, against a fresh process that loads the same
  file with numpy and runs one 1024-input forward pass (after one warm-up run, with bytecode caching on, as a
  user's Python has it);
* ``prune(θ)`` (a float network keeps its float scales: what ``relusym prune`` writes) and ``prune(θ,
  canonical=True)`` (the canonical minimal network: primitive integer rows, exact) on θ (nothing prunes), and on
  θ with planted duplicates (a neuron split in two) and dead neurons;
* ``memory``: the peak memory that ``prune(θ)``, ``prune(θ, canonical=True)``, ``equivalent(θ, h·θ)`` (with its
  witness), ``equivalent`` against h·θ with one weight one ulp off (“no” and its counterexample), ``equivalent``
  without a certificate and the digest allocate (tracemalloc, numpy's allocations included), beside the size
  of θ's own weights, and the peak less what the result keeps (the temporaries);
* ``startup``: ``import relusym`` against ``import numpy`` (``python -X importtime``, each the best of
  ``--repeat`` fresh processes), with a bytecode cache and without one;
* ``fiber`` on random float32 1-1000-1 and 2-1000-1 networks (the flip search, default budget): seconds, the
  number of flip sets found and the genericity verdict (these rows are not ratios).

Ratios are given in wall-clock time and in CPU time (this process and its children, all threads; the
forward pass uses every BLAS thread too): on a shared, oversubscribed machine the CPU-time ratio is the stable one.

Every answer is checked: verdicts against the construction, counterexamples by exact evaluation, pruned networks
by ``equivalent`` (the canonical ones also neuron by neuron against ``prune(θ)`` on a random sample, in
Fractions), flip sets by Fractions.

Run:  python benchmarks/bench_speed.py                       (the whole table, Markdown)
      python benchmarks/bench_speed.py --shape 784-1000-10 --rows noisy,digest
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from typing import Any

import numpy as np

from relusym import Network, Symmetry, equivalent, fiber, normal_form, prune

ROWS = ("yes", "ulp", "noisy", "digest", "canon", "prune", "prune_planted", "memory", "startup", "flips")


CPU: dict[int, float] = {}  # id(result) -> best CPU seconds of the call that produced it (see best)
LAST_CPU = [0.0]


def _cpu() -> float:
    """CPU seconds of this process (all its threads) and of its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall-clock seconds of ``repeat`` calls (and, in LAST_CPU, the best CPU seconds)."""
    out, t_best, c_best = None, float("inf"), float("inf")
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t0)
        c_best = min(c_best, _cpu() - c0)
    LAST_CPU[0] = c_best
    return t_best, out


def random_net(rng: np.random.Generator, m: int, n: int, k: int) -> Network:
    f32 = np.float32
    return Network(
        (rng.standard_normal((k, n)) / np.sqrt(n)).astype(f32),
        (rng.standard_normal((n, m)) / np.sqrt(m)).astype(f32),
        (rng.standard_normal(n) * 0.1).astype(f32),
        (rng.standard_normal(k) * 0.1).astype(f32),
    )


def planted(net: Network, rng: np.random.Generator, dup: int, dead: int) -> Network:
    """θ with ``dup`` neurons split into two halves (v/2 each) and ``dead`` neurons with a = 0, b < 0."""
    V, A, b, c = (np.array(x, copy=True) for x in (net.V, net.A, net.b, net.c))
    idx = rng.choice(net.n, size=dup, replace=False)
    V[:, idx] *= np.float32(0.5)
    V = np.concatenate([V, V[:, idx], rng.standard_normal((net.k, dead)).astype(V.dtype)], axis=1)
    A = np.concatenate([A, A[idx], np.zeros((dead, net.m), dtype=A.dtype)], axis=0)
    b = np.concatenate([b, b[idx], -np.ones(dead, dtype=b.dtype)])
    return Network(V, A, b, c)


def noisy(net: Network, rng: np.random.Generator) -> Network:
    def perturb(x: np.ndarray) -> np.ndarray:
        eps = 10.0 ** rng.uniform(-9, -3, size=x.shape) * rng.choice([-1.0, 1.0], size=x.shape)
        y = (x.astype(np.float64) * (1 + eps)).astype(x.dtype)
        return np.where(y == x, np.nextafter(x, np.inf), y)

    return Network(perturb(net.V), perturb(net.A), perturb(net.b), perturb(net.c))


def same_as_scaled(net: Network, small: Network, rng: np.random.Generator) -> bool:
    """The canonical network checked: ``equivalent(θ, small)`` (exact), and against ``prune(θ)`` (θ's own scales)
    neuron by neuron on 64 random neurons in Fractions: both list the kink classes in the same order, the
    canonical row is a primitive integer vector P (integers, gcd 1) and θ's own neuron is (v/s, s·P) for the
    canonical (v, P) and some s > 0.  (The tests check every value against a Fraction oracle.)"""
    own = prune(net)
    if own.n != small.n or [Fraction(x) for x in own.c.tolist()] != [Fraction(x) for x in small.c.tolist()]:
        return False
    if not equivalent(net, small, certificate=False):
        return False
    for t in rng.choice(small.n, size=min(64, small.n), replace=False).tolist():
        P = [Fraction(x) for x in [*small.A[t].tolist(), *small.b[t : t + 1].tolist()]]
        if any(x.denominator != 1 for x in P) or math.gcd(*(int(x) for x in P)) != 1:
            return False
        w = [Fraction(x) for x in [*own.A[t].tolist(), *own.b[t : t + 1].tolist()]]
        p = next(i for i, x in enumerate(P) if x)
        s = w[p] / P[p]
        if s <= 0 or [s * x for x in P] != w:
            return False
        if [Fraction(x) for x in small.V[:, t].tolist()] != [s * Fraction(x) for x in own.V[:, t].tolist()]:
            return False
    return True


def peak_memory(fn: Callable[[], Any]) -> tuple[int, int]:
    """(peak bytes allocated during ``fn()``, bytes its result still holds when it returns), by tracemalloc (numpy
    reports its array buffers to it)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak - base, current - base


def import_times(cache: bool, repeat: int) -> tuple[float, float, float]:
    """``import relusym`` against ``import numpy`` in fresh processes, from ``-X importtime``: the best
    milliseconds of ``import relusym``, of ``import numpy`` alone, and the median over the runs of relusym's
    cumulative time over the numpy import inside it (a paired ratio: on a loaded machine the import of numpy
    alone varies by 2x from one process to the next).  With a warm private bytecode cache or with none (every
    module compiled from source, numpy's too)."""
    import re
    import statistics

    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
        if not cache:
            env["PYTHONDONTWRITEBYTECODE"] = "1"

        def cumulative(mod: str, text: str) -> float:
            return int(re.findall(rf"\|\s*(\d+) \|\s*{mod}$", text, flags=re.M)[-1]) / 1e3

        runs: dict[str, list[str]] = {}
        for mod in ("relusym", "numpy"):
            cmd = [sys.executable, "-X", "importtime", "-c", f"import {mod}"]
            subprocess.run(cmd, env=env, capture_output=True, check=True)  # warms the cache (when there is one)
            runs[mod] = [subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stderr
                         for _ in range(repeat)]  # fmt: skip
    paired = statistics.median(cumulative("relusym", t) / cumulative("numpy", t) for t in runs["relusym"])
    return (
        min(cumulative("relusym", t) for t in runs["relusym"]),
        min(cumulative("numpy", t) for t in runs["numpy"]),
        paired,
    )


def check_cx(v: Any, n1: Network, n2: Network) -> bool:
    ce = v.counterexample
    return not v and ce is not None and n1.evaluate_exact(ce.x) != n2.evaluate_exact(ce.x)


def flip_row(rng: np.random.Generator, m: int, n: int) -> tuple[float, str, bool]:
    net = random_net(rng, m, n, 1)
    t0 = time.perf_counter()
    fb = fiber(net)
    secs = time.perf_counter() - t0
    sets = [T for T in (fb.flips or []) if T]
    ok = all(
        sum(Fraction(float(net.V[0, i])) * Fraction(float(net.A[i, j])) for i in T) == 0 for T in sets for j in range(m)
    )
    return secs, f"{len(sets)} flip set(s), generic = {fb.generic}", ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="784-4096-10")
    ap.add_argument("--noisy-shape", default=None, help="shape of the noisy-copy row (default: --shape)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated subset of " + ",".join(ROWS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full-canon", action="store_true", help="also time canon --json --full (67 MB)")
    args = ap.parse_args()
    rows = args.rows.split(",")
    m, n, k = (int(x) for x in args.shape.split("-"))
    rng = np.random.default_rng(args.seed)
    net = random_net(rng, m, n, k)
    X = rng.standard_normal((1024, m)).astype(np.float32)
    A32, b32, V32, c32 = net.A, net.b, net.V, net.c
    t_fwd, _ = best(lambda: np.maximum(X @ A32.T + b32, 0) @ V32.T + c32, max(5, args.repeat))
    c_fwd = LAST_CPU[0]
    out: list[tuple[str, str, str, str, bool]] = []

    def add(
        name: str, secs: float, ok: bool, note: str = "", ref: float | None = None, cref: float | None = None
    ) -> None:
        cpu = LAST_CPU[0]
        out.append((name, f"{secs:.3f}", f"{secs / (ref or t_fwd):.2f}×", f"{cpu / (cref or c_fwd):.2f}×", ok))
        print(f"  {name}: {secs:.3f} s wall, {cpu:.3f} s CPU {note}", file=sys.stderr, flush=True)

    t_yes = c_yes = None
    if "yes" in rows or "ulp" in rows or "noisy" in rows:
        h = Symmetry.random(n, int(rng.integers(2**31)), dyadic=True, spread=4)
        moved = h.act(net)
        t_yes, v = best(lambda: equivalent(net, moved), args.repeat)
        c_yes = LAST_CPU[0]
        add(f"`equivalent(θ, h·θ)` with witness, {args.shape}", t_yes, bool(v) and v.witness == h)
    if "ulp" in rows:
        # one ulp on a pivot entry a_00 (û moves in every coordinate) and off the pivot, a_0,m/2 (û moves in one
        # coordinate only: the two kinks coincide where that coordinate is 0)
        for where, (r, col) in (("pivot", (0, 0)), ("off the pivot", (0, m // 2))):
            A2 = np.array(net.A, copy=True)
            A2[r, col] = np.nextafter(A2[r, col], np.float32(np.inf))
            wrong = Network(net.V, A2, net.b, net.c)
            t, v = best(lambda wrong=wrong: equivalent(net, wrong), args.repeat)
            add(f"`equivalent(θ, θ′)`, one ulp ({where}): “no” + verified counterexample", t, check_cx(v, net, wrong))
            out.append(
                (
                    "  the same, as a ratio to the “yes”",
                    "",
                    f"{t / t_yes:.2f}×" if t_yes else "-",
                    f"{LAST_CPU[0] / c_yes:.2f}×" if c_yes else "-",
                    True,
                )
            )
    if "noisy" in rows:
        if args.noisy_shape and args.noisy_shape != args.shape:
            mm, nn, kk = (int(x) for x in args.noisy_shape.split("-"))
            base = random_net(rng, mm, nn, kk)
        else:
            base = net
        other = noisy(base, rng)
        t, v = best(lambda: equivalent(base, other), 1 if args.noisy_shape else args.repeat)
        add(f"`equivalent(θ, noisy copy)` {args.noisy_shape or args.shape}: “no” + counterexample", t,
            check_cx(v, base, other))  # fmt: skip
    if "digest" in rows:
        t, d = best(lambda: normal_form(net).digest(), args.repeat)
        with ThreadPoolExecutor(max_workers=1) as pool:  # from another thread the digest is encoded in one thread
            one_thread = pool.submit(lambda: normal_form(net).digest()).result()
        add("`normal_form(θ).digest()`", t, isinstance(d, str) and len(d) == 64 and d == one_thread)
    if "canon" in rows:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "net.npz")
            np.savez(path, V=np.asarray(net.V), A=np.asarray(net.A), b=np.asarray(net.b), c=np.asarray(net.c))
            # what a user's Python does: bytecode cached after the first run (here in a private cache folder, so
            # that PYTHONDONTWRITEBYTECODE, set on some machines, does not make every run recompile relusym)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
            subprocess.run([sys.executable, "-m", "relusym", "canon", path, "--json"], check=True, env=env,
                           capture_output=True)  # fmt: skip
            ref_code = (
                f"import numpy as np; z = np.load({path!r}); X = np.random.default_rng(0).standard_normal((1024, {m}))"
                ".astype(np.float32); np.maximum(X @ z['A'].T + z['b'], 0) @ z['V'].T + z['c']"
            )
            t_ref, _ = best(lambda: subprocess.run([sys.executable, "-c", ref_code], check=True, env=env), args.repeat)
            c_ref = LAST_CPU[0]
            cmd = [sys.executable, "-m", "relusym", "canon", path, "--json"]
            t, r = best(lambda: subprocess.run(cmd, check=True, env=env, capture_output=True), args.repeat)
            size = len(r.stdout)
            add(f"`relusym canon net.npz --json` ({size / 1e6:.2f} MB) vs numpy load + forward process", t,
                r.returncode == 0, ref=t_ref, cref=c_ref)  # fmt: skip
            human = [sys.executable, "-m", "relusym", "canon", path]
            t, r = best(lambda: subprocess.run(human, check=True, env=env, capture_output=True), args.repeat)
            add("`relusym canon net.npz` (human report) vs numpy load + forward process", t, r.returncode == 0,
                ref=t_ref, cref=c_ref)  # fmt: skip
            if args.full_canon:
                full = [*cmd, "--full"]
                t, r = best(lambda: subprocess.run(full, check=True, env=env, capture_output=True), 1)
                add(f"`relusym canon net.npz --json --full` ({len(r.stdout) / 1e6:.2f} MB, streamed)", t,
                    r.returncode == 0, ref=t_ref, cref=c_ref)  # fmt: skip
            out.append(("  reference process: numpy load + one forward pass", f"{t_ref:.3f}", "1×", "1×", True))
    if "prune" in rows:
        t, small = best(lambda: prune(net), args.repeat)
        add("`prune(θ)` (float scales kept: what `relusym prune` writes for float models), generic", t,
            small.n == net.n and bool(equivalent(net, small, certificate=False)))  # fmt: skip
        t, small = best(lambda: prune(net, canonical=True), args.repeat)
        add("`prune(θ, canonical=True)` (the canonical minimal network: primitive integer rows), generic", t,
            small.n == net.n and same_as_scaled(net, small, rng))  # fmt: skip
    if "prune_planted" in rows:
        pl = planted(net, rng, dup=n // 16, dead=n // 16)
        t, small = best(lambda: prune(pl), args.repeat)
        add(f"`prune(θ)` (float scales kept) with {n // 16} duplicates and {n // 16} dead neurons", t,
            small.n == net.n and bool(equivalent(pl, small, certificate=False)))  # fmt: skip
        t, small = best(lambda: prune(pl, canonical=True), args.repeat)
        add(f"`prune(θ, canonical=True)` with {n // 16} duplicates and {n // 16} dead neurons", t,
            small.n == net.n and same_as_scaled(pl, small, rng))  # fmt: skip
    memory: list[tuple[str, str, str, str]] = []
    if "memory" in rows:
        h = Symmetry.random(n, 12345, dyadic=True, spread=4)
        moved = h.act(net)
        weights = sum(x.nbytes for x in (net.V, net.A, net.b, net.c))
        A_ulp = np.array(moved.A)
        A_ulp[0, 0] = np.nextafter(A_ulp[0, 0], np.float32(np.inf))
        ulp = Network(moved.V, A_ulp, moved.b, moved.c)
        for name, fn in (
            ("`prune(θ)`", lambda: prune(net)),
            ("`prune(θ, canonical=True)`", lambda: prune(net, canonical=True)),
            ("`equivalent(θ, h·θ)` with witness", lambda: equivalent(net, moved)),
            ("`equivalent(θ, h·θ′)`, one ulp: “no” + counterexample", lambda: equivalent(net, ulp)),
            ("`equivalent(θ, h·θ, certificate=False)`", lambda: equivalent(net, moved, certificate=False)),
            ("`normal_form(θ).digest()`", lambda: normal_form(net).digest()),
        ):
            peak, kept = peak_memory(fn)
            memory.append((name, f"{weights / 2**20:.1f}", f"{peak / weights:.2f}×", f"{(peak - kept) / weights:.2f}×"))
            print(f"  memory {name}: peak {peak / 2**20:.1f} MiB, result {kept / 2**20:.1f} MiB", file=sys.stderr)
    startup: list[tuple[str, float, float, float]] = []
    if "startup" in rows:
        for cache in (True, False):
            r_ms, n_ms, paired = import_times(cache, max(7, args.repeat))
            startup.append(("with a bytecode cache" if cache else "without a bytecode cache", r_ms, n_ms, paired))
            print(f"  import relusym {r_ms:.0f} ms, import numpy {n_ms:.0f} ms (cache {cache})", file=sys.stderr)
    flips = []
    if "flips" in rows:
        for mm in (1, 2):
            secs, note, ok = flip_row(np.random.default_rng(args.seed + mm), mm, 1000)  # the same nets every run
            flips.append((f"`fiber` of a random float32 {mm}-1000-1 (flip search, default budget)", secs, note, ok))
            print(f"  flips {mm}-1000-1: {secs:.2f} s {note}", file=sys.stderr, flush=True)
    fwd = f"{t_fwd * 1e3:.1f} ms wall, {c_fwd * 1e3:.1f} ms CPU (best of {max(5, args.repeat)})"
    print(
        f"\nshape {args.shape}, float32; one 1024-input float32 forward pass: {fwd}; each row best of {args.repeat}\n"
    )
    print("| operation | seconds | ratio to the forward pass (wall) | (CPU time) | checked |")
    print("|---|---|---|---|---|")
    for name, secs, ratio, cratio, ok in out:
        print(f"| {name} | {secs} | {ratio} | {cratio} | {'yes' if ok else 'NO'} |")
    for name, secs, note, ok in flips:
        print(f"| {name} | {secs:.2f} | {note} | | {'yes' if ok else 'NO'} |")
    if memory:
        print("\n| peak memory (tracemalloc) | θ's weights (MiB) | peak / weights | temporaries / weights |")
        print("|---|---|---|---|")
        for row in memory:
            print("| " + " | ".join(row) + " |")
    if startup:
        print("\n| start-up (`-X importtime`, fresh processes) | `import relusym` (best) | `import numpy` alone (best) "
              "| `import relusym` / the `import numpy` inside it (median) |")  # fmt: skip
        print("|---|---|---|---|")
        for name, r_ms, n_ms, paired in startup:
            print(f"| {name} | {r_ms:.0f} ms | {n_ms:.0f} ms | {paired:.2f}× |")
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
