"""Deep networks: relusym's exact equivalence against what users reach for today, side by side in one process.

For each network θ (a random float32 784-512-512-512-10 network, and the ACAS Xu networks, 5-50×6-5):

* a planted copy g·θ: every hidden layer permuted and rescaled by powers of two in [1/4, 4] (exact in float32),
  plus a split duplicate, a constant unit, a unit dead on the orthant and an output-less unit in one layer;
* relusym ``equivalent(θ, g·θ)``: "equal" with a certificate (the per-layer symmetry between the reductions),
  which this benchmark applies exactly (``symmetry.apply(reduced1)`` equals ``reduced2``);
* weight matching as in Git Re-Basin: coordinate descent over the layers of scipy's ``linear_sum_assignment``
  (permutations only), started from the identity, until no layer changes; "recovered" when its permutations
  are the planted ones;
* relusym ``equivalent(θ, θ')`` for θ' = θ with one weight moved by one ulp (layer chosen at random), and with a
  first-layer unit's bias moved so far that its kink lies far from the data: "different" with a counterexample,
  verified by exact evaluation here;
* relusym ``normal_form(θ)`` and ``prune(θ)``;
* one float32 forward pass of 1024 inputs (numpy).

CPU time (process) and wall time are reported, with the load average, as ratios to the forward pass.

Run:  python benchmarks/bench_deep.py                      (784-512-512-512-10 and the ACAS Xu networks)
      python benchmarks/bench_deep.py --quick              (one ACAS Xu network, no 784-512³)
      python benchmarks/bench_deep.py --acas-dir DIR       (the 45 NNet files; default: tests/data/acasxu)
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import relusym
from relusym import MLP

ROOT = Path(__file__).resolve().parents[1]


def timed(fn):  # type: ignore[no-untyped-def]
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def forward32(Ws: list[np.ndarray], bs: list[np.ndarray], X: np.ndarray) -> np.ndarray:
    H = X
    for i, (W, b) in enumerate(zip(Ws, bs, strict=True)):
        H = H @ W.T + b
        if i < len(Ws) - 1:
            H = np.maximum(H, 0)
    return H


def plant(Ws, bs, rng, junk: bool = True):  # type: ignore[no-untyped-def]
    """(W', b', perms): a per-layer permuted, power-of-two rescaled copy, with junk units in layer 1."""
    Ws = [w.astype(np.float32).copy() for w in Ws]
    bs = [b.astype(np.float32).copy() for b in bs]
    perms = []
    for ell in range(len(Ws) - 1):
        n = Ws[ell].shape[0]
        perm = rng.permutation(n)
        d = (2.0 ** rng.integers(-2, 3, n)).astype(np.float32)
        Ws[ell] = (Ws[ell] * d[:, None])[perm]
        bs[ell] = (bs[ell] * d)[perm]
        Ws[ell + 1] = (Ws[ell + 1] / d[None, :])[:, perm]
        perms.append(np.argsort(perm))  # unit j of θ is at slot inv[j]
    if junk and len(Ws) > 2:
        ell = 1  # the second hidden layer: a split duplicate, a constant, a dead-on-the-orthant, an output-less unit
        W, b, Wn, bn = Ws[ell], bs[ell], Ws[ell + 1], bs[ell + 1]
        m = W.shape[1]
        extra_rows = [2 * W[0], np.zeros(m, np.float32), -np.abs(W[1]), W[2]]
        extra_b = [2 * b[0], np.float32(-0.5), -abs(b[1]) - 1, b[2] + 1]
        col0 = Wn[:, 0].copy()
        Wn[:, 0] = col0 / 2
        extra_cols = [col0 / 4, np.full(Wn.shape[0], 0.25, np.float32), np.ones(Wn.shape[0], np.float32), 0 * col0]
        # the constant unit adds 0.25·σ(−0.5) = 0 (a compensated positive constant would round in float32)
        Ws[ell] = np.vstack([W, np.array(extra_rows, np.float32)])
        bs[ell] = np.concatenate([b, np.array(extra_b, np.float32)])
        Ws[ell + 1] = np.hstack([Wn, np.array(extra_cols, np.float32).T])
        bs[ell + 1] = bn.astype(np.float32)
    return Ws, bs, perms


def visible_weight(Ws, bs, ell: int, rng) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """A weight (i, j) of layer ``ell`` whose unit fires while its input is positive at some sampled point, in the
    bounding box of the first layer's hyperplanes (enlarged)."""
    W, b = Ws[0].astype(np.float64), bs[0].astype(np.float64)
    nn = (W * W).sum(axis=1)
    base = -(b / np.where(nn > 0, nn, 1.0))[:, None] * W
    lo, hi = base.min(axis=0), base.max(axis=0)
    X = (lo + hi) / 2 + (hi - lo) * rng.uniform(-0.75, 0.75, (4096, W.shape[1]))
    H = X
    for k in range(ell):
        H = np.maximum(H @ Ws[k].astype(np.float64).T + bs[k], 0.0)
    Z = H @ Ws[ell].astype(np.float64).T + bs[ell]
    fires = Z > 0 if ell < len(Ws) - 1 else np.ones_like(Z, dtype=bool)
    co = fires.T.astype(np.float64) @ (H > 0).astype(np.float64)  # (units, inputs): co-activation counts
    cand = np.argwhere(co > 0)
    if not len(cand):
        return int(rng.integers(Ws[ell].shape[0])), int(rng.integers(Ws[ell].shape[1]))
    i, j = cand[int(rng.integers(len(cand)))]
    return int(i), int(j)


def weight_matching(Wa, ba, Wb, bb, max_iter: int = 50):  # type: ignore[no-untyped-def]
    """Git Re-Basin weight matching: permutations P_ℓ maximizing Σ_ℓ ⟨W_ℓ^a, P_ℓ W_ℓ^b P_{ℓ−1}ᵀ⟩ + ⟨b_ℓ^a, P_ℓ b_ℓ^b⟩,
    by coordinate descent of linear assignments over the layers."""
    from scipy.optimize import linear_sum_assignment

    L = len(Wa)
    perms = [np.arange(Wa[ell].shape[0]) for ell in range(L - 1)]
    for _ in range(max_iter):
        changed = False
        for ell in range(L - 1):
            prev = perms[ell - 1] if ell > 0 else np.arange(Wa[0].shape[1])
            nxt = perms[ell + 1] if ell + 1 < L - 1 else np.arange(Wa[-1].shape[0])
            # similarity of unit i of a and unit j of b: incoming (after the previous layer's permutation) and
            # outgoing (after the next layer's) weights, and the bias
            S = Wa[ell] @ Wb[ell][:, prev].T + np.outer(ba[ell], bb[ell])
            S += Wa[ell + 1].T @ Wb[ell + 1][nxt, :]
            if Wb[ell].shape[0] != Wa[ell].shape[0]:
                return perms, False
            _, col = linear_sum_assignment(S, maximize=True)
            if not np.array_equal(col, perms[ell]):
                perms[ell] = col
                changed = True
        if not changed:
            break
    return perms, True


def read_nnet_layers(path: Path) -> MLP:
    net = relusym.load(path)
    assert isinstance(net, MLP)
    return net


def as_float32_layers(net: MLP) -> tuple[list[np.ndarray], list[np.ndarray]]:
    Ws = [np.array([[float(v) for v in r] for r in W.tolist()], np.float64).astype(np.float32) for W in net.weights]
    bs = [np.array([float(v) for v in b.tolist()], np.float64).astype(np.float32) for b in net.biases]
    return Ws, bs


def one_case(name: str, Ws, bs, rng, args) -> None:  # type: ignore[no-untyped-def]
    net = MLP(Ws, bs)
    X = rng.standard_normal((1024, Ws[0].shape[1])).astype(np.float32)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # CPU time of one thread, like relusym's own code
        fwd = min(timed(lambda: forward32(Ws, bs, X))[0] for _ in range(20)) or 1e-9
    Wp, bp, perms = plant(Ws, bs, rng)
    copy = MLP(Wp, bp)
    c_eq, w_eq, v = timed(lambda: relusym.equivalent(net, copy, budget=args.budget))
    cert_ok = (
        v.status == "equal"
        and v.certificate.symmetry is not None
        and v.certificate.symmetry.apply(v.certificate.reduced1).same_parameters(v.certificate.reduced2)
    )
    Wq, bq, perms_q = plant(Ws, bs, rng, junk=False)
    c_wm, w_wm, (found, _) = timed(lambda: weight_matching(Ws, bs, Wq, bq))
    recovered = all(np.array_equal(f, p) for f, p in zip(found, perms_q, strict=True))
    c_nf, _, _ = timed(lambda: relusym.normal_form(net))
    c_pr, _, _ = timed(lambda: relusym.prune(net))
    # one ulp, at a random layer, on a weight that matters: sampling shows its unit firing while its input is
    # positive (a weight whose input is never positive may not change the function at all, see docs/math/deep.md)
    ell = int(rng.integers(len(Ws)))
    i, j = visible_weight(Ws, bs, ell, rng)
    W1 = [w.copy() for w in Ws]
    W1[ell][i, j] = np.nextafter(W1[ell][i, j], np.float32(np.inf))
    ulp = MLP(W1, bs)
    c_ulp, _, vu = timed(lambda: relusym.equivalent(net, ulp, budget=args.budget))
    ce_ok = vu.status == "different" and net(vu.counterexample.x) != ulp(vu.counterexample.x)
    # a far kink: unit 0 of layer 1 fires only for x_0 > 10^4
    W2 = [w.copy() for w in Ws]
    b2 = [b.copy() for b in bs]
    W2[0][0] = 0
    W2[0][0, 0] = 1
    b2[0][0] = -1e4
    far = MLP(W2, b2)
    W3 = [w.copy() for w in W2]
    W3[1][:, 0] = W3[1][:, 0] + np.float32(1)
    far2 = MLP(W3, b2)
    c_far, _, vf = timed(lambda: relusym.equivalent(far, far2, budget=args.budget))
    far_ok = vf.status == "different" and far(vf.counterexample.x) != far2(vf.counterexample.x)
    print(
        f"{name:>22} | {v.status:>9} {'✓' if cert_ok else '✗'} {c_eq / fwd:7.1f}× ({c_eq:.3f} s CPU, {w_eq:.3f} s wall)"
        f" | WM {'recovered' if recovered else 'failed':>9} {c_wm / fwd:6.1f}× | ulp L{ell + 1} {vu.status:>9} "
        f"{'✓' if ce_ok else '✗'} {c_ulp / fwd:6.1f}× | far {vf.status:>9} {'✓' if far_ok else '✗'} {c_far / fwd:6.1f}×"
        f" | NF {c_nf / fwd:6.1f}× prune {c_pr / fwd:6.1f}× | fwd {fwd * 1e3:.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--acas-dir", type=Path, default=ROOT / "tests" / "data" / "acasxu")
    ap.add_argument("--acas-count", type=int, default=45)
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"load average {os.getloadavg()[0]:.2f}; ratios are CPU time over one float32 forward pass of 1024 inputs")
    if not args.quick:
        w = [784, 512, 512, 512, 10]
        Ws = [(rng.standard_normal((w[i + 1], w[i])) / np.sqrt(w[i])).astype(np.float32) for i in range(4)]
        bs = [(0.1 * rng.standard_normal(w[i + 1])).astype(np.float32) for i in range(4)]
        one_case("784-512-512-512-10", Ws, bs, rng, args)
    files = sorted(args.acas_dir.glob("*.nnet"))[: 1 if args.quick else args.acas_count]
    for path in files:
        # the NNet network with its normalisation folded in, rounded to float32 for the planted copies (the
        # equality questions are about that float32 network)
        Ws, bs = as_float32_layers(read_nnet_layers(path))
        one_case(path.stem.replace("ACASXU_run2a_", "acas ").replace("_batch_2000", ""), Ws, bs, rng, args)


if __name__ == "__main__":
    main()
