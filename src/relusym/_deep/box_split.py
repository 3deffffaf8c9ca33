"""Input splitting for unit statuses on a box, proposed in floats over many sub-boxes at once (issue 22).

Nothing here proves anything.  :class:`FloatBounds` is the float twin of
:func:`relusym._deep.bounds.certified_bounds`: the same interval bounds and the same Lagrangian bound of the triangle
relaxation with CROWN's multipliers, vectorised over a batch of boxes (and over every unit of a layer).
:func:`split_cover` bisects the box (ReluVal/Neurify-style: the side with the largest smear |λ_x,i|·width_i of the
unit's linear bound) until every leaf shows the unit's sign in floats, for many units at once, the leaves shared
between units; the leaves' centres are also proposed as witnesses.  :mod:`relusym._deep.status` then proves every
leaf's bound exactly (one exact bound table per leaf, shared by every unit it serves).

Boxes are in the root box's unit coordinates [0, 1]^m; every side is a dyadic interval, exact in floats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from relusym._base.deadline import Deadline
from relusym._deep.bounds import crown_multipliers
from relusym._deep.witness import FloatNet

__all__ = ["FloatBounds", "Cover", "Splitter", "split_cover"]

_CHUNK = 512  # boxes per vectorised pass (memory: chunk × 2·width × width floats per layer)
_HOPELESS = 64  # open leaves without a settled one at which a later layer's cover is abandoned
_TOL = 1e-9  # relative margin a float bound must clear before a leaf is kept (the exact proof decides anyway)


@dataclass
class FloatBounds:
    """Float bounds of every layer 0 … upto over each box of a batch, with the input coefficients of each unit's
    upper and lower linear bound (for choosing the side to split)."""

    lower: list[np.ndarray]  # (N, n_k)
    upper: list[np.ndarray]
    coef_up: list[np.ndarray]  # (N, n_k, m): λ_{−1} of the upper bound of z_kj
    coef_lo: list[np.ndarray]

    @classmethod
    def of(
        cls,
        net: FloatNet,
        L: np.ndarray,
        U: np.ndarray,
        upto: int,
        *,
        hint: tuple[list[np.ndarray], list[np.ndarray]] | None = None,
        last: np.ndarray | None = None,
    ) -> FloatBounds:
        """``hint``: bounds known on each box (a box's parent's float bounds, per layer): then the bounds are
        intersected with them and the relaxation is computed only for the units left unstable on each box, one
        row per (box, unit, sign) (an active or dead unit's bounds do not enter the later relaxations) — a
        proposal, several times cheaper on small boxes, no longer the float twin of the exact table; ``last``
        (with ``hint``): a mask of the units of layer ``upto`` to relax (the others keep their interval bounds)."""
        if hint is None:
            parts = [_bounds(net, L[i : i + _CHUNK], U[i : i + _CHUNK], upto) for i in range(0, len(L), _CHUNK)]
        else:
            parts = [
                _sparse_bounds(
                    net,
                    L[i : i + _CHUNK],
                    U[i : i + _CHUNK],
                    upto,
                    ([h[i : i + _CHUNK] for h in hint[0]], [h[i : i + _CHUNK] for h in hint[1]]),
                    last,
                )
                for i in range(0, len(L), _CHUNK)
            ]
        return cls(
            *(
                [np.concatenate([p[q][k] for p in parts]) for k in range(upto + 1)]
                for q in range(4)  # lower, upper, coef_up, coef_lo
            )
        )


def _interval(W: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval bounds of W·h + b over the boxes lo ≤ h ≤ hi (one box a row)."""
    Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
    return lo @ Wp.T + hi @ Wn.T + b, hi @ Wp.T + lo @ Wn.T + b


def _bounds(
    net: FloatNet, L: np.ndarray, U: np.ndarray, upto: int
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    W, b = net.W, net.b
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    cu: list[np.ndarray] = []
    cl: list[np.ndarray] = []
    N = len(L)
    for T in range(upto + 1):
        if T == 0:
            lo_h, hi_h = L, U
        else:
            lo_h, hi_h = np.maximum(lower[-1], 0.0), np.maximum(upper[-1], 0.0)
        il, iu = _interval(W[T], b[T], lo_h, hi_h)
        n = W[T].shape[0]
        if T == 0:
            lower.append(il)
            upper.append(iu)
            cu.append(np.broadcast_to(W[0], (N, n, net.m)))
            cl.append(np.broadcast_to(W[0], (N, n, net.m)))
            continue
        # targets: +z_Tj (upper bounds) and −z_Tj (lower bounds), all boxes at once
        C = np.concatenate([np.eye(n), -np.eye(n)])
        total = np.broadcast_to((C @ b[T])[None, :], (N, 2 * n)).copy()
        Lam = np.broadcast_to(C @ W[T], (N, 2 * n, W[T].shape[1])).copy()
        for k in range(T - 1, -1, -1):
            lk, uk = lower[k][:, None, :], upper[k][:, None, :]
            cross = (lk < 0) & (uk > 0)
            mu = crown_multipliers(Lam, lk, uk)
            # Σ_j max over z ∈ [l, u] of λσ(z) − μz (at l, u, and 0 when l < 0 < u)
            best = np.maximum(
                Lam * np.maximum(lk, 0.0) - mu * lk,
                Lam * np.maximum(uk, 0.0) - mu * uk,
            )
            best = np.where(cross & (best < 0), 0.0, best)
            total += best.sum(axis=2) + mu @ b[k]
            Lam = mu @ W[k]
        lo_x, hi_x = L[:, None, :], U[:, None, :]
        total += np.maximum(Lam * lo_x, Lam * hi_x).sum(axis=2)
        ru, rl = total[:, :n], -total[:, n:]
        # as certified_bounds: a unit dead by interval arithmetic keeps its interval bounds
        dead = iu <= 0
        upper.append(np.where(dead, iu, np.minimum(iu, ru)))
        lower.append(np.where(dead, il, np.maximum(il, rl)))
        cu.append(Lam[:, :n])
        cl.append(-Lam[:, n:])
    return lower, upper, cu, cl


def _sparse_bounds(
    net: FloatNet,
    L: np.ndarray,
    U: np.ndarray,
    upto: int,
    hint: tuple[list[np.ndarray], list[np.ndarray]],
    last: np.ndarray | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    W, b = net.W, net.b
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    cu: list[np.ndarray] = []
    cl: list[np.ndarray] = []
    N = len(L)
    for T in range(upto + 1):
        lo_h, hi_h = (L, U) if T == 0 else (np.maximum(lower[-1], 0.0), np.maximum(upper[-1], 0.0))
        il0, iu0 = _interval(W[T], b[T], lo_h, hi_h)
        il, iu = np.maximum(il0, hint[0][T]), np.minimum(iu0, hint[1][T])
        n = W[T].shape[0]
        cu_T = np.zeros((N, n, net.m))
        cl_T = np.zeros((N, n, net.m))
        if T == 0:
            lower.append(il)
            upper.append(iu)
            cu.append(np.broadcast_to(W[0], (N, n, net.m)))
            cl.append(np.broadcast_to(W[0], (N, n, net.m)))
            continue
        open_ = (il < 0) & (iu > 0)
        if T == upto:
            # the units whose sign is asked: relaxed unless interval arithmetic alone settles them (the parent's
            # bound may be ≤ 0 by less than the margin a leaf needs, and the relaxation may clear it)
            tol = _TOL * np.maximum(1.0, np.maximum(np.abs(il0), np.abs(iu0)))
            open_ = (il0 <= tol) & (iu0 >= -tol)  # not settled by the margin split_cover asks for
            if last is not None:
                open_ &= last[None, :]
        bi, ui = np.nonzero(open_)
        R = len(bi)
        rb, ru = np.concatenate([bi, bi]), np.concatenate([ui, ui])
        sg = np.concatenate([np.ones(R), -np.ones(R)])
        total = sg * b[T][ru]
        Lam = sg[:, None] * W[T][ru]
        for k in range(T - 1, -1, -1):
            # CROWN's slopes per box (crown_multipliers with λ = ±1), then gathered by row
            lb, ub = lower[k], upper[k]
            cross = (lb < 0) & (ub > 0)
            slope_up = np.asarray(crown_multipliers(np.ones_like(lb), lb, ub))
            slope_dn = np.asarray(-crown_multipliers(-np.ones_like(lb), lb, ub))
            lk, uk, xk = lb[rb], ub[rb], cross[rb]
            mu = np.maximum(Lam, 0.0) * slope_up[rb] + np.minimum(Lam, 0.0) * slope_dn[rb]
            best = np.maximum(Lam * np.maximum(lk, 0.0) - mu * lk, Lam * np.maximum(uk, 0.0) - mu * uk)
            best = np.where(xk & (best < 0), 0.0, best)
            total += best.sum(axis=1) + mu @ b[k]
            Lam = mu @ W[k]
        total += np.maximum(Lam * L[rb], Lam * U[rb]).sum(axis=1)
        up, lw = iu.copy(), il.copy()
        up[bi, ui] = np.minimum(iu[bi, ui], total[:R])
        lw[bi, ui] = np.maximum(il[bi, ui], -total[R:])
        cu_T[bi, ui] = Lam[:R]
        cl_T[bi, ui] = -Lam[R:]
        lower.append(lw)
        upper.append(up)
        cu.append(cu_T)
        cl.append(cl_T)
    return lower, upper, cu, cl


@dataclass
class Cover:
    """For one unit (layer ``ell``, 0-based, unit ``j``): leaves (indices into :attr:`Splitter.boxes`) where the
    floats show z ≤ 0 (``dead``) or z ≥ 0 (``active``); ``open`` the leaves still unsettled."""

    ell: int
    j: int
    dead: list[int] = field(default_factory=list)
    active: list[int] = field(default_factory=list)
    open: list[int] = field(default_factory=list)


class Splitter:
    """The boxes opened so far (unit coordinates, shared between units) with their float bounds."""

    def __init__(self, net: FloatNet, depth: int, units: Sequence[int] | None = None) -> None:
        self.net = net
        self.depth = depth  # the last layer bounded
        self.last: np.ndarray | None = None  # the units of the last layer whose bounds are wanted (None: all)
        if units is not None:
            self.last = np.zeros(net.W[depth].shape[0], dtype=bool)
            self.last[list(units)] = True
        self.L: list[np.ndarray] = []
        self.U: list[np.ndarray] = []
        self.index: dict[bytes, int] = {}
        self.fb: list[FloatBounds | None] = []  # per batch
        self.where: list[tuple[int, int]] = []  # box → (batch, row)
        self.parent: list[int] = []  # box → the box it was split from (−1: none)

    def add(self, lo: np.ndarray, hi: np.ndarray) -> int:
        key = lo.tobytes() + hi.tobytes()
        i = self.index.get(key)
        if i is None:
            i = len(self.L)
            self.index[key] = i
            self.L.append(lo)
            self.U.append(hi)
            self.where.append((-1, -1))
            self.parent.append(-1)
        return i

    def evaluate(self) -> None:
        new = [i for i, w in enumerate(self.where) if w[0] < 0]
        if not new:
            return
        fb = FloatBounds.of(
            self.net,
            np.array([self.L[i] for i in new]),
            np.array([self.U[i] for i in new]),
            self.depth,
            hint=self._hint(new),
            last=self.last,
        )
        self.fb.append(fb)
        for r, i in enumerate(new):
            self.where[i] = (len(self.fb) - 1, r)

    def _hint(self, new: Sequence[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The parents' float bounds of the new boxes (±∞ where a box has none)."""
        widths = [w.shape[0] for w in self.net.W[: self.depth + 1]]
        hl = [np.full((len(new), n), -np.inf) for n in widths]
        hu = [np.full((len(new), n), np.inf) for n in widths]
        for r, i in enumerate(new):
            p = self.parent[i]
            if p < 0 or self.where[p][0] < 0:
                continue
            b, q = self.where[p]
            fb = self.fb[b]
            assert fb is not None
            for t in range(self.depth + 1):
                hl[t][r] = fb.lower[t][q]
                hu[t][r] = fb.upper[t][q]
        return hl, hu

    def bounds(self, i: int, ell: int, j: int) -> tuple[float, float]:
        b, r = self.where[i]
        fb = self.fb[b]
        assert fb is not None
        return float(fb.lower[ell][r, j]), float(fb.upper[ell][r, j])

    def axis(self, i: int, ell: int, j: int, up: bool) -> int:
        b, r = self.where[i]
        fb = self.fb[b]
        assert fb is not None
        coef = (fb.coef_up if up else fb.coef_lo)[ell][r, j]
        smear = np.abs(coef) * (self.U[i] - self.L[i])
        # no smear (a bound the relaxation did not touch): the widest side
        return int(np.argmax(smear)) if smear.max() > 0 else int(np.argmax(self.U[i] - self.L[i]))

    def halves(self, i: int, axis: int) -> tuple[int, int]:
        lo, hi = self.L[i], self.U[i]
        mid = (lo[axis] + hi[axis]) / 2
        h1, l2 = hi.copy(), lo.copy()
        h1[axis] = mid
        l2[axis] = mid
        a, b = self.add(lo, h1), self.add(l2, hi)
        for c in (a, b):
            if self.parent[c] < 0:
                self.parent[c] = i
        return a, b


def split_cover(
    net: FloatNet,
    units: Sequence[tuple[int, int, int]],
    deadline: Deadline,
    max_leaves: int,
    witness: Callable[[np.ndarray, int, int, int], bool],
    splitter: Splitter | None = None,
) -> tuple[Splitter, list[Cover]]:
    """Bisect [0, 1]^m until every leaf settles each unit's sign in floats.

    ``units``: (layer, unit, want) with want +1 (a point where z > 0 is known: look for "active"), −1 (one where
    z < 0 is known: "dead") or 0 (either).  ``witness(u, ell, j, sign)`` is offered a leaf's centre (unit
    coordinates) whenever the floats show sign·z > 0 there, the sign the unit is not known to take; it returns
    True when the unit is then known to cross (the cover stops).  A unit's cover is abandoned when it needs more
    than ``max_leaves`` leaves, when the unit lies in the third hidden layer or later and ``_HOPELESS`` open leaves
    settle none, or when the deadline passes (its ``open`` list is then non-empty)."""
    m = net.m
    depth = max((ell for ell, _, _ in units), default=0)
    sp = splitter if splitter is not None and splitter.depth >= depth else Splitter(net, depth)
    root = sp.add(np.zeros(m), np.ones(m))
    covers = [Cover(ell, j, open=[root]) for ell, j, _ in units]
    wants = [w for _, _, w in units]
    live = list(range(len(covers)))
    while live and not deadline.expired():
        sp.evaluate()
        nxt = []
        for c in live:
            cv, want = covers[c], wants[c]
            todo, cv.open = cv.open, []
            crossed = False
            for i in todo:
                lo, up = sp.bounds(i, cv.ell, cv.j)
                scale = _TOL * max(1.0, abs(lo), abs(up))
                if up < -scale or lo > scale:
                    sign = 1 if lo > scale else -1
                    (cv.active if sign > 0 else cv.dead).append(i)
                    if sign != want:
                        crossed = witness((sp.L[i] + sp.U[i]) / 2, cv.ell, cv.j, sign)
                        if crossed:
                            break
                        if want == 0:
                            want = wants[c] = sign
                    continue
                # split along the smear of the bound that must still move (the upper one to prove "dead")
                prove_up = want < 0 or (want == 0 and up + lo < 0)
                a, b2 = sp.halves(i, sp.axis(i, cv.ell, cv.j, prove_up))
                cv.open += [a, b2]
            if crossed:
                cv.open = []
                cv.dead, cv.active = [], []
                continue
            settled = len(cv.dead) + len(cv.active)
            if cv.ell > 1 and not settled and len(cv.open) >= _HOPELESS:
                continue  # a third-layer or later unit whose bounds settle no leaf yet: its cover would be too big
            if cv.open and settled + len(cv.open) <= max_leaves:
                nxt.append(c)
        live = nxt
    return sp, covers
