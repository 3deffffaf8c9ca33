"""Regions and hyperplanes of :func:`relusym.identify`: the affine region beside each kink of a line, the
hyperplane a jump of the Jacobian defines, the steps that stay inside a region, and the dual-basis pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._identify.lines import LineResult, pred_error
from relusym._identify.session import BASIS_STEP, ERR_SAFETY, EXACT_STEP, FLOAT_STEP, POOR, TOL_FACTOR, Session
from relusym.errors import IdentificationError

__all__ = [
    "Hyper",
    "Region",
    "affine",
    "basis_regions",
    "check_regions",
    "enlarge_steps",
    "line_hypers",
    "line_regions",
    "measure_basis",
    "model_values",
    "pre_activations",
    "redo_steps",
    "safe_steps",
    "set_errors",
    "step_basis",
    "unsafe_steps",
]


# ----------------------------------------------------------------------------------------------------------
# Jacobians and hyperplanes
@dataclass
class Region:
    """A point x of the line with its value F, its step sizes h (per coordinate) and the values F_j at
    x + h_j e_j: its Jacobian is (F_j − F)/h_j."""

    x: Any
    F: np.ndarray
    h: list[Any]
    Fj: np.ndarray  # (m, k)
    verified: bool = False  # passed the random-direction check
    basis: _Basis | None = None  # float mode: steps x + h_i r_i along the columns r_i of a basis, not e_j
    corr: np.ndarray | None = None  # (m, k): G₀·(rounding of x + h_i r_i), removed from the differences
    _G: np.ndarray | None = None
    _err: np.ndarray | None = None

    def jacobian(self) -> np.ndarray:  # k × m
        if isinstance(self.F, np.ndarray) and self.F.dtype == np.float64 and self.basis is None:
            return np.asarray((self.Fj - self.F[None, :]) / np.asarray(self.h, dtype=np.float64)[:, None]).T
        if self.basis is not None:
            if self._G is None:
                assert self.corr is not None
                g = (self.Fj - self.F[None, :] - self.corr) / np.asarray(self.h)[:, None]  # (m, k): G r_i
                self._G = g.T @ self.basis.Rinv
            return self._G
        cols = [(self.Fj[j] - self.F) / self.h[j] for j in range(len(self.h))]
        return np.stack(cols, axis=1)

    def step_errors(self, session: Session) -> np.ndarray:
        """Float mode: the error of each measured directional derivative (the noise of the two values over the
        step); the rows of the basis's inverse are unit vectors, so these add in quadrature into the error
        of the Jacobian."""
        h = np.abs(np.asarray(self.h, dtype=np.float64))
        if self.basis is None:
            return 2.0 * session.noise(self.F, float(np.linalg.norm(np.asarray(self.x, dtype=np.float64)))) / h
        if self._err is None:
            # far out, the oracle rounds the larger query point too: its noise grows with |x + s r|
            xn = float(np.linalg.norm(np.asarray(self.x, dtype=np.float64)))
            mag = session.y0 + np.max(np.abs(np.asarray(self.Fj, dtype=np.float64)), axis=1)
            far = session.eps * (mag + session.g0 * (0.5 * session.scale + xn + h * self.basis.norms))
            self._err = (session.noise(self.F, xn) + far) / h
        return self._err


@dataclass
class _Basis:
    """Float mode: step directions for Jacobians far longer than the coordinate steps a region allows.  With
    the recovered unit normals â_w (w = 1..n ≤ m) as the rows of Â, the columns of R are the dual directions
    D = Â⁺ (moving along d_w changes a_w·x by the step and leaves every other a_w'·x alone) followed by an
    orthonormal basis Q of the common orthogonal complement (moving there changes no a_w·x).  A step along
    d_w away from hyperplane w, or along any column of Q, therefore crosses no hyperplane however long it is,
    up to the error of the recovered normals.  Rinv = [Â; Qᵀ] is R's inverse; its rows are unit vectors, so
    the Jacobian G = g·Rinv (g_i = G r_i) has error √(Σ δg_i²)."""

    region: np.ndarray  # m × m
    Rinv: np.ndarray  # m × m
    q: int  # the first q columns are the dual directions of the hyperplanes ``hyps``, in order
    norms: np.ndarray  # |r_i|
    hyps: list[Hyper]


@dataclass
class Hyper:
    """A recovered neuron v σ(a·x + b) (a canonical in exact mode, a unit vector in float mode)."""

    a: np.ndarray
    b: Any
    v: np.ndarray
    err_w: float = 0.0  # float mode: estimated relative error of (a, b)
    err_v: float = 0.0  # and of v
    rank_gap: float = 0.0
    da: float = 0.0  # float mode, before the safety factor: the error of the unit normal a
    db: float = 0.0  # and of b


def line_regions(session: Session, line: LineResult, T0: Any, which: Sequence[int] | None = None) -> dict[int, Region]:
    """Jacobians of the regions (indices 0..N) of a line (all of them, or those in ``which``)."""
    N = len(line.kinks)
    idx = list(range(N + 1)) if which is None else sorted(set(which))
    bases: list[Any] = []
    halves: list[Any] = []
    for i in idx:
        if N == 0:
            t, hw = session.num(0), T0
        elif i == 0:
            hw = (line.kinks[1] - line.kinks[0]) / 2 if N > 1 else T0
            t = line.kinks[0] - hw
        elif i == N:
            hw = (line.kinks[-1] - line.kinks[-2]) / 2 if N > 1 else T0
            t = line.kinks[-1] + hw
        else:
            hw = (line.kinks[i] - line.kinks[i - 1]) / 2
            t = line.kinks[i - 1] + hw
        bases.append(t)
        halves.append(hw)
    out: dict[int, Region] = {}
    chunk = max(1, 4096 // (session.m + 1))
    for s0 in range(0, len(idx), chunk):
        part = list(range(s0, min(len(idx), s0 + chunk)))
        pts: list[Any] = []
        meta = []
        for q in part:
            t, hw = bases[q], halves[q]
            if session.exact:
                x = tuple(pi + t * di for pi, di in zip(line.p, line.d, strict=True))
                h = hw * EXACT_STEP
                pts.append(x)
                for j in range(session.m):
                    pts.append(tuple(xv + (h if jj == j else 0) for jj, xv in enumerate(x)))
            else:
                x = line.p + t * line.d
                h = float(hw) * FLOAT_STEP
                pts.append(x)
                E = np.tile(x, (session.m, 1))
                E[np.arange(session.m), np.arange(session.m)] += h
                pts.extend(list(E))
            meta.append((x, h))
        Y = session.query(pts if session.exact else np.array(pts))
        for r, q in enumerate(part):
            x, h = meta[r]
            blk = Y[r * (session.m + 1) : (r + 1) * (session.m + 1)]
            hs = [h] * session.m
            if not session.exact:
                xs = np.array(x)
                hs = [float((xs[j] + h) - xs[j]) for j in range(session.m)]  # the step actually taken
            out[idx[q]] = Region(x, blk[0], hs, blk[1:].copy())
    return out


def check_regions(session: Session, regs: list[Region]) -> None:
    """One query per region in a random direction r: f(x + r) must equal f(x) + G r.  A coordinate step that
    crossed a hyperplane corrupts G and fails this check (with probability one); such regions are redone with
    halved steps."""
    todo = list(regs)
    for _ in range(40):
        if not todo:
            return
        pts = []
        dirs = []
        for region in todo:
            r: Any
            if session.exact:
                r = [
                    Fraction(int(session.rng.integers(1, 2**10)) * (1 if session.rng.random() < 0.5 else -1), 2**10)
                    for _ in range(session.m)
                ]
                hmin = min(region.h)
                r = [x * hmin / session.m for x in r]
                pts.append(tuple(xv + rv for xv, rv in zip(region.x, r, strict=True)))
            else:
                # inside the simplex of x and its steps x + h_j e_j (convex, so inside the region when every step
                # is): a random direction of length min |h| could leave it where the steps are one-sided
                r = session.rng.uniform(0.1, 1.0, session.m) / session.m * np.asarray(region.h, dtype=np.float64)
                x = np.asarray(region.x) + r
                r = x - np.asarray(region.x)
                pts.append(x)
            dirs.append(r)
        Y = session.query(pts if session.exact else np.array(pts))
        bad = []
        for region, r, y in zip(todo, dirs, Y, strict=True):
            G = region.jacobian()
            if session.exact:
                pred = region.F + np.array(
                    [sum((G[q, j] * r[j] for j in range(session.m)), Fraction(0)) for q in range(session.k)],
                    dtype=object,
                )
                ok = bool(np.all(pred == y))
            else:
                pred = region.F + np.asarray(G, dtype=np.float64) @ r
                rn = np.abs(r) / np.asarray(region.h, dtype=np.float64)
                tol = session.tol(y, float(np.linalg.norm(np.asarray(region.x, dtype=np.float64)))) * (
                    2.0 + 2.0 * float(rn.sum())
                )
                ok = float(np.max(np.abs(pred - y))) <= tol
            if not ok:
                bad.append(region)
        for region in bad:
            redo_steps(session, region, {j: region.h[j] / 2 for j in range(session.m)})
        todo = bad
    raise IdentificationError("the oracle is not affine near a point between two kinks of a line, at any step size")


def _hyper_from_jump(session: Session, J: np.ndarray, xk: Any, d: Any) -> Hyper:
    """The neuron v σ(a·x + b) whose crossing at xk (moving along d) makes the Jacobian jump by J."""
    if session.exact:
        rows = [r for r in range(session.k) if any(x != 0 for x in J[r])]
        if not rows:
            raise IdentificationError("a kink of a line carries no Jacobian jump: the steps were not safe")
        r = rows[0]
        p = next(j for j in range(session.m) if J[r, j] != 0)
        a = np.array([J[r, j] / J[r, p] for j in range(session.m)], dtype=object)
        col = J[:, p]
        if not all(J[rr, j] == col[rr] * a[j] for rr in range(session.k) for j in range(session.m)):
            raise IdentificationError(
                "the Jacobian jump at a kink is not of rank one: two hyperplanes cross the line at one point"
            )
        b = -sum((a[j] * xk[j] for j in range(session.m)), Fraction(0))
        sd = sum((a[j] * d[j] for j in range(session.m)), Fraction(0))
        v = col if sd > 0 else -col
        return Hyper(a, b, np.array(list(v), dtype=object))
    Jf = np.asarray(J, dtype=np.float64)
    U, sv, Vt = np.linalg.svd(Jf, full_matrices=False)
    a = Vt[0]
    if float(a @ d) < 0:
        a = -a
    v = Jf @ a
    b = -float(a @ xk)
    gap = float(sv[1] / sv[0]) if len(sv) > 1 and sv[0] > 0 else 0.0
    return Hyper(a, b, v, rank_gap=gap)


# ----------------------------------------------------------------------------------------------------------
# the model f(x) = Σ v σ(a·x + b) + M x + e
def pre_activations(session: Session, hypers: list[Hyper], X: Any) -> np.ndarray:
    """Pre-activations a_u·x + b_u (N × B) at the points X (B × m)."""
    if session.exact:
        out = np.empty((len(hypers), len(X)), dtype=object)
        for u, h in enumerate(hypers):
            for i, x in enumerate(X):
                out[u, i] = sum((h.a[j] * x[j] for j in range(session.m) if h.a[j]), h.b)
        return out
    A = np.array([h.a for h in hypers]).reshape(len(hypers), session.m)
    b = np.array([h.b for h in hypers], dtype=np.float64)
    return A @ np.asarray(X, dtype=np.float64).T + b[:, None]


def model_values(session: Session, hypers: list[Hyper], M: np.ndarray, e: np.ndarray, X: Any) -> np.ndarray:
    """f̂(X) (B × k)."""
    Z = pre_activations(session, hypers, X)
    if session.exact:
        out = np.empty((len(X), session.k), dtype=object)
        for i, x in enumerate(X):
            for r in range(session.k):
                s = e[r] + sum((M[r, j] * x[j] for j in range(session.m) if M[r, j]), Fraction(0))
                for u, h in enumerate(hypers):
                    if Z[u, i] > 0:
                        s += h.v[r] * Z[u, i]
                out[i, r] = s
        return out
    V = np.array([h.v for h in hypers]).reshape(len(hypers), session.k)
    return np.asarray(np.maximum(Z, 0.0).T @ V + np.asarray(X) @ M.T + e)


def affine(session: Session, hypers: list[Hyper], R0: Region) -> tuple[np.ndarray, np.ndarray]:
    """M and e from one region's Jacobian and value, with the active kink terms removed."""
    G = R0.jacobian()
    x = R0.x
    Z = pre_activations(session, hypers, [x])[:, 0] if hypers else np.zeros(0)
    if session.exact:
        M = G.copy()
        e = R0.F.copy()
        for u, h in enumerate(hypers):
            if Z[u] > 0:
                for r in range(session.k):
                    for j in range(session.m):
                        M[r, j] -= h.v[r] * h.a[j]
                    e[r] -= h.v[r] * Z[u]
        for r in range(session.k):
            e[r] -= sum((M[r, j] * x[j] for j in range(session.m)), Fraction(0))
        return M, e
    act = Z > 0
    M = np.asarray(G, dtype=np.float64).copy()
    e = np.asarray(R0.F, dtype=np.float64).copy()
    if act.any():
        V = np.array([h.v for h in hypers])[act]
        A = np.array([h.a for h in hypers])[act]
        M -= V.T @ A
        e -= V.T @ Z[act]
    e -= M @ np.asarray(x, dtype=np.float64)
    return M, e


def unsafe_steps(session: Session, hypers: list[Hyper], region: Region) -> dict[int, Any]:
    """Coordinates j whose step x + h_j e_j crosses a recovered hyperplane, with a safe replacement step.  A
    region measured along a basis of long steps chose them against the recovered hyperplanes and their
    errors, and passed its own check: it has none."""
    if not hypers or region.basis is not None:
        return {}
    Z = pre_activations(session, hypers, [region.x])[:, 0]
    out: dict[int, Any] = {}
    if session.exact:
        for j in range(session.m):
            h = region.h[j]
            bad = False
            best = None
            for u, hy in enumerate(hypers):
                aj = hy.a[j]
                if aj == 0:
                    continue
                z = Z[u]
                if z == 0 or (z > 0) != (z + h * aj > 0) or z + h * aj == 0:
                    bad = True
                if z != 0 and (z > 0) != (aj > 0):
                    lim = abs(z / aj)
                    best = lim if best is None or lim < best else best
            if bad:
                out[j] = (best / 2) if best is not None else h / 2
        return out
    h = np.asarray(region.h, dtype=np.float64)
    plus, minus = safe_steps(hypers, np.asarray(region.x, dtype=np.float64))
    safe = np.where(h > 0, plus, minus)
    for j in np.nonzero(np.abs(h) >= 0.9 * safe)[0].tolist():
        out[j] = float(np.sign(h[j])) * 0.45 * float(safe[j])
    return out


def safe_steps(hypers: list[Hyper], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float mode: for each coordinate j the largest |h| such that x + h e_j (h > 0, resp. h < 0) crosses no
    recovered hyperplane."""
    if not hypers:
        return np.full(x.shape[0], np.inf), np.full(x.shape[0], np.inf)
    A = np.array([hy.a for hy in hypers])  # N × m
    z = A @ x + np.array([hy.b for hy in hypers], dtype=np.float64)
    sa, sz = np.sign(A), np.sign(z)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(z)[:, None] / np.abs(A)
    plus = np.where(sa * sz < 0, ratio, np.inf).min(axis=0)  # moving along +e_j decreases |z| when signs differ
    minus = np.where(sa * sz > 0, ratio, np.inf).min(axis=0)
    return plus, minus


def enlarge_steps(session: Session, hypers: list[Hyper], regs: list[Region], cap: float) -> int:
    """Float mode: redo each coordinate step with the largest safe step (either direction) that the recovered
    hyperplanes allow, where that is at least twice the step used: the Jacobian error is noise / step."""
    count = 0
    for region in regs:
        if region.basis is not None:
            continue
        x = np.asarray(region.x, dtype=np.float64)
        plus, minus = safe_steps(hypers, x)
        best = np.minimum(np.maximum(plus, minus), cap) * 0.45
        sign = np.where(plus >= minus, 1.0, -1.0)
        h = np.abs(np.asarray(region.h, dtype=np.float64))
        js = np.nonzero(best > 2.0 * h)[0]
        if js.size:
            redo_steps(session, region, {int(j): float(sign[j] * best[j]) for j in js})
            region.verified = False
            count += int(js.size)
    return count


def step_basis(hypers: list[Hyper]) -> _Basis | None:
    """Float mode: the basis of long steps (see :class:`_Basis`) for the recovered hyperplanes, or None when
    there are more of them than inputs or their normals are nearly dependent (then every direction moves
    several a_w·x at once and the coordinate steps are kept).  A hyperplane whose estimated error exceeds
    2^-16 (a kink too small for the coordinate steps to measure) is left out: its normal would only mislead
    the steps, which may therefore cross it; the check of each region then fails and it keeps its
    coordinate steps."""
    hypers = [h for h in hypers if h.err_w <= POOR]
    if not hypers:
        return None
    A = np.array([h.a for h in hypers], dtype=np.float64)
    n, m = A.shape
    if n > m:
        return None
    A = A / np.linalg.norm(A, axis=1)[:, None]
    U, sv, Vt = np.linalg.svd(A, full_matrices=True)
    if not sv[-1] > 1e-4 * sv[0]:
        return None
    D = Vt[:n].T @ (U.T / sv[:, None])  # Â⁺: Â D = I
    Q = Vt[n:].T  # Â Q = 0, QᵀQ = I, QᵀD = 0
    region = np.hstack([D, Q])
    return _Basis(region, np.vstack([A, Q.T]), n, np.linalg.norm(region, axis=0), hypers)


def _basis_steps(session: Session, B: _Basis, x: np.ndarray, factor: float) -> np.ndarray:
    """The signed step along each column of the basis at x: ``factor``·max(scale, |x|), away from its
    hyperplane for a dual direction, and short enough that the estimated error of every other recovered
    normal cannot make it cross that hyperplane (a step s r_i moves a_w'·x, w' ≠ i, by at most
    s·err_w'·|r_i| away from its recovered value)."""
    m, q, hypers = session.m, B.q, B.hyps
    z = B.Rinv[:q] @ x + np.array([float(h.b) for h in hypers]) / np.array([float(np.linalg.norm(h.a)) for h in hypers])
    err = np.array([max(float(h.err_w), 2.0**-52) for h in hypers])
    sg = np.ones(m)
    sg[:q] = np.where(z >= 0, 1.0, -1.0)
    sg[q:] = np.where(session.rng.random(m - q) < 0.5, 1.0, -1.0)
    lim = np.abs(z) / (8.0 * err)
    order = np.argsort(lim)
    mins = np.full(m, lim[order[0]])
    mins[order[0]] = lim[order[1]] if q > 1 else np.inf  # d_w need not avoid hyperplane w
    hmax = factor * max(session.scale, float(np.linalg.norm(x)))
    return np.asarray(sg * np.minimum(hmax, 0.5 * mins / B.norms))


def measure_basis(
    session: Session, B: _Basis, base: list[tuple[np.ndarray, np.ndarray | None]], factor: float
) -> list[Region | None]:
    """Float mode: the Jacobian at each base point x (with its value F, queried when None) along the basis of
    long steps: m queries (m + 1 without F) and one check each.  The check is one query at x + Σ c_i s_i r_i
    with 0 < c_i ≤ 1/m, which moves away from every recovered hyperplane: a step that crossed a hyperplane
    corrupts the Jacobian and fails it with probability one.  A point whose check fails is measured again
    with steps 16 times shorter, twice; then it gets None."""
    m = session.m
    out: list[Region | None] = [None] * len(base)
    todo = list(range(len(base)))
    Fs = [F for _x, F in base]
    missing = [i for i in todo if Fs[i] is None]
    if missing:
        Y0 = session.query(np.array([base[i][0] for i in missing]))
        for r, i in enumerate(missing):
            Fs[i] = Y0[r]
    shrink = 1.0
    chunk = max(1, 8192 // (m + 1))
    for _round in range(3):
        failed = []
        for s0 in range(0, len(todo), chunk):
            part = todo[s0 : s0 + chunk]
            pts, metas = [], []
            for i in part:
                x = np.asarray(base[i][0], dtype=np.float64)
                st = _basis_steps(session, B, x, factor * shrink)
                D = (B.region * st[None, :]).T  # row i: the step s_i r_i
                X = x[None, :] + D
                pts.append(X)
                metas.append((i, x, st, (X - x[None, :]) - D))  # what the rounding of x + s_i r_i added
            Y = session.query(np.concatenate(pts, axis=0))
            regs = []
            for r, (i, x, st, E) in enumerate(metas):
                F = Fs[i]
                assert F is not None
                region = Region(
                    x, F, st.tolist(), Y[r * m : (r + 1) * m].copy(), basis=B, corr=np.zeros((m, session.k))
                )
                region.corr = E @ np.asarray(region.jacobian()).T  # G·(rounding), with G from the uncorrected steps
                region._G = None
                regs.append(region)
            cs = [session.rng.uniform(0.1, 1.0, m) / m for _ in metas]
            xs = [region.x + B.region @ (c * np.asarray(region.h)) for region, c in zip(regs, cs, strict=True)]
            Yc = session.query(np.array(xs))
            for (i, _x, _st, _E), region, c, xc, y in zip(metas, regs, cs, xs, Yc, strict=True):
                pred = region.F + region.jacobian() @ (xc - region.x)
                e_dir = float(c @ (region.step_errors(session) * np.abs(np.asarray(region.h))))
                tol = (
                    2.0 * session.tol(np.maximum(np.abs(y), np.abs(region.F)), float(np.linalg.norm(xc)))
                    + TOL_FACTOR * e_dir
                )
                if float(np.max(np.abs(pred - y))) <= tol:
                    region.verified = True
                    out[i] = region
                else:
                    failed.append(i)
        todo = failed
        if not todo:
            break
        shrink /= 16.0
    return out


def basis_regions(session: Session, hypers: list[Hyper], line_regs: list[dict[int, Region]]) -> bool:
    """Float mode: measure the Jacobian of every region of the lines (not yet so measured) again along the
    basis of long steps of the recovered hyperplanes, reusing the value at its point.  The Jacobian error is
    noise / step, so this gains the ratio of these steps to the coordinate steps the region allowed (often
    2^6 or more).  A region whose check keeps failing keeps its coordinate steps.  Returns whether the basis
    exists (False: more hyperplanes than inputs, or nearly dependent normals)."""
    B = step_basis(hypers)
    if B is None:
        return False
    # a region measured before some hyperplane was found may have stepped across it: measure it again
    A = np.array([h.a for h in B.hyps], dtype=np.float64)
    bv = np.array([float(h.b) for h in B.hyps])
    AR: dict[int, np.ndarray] = {}
    todo = []
    for rg in line_regs:
        for key, region in rg.items():
            if region.basis is not None:
                if id(region.basis) not in AR:
                    AR[id(region.basis)] = A @ region.basis.region
                z = A @ np.asarray(region.x) + bv
                zs = z[:, None] + AR[id(region.basis)] * np.asarray(region.h)[None, :]
                if not bool(np.any((zs > 0) != (z > 0)[:, None])):
                    continue
            todo.append((rg, key))
    regs = measure_basis(session, B, [(np.asarray(rg[key].x), rg[key].F) for rg, key in todo], BASIS_STEP)
    for (rg, key), Rb in zip(todo, regs, strict=True):
        if Rb is not None:
            rg[key] = Rb
    return True


def redo_steps(session: Session, region: Region, fix: dict[int, Any]) -> None:
    js = sorted(fix)
    if session.exact:
        pts = [tuple(xv + (fix[j] if jj == j else 0) for jj, xv in enumerate(region.x)) for j in js]
        Y = session.query(pts)
        for q, j in enumerate(js):
            region.h[j] = fix[j]
            region.Fj[j] = Y[q]
        return
    x = np.asarray(region.x, dtype=np.float64)
    E = np.tile(x, (len(js), 1))
    for q, j in enumerate(js):
        E[q, j] += fix[j]
    Y = session.query(E)
    for q, j in enumerate(js):
        region.h[j] = float(E[q, j] - x[j])
        region.Fj[j] = Y[q]


def line_hypers(session: Session, line: LineResult, regs: dict[int, Region], idx: Sequence[int]) -> list[Hyper]:
    out = []
    for u in idx:
        Rm, Rp = regs[u], regs[u + 1]
        J = Rp.jacobian() - Rm.jacobian()
        t = line.kinks[u]
        xk: Any = (
            tuple(pi + t * di for pi, di in zip(line.p, line.d, strict=True)) if session.exact else line.p + t * line.d
        )
        hy = _hyper_from_jump(session, J, xk, line.d)
        if not session.exact:
            _float_errors(session, hy, Rm, Rp, line, u, xk)
        out.append(hy)
    return out


def _float_errors(
    session: Session, hy: Hyper, Rm: Region, Rp: Region, line: LineResult, u: int, xk: np.ndarray
) -> None:
    """Estimated relative errors of a float hyperplane and kink from the noise and the steps."""
    dG = np.zeros(session.m)
    for region in (Rm, Rp):
        dG += region.step_errors(session)
    dJ = float(np.sqrt(session.k) * np.linalg.norm(dG))
    nv = float(np.linalg.norm(hy.v))
    if nv == 0:
        hy.err_w = hy.err_v = math.inf
        return
    da = dJ / nv
    Pa, Pb = line.pieces[u], line.pieces[u + 1]
    ds = float(np.linalg.norm(np.asarray(Pa.s - Pb.s, dtype=np.float64)))
    tk = float(line.kinks[u])
    se = math.hypot(pred_error(session, Pa, tk), pred_error(session, Pb, tk))
    dt = 3.0 * se / max(ds, 1e-300)
    db = da * float(np.linalg.norm(xk)) + abs(float(hy.a @ line.d)) * dt
    hy.da, hy.db = da, db
    set_errors(hy, dJ / nv)


def set_errors(hy: Hyper, dv: float) -> None:
    """err_w and err_v from the raw errors of a, b and the relative error dv of the kink vector."""
    nw = math.hypot(1.0, float(hy.b))
    hy.err_w = ERR_SAFETY * math.hypot(hy.da, hy.db) / nw
    hy.err_v = ERR_SAFETY * (dv + hy.da)
