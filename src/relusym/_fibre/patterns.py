"""Which types (S, P, t) of a fibre occur, and the dimension of each piece: the theorem of docs/math/strata.md,
decided by exact linear algebra over ℚ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

from relusym._core.analysis import KinkData
from relusym._exact import linalg as linalg

__all__ = ["Pattern", "patterns", "x_star"]


# ----------------------------------------------------------------------------------------------------------
# feasibility and dimension of a type (S, P, t): the theorem of docs/math/strata.md
@dataclass(frozen=True)
class Pattern:
    """A way to realize type (S, P, t) (docs/math/strata.md): the kink classes J0 ⊆ P whose negative kink is
    0 (two cancelling negative neurons), Jk ⊆ P whose negative kink is κ (two cancelling positive neurons),
    u of the t cancelled mixed classes with both sides cancelling (four neurons), the other t' = t − u with
    nonzero negative kinks s'_l whose matrix C = [s'_1 … s'_t'] has rank ``s``.  ``neurons`` is the number of
    neurons this core needs, ``dimension`` the dimension of its piece with the other n − neurons spare
    neurons each adding δ."""

    J0: tuple[int, ...]
    Jk: tuple[int, ...]
    u: int
    s: int
    neurons: int
    dimension: int


def _free_columns_pinned(kd: KinkData, Sp: Sequence[int], Pp: Sequence[int]) -> bool:
    """Whether on V = {S_P : rank(R_{S'} + S_P A_P) = ϱ} (an affine space) some column s_j, j ∈ P', is the
    constant 0 or κ_j.  V = {S_P : Yᵀ(R + S_P A_P) = 0} with Y a basis of the left kernel of R B, B a basis
    of the kernel of A_P."""
    k, m = kd.k, kd.m
    p = len(Pp)
    if not p:
        return False
    R = kd.R(Sp)
    AP = [list(kd.alpha[j]) for j in Pp]
    B = linalg.nullspace(AP, m)
    RB = [[sum((R[r][c] * vec[c] for c in range(m)), Fraction(0)) for vec in B] for r in range(k)]
    if B:
        Y = linalg.nullspace([[RB[r][q] for r in range(k)] for q in range(len(B))], k)
    else:
        Y = [tuple(Fraction(int(a == r)) for a in range(k)) for r in range(k)]
    if not Y:
        return False
    # unknowns x[r*p + j] = S_P[r][j]; equations Σ_r y_r (Σ_j S[r][j] A[j][c] + R[r][c]) = 0
    eqs: list[list[Fraction]] = []
    rhs: list[Fraction] = []
    for y in Y:
        for c in range(m):
            eqs.append([y[r] * AP[j][c] for r in range(k) for j in range(p)])
            rhs.append(-sum((y[r] * R[r][c] for r in range(k)), Fraction(0)))
    x0 = linalg.solve(eqs, rhs)
    if x0 is None:  # pragma: no cover - V is nonempty when ϱ is the rank of R modulo the rows of A_P
        return True
    null = linalg.nullspace(eqs, k * p)
    for jj, j in enumerate(Pp):
        coords = [r * p + jj for r in range(k)]
        if any(vec[c] for vec in null for c in coords):
            continue
        val = tuple(x0[c] for c in coords)
        if not any(val) or val == kd.kappa[j]:
            return True
    return False


def _realizable(kd: KinkData, Sp: Sequence[int], Pp: Sequence[int], tp: int) -> bool:
    """Q(S', P', t'): some S_P' and t' nonzero rank-one terms solve S_P' A_P' + Σ_l s'_l α̂'_lᵀ = −R_S' with
    every column s_j ∉ {0, κ_j} (docs/math/strata.md, Lemma 3)."""
    rho = kd.rho(Sp, Pp)
    if tp == 0:
        return rho == 0 and not _free_columns_pinned(kd, Sp, Pp)
    if tp == 1 and rho == 0:
        return bool(Pp)
    if rho > tp:
        return False
    if rho == tp:
        return not _free_columns_pinned(kd, Sp, Pp)
    return True


def x_star(tp: int, rho: int, k: int, mbar: int, d_nonzero: bool) -> list[tuple[int, int]]:
    """[(s, dim)] for dim {(C_{k×t'}, D_{m̄×t'}) : C Dᵀ = R̄, rank C = s, columns of C ≠ 0 (and of D when
    ``d_nonzero``)}, rank R̄ = ϱ: (s − ϱ)(k − s) + s t' + m̄(t' − s) (docs/math/strata.md, Lemma 4)."""
    if tp == 0:
        return [(0, 0)] if rho == 0 else []
    out = []
    for s in range(max(rho, 1), min(k, tp) + 1):
        if d_nonzero and s == tp and rho == 0:
            continue
        out.append((s, (s - rho) * (k - s) + s * tp + mbar * (tp - s)))
    return out


def patterns(kd: KinkData, n: int, S: Sequence[int], P: Sequence[int], t: int) -> list[Pattern]:
    """Every way (J0, Jk, u, s) to realize type (S, P, t) with at most n neurons, with the dimension of its
    piece, highest first; empty iff no point of the fibre in Ω(m, n, k) has this type (the theorem of
    docs/math/strata.md)."""
    N, k, m = kd.N, kd.k, kd.m
    delta = max(m + 1, k + 1)
    base = N + len(P) + 2 * t
    out: list[Pattern] = []
    if base > n:
        return out
    slack = n - base
    Pl = list(P)
    for u in range(0, min(t, slack // 2) + 1):
        tp = t - u
        for nj in range(0, min(len(Pl), slack - 2 * u) + 1):
            for J in combinations(Pl, nj):
                for mask in range(2**nj):
                    Jk = tuple(J[i] for i in range(nj) if (mask >> i) & 1)
                    J0 = tuple(J[i] for i in range(nj) if not (mask >> i) & 1)
                    Sp = tuple(sorted((*S, *Jk)))
                    Pp = tuple(j for j in Pl if j not in J)
                    if not _realizable(kd, Sp, Pp, tp):
                        continue
                    rho = kd.rho(Sp, Pp)
                    wp = kd.rank_P(Pp)
                    neurons = base + 2 * u + nj
                    core = (N - len(P)) + 2 * len(Pp) + (k + 3) * nj + 2 * tp + (2 * k + 4 + m) * u
                    core += k * (len(Pp) - wp) + tp * wp
                    for s, x in x_star(tp, rho, k, m - wp, wp == 0):
                        out.append(Pattern(J0, Jk, u, s, neurons, core + x + (n - neurons) * delta))
    out.sort(key=lambda q: (-q.dimension, q.neurons, q.J0, q.Jk, q.u, q.s))
    return out
