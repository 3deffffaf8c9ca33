"""The big-M mixed-integer program of a ReLU network on a box, solved by HiGHS (scipy.optimize.milp): a proposer.

Nothing here proves anything.  :func:`milp_max` maximises c·z_T (a linear form of a layer's pre-activations) over
the box with every unstable earlier unit encoded exactly by a binary δ (h ≥ z, h ≥ 0, h ≤ u·δ,
h ≤ z − l·(1 − δ)); it returns HiGHS's optimum, its dual bound and its maximizer, which the callers check exactly
(a maximizer is an input to evaluate, a bound ≤ 0 only tells where a proof is worth the search).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MilpResult", "milp_max"]


@dataclass(frozen=True)
class MilpResult:
    """HiGHS's answer: ``value`` of the best point found (None when none), ``bound`` its proved-in-floats upper
    bound, ``x`` the best input, ``optimal`` when the gap is closed, ``status`` scipy's (4: HiGHS's "solve error")."""

    value: float | None
    bound: float
    x: np.ndarray | None
    optimal: bool
    status: int = 0


def milp_max(
    W: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
    lower: Sequence[np.ndarray],
    upper: Sequence[np.ndarray],
    T: int,
    c: np.ndarray,
    time_limit: float,
) -> MilpResult:
    """max c·z_T over x ∈ [lo, hi] (floats: W, b the layers, lower/upper bounds of the layers k < T)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    m = len(lo)
    widths = [len(bk) for bk in b[:T]]
    # variables: x, then per layer k < T: z_k, h_k, δ_k
    off = m
    oz, oh, od = [], [], []
    for n in widths:
        oz.append(off)
        oh.append(off + n)
        od.append(off + 2 * n)
        off += 3 * n
    nv = off
    lb = np.zeros(nv)
    ub = np.zeros(nv)
    integ = np.zeros(nv)
    lb[:m], ub[:m] = lo, hi
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    cl: list[np.ndarray] = []
    cu: list[np.ndarray] = []
    r = 0

    def add(rr: np.ndarray, cc: np.ndarray, vv: np.ndarray, lo_: np.ndarray, hi_: np.ndarray, count: int) -> None:
        nonlocal r
        rows.append(r + rr)
        cols.append(cc)
        vals.append(vv)
        cl.append(lo_)
        cu.append(hi_)
        r += count

    for k, n in enumerate(widths):
        l, u = np.asarray(lower[k], dtype=np.float64), np.asarray(upper[k], dtype=np.float64)
        lb[oz[k] : oz[k] + n], ub[oz[k] : oz[k] + n] = l, u
        src = 0 if k == 0 else oh[k - 1]
        Wk = np.asarray(W[k], dtype=np.float64)
        rr, cc = np.nonzero(Wk)
        add(
            np.concatenate([np.arange(n), rr]),
            np.concatenate([oz[k] + np.arange(n), src + cc]),
            np.concatenate([np.ones(n), -Wk[rr, cc]]),
            np.asarray(b[k], dtype=np.float64),
            np.asarray(b[k], dtype=np.float64),
            n,
        )
        # a unit whose range is within 1e-7 of one side is taken as settled (big-M rows with tiny coefficients
        # make HiGHS report solve errors); the MILP is a float proposer, never a proof
        dead, act = u <= 1e-7, (l >= -1e-7) & (u > 1e-7)
        cross = ~dead & ~act
        lb[oh[k] : oh[k] + n] = np.where(act, l, 0.0)
        ub[oh[k] : oh[k] + n] = np.where(dead, 0.0, u)
        a = np.nonzero(act)[0]
        t = len(a)
        add(
            np.concatenate([np.arange(t), np.arange(t)]),
            np.concatenate([oh[k] + a, oz[k] + a]),
            np.concatenate([np.ones(t), -np.ones(t)]),
            np.zeros(t),
            np.zeros(t),
            t,
        )
        x = np.nonzero(cross)[0]
        t = len(x)
        ub[od[k] + x] = 1.0
        integ[od[k] + x] = 1
        ar = np.arange(t)
        # h − z ≥ 0;  h − u δ ≤ 0;  h − z − l δ ≤ −l
        add(
            np.concatenate([ar, ar, t + ar, t + ar, 2 * t + ar, 2 * t + ar, 2 * t + ar]),
            np.concatenate([oh[k] + x, oz[k] + x, oh[k] + x, od[k] + x, oh[k] + x, oz[k] + x, od[k] + x]),
            np.concatenate([np.ones(t), -np.ones(t), np.ones(t), -u[x], np.ones(t), -np.ones(t), -l[x]]),
            np.concatenate([np.zeros(t), np.full(t, -np.inf), np.full(t, -np.inf)]),
            np.concatenate([np.full(t, np.inf), np.zeros(t), -l[x]]),
            3 * t,
        )
    cobj = np.zeros(nv)
    const = float(c @ np.asarray(b[T], dtype=np.float64))
    WT = np.asarray(W[T], dtype=np.float64)
    src = 0 if T == 0 else oh[T - 1]
    cobj[src : src + WT.shape[1]] = -(c @ WT)
    A = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), (r, nv)).tocsr()
    opts: dict[str, object] = {"time_limit": max(0.01, float(time_limit)), "disp": False}
    res = milp(
        cobj,
        constraints=LinearConstraint(A, np.concatenate(cl), np.concatenate(cu)),
        integrality=integ,
        bounds=Bounds(lb, ub),
        options=opts,
    )
    x_out = None if res.x is None else np.asarray(res.x[:m], dtype=np.float64)
    value = None if res.fun is None else const - float(res.fun)
    dual = getattr(res, "mip_dual_bound", None)
    bound = const - float(dual) if dual is not None and np.isfinite(dual) else (value if res.status == 0 else np.inf)
    return MilpResult(value, float(bound if bound is not None else np.inf), x_out, res.status == 0, int(res.status))
