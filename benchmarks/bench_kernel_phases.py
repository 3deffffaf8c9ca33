"""Where the zoo digests' compiled kernel spends its time: the kernel's loop over a stack, phase by phase.

A copy of the loop of ``relusym._zoo._jit_kernel.stack_bytes`` (the same compiled phases, called in the same
order on the same scratch arrays) with the processor's cycle counter (LLVM's ``readcyclecounter``) read between
the phases, so that every phase is measured in one run, on the same networks, under the same load: reading the
floats into odd parts and exponents, the rows' primitive vectors, their order, the exact sums of M and e, the
kinks, the size, the bytes, and SHA-256 (the floor of the digest's definition; each shape twice when the kernel
hashes 16 networks at once in its own lanes: so, and with OpenSSL's SHA-256 one network at a time).  The cycles
are converted to microseconds by the run's CPU time; the copy's digests are checked against the kernel's own
(``jit_digests``) before anything is printed, so a loop that drifted from the kernel's is refused.  Needs numba
(``relusym[fast]``) and a compiled SHA-256 (the kernel's lanes or OpenSSL's low-level one, as the kernel uses).

    python benchmarks/bench_kernel_phases.py
    python benchmarks/bench_kernel_phases.py --shape 8-64-1 --networks 50000 --dtype float64

The machine's speed drifts (on the development machine by up to half within an hour): compare two kernels by
running this script on both at the same time, one per core, not one after the other.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # as the zoo job's BLAS: one thread
    os.environ.setdefault(_var, "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba.core import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

from relusym._zoo._digest_jit import _openssl_sha256, jit_available, jit_digests, sha_address  # noqa: E402
from relusym._zoo._jit_bytes import encoded_size, sha256_into, write_network  # noqa: E402
from relusym._zoo._jit_kernel import _kinks, _order, _read, _rows  # noqa: E402
from relusym._zoo._jit_sha import LANES, hash_lanes, lane_work, pad  # noqa: E402
from relusym._zoo._jit_sums import MAX_WORDS, affine, affine_work  # noqa: E402

PHASES = ("read", "rows", "order", "sums of M and e", "kinks", "size", "bytes", "SHA-256")


def _cycles_typing(typingctx: Any) -> Any:
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fn = builder.module.declare_intrinsic("llvm.readcyclecounter", fnty=ir.FunctionType(ir.IntType(64), []))
        return builder.call(fn, [])

    return types.int64(), codegen


cycles: Any = intrinsic(_cycles_typing)


@numba.njit(nogil=True)
def phases(V: Any, A: Any, b: Any, c: Any, out: Any, digests: Any, sha: Any, cyc: Any, flag: Any) -> None:
    """``stack_bytes``' loop (SHA-256 on: 16 networks at a time in the kernel's own lanes when ``sha`` is
    (1, 0, 0), else OpenSSL's, one network at a time) with the cycles of each phase summed into cyc[0..7]; flag[bi]
    set for a network the kernel leaves (its later phases not run, as in the kernel)."""
    B, n, m = A.shape
    k = V.shape[1]
    C = m + 1
    wo, ws, wn = np.empty((n, C), np.int64), np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    vo, vs, vn = np.empty((k, n), np.int64), np.empty((k, n), np.int64), np.empty((k, n), np.int64)
    co, cs, cn = np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.int64)
    mag, sg = np.empty((n, C), np.int64), np.empty((n, C), np.int64)
    lam, keys, ranks = np.empty(n, np.int64), np.empty(n, np.uint32), np.empty(n, np.int64)
    rw = np.empty((5, n), np.int64)
    acc = np.zeros(MAX_WORDS + 2, np.int64)
    kin = (np.empty(n * k, np.int64), np.empty(n * k, np.int64), np.empty(n * k, np.int64),
           np.zeros((6, n * k), np.int64))  # fmt: skip
    aff = (np.empty(k * C, np.int64), np.empty(k * C, np.int64), np.empty(k * C, np.int64),
           np.zeros((MAX_WORDS + 2, k * C), np.int64))  # fmt: skip
    work = affine_work(n, k, C)
    together = sha[0] == 1
    lanes = lane_work()
    count = pos = 0
    for bi in range(B):
        t0 = cycles()
        ok, eW, tW, eV, tV = _read(A, b, V, c, bi, (wo, ws, wn), (vo, vs, vn), (co, cs, cn), lam, rw)
        t1 = cycles()
        ok = ok and _rows((wo, ws, wn), vo, n, C, m, mag, sg, lam, rw)
        t2 = cycles()
        order = _order(mag, sg, n, C, keys, ranks) if ok else lam[:0]
        t3 = cycles()
        raw, cv, bounds = (A, b, V), (co, cs, cn), (eW, tW, eV, tV)
        ok = order.size > 0 and affine(raw, bi, lam, (wo, ws, wn), (vo, vs, vn), cv, acc, aff, work, bounds)
        t4 = cycles()
        cyc[0] += t1 - t0
        cyc[1] += t2 - t1
        cyc[2] += t3 - t2
        cyc[3] += t4 - t3
        if not ok:
            flag[bi] = True
            continue
        _kinks(order, lam, wo, ws, vo, vs, vn, acc, kin)
        t5 = cycles()
        size, w = encoded_size(mag, n, C, k, m, kin, aff)
        t6 = cycles()
        end = write_network(out, pos, (k, m), (mag, sg), order, w, kin, aff)
        t7 = cycles()
        if together:  # padded in place, hashed 16 at a time (the kernel's own SHA-256 in lanes)
            blocks = pad(out, pos, end - pos)
            lanes[0][0, count], lanes[0][1, count], lanes[0][2, count] = pos, blocks, bi
            count += 1
            pos += 64 * blocks
            if count == LANES or pos + size + 80 > out.size:
                hash_lanes(out, count, lanes, digests)
                count, pos = 0, 0
        else:
            sha256_into(sha, out, 0, end, digests, bi)
        t8 = cycles()
        cyc[4] += t5 - t4
        cyc[5] += t6 - t5
        cyc[6] += t7 - t6
        cyc[7] += t8 - t7
    if count > 0:
        t0 = cycles()
        hash_lanes(out, count, lanes, digests)
        cyc[7] += cycles() - t0


def row(m: int, n: int, k: int, B: int, dtype: Any, repeat: int, sha: tuple[int, int, int]) -> str:
    rng = np.random.default_rng(0)
    V, A, b, c = (rng.standard_normal(s).astype(dtype) for s in ((B, k, n), (B, n, m), (B, n), (B, k)))
    out = np.empty(1 << 24, np.uint8)
    digests = np.zeros((B, 32), np.uint8)
    cyc = np.zeros(8, np.int64)
    flag = np.zeros(B, dtype=bool)
    phases(V[:2], A[:2], b[:2], c[:2], out, digests, sha, cyc, flag)  # compiled before the timing
    best: tuple[float, np.ndarray] | None = None
    for _ in range(repeat):
        cyc[:] = 0
        flag[:] = False
        t0 = time.process_time()
        phases(V, A, b, c, out, digests, sha, cyc, flag)
        t = time.process_time() - t0
        if best is None or t < best[0]:
            best = (t, cyc.copy())
    assert best is not None
    t, cyc = best
    check = min(B, 256)
    got = jit_digests(V[:check], A[:check], b[:check], c[:check]) if jit_available() else None
    mine = [digests[i].tobytes().hex() for i in range(check) if not flag[i]]
    if got is None or (got[0] != ~flag[:check]).any() or got[1] != mine:
        raise SystemExit(f"{m}-{n}-{k}: this copy of the kernel's loop no longer gives the kernel's digests")
    per = t / B * 1e6 / max(int(cyc.sum()), 1)
    cells = " | ".join(f"{x * per:,.2f}" for x in cyc)
    how = "16 lanes" if sha[0] == 1 else "OpenSSL"
    head = f"| {m}-{n}-{k} {np.dtype(dtype).name} | {how} | {B:,} | {t / B * 1e6:,.2f} µs"
    return f"{head} | {cells} | {int(flag.sum())} | {os.getloadavg()[0]:.1f} |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", action="append", help="m-n-k (repeatable; default 8-64-1, 64-256-10, 784-128-10)")
    p.add_argument("--networks", type=int, default=0, help="networks per shape (default by shape)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--repeat", type=int, default=3, help="runs per shape; the fastest is reported")
    a = p.parse_args()
    shapes = a.shape or ["8-64-1", "64-256-10", "784-128-10"]
    default = {"8-64-1": 50_000, "64-256-10": 2_000, "784-128-10": 300}
    print(f"load at start: {os.getloadavg()[0]:.1f}\n")
    ways = [sha_address(), _openssl_sha256()]  # the kernel's own choice, then OpenSSL's beside it
    ways = [w for i, w in enumerate(ways) if w[0] and w not in ways[:i]]
    if not ways:
        raise SystemExit("no compiled SHA-256 here: the kernel's digests are taken by hashlib, from Python")
    cols = " | ".join(f"{x} (µs)" for x in PHASES)
    print(f"| shape | SHA-256 | networks | CPU per network | {cols} | left | load |")
    print("|---|---|---|---|" + "---|" * len(PHASES) + "---|---|")
    for s in shapes:
        m, n, k = (int(x) for x in s.split("-"))
        for sha in ways:
            B = a.networks or default.get(s, 1000)
            print(row(m, n, k, B, np.dtype(a.dtype).type, a.repeat, sha), flush=True)


if __name__ == "__main__":
    main()
