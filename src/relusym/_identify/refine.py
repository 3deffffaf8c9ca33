"""Refinement of the recovered hyperplanes of :func:`relusym.identify`: repair of regions that a hyperplane
crosses, re-measurement of poorly known hyperplanes, and the distinct hyperplanes among those found.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from relusym._identify.lines import LineResult
from relusym._identify.regions import (
    Hyper,
    Region,
    check_regions,
    line_hypers,
    measure_basis,
    redo_steps,
    safe_steps,
    set_errors,
    step_basis,
    unsafe_steps,
)
from relusym._identify.session import BASIS_STEP, ERR_SAFETY, POOR, Session
from relusym.errors import IdentificationError

__all__ = [
    "distinct_hypers",
    "rebuild",
    "refine_basis",
    "refine_poor",
    "refine_worst",
    "relocate",
    "repair",
    "verify_regions",
]


def repair(
    session: Session,
    lines: list[LineResult],
    line_regs: list[dict[int, Region]],
    origin: list[tuple[int, int]],
    hypers: list[Hyper],
    rounds: int = 3,
) -> list[Hyper]:
    """Redo the steps that cross a recovered hyperplane and rebuild, for a few rounds (a hyperplane recovered
    from a corrupted Jacobian is itself wrong, so this need not converge; the random-direction check of
    :func:`verify_regions` is what guarantees clean Jacobians)."""
    for _ in range(rounds):
        changed = False
        for rg in line_regs:
            for region in rg.values():
                fix = unsafe_steps(session, hypers, region)
                if fix:
                    redo_steps(session, region, fix)
                    changed = True
        if not changed:
            return hypers
        hypers = rebuild(session, lines, line_regs, origin)
    return hypers


def verify_regions(
    session: Session,
    lines: list[LineResult],
    line_regs: list[dict[int, Region]],
    origin: list[tuple[int, int]],
    hypers: list[Hyper],
) -> list[Hyper]:
    """The random-direction check of every region (once), then rebuild and repair again if any was redone."""
    regs = [region for rg in line_regs for region in rg.values() if not region.verified]
    before = [list(region.h) for region in regs]
    check_regions(session, regs)
    for region in regs:
        region.verified = True
    if any(list(region.h) != h for region, h in zip(regs, before, strict=True)):
        hypers = rebuild(session, lines, line_regs, origin)
    hypers = repair(session, lines, line_regs, origin, hypers)
    for region in regs:
        if unsafe_steps(session, hypers, region):
            raise IdentificationError(
                "the Jacobian steps could not be made safe: the recovered hyperplanes keep moving"
            )
    return hypers


def _refine(session: Session, hypers: list[Hyper], u: int, cap: float, tries: int = 24) -> Hyper | None:
    """Float mode: measure hyperplane u again away from the line, at a point of it where the other recovered
    hyperplanes leave long coordinate steps: two Jacobians at x± = x_c ± s n (2(m + 1) queries), their jump
    gives (a, v), and the two affine maps meet on the segment at the point that gives b."""
    h = hypers[u]
    a = np.asarray(h.a, dtype=np.float64)
    n = a / np.linalg.norm(a)
    others = [hypers[i] for i in range(len(hypers)) if i != u]
    x0 = -h.b * a / float(a @ a)  # the point of the hyperplane nearest the origin
    best = None
    for q in range(tries):
        g = session.rng.standard_normal(session.m)
        g -= (g @ n) * n
        r = session.scale * (0.25 + 1.75 * session.rng.random()) / max(float(np.linalg.norm(g)), 1e-300)
        xc = x0 + (0.0 if q == 0 else r) * g
        if others:
            Ao = np.array([o.a for o in others])
            zo = Ao @ xc + np.array([o.b for o in others])
            s_max = float(np.min(np.abs(zo) / np.maximum(np.abs(Ao @ n), 1e-300)))
        else:
            s_max = cap
        s = min(0.5 * s_max, cap)
        steps = []
        for sign in (1.0, -1.0):
            x = xc + sign * s * n
            if others:
                plus, minus = safe_steps(others + [h], x)
                steps.append(np.minimum(np.maximum(plus, minus), cap))
            else:
                steps.append(np.full(session.m, cap))
        cost = float(np.sqrt(np.sum((1.0 / steps[0] + 1.0 / steps[1]) ** 2)))
        if best is None or cost < best[0]:
            best = (cost, xc, s, steps)
    assert best is not None
    _, xc, s, steps = best
    regs = []
    for sign, st in zip((1.0, -1.0), steps, strict=True):
        x = xc + sign * s * n
        plus, minus = safe_steps(others + [h], x) if others else (np.full(session.m, cap), np.full(session.m, cap))
        hs = np.where(plus >= minus, 1.0, -1.0) * 0.45 * st
        E = np.tile(x, (session.m + 1, 1))
        E[np.arange(1, session.m + 1), np.arange(session.m)] += hs
        Y = session.query(E)
        taken = [float(E[1 + j, j] - x[j]) for j in range(session.m)]
        regs.append(Region(x, Y[0], taken, Y[1:].copy()))
    check_regions(session, regs)
    Rp, Rm = regs
    Gp, Gm = Rp.jacobian(), Rm.jacobian()
    J = Gp - Gm
    _U, _sv, Vt = np.linalg.svd(J, full_matrices=False)
    a_new = Vt[0] if float(Vt[0] @ n) > 0 else -Vt[0]
    v_new = J @ a_new
    # the two affine maps along y = xc + τ n meet at the kink
    Fp = Rp.F + Gp @ (xc - Rp.x)
    Fm = Rm.F + Gm @ (xc - Rm.x)
    Jn = J @ n
    tau = -float((Fp - Fm) @ Jn) / max(float(Jn @ Jn), 1e-300)
    xk = xc + tau * n
    new = Hyper(a_new, -float(a_new @ xk), v_new)
    # errors: the Jacobian errors from the noise and steps, and the kink point from the two values
    dG = np.zeros(session.m)
    for region in regs:
        dG += 2.0 * session.noise(region.F, float(np.linalg.norm(region.x))) / np.abs(np.asarray(region.h))
    dJ = float(np.sqrt(session.k) * np.linalg.norm(dG))
    nv = float(np.linalg.norm(v_new))
    da = dJ / max(nv, 1e-300)
    dtau = 4.0 * session.noise(Rp.F) / max(float(np.linalg.norm(Jn)), 1e-300) + da * s
    db = da * float(np.linalg.norm(xk)) + dtau
    new.da, new.db = da, db
    set_errors(new, dJ / max(nv, 1e-300))
    return new


def refine_worst(
    session: Session, hypers: list[Hyper], T0: float, origin: list[tuple[int, int]]
) -> tuple[list[Hyper], dict[int, Hyper]]:
    """Re-measure (see :func:`_refine`) the hyperplanes whose estimated error is worst: those worse than
    2^-min(refine_bits, ...) or than 8× the median, at most a quarter of them."""
    err = np.array([max(h.err_w, h.err_v) for h in hypers])
    med = float(np.median(err))
    order = np.argsort(-err)
    limit = max(1, len(hypers) // 4)
    out = list(hypers)
    done: dict[int, Hyper] = {}
    for u in order[:limit].tolist():
        if err[u] <= max(8.0 * med, 2.0**-session.refine_bits):
            break
        new = _refine(session, out, u, 4.0 * T0)
        if new is not None and max(new.err_w, new.err_v) < err[u]:
            out[u] = new
            done[u] = new
            session.overrides[origin[u]] = new
    return out, done


def refine_basis(session: Session, hypers: list[Hyper], origin: list[tuple[int, int]], limit: int) -> int:
    """Float mode, with the basis of long steps: measure the worst hyperplanes (estimated error above twice
    the median, at most ``limit`` of them, worst first) a second time, at the point of the hyperplane nearest
    the origin, where the oracle rounds least: two Jacobians at x± = x₀ ± s n along the basis (2(m + 2)
    queries), whose jump gives (a, v) again.  The two measurements are averaged with weights 1/error².
    Returns the number re-measured."""
    B = step_basis(hypers)
    if B is None or limit <= 0:
        return 0
    err = np.array([max(h.err_w, h.err_v) for h in hypers])
    med = float(np.median(err))
    todo = [u for u in np.argsort(-err).tolist() if err[u] > 2.0 * med and hypers[u].err_w <= POOR][:limit]
    if not todo:
        return 0
    A = np.array([h.a for h in hypers], dtype=np.float64)
    bv = np.array([float(h.b) for h in hypers])
    base: list[tuple[np.ndarray, np.ndarray | None]] = []
    for u in todo:
        n = A[u] / np.linalg.norm(A[u])
        x0 = -bv[u] * n / float(np.linalg.norm(A[u]))
        z = A @ x0 + bv
        an = A @ n
        z[u], an[u] = np.inf, 1.0
        s_max = float(np.min(np.abs(z) / np.maximum(np.abs(an), 1e-300)))
        s = min(0.5 * s_max, 2.0**-4 * session.scale)
        base += [(x0 + s * n, None), (x0 - s * n, None)]
    regs = measure_basis(session, B, base, BASIS_STEP)
    count = 0
    for q, u in enumerate(todo):
        Rp, Rm = regs[2 * q], regs[2 * q + 1]
        if Rp is None or Rm is None:
            continue
        old = hypers[u]
        J = np.asarray(Rp.jacobian() - Rm.jacobian(), dtype=np.float64)
        _U, _sv, Vt = np.linalg.svd(J, full_matrices=False)
        a2 = Vt[0] if float(Vt[0] @ old.a) > 0 else -Vt[0]
        v2 = J @ a2
        nv = float(np.linalg.norm(v2))
        if nv == 0:
            continue
        dJ = float(np.sqrt(session.k) * np.linalg.norm(Rp.step_errors(session) + Rm.step_errors(session)))
        da2 = dJ / nv
        da1 = max(old.da, 1e-300)
        dv1 = old.err_v / ERR_SAFETY - old.da
        w1, w2 = 1.0 / da1**2, 1.0 / da2**2
        a = (w1 * np.asarray(old.a, dtype=np.float64) + w2 * a2) / (w1 + w2)
        a /= np.linalg.norm(a)
        wv1, wv2 = 1.0 / max(dv1, 1e-300) ** 2, 1.0 / da2**2
        v = (wv1 * np.asarray(old.v, dtype=np.float64) + wv2 * v2) / (wv1 + wv2)
        # b: the old hyperplane's point nearest the origin stays on the new one
        x0 = -float(old.b) * np.asarray(old.a, dtype=np.float64)
        new = Hyper(a, -float(a @ x0), v, rank_gap=old.rank_gap)
        new.da = 1.0 / math.sqrt(w1 + w2)
        new.db = old.db + new.da * float(np.linalg.norm(x0))  # b = −a·x₀ inherits the error of a
        set_errors(new, 1.0 / math.sqrt(wv1 + wv2))
        hypers[u] = new
        session.overrides[origin[u]] = new
        count += 1
    return count


def relocate(session: Session, hypers: list[Hyper], origin: list[tuple[int, int]]) -> int:
    """Float mode: the offset b of every hyperplane (not yet relocated) again, from a short line along its
    normal through its point nearest the origin: three values on each side of the crossing (no other
    recovered hyperplane crosses that segment) give two linear pieces, which meet at the crossing t*, and one
    query at t* confirms it.  On the line through the far point where a search line crossed it, the error of
    the normal times that distance would enter b; here the point is nearest the origin and the slope jump is
    the largest any line sees (‖κ‖).  7 queries each.  Returns the number relocated."""
    todo = [u for u in range(len(hypers)) if origin[u] not in session.relocated]
    if not todo:
        return 0
    A = np.array([h.a for h in hypers], dtype=np.float64)
    bv = np.array([float(h.b) for h in hypers])
    frac = np.array([-1.0, -2.0 / 3, -1.0 / 3, 1.0 / 3, 2.0 / 3, 1.0])
    plan = []
    for u in todo:
        na = float(np.linalg.norm(A[u]))
        n = A[u] / na
        x0 = -bv[u] * n / na
        z = A @ x0 + bv
        an = A @ n
        z[u], an[u] = np.inf, 1.0
        delta = min(session.scale, 0.45 * float(np.min(np.abs(z) / np.maximum(np.abs(an), 1e-300))))
        if delta > 1e-6 * session.scale:
            plan.append((u, x0, n, na, delta))
    if not plan:
        return 0
    Y = session.query(
        np.concatenate([x0[None, :] + (delta * frac)[:, None] * n[None, :] for _u, x0, n, _na, delta in plan])
    )
    fits = []
    for q, (u, x0, n, na, delta) in enumerate(plan):
        ys = Y[6 * q : 6 * q + 6]
        ts = delta * frac
        sides = []
        ok = True
        for sl in (slice(0, 3), slice(3, 6)):
            t3, y3 = ts[sl], ys[sl]
            tm = float(t3.mean())
            sl_ = ((t3 - tm) @ (y3 - y3.mean(axis=0))) / float(((t3 - tm) ** 2).sum())
            c = y3.mean(axis=0) - sl_ * tm
            res = float(np.max(np.abs(y3 - (c + np.outer(t3, sl_)))))
            ok = ok and res <= session.tol(y3[1], float(np.linalg.norm(x0)) + delta)
            sides.append((c, sl_))
        (c1, s1), (c2, s2) = sides
        ds = s2 - s1
        den = float(ds @ ds)
        tstar = float((c1 - c2) @ ds) / den if den > 0 else math.inf
        if ok and abs(tstar) < delta / 3:
            fits.append((u, x0, n, na, delta, c1, s1, c2, s2, tstar))
    if not fits:
        return 0
    Yc = session.query(np.array([x0 + t * n for _u, x0, n, _na, _d, _c1, _s1, _c2, _s2, t in fits]))
    count = 0
    for (u, x0, _n, na, delta, c1, s1, c2, s2, tstar), y in zip(fits, Yc, strict=True):
        session.relocated.add(origin[u])
        xn = float(np.linalg.norm(x0))
        tol = session.tol(y, xn + delta)
        if max(float(np.max(np.abs(y - (c1 + s1 * tstar)))), float(np.max(np.abs(y - (c2 + s2 * tstar))))) > tol:
            continue
        old = hypers[u]
        # the fitted value at t* errs by about 1.5 noise levels on each side (three points, extrapolated)
        dt = 3.0 * 1.5 * session.noise(y, xn + delta) / math.sqrt(float((s2 - s1) @ (s2 - s1)))
        new = dataclasses.replace(old, b=float(old.b) - tstar * na)
        new.db = (old.da * xn + dt) * na
        set_errors(new, old.err_v / ERR_SAFETY - old.da)
        hypers[u] = new
        session.overrides[origin[u]] = new
        count += 1
    return count


def refine_poor(session: Session, hypers: list[Hyper], T0: float, origin: list[tuple[int, int]]) -> list[Hyper]:
    """Float mode: re-measure (see :func:`_refine`) the hyperplanes too imprecise to take part in the basis of
    long steps (estimated error above 2^-16: a small kink between two close ones on its line), at most a
    quarter of them."""
    out = list(hypers)
    poor = sorted((u for u in range(len(hypers)) if hypers[u].err_w > POOR), key=lambda u: -hypers[u].err_w)
    for u in poor[: max(1, len(hypers) // 4)]:
        new = _refine(session, out, u, 4.0 * T0)
        if new is not None and max(new.err_w, new.err_v) < max(out[u].err_w, out[u].err_v):
            out[u] = new
            session.overrides[origin[u]] = new
    return out


def distinct_hypers(hypers: list[Hyper]) -> list[int]:
    """Float mode: the hyperplanes to keep when one kink class was recovered twice (on two lines, the first
    copy too imprecise for its predicted crossing to explain the kink on the second): two recovered neurons
    whose unit hyperplanes (a, b)/‖(a, b)‖ and kinks v·‖(a, b)‖ agree, up to sign, within twice the sum of
    their estimated errors are one class; the more precise copy stays."""
    if len(hypers) < 2:
        return list(range(len(hypers)))
    W = np.array([np.concatenate([np.asarray(h.a, dtype=np.float64), [float(h.b)]]) for h in hypers])
    nw = np.linalg.norm(W, axis=1)
    W /= nw[:, None]
    K = np.array([np.asarray(h.v, dtype=np.float64) for h in hypers]) * nw[:, None]  # the kinks v·‖(a, b)‖
    err = np.array([max(h.err_w, h.err_v) for h in hypers])
    drop: set[int] = set()
    for i in range(len(hypers)):
        for j in range(i + 1, len(hypers)):
            if i in drop or j in drop:
                continue
            for sg in (1.0, -1.0):
                dist = float(np.linalg.norm(W[i] - sg * W[j]))
                kv = float(np.linalg.norm(K[i] - sg * K[j])) / max(float(np.linalg.norm(K[i])), 1e-300)
                if dist <= 2.0 * (hypers[i].err_w + hypers[j].err_w) and kv <= 2.0 * (
                    hypers[i].err_v + hypers[j].err_v
                ):
                    drop.add(j if err[j] >= err[i] else i)
                    break
    return [q for q in range(len(hypers)) if q not in drop]


def rebuild(
    session: Session, lines: list[LineResult], line_regs: list[dict[int, Region]], origin: list[tuple[int, int]]
) -> list[Hyper]:
    out = []
    for li, u in origin:
        if (li, u) in session.overrides:
            out.append(session.overrides[(li, u)])
        else:
            out += line_hypers(session, lines[li], line_regs[li], [u])
    return out
