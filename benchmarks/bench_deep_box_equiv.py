"""Equivalence on the input box of ACAS Xu pairs: relusym beside the big-M MILP a user would write (issue 22).

    python benchmarks/bench_deep_box_equiv.py [--files K] [--budget SECONDS] [--milp SECONDS] [--dist SECONDS]

For each of the first K networks of /work/shared/data/acasxu (loaded with ``relusym.load``, the box the file
records), four pairs:

* ``f16``: every weight and bias rounded to float16 (different on the box; the verifiers' question is how far);
* ``drop1``: first-layer unit 0 removed (different unless that unit is dead on the box);
* ``sym``: a structurally equal copy: each hidden layer permuted, each unit scaled by a power of two (its row and
  bias by 2^s, its outgoing column by 2^−s), plus one first-layer unit dead on the box (active outside it) feeding
  every second-layer unit;
* ``pruned``: the network's own box-pruned copy (``prune_on`` with 30 s, timed apart: what
  ``relusym prune NET --box-from NET -o small.nnet`` writes), the first check a user makes after pruning.

relusym: ``equivalent_on_box``, what ``relusym.equivalent(a, b, domain=box)`` and ``relusym equiv --box-from`` run
(exact: "equal" with a certificate, "different" with an exact input strictly inside
the box, or "undecided"), and for ``f16`` ``distance_on_deep`` (an exact lower bound at an exact input, a sound
upper bound).  MILP: for each output i and sign, max ±(f1_i − f2_i) over the box with both networks encoded by
big-M (bounds by float interval arithmetic, as a user would), scipy.optimize.milp (HiGHS), the pair's time split
evenly; verdict "equal" when every program is optimal with value ≤ 1e-9, "different" when one finds a value
> 1e-9 (its maximizer then checked exactly here), "error" when HiGHS reports a solve error (scipy 1.x's HiGHS
does on some of these programs, also on small ones), else "timeout".  Floats decide the MILP's verdicts: they are
not proofs.  ReluDiff / VeriPrune are not run (they need ELINA and C builds that this machine does not have).
"""

from __future__ import annotations

import argparse
import glob
import os
import time
import warnings
from fractions import Fraction

import numpy as np

import relusym
from relusym._bounded.domain import Box
from relusym._deep.box_decide import distance_on_deep
from relusym._deep.box_equal import equivalent_on_box
from relusym._deep.box_milp import milp_max
from relusym._deep.box_prune import prune_on
from relusym._deep.mlp import MLP

DATA = "/work/shared/data/acasxu"


def read(path: str) -> tuple[MLP, Box]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = relusym.load(path)
    box = relusym.io.input_box(path)
    assert isinstance(net, MLP) and isinstance(box, Box)
    return net, box


def _obj(net: MLP) -> tuple[list[np.ndarray], list[np.ndarray]]:
    return [np.array(w.tolist(), dtype=object) for w in net.weights], [
        np.array(v.tolist(), dtype=object) for v in net.biases
    ]


def f16_copy(net: MLP) -> MLP:
    def r(v: object) -> Fraction:
        return Fraction(float(np.float16(float(v))))  # type: ignore[arg-type]

    return MLP(
        [[[r(v) for v in row] for row in w.tolist()] for w in net.weights],
        [[r(v) for v in b.tolist()] for b in net.biases],
    )


def drop1_copy(net: MLP) -> MLP:
    W, b = _obj(net)
    W[0], b[0] = W[0][1:], b[0][1:]
    W[1] = W[1][:, 1:]
    return MLP([w.tolist() for w in W], [v.tolist() for v in b])


def sym_copy(net: MLP, box: Box, seed: int) -> MLP:
    rng = np.random.default_rng(seed)
    W, b = _obj(net)
    for ell in range(len(W) - 1):
        p = rng.permutation(W[ell].shape[0])
        s = [Fraction(2) ** int(e) for e in rng.integers(-3, 4, len(p))]
        W[ell] = np.array([[v * s[i] for v in W[ell][p[i]]] for i in range(len(p))], dtype=object)
        b[ell] = np.array([b[ell][p[i]] * s[i] for i in range(len(p))], dtype=object)
        W[ell + 1] = np.array([[row[p[i]] / s[i] for i in range(len(p))] for row in W[ell + 1]], dtype=object)
    # a first-layer unit x_0 + … + x_{m−1} − Σ hi − 1, ≤ −1 on the box and positive far outside it
    c = -sum((Fraction(h) for h in box.hi), Fraction(0)) - 1
    W[0] = np.vstack([W[0], np.array([[Fraction(1)] * net.m], dtype=object)])
    b[0] = np.array([*b[0].tolist(), c], dtype=object)
    W[1] = np.hstack([W[1], np.array([[Fraction(3)]] * W[1].shape[0], dtype=object)])
    return MLP([w.tolist() for w in W], [v.tolist() for v in b])


def _float_layers(net: MLP) -> tuple[list[np.ndarray], list[np.ndarray]]:
    Ws = [np.array([[float(v) for v in r] for r in w.tolist()]).reshape(w.shape) for w in net.weights]
    bs = [np.array([float(v) for v in b.tolist()]) for b in net.biases]
    return Ws, bs


def _ibp(
    Ws: list[np.ndarray], bs: list[np.ndarray], lo: np.ndarray, hi: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    L: list[np.ndarray] = []
    U: list[np.ndarray] = []
    a, c = lo, hi
    for W, b in zip(Ws[:-1], bs[:-1], strict=True):
        mid, rad = (a + c) / 2, (c - a) / 2
        zc, zr = W @ mid + b, np.abs(W) @ rad
        L.append(zc - zr - 1e-6)
        U.append(zc + zr + 1e-6)
        a, c = np.maximum(zc - zr, 0), np.maximum(zc + zr, 0)
    return L, U


def _block(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    out = np.zeros((A.shape[0] + B.shape[0], A.shape[1] + B.shape[1]))
    out[: A.shape[0], : A.shape[1]] = A
    out[A.shape[0] :, A.shape[1] :] = B
    return out


def milp_pair(a: MLP, b: MLP, box: Box, limit: float) -> tuple[str, float, str]:
    """The big-M MILP verdict for max_i |a_i − b_i| on the box: (verdict, seconds, detail)."""
    t0 = time.perf_counter()
    lo = np.array([float(v) for v in box.lo])
    hi = np.array([float(v) for v in box.hi])
    W1, b1 = _float_layers(a)
    W2, b2 = _float_layers(b)
    if len(W1) != len(W2):
        return "n/a", 0.0, "different depths"
    W = [np.vstack([W1[0], W2[0]])] + [_block(p, q) for p, q in zip(W1[1:], W2[1:], strict=True)]
    B = [np.concatenate([p, q]) for p, q in zip(b1, b2, strict=True)]
    L1, U1 = _ibp(W1, b1, lo, hi)
    L2, U2 = _ibp(W2, b2, lo, hi)
    L = [np.concatenate([p, q]) for p, q in zip(L1, L2, strict=True)]
    U = [np.concatenate([p, q]) for p, q in zip(U1, U2, strict=True)]
    k = a.k
    T = len(W) - 1
    each = limit / (2 * k)
    best, all_opt, arg, errors = 0.0, True, None, 0
    for i in range(k):
        for sg in (1.0, -1.0):
            c = np.zeros(2 * k)
            c[i], c[k + i] = sg, -sg
            r = milp_max(W, B, lo, hi, L, U, T, c, each)
            all_opt &= r.optimal
            errors += r.status == 4
            if r.value is not None and r.value > best:
                best, arg = r.value, r.x
    dt = time.perf_counter() - t0
    if best > 1e-9 and arg is not None:
        x = tuple(Fraction(float(v)) for v in np.clip(arg, lo, hi))
        gap = max(abs(p - q) for p, q in zip(a.evaluate_exact(x), b.evaluate_exact(x), strict=True))
        return "different", dt, f"max gap found {best:.3g} (exact at its input: {float(gap):.3g})"
    if all_opt:
        return "equal", dt, f"every program optimal, max gap {best:.3g}"
    if errors:
        return "error", dt, f"HiGHS 'solve error' in {errors} of {2 * k} programs; best gap found {best:.3g}"
    return "timeout", dt, f"best gap found {best:.3g}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--budget", type=float, default=10.0, help="relusym's budget per pair (s)")
    ap.add_argument("--milp", type=float, default=60.0, help="the MILP's time per pair (s), split over outputs")
    ap.add_argument("--dist", type=float, default=60.0, help="distance_on_deep's budget on the f16 pairs (s)")
    args = ap.parse_args()
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    print("network pair    relusym   wall_s cpu_s | milp      wall_s | detail")
    for idx, path in enumerate(sorted(glob.glob(f"{DATA}/*.nnet"))[: args.files]):
        net, box = read(path)
        name = path.split("run2a_")[1].split("_batch")[0]
        c0 = time.process_time()
        pruned = prune_on(net, box, budget=30)
        print(f"{name:7s} pruned on the box to {pruned.network.widths} in {time.process_time() - c0:.1f} s CPU")
        pairs = [("f16", f16_copy(net)), ("drop1", drop1_copy(net)), ("sym", sym_copy(net, box, idx))]
        pairs.append(("pruned", pruned.network))
        for label, other in pairs:
            t0, c0 = time.perf_counter(), time.process_time()
            v = equivalent_on_box(net, other, box, budget=args.budget)
            rt, rc = time.perf_counter() - t0, time.process_time() - c0
            if v.counterexample is not None:
                assert box.contains(v.counterexample.x, strict=True)
                assert net.evaluate_exact(v.counterexample.x) != other.evaluate_exact(v.counterexample.x)
            mv, mt, detail = milp_pair(net, other, box, args.milp)
            print(f"{name:7s} {label:6s} {v.status:9s} {rt:7.2f} {rc:5.2f} | {mv:9s} {mt:6.1f} | {detail}", flush=True)
            if label == "f16":
                t1 = time.perf_counter()
                d = distance_on_deep(net, other, box, budget=args.dist)
                ratio = float(d.upper / d.lower) if d.lower else float("inf")
                print(
                    f"        distance: lower {float(d.lower):.4g} (exact input) upper {float(d.upper):.4g} "
                    f"ratio {ratio:.3g} in {time.perf_counter() - t1:.1f} s ({d.regions} boxes)",
                    flush=True,
                )
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
