"""The held-out check of :func:`relusym.identify`: the recovered model compared with the oracle on fresh
lines and random points.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._identify.lines import LineResult
from relusym._identify.regions import Hyper, model_values, pre_activations
from relusym._identify.session import TOL_FACTOR, Session

__all__ = ["compare_line", "heldout_bound", "heldout_points"]


_Prediction = tuple[Any, Any, float, float]  # (crossing t, slope jump, tolerance of t, tolerance of the jump)


def compare_line(
    session: Session, hypers: list[Hyper], M: np.ndarray, e: np.ndarray, line: LineResult
) -> tuple[list[int], bool, float, set[int]]:
    """Kinks of the line that no recovered hyperplane explains, whether everything else agrees, the largest
    relative disagreement of the sampled values, and (float mode) the recovered hyperplanes that are imprecise
    copies of unexplained kinks (predicted nearby, with a similar slope jump, but outside their tolerance)."""
    pred, pred_index = _predictions(session, hypers, line)
    new: list[int] = []
    used: set[int] = set()
    ok = True
    merged: list[tuple[int, int, float]] = []
    for u, t in enumerate(line.kinks):
        jump = line.pieces[u + 1].s - line.pieces[u].s
        hit, tol_meas = _match_kink(session, pred, used, line, u)
        if hit is None:
            new.append(u)
            continue
        used.add(hit)
        jq, tol_j = pred[hit][1], pred[hit][3]
        if session.exact:
            if not all(x == y for x, y in zip(jq.tolist(), jump.tolist(), strict=True)):
                ok = False
            continue
        # a true hyperplane passes through the kink found (up to its location error, far smaller)
        session.kink_points.append(
            np.asarray(line.p, dtype=np.float64) + float(t) * np.asarray(line.d, dtype=np.float64)
        )
        if float(np.linalg.norm(np.asarray(jq - jump, dtype=np.float64))) > tol_j + tol_meas:
            merged.append((u, hit, tol_meas))
    if not _merged_pairs(pred, used, line, merged):
        ok = False
    stale = set() if session.exact else _stale(pred, used, line, new)
    if not _unmatched_invisible(session, pred, used, stale, line):
        ok = False
    rel = 0.0
    if not new:
        values_ok, rel = _values_agree(session, hypers, M, e, line)
        ok = ok and values_ok
    return new, ok, rel, {pred_index[q] for q in stale}


def _predictions(session: Session, hypers: list[Hyper], line: LineResult) -> tuple[list[_Prediction], list[int]]:
    """Where each recovered hyperplane crosses the line and the slope jump it makes there, with (float mode)
    how far the estimated errors let them move; and the hyperplane of each prediction."""
    p, d = line.p, line.d
    pred: list[_Prediction] = []
    pred_index: list[int] = []  # the hyperplane of each prediction
    for hi_, h in enumerate(hypers):
        if session.exact:
            ad = sum((h.a[j] * d[j] for j in range(session.m)), Fraction(0))
            if ad == 0:
                continue
            ap = sum((h.a[j] * p[j] for j in range(session.m)), Fraction(0))
            pred.append((-(ap + h.b) / ad, h.v * abs(ad), 0, 0))
            pred_index.append(hi_)
        else:
            ad = float(h.a @ d)
            if ad == 0:
                continue
            tq = -(float(h.a @ p) + h.b) / ad
            # how far the estimated errors of (a, b) and v let the crossing and its slope jump move
            xn = float(np.linalg.norm(p + tq * d))
            tol_t = 8.0 * h.err_w * math.hypot(1.0, float(h.b)) * (1.0 + xn) / abs(ad) + 1e-9 * (1.0 + abs(tq))
            tol_j = 8.0 * (h.err_v + h.err_w) * float(np.linalg.norm(h.v)) * abs(ad)
            pred.append((tq, h.v * abs(ad), tol_t, tol_j))
            pred_index.append(hi_)
    return pred, pred_index


def _match_kink(
    session: Session, pred: list[_Prediction], used: set[int], line: LineResult, u: int
) -> tuple[int | None, float]:
    """The unused prediction that explains kink u of the line (None if none does), and (float mode) the slope
    error of the line's pieces there."""
    t = line.kinks[u]
    jump = line.pieces[u + 1].s - line.pieces[u].s
    hit = None
    best = math.inf
    tol_meas = 0.0
    if not session.exact:
        Pa, Pb = line.pieces[u], line.pieces[u + 1]
        span = max(min(float(Pa.hi - Pa.lo), float(Pb.hi - Pb.lo)), 1e-300)
        tol_meas = 2.0 * TOL_FACTOR * session.noise(Pa.at(t), float(t)) / span  # slope error of the line pieces
    for q, (tq, jq, tol_t, tj) in enumerate(pred):
        if q in used:
            continue
        if session.exact:
            if tq == t:
                return q, tol_meas
            continue
        # the nearest predicted crossing, in units of its tolerance, among those whose slope jump fits
        # (an imprecise hyperplane's wide tolerance must not take the kink of a precise one nearby)
        dist = abs(float(tq) - float(t))
        dj = float(np.linalg.norm(np.asarray(jq - jump, dtype=np.float64))) / (tj + tol_meas)
        score = max(dist / tol_t, dj) if dj <= 1.0 else 2.0 + dist / tol_t
        if dist <= tol_t and score < best:
            hit, best = q, score
    return hit, tol_meas


def _merged_pairs(
    pred: list[_Prediction], used: set[int], line: LineResult, merged: list[tuple[int, int, float]]
) -> bool:
    """Float mode: two hyperplanes that cross the line closer together than the oracle's precision resolves
    make one kink there, with the sum of their slope jumps.  Whether each kink whose jump did not fit one
    prediction fits such a pair (the second member is marked used)."""
    ok = True
    for u, hit, tol_meas in merged:
        t = float(line.kinks[u])
        jump = np.asarray(line.pieces[u + 1].s - line.pieces[u].s, dtype=np.float64)
        jq, tj, tt = np.asarray(pred[hit][1], dtype=np.float64), pred[hit][3], pred[hit][2]
        pair = None
        for q, (tq2, jq2, tol_t2, tj2) in enumerate(pred):
            if q in used or abs(float(tq2) - t) > tol_t2 + tt:
                continue
            both = jq + np.asarray(jq2, dtype=np.float64)
            if float(np.linalg.norm(both - jump)) <= tj + tj2 + tol_meas:
                pair = q
                break
        if pair is None:
            ok = False
        else:
            used.add(pair)
    return ok


def _stale(pred: list[_Prediction], used: set[int], line: LineResult, new: list[int]) -> set[int]:
    """Float mode: for each unexplained kink, the nearest unused prediction with a similar slope jump (an
    imprecise copy of the hyperplane of that kink)."""
    lo, hi = line.lo, line.hi
    stale: set[int] = set()
    for u in new:
        t = float(line.kinks[u])
        jump = np.asarray(line.pieces[u + 1].s - line.pieces[u].s, dtype=np.float64)
        cands = [
            (abs(float(pq[0]) - t) / pq[2], q)
            for q, pq in enumerate(pred)
            if q not in used
            and q not in stale
            and lo < pq[0] < hi
            and float(np.linalg.norm(np.asarray(pq[1], dtype=np.float64) - jump)) <= 0.5 * float(np.linalg.norm(jump))
        ]
        if cands:
            stale.add(min(cands)[1])
    return stale


def _unmatched_invisible(
    session: Session, pred: list[_Prediction], used: set[int], stale: set[int], line: LineResult
) -> bool:
    """Whether every prediction inside the searched window that no kink matched is too small to see there."""
    for q, (tq, jq, _tt, tj) in enumerate(pred):
        if q in used or q in stale or not (line.lo < tq < line.hi):
            continue
        if session.exact:
            return False
        jn = float(np.linalg.norm(np.asarray(jq, dtype=np.float64)))
        if jn > 2.0 * tj + 1e-6 * session.y0 / session.scale:
            return False
    return True


def _values_agree(
    session: Session, hypers: list[Hyper], M: np.ndarray, e: np.ndarray, line: LineResult
) -> tuple[bool, float]:
    """Whether the model agrees with the values sampled on the line, and the largest relative disagreement."""
    p, d = line.p, line.d
    ts = [t for t, _ in line.samples]
    Y = np.array([y for _, y in line.samples], dtype=object if session.exact else np.float64)
    X = (
        [tuple(pi + t * di for pi, di in zip(p, d, strict=True)) for t in ts]
        if session.exact
        else np.array([p + t * d for t in ts])
    )
    Yh = model_values(session, hypers, M, e, X)
    if session.exact:
        return bool(np.all(Y == Yh)), 0.0
    diff = np.max(np.abs(Y - Yh), axis=1)
    mag = session.y0 + np.max(np.abs(Y), axis=1)
    rel = float(np.max(diff / mag))
    bound = np.maximum(np.array([session.tol(y) for y in Y]), 4.0 * heldout_bound(session, hypers, X, Y))
    return bool(np.all(diff <= bound)), rel


def heldout_bound(session: Session, hypers: list[Hyper], X: Any, Y: np.ndarray) -> np.ndarray:
    """Float mode: the disagreement the estimated parameter errors allow at the points X."""
    if not hypers:
        return np.zeros(len(X))
    Z = pre_activations(session, hypers, X)  # N × B
    xn = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)
    nv = np.array([float(np.linalg.norm(h.v)) for h in hypers])
    ew = np.array([h.err_w for h in hypers])
    ev = np.array([h.err_v for h in hypers])
    nw = np.array([math.hypot(1.0, float(h.b)) for h in hypers])
    term = nv[:, None] * (ew * nw)[:, None] * (1.0 + xn[None, :]) + (ev * nv)[:, None] * np.maximum(Z, 0.0)
    # the affine part inherits the errors of the region used for it: bounded by the same terms summed
    return np.asarray(2.0 * term.sum(axis=0) + np.array([session.tol(y) for y in Y]))


def heldout_points(session: Session, count: int, window: float) -> Any:
    r = max(session.scale, min(window, 4 * session.scale))
    if session.exact:
        q = 2**10
        region = Fraction(r).limit_denominator(2**16)
        return [
            tuple(Fraction(int(session.rng.integers(-q, q + 1)), q) * region for _ in range(session.m))
            for _ in range(count)
        ]
    return session.rng.uniform(-r, r, size=(count, session.m)) / math.sqrt(session.m) * 2
