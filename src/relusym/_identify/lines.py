"""The line search of :func:`relusym.identify`: the affine pieces of the oracle along one line, their kinks
located to the precision the oracle allows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._identify.session import (
    EXACT_NEAR,
    EXACT_PROBE,
    FLOAT_NEAR,
    FLOAT_PROBE,
    GROW_EXACT,
    GROW_FLOAT,
    MAX_STEPS,
    QUANT,
    TOL_FACTOR,
    Y0_HINT,
    Session,
)
from relusym.errors import IdentificationError

__all__ = ["LineResult", "LineSearch", "WATCH_KINKS", "pred_error"]

WATCH_KINKS = 32  # kinks found on the first line before it looks at whether the oracle is smooth (see LineSearch)


class _Piece:
    """A certified linear piece g(t) = c + s t of the restriction to a line, with its samples.  Exact mode
    takes the line through the two outermost samples; float mode a least-squares fit of all of them."""

    __slots__ = ("ts", "ys", "_c", "_s", "lo", "hi", "_ilo", "_ihi", "_dirty", "exact")

    def __init__(self, ts: list[Any], ys: list[np.ndarray], exact: bool) -> None:
        self.ts = list(ts)
        self.ys = list(ys)
        self.exact = exact
        self._ilo = min(range(len(self.ts)), key=lambda i: self.ts[i])
        self._ihi = max(range(len(self.ts)), key=lambda i: self.ts[i])
        self.lo, self.hi = self.ts[self._ilo], self.ts[self._ihi]
        self._dirty = True
        self._c: Any = None
        self._s: Any = None

    def _fit(self) -> None:
        i, j = self._ilo, self._ihi
        if self.exact or len(self.ts) < 3:
            t1, t2 = self.ts[i], self.ts[j]
            self._s = (self.ys[j] - self.ys[i]) / (t2 - t1)
            self._c = self.ys[i] - self._s * t1
        else:
            # weighted least squares: the noise of a value grows with its size (far samples are noisier)
            t = np.array(self.ts, dtype=np.float64)
            Y = np.array(self.ys, dtype=np.float64)
            w = 1.0 / (Y0_HINT[0] + np.max(np.abs(Y), axis=1) + Y0_HINT[2] * (0.5 * Y0_HINT[1] + np.abs(t)))
            tm = float((w * t).sum() / w.sum())
            X = np.stack([np.ones_like(t), t - tm], axis=1) * w[:, None]
            coef, *_ = np.linalg.lstsq(X, Y * w[:, None], rcond=None)
            self._s = coef[1]
            self._c = coef[0] - coef[1] * tm
        self._dirty = False

    @property
    def c(self) -> Any:
        if self._dirty:
            self._fit()
        return self._c

    @property
    def s(self) -> Any:
        if self._dirty:
            self._fit()
        return self._s

    def refit(self, exact: bool) -> None:
        self._dirty = True

    def add(self, t: Any, y: np.ndarray, exact: bool) -> None:
        self.ts.append(t)
        self.ys.append(y)
        if t < self.lo:
            self._ilo, self.lo = len(self.ts) - 1, t
            self._dirty = True
        elif t > self.hi:
            self._ihi, self.hi = len(self.ts) - 1, t
            self._dirty = True
        elif not self.exact:
            self._dirty = True

    def at(self, t: Any) -> np.ndarray:
        return np.asarray(self.c + self.s * t)


class _Anchor:
    __slots__ = ("t", "piece", "kink_to")

    def __init__(self, t: Any, piece: _Piece) -> None:
        self.t = t
        self.piece = piece
        self.kink_to: _Anchor | None = None  # the next anchor, when a confirmed kink lies between them


@dataclass
class LineResult:
    p: Any
    d: Any
    kinks: list[Any]  # sorted crossing parameters
    pieces: list[_Piece]  # N + 1 pieces, in order
    lo: Any
    hi: Any
    samples: list[tuple[Any, np.ndarray]]


class LineSearch:
    def __init__(self, session: Session, p: Any, d: Any) -> None:
        self.session = session
        self.p, self.d = p, d
        self.anchors: list[_Anchor] = []
        self.samples: list[tuple[Any, np.ndarray]] = []
        self.pn = 0.0 if session.exact else float(np.linalg.norm(np.asarray(p, dtype=np.float64)))
        # called once (then dropped) when the search has found ``watch_at`` kinks: the first line's look at
        # whether the oracle is smooth (relusym._identify.smooth), which raises to end the search
        self.watch: Callable[[], None] | None = None
        self.watch_at = WATCH_KINKS

    # -- evaluation --------------------------------------------------------------------------------------
    def point(self, t: Any) -> Any:
        if self.session.exact:
            return tuple(pi + t * di for pi, di in zip(self.p, self.d, strict=True))
        return self.p + t * self.d

    def g(self, ts: Sequence[Any]) -> list[np.ndarray]:
        pts = [self.point(t) for t in ts]
        Y = self.session.query(pts if self.session.exact else np.array(pts))
        out = [Y[i] for i in range(len(ts))]
        self.samples += list(zip(ts, out, strict=True))
        return out

    # -- predicates -----------------------------------------------------------------------------------------
    def on(self, y: np.ndarray, P: _Piece, t: Any) -> bool:
        if self.session.exact:
            return bool(np.all(y == P.at(t)))
        # the noise of y and the uncertainty of the fitted piece at t (which grows away from its samples)
        tol = TOL_FACTOR * math.hypot(self.session.noise(y, float(t)), pred_error(self.session, P, float(t)))
        return float(np.max(np.abs(y - P.at(t)))) <= tol

    def same(self, a: _Anchor, b: _Anchor) -> bool:
        """Whether the pieces of two anchors are one line: exactly, or (float mode) within noise over the union
        of their extents (comparing only at the anchors would hide a kink in a short gap)."""
        Pa, Pb = a.piece, b.piece
        if self.session.exact:
            return bool(np.all(Pa.s == Pb.s) and np.all(Pa.c == Pb.c))
        return self.consistent(Pa.ts + Pb.ts, Pa.ys + Pb.ys)

    def consistent(self, ts: list[Any], ys: list[np.ndarray]) -> bool:
        """Float mode: whether the samples lie on one line within the noise of each (the fit of a short piece
        alone is compatible with anything far from it, so two pieces are compared through all their samples)."""
        P = _Piece(ts, ys, False)
        for t, y in zip(ts, ys, strict=True):
            if float(np.max(np.abs(y - P.at(t)))) > TOL_FACTOR * self.session.noise(y, float(t)):
                return False
        return True

    def intersect(self, Pa: _Piece, Pb: _Piece) -> Any:
        ds = Pa.s - Pb.s
        dc = Pb.c - Pa.c
        if self.session.exact:
            for r in range(len(ds)):
                if ds[r] != 0:
                    return dc[r] / ds[r]
            return None
        ds_f = np.asarray(ds, dtype=np.float64)
        den = float(ds_f @ ds_f)
        if den == 0.0:
            return None
        return float(np.asarray(dc, dtype=np.float64) @ ds_f) / den

    # -- anchors -----------------------------------------------------------------------------------------
    def insert(self, anc: _Anchor) -> None:
        ts = [a.t for a in self.anchors]
        i = int(np.searchsorted(np.array([float(t) for t in ts]), float(anc.t))) if ts else 0
        # exact ties in float order are harmless: the anchors stay sorted by exact value
        while i > 0 and self.anchors[i - 1].t > anc.t:
            i -= 1
        while i < len(self.anchors) and self.anchors[i].t < anc.t:
            i += 1
        self.anchors.insert(i, anc)

    def probe(self, lo: Any, hi: Any, c: Any = None, yc: np.ndarray | None = None) -> None:
        """Certify the piece around a point of (lo, hi) with three collinear values; insert its anchor."""
        session = self.session
        width = hi - lo
        for attempt in range(8):
            if c is None or attempt > 0:
                c = session.rand_between(lo, hi)
                yc = None
            rel = (EXACT_PROBE if session.exact else FLOAT_PROBE) / (4**attempt if session.exact else 2**attempt)
            dlt = width * rel
            if not session.exact:
                dlt = max(dlt, self.quantum(c))  # closer points are one point to an oracle that rounds its input
            ts = [c - dlt, c + dlt] + ([c] if yc is None else [])
            ys = self.g(ts)
            if yc is None:
                yc = ys[2]
            y1, y2 = ys[0], ys[1]
            mid = (y1 + y2) / 2
            if session.exact:
                ok = bool(np.all(mid == yc))
            else:
                res = float(np.max(np.abs(mid - yc)))
                ok = res <= session.tol(yc, float(c))
                if ok:
                    session.residuals.append(res / (session.y0 + float(np.max(np.abs(yc)))))
            if ok:
                P = _Piece([c - dlt, c, c + dlt], [y1, yc, y2], session.exact)
                self.insert(_Anchor(c, P))
                return
        raise IdentificationError(
            f"the oracle is not piecewise linear along a line near t = {float(c):.6g}: eight probes of three "
            "points each failed to find a linear piece"
            + ("" if session.exact else f" within its measured noise level (relative {session.eps:.2g})")
        )

    def quantum(self, t: Any) -> float:
        """Float mode: the shortest step along the line at t that the oracle surely sees, QUANT times its
        input rounding unit (of |p + t d|)."""
        return QUANT * self.session.u_in * (self.pn + abs(float(t)))

    def resolution(self, a: Any, b: Any) -> bool:
        """Whether the gap (a, b) may still be split: exact mode always (up to 2^-400); float mode while it is
        wider than √ε of the scale, below which the oracle's noise hides the slopes, and than the input
        rounding of the oracle allows."""
        if self.session.exact:
            return bool(b - a > Fraction(1, 2**400))
        return float(b - a) > self.res_width(a, b)

    def res_width(self, a: Any, b: Any) -> float:
        session = self.session
        w = math.sqrt(session.eps) * 1e-2 * (session.scale + abs(float(a)) + abs(float(b)))
        return max(w, 4.0 * self.quantum(max(abs(float(a)), abs(float(b)))))

    def resolve(self) -> None:
        """Refine until every gap between consecutive anchors is closed (same piece or a confirmed kink)."""
        while True:
            gap = self._open_gap()
            if gap is None:
                return
            kinks = self.count_kinks()
            if self.watch is not None and kinks >= self.watch_at:
                look, self.watch = self.watch, None
                look()
            if len(self.anchors) > 64 * (kinks + 8):
                raise IdentificationError(
                    f"the breakpoint search on a line does not settle ({len(self.anchors)} probes for "
                    f"{kinks} kinks): the oracle is not piecewise linear"
                    + (
                        " (an exact oracle must return exact values)"
                        if self.session.exact
                        else " within its measured noise"
                    )
                )
            self._close_gap(*gap)

    def _open_gap(self) -> tuple[_Anchor, _Anchor] | None:
        """The first two consecutive anchors on different pieces without a confirmed kink between them."""
        for a, b in zip(self.anchors, self.anchors[1:], strict=False):
            if a.piece is not b.piece and a.kink_to is not b:
                return a, b
        return None

    def _close_gap(self, a: _Anchor, b: _Anchor) -> None:
        """One step towards closing the gap between anchors a and b."""
        session = self.session
        if session.exact and not self.resolution(a.t, b.t):
            raise IdentificationError(
                f"two kinks of the restriction to a line lie closer than 2^-400 near t = {float(a.t):.6g}"
            )
        Pa, Pb = a.piece, b.piece
        # the uncertified gap: Pa is linear up to Pa.hi and Pb from Pb.lo, so any kink lies in between
        ga, gb = (Pa.hi, Pb.lo) if Pa.hi < Pb.lo else (a.t, b.t)
        if not session.exact and not (self.resolution(ga, gb) and self.resolution(a.t, b.t)):
            self._close_narrow(a, b, ga, gb)
            return
        if self.same(a, b):
            self._join_or_probe(a, b, ga, gb)
            return
        ts = self.intersect(Pa, Pb)
        if not session.exact:
            # float mode: the outermost sample of a piece may sit just across a kink (within noise), so
            # only the inner half of each piece's extent beyond its anchor is trusted
            ga2 = (a.t + Pa.hi) / 2 if Pa.hi > a.t else a.t
            gb2 = (b.t + Pb.lo) / 2 if Pb.lo < b.t else b.t
            ga, gb = (ga2, gb2) if ga2 < gb2 else (a.t, b.t)
        if ts is not None and ga < ts < gb:
            self._check_kink(a, b, ga, gb, ts)
            return
        self.probe(ga, gb)

    def _merge(self, Pa: _Piece, Pb: _Piece, exact: bool) -> None:
        """Pb's samples join Pa, and Pb's anchors move to Pa."""
        for t, yy in zip(Pb.ts, Pb.ys, strict=True):
            Pa.add(t, yy, exact)
        for anc in self.anchors:
            if anc.piece is Pb:
                anc.piece = Pa

    def _close_narrow(self, a: _Anchor, b: _Anchor, ga: Any, gb: Any) -> None:
        """Float mode: the gap is as narrow as the oracle's precision resolves, so whatever lies in it is one kink
        where the two pieces meet (or none, when they agree within noise)."""
        session = self.session
        Pa, Pb = a.piece, b.piece
        if self.same(a, b):
            self._merge(Pa, Pb, False)
            return
        t_meet = self.intersect(Pa, Pb)
        w = self.res_width(ga, gb)
        # where two noisy pieces meet is itself uncertain: their values' errors over the slope difference
        tg = float(ga + gb) / 2
        yg = Pa.at(tg)
        sd = math.sqrt(session.noise(yg, tg) ** 2 + pred_error(session, Pa, tg) ** 2 + pred_error(session, Pb, tg) ** 2)
        dsl = float(np.linalg.norm(np.asarray(Pa.s - Pb.s, dtype=np.float64)))
        w += TOL_FACTOR * sd / max(dsl, 1e-300)
        if t_meet is not None and ga - w <= t_meet <= gb + w:
            a.kink_to = b
            return
        raise IdentificationError(
            f"the oracle's restriction to a line is not piecewise linear within its measured noise "
            f"(relative {session.eps:.2g}) near t = {float(a.t):.6g}: two pieces differ across a gap narrower "
            "than its precision resolves but do not meet there (added noise, rounded outputs, a smooth "
            "activation, or kinks closer together than its precision separates)"
        )

    def _join_or_probe(self, a: _Anchor, b: _Anchor, ga: Any, gb: Any) -> None:
        """Two anchors whose pieces look the same: one sample between them joins the pieces, or probes further."""
        session = self.session
        Pa, Pb = a.piece, b.piece
        u = session.rand_between(ga, gb)
        (y,) = self.g([u])
        if self.on(y, Pa, u) and (session.exact or self.consistent(Pa.ts + Pb.ts + [u], Pa.ys + Pb.ys + [y])):
            self._merge(Pa, Pb, session.exact)
            Pa.add(u, y, session.exact)
            self.insert(_Anchor(u, Pa))
        else:
            self.probe(ga, gb, u, y)

    def _check_kink(self, a: _Anchor, b: _Anchor, ga: Any, gb: Any, ts: Any) -> None:
        """The pieces of a and b meet at ts inside the gap: confirm a single kink there, or probe further."""
        session = self.session
        Pa, Pb = a.piece, b.piece
        u1 = session.rand_between(ga, ts)
        u2 = session.rand_between(ts, gb)
        room = min(ts - u1, u2 - ts)
        if session.exact:
            dl = room * EXACT_NEAR
        else:
            # as close as the noise allows: the two pieces must differ there by many noise levels
            ds = float(np.linalg.norm(np.asarray(Pa.s - Pb.s, dtype=np.float64)))
            need = 64.0 * session.tol(Pa.at(ts), float(ts)) / max(ds, 1e-300)
            dl = min(room * FLOAT_NEAR, max(room * 2.0**-12, need, self.quantum(ts)))
        ys, y1, y2, ym, yp = self.g([ts, u1, u2, ts - dl, ts + dl])
        # a single kink at ts: the value there is on both pieces, and so are values just beside it
        ok0 = self.on(ys, Pa, ts) and self.on(ys, Pb, ts)
        ok0 = ok0 and self.on(ym, Pa, ts - dl) and self.on(yp, Pb, ts + dl)
        ok1 = self.on(y1, Pa, u1)
        ok2 = self.on(y2, Pb, u2)
        if ok0 and ok1 and ok2:
            Pa.add(u1, y1, session.exact)
            Pb.add(u2, y2, session.exact)
            if session.exact:  # float mode keeps only samples well inside a piece for the final fit
                Pa.add(ts - dl, ym, True)
                Pb.add(ts + dl, yp, True)
            A1, A2 = _Anchor(u1, Pa), _Anchor(u2, Pb)
            A1.kink_to = A2
            self.insert(A1)
            self.insert(A2)
            return
        if session.exact:  # float mode: a sample near an unconfirmed kink may fit the wrong piece within noise
            if ok1:
                Pa.add(u1, y1, True)
                self.insert(_Anchor(u1, Pa))
            if ok2:
                Pb.add(u2, y2, True)
                self.insert(_Anchor(u2, Pb))
            ga, gb = (u1 if ok1 else ga), (u2 if ok2 else gb)
        if not ok0:
            self.probe(ga, gb, ts, ys)
        elif not ok1:
            self.probe(ga, ts, u1, y1)
        else:
            self.probe(ts, gb, u2, y2)

    def kinks_between(self, lo: Any, hi: Any) -> int:
        return sum(1 for a in self.anchors if a.kink_to is not None and lo <= a.t and a.kink_to.t <= hi)

    def run(self, T0: Any, initial: int = 4) -> LineResult:
        session = self.session
        self.probe(-T0 - T0 / 4, -T0 + T0 / 4)
        self.probe(T0 - T0 / 4, T0 + T0 / 4)
        for i in range(initial):
            lo = -T0 + 2 * T0 * session.num(Fraction(i, initial))
            self.probe(lo, lo + 2 * T0 / initial)
        self.resolve()
        # grow the window by factors of 4 on each side until `reach` bits past the farthest kink found
        grow = GROW_EXACT if session.exact else GROW_FLOAT
        quiet_steps = -(-self.session.reach // grow)
        for side in (1, -1):
            quiet = 0
            T = T0
            steps = 0
            # float mode: far out the rounding of p + t d swamps small kinks, so the growth also stops at
            # 2^(reach + 4) times the first window
            limit = None if session.exact else T0 * 2.0 ** (self.session.reach + 4)
            while quiet < quiet_steps and steps < MAX_STEPS and (limit is None or T < limit):
                steps += 1
                before = self.count_kinks()
                c = side * T * 2**grow
                self.probe(min(c - T, c + T), max(c - T, c + T))
                self.resolve()
                T = T * 2**grow
                quiet = quiet + 1 if self.count_kinks() == before else 0
        return self.result()

    def count_kinks(self) -> int:
        return sum(1 for a in self.anchors if a.kink_to is not None)

    def result(self) -> LineResult:
        session = self.session
        pieces: list[_Piece] = []
        for a in self.anchors:
            if not pieces or pieces[-1] is not a.piece:
                pieces.append(a.piece)
        if not session.exact:
            # far out, float values cannot separate nearly equal pieces: merge neighbours that agree within noise
            merged: list[_Piece] = []
            for P in pieces:
                if merged:
                    Q = merged[-1]
                    if self.on(P.at(P.hi), Q, P.hi) and self.on(Q.at(Q.lo), P, Q.lo):
                        for t, y in zip(P.ts, P.ys, strict=True):
                            Q.add(t, y, False)
                        continue
                merged.append(P)
            pieces = merged
        kinks = []
        for Pa, Pb in zip(pieces, pieces[1:], strict=False):
            t = self.intersect(Pa, Pb)
            if t is None:  # pragma: no cover - two certified, different, parallel neighbours
                raise IdentificationError("two neighbouring pieces of a line are parallel: the search is inconsistent")
            kinks.append(t)
        return LineResult(self.p, self.d, kinks, pieces, self.anchors[0].t, self.anchors[-1].t, self.samples)


def pred_error(session: Session, P: _Piece, t: float) -> float:
    """Float mode: the standard error of a weighted least-squares piece's value at t (sample noise ∝ y0 + |y|)."""
    ts = np.array(P.ts, dtype=np.float64)
    Y = np.array(P.ys, dtype=np.float64)
    sig = session.eps * (session.y0 + np.max(np.abs(Y), axis=1) + session.g0 * (0.5 * session.scale + np.abs(ts)))
    w = 1.0 / sig**2
    if len(ts) < 2:
        return math.inf
    tm = float((w * ts).sum() / w.sum())
    sxx = float((w * (ts - tm) ** 2).sum())
    if sxx == 0:
        return math.inf
    return math.sqrt(1.0 / float(w.sum()) + (t - tm) ** 2 / sxx)
