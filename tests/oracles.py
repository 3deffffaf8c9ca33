"""Independent oracles for the tests: plain Fraction arithmetic, no relusym code."""

from __future__ import annotations

from fractions import Fraction

import numpy as np


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


# ---------------------------------------------------------------------------------------------------------
# brute-force realization types and exact tangent dimensions of fibres (no relusym code)


def _rref_q(rows, ncols):
    """Reduced row echelon form over ℚ by plain Fraction elimination: (nonzero rows, pivot columns)."""
    M = [list(map(Fraction, r)) for r in rows]
    piv, rank = [], 0
    for c in range(ncols):
        p = next((i for i in range(rank, len(M)) if M[i][c] != 0), None)
        if p is None:
            continue
        M[rank], M[p] = M[p], M[rank]
        inv = 1 / M[rank][c]
        M[rank] = [x * inv for x in M[rank]]
        for i in range(len(M)):
            if i != rank and M[i][c] != 0:
                f = M[i][c]
                M[i] = [x - f * y for x, y in zip(M[i], M[rank], strict=True)]
        piv.append(c)
        rank += 1
    return M[:rank], piv


def _canon(vec):
    lead = next(x for x in vec if x != 0)
    return tuple(Fraction(x) / lead for x in vec)


def exact_lists(V, A, b, c):
    """(V, A, b, c) of any dtype (float16/32/64, ints, Fractions) as plain nested lists of exact Fractions."""

    def fr(x):  # numpy floats (float16 included) at their exact binary value; ints, Fractions, strings as given
        return Fraction(float(x)) if isinstance(x, (float, np.floating)) else Fraction(x)

    def rows(x):
        return [[fr(y) for y in row] for row in x]

    return rows(_tolist(V)), rows(_tolist(A)), [fr(y) for y in _tolist(b)], [fr(y) for y in _tolist(c)]


def _tolist(x):
    return x.tolist() if hasattr(x, "tolist") else list(x)


def nf_data(V, A, b, c, m=None):
    """NF = (K, M, e) of a network given as plain lists, by the definition: K a dict û → κ (κ ≠ 0); ``m`` is
    needed when there is no neuron (n = 0)."""
    k, n = len(V), len(b)
    m = m if m is not None else len(A[0]) if A else 0
    kink, M, e = {}, [[Fraction(0)] * m for _ in range(k)], [Fraction(x) for x in c]
    for i in range(n):
        v = [Fraction(V[r][i]) for r in range(k)]
        a = [Fraction(x) for x in A[i]]
        if not any(v):
            continue
        if not any(a):
            if Fraction(b[i]) > 0:
                e = [ei + Fraction(b[i]) * vi for ei, vi in zip(e, v, strict=True)]
            continue
        lam = next(x for x in a if x != 0)
        u = tuple(x / lam for x in (*a, Fraction(b[i])))
        kink[u] = [x + abs(lam) * y for x, y in zip(kink.get(u, [Fraction(0)] * k), v, strict=True)]
        if lam < 0:
            for r in range(k):
                for col in range(m):
                    M[r][col] += v[r] * a[col]
            e = [ei + Fraction(b[i]) * vi for ei, vi in zip(e, v, strict=True)]
    return {u: tuple(x) for u, x in kink.items() if any(x)}, M, e


def point_type_q(V, A, b, c, classes):
    """(S, P, t) of a point from plain lists; ``classes`` the sorted kink classes û of its normal form."""
    k, n = len(V), len(b)
    orient = {}
    for i in range(n):
        v = [Fraction(V[r][i]) for r in range(k)]
        a = [Fraction(x) for x in A[i]]
        if not any(v) or not any(a):
            continue
        lam = next(x for x in a if x != 0)
        u = tuple(x / lam for x in (*a, Fraction(b[i])))
        orient.setdefault(u, set()).add(lam > 0)
    S = tuple(j for j, u in enumerate(classes) if orient.get(u) == {False})
    P = tuple(j for j, u in enumerate(classes) if orient.get(u) == {True, False})
    t = sum(1 for u, o in orient.items() if u not in classes and o == {True, False})
    return S, P, t


def brute_types(V, A, b, c, n=None, grid=(-2, -1, 0, 1, 2)):
    """Every type (S, P, t) found among realizations of the function of (V, A, b, c) with n neurons whose
    hidden rows are small rationals: each live neuron lies on a kink class of the normal form or on an extra
    class whose normal is drawn from the canonical directions of ``grid``^m (and of the rows of
    M + Σ_S κ α̂ᵀ), with either orientation, several neurons per class allowed; the output weights of a hidden
    layer are then all solutions of a linear system, and a type occurs iff the system is solvable with every
    live v_i ≠ 0 (an affine space avoids the subspaces v_i = 0 iff it lies in none).  Null, constant and
    same-orientation cancelled neurons do not change the type and are left out."""
    from itertools import combinations, combinations_with_replacement, product

    k, m = len(V), len(A[0])
    n = len(b) if n is None else n
    K, M, _e = nf_data(V, A, b, c)
    classes = sorted(K)
    N = len(classes)
    if N > n:
        return set()
    pool = {_canon(v) for v in product(grid, repeat=m) if any(v)}
    for r in range(N + 1):
        for S in combinations(range(N), r):
            R = [
                [M[a][col] + sum((K[classes[j]][a] * classes[j][col] for j in S), Fraction(0)) for col in range(m)]
                for a in range(k)
            ]
            pool |= {_canon(row) for row in R if any(row)}
    pool = sorted(pool)
    L = (n - N) // 2
    roles = [("kink", j, s) for j in range(N) for s in (1, -1)] + [("extra", l, s) for l in range(L) for s in (1, -1)]
    found = set()
    for size in range(N, n + 1):
        for ms in combinations_with_replacement(roles, size):
            if {j for kind, j, _ in ms if kind == "kink"} != set(range(N)):
                continue
            used = sorted({j for kind, j, _ in ms if kind == "extra"})
            if used != list(range(len(used))):
                continue
            if any({s for kind, j, s in ms if kind == "extra" and j == l} != {1, -1} for l in used):
                continue
            for normals in combinations_with_replacement(pool, len(used)):
                if _solvable_with_live(ms, normals, classes, K, M, k, m):
                    S = tuple(j for j in range(N) if {s for kd, jj, s in ms if kd == "kink" and jj == j} == {-1})
                    P = tuple(j for j in range(N) if {s for kd, jj, s in ms if kd == "kink" and jj == j} == {1, -1})
                    found.add((S, P, len(used)))
                    break
    return found


def _solvable_with_live(ms, normals, classes, K, M, k, m):
    """Whether Σ_class v_i = κ (0 on extra classes) and Σ_neg v_i (−α_i)ᵀ = M have a solution with every
    v_i ≠ 0 (|λ_i| = 1 on canonical rows: the scales only rescale v_i)."""
    n = len(ms)
    nv = k * n
    rows = []

    def alpha(i):
        kind, j, _ = ms[i]
        return classes[j][:m] if kind == "kink" else normals[j]

    groups = {}
    for i, (kind, j, _) in enumerate(ms):
        groups.setdefault((kind, j), []).append(i)
    for (kind, j), mem in groups.items():
        target = K[classes[j]] if kind == "kink" else (Fraction(0),) * k
        for a in range(k):
            row = [Fraction(0)] * (nv + 1)
            for i in mem:
                row[i * k + a] = Fraction(1)
            row[nv] = Fraction(target[a])
            rows.append(row)
    for a in range(k):
        for col in range(m):
            row = [Fraction(0)] * (nv + 1)
            for i, (_, _, s) in enumerate(ms):
                if s < 0:
                    row[i * k + a] = -Fraction(alpha(i)[col])
            row[nv] = Fraction(M[a][col])
            rows.append(row)
    red, piv = _rref_q(rows, nv + 1)
    if piv and piv[-1] == nv:
        return False
    free = [x for x in range(nv) if x not in piv]
    # v_i is identically 0 iff every coordinate of v_i is a pivot with zero constant and no free dependence
    for i in range(n):
        zero = True
        for a in range(k):
            x = i * k + a
            if x in free:
                zero = False
                break
            row = red[piv.index(x)]
            if row[nv] != 0 or any(row[f] != 0 for f in free):
                zero = False
                break
        if zero:
            return False
    return True


def tangent_dimension_q(V, A, b, c):
    """dim Ω − rank over ℚ of the Jacobian at θ of the equations of θ's piece of its fibre (each neuron keeps
    its role: v = 0, a = 0, or its hyperplane class and orientation; the normal form is kept): plain
    Fractions, written independently of relusym."""
    k, n, m = len(V), len(b), len(A[0])
    V = [[Fraction(x) for x in row] for row in V]
    A = [[Fraction(x) for x in row] for row in A]
    b = [Fraction(x) for x in b]
    K, _M, _e = nf_data(V, A, b, c)
    nv = k * n + n * (m + 1) + k
    iv = lambda r, i: r * n + i  # noqa: E731
    iw = lambda i, col: k * n + i * (m + 1) + col  # noqa: E731  (col = m: the bias)
    W = [A[i] + [b[i]] for i in range(n)]
    rows = []

    def new():
        rows.append([Fraction(0)] * nv)
        return rows[-1]

    role = []
    for i in range(n):
        if not any(V[r][i] for r in range(k)):
            role.append("null")
            for r in range(k):
                new()[iv(r, i)] = 1
        elif not any(A[i]):
            role.append("const" if b[i] > 0 else "null")
            for col in range(m):
                new()[iw(i, col)] = 1
        else:
            role.append("hyper")
    cls = {}
    for i in range(n):
        if role[i] == "hyper":
            lam = next(x for x in A[i] if x != 0)
            cls.setdefault(tuple(x / lam for x in W[i]), []).append(i)
    neg = []
    for u, mem in cls.items():
        p = next(col for col in range(m) if u[col] != 0)
        sg = {i: (1 if W[i][p] > 0 else -1) for i in mem}
        neg += [i for i in mem if sg[i] < 0]
        for idx, i in enumerate(mem):
            ref = u if u in K else (W[mem[0]] if idx else None)
            if ref is None:
                continue
            for col in range(m + 1):
                if col == p:
                    continue
                row = new()
                if u in K:  # w_i[col] − w_i[p] û[col]
                    row[iw(i, col)] += 1
                    row[iw(i, p)] -= u[col]
                else:  # w_i[col] w_0[p] − w_0[col] w_i[p]
                    i0 = mem[0]
                    row[iw(i, col)] += W[i0][p]
                    row[iw(i0, p)] += W[i][col]
                    row[iw(i0, col)] -= W[i][p]
                    row[iw(i, p)] -= W[i0][col]
        for r in range(k):
            row = new()
            for i in mem:
                row[iw(i, p)] += sg[i] * V[r][i]
                row[iv(r, i)] += sg[i] * W[i][p]
    for r in range(k):
        for col in range(m):
            row = new()
            for i in neg:
                row[iv(r, i)] += A[i][col]
                row[iw(i, col)] += V[r][i]
        row = new()
        row[k * n + n * (m + 1) + r] = 1
        for i in range(n):
            if role[i] == "const" or i in neg:
                row[iv(r, i)] += b[i]
                row[iw(i, m)] += V[r][i]
    return nv - rank_q(rows)
