"""Identification from queries: recover the normal form of a shallow ReLU network from black-box access.

The mathematics (see docs/math/identification.md).  Write f = ρ(θ) as its decomposition

    f(x) = Σ_û κ_û σ(α̂·x + β̂) + M x + e.

* On a line x(t) = p + t d the restriction g(t) = f(p + t d) is continuous and piecewise linear, with one kink
  at each crossing t_û = −(α̂·p + β̂)/(α̂·d) of a kink class (a line in general position meets every hyperplane,
  once).  The kinks are located exactly, not by bisection: three collinear values certify a linear piece
  (a *probe*), two certified pieces that differ meet at a computable point t*, and one query at t* plus one
  random query on each side confirm that a single kink sits there.  The search window is doubled on each
  side until several consecutive doublings find nothing.
* Between two consecutive kinks the network is affine on a neighbourhood of the line, so its Jacobian G_i
  (k×m) there costs m + 1 queries (forward differences are exact for an affine map).  The jump of the
  Jacobian across the crossing of û is the rank-one matrix ±κ_û α̂ᵀ: it gives the normal α̂ (hence β̂ from the
  crossing point) and the kink κ_û.  Every region's Jacobian serves the two kinks that bound it, so one line
  with N kinks costs about (N + 1)(m + 1) queries: near the information limit n(m + k + 1) + k.
* Left of every crossing (with the normals oriented along d) no kink term is active, so that region's
  Jacobian and value give the affine part M, e.
* Float mode, precision: the Jacobian error is noise / step, and coordinate steps must stay inside a region.
  Once the normals â_w are known (n ≤ m), every Jacobian is measured again along the dual basis [Â⁺ | Q]
  (Q spans the common orthogonal complement): a step along d_w away from hyperplane w, or along Q, crosses no
  hyperplane however long it is, so the steps are of the size of the input region.  Offsets are measured
  again on a short line along each normal through its point nearest the origin, and the worst hyperplanes a
  second time near the origin (see docs/math/identification.md).
* Safety of the steps: a step x + h e_j must not leave the region of x.  Once the hyperplanes are known the
  condition is checked for every step (exactly in exact mode), and offending steps are redone shorter.
* Consistency: the recovered function is compared with the oracle on further random lines (every kink found
  there must be a predicted crossing with the predicted slope jump, and every sampled value must agree) and on
  random points; kinks found only there are recovered from Jacobians on that line.

What the queries cannot see is exactly the fibre of the recovered function: permutations and positive
scalings, flips (σ(t) − σ(−t) = t), duplicated neurons, cancelling pairs and their translations, null and
constant neurons.  The result reports it through :func:`relusym.fiber`.

Exact mode returns a normal form that is exactly the oracle's (for every parameter, generic or not) provided
every kink class crosses the searched window on some line and no two kinks of a line lie closer together
than the probes resolve; the final checks compare exact values, so a wrong answer needs a coincidence of
random rationals.  Float mode states the precision reached, estimated from the oracle's own rounding noise
(measured on collinear triples, modelled as ε(y0 + |y| + g0·|x|)), the step sizes used and the misses of the
recovered hyperplanes at the kinks of the check lines; an oracle that answers in float32 is taken to round its
inputs too.  An oracle that is not piecewise linear within that noise (added noise, rounded outputs, tanh) ends
in :class:`~relusym.errors.IdentificationError`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.progress import progress as _progress_bar
from relusym._base.rng import RNGLike, as_generator
from relusym._core.network import Network
from relusym._core.normal_form import NormalForm, normal_form
from relusym._core.operations import realize
from relusym._exact.numbers import fraction_str, to_fraction
from relusym._identify.width import absorbing_orientations
from relusym.errors import BudgetExceededError, IdentificationError, InvalidNetworkError

__all__ = ["Identification", "identify"]

_MAX_STEPS = 200  # window growth steps per side, at most
_GROW_EXACT = 8  # each growth step multiplies the window by 2^8 (exact mode) or 2^4 (float mode)
_GROW_FLOAT = 4
_ERR_SAFETY = 4.0  # float mode: the error estimates model rounding as independent noise; real rounding is not
_TOL_FACTOR = 16.0  # float mode: a value is "on a line" within this many noise levels
_EXACT_PROBE = Fraction(1, 2**12)  # exact mode: probe half-width, relative to the gap explored
_FLOAT_PROBE = 2.0**-3
_QUANT = 16.0  # float mode: the shortest step along a line, in units of the oracle's input rounding
_EXACT_NEAR = Fraction(1, 2**10)  # a confirmed kink is checked this close on each side (relative)
_FLOAT_NEAR = 1.0 / 16
_EXACT_STEP = Fraction(1, 2**16)  # exact mode: Jacobian step, relative to the half-width of the region
_FLOAT_STEP = 1.0 / 32  # Jacobian step, relative to the half-width of the region on the line
_POOR = 2.0**-16  # float mode: a recovered hyperplane with a larger estimated error is not used for steps
_Y0_FLOOR = 1e-100  # float mode: the least typical output size (noise levels stay normal floats, squared)
_BASIS_STEP = 2.0  # float mode: second-pass steps along the dual basis, relative to max(scale, |x|)


# ----------------------------------------------------------------------------------------------------------
# the oracle and the session


class _Session:
    """The oracle behind a counter and a budget, and the arithmetic of the mode (exact or float)."""

    def __init__(
        self,
        oracle: Callable[..., Any],
        m: int,
        k: int,
        exact: bool,
        max_queries: int | None,
        deadline: float,
        rng: np.random.Generator,
        bar: Any,
        scale: float,
    ) -> None:
        self.oracle = oracle
        self.m, self.k, self.exact = m, k, exact
        self.max_queries = max_queries
        self.deadline = deadline
        self.rng = rng
        self.bar = bar
        self.scale = scale
        self.queries = 0
        self.calls = 0
        self.eps = 2.0**-52  # float mode: relative noise level of the oracle (measured)
        self.floor = 2.0**-52
        self.u_in = 2.0**-53  # float mode: the relative rounding unit of the inputs as the oracle sees them
        self.y0 = 1.0  # float mode: typical output magnitude
        self.g0 = 0.0  # float mode: typical Σ_j |∂f/∂x_j| (the noise of a value grows with g0·|x|)
        self.residuals: list[float] = []
        self.reach = 64 if exact else 8  # bits the windows grow past the farthest kink found
        self.enlarge = True  # float mode: second Jacobian pass with the longest safe steps
        self.refine = True  # float mode: re-measure the worst hyperplanes off their line
        self.refine_bits = 44.0  # ... unless their estimated error is already below 2^-refine_bits
        self.overrides: dict[tuple[int, int], Any] = {}  # float mode: hyperplanes re-measured off their line
        self.relocated: set[tuple[int, int]] = set()  # float mode: hyperplanes whose offset was measured again
        self.kink_points: list[np.ndarray] = []  # float mode: kinks found on check lines (on true hyperplanes)

    # -- queries ---------------------------------------------------------------------------------------
    def _charge(self, b: int) -> None:
        if self.max_queries is not None and self.queries + b > self.max_queries:
            raise BudgetExceededError(
                f"identification needs more than max_queries = {self.max_queries} queries ({self.queries} used so far)"
            )
        if time.monotonic() > self.deadline:
            raise BudgetExceededError(f"identification ran past its budget of seconds ({self.queries} queries used)")
        self.queries += b
        self.calls += 1
        self.bar.update(b)

    def query(self, X: Any) -> np.ndarray:
        """ρ(θ) at the points X: a (B, k) array (float64, or object of Fractions in exact mode)."""
        if self.exact:
            pts = [tuple(p) for p in X]
            self._charge(len(pts))
            out = self.oracle(pts)
            try:
                rows = list(out)
            except TypeError:
                raise IdentificationError("the exact oracle must return one list of k rationals per point") from None
            if len(rows) != len(pts):
                raise IdentificationError(f"the oracle returned {len(rows)} rows for {len(pts)} points")
            Y = np.empty((len(pts), self.k), dtype=object)
            for i, row in enumerate(rows):
                vals = [row] if self.k == 1 and not _is_seq(row) else list(row)
                if len(vals) != self.k:
                    raise IdentificationError(
                        f"the oracle returned {len(vals)} outputs at a point, expected k = {self.k}"
                    )
                for r, v in enumerate(vals):
                    if isinstance(v, float) and not math.isfinite(v):
                        raise IdentificationError("the oracle returned a non-finite value")
                    try:
                        Y[i, r] = to_fraction(v, "oracle output")
                    except (InvalidNetworkError, TypeError, ValueError):
                        raise IdentificationError(
                            f"the exact oracle returned {v!r}, which is not an exact rational"
                        ) from None
            return Y
        Xa = np.ascontiguousarray(X, dtype=np.float64)
        if Xa.ndim == 1:
            Xa = Xa[None, :]
        self._charge(Xa.shape[0])
        out = self.oracle(Xa)
        if hasattr(out, "detach"):
            out = out.detach().cpu().numpy()
        arr = np.asarray(out)
        if arr.dtype == np.float32 or arr.dtype == np.float16:
            # an oracle that answers in float32 most likely computes in float32 and rounds its inputs so
            self.floor = max(self.floor, float(np.finfo(arr.dtype).eps))
            self.u_in = max(self.u_in, float(np.finfo(arr.dtype).eps) / 2)
        Y = np.asarray(arr, dtype=np.float64)
        if Y.ndim == 1 and self.k == 1:
            Y = Y[:, None]
        if Y.shape != (Xa.shape[0], self.k):
            raise IdentificationError(
                f"the oracle returned an array of shape {arr.shape} for {Xa.shape[0]} points; "
                f"expected ({Xa.shape[0]}, {self.k})"
            )
        if not np.isfinite(Y).all():
            raise IdentificationError("the oracle returned a non-finite value (NaN or infinity)")
        return Y

    # -- arithmetic ------------------------------------------------------------------------------------
    def num(self, x: Any) -> Any:
        return Fraction(x) if self.exact else float(x)

    def noise(self, y: Any, t: float = 0.0) -> float:
        """Float mode: the noise level of an oracle value of size |y| at line parameter t (the rounding of the
        query point p + t d grows with |t|)."""
        return self.eps * (self.y0 + float(np.max(np.abs(y))) + self.g0 * (0.5 * self.scale + abs(t)))

    def tol(self, y: Any, t: float = 0.0) -> float:
        return _TOL_FACTOR * self.noise(y, t)

    def rand_between(self, a: Any, b: Any) -> Any:
        """A random point of the middle of (a, b)."""
        u = 0.25 + 0.5 * self.rng.random()
        if self.exact:
            q = Fraction(int(u * 2**20), 2**20)
            return a + (b - a) * q
        return a + (b - a) * u


def _is_seq(x: Any) -> bool:
    return isinstance(x, list | tuple | np.ndarray)


# ----------------------------------------------------------------------------------------------------------
# one line: exact breakpoint search


_Y0_HINT = [1.0, 1.0, 0.0]  # float mode: y0, scale and g0 of the session, for the weights of piece fits


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
            w = 1.0 / (_Y0_HINT[0] + np.max(np.abs(Y), axis=1) + _Y0_HINT[2] * (0.5 * _Y0_HINT[1] + np.abs(t)))
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
class _LineResult:
    p: Any
    d: Any
    kinks: list[Any]  # sorted crossing parameters
    pieces: list[_Piece]  # N + 1 pieces, in order
    lo: Any
    hi: Any
    samples: list[tuple[Any, np.ndarray]]


class _LineSearch:
    def __init__(self, S: _Session, p: Any, d: Any) -> None:
        self.S = S
        self.p, self.d = p, d
        self.anchors: list[_Anchor] = []
        self.samples: list[tuple[Any, np.ndarray]] = []
        self.pn = 0.0 if S.exact else float(np.linalg.norm(np.asarray(p, dtype=np.float64)))

    # -- evaluation --------------------------------------------------------------------------------------
    def point(self, t: Any) -> Any:
        if self.S.exact:
            return tuple(pi + t * di for pi, di in zip(self.p, self.d, strict=True))
        return self.p + t * self.d

    def g(self, ts: Sequence[Any]) -> list[np.ndarray]:
        pts = [self.point(t) for t in ts]
        Y = self.S.query(pts if self.S.exact else np.array(pts))
        out = [Y[i] for i in range(len(ts))]
        self.samples += list(zip(ts, out, strict=True))
        return out

    # -- predicates -----------------------------------------------------------------------------------------
    def on(self, y: np.ndarray, P: _Piece, t: Any) -> bool:
        if self.S.exact:
            return bool(np.all(y == P.at(t)))
        # the noise of y and the uncertainty of the fitted piece at t (which grows away from its samples)
        tol = _TOL_FACTOR * math.hypot(self.S.noise(y, float(t)), _pred_error(self.S, P, float(t)))
        return float(np.max(np.abs(y - P.at(t)))) <= tol

    def same(self, a: _Anchor, b: _Anchor) -> bool:
        """Whether the pieces of two anchors are one line: exactly, or (float mode) within noise over the union
        of their extents (comparing only at the anchors would hide a kink in a short gap)."""
        Pa, Pb = a.piece, b.piece
        if self.S.exact:
            return bool(np.all(Pa.s == Pb.s) and np.all(Pa.c == Pb.c))
        return self.consistent(Pa.ts + Pb.ts, Pa.ys + Pb.ys)

    def consistent(self, ts: list[Any], ys: list[np.ndarray]) -> bool:
        """Float mode: whether the samples lie on one line within the noise of each (the fit of a short piece
        alone is compatible with anything far from it, so two pieces are compared through all their samples)."""
        P = _Piece(ts, ys, False)
        for t, y in zip(ts, ys, strict=True):
            if float(np.max(np.abs(y - P.at(t)))) > _TOL_FACTOR * self.S.noise(y, float(t)):
                return False
        return True

    def intersect(self, Pa: _Piece, Pb: _Piece) -> Any:
        ds = Pa.s - Pb.s
        dc = Pb.c - Pa.c
        if self.S.exact:
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
        S = self.S
        width = hi - lo
        for attempt in range(8):
            if c is None or attempt > 0:
                c = S.rand_between(lo, hi)
                yc = None
            rel = (_EXACT_PROBE if S.exact else _FLOAT_PROBE) / (4**attempt if S.exact else 2**attempt)
            dlt = width * rel
            if not S.exact:
                dlt = max(dlt, self.quantum(c))  # closer points are one point to an oracle that rounds its input
            ts = [c - dlt, c + dlt] + ([c] if yc is None else [])
            ys = self.g(ts)
            if yc is None:
                yc = ys[2]
            y1, y2 = ys[0], ys[1]
            mid = (y1 + y2) / 2
            if S.exact:
                ok = bool(np.all(mid == yc))
            else:
                res = float(np.max(np.abs(mid - yc)))
                ok = res <= S.tol(yc, float(c))
                if ok:
                    S.residuals.append(res / (S.y0 + float(np.max(np.abs(yc)))))
            if ok:
                P = _Piece([c - dlt, c, c + dlt], [y1, yc, y2], S.exact)
                self.insert(_Anchor(c, P))
                return
        raise IdentificationError(
            f"the oracle is not piecewise linear along a line near t = {float(c):.6g}: eight probes of three "
            "points each failed to find a linear piece"
            + ("" if S.exact else f" within its measured noise level (relative {S.eps:.2g})")
        )

    def quantum(self, t: Any) -> float:
        """Float mode: the shortest step along the line at t that the oracle surely sees, _QUANT times its
        input rounding unit (of |p + t d|)."""
        return _QUANT * self.S.u_in * (self.pn + abs(float(t)))

    def resolution(self, a: Any, b: Any) -> bool:
        """Whether the gap (a, b) may still be split: exact mode always (up to 2^-400); float mode while it is
        wider than √ε of the scale, below which the oracle's noise hides the slopes, and than the input
        rounding of the oracle allows."""
        if self.S.exact:
            return bool(b - a > Fraction(1, 2**400))
        return float(b - a) > self.res_width(a, b)

    def res_width(self, a: Any, b: Any) -> float:
        S = self.S
        w = math.sqrt(S.eps) * 1e-2 * (S.scale + abs(float(a)) + abs(float(b)))
        return max(w, 4.0 * self.quantum(max(abs(float(a)), abs(float(b)))))

    def resolve(self) -> None:
        """Refine until every gap between consecutive anchors is closed (same piece or a confirmed kink)."""
        S = self.S
        while True:
            gap = None
            for a, b in zip(self.anchors, self.anchors[1:], strict=False):
                if a.piece is not b.piece and a.kink_to is not b:
                    gap = (a, b)
                    break
            if gap is None:
                return
            if len(self.anchors) > 64 * (self.count_kinks() + 8):
                raise IdentificationError(
                    f"the breakpoint search on a line does not settle ({len(self.anchors)} probes for "
                    f"{self.count_kinks()} kinks): the oracle is not piecewise linear"
                    + (" (an exact oracle must return exact values)" if S.exact else " within its measured noise")
                )
            a, b = gap
            if S.exact and not self.resolution(a.t, b.t):
                raise IdentificationError(
                    f"two kinks of the restriction to a line lie closer than 2^-400 near t = {float(a.t):.6g}"
                )
            Pa, Pb = a.piece, b.piece
            # the uncertified gap: Pa is linear up to Pa.hi and Pb from Pb.lo, so any kink lies in between
            ga, gb = (Pa.hi, Pb.lo) if Pa.hi < Pb.lo else (a.t, b.t)
            if not S.exact and not (self.resolution(ga, gb) and self.resolution(a.t, b.t)):
                # float mode: the gap is as narrow as the oracle's precision resolves, so whatever lies in it is
                # one kink where the two pieces meet (or none, when they agree within noise)
                if self.same(a, b):
                    for t, yy in zip(Pb.ts, Pb.ys, strict=True):
                        Pa.add(t, yy, False)
                    for anc in self.anchors:
                        if anc.piece is Pb:
                            anc.piece = Pa
                    continue
                t_meet = self.intersect(Pa, Pb)
                w = self.res_width(ga, gb)
                # where two noisy pieces meet is itself uncertain: their values' errors over the slope difference
                tg = float(ga + gb) / 2
                yg = Pa.at(tg)
                sd = math.sqrt(S.noise(yg, tg) ** 2 + _pred_error(S, Pa, tg) ** 2 + _pred_error(S, Pb, tg) ** 2)
                dsl = float(np.linalg.norm(np.asarray(Pa.s - Pb.s, dtype=np.float64)))
                w += _TOL_FACTOR * sd / max(dsl, 1e-300)
                if t_meet is not None and ga - w <= t_meet <= gb + w:
                    a.kink_to = b
                    continue
                raise IdentificationError(
                    f"the oracle's restriction to a line is not piecewise linear within its measured noise "
                    f"(relative {S.eps:.2g}) near t = {float(a.t):.6g}: two pieces differ across a gap narrower "
                    "than its precision resolves but do not meet there (added noise, rounded outputs, a smooth "
                    "activation, or kinks closer together than its precision separates)"
                )
            if self.same(a, b):
                u = S.rand_between(ga, gb)
                (y,) = self.g([u])
                if self.on(y, Pa, u) and (S.exact or self.consistent(Pa.ts + Pb.ts + [u], Pa.ys + Pb.ys + [y])):
                    for t, yy in zip(Pb.ts, Pb.ys, strict=True):
                        Pa.add(t, yy, S.exact)
                    Pa.add(u, y, S.exact)
                    for anc in self.anchors:
                        if anc.piece is Pb:
                            anc.piece = Pa
                    self.insert(_Anchor(u, Pa))
                else:
                    self.probe(ga, gb, u, y)
                continue
            ts = self.intersect(Pa, Pb)
            if not S.exact:
                # float mode: the outermost sample of a piece may sit just across a kink (within noise), so
                # only the inner half of each piece's extent beyond its anchor is trusted
                ga2 = (a.t + Pa.hi) / 2 if Pa.hi > a.t else a.t
                gb2 = (b.t + Pb.lo) / 2 if Pb.lo < b.t else b.t
                ga, gb = (ga2, gb2) if ga2 < gb2 else (a.t, b.t)
            if ts is not None and ga < ts < gb:
                u1 = S.rand_between(ga, ts)
                u2 = S.rand_between(ts, gb)
                room = min(ts - u1, u2 - ts)
                if S.exact:
                    dl = room * _EXACT_NEAR
                else:
                    # as close as the noise allows: the two pieces must differ there by many noise levels
                    ds = float(np.linalg.norm(np.asarray(Pa.s - Pb.s, dtype=np.float64)))
                    need = 64.0 * S.tol(Pa.at(ts), float(ts)) / max(ds, 1e-300)
                    dl = min(room * _FLOAT_NEAR, max(room * 2.0**-12, need, self.quantum(ts)))
                ys, y1, y2, ym, yp = self.g([ts, u1, u2, ts - dl, ts + dl])
                # a single kink at ts: the value there is on both pieces, and so are values just beside it
                ok0 = self.on(ys, Pa, ts) and self.on(ys, Pb, ts)
                ok0 = ok0 and self.on(ym, Pa, ts - dl) and self.on(yp, Pb, ts + dl)
                ok1 = self.on(y1, Pa, u1)
                ok2 = self.on(y2, Pb, u2)
                if ok0 and ok1 and ok2:
                    Pa.add(u1, y1, S.exact)
                    Pb.add(u2, y2, S.exact)
                    if S.exact:  # float mode keeps only samples well inside a piece for the final fit
                        Pa.add(ts - dl, ym, True)
                        Pb.add(ts + dl, yp, True)
                    A1, A2 = _Anchor(u1, Pa), _Anchor(u2, Pb)
                    A1.kink_to = A2
                    self.insert(A1)
                    self.insert(A2)
                    continue
                if S.exact:  # float mode: a sample near an unconfirmed kink may fit the wrong piece within noise
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
                continue
            self.probe(ga, gb)

    def kinks_between(self, lo: Any, hi: Any) -> int:
        return sum(1 for a in self.anchors if a.kink_to is not None and lo <= a.t and a.kink_to.t <= hi)

    def run(self, T0: Any, initial: int = 4) -> _LineResult:
        S = self.S
        self.probe(-T0 - T0 / 4, -T0 + T0 / 4)
        self.probe(T0 - T0 / 4, T0 + T0 / 4)
        for i in range(initial):
            lo = -T0 + 2 * T0 * S.num(Fraction(i, initial))
            self.probe(lo, lo + 2 * T0 / initial)
        self.resolve()
        # grow the window by factors of 4 on each side until `reach` bits past the farthest kink found
        grow = _GROW_EXACT if S.exact else _GROW_FLOAT
        quiet_steps = -(-self.S.reach // grow)
        for side in (1, -1):
            quiet = 0
            T = T0
            steps = 0
            # float mode: far out the rounding of p + t d swamps small kinks, so the growth also stops at
            # 2^(reach + 4) times the first window
            limit = None if S.exact else T0 * 2.0 ** (self.S.reach + 4)
            while quiet < quiet_steps and steps < _MAX_STEPS and (limit is None or T < limit):
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

    def result(self) -> _LineResult:
        S = self.S
        pieces: list[_Piece] = []
        for a in self.anchors:
            if not pieces or pieces[-1] is not a.piece:
                pieces.append(a.piece)
        if not S.exact:
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
        return _LineResult(self.p, self.d, kinks, pieces, self.anchors[0].t, self.anchors[-1].t, self.samples)


# ----------------------------------------------------------------------------------------------------------
# Jacobians and hyperplanes


@dataclass
class _Region:
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

    def step_errors(self, S: _Session) -> np.ndarray:
        """Float mode: the error of each measured directional derivative (the noise of the two values over the
        step); the rows of the basis's inverse are unit vectors, so these add in quadrature into the error
        of the Jacobian."""
        h = np.abs(np.asarray(self.h, dtype=np.float64))
        if self.basis is None:
            return 2.0 * S.noise(self.F, float(np.linalg.norm(np.asarray(self.x, dtype=np.float64)))) / h
        if self._err is None:
            # far out, the oracle rounds the larger query point too: its noise grows with |x + s r|
            xn = float(np.linalg.norm(np.asarray(self.x, dtype=np.float64)))
            mag = S.y0 + np.max(np.abs(np.asarray(self.Fj, dtype=np.float64)), axis=1)
            far = S.eps * (mag + S.g0 * (0.5 * S.scale + xn + h * self.basis.norms))
            self._err = (S.noise(self.F, xn) + far) / h
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

    R: np.ndarray  # m × m
    Rinv: np.ndarray  # m × m
    q: int  # the first q columns are the dual directions of the hyperplanes ``hyps``, in order
    norms: np.ndarray  # |r_i|
    hyps: list[_Hyper]


@dataclass
class _Hyper:
    """A recovered neuron v σ(a·x + b) (a canonical in exact mode, a unit vector in float mode)."""

    a: np.ndarray
    b: Any
    v: np.ndarray
    err_w: float = 0.0  # float mode: estimated relative error of (a, b)
    err_v: float = 0.0  # and of v
    rank_gap: float = 0.0
    da: float = 0.0  # float mode, before the safety factor: the error of the unit normal a
    db: float = 0.0  # and of b


def _regions(S: _Session, L: _LineResult, T0: Any, which: Sequence[int] | None = None) -> dict[int, _Region]:
    """Jacobians of the regions (indices 0..N) of a line (all of them, or those in ``which``)."""
    N = len(L.kinks)
    idx = list(range(N + 1)) if which is None else sorted(set(which))
    bases: list[Any] = []
    halves: list[Any] = []
    for i in idx:
        if N == 0:
            t, hw = S.num(0), T0
        elif i == 0:
            hw = (L.kinks[1] - L.kinks[0]) / 2 if N > 1 else T0
            t = L.kinks[0] - hw
        elif i == N:
            hw = (L.kinks[-1] - L.kinks[-2]) / 2 if N > 1 else T0
            t = L.kinks[-1] + hw
        else:
            hw = (L.kinks[i] - L.kinks[i - 1]) / 2
            t = L.kinks[i - 1] + hw
        bases.append(t)
        halves.append(hw)
    out: dict[int, _Region] = {}
    chunk = max(1, 4096 // (S.m + 1))
    for s0 in range(0, len(idx), chunk):
        part = list(range(s0, min(len(idx), s0 + chunk)))
        pts: list[Any] = []
        meta = []
        for q in part:
            t, hw = bases[q], halves[q]
            if S.exact:
                x = tuple(pi + t * di for pi, di in zip(L.p, L.d, strict=True))
                h = hw * _EXACT_STEP
                pts.append(x)
                for j in range(S.m):
                    pts.append(tuple(xv + (h if jj == j else 0) for jj, xv in enumerate(x)))
            else:
                x = L.p + t * L.d
                h = float(hw) * _FLOAT_STEP
                pts.append(x)
                E = np.tile(x, (S.m, 1))
                E[np.arange(S.m), np.arange(S.m)] += h
                pts.extend(list(E))
            meta.append((x, h))
        Y = S.query(pts if S.exact else np.array(pts))
        for r, q in enumerate(part):
            x, h = meta[r]
            blk = Y[r * (S.m + 1) : (r + 1) * (S.m + 1)]
            hs = [h] * S.m
            if not S.exact:
                xs = np.array(x)
                hs = [float((xs[j] + h) - xs[j]) for j in range(S.m)]  # the step actually taken
            out[idx[q]] = _Region(x, blk[0], hs, blk[1:].copy())
    return out


def _check_regions(S: _Session, regs: list[_Region]) -> None:
    """One query per region in a random direction r: f(x + r) must equal f(x) + G r.  A coordinate step that
    crossed a hyperplane corrupts G and fails this check (with probability one); such regions are redone with
    halved steps."""
    todo = list(regs)
    for _ in range(40):
        if not todo:
            return
        pts = []
        dirs = []
        for R in todo:
            r: Any
            if S.exact:
                r = [
                    Fraction(int(S.rng.integers(1, 2**10)) * (1 if S.rng.random() < 0.5 else -1), 2**10)
                    for _ in range(S.m)
                ]
                hmin = min(R.h)
                r = [x * hmin / S.m for x in r]
                pts.append(tuple(xv + rv for xv, rv in zip(R.x, r, strict=True)))
            else:
                # inside the simplex of x and its steps x + h_j e_j (convex, so inside the region when every step
                # is): a random direction of length min |h| could leave it where the steps are one-sided
                r = S.rng.uniform(0.1, 1.0, S.m) / S.m * np.asarray(R.h, dtype=np.float64)
                x = np.asarray(R.x) + r
                r = x - np.asarray(R.x)
                pts.append(x)
            dirs.append(r)
        Y = S.query(pts if S.exact else np.array(pts))
        bad = []
        for R, r, y in zip(todo, dirs, Y, strict=True):
            G = R.jacobian()
            if S.exact:
                pred = R.F + np.array(
                    [sum((G[q, j] * r[j] for j in range(S.m)), Fraction(0)) for q in range(S.k)], dtype=object
                )
                ok = bool(np.all(pred == y))
            else:
                pred = R.F + np.asarray(G, dtype=np.float64) @ r
                rn = np.abs(r) / np.asarray(R.h, dtype=np.float64)
                tol = S.tol(y, float(np.linalg.norm(np.asarray(R.x, dtype=np.float64)))) * (2.0 + 2.0 * float(rn.sum()))
                ok = float(np.max(np.abs(pred - y))) <= tol
            if not ok:
                bad.append(R)
        for R in bad:
            _redo_steps(S, R, {j: R.h[j] / 2 for j in range(S.m)})
        todo = bad
    raise IdentificationError("the oracle is not affine near a point between two kinks of a line, at any step size")


def _hyper_from_jump(S: _Session, J: np.ndarray, xk: Any, d: Any) -> _Hyper:
    """The neuron v σ(a·x + b) whose crossing at xk (moving along d) makes the Jacobian jump by J."""
    if S.exact:
        rows = [r for r in range(S.k) if any(x != 0 for x in J[r])]
        if not rows:
            raise IdentificationError("a kink of a line carries no Jacobian jump: the steps were not safe")
        r = rows[0]
        p = next(j for j in range(S.m) if J[r, j] != 0)
        a = np.array([J[r, j] / J[r, p] for j in range(S.m)], dtype=object)
        col = J[:, p]
        if not all(J[rr, j] == col[rr] * a[j] for rr in range(S.k) for j in range(S.m)):
            raise IdentificationError(
                "the Jacobian jump at a kink is not of rank one: two hyperplanes cross the line at one point"
            )
        b = -sum((a[j] * xk[j] for j in range(S.m)), Fraction(0))
        sd = sum((a[j] * d[j] for j in range(S.m)), Fraction(0))
        v = col if sd > 0 else -col
        return _Hyper(a, b, np.array(list(v), dtype=object))
    Jf = np.asarray(J, dtype=np.float64)
    U, sv, Vt = np.linalg.svd(Jf, full_matrices=False)
    a = Vt[0]
    if float(a @ d) < 0:
        a = -a
    v = Jf @ a
    b = -float(a @ xk)
    gap = float(sv[1] / sv[0]) if len(sv) > 1 and sv[0] > 0 else 0.0
    return _Hyper(a, b, v, rank_gap=gap)


# ----------------------------------------------------------------------------------------------------------
# the model f(x) = Σ v σ(a·x + b) + M x + e


def _pre(S: _Session, H: list[_Hyper], X: Any) -> np.ndarray:
    """Pre-activations a_u·x + b_u (N × B) at the points X (B × m)."""
    if S.exact:
        out = np.empty((len(H), len(X)), dtype=object)
        for u, h in enumerate(H):
            for i, x in enumerate(X):
                out[u, i] = sum((h.a[j] * x[j] for j in range(S.m) if h.a[j]), h.b)
        return out
    A = np.array([h.a for h in H]).reshape(len(H), S.m)
    b = np.array([h.b for h in H], dtype=np.float64)
    return A @ np.asarray(X, dtype=np.float64).T + b[:, None]


def _model_values(S: _Session, H: list[_Hyper], M: np.ndarray, e: np.ndarray, X: Any) -> np.ndarray:
    """f̂(X) (B × k)."""
    Z = _pre(S, H, X)
    if S.exact:
        out = np.empty((len(X), S.k), dtype=object)
        for i, x in enumerate(X):
            for r in range(S.k):
                s = e[r] + sum((M[r, j] * x[j] for j in range(S.m) if M[r, j]), Fraction(0))
                for u, h in enumerate(H):
                    if Z[u, i] > 0:
                        s += h.v[r] * Z[u, i]
                out[i, r] = s
        return out
    V = np.array([h.v for h in H]).reshape(len(H), S.k)
    return np.asarray(np.maximum(Z, 0.0).T @ V + np.asarray(X) @ M.T + e)


def _affine(S: _Session, H: list[_Hyper], R0: _Region) -> tuple[np.ndarray, np.ndarray]:
    """M and e from one region's Jacobian and value, with the active kink terms removed."""
    G = R0.jacobian()
    x = R0.x
    Z = _pre(S, H, [x])[:, 0] if H else np.zeros(0)
    if S.exact:
        M = G.copy()
        e = R0.F.copy()
        for u, h in enumerate(H):
            if Z[u] > 0:
                for r in range(S.k):
                    for j in range(S.m):
                        M[r, j] -= h.v[r] * h.a[j]
                    e[r] -= h.v[r] * Z[u]
        for r in range(S.k):
            e[r] -= sum((M[r, j] * x[j] for j in range(S.m)), Fraction(0))
        return M, e
    act = Z > 0
    M = np.asarray(G, dtype=np.float64).copy()
    e = np.asarray(R0.F, dtype=np.float64).copy()
    if act.any():
        V = np.array([h.v for h in H])[act]
        A = np.array([h.a for h in H])[act]
        M -= V.T @ A
        e -= V.T @ Z[act]
    e -= M @ np.asarray(x, dtype=np.float64)
    return M, e


def _unsafe_steps(S: _Session, H: list[_Hyper], R: _Region) -> dict[int, Any]:
    """Coordinates j whose step x + h_j e_j crosses a recovered hyperplane, with a safe replacement step.  A
    region measured along a basis of long steps chose them against the recovered hyperplanes and their
    errors, and passed its own check: it has none."""
    if not H or R.basis is not None:
        return {}
    Z = _pre(S, H, [R.x])[:, 0]
    out: dict[int, Any] = {}
    if S.exact:
        for j in range(S.m):
            h = R.h[j]
            bad = False
            best = None
            for u, hy in enumerate(H):
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
    h = np.asarray(R.h, dtype=np.float64)
    plus, minus = _safe_steps(H, np.asarray(R.x, dtype=np.float64))
    safe = np.where(h > 0, plus, minus)
    for j in np.nonzero(np.abs(h) >= 0.9 * safe)[0].tolist():
        out[j] = float(np.sign(h[j])) * 0.45 * float(safe[j])
    return out


def _safe_steps(H: list[_Hyper], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float mode: for each coordinate j the largest |h| such that x + h e_j (h > 0, resp. h < 0) crosses no
    recovered hyperplane."""
    if not H:
        return np.full(x.shape[0], np.inf), np.full(x.shape[0], np.inf)
    A = np.array([hy.a for hy in H])  # N × m
    z = A @ x + np.array([hy.b for hy in H], dtype=np.float64)
    sa, sz = np.sign(A), np.sign(z)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(z)[:, None] / np.abs(A)
    plus = np.where(sa * sz < 0, ratio, np.inf).min(axis=0)  # moving along +e_j decreases |z| when signs differ
    minus = np.where(sa * sz > 0, ratio, np.inf).min(axis=0)
    return plus, minus


def _enlarge_steps(S: _Session, H: list[_Hyper], regs: list[_Region], cap: float) -> int:
    """Float mode: redo each coordinate step with the largest safe step (either direction) that the recovered
    hyperplanes allow, where that is at least twice the step used: the Jacobian error is noise / step."""
    count = 0
    for R in regs:
        if R.basis is not None:
            continue
        x = np.asarray(R.x, dtype=np.float64)
        plus, minus = _safe_steps(H, x)
        best = np.minimum(np.maximum(plus, minus), cap) * 0.45
        sign = np.where(plus >= minus, 1.0, -1.0)
        h = np.abs(np.asarray(R.h, dtype=np.float64))
        js = np.nonzero(best > 2.0 * h)[0]
        if js.size:
            _redo_steps(S, R, {int(j): float(sign[j] * best[j]) for j in js})
            R.verified = False
            count += int(js.size)
    return count


def _step_basis(H: list[_Hyper]) -> _Basis | None:
    """Float mode: the basis of long steps (see :class:`_Basis`) for the recovered hyperplanes, or None when
    there are more of them than inputs or their normals are nearly dependent (then every direction moves
    several a_w·x at once and the coordinate steps are kept).  A hyperplane whose estimated error exceeds
    2^-16 (a kink too small for the coordinate steps to measure) is left out: its normal would only mislead
    the steps, which may therefore cross it; the check of each region then fails and it keeps its
    coordinate steps."""
    H = [h for h in H if h.err_w <= _POOR]
    if not H:
        return None
    A = np.array([h.a for h in H], dtype=np.float64)
    n, m = A.shape
    if n > m:
        return None
    A = A / np.linalg.norm(A, axis=1)[:, None]
    U, sv, Vt = np.linalg.svd(A, full_matrices=True)
    if not sv[-1] > 1e-4 * sv[0]:
        return None
    D = Vt[:n].T @ (U.T / sv[:, None])  # Â⁺: Â D = I
    Q = Vt[n:].T  # Â Q = 0, QᵀQ = I, QᵀD = 0
    R = np.hstack([D, Q])
    return _Basis(R, np.vstack([A, Q.T]), n, np.linalg.norm(R, axis=0), H)


def _basis_steps(S: _Session, B: _Basis, x: np.ndarray, factor: float) -> np.ndarray:
    """The signed step along each column of the basis at x: ``factor``·max(scale, |x|), away from its
    hyperplane for a dual direction, and short enough that the estimated error of every other recovered
    normal cannot make it cross that hyperplane (a step s r_i moves a_w'·x, w' ≠ i, by at most
    s·err_w'·|r_i| away from its recovered value)."""
    m, q, H = S.m, B.q, B.hyps
    z = B.Rinv[:q] @ x + np.array([float(h.b) for h in H]) / np.array([float(np.linalg.norm(h.a)) for h in H])
    err = np.array([max(float(h.err_w), 2.0**-52) for h in H])
    sg = np.ones(m)
    sg[:q] = np.where(z >= 0, 1.0, -1.0)
    sg[q:] = np.where(S.rng.random(m - q) < 0.5, 1.0, -1.0)
    lim = np.abs(z) / (8.0 * err)
    order = np.argsort(lim)
    mins = np.full(m, lim[order[0]])
    mins[order[0]] = lim[order[1]] if q > 1 else np.inf  # d_w need not avoid hyperplane w
    hmax = factor * max(S.scale, float(np.linalg.norm(x)))
    return np.asarray(sg * np.minimum(hmax, 0.5 * mins / B.norms))


def _measure_basis(
    S: _Session, B: _Basis, base: list[tuple[np.ndarray, np.ndarray | None]], factor: float
) -> list[_Region | None]:
    """Float mode: the Jacobian at each base point x (with its value F, queried when None) along the basis of
    long steps: m queries (m + 1 without F) and one check each.  The check is one query at x + Σ c_i s_i r_i
    with 0 < c_i ≤ 1/m, which moves away from every recovered hyperplane: a step that crossed a hyperplane
    corrupts the Jacobian and fails it with probability one.  A point whose check fails is measured again
    with steps 16 times shorter, twice; then it gets None."""
    m = S.m
    out: list[_Region | None] = [None] * len(base)
    todo = list(range(len(base)))
    Fs = [F for _x, F in base]
    missing = [i for i in todo if Fs[i] is None]
    if missing:
        Y0 = S.query(np.array([base[i][0] for i in missing]))
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
                st = _basis_steps(S, B, x, factor * shrink)
                D = (B.R * st[None, :]).T  # row i: the step s_i r_i
                X = x[None, :] + D
                pts.append(X)
                metas.append((i, x, st, (X - x[None, :]) - D))  # what the rounding of x + s_i r_i added
            Y = S.query(np.concatenate(pts, axis=0))
            regs = []
            for r, (i, x, st, E) in enumerate(metas):
                F = Fs[i]
                assert F is not None
                R = _Region(x, F, st.tolist(), Y[r * m : (r + 1) * m].copy(), basis=B, corr=np.zeros((m, S.k)))
                R.corr = E @ np.asarray(R.jacobian()).T  # G·(rounding), with G from the uncorrected steps
                R._G = None
                regs.append(R)
            cs = [S.rng.uniform(0.1, 1.0, m) / m for _ in metas]
            xs = [R.x + B.R @ (c * np.asarray(R.h)) for R, c in zip(regs, cs, strict=True)]
            Yc = S.query(np.array(xs))
            for (i, _x, _st, _E), R, c, xc, y in zip(metas, regs, cs, xs, Yc, strict=True):
                pred = R.F + R.jacobian() @ (xc - R.x)
                e_dir = float(c @ (R.step_errors(S) * np.abs(np.asarray(R.h))))
                tol = 2.0 * S.tol(np.maximum(np.abs(y), np.abs(R.F)), float(np.linalg.norm(xc))) + _TOL_FACTOR * e_dir
                if float(np.max(np.abs(pred - y))) <= tol:
                    R.verified = True
                    out[i] = R
                else:
                    failed.append(i)
        todo = failed
        if not todo:
            break
        shrink /= 16.0
    return out


def _basis_regions(S: _Session, H: list[_Hyper], line_regs: list[dict[int, _Region]]) -> bool:
    """Float mode: measure the Jacobian of every region of the lines (not yet so measured) again along the
    basis of long steps of the recovered hyperplanes, reusing the value at its point.  The Jacobian error is
    noise / step, so this gains the ratio of these steps to the coordinate steps the region allowed (often
    2^6 or more).  A region whose check keeps failing keeps its coordinate steps.  Returns whether the basis
    exists (False: more hyperplanes than inputs, or nearly dependent normals)."""
    B = _step_basis(H)
    if B is None:
        return False
    # a region measured before some hyperplane was found may have stepped across it: measure it again
    A = np.array([h.a for h in B.hyps], dtype=np.float64)
    bv = np.array([float(h.b) for h in B.hyps])
    AR: dict[int, np.ndarray] = {}
    todo = []
    for rg in line_regs:
        for key, R in rg.items():
            if R.basis is not None:
                if id(R.basis) not in AR:
                    AR[id(R.basis)] = A @ R.basis.R
                z = A @ np.asarray(R.x) + bv
                zs = z[:, None] + AR[id(R.basis)] * np.asarray(R.h)[None, :]
                if not bool(np.any((zs > 0) != (z > 0)[:, None])):
                    continue
            todo.append((rg, key))
    regs = _measure_basis(S, B, [(np.asarray(rg[key].x), rg[key].F) for rg, key in todo], _BASIS_STEP)
    for (rg, key), Rb in zip(todo, regs, strict=True):
        if Rb is not None:
            rg[key] = Rb
    return True


def _redo_steps(S: _Session, R: _Region, fix: dict[int, Any]) -> None:
    js = sorted(fix)
    if S.exact:
        pts = [tuple(xv + (fix[j] if jj == j else 0) for jj, xv in enumerate(R.x)) for j in js]
        Y = S.query(pts)
        for q, j in enumerate(js):
            R.h[j] = fix[j]
            R.Fj[j] = Y[q]
        return
    x = np.asarray(R.x, dtype=np.float64)
    E = np.tile(x, (len(js), 1))
    for q, j in enumerate(js):
        E[q, j] += fix[j]
    Y = S.query(E)
    for q, j in enumerate(js):
        R.h[j] = float(E[q, j] - x[j])
        R.Fj[j] = Y[q]


# ----------------------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True)
class Identification:
    """The answer of :func:`identify`.

    ``network``: a network of minimal width realizing the recovered function (exact mode: the canonical minimal
    network of the recovered normal form when it can be certified; float mode: minimal within the measured
    precision when ``width_minimal``); ``normal_form``: its normal form;
    ``queries``: oracle evaluations used (points; each returns k numbers) and ``calls`` (batches);
    ``exact``: the mode; ``precision_bits`` (float mode): −log2 of the estimated worst-case relative error of the
    recovered hyperplanes (unit (a, b)) and kinks (of the linear part M when no kink was found), from the
    oracle's measured noise and the steps used, and never more than twice the largest miss of a recovered
    hyperplane at a kink found on a check line; ``noise``: that measured relative noise level;
    ``heldout_error``: the largest relative disagreement on held-out queries; ``window``: the largest |t| searched
    on the lines (unit directions in float mode); ``lines``: lines searched; ``width_minimal``: True when the
    width of ``network`` is certified minimal (exact mode: w(f) of the exact normal form; float mode: one neuron
    per recovered kink class, the linear part absorbed by orientations found within the measured precision and
    checked on the held-out queries, or no kink and 2·rank(M) neurons), None when undecided (``notes`` says why
    and gives bounds); ``fiber``: the fibre of the recovered network (what queries cannot distinguish), None
    when it could not be computed within budget; ``indistinguishable``: that fibre in words; ``limits``: what the
    search guarantees and what it does not; ``information_limit``: n(m + k + 1) + k numbers for the recovered
    width n.
    """

    network: Network
    normal_form: NormalForm
    queries: int
    calls: int
    exact: bool
    precision_bits: float | None
    noise: float | None
    heldout_error: float | None
    window: float
    lines: int
    kinks: int
    fiber: Any
    indistinguishable: tuple[str, ...]
    limits: tuple[str, ...]
    information_limit: int
    elapsed: float
    notes: tuple[str, ...] = field(default=())
    width_minimal: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": "exact" if self.exact else "float",
            "m": self.network.m,
            "n": self.network.n,
            "k": self.network.k,
            "kinks": self.kinks,
            "queries": self.queries,
            "queries_log2": round(math.log2(self.queries), 3) if self.queries else None,
            "calls": self.calls,
            "information_limit": self.information_limit,
            "precision_bits": None if self.precision_bits is None else round(self.precision_bits, 2),
            "noise": self.noise,
            "heldout_error": self.heldout_error,
            "window": self.window,
            "lines": self.lines,
            "elapsed_seconds": round(self.elapsed, 3),
            "indistinguishable": list(self.indistinguishable),
            "limits": list(self.limits),
            "notes": list(self.notes),
            "width_minimal": self.width_minimal,
            "fiber": None if self.fiber is None else self.fiber.to_dict(),
            "network": self.network.to_dict(),
            "normal_form": self.normal_form.to_dict(),
        }

    def report(self) -> str:
        m, n, k = self.network.shape
        lines = [
            f"identified a network with m = {m}, n = {n}, k = {k} ({self.kinks} kink class(es)) "
            f"from {self.queries} queries (2^{math.log2(max(self.queries, 1)):.2f}; information limit "
            f"{self.information_limit} numbers) in {self.elapsed:.2f} s",
        ]
        if self.exact:
            lines.append("exact mode: the normal form is exact")
        else:
            lines.append(
                f"float mode: precision ≈ 2^-{self.precision_bits:.1f} (worst relative error of hyperplanes and "
                f"kinks); oracle noise {self.noise:.2g}; held-out disagreement {self.heldout_error:.2g}"
            )
        lines.append("what queries cannot distinguish:")
        lines += ["  " + s for s in self.indistinguishable]
        lines.append("limits:")
        lines += ["  " + s for s in self.limits]
        lines += ["note: " + s for s in self.notes]
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------
# the algorithm


def _random_line(S: _Session) -> tuple[Any, Any]:
    p: Any
    d: Any
    if S.exact:
        q = 2**12
        sc = Fraction(S.scale).limit_denominator(2**20) / 2
        p = tuple(Fraction(int(S.rng.integers(-q, q + 1)), q) * sc for _ in range(S.m))
        d = tuple(Fraction(int(S.rng.integers(-q, q + 1)) or 1, q) for _ in range(S.m))
        return p, d
    p = S.rng.standard_normal(S.m) * (S.scale / 2 / math.sqrt(S.m))
    d = S.rng.standard_normal(S.m)
    d /= np.linalg.norm(d)
    return p, d


def _estimate_noise(S: _Session, p: Any, d: Any, T0: float) -> None:
    """Float mode: the oracle's relative noise from collinear triples on a short segment at several places."""
    res = []
    mags = []
    slopes = []
    tts = []
    for _ in range(16):
        t = float(S.rng.uniform(-T0, T0))
        dl = T0 * 2.0**-10
        Y = S.query(np.array([p + (t - dl) * d, p + t * d, p + (t + dl) * d]))
        res.append(float(np.max(np.abs((Y[0] + Y[2]) / 2 - Y[1]))))
        mags.append(float(np.max(np.abs(Y))))
        slopes.append(float(np.max(np.abs(Y[2] - Y[0]))) / (2 * dl))
        tts.append(abs(t))
    # the typical output size; where the oracle is zero at most of these places (a network inactive there, the
    # zero function) its largest value, and never so small that the noise level underflows
    S.y0 = max(float(np.median(mags)) or float(np.max(mags)), _Y0_FLOOR)
    # the rounding of the oracle's inner products grows with Σ_j |G_j x_j| ≈ √m |G·d| |x| for a random unit d
    S.g0 = float(np.median(slopes)) * math.sqrt(S.m)
    _Y0_HINT[:] = [S.y0, S.scale, S.g0]
    rel = sorted(r / (S.y0 + mg + S.g0 * (0.5 * S.scale + t)) for r, mg, t in zip(res, mags, tts, strict=True))
    # the third largest of sixteen, doubled (a triple that straddles a kink is an outlier; rounding noise is
    # not Gaussian, and an underestimate would make the search see kinks everywhere)
    S.eps = max(S.floor, rel[-3] * 2)
    # an oracle as noisy as float32 may round its inputs as coarsely: the shortest steps must see that
    S.u_in = max(S.u_in, S.eps / 2)


def _line_hypers(S: _Session, L: _LineResult, regs: dict[int, _Region], idx: Sequence[int]) -> list[_Hyper]:
    out = []
    for u in idx:
        Rm, Rp = regs[u], regs[u + 1]
        J = Rp.jacobian() - Rm.jacobian()
        t = L.kinks[u]
        xk: Any = tuple(pi + t * di for pi, di in zip(L.p, L.d, strict=True)) if S.exact else L.p + t * L.d
        hy = _hyper_from_jump(S, J, xk, L.d)
        if not S.exact:
            _float_errors(S, hy, Rm, Rp, L, u, xk)
        out.append(hy)
    return out


def _float_errors(S: _Session, hy: _Hyper, Rm: _Region, Rp: _Region, L: _LineResult, u: int, xk: np.ndarray) -> None:
    """Estimated relative errors of a float hyperplane and kink from the noise and the steps."""
    dG = np.zeros(S.m)
    for R in (Rm, Rp):
        dG += R.step_errors(S)
    dJ = float(np.sqrt(S.k) * np.linalg.norm(dG))
    nv = float(np.linalg.norm(hy.v))
    if nv == 0:
        hy.err_w = hy.err_v = math.inf
        return
    da = dJ / nv
    Pa, Pb = L.pieces[u], L.pieces[u + 1]
    ds = float(np.linalg.norm(np.asarray(Pa.s - Pb.s, dtype=np.float64)))
    tk = float(L.kinks[u])
    se = math.hypot(_pred_error(S, Pa, tk), _pred_error(S, Pb, tk))
    dt = 3.0 * se / max(ds, 1e-300)
    db = da * float(np.linalg.norm(xk)) + abs(float(hy.a @ L.d)) * dt
    hy.da, hy.db = da, db
    _set_errors(hy, dJ / nv)


def _set_errors(hy: _Hyper, dv: float) -> None:
    """err_w and err_v from the raw errors of a, b and the relative error dv of the kink vector."""
    nw = math.hypot(1.0, float(hy.b))
    hy.err_w = _ERR_SAFETY * math.hypot(hy.da, hy.db) / nw
    hy.err_v = _ERR_SAFETY * (dv + hy.da)


def _pred_error(S: _Session, P: _Piece, t: float) -> float:
    """Float mode: the standard error of a weighted least-squares piece's value at t (sample noise ∝ y0 + |y|)."""
    ts = np.array(P.ts, dtype=np.float64)
    Y = np.array(P.ys, dtype=np.float64)
    sig = S.eps * (S.y0 + np.max(np.abs(Y), axis=1) + S.g0 * (0.5 * S.scale + np.abs(ts)))
    w = 1.0 / sig**2
    if len(ts) < 2:
        return math.inf
    tm = float((w * ts).sum() / w.sum())
    sxx = float((w * (ts - tm) ** 2).sum())
    if sxx == 0:
        return math.inf
    return math.sqrt(1.0 / float(w.sum()) + (t - tm) ** 2 / sxx)


def _merge_key(S: _Session, h: _Hyper) -> Any:
    if S.exact:
        return tuple(h.a.tolist()) + (h.b,)
    return None


def identify(
    oracle: Callable[..., Any],
    m: int,
    k: int,
    *,
    exact: bool = False,
    budget: float = 600.0,
    max_queries: int | None = None,
    rng: RNGLike = 0,
    progress: bool | None = None,
    scale: float = 1.0,
    check_lines: int = 1,
    heldout: int = 32,
    min_bits: float = 4.0,
    fiber_budget: float = 2.0,
    reach: int | None = None,
    retries: int = 2,
) -> Identification:
    """Recover the function of a one-hidden-layer ReLU network from queries only: its normal form, a network of
    minimal width realizing it, and the fibre of what queries cannot see (see docs/math/identification.md).

    ``oracle``: float mode, called with a float64 array of shape (B, m), returns (B, k) (or (B,) for k = 1);
    exact mode (``exact=True``), called with a list of points (tuples of ``Fraction``), returns one sequence of
    k exact rationals per point.  ``budget``: seconds; ``max_queries``: a cap on oracle evaluations (both raise
    :class:`~relusym.errors.BudgetExceededError`); ``rng``: the random lines (see :mod:`relusym._base.rng`);
    ``scale``: the size of the input region searched first (the windows then grow geometrically);
    ``check_lines``: further random lines on which the recovered function must reproduce the oracle exactly
    (exact mode) or within noise (float mode); ``heldout``: further random points checked; ``min_bits``: float
    mode refuses (:class:`~relusym.errors.IdentificationError`) a result whose estimated precision is below
    this many bits; ``reach``: the windows grow geometrically until they extend 2^reach times past the
    farthest kink found (default 64 in exact mode, 8 in float mode); ``retries``: fresh starts on new random
    lines after an :class:`~relusym.errors.IdentificationError` (an unlucky line can hold two kinks closer than
    the noise separates; an oracle that is not a ReLU network fails every time).
    """
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise InvalidNetworkError(f"m must be a positive integer (the number of inputs), got {m!r}")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidNetworkError(f"k must be a positive integer (the number of outputs), got {k!r}")
    if not callable(oracle):
        raise InvalidNetworkError(f"oracle must be callable, got {type(oracle).__name__}")
    if not (scale > 0 and math.isfinite(scale)):
        raise InvalidNetworkError(f"scale must be a positive finite number, got {scale!r}")
    t_start = time.monotonic()
    gen = as_generator(rng)
    with _progress_bar(None, desc="identify", unit="query", enabled=progress) as bar:
        S = _Session(oracle, m, k, exact, max_queries, t_start + budget, gen, bar, scale)
        if reach is not None:
            if not isinstance(reach, int) or reach < 2:
                raise InvalidNetworkError(f"reach must be an integer ≥ 2 (bits of window growth), got {reach!r}")
            S.reach = reach
        failures: list[str] = []
        for _attempt in range(1 + retries):
            S.overrides = {}
            S.relocated = set()
            S.kink_points = []
            try:
                res = _identify(S, t_start, check_lines, heldout, min_bits, fiber_budget)
            except IdentificationError as exc:
                # a failure can come from one unlucky line (two kinks closer than the noise separates); a
                # fresh start on new random lines settles that, while an oracle that is not a ReLU network
                # fails every time
                failures.append(str(exc))
                continue
            if failures:
                notes = tuple(f"attempt {i + 1} failed: {msg}" for i, msg in enumerate(failures))
                res = dataclasses.replace(res, notes=res.notes + notes, queries=S.queries, calls=S.calls)
            return res
        raise IdentificationError(
            failures[-1] + (f" ({len(failures)} attempts on fresh random lines)" if len(failures) > 1 else "")
        )


def _identify(
    S: _Session, t_start: float, check_lines: int, heldout: int, min_bits: float, fiber_budget: float
) -> Identification:
    m, k = S.m, S.k
    T0: Any = Fraction(S.scale).limit_denominator(2**20) if S.exact else float(S.scale)
    notes: list[str] = []
    p, d = _random_line(S)
    if not S.exact:
        _estimate_noise(S, p, d, float(T0))
    L1 = _LineSearch(S, p, d).run(T0)
    window = max(abs(float(L1.lo)), abs(float(L1.hi)))
    regs = _regions(S, L1, T0)
    N1 = len(L1.kinks)
    H = _line_hypers(S, L1, regs, range(N1))
    origin: list[tuple[int, int]] = [(0, u) for u in range(N1)]  # (line, kink) each hyperplane came from
    lines = [L1]
    line_regs = [regs]
    # a step that crossed a hyperplane corrupts the Jacobian of its region: redo such steps shorter
    H = _repair(S, lines, line_regs, origin, H)
    H = _verify_regions(S, lines, line_regs, origin, H)
    based = False
    if not S.exact and S.enlarge:
        # second pass: the hyperplanes are known, so every Jacobian can be measured again with long steps,
        # along the dual basis of the recovered normals (after the check lines, which may find hyperplanes
        # the long steps would cross), or, when that basis does not exist, with the longest coordinate steps
        # the region allows (now)
        H = _refine_poor(S, H, float(T0), origin)
        if _step_basis(H) is not None:
            based = True
        elif _enlarge_steps(S, H, list(regs.values()), 4.0 * float(T0)):
            H = _rebuild(S, lines, line_regs, origin)
            H = _verify_regions(S, lines, line_regs, origin, H)
    if not S.exact and S.refine and H and not based:
        H, _ = _refine_worst(S, H, float(T0), origin)
    M, e = _affine(S, H, regs[0])
    # consistency on further lines
    checked = 0
    max_rel = 0.0
    for _attempt in range(check_lines + 6):
        if checked >= check_lines:
            break
        p2, d2 = _random_line(S)
        L2 = _LineSearch(S, p2, d2).run(T0)
        window = max(window, abs(float(L2.lo)), abs(float(L2.hi)))
        new_idx, ok, rel, stale = _compare_line(S, H, M, e, L2)
        max_rel = max(max_rel, rel)
        if not new_idx and ok:
            checked += 1
            continue
        if not ok and not new_idx:
            raise IdentificationError(
                "the recovered network disagrees with the oracle on a check line: the oracle is not a "
                "one-hidden-layer ReLU network" + ("" if S.exact else " within its measured noise")
            )
        # kinks seen only on this line: recover them from Jacobians around them
        need = sorted({i for u in new_idx for i in (u, u + 1)})
        rg2 = _regions(S, L2, T0, need)
        lines.append(L2)
        line_regs.append(rg2)
        li = len(lines) - 1
        # an imprecise copy of a hyperplane found again here (its predicted crossing missed the kink) is replaced
        origin = [o for q, o in enumerate(origin) if q not in stale]
        origin += [(li, u) for u in new_idx]
        H = _rebuild(S, lines, line_regs, origin)
        H = _repair(S, lines, line_regs, origin, H)
        H = _verify_regions(S, lines, line_regs, origin, H)
        if not S.exact and S.refine and H and not based:
            H, _ = _refine_worst(S, H, float(T0), origin)
        if not S.exact:
            keep = _distinct(H)
            if len(keep) < len(H):
                origin = [origin[q] for q in keep]
                H = [H[q] for q in keep]
        M, e = _affine(S, H, regs[0])
        notes.append(f"{len(new_idx)} kink class(es) were found only on a check line (outside the first window)")
    else:
        raise IdentificationError("no check line could be explained by the recovered network")
    if based:
        H = _refine_poor(S, H, float(T0), origin)
        if _basis_regions(S, H, line_regs):
            H = _rebuild(S, lines, line_regs, origin)
            H = _verify_regions(S, lines, line_regs, origin, H)
            if S.refine:
                _refine_basis(S, H, origin, max(1, len(H) // 8))
                _relocate(S, H, origin)
        M, e = _affine(S, H, regs[0])
    # held-out points
    X = _heldout_points(S, heldout, float(window))
    Y = S.query(X)
    Yh = _model_values(S, H, M, e, X)
    if S.exact:
        if not np.all(Y == Yh):
            raise IdentificationError("the recovered network disagrees with the oracle at a held-out point")
        heldout_err = 0.0
    else:
        diff = np.max(np.abs(Y - Yh), axis=1)
        bound = np.array([S.tol(y) for y in Y])
        heldout_err = float(np.max(diff / (S.y0 + np.max(np.abs(Y), axis=1))))
        max_rel = max(max_rel, heldout_err)
    precision = None
    if not S.exact:
        worst = max([max(h.err_w, h.err_v) for h in H], default=S.eps)
        # never state more than the check lines showed: each kink found there lies on a true hyperplane, which
        # the nearest recovered one misses by at least its error there (twice the largest such miss)
        if S.kink_points and H:
            Xk = np.array(S.kink_points)
            Ah = np.array([np.asarray(h.a, dtype=np.float64) for h in H])
            bh = np.array([float(h.b) for h in H])
            nrm = np.hypot(np.linalg.norm(Ah, axis=1), bh)
            miss = np.abs(Xk @ Ah.T + bh[None, :]) / nrm[None, :]
            worst = max(worst, 2.0 * float(np.max(np.min(miss, axis=1))))
        if not H:
            # no kink class: what is recovered is the affine part, as precisely as its Jacobian was measured
            dM = math.sqrt(k) * float(np.linalg.norm(regs[0].step_errors(S)))
            nM = float(np.linalg.norm(np.asarray(M, dtype=np.float64)))
            # relative to ‖M‖, or to the output scale y0/scale when M is within its error of 0 (a constant)
            ref = nM if nM > 4.0 * _ERR_SAFETY * dM else max(nM, S.y0 / S.scale)
            worst = max(worst, _ERR_SAFETY * dM / ref)
        worst = max(worst, S.eps)
        precision = -math.log2(worst)
        if not bool(np.all(diff <= np.maximum(bound, 4.0 * _heldout_bound(S, H, X, Y)))):
            raise IdentificationError(
                f"held-out queries disagree with the recovered network by up to {heldout_err:.3g} (relative), "
                "more than its stated precision allows: the oracle is not a one-hidden-layer ReLU network within "
                "its measured noise"
            )
        if precision < min_bits:
            raise IdentificationError(
                f"the oracle's noise (relative {S.eps:.2g}) leaves only {precision:.1f} bits of precision in the "
                f"recovered hyperplanes and kinks, below min_bits = {min_bits}"
            )
    verify: Callable[[Network], bool] = lambda net: True  # noqa: E731 - exact mode: the normal form is exact
    if not S.exact:
        allowed = np.maximum(bound, 4.0 * _heldout_bound(S, H, X, Y))

        def verify(net: Network) -> bool:
            """A realization chosen within the precision must still reproduce the held-out queries."""
            return bool(np.all(np.max(np.abs(Y - net.evaluate(X)), axis=1) <= allowed))

    net, nf, width_note, width_minimal = _build_network(S, H, M, e, verify)
    if width_note:
        notes.append(width_note)
    if nf.N == 0:
        notes.append(
            "no kink was found: the oracle is affine on every searched window, and so is the recovered function"
        )
    fb = None
    try:
        from relusym._fibre.fiber import fiber

        fb = fiber(net, budget=fiber_budget)
    except BudgetExceededError as exc:  # pragma: no cover - depends on the budget
        notes.append(f"fibre not computed: {exc}")
    limits = _limits(S, window, check_lines)
    info = net.n * (m + k + 1) + k
    return Identification(
        network=net,
        normal_form=nf,
        queries=S.queries,
        calls=S.calls,
        exact=S.exact,
        precision_bits=precision,
        noise=None if S.exact else S.eps,
        heldout_error=None if S.exact else max_rel,
        window=window,
        lines=len(lines) + checked,
        kinks=nf.N,
        fiber=fb,
        indistinguishable=_describe_fiber(fb, net),
        limits=limits,
        information_limit=info,
        elapsed=time.monotonic() - t_start,
        notes=tuple(notes),
        width_minimal=width_minimal,
    )


def _repair(
    S: _Session,
    lines: list[_LineResult],
    line_regs: list[dict[int, _Region]],
    origin: list[tuple[int, int]],
    H: list[_Hyper],
    rounds: int = 3,
) -> list[_Hyper]:
    """Redo the steps that cross a recovered hyperplane and rebuild, for a few rounds (a hyperplane recovered
    from a corrupted Jacobian is itself wrong, so this need not converge; the random-direction check of
    :func:`_verify_regions` is what guarantees clean Jacobians)."""
    for _ in range(rounds):
        changed = False
        for rg in line_regs:
            for R in rg.values():
                fix = _unsafe_steps(S, H, R)
                if fix:
                    _redo_steps(S, R, fix)
                    changed = True
        if not changed:
            return H
        H = _rebuild(S, lines, line_regs, origin)
    return H


def _verify_regions(
    S: _Session,
    lines: list[_LineResult],
    line_regs: list[dict[int, _Region]],
    origin: list[tuple[int, int]],
    H: list[_Hyper],
) -> list[_Hyper]:
    """The random-direction check of every region (once), then rebuild and repair again if any was redone."""
    regs = [R for rg in line_regs for R in rg.values() if not R.verified]
    before = [list(R.h) for R in regs]
    _check_regions(S, regs)
    for R in regs:
        R.verified = True
    if any(list(R.h) != h for R, h in zip(regs, before, strict=True)):
        H = _rebuild(S, lines, line_regs, origin)
    H = _repair(S, lines, line_regs, origin, H)
    for R in regs:
        if _unsafe_steps(S, H, R):
            raise IdentificationError(
                "the Jacobian steps could not be made safe: the recovered hyperplanes keep moving"
            )
    return H


def _refine(S: _Session, H: list[_Hyper], u: int, cap: float, tries: int = 24) -> _Hyper | None:
    """Float mode: measure hyperplane u again away from the line, at a point of it where the other recovered
    hyperplanes leave long coordinate steps: two Jacobians at x± = x_c ± s n (2(m + 1) queries), their jump
    gives (a, v), and the two affine maps meet on the segment at the point that gives b."""
    h = H[u]
    a = np.asarray(h.a, dtype=np.float64)
    n = a / np.linalg.norm(a)
    others = [H[i] for i in range(len(H)) if i != u]
    x0 = -h.b * a / float(a @ a)  # the point of the hyperplane nearest the origin
    best = None
    for q in range(tries):
        g = S.rng.standard_normal(S.m)
        g -= (g @ n) * n
        r = S.scale * (0.25 + 1.75 * S.rng.random()) / max(float(np.linalg.norm(g)), 1e-300)
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
                plus, minus = _safe_steps(others + [h], x)
                steps.append(np.minimum(np.maximum(plus, minus), cap))
            else:
                steps.append(np.full(S.m, cap))
        cost = float(np.sqrt(np.sum((1.0 / steps[0] + 1.0 / steps[1]) ** 2)))
        if best is None or cost < best[0]:
            best = (cost, xc, s, steps)
    assert best is not None
    _, xc, s, steps = best
    regs = []
    for sign, st in zip((1.0, -1.0), steps, strict=True):
        x = xc + sign * s * n
        plus, minus = _safe_steps(others + [h], x) if others else (np.full(S.m, cap), np.full(S.m, cap))
        hs = np.where(plus >= minus, 1.0, -1.0) * 0.45 * st
        E = np.tile(x, (S.m + 1, 1))
        E[np.arange(1, S.m + 1), np.arange(S.m)] += hs
        Y = S.query(E)
        taken = [float(E[1 + j, j] - x[j]) for j in range(S.m)]
        regs.append(_Region(x, Y[0], taken, Y[1:].copy()))
    _check_regions(S, regs)
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
    new = _Hyper(a_new, -float(a_new @ xk), v_new)
    # errors: the Jacobian errors from the noise and steps, and the kink point from the two values
    dG = np.zeros(S.m)
    for R in regs:
        dG += 2.0 * S.noise(R.F, float(np.linalg.norm(R.x))) / np.abs(np.asarray(R.h))
    dJ = float(np.sqrt(S.k) * np.linalg.norm(dG))
    nv = float(np.linalg.norm(v_new))
    da = dJ / max(nv, 1e-300)
    dtau = 4.0 * S.noise(Rp.F) / max(float(np.linalg.norm(Jn)), 1e-300) + da * s
    db = da * float(np.linalg.norm(xk)) + dtau
    new.da, new.db = da, db
    _set_errors(new, dJ / max(nv, 1e-300))
    return new


def _refine_worst(
    S: _Session, H: list[_Hyper], T0: float, origin: list[tuple[int, int]]
) -> tuple[list[_Hyper], dict[int, _Hyper]]:
    """Re-measure (see :func:`_refine`) the hyperplanes whose estimated error is worst: those worse than
    2^-min(refine_bits, ...) or than 8× the median, at most a quarter of them."""
    err = np.array([max(h.err_w, h.err_v) for h in H])
    med = float(np.median(err))
    order = np.argsort(-err)
    limit = max(1, len(H) // 4)
    out = list(H)
    done: dict[int, _Hyper] = {}
    for u in order[:limit].tolist():
        if err[u] <= max(8.0 * med, 2.0**-S.refine_bits):
            break
        new = _refine(S, out, u, 4.0 * T0)
        if new is not None and max(new.err_w, new.err_v) < err[u]:
            out[u] = new
            done[u] = new
            S.overrides[origin[u]] = new
    return out, done


def _refine_basis(S: _Session, H: list[_Hyper], origin: list[tuple[int, int]], limit: int) -> int:
    """Float mode, with the basis of long steps: measure the worst hyperplanes (estimated error above twice
    the median, at most ``limit`` of them, worst first) a second time, at the point of the hyperplane nearest
    the origin, where the oracle rounds least: two Jacobians at x± = x₀ ± s n along the basis (2(m + 2)
    queries), whose jump gives (a, v) again.  The two measurements are averaged with weights 1/error².
    Returns the number re-measured."""
    B = _step_basis(H)
    if B is None or limit <= 0:
        return 0
    err = np.array([max(h.err_w, h.err_v) for h in H])
    med = float(np.median(err))
    todo = [u for u in np.argsort(-err).tolist() if err[u] > 2.0 * med and H[u].err_w <= _POOR][:limit]
    if not todo:
        return 0
    A = np.array([h.a for h in H], dtype=np.float64)
    bv = np.array([float(h.b) for h in H])
    base: list[tuple[np.ndarray, np.ndarray | None]] = []
    for u in todo:
        n = A[u] / np.linalg.norm(A[u])
        x0 = -bv[u] * n / float(np.linalg.norm(A[u]))
        z = A @ x0 + bv
        an = A @ n
        z[u], an[u] = np.inf, 1.0
        s_max = float(np.min(np.abs(z) / np.maximum(np.abs(an), 1e-300)))
        s = min(0.5 * s_max, 2.0**-4 * S.scale)
        base += [(x0 + s * n, None), (x0 - s * n, None)]
    regs = _measure_basis(S, B, base, _BASIS_STEP)
    count = 0
    for q, u in enumerate(todo):
        Rp, Rm = regs[2 * q], regs[2 * q + 1]
        if Rp is None or Rm is None:
            continue
        old = H[u]
        J = np.asarray(Rp.jacobian() - Rm.jacobian(), dtype=np.float64)
        _U, _sv, Vt = np.linalg.svd(J, full_matrices=False)
        a2 = Vt[0] if float(Vt[0] @ old.a) > 0 else -Vt[0]
        v2 = J @ a2
        nv = float(np.linalg.norm(v2))
        if nv == 0:
            continue
        dJ = float(np.sqrt(S.k) * np.linalg.norm(Rp.step_errors(S) + Rm.step_errors(S)))
        da2 = dJ / nv
        da1 = max(old.da, 1e-300)
        dv1 = old.err_v / _ERR_SAFETY - old.da
        w1, w2 = 1.0 / da1**2, 1.0 / da2**2
        a = (w1 * np.asarray(old.a, dtype=np.float64) + w2 * a2) / (w1 + w2)
        a /= np.linalg.norm(a)
        wv1, wv2 = 1.0 / max(dv1, 1e-300) ** 2, 1.0 / da2**2
        v = (wv1 * np.asarray(old.v, dtype=np.float64) + wv2 * v2) / (wv1 + wv2)
        # b: the old hyperplane's point nearest the origin stays on the new one
        x0 = -float(old.b) * np.asarray(old.a, dtype=np.float64)
        new = _Hyper(a, -float(a @ x0), v, rank_gap=old.rank_gap)
        new.da = 1.0 / math.sqrt(w1 + w2)
        new.db = old.db + new.da * float(np.linalg.norm(x0))  # b = −a·x₀ inherits the error of a
        _set_errors(new, 1.0 / math.sqrt(wv1 + wv2))
        H[u] = new
        S.overrides[origin[u]] = new
        count += 1
    return count


def _relocate(S: _Session, H: list[_Hyper], origin: list[tuple[int, int]]) -> int:
    """Float mode: the offset b of every hyperplane (not yet relocated) again, from a short line along its
    normal through its point nearest the origin: three values on each side of the crossing (no other
    recovered hyperplane crosses that segment) give two linear pieces, which meet at the crossing t*, and one
    query at t* confirms it.  On the line through the far point where a search line crossed it, the error of
    the normal times that distance would enter b; here the point is nearest the origin and the slope jump is
    the largest any line sees (‖κ‖).  7 queries each.  Returns the number relocated."""
    todo = [u for u in range(len(H)) if origin[u] not in S.relocated]
    if not todo:
        return 0
    A = np.array([h.a for h in H], dtype=np.float64)
    bv = np.array([float(h.b) for h in H])
    frac = np.array([-1.0, -2.0 / 3, -1.0 / 3, 1.0 / 3, 2.0 / 3, 1.0])
    plan = []
    for u in todo:
        na = float(np.linalg.norm(A[u]))
        n = A[u] / na
        x0 = -bv[u] * n / na
        z = A @ x0 + bv
        an = A @ n
        z[u], an[u] = np.inf, 1.0
        delta = min(S.scale, 0.45 * float(np.min(np.abs(z) / np.maximum(np.abs(an), 1e-300))))
        if delta > 1e-6 * S.scale:
            plan.append((u, x0, n, na, delta))
    if not plan:
        return 0
    Y = S.query(np.concatenate([x0[None, :] + (delta * frac)[:, None] * n[None, :] for _u, x0, n, _na, delta in plan]))
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
            ok = ok and res <= S.tol(y3[1], float(np.linalg.norm(x0)) + delta)
            sides.append((c, sl_))
        (c1, s1), (c2, s2) = sides
        ds = s2 - s1
        den = float(ds @ ds)
        tstar = float((c1 - c2) @ ds) / den if den > 0 else math.inf
        if ok and abs(tstar) < delta / 3:
            fits.append((u, x0, n, na, delta, c1, s1, c2, s2, tstar))
    if not fits:
        return 0
    Yc = S.query(np.array([x0 + t * n for _u, x0, n, _na, _d, _c1, _s1, _c2, _s2, t in fits]))
    count = 0
    for (u, x0, _n, na, delta, c1, s1, c2, s2, tstar), y in zip(fits, Yc, strict=True):
        S.relocated.add(origin[u])
        xn = float(np.linalg.norm(x0))
        tol = S.tol(y, xn + delta)
        if max(float(np.max(np.abs(y - (c1 + s1 * tstar)))), float(np.max(np.abs(y - (c2 + s2 * tstar))))) > tol:
            continue
        old = H[u]
        # the fitted value at t* errs by about 1.5 noise levels on each side (three points, extrapolated)
        dt = 3.0 * 1.5 * S.noise(y, xn + delta) / math.sqrt(float((s2 - s1) @ (s2 - s1)))
        new = dataclasses.replace(old, b=float(old.b) - tstar * na)
        new.db = (old.da * xn + dt) * na
        _set_errors(new, old.err_v / _ERR_SAFETY - old.da)
        H[u] = new
        S.overrides[origin[u]] = new
        count += 1
    return count


def _refine_poor(S: _Session, H: list[_Hyper], T0: float, origin: list[tuple[int, int]]) -> list[_Hyper]:
    """Float mode: re-measure (see :func:`_refine`) the hyperplanes too imprecise to take part in the basis of
    long steps (estimated error above 2^-16: a small kink between two close ones on its line), at most a
    quarter of them."""
    out = list(H)
    poor = sorted((u for u in range(len(H)) if H[u].err_w > _POOR), key=lambda u: -H[u].err_w)
    for u in poor[: max(1, len(H) // 4)]:
        new = _refine(S, out, u, 4.0 * T0)
        if new is not None and max(new.err_w, new.err_v) < max(out[u].err_w, out[u].err_v):
            out[u] = new
            S.overrides[origin[u]] = new
    return out


def _distinct(H: list[_Hyper]) -> list[int]:
    """Float mode: the hyperplanes to keep when one kink class was recovered twice (on two lines, the first
    copy too imprecise for its predicted crossing to explain the kink on the second): two recovered neurons
    whose unit hyperplanes (a, b)/‖(a, b)‖ and kinks v·‖(a, b)‖ agree, up to sign, within twice the sum of
    their estimated errors are one class; the more precise copy stays."""
    if len(H) < 2:
        return list(range(len(H)))
    W = np.array([np.concatenate([np.asarray(h.a, dtype=np.float64), [float(h.b)]]) for h in H])
    nw = np.linalg.norm(W, axis=1)
    W /= nw[:, None]
    K = np.array([np.asarray(h.v, dtype=np.float64) for h in H]) * nw[:, None]  # the kinks v·‖(a, b)‖
    err = np.array([max(h.err_w, h.err_v) for h in H])
    drop: set[int] = set()
    for i in range(len(H)):
        for j in range(i + 1, len(H)):
            if i in drop or j in drop:
                continue
            for sg in (1.0, -1.0):
                dist = float(np.linalg.norm(W[i] - sg * W[j]))
                kv = float(np.linalg.norm(K[i] - sg * K[j])) / max(float(np.linalg.norm(K[i])), 1e-300)
                if dist <= 2.0 * (H[i].err_w + H[j].err_w) and kv <= 2.0 * (H[i].err_v + H[j].err_v):
                    drop.add(j if err[j] >= err[i] else i)
                    break
    return [q for q in range(len(H)) if q not in drop]


def _rebuild(
    S: _Session, lines: list[_LineResult], line_regs: list[dict[int, _Region]], origin: list[tuple[int, int]]
) -> list[_Hyper]:
    out = []
    for li, u in origin:
        if (li, u) in S.overrides:
            out.append(S.overrides[(li, u)])
        else:
            out += _line_hypers(S, lines[li], line_regs[li], [u])
    return out


def _compare_line(
    S: _Session, H: list[_Hyper], M: np.ndarray, e: np.ndarray, L: _LineResult
) -> tuple[list[int], bool, float, set[int]]:
    """Kinks of line L that no recovered hyperplane explains, whether everything else agrees, the largest
    relative disagreement of the sampled values, and (float mode) the recovered hyperplanes that are imprecise
    copies of unexplained kinks (predicted nearby, with a similar slope jump, but outside their tolerance)."""
    p, d = L.p, L.d
    pred: list[tuple[Any, ...]] = []
    pred_index: list[int] = []  # the hyperplane of each prediction
    for hi_, h in enumerate(H):
        if S.exact:
            ad = sum((h.a[j] * d[j] for j in range(S.m)), Fraction(0))
            if ad == 0:
                continue
            ap = sum((h.a[j] * p[j] for j in range(S.m)), Fraction(0))
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
    new: list[int] = []
    used = set()
    ok = True
    merged: list[tuple[int, int, float]] = []
    for u, t in enumerate(L.kinks):
        jump = L.pieces[u + 1].s - L.pieces[u].s
        hit = None
        best = math.inf
        tol_meas = 0.0
        if not S.exact:
            Pa, Pb = L.pieces[u], L.pieces[u + 1]
            span = max(min(float(Pa.hi - Pa.lo), float(Pb.hi - Pb.lo)), 1e-300)
            tol_meas = 2.0 * _TOL_FACTOR * S.noise(Pa.at(t), float(t)) / span  # slope error of the line pieces
        for q, (tq, jq, tol_t, tj) in enumerate(pred):
            if q in used:
                continue
            if S.exact:
                if tq == t:
                    hit = q
                    break
            else:
                # the nearest predicted crossing, in units of its tolerance, among those whose slope jump fits
                # (an imprecise hyperplane's wide tolerance must not take the kink of a precise one nearby)
                dist = abs(float(tq) - float(t))
                dj = float(np.linalg.norm(np.asarray(jq - jump, dtype=np.float64))) / (tj + tol_meas)
                score = max(dist / tol_t, dj) if dj <= 1.0 else 2.0 + dist / tol_t
                if dist <= tol_t and score < best:
                    hit, best = q, score
        if hit is None:
            new.append(u)
            continue
        used.add(hit)
        jq, tol_j = pred[hit][1], pred[hit][3]
        if not S.exact:
            # a true hyperplane passes through the kink found (up to its location error, far smaller)
            S.kink_points.append(np.asarray(p, dtype=np.float64) + float(t) * np.asarray(d, dtype=np.float64))
        if S.exact:
            if not all(x == y for x, y in zip(jq.tolist(), jump.tolist(), strict=True)):
                ok = False
        elif float(np.linalg.norm(np.asarray(jq - jump, dtype=np.float64))) > tol_j + tol_meas:
            merged.append((u, hit, tol_meas))
    if merged:
        # float mode: two hyperplanes that cross the line closer together than the oracle's precision resolves
        # make one kink there, with the sum of their slope jumps
        for u, hit, tol_meas in merged:
            t = float(L.kinks[u])
            jump = np.asarray(L.pieces[u + 1].s - L.pieces[u].s, dtype=np.float64)
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
    lo, hi = L.lo, L.hi
    stale: set[int] = set()
    if not S.exact:
        for u in new:
            t = float(L.kinks[u])
            jump = np.asarray(L.pieces[u + 1].s - L.pieces[u].s, dtype=np.float64)
            cands = [
                (abs(float(pq[0]) - t) / pq[2], q)
                for q, pq in enumerate(pred)
                if q not in used
                and q not in stale
                and lo < pq[0] < hi
                and float(np.linalg.norm(np.asarray(pq[1], dtype=np.float64) - jump))
                <= 0.5 * float(np.linalg.norm(jump))
            ]
            if cands:
                stale.add(min(cands)[1])
    for q, (tq, jq, _tt, tj) in enumerate(pred):
        if q in used or q in stale or not (lo < tq < hi):
            continue
        if S.exact:
            ok = False
            continue
        jn = float(np.linalg.norm(np.asarray(jq, dtype=np.float64)))
        if jn <= 2.0 * tj + 1e-6 * S.y0 / S.scale:
            continue  # a kink too small to see on this line
        ok = False
    # the sampled values
    ts = [t for t, _ in L.samples]
    Y = np.array([y for _, y in L.samples], dtype=object if S.exact else np.float64)
    X = (
        [tuple(pi + t * di for pi, di in zip(p, d, strict=True)) for t in ts]
        if S.exact
        else np.array([p + t * d for t in ts])
    )
    rel = 0.0
    if not new:
        Yh = _model_values(S, H, M, e, X)
        if S.exact:
            if not np.all(Y == Yh):
                ok = False
        else:
            diff = np.max(np.abs(Y - Yh), axis=1)
            mag = S.y0 + np.max(np.abs(Y), axis=1)
            rel = float(np.max(diff / mag))
            bound = np.maximum(np.array([S.tol(y) for y in Y]), 4.0 * _heldout_bound(S, H, X, Y))
            if not bool(np.all(diff <= bound)):
                ok = False
    return new, ok, rel, {pred_index[q] for q in stale}


def _heldout_bound(S: _Session, H: list[_Hyper], X: Any, Y: np.ndarray) -> np.ndarray:
    """Float mode: the disagreement the estimated parameter errors allow at the points X."""
    if not H:
        return np.zeros(len(X))
    Z = _pre(S, H, X)  # N × B
    xn = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)
    nv = np.array([float(np.linalg.norm(h.v)) for h in H])
    ew = np.array([h.err_w for h in H])
    ev = np.array([h.err_v for h in H])
    nw = np.array([math.hypot(1.0, float(h.b)) for h in H])
    term = nv[:, None] * (ew * nw)[:, None] * (1.0 + xn[None, :]) + (ev * nv)[:, None] * np.maximum(Z, 0.0)
    # the affine part inherits the errors of the region used for it: bounded by the same terms summed
    return np.asarray(2.0 * term.sum(axis=0) + np.array([S.tol(y) for y in Y]))


def _heldout_points(S: _Session, count: int, window: float) -> Any:
    r = max(S.scale, min(window, 4 * S.scale))
    if S.exact:
        q = 2**10
        R = Fraction(r).limit_denominator(2**16)
        return [tuple(Fraction(int(S.rng.integers(-q, q + 1)), q) * R for _ in range(S.m)) for _ in range(count)]
    return S.rng.uniform(-r, r, size=(count, S.m)) / math.sqrt(S.m) * 2


def _build_network(
    S: _Session, H: list[_Hyper], M: np.ndarray, e: np.ndarray, verify: Callable[[Network], bool]
) -> tuple[Network, NormalForm, str, bool | None]:
    """A network of minimal width for the recovered function, the note that says why when its width is not
    certified minimal, and whether it is (None: undecided)."""
    m, k = S.m, S.k
    if S.exact:
        kinks: dict[tuple[Fraction, ...], list[Fraction]] = {}
        for h in H:
            key = tuple(h.a.tolist()) + (h.b,)
            acc = kinks.setdefault(key, [Fraction(0)] * k)
            for r in range(k):
                acc[r] += h.v[r]
        d = {
            "m": m,
            "k": k,
            "kinks": [
                {"hyperplane": [fraction_str(x) for x in u], "kink": [fraction_str(x) for x in kap]}
                for u, kap in sorted(kinks.items())
                if any(kap)
            ],
            "M": [[fraction_str(x) for x in M[r]] for r in range(k)],
            "e": [fraction_str(x) for x in e],
        }
        base = realize(d)
        nf = normal_form(base)
        start = _absorb_exact(nf) or base
        try:
            from relusym._fibre.width import minimal_network

            mn = minimal_network(start, budget=10.0)
            note = "" if mn.canonical else f"minimal width, not certified canonical: {mn.note}"
            return mn.network, normal_form(mn.network), note, True
        except BudgetExceededError as exc:
            return start, nf, f"minimal width undecided: {exc}", None
    return _float_network(S, H, M, e, verify)


def _float_network(
    S: _Session, H: list[_Hyper], M: np.ndarray, e: np.ndarray, verify: Callable[[Network], bool]
) -> tuple[Network, NormalForm, str, bool | None]:
    """Float mode: a network of minimal width within the measured precision.  The recovered neurons are
    oriented to absorb the linear part M when some orientation does so within the precision (an exhaustive
    search, :mod:`relusym._identify.width`) and the result reproduces the held-out queries (``verify``);
    otherwise M is realized by cancelling pairs, one per singular value of M above the precision."""
    m, k = S.m, S.k
    N = len(H)
    V = np.array([h.v for h in H], dtype=np.float64).reshape(N, k).T.copy()
    A = np.array([h.a for h in H], dtype=np.float64).reshape(N, m).copy()
    b = np.array([h.b for h in H], dtype=np.float64)
    c = np.asarray(e, dtype=np.float64).copy()
    Mf = np.asarray(M, dtype=np.float64).copy()
    X = np.stack([np.outer(V[:, u], A[u]).ravel() for u in range(N)], axis=1) if N else np.zeros((k * m, 0))
    cols = np.linalg.norm(X, axis=0)
    errs = np.array([max(float(h.err_w), float(h.err_v)) for h in H])
    worst = max([*errs.tolist(), S.eps])
    # the error of the linear part: that of each recovered kink term (M is one region's Jacobian with the
    # active kink terms removed, and that Jacobian errs like the kinks' jumps), and of M itself
    tol = 16.0 * (float(cols @ errs) + worst * float(np.linalg.norm(Mf)) + S.eps * float(cols.sum()))
    # (no shortcut for ‖M‖ ≤ tol: the orientations are ranked by their residual, s = 0 among them, and a loose
    # precision must not let a worse one win)
    # the stated errors are conservative (by 2^6 or more): the search starts at the oracle's noise level and
    # loosens by 2^4 up to tol, so that the orientation the queries determine is found before looser levels
    # admit others (at a tight level the flip matrix has a high numerical rank and few free entries)
    tol0 = min(tol, 16.0 * S.eps * (float(cols.sum()) + float(np.linalg.norm(Mf))))
    level = tol0
    while True:
        search = absorbing_orientations(X, -Mf.ravel(), level, S.deadline)
        for s in search.solutions[:8]:
            flipped = s == 1
            A2, b2 = A.copy(), b.copy()
            A2[flipped], b2[flipped] = -A[flipped], -b[flipped]
            net = Network(V, A2, b2, c + V[:, flipped] @ b[flipped], m=m)
            if verify(net):
                return net, normal_form(net), "", True
        if level >= tol or not search.complete:
            break
        level = min(16.0 * level, tol)
    # cancelling pairs v σ(a·x) − v σ(−a·x) = v (a·x), one per singular value of M above the noise level
    # (through r pivot rows of M: M = C M_P with C = I on those rows, so a row of M that is a pivot is kept as
    # recovered, not rounded through a factorization)
    from scipy.linalg import qr

    sv = np.linalg.svd(Mf, compute_uv=False)
    r_num = int(np.sum(sv > tol0))
    piv = qr(Mf.T, mode="r", pivoting=True)[1] if k * m else np.zeros(0, dtype=np.int64)
    for rank in dict.fromkeys([r_num, int(np.sum(sv > 0))]):
        Pr = piv[:rank]
        C = np.linalg.lstsq(Mf[Pr].T, Mf.T, rcond=None)[0].T if rank else np.zeros((k, 0))
        C[Pr] = np.eye(rank)
        pV = [C[:, i] for i in range(rank)]
        pA = [Mf[Pr[i]] for i in range(rank)]
        V2 = np.concatenate([V, np.array(pV + [-x for x in pV]).reshape(2 * rank, k).T], axis=1)
        A2 = np.concatenate([A, np.array(pA + [-x for x in pA]).reshape(2 * rank, m)], axis=0)
        net = Network(V2, A2, np.concatenate([b, np.zeros(2 * rank)]), c, m=m)
        if verify(net):
            break
    if N == 0 and rank == r_num:
        # no kink class: every realization carries M by cancelling pairs, 2·rank(M) neurons (docs/math/width.md)
        return net, normal_form(net), "", True
    if search.complete:
        why = (
            f"no orientation of the {N} recovered neurons absorbs the linear part within the measured precision "
            f"(all 2^{N - search.rank} orientations beyond the numerical rank {search.rank} of the flip matrix "
            "were searched)"
        )
    else:
        why = f"the orientations that could absorb the linear part were not all searched: {search.reason}"
    note = (
        f"minimal width undecided: {why}; the linear part is realized by {rank} cancelling pair(s), width "
        f"{net.n}, and the minimal width within the measured precision lies between "
        f"{N + (1 if search.complete else 0)} and {net.n} (a hyperplane carried by neurons of both orientations, "
        "which could save neurons, was not searched)"
    )
    return net, normal_form(net), note, None


def _absorb_exact(nf: NormalForm) -> Network | None:
    """A width-N network for the exact normal form when a set S of classes with M + Σ_S κ α̂ᵀ = 0 is the unique
    solution of that linear system (then it is the only cost-0 configuration); None otherwise."""
    from relusym._exact import linalg as linalg

    K = nf.K
    m, k = nf.m, nf.k
    if not K:
        return None
    rows = [[kap[r] * u[j] for r in range(k) for j in range(m)] for u, kap in K]
    target = [-nf.M[r][j] for r in range(k) for j in range(m)]
    if linalg.rank(rows) < len(rows):
        return None
    cols = [[rows[i][q] for i in range(len(rows))] for q in range(k * m)]
    sol = linalg.solve(cols, target)
    if sol is None or any(x not in (0, 1) for x in sol):
        return None
    V_cols, A_rows, b = [], [], []
    c = list(nf.e)
    for (u, kap), s in zip(K, sol, strict=True):
        if s == 1:
            V_cols.append(list(kap))
            A_rows.append([-x for x in u[:m]])
            b.append(-u[m])
            for r in range(k):
                c[r] += kap[r] * u[m]
        else:
            V_cols.append(list(kap))
            A_rows.append(list(u[:m]))
            b.append(u[m])
    V = [[V_cols[i][r] for i in range(len(V_cols))] for r in range(k)]
    net = Network(V, A_rows, b, c, m=m)
    return net if normal_form(net) == nf else None


def _describe_fiber(fb: Any, net: Network) -> tuple[str, ...]:
    out = ["the order of the neurons and a positive scale of each (the H_n-orbit): (v, a, b) ↦ (v/d, d a, d b), d > 0"]
    if fb is None:
        out.append("the rest of the fibre was not computed within budget")
        return tuple(out)
    if fb.flips is not None and len(fb.flips) > 1:
        shown = ", ".join("{" + ", ".join(map(str, T)) + "}" for T in fb.flips[1:6])
        more = " …" if len(fb.flips) > 6 else ""
        cnt = fb.flip_count if fb.flips_complete else f"at least {fb.flip_count_lower_bound}"
        out.append(
            f"flips (σ(t) − σ(−t) = t): turning over the neurons of any of these sets, with the output bias "
            f"corrected, gives the same function: {shown}{more} ({cnt} set(s) including ∅)"
        )
    elif fb.flips is not None:
        out.append("no flip: the orientation of every neuron is determined by the function")
    if fb.width is not None and fb.width < fb.n:
        out.append(f"the network is wider than needed: {fb.n} neurons where {fb.width} suffice")
    out.append(f"fibre: {fb.generic_reason}; dimension {fb.dimension}, {fb.orbits} H_n-orbit(s)")
    out.append(
        "duplicated neurons (one hyperplane split among several neurons), cancelling pairs and their translations, "
        "null and constant neurons leave no trace in queries; the recovered network has none beyond what its "
        "normal form needs"
    )
    return tuple(out)


def _limits(S: _Session, window: float, check_lines: int) -> tuple[str, ...]:
    out = [
        f"each line was searched on a window grown geometrically until it reached 2^{S.reach} times the farthest "
        f"kink found (|t| ≤ {window:.3g}): a hyperplane that crosses every searched line farther out than that is "
        "not seen, and a compactly supported bump (several parallel kinks that cancel outside a narrow band) far "
        "from the origin is seen only if a probe lands in it",
        "between two neighbouring certified pieces one random query checks linearity: a bump of several kinks "
        "that returns exactly to the same line inside a gap is found only with the probability that a random "
        "query lands in it (a second line crosses it elsewhere)",
        f"the recovered function reproduced the oracle on {check_lines} further random line(s) and on held-out "
        "random points" + (" exactly" if S.exact else " within the stated precision"),
    ]
    if not S.exact:
        out.append(
            "float mode: kinks whose slope jump along a line is below the oracle's noise level cannot be seen; "
            "precision is estimated from the measured noise and the step sizes, not certified"
        )
    return tuple(out)
