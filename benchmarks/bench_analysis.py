"""The exact analysis of a flipped float network: what a flip costs the decisions that follow it.

``flip(θ, T)`` of a float network keeps its float weights (A and b change sign on T, V is untouched) but adds
Σ_T b_i v_i to the offset c, which the float dtype usually cannot hold, so c becomes exact rationals.  The offset
does not enter the hyperplane classes: their analysis keeps A, b and V on the float path.  Timed, each the best
of ``--repeat`` runs, on a random float32 network with a planted flip set T = {0, 1} (neuron 1 := (−v_0, a_0,
b_1), so flip_T preserves the function):

* ``normal_form(flip_T(θ))`` and its digest, and ``equivalent(θ, flip_T(θ))`` (which finds the flip set);
* the same on ``flip_T(θ).to_fractions()``: every entry a Fraction, the path relusym took before for a network
  whose c alone is exact;
* one float32 forward pass of 1024 inputs (numpy), for scale.

Run:  python benchmarks/bench_analysis.py                 (784-1024-1)
      python benchmarks/bench_analysis.py --shape 64-512-2
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best

from relusym import Network, equivalent, flip, normal_form


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="784-1024-1")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    m, n, k = (int(x) for x in args.shape.split("-"))
    rng = np.random.default_rng(args.seed)
    f32 = np.float32
    V = rng.standard_normal((k, n)).astype(f32)
    A = rng.standard_normal((n, m)).astype(f32)
    b = rng.standard_normal(n).astype(f32)
    V[:, 1], A[1] = -V[:, 0], A[0]  # flipping {0, 1} preserves the function
    net = Network(V, A, b, rng.standard_normal(k).astype(f32))
    fl = flip(net, [0, 1])
    exact = fl.to_fractions()
    X = rng.standard_normal((1024, m)).astype(f32)
    t_fwd, _ = best(lambda: np.maximum(X @ A.T + b, 0) @ V.T, 5)
    print(f"shape {m}-{n}-{k}, float32; flip_T(θ) has c of dtype {fl.c.dtype}, A of dtype {fl.A.dtype}")
    rows = []
    for label, other in (("flip_T(θ) (float weights, exact c)", fl), ("flip_T(θ) as Fractions", exact)):
        t_nf, nf = best(lambda o=other: normal_form(o).digest(), args.repeat)
        t_eq, v = best(lambda o=other: equivalent(net, o), args.repeat)
        assert v and v.flip_set == (0, 1), "the planted flip set must be found"
        rows.append((label, t_nf, t_eq, nf))
    assert rows[0][3] == rows[1][3], "the two paths must give the same digest"
    print()
    print("| network | `normal_form(·).digest()` s | `equivalent(θ, ·)` s | ratio to the forward pass | checked |")
    print("|---|---|---|---|---|")
    for label, t_nf, t_eq, _ in rows:
        print(f"| {label} | {t_nf:.3f} | {t_eq:.3f} | {t_nf / t_fwd:.1f}× / {t_eq / t_fwd:.1f}× | yes |")
    print(f"| one 1024-input forward pass | {t_fwd:.4f} | | 1× | |")
    fast, slow = rows[0], rows[1]
    print(
        f"\nexact c on the float path against all-Fractions, in this run: normal form {slow[1] / fast[1]:.0f}× "
        f"faster, equivalent {slow[2] / fast[2]:.0f}× faster (same digest, flip set found by both)"
    )


if __name__ == "__main__":
    main()
