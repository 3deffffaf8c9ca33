"""Crossing witnesses by a walk over linear regions: a local maximum of ±z, one linear program a region (issue 22).

On the linear region of an input u (the box [0, 1]^m of :class:`relusym._deep.witness.FloatNet`, every earlier
unit's phase fixed as at u) a unit's pre-activation z is affine in u, and the region is a polytope: the box and
one half-space per earlier unit (z_k,i ≥ 0 for an active unit, ≤ 0 for an inactive one).  :func:`walk` maximises
sign·z over that region by a linear program (HiGHS through scipy), then crosses the phase boundary whose multiplier
is largest (that unit's phase flipped: the optimum lies on the boundary, in both regions, so sign·z never
decreases) and repeats, until sign·z > 0 (a candidate) or no boundary helps (a local maximum of the piecewise
linear function).  Where the unit takes its missing sign only in a thin region, that region is reached along
its boundary, which sampling and gradient steps of a fixed size miss.

Nothing here proves anything: a candidate is moved a little into its region's interior, read as a dyadic grid
point of the box, and :class:`relusym._deep.box_witnesses.Witnesses` keeps it only after evaluating the unit
exactly there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relusym._base.deadline import Deadline
from relusym._deep.bounds import Region
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.witness import FloatNet, exact_point

__all__ = ["region_maps", "walk", "walk_units"]

_STEPS = 40  # regions a walk may visit
_FIRST, _STARTS = 4, 16  # walks per unit (from its best sampled points): a first round, then up to 16
_SAMPLES = 2048  # sampled points the starts are chosen from
_TOL = 1e-9  # a boundary counts as tight, a gain as real, above this


def region_maps(
    net: FloatNet, u: np.ndarray, ell: int, forced: dict[tuple[int, int], bool] | None = None
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """The affine maps z_k = A_k u + c_k (k ≤ ell) on the linear region of u, with the phases of the units in
    ``forced`` ((layer, unit) → active) as given there, and each earlier layer's phases (True: active)."""
    m = net.m
    A, c = np.eye(m), np.zeros(m)
    As, cs, phases = [], [], []
    h = np.asarray(u, dtype=np.float64)
    for k in range(ell + 1):
        Ak = net.W[k] @ A
        ck = net.W[k] @ c + net.b[k]
        As.append(Ak)
        cs.append(ck)
        if k == ell:
            break
        z = net.W[k] @ h + net.b[k]
        on = z > 0
        for (kk, i), phase in (forced or {}).items():
            if kk == k:
                on[i] = phase
        phases.append(on)
        A, c = Ak * on[:, None], ck * on
        h = np.where(on, np.maximum(z, 0.0), 0.0)
    return As, cs, phases


def _lp(
    As: Sequence[np.ndarray], cs: Sequence[np.ndarray], phases: Sequence[np.ndarray], obj: np.ndarray, m: int
) -> tuple[np.ndarray, float, np.ndarray] | None:
    """max obj·u over the region (rows: −s·(A u + c) ≤ 0 for the phase sign s of each earlier unit): the
    maximizer, its value and the multipliers of the rows (None when HiGHS fails)."""
    from scipy.optimize import linprog

    S = np.concatenate([np.where(p, -1.0, 1.0) for p in phases]) if phases else np.zeros(0)
    G = np.concatenate(list(As[: len(phases)])) * S[:, None] if phases else np.zeros((0, m))
    h = -np.concatenate(list(cs[: len(phases)])) * S if phases else np.zeros(0)
    res = linprog(-obj, A_ub=G if len(S) else None, b_ub=h if len(S) else None, bounds=[(0.0, 1.0)] * m, method="highs")
    if res.status != 0 or res.x is None:
        return None
    duals = -np.asarray(res.ineqlin.marginals) if len(S) else np.zeros(0)
    return np.asarray(res.x), float(obj @ res.x), duals


def _inside(net: FloatNet, u: np.ndarray, centre: np.ndarray, ell: int, j: int, sign: float) -> np.ndarray:
    """Of the points u + t·(centre − u) for a few small t, the one with the largest sign·z (the LP's optimum is a
    vertex: moved towards an interior point it is robust to the rounding onto the grid)."""
    ts = np.array([0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1])
    P = u[None, :] + ts[:, None] * (centre - u)[None, :]
    z = sign * net.preactivations(P, ell)[ell][:, j]
    return np.asarray(P[int(np.argmax(z))])


def walk(net: FloatNet, u0: np.ndarray, ell: int, j: int, sign: float, steps: int = _STEPS) -> np.ndarray | None:
    """A walk over linear regions from u0 raising sign·z[ell][j]; a point where it is > 0 in floats, or None."""
    u = np.asarray(u0, dtype=np.float64)
    if ell == 0:
        steps = 1
    forced: dict[tuple[int, int], bool] = {}
    best = -np.inf
    for _ in range(steps):
        As, cs, phases = region_maps(net, u, ell, forced)
        obj = sign * As[ell][j]
        r = _lp(As, cs, phases, obj, net.m)
        if r is None:
            return None
        x, val, duals = r
        val += sign * cs[ell][j]
        if val > _TOL:
            return _inside(net, x, u, ell, j, sign)
        if val <= best + _TOL or not len(duals) or duals.max() <= _TOL:
            return None
        best = val
        # cross the boundary of the unit with the largest multiplier
        q = int(np.argmax(duals))
        offs = np.cumsum([0] + [len(p) for p in phases])
        k = int(np.searchsorted(offs, q, side="right") - 1)
        i = q - int(offs[k])
        u, forced = x, {(k, i): not bool(phases[k][i])}
    return None


def walk_units(
    wit: Witnesses,
    net: FloatNet,
    root: Region,
    units: Sequence[tuple[int, int]],
    deadline: Deadline,
    starts: int = _STARTS,
    seed: int = 3,
    samples: int = _SAMPLES,
) -> list[tuple[int, int]]:
    """Walks towards the missing sign of each unit in ``units`` seen with one sign only, from its best sampled
    points: ``_FIRST`` starts a unit for every unit, then the next ones up to ``starts`` (the deadline looked at
    before each walk); the candidates are confirmed exactly.  Returns the units found crossing."""
    U = net.samples(samples, seed)
    Z = net.preactivations(U)
    found: list[tuple[int, int]] = []
    for first, last in ((0, min(_FIRST, starts)), (_FIRST, starts)):
        for ell, j in units:
            if wit.crossing(ell, j) or (wit.pos[ell][j] is None and wit.neg[ell][j] is None):
                continue
            sign = 1.0 if wit.pos[ell][j] is None else -1.0
            for r in np.argsort(-sign * Z[ell][:, j])[first:last]:
                if deadline.expired():
                    return found
                x = walk(net, U[r], ell, j, sign)
                if x is None:
                    continue
                wit.record(exact_point(root[0], root[1], x))
                if wit.crossing(ell, j):
                    found.append((ell, j))
                    break
    return found
