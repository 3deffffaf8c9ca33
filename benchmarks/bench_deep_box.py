"""Unit statuses of the 45 ACAS Xu networks on the input box each NNet file records (issue 22).

    python benchmarks/bench_deep_box.py [--budget SECONDS] [--samples N] [--files K]

Reads /work/shared/data/acasxu/*.nnet with a small local reader (the numbers exactly, as decimals).  The
network is taken in *normalised* coordinates: x̃ = (x − mean)/range, so the box is [(min − mean)/range,
(max − mean)/range] per input (exact rationals) and the output normalisation, affine after the last layer,
changes no hidden unit.  Only the first m entries of the min/max/mean/range lines are inputs (these files carry
extra columns; the output mean and range are the last entries).

Per network: dead / active / crossing / undecided from relusym's exact statuses, the time, the units plain
interval bound propagation (float) finds dead/active, and what 200,000 uniform samples suggest (a unit seen
with both signs is "crossing"; one seen only ≤ 0 "dead"; only ≥ 0 "active").
"""

from __future__ import annotations

import argparse
import glob
import time
from fractions import Fraction

import numpy as np

from relusym._bounded.domain import Box
from relusym._deep.mlp import MLP
from relusym._deep.status import unit_status

DATA = "/work/shared/data/acasxu"


def read_nnet(path: str) -> tuple[MLP, Box]:
    lines = [s.strip() for s in open(path, encoding="utf-8") if s.strip() and not s.strip().startswith("//")]

    def vals(s: str) -> list[Fraction]:
        return [Fraction(p.strip()) for p in s.split(",") if p.strip()]

    nl, m, _k, _ = (int(v) for v in vals(lines[0])[:4])
    sizes = [int(v) for v in vals(lines[1])]
    mins, maxs, means, ranges = (vals(lines[i])[:m] for i in (3, 4, 5, 6))
    pos, Ws, bs = 7, [], []
    for ell in range(nl):
        Ws.append([vals(lines[pos + i]) for i in range(sizes[ell + 1])])
        pos += sizes[ell + 1]
        bs.append([vals(lines[pos + i])[0] for i in range(sizes[ell + 1])])
        pos += sizes[ell + 1]
    lo = [(a - mu) / r for a, mu, r in zip(mins, means, ranges, strict=True)]
    hi = [(b - mu) / r for b, mu, r in zip(maxs, means, ranges, strict=True)]
    return MLP(Ws, bs), Box(lo, hi)


def ibp_counts(net: MLP, box: Box) -> tuple[int, int]:
    lo = np.array([float(v) for v in box.lo])
    hi = np.array([float(v) for v in box.hi])
    dead = act = 0
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        Wf = np.array([[float(v) for v in r] for r in W.tolist()])
        bf = np.array([float(v) for v in b.tolist()])
        c, r = (lo + hi) / 2, (hi - lo) / 2
        zc, zr = Wf @ c + bf, np.abs(Wf) @ r
        dead += int(((zc + zr) <= 0).sum())
        act += int(((zc - zr) >= 0).sum())
        lo, hi = np.maximum(zc - zr, 0), np.maximum(zc + zr, 0)
    return dead, act


def sample_counts(net: MLP, box: Box, n: int) -> tuple[int, int, int]:
    lo = np.array([float(v) for v in box.lo])
    hi = np.array([float(v) for v in box.hi])
    X = lo + (hi - lo) * np.random.default_rng(0).random((n, len(lo)))
    H = X
    dead = act = cross = 0
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        Wf = np.array([[float(v) for v in r] for r in W.tolist()])
        bf = np.array([float(v) for v in b.tolist()])
        Z = H @ Wf.T + bf
        mn, mx = Z.min(axis=0), Z.max(axis=0)
        cross += int(((mn < 0) & (mx > 0)).sum())
        dead += int((mx <= 0).sum())
        act += int((mn >= 0).sum())
        H = np.maximum(Z, 0)
    return dead, act, cross


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--samples", type=int, default=200_000)
    ap.add_argument("--files", type=int, default=45)
    args = ap.parse_args()
    tot = {"dead": 0, "active": 0, "crossing": 0, "undecided": 0}
    t_all = 0.0
    print("network   dead active crossing undecided  time_s | ibp_dead ibp_active | samp_dead samp_active samp_cross")
    for path in sorted(glob.glob(f"{DATA}/*.nnet"))[: args.files]:
        net, box = read_nnet(path)
        t0 = time.perf_counter()
        st = unit_status(net, box, budget=args.budget)
        dt = time.perf_counter() - t0
        t_all += dt
        c = st.counts()
        for key in tot:
            tot[key] += c[key]
        idead, iact = ibp_counts(net, box)
        sd, sa, sc = sample_counts(net, box, args.samples)
        name = path.split("run2a_")[1].split("_batch")[0]
        print(
            f"{name:8s} {c['dead']:5d} {c['active']:6d} {c['crossing']:8d} {c['undecided']:9d} {dt:7.1f} | "
            f"{idead:8d} {iact:10d} | {sd:9d} {sa:11d} {sc:10d}",
            flush=True,
        )
    print(f"total     {tot} in {t_all:.1f} s")


if __name__ == "__main__":
    main()
