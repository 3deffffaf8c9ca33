"""Independent oracles for the tests: plain Fraction arithmetic, no relusym code."""

from __future__ import annotations

import random
from fractions import Fraction


def relu(t: Fraction) -> Fraction:
    return t if t > 0 else Fraction(0)


def eval_oracle(V, A, b, c, x) -> tuple[Fraction, ...]:
    """ρ(θ)(x) by the definition, in Fractions, from plain nested lists."""
    n = len(b)
    hidden = [
        relu(sum((Fraction(A[i][j]) * Fraction(x[j]) for j in range(len(x))), Fraction(0)) + Fraction(b[i]))
        for i in range(n)
    ]
    return tuple(
        Fraction(c[r]) + sum((Fraction(V[r][i]) * hidden[i] for i in range(n)), Fraction(0)) for r in range(len(c))
    )


def oracle_m1_equal(net1: tuple, net2: tuple) -> bool:
    """Spec §2.6: for m = 1, f = ρ1 − ρ2 is piecewise linear with breakpoints B; f ≡ 0 iff it vanishes on B and
    at min B − 1, max B + 1 (at −1, 0, 1 when B is empty)."""
    pts = set()
    for _V, A, b, _c in (net1, net2):
        for i in range(len(b)):
            if Fraction(A[i][0]) != 0:
                pts.add(-Fraction(b[i]) / Fraction(A[i][0]))
    if pts:
        pts |= {min(pts) - 1, max(pts) + 1}
    else:
        pts = {Fraction(-1), Fraction(0), Fraction(1)}
    return all(eval_oracle(*net1, [x]) == eval_oracle(*net2, [x]) for x in pts)


def random_int_net(rng: random.Random, m: int, n: int, k: int, lo: int = -2, hi: int = 2) -> tuple:
    V = [[rng.randint(lo, hi) for _ in range(n)] for _ in range(k)]
    A = [[rng.randint(lo, hi) for _ in range(m)] for _ in range(n)]
    b = [rng.randint(lo, hi) for _ in range(n)]
    c = [rng.randint(lo, hi) for _ in range(k)]
    return V, A, b, c


def rank_q(rows) -> int:
    """Rank over ℚ by plain Fraction elimination (independent of relusym.linalg)."""
    M = [list(map(Fraction, r)) for r in rows]
    rank, cols = 0, len(M[0]) if M else 0
    for c in range(cols):
        piv = next((i for i in range(rank, len(M)) if M[i][c] != 0), None)
        if piv is None:
            continue
        M[rank], M[piv] = M[piv], M[rank]
        for i in range(len(M)):
            if i != rank and M[i][c] != 0:
                f = M[i][c] / M[rank][c]
                M[i] = [x - f * y for x, y in zip(M[i], M[rank], strict=True)]
        rank += 1
    return rank
