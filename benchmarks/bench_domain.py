"""Equality on the box [0, 1]^m: relusym's exact decision against a big-M MILP on HiGHS, side by side in one run.

Pairs (float32, k = 1 output), five kinds, with the right answer known by construction:

* ``perm``  permuted, rescaled copy h·θ (h ∈ H_n with power-of-two scales): equal;
* ``pairs`` θ plus n/4 opposite pairs v·σ(ℓ) − v·σ(ℓ) (a different width): equal;
* ``far``   θ with a neuron active on the whole box, its hyperplane moved further out and the difference
            compensated exactly in c: equal on the box, not on ℝ^m;
* ``ulp``   one weight of a neuron crossing the box moved by one ulp: not equal;
* ``flip``  a planted hidden flip (two neurons with v₁a₁ + v₂a₂ = 0, both turned over): equal, not in the orbit.

relusym: ``equivalent(θ1, θ2, domain=Box(0, 1))`` with its certificate (a verified counterexample inside the box
for "not equal").  MILP: the difference f = ρ1 − ρ2 encoded with one binary per neuron that interval bounds
cannot fix on the box (the usual big-M encoding, as MILP-based equivalence checkers do), max f and max −f
solved by scipy.optimize.milp (HiGHS), "equal" when both optima are ≤ 1e-6 in absolute value; a per-pair time
limit (default 20 s, model building included), and once a (kind, m) times out, larger n are not tried.
nnequiv and ReluDiff/NeuroDiff are C/C++ research codes that are not on PyPI and need their own toolchains and
downloads, which this environment cannot reach: they are not run here.

Run:  python benchmarks/bench_domain.py               (all: n ∈ {8, 32, 128, 1024, 8192}, m ∈ {2, 10, 784})
      python benchmarks/bench_domain.py --quick       (n ≤ 128, m ∈ {2, 10}, MILP limit 5 s)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from relusym import Box, Network, Symmetry, equivalent, flip

CPU: list[float] = []  # CPU seconds of each relusym run (the machine may be shared)
KINDS = ("perm", "pairs", "far", "ulp", "flip")
TRUTH = {"perm": True, "pairs": True, "far": True, "ulp": False, "flip": True}


def base_net(rng: np.random.Generator, m: int, n: int) -> Network:
    f32 = np.float32
    A = (rng.standard_normal((n, m)) / np.sqrt(m)).astype(f32)
    # biases centred on the box: most hyperplanes cross [0, 1]^m
    b = (-(A.astype(np.float64) @ np.full(m, 0.5)) + 0.3 * rng.standard_normal(n)).astype(f32)
    V = rng.standard_normal((1, n)).astype(f32)
    return Network(V, A, b, np.zeros(1, dtype=f32))


def make_pair(kind: str, rng: np.random.Generator, m: int, n: int) -> tuple[Network, Network]:
    net = base_net(rng, m, n)
    V, A, b, c = (np.array(x) for x in (net.V, net.A, net.b, net.c))
    if kind == "perm":
        return net, Symmetry.random(n, int(rng.integers(2**31)), dyadic=True).act(net)
    if kind == "pairs":
        p = max(1, n // 4)
        Ap = (rng.standard_normal((p, m)) / np.sqrt(m)).astype(np.float32)
        bp = rng.standard_normal(p).astype(np.float32)
        vp = rng.standard_normal((1, p)).astype(np.float32)
        other = Network(
            np.concatenate([V, vp, -vp], axis=1), np.concatenate([A, Ap, Ap]), np.concatenate([b, bp, bp]), c
        )
        return net, other
    if kind == "far":
        # neuron 0 made active on the whole box: b0 = 1 + Σ_j max(−a_j, 0), an integer, then pushed out by 64
        b1 = b.copy()
        b1[0] = np.float32(np.ceil(np.maximum(-A[0].astype(np.float64), 0).sum()) + 1)
        b2 = b1.copy()
        b2[0] = b1[0] + np.float32(64)
        c2 = np.array([-64.0 * float(V[0, 0])], dtype=np.float32)  # v·σ(ℓ + 64) = v·σ(ℓ) + 64v on the box
        return Network(V, A, b1, c), Network(V, A, b2, c2)
    if kind == "ulp":
        lo = b.astype(np.float64) + np.minimum(A, 0).sum(axis=1)
        hi = b.astype(np.float64) + np.maximum(A, 0).sum(axis=1)
        i = int(np.argmax(np.minimum(-lo, hi)))  # the neuron crossing the box most clearly
        j = int(np.argmax(np.abs(A[i])))
        A2 = A.copy()
        A2[i, j] = np.nextafter(A2[i, j], np.float32(np.inf))
        return net, Network(V, A2, b, c)
    if kind == "flip":
        # neurons 0 and 1 made a flippable pair: a1 = a0, v1 = −v0 (so v0·a0 + v1·a1 = 0), then both flipped
        A1, V1 = A.copy(), V.copy()
        A1[1] = A1[0]
        V1[0, 1] = -V1[0, 0]
        planted = Network(V1, A1, b, c)
        return planted, flip(planted, [0, 1])
    raise ValueError(kind)


# ----------------------------------------------------------------------------------------------------------
# the MILP peer


def milp_equal(net1: Network, net2: Network, time_limit: float, tol: float = 1e-6) -> tuple[str, float]:
    """Big-M MILP over [0, 1]^m for max |ρ1 − ρ2| (floats throughout).  Returns (verdict, seconds)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix, hstack, identity, vstack

    t0 = time.perf_counter()
    V1, A1, b1, c1 = net1.to_float(np.float64)
    V2, A2, b2, c2 = net2.to_float(np.float64)
    A = np.concatenate([A1, A2])
    b = np.concatenate([b1, b2])
    v = np.concatenate([V1[0], -V2[0]])
    c = float(c1[0] - c2[0])
    m = A.shape[1]
    L = np.minimum(A, 0).sum(axis=1) + b
    U = np.maximum(A, 0).sum(axis=1) + b
    act = L >= 0
    cross = np.nonzero((L < 0) & (U > 0))[0]
    nc = len(cross)
    lin = v[act] @ A[act] if act.any() else np.zeros(m)
    off = c + (float(v[act] @ b[act]) if act.any() else 0.0)
    Ac, bc, Lc, Uc = A[cross], b[cross], L[cross], U[cross]
    Ix = identity(nc, format="csr")
    # rows: a·x − h ≤ −b;  −a·x + h − L z ≤ b − L;  h − U z ≤ 0   (variables x, h, z)
    r1 = hstack([coo_matrix(Ac), -Ix, coo_matrix((nc, nc))])
    r2 = hstack([coo_matrix(-Ac), Ix, -coo_matrix((Lc, (np.arange(nc), np.arange(nc))), shape=(nc, nc))])
    r3 = hstack([coo_matrix((nc, m)), Ix, -coo_matrix((Uc, (np.arange(nc), np.arange(nc))), shape=(nc, nc))])
    M = vstack([r1, r2, r3]).tocsr()
    ub = np.concatenate([-bc, bc - Lc, np.zeros(nc)])
    cons = [LinearConstraint(M, -np.inf, ub)] if nc else []
    bounds = Bounds(np.zeros(m + 2 * nc), np.concatenate([np.ones(m), np.maximum(Uc, 0), np.ones(nc)]))
    integrality = np.concatenate([np.zeros(m + nc), np.ones(nc)])
    obj = np.concatenate([lin, v[cross], np.zeros(nc)])
    worst = 0.0
    for sgn in (1.0, -1.0):
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return "timeout", time.perf_counter() - t0
        res = milp(-sgn * obj, constraints=cons, bounds=bounds, integrality=integrality,
                   options={"time_limit": left, "disp": False})  # fmt: skip
        if res.status != 0 or res.x is None:
            return "timeout", time.perf_counter() - t0
        worst = max(worst, -res.fun + sgn * off)
    return ("equal" if worst <= tol else "differ"), time.perf_counter() - t0


# ----------------------------------------------------------------------------------------------------------


def relusym_run(net1: Network, net2: Network, box: Box, repeat: int = 1) -> tuple[str, float, bool]:
    """The exact decision with its certificate (best of ``repeat`` runs)."""
    dt = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        c0 = time.process_time()
        v = equivalent(net1, net2, domain=box)
        dt = min(dt, time.perf_counter() - t0)
        CPU.append(time.process_time() - c0)
    ok = True
    if not v:
        ce = v.counterexample
        ok = ce is not None and all(0 < x < 1 for x in ce.x) and net1.evaluate_exact(ce.x) != net2.evaluate_exact(ce.x)
    return ("equal" if v else "differ"), dt, ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="n ≤ 128, m ∈ {2, 10}, MILP limit 5 s")
    ap.add_argument("--milp-limit", type=float, default=None, help="seconds per pair for the MILP (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    ns = [8, 32, 128] if args.quick else [8, 32, 128, 1024, 8192]
    ms = [2, 10] if args.quick else [2, 10, 784]
    limit = args.milp_limit if args.milp_limit is not None else (5.0 if args.quick else 20.0)
    rng = np.random.default_rng(args.seed)
    box = Box(0, 1)
    print(f"box [0, 1]^m, float32 pairs, k = 1; MILP: HiGHS big-M, {limit:g} s per pair (model building included)")
    print("relusym: +cert = decision with certificate (verified counterexample for 'differ'), best of 3 for n ≤ 1024;")
    print("         cpu = its CPU seconds; decide = the decision alone (certificate=False); MILP/relusym uses +cert")
    head = (
        f"{'kind':>5} | {'m':>3} | {'n':>5} | {'truth':>6} | {'relusym':>7} {'+cert':>8} {'cpu':>8} {'decide':>8} "
        f"| {'MILP':>7} {'time':>8} | MILP/relusym"
    )
    print(head)
    print("-" * len(head))
    largest: dict[tuple[str, str, int], int] = {}
    wrong: dict[str, int] = {"relusym": 0, "MILP": 0}
    ratios: list[float] = []
    timed_out: set[tuple[str, int]] = set()
    worst_big = worst_big_cert = worst_big_cpu = 0.0
    for kind in KINDS:
        for m in ms:
            for n in ns:
                net1, net2 = make_pair(kind, rng, m, n)
                truth = "equal" if TRUTH[kind] else "differ"
                CPU.clear()
                rv, rt, ok = relusym_run(net1, net2, box, repeat=3 if n <= 1024 else 1)
                cpu = min(CPU)
                t0 = time.perf_counter()
                equivalent(net1, net2, domain=box, certificate=False)
                dec = time.perf_counter() - t0
                if rv != truth or not ok:
                    wrong["relusym"] += 1
                largest[("relusym", kind, m)] = n
                if m == 784 and n == 8192:
                    worst_big = max(worst_big, dec)
                    worst_big_cert = max(worst_big_cert, rt)
                    worst_big_cpu = max(worst_big_cpu, cpu)
                if (kind, m) in timed_out:
                    mv, mt, ratio = "skipped", float("nan"), "-"
                else:
                    mv, mt = milp_equal(net1, net2, limit)
                    if mv == "timeout":
                        timed_out.add((kind, m))
                        ratio = f">{limit / rt:.0f}x"
                    else:
                        largest[("MILP", kind, m)] = n
                        if mv != truth:
                            wrong["MILP"] += 1
                        ratios.append(mt / rt)
                        ratio = f"{mt / rt:.0f}x"
                mts = "-" if mv == "skipped" else f"{mt:7.2f}s"
                flag = "" if (rv == truth and ok) else " WRONG"
                mflag = " WRONG" if mv in ("equal", "differ") and mv != truth else ""
                print(
                    f"{kind:>5} | {m:>3} | {n:>5} | {truth:>6} | {rv:>7} {rt:7.3f}s {cpu:7.3f}s {dec:7.3f}s{flag} "
                    f"| {mv:>7}{mflag} {mts:>8} | {ratio}",
                    flush=True,
                )
    print()
    print("largest n finished (kind, m): relusym / MILP")
    for kind in KINDS:
        row = ", ".join(
            f"m={m}: {largest.get(('relusym', kind, m), '-')} / {largest.get(('MILP', kind, m), 'none')}" for m in ms
        )
        print(f"  {kind:>5}: {row}")
    print(f"wrong verdicts: relusym {wrong['relusym']}, MILP {wrong['MILP']} (MILP timeouts are not counted)")
    if ratios:
        print(f"MILP/relusym time where the MILP finished: min {min(ratios):.0f}x, median {np.median(ratios):.0f}x")
    if worst_big:
        print(
            f"slowest relusym at n = 8192, m = 784: decision {worst_big:.3f}s, with certificate {worst_big_cert:.3f}s "
            f"({worst_big_cpu:.3f}s CPU)"
        )


if __name__ == "__main__":
    main()
