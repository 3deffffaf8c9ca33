"""Unit statuses of the 45 ACAS Xu networks on the input box each NNet file records (issue 22).

    python benchmarks/bench_deep_box.py [--budget SECONDS] [--samples N] [--first F] [--files K] [--check]
                                        [--search box|phases|box+phases] [--tighten] [--cover-leaves N]

Reads /work/shared/data/acasxu/*.nnet with ``relusym.load`` (the input normalisation folded into the first layer
exactly, so the network takes raw inputs) on the box ``relusym.io.input_box(path)`` (raw units: the min/max the
file records).  The output normalisation, affine after the last layer, changes no hidden unit.

Per network: dead / active / crossing / undecided from relusym's exact statuses (``--budget`` seconds each,
``--samples`` float samples for the witnesses), the time, the units plain interval bound propagation (float) finds
dead/active, and what 200,000 uniform samples suggest (a unit seen with both signs is "crossing"; one seen only
≤ 0 "dead"; only ≥ 0 "active").  ``--search box`` (default) runs the input-box branch and bound alone,
``phases`` the phase branch and bound alone, ``box+phases`` both; ``--tighten`` the phase search on
LP-tightened bounds of the earlier layers; ``--cover-leaves 0`` turns off the witness hunt and the covers by input
splitting (:mod:`relusym._deep.box_cover`), the baseline of this turn.
``--check`` re-checks every certificate with ``check_certificates`` (timed separately).  The totals
give wall and CPU time and the load average.
"""

from __future__ import annotations

import argparse
import glob
import os
import time
import warnings

import numpy as np

import relusym
from relusym._bounded.domain import Box
from relusym._deep.box_check import check_certificates
from relusym._deep.mlp import MLP
from relusym._deep.status import unit_status

DATA = "/work/shared/data/acasxu"


def read(path: str) -> tuple[MLP, Box]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the NNet clamping note: we compare on the recorded box anyway
        net = relusym.load(path)
    box = relusym.io.input_box(path)
    assert isinstance(net, MLP) and isinstance(box, Box)
    return net, box


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
    ap.add_argument("--budget", type=float, default=12.0)
    ap.add_argument("--samples", type=int, default=50_000)
    ap.add_argument("--files", type=int, default=45)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--first", type=int, default=0, help="skip the first FIRST files")
    ap.add_argument("--search", default="box", choices=["box", "phases", "box+phases"])
    ap.add_argument("--tighten", action="store_true", help="phase search on LP-tightened bounds")
    ap.add_argument("--cover-leaves", type=int, default=256, help="leaves a unit's cover may use (0: no covers)")
    args = ap.parse_args()
    tot = {"dead": 0, "active": 0, "crossing": 0, "undecided": 0}
    itot = [0, 0]
    stot = [0, 0, 0]
    t_all = t_check = t_cpu = 0.0
    bad = 0
    by_layer: dict[int, int] = {}
    by_method: dict[tuple[int, str], int] = {}
    print("network   dead active crossing undecided  time_s | ibp_dead ibp_active | samp_dead samp_active samp_cross")
    for path in sorted(glob.glob(f"{DATA}/*.nnet"))[args.first : args.first + args.files]:
        net, box = read(path)
        t0 = time.perf_counter()
        c0 = time.process_time()
        st = unit_status(
            net,
            box,
            budget=args.budget,
            samples=args.samples,
            search=args.search,
            tighten_bounds=args.tighten,
            cover_leaves=args.cover_leaves,
        )
        dt = time.perf_counter() - t0
        t_all += dt
        t_cpu += time.process_time() - c0
        if args.check:
            t1 = time.perf_counter()
            certs = [cert for lay in st.certificates for cert in lay if cert.status != "undecided"]
            bad += sum(not ok for ok in check_certificates(net, box, certs))
            t_check += time.perf_counter() - t1
        c = st.counts()
        for ell, _ in st.units("undecided"):
            by_layer[ell] = by_layer.get(ell, 0) + 1
        for cert in (c for lay in st.certificates for c in lay if c.status != "undecided" and c.method):
            by_method[cert.layer, cert.method] = by_method.get((cert.layer, cert.method), 0) + 1
        for key in tot:
            tot[key] += c[key]
        idead, iact = ibp_counts(net, box)
        sd, sa, sc = sample_counts(net, box, 200_000)
        itot[0] += idead
        itot[1] += iact
        stot[0] += sd
        stot[1] += sa
        stot[2] += sc
        name = path.split("run2a_")[1].split("_batch")[0]
        print(
            f"{name:8s} {c['dead']:5d} {c['active']:6d} {c['crossing']:8d} {c['undecided']:9d} {dt:7.1f} | "
            f"{idead:8d} {iact:10d} | {sd:9d} {sa:11d} {sc:10d}",
            flush=True,
        )
    print(
        f"total    {tot['dead']:5d} {tot['active']:6d} {tot['crossing']:8d} {tot['undecided']:9d} {t_all:7.1f} | "
        f"{itot[0]:8d} {itot[1]:10d} | {stot[0]:9d} {stot[1]:11d} {stot[2]:10d}"
    )
    print("undecided by hidden layer: " + ", ".join(f"{k}: {v}" for k, v in sorted(by_layer.items())))
    print(
        "dead/active/crossing by (layer, method): "
        + ", ".join(f"{k[0]} {k[1]}: {v}" for k, v in sorted(by_method.items()))
    )
    print(f"wall {t_all:.1f} s, CPU {t_cpu:.1f} s, load average {os.getloadavg()[0]:.2f}")
    if args.check:
        print(f"certificates re-checked in {t_check:.1f} s: {bad} rejected")


if __name__ == "__main__":
    main()
