"""Random small deep pairs against the exact oracle of the tests: how often relusym is wrong, and how often it
says "undecided".

Pairs (m ≤ 3, hidden widths ≤ 6, depth 2–3, integer or float entries), in five kinds: planted equal (per-layer
permutation and scales, split duplicates, constant / dead / output-less units), planted hidden flips (a valid flip
pair), one entry changed (by 1, 1/3 or 2^-20), a bump (three first-layer units and one second-layer unit that add
a tent of width 2ε at a random hyperplane, nonzero only there), and two independent random networks.

The oracle (tests/deep_oracles.py): for m = 1 the exact piecewise-linear functions composed layer by layer (a
complete decision); for m ≥ 2 the same on random rational lines.  A verdict is wrong when a counterexample does not
verify, an "equal" certificate does not apply, or the oracle finds a difference where relusym said "equal" (or,
for m = 1, no difference where it said "different").

Run:  python benchmarks/bench_deep_pairs.py --pairs 20000      (about an hour on one core)
      python benchmarks/bench_deep_pairs.py --pairs 2000
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import relusym  # noqa: E402

from deep_oracles import (  # noqa: E402
    add_flip_pair,
    add_junk,
    agree_1d,
    agree_on_lines,
    float_exact,
    forward,
    layers_of,
    permute_scale,
    to_mlp,
)
from strategies import random_layers  # noqa: E402

KINDS = ("planted", "flip", "changed", "bump", "random")


def changed(layers, rng):  # type: ignore[no-untyped-def]
    out = [([list(r) for r in W], list(b)) for W, b in layers]
    W, b = out[rng.randrange(len(out))]
    step = Fraction(rng.choice((-1, 1)), rng.choice((1, 3, 1 << 20)))
    if rng.random() < 0.3:
        b[rng.randrange(len(b))] += step
    else:
        W[rng.randrange(len(W))][rng.randrange(len(W[0]))] += step
    return out


def bump(layers, rng):  # type: ignore[no-untyped-def]
    """A tent c·σ(u1 − 2u2 + u3) with u_j = σ(w·x − a − (j−1)ε) routed through layer 2 to the output."""
    out = [([list(r) for r in W], list(b)) for W, b in layers]
    m = len(out[0][0][0])
    w = [Fraction(rng.randint(-3, 3)) for _ in range(m)]
    if not any(w):
        w[0] = Fraction(1)
    a, eps = Fraction(rng.randint(-4, 4), 2), Fraction(1, rng.choice((10, 100, 1000)))
    W1, b1 = out[0]
    W2, b2 = out[1]
    for j in range(3):
        W1.append(list(w))
        b1.append(-a - j * eps)
        for row in W2:
            row.append(Fraction(0))
    W2.append([Fraction(0)] * (len(W1) - 3) + [Fraction(1), Fraction(-2), Fraction(1)])
    b2.append(Fraction(0))
    nxt = out[2][0]
    for r, row in enumerate(nxt):
        row.append(Fraction(rng.choice((1, -1))) if r == 0 else Fraction(0))
    for ell in range(2, len(out) - 1):  # deeper layers: pass the tent through a unit of its own (it is ≥ 0)
        Wl, bl = out[ell]
        Wl.append([Fraction(0)] * (len(Wl[0]) - 1) + [Fraction(1)])
        bl.append(Fraction(0))
        for row in out[ell + 1][0]:
            row.append(Fraction(1) if row is out[ell + 1][0][0] else Fraction(0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    verdicts: Counter[tuple[str, int, str]] = Counter()
    wrong: list[str] = []
    c0, w0 = time.process_time(), time.perf_counter()
    for trial in range(args.pairs):
        m = 1 + trial % 3
        kind = KINDS[(trial // 3) % len(KINDS)]
        depth = rng.choice((2, 3))
        widths = [m] + [rng.randint(1, 6) for _ in range(depth)] + [rng.randint(1, 2)]
        base = random_layers(rng, widths, den=rng.choice((1, 4)))
        if kind == "planted":
            other = permute_scale(add_junk(base, rng), rng)
        elif kind == "flip":
            base, other = add_flip_pair(base, rng, rng.randrange(depth))
        elif kind == "changed":
            other = changed(base, rng)
        elif kind == "bump":
            other = bump(base, rng)
        else:
            other = random_layers(rng, widths)
        a = to_mlp(base, floats=trial % 2 == 0 and float_exact(base))
        b = to_mlp(other)
        v = relusym.equivalent(a, b, budget=args.budget)
        verdicts[(kind, m, v.status)] += 1
        la, lb = layers_of(a), layers_of(b)
        ok = True
        if v.status == "different":
            ce = v.counterexample
            ok = forward(la, ce.x) != forward(lb, ce.x)
            if m == 1:
                ok = ok and not agree_1d(la, lb)
        elif v.status == "equal":
            cert = v.certificate
            if cert.method == "symmetry":
                ok = cert.symmetry.flips_valid(cert.reduced1) and cert.symmetry.apply(cert.reduced1).same_parameters(
                    cert.reduced2
                )
            ok = ok and (agree_1d(la, lb) if m == 1 else agree_on_lines(la, lb, m, rng))
        if not ok:
            wrong.append(f"trial {trial} ({kind}, m = {m}): {v}")
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"{args.pairs} pairs in {cpu:.0f} s CPU ({wall:.0f} s wall, load {os.getloadavg()[0]:.1f})")
    print(f"{'kind':>8} {'m':>2} | {'equal':>6} {'different':>9} {'undecided':>9}")
    for kind in KINDS:
        for m in (1, 2, 3):
            row = [verdicts[(kind, m, s)] for s in ("equal", "different", "undecided")]
            print(f"{kind:>8} {m:>2} | {row[0]:>6} {row[1]:>9} {row[2]:>9}")
    und = sum(n for (_, _, s), n in verdicts.items() if s == "undecided")
    und1 = sum(n for (_, m, s), n in verdicts.items() if s == "undecided" and m == 1)
    print(f"wrong verdicts: {len(wrong)}; undecided: {und} ({100 * und / max(1, args.pairs):.2f}%), for m = 1: {und1}")
    for line in wrong[:20]:
        print("  WRONG", line)


if __name__ == "__main__":
    main()
