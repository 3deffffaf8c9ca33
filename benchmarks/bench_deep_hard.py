"""Why some ACAS Xu units stay "undecided" on their box: their margins, how small a sub-box the bounds need, and
what a complete MILP does with them (issue 22).

    python benchmarks/bench_deep_hard.py [--nets 1_3,1_7,2_1,3_9] [--budget 13] [--zoom 5] [--milp SECONDS]

For each network (``ACASXU_run2a_<N>_batch_2000.nnet`` in /work/shared/data/acasxu, normalisation folded in, on
the box the file records), ``relusym.unit_status`` with ``--budget`` seconds; then, for every unit it leaves
undecided, in floats only (nothing here is a proof):

* **margin**: the largest value of the missing sign (s·z, s = +1 for a unit seen only ≤ 0) found by 200,000
  uniform samples and a zooming search (``--zoom`` seconds a unit: the best 32 points resampled in shrinking cubes);
  above 0 the unit crosses in a region thinner than the samples (relusym's witnesses missed it);
* **side**: the largest cube side (a fraction of each side of the box, halved from 1 down to 1/256) at which the
  float twin of relusym's bound (interval and CROWN relaxation, ``FloatBounds``) on the cube centred on that best
  point proves s·z ≤ 0 there — an input-splitting proof needs leaves at least that small around the maximizer,
  "> 1/256" when none does; with the earlier layers' units still unstable on that cube;
* with ``--milp SECONDS``: HiGHS's big-M MILP (``relusym._deep.box_milp``, every unstable earlier unit a binary, the
  root's CROWN bounds as big-M) on the whole box: its optimum or "no answer" within the time.

Prints one row per unit, then per layer the count and the median margin and side, and the load average.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import glob  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import relusym  # noqa: E402
from relusym._deep.bounds import ExactLayers  # noqa: E402
from relusym._deep.box_milp import milp_max  # noqa: E402
from relusym._deep.box_split import FloatBounds  # noqa: E402
from relusym._deep.status import unit_status  # noqa: E402
from relusym._deep.witness import FloatNet  # noqa: E402

DATA = "/work/shared/data/acasxu"
SIDES = [2.0**-k for k in range(9)]


def zoom(
    fn: FloatNet, ell: int, j: int, sign: float, seconds: float, rng: np.random.Generator
) -> tuple[float, np.ndarray]:
    U = rng.random((200_000, fn.m))
    z = sign * fn.preactivations(U, ell)[ell][:, j]
    order = np.argsort(-z)[:32]
    centres, best, arg = U[order], float(z[order[0]]), U[order[0]]
    rad, t0 = 0.5, time.process_time()
    while rad > 1e-7 and time.process_time() - t0 < seconds and best <= 0:
        P = np.clip(centres[rng.integers(0, len(centres), 50_000)] + rad * (2 * rng.random((50_000, fn.m)) - 1), 0, 1)
        zz = sign * fn.preactivations(P, ell)[ell][:, j]
        idx = np.argsort(-zz)[:32]
        if zz[idx[0]] > best:
            best, arg = float(zz[idx[0]]), P[idx[0]]
        centres = np.concatenate([centres[:8], P[idx]])
        rad *= 0.7
    return best, arg


def side_needed(fn: FloatNet, ell: int, j: int, sign: float, c: np.ndarray) -> tuple[str, list[int]]:
    for side in SIDES:
        lo = np.clip(c - side / 2, 0, 1 - side)
        hi = lo + side
        fb = FloatBounds.of(fn, lo[None], hi[None], ell)
        bound = fb.upper[ell][0, j] if sign > 0 else -fb.lower[ell][0, j]
        if bound <= 0:
            unstable = [int(((fb.lower[k][0] < 0) & (fb.upper[k][0] > 0)).sum()) for k in range(ell)]
            return f"1/{round(1 / side)}", unstable
    return f"> 1/{round(1 / SIDES[-1])}", []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nets", default="1_3,1_7,2_1,3_9")
    ap.add_argument("--budget", type=float, default=13.0)
    ap.add_argument("--zoom", type=float, default=5.0)
    ap.add_argument("--milp", type=float, default=0.0)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    by_layer: dict[int, list[tuple[float, float]]] = {}
    crossing = 0
    print(
        "network unit     sign  margin      side    unstable earlier units at that side"
        + ("  MILP" if args.milp else "")
    )
    for name in args.nets.split(","):
        path = glob.glob(f"{DATA}/*run2a_{name}_batch*.nnet")[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            net = relusym.load(path)
        box = relusym.io.input_box(path)
        st = unit_status(net, box, budget=args.budget, samples=50_000)
        layers = ExactLayers.of(net)
        fn = FloatNet(layers, box.lo, box.hi)
        for ell1, j in st.units("undecided"):
            ell = ell1 - 1
            U = rng.random((200_000, fn.m))
            z = fn.preactivations(U, ell)[ell][:, j]
            sign = 1.0 if z.max() <= 0 else -1.0
            margin, arg = zoom(fn, ell, j, sign, args.zoom, rng)
            side, unstable = side_needed(fn, ell, j, sign, arg) if margin <= 0 else ("-", [])
            crossing += margin > 0
            frac = 1.0 / float(side.split("/")[1]) if side.startswith("1/") else 0.0
            by_layer.setdefault(ell1, []).append((margin, frac))
            extra = ""
            if args.milp:
                c = np.zeros(layers.widths[ell + 1])
                c[j] = sign
                L, H = np.zeros(fn.m), np.ones(fn.m)
                fb = FloatBounds.of(fn, L[None], H[None], ell)
                t = time.process_time()
                r = milp_max(fn.W, fn.b, L, H, [x[0] for x in fb.lower[:ell]], [x[0] for x in fb.upper[:ell]], ell, c,
                             args.milp)  # fmt: skip
                extra = (
                    f"  optimum {r.value:.4g} in {time.process_time() - t:.1f} s"
                    if r.optimal and r.value is not None
                    else f"  no answer in {args.milp:.0f} s"
                )
            print(f"{name:7s} ({ell1}, {j:2d})  {sign:+.0f}  {margin:10.3g}  {side:>7s}  {unstable}{extra}", flush=True)
    for ell1, rows in sorted(by_layer.items()):
        neg = [m for m, _ in rows if m <= 0]
        sides = [s for m, s in rows if m <= 0]
        med = float(np.median(sides)) if sides else 0.0
        need = f"1/{round(1 / med)}" if med > 0 else "> 1/256"
        print(
            f"layer {ell1}: {len(rows)} undecided, median margin {np.median(neg) if neg else float('nan'):.3g}, "
            f"median side needed {need}"
        )
    print(f"crossing in thin regions (margin > 0): {crossing}; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
