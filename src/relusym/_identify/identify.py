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
in :class:`~relusym.errors.IdentificationError`; one that is smooth where its rounding lets that be seen (a float64
tanh, softplus or GELU network) at once, from the second differences on the first line, without retries
(:mod:`relusym._identify.smooth`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline, Stopwatch
from relusym._base.progress import progress_bar
from relusym._base.rng import RNGLike, as_generator
from relusym._core.network import Network
from relusym._identify.check import compare_line, heldout_bound, heldout_points
from relusym._identify.lines import LineResult, LineSearch
from relusym._identify.refine import (
    distinct_hypers,
    rebuild,
    refine_basis,
    refine_poor,
    refine_worst,
    relocate,
    repair,
    verify_regions,
)
from relusym._identify.regions import (
    Hyper,
    Region,
    affine,
    basis_regions,
    enlarge_steps,
    line_hypers,
    line_regions,
    model_values,
    step_basis,
)
from relusym._identify.result import Identification, build_network, describe_fiber, describe_limits
from relusym._identify.session import ERR_SAFETY, Session, estimate_noise, random_line
from relusym._identify.smooth import NotPiecewiseLinearError, refuse_smooth
from relusym.errors import BudgetExceededError, IdentificationError, InvalidNetworkError

__all__ = ["Identification", "identify"]


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
    clock = Stopwatch()
    deadline = Deadline(budget)
    gen = as_generator(rng)
    with progress_bar(None, desc="identify", unit="query", progress=progress) as bar:
        session = Session(oracle, m, k, exact, max_queries, deadline, gen, bar, scale)
        if reach is not None:
            if not isinstance(reach, int) or reach < 2:
                raise InvalidNetworkError(f"reach must be an integer ≥ 2 (bits of window growth), got {reach!r}")
            session.reach = reach
        failures: list[str] = []
        for _attempt in range(1 + retries):
            session.overrides = {}
            session.relocated = set()
            session.kink_points = []
            try:
                res = _identify(session, clock, check_lines, heldout, min_bits, fiber_budget)
            except NotPiecewiseLinearError:
                raise  # a smooth oracle is smooth on every line: no retry can help
            except IdentificationError as exc:
                if not exact and _attempt < retries:  # before a retry: is the oracle smooth (then none can help)?
                    p, d = random_line(session)
                    try:
                        refuse_smooth(session, p, d, float(scale))
                    except NotPiecewiseLinearError:
                        raise
                    except IdentificationError:
                        pass  # an oracle breaking its contract (a wrong shape) fails the retry with its own message
                # a failure can come from one unlucky line (two kinks closer than the noise separates); a
                # fresh start on new random lines settles that, while an oracle that is not a ReLU network
                # fails every time
                failures.append(str(exc))
                continue
            if failures:
                notes = tuple(f"attempt {i + 1} failed: {msg}" for i, msg in enumerate(failures))
                res = dataclasses.replace(res, notes=res.notes + notes, queries=session.queries, calls=session.calls)
            return res
        raise IdentificationError(
            failures[-1] + (f" ({len(failures)} attempts on fresh random lines)" if len(failures) > 1 else "")
        )


def _identify(
    session: Session, clock: Stopwatch, check_lines: int, heldout: int, min_bits: float, fiber_budget: float
) -> Identification:
    m, k = session.m, session.k
    rec = _Recovery.first_line(session)
    checked, max_rel = rec.check(check_lines)
    if rec.based:
        rec.basis_pass()
    # held-out points
    X = heldout_points(session, heldout, float(rec.window))
    Y = session.query(X)
    precision, max_rel, verify = _heldout(session, rec, X, Y, min_bits, max_rel)
    notes = rec.notes
    net, nf, width_note, width_minimal = build_network(session, rec.hypers, rec.M, rec.e, verify)
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
    limits = describe_limits(session, rec.window, check_lines)
    info = net.n * (m + k + 1) + k
    return Identification(
        network=net,
        normal_form=nf,
        queries=session.queries,
        calls=session.calls,
        exact=session.exact,
        precision_bits=precision,
        noise=None if session.exact else session.eps,
        heldout_error=None if session.exact else max_rel,
        window=rec.window,
        lines=len(rec.lines) + checked,
        kinks=nf.N,
        fiber=fb,
        indistinguishable=describe_fiber(fb, net),
        limits=limits,
        information_limit=info,
        elapsed=clock.elapsed(),
        notes=tuple(notes),
        width_minimal=width_minimal,
    )


@dataclasses.dataclass
class _Recovery:
    """The hyperplanes recovered so far, the lines and regions they came from, and the affine part."""

    session: Session
    T0: Any
    lines: list[LineResult]
    line_regs: list[dict[int, Region]]
    origin: list[tuple[int, int]]  # (line, kink) each hyperplane came from
    hypers: list[Hyper]
    window: float
    based: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)
    M: Any = None
    e: Any = None

    @classmethod
    def first_line(cls, session: Session) -> _Recovery:
        """The hyperplanes of the kinks on a first random line, repaired and verified (and, in float mode,
        refined)."""
        T0: Any = Fraction(session.scale).limit_denominator(2**20) if session.exact else float(session.scale)
        p, d = random_line(session)
        search = LineSearch(session, p, d)
        if not session.exact:
            estimate_noise(session, p, d, float(T0))
            # a smooth oracle shows itself by many kinks on the first line (a tanh network of 16 neurons: over
            # a thousand); only then is the smoothness test's cost (276 queries) spent
            search.watch = lambda: refuse_smooth(session, p, d, float(T0))
        L1 = search.run(T0)
        window = max(abs(float(L1.lo)), abs(float(L1.hi)))
        regs = line_regions(session, L1, T0)
        N1 = len(L1.kinks)
        hypers = line_hypers(session, L1, regs, range(N1))
        rec = cls(session, T0, [L1], [regs], [(0, u) for u in range(N1)], hypers, window)
        # a step that crossed a hyperplane corrupts the Jacobian of its region: redo such steps shorter
        rec.hypers = repair(session, rec.lines, rec.line_regs, rec.origin, rec.hypers)
        rec.hypers = verify_regions(session, rec.lines, rec.line_regs, rec.origin, rec.hypers)
        if not session.exact and session.enlarge:
            # second pass: the hyperplanes are known, so every Jacobian can be measured again with long steps,
            # along the dual basis of the recovered normals (after the check lines, which may find hyperplanes
            # the long steps would cross), or, when that basis does not exist, with the longest coordinate steps
            # the region allows (now)
            rec.hypers = refine_poor(session, rec.hypers, float(T0), rec.origin)
            if step_basis(rec.hypers) is not None:
                rec.based = True
            elif enlarge_steps(session, rec.hypers, list(regs.values()), 4.0 * float(T0)):
                rec.hypers = rebuild(session, rec.lines, rec.line_regs, rec.origin)
                rec.hypers = verify_regions(session, rec.lines, rec.line_regs, rec.origin, rec.hypers)
        rec.refine_worst()
        rec.M, rec.e = affine(session, rec.hypers, regs[0])
        return rec

    def refine_worst(self) -> None:
        session = self.session
        if not session.exact and session.refine and self.hypers and not self.based:
            self.hypers, _ = refine_worst(session, self.hypers, float(self.T0), self.origin)

    def check(self, check_lines: int) -> tuple[int, float]:
        """Consistency on further lines: ``check_lines`` lines that the recovered function explains, with the
        kinks found only there recovered on the way; the lines checked and the largest relative disagreement."""
        session = self.session
        checked = 0
        max_rel = 0.0
        for _attempt in range(check_lines + 6):
            if checked >= check_lines:
                break
            p2, d2 = random_line(session)
            L2 = LineSearch(session, p2, d2).run(self.T0)
            self.window = max(self.window, abs(float(L2.lo)), abs(float(L2.hi)))
            new_idx, ok, rel, stale = compare_line(session, self.hypers, self.M, self.e, L2)
            max_rel = max(max_rel, rel)
            if not new_idx and ok:
                checked += 1
                continue
            if not ok and not new_idx:
                raise IdentificationError(
                    "the recovered network disagrees with the oracle on a check line: the oracle is not a "
                    "one-hidden-layer ReLU network" + ("" if session.exact else " within its measured noise")
                )
            self.absorb(L2, new_idx, stale)
        else:
            raise IdentificationError("no check line could be explained by the recovered network")
        return checked, max_rel

    def absorb(self, L2: LineResult, new_idx: list[int], stale: set[int]) -> None:
        """Kinks seen only on a check line: recover them from Jacobians around them."""
        session = self.session
        need = sorted({i for u in new_idx for i in (u, u + 1)})
        rg2 = line_regions(session, L2, self.T0, need)
        self.lines.append(L2)
        self.line_regs.append(rg2)
        li = len(self.lines) - 1
        # an imprecise copy of a hyperplane found again here (its predicted crossing missed the kink) is replaced
        self.origin = [o for q, o in enumerate(self.origin) if q not in stale]
        self.origin += [(li, u) for u in new_idx]
        self.hypers = rebuild(session, self.lines, self.line_regs, self.origin)
        self.hypers = repair(session, self.lines, self.line_regs, self.origin, self.hypers)
        self.hypers = verify_regions(session, self.lines, self.line_regs, self.origin, self.hypers)
        self.refine_worst()
        if not session.exact:
            keep = distinct_hypers(self.hypers)
            if len(keep) < len(self.hypers):
                self.origin = [self.origin[q] for q in keep]
                self.hypers = [self.hypers[q] for q in keep]
        self.M, self.e = affine(session, self.hypers, self.line_regs[0][0])
        self.notes.append(f"{len(new_idx)} kink class(es) were found only on a check line (outside the first window)")

    def basis_pass(self) -> None:
        """Float mode: every Jacobian measured again with long steps along the dual basis of the normals."""
        session = self.session
        self.hypers = refine_poor(session, self.hypers, float(self.T0), self.origin)
        if basis_regions(session, self.hypers, self.line_regs):
            self.hypers = rebuild(session, self.lines, self.line_regs, self.origin)
            self.hypers = verify_regions(session, self.lines, self.line_regs, self.origin, self.hypers)
            if session.refine:
                refine_basis(session, self.hypers, self.origin, max(1, len(self.hypers) // 8))
                relocate(session, self.hypers, self.origin)
        self.M, self.e = affine(session, self.hypers, self.line_regs[0][0])


def _heldout(
    session: Session, rec: _Recovery, X: Any, Y: np.ndarray, min_bits: float, max_rel: float
) -> tuple[float | None, float, Callable[[Network], bool]]:
    """The check at the held-out points: the precision in bits (float mode), the largest relative disagreement
    seen, and the test a realization chosen within the precision must pass."""
    Yh = model_values(session, rec.hypers, rec.M, rec.e, X)
    if session.exact:
        if not np.all(Y == Yh):
            raise IdentificationError("the recovered network disagrees with the oracle at a held-out point")
        return None, max_rel, lambda net: True  # exact mode: the normal form is exact
    diff = np.max(np.abs(Y - Yh), axis=1)
    bound = np.array([session.tol(y) for y in Y])
    heldout_err = float(np.max(diff / (session.y0 + np.max(np.abs(Y), axis=1))))
    max_rel = max(max_rel, heldout_err)
    precision = -math.log2(_worst_error(session, rec))
    if not bool(np.all(diff <= np.maximum(bound, 4.0 * heldout_bound(session, rec.hypers, X, Y)))):
        raise IdentificationError(
            f"held-out queries disagree with the recovered network by up to {heldout_err:.3g} (relative), "
            "more than its stated precision allows: the oracle is not a one-hidden-layer ReLU network within "
            "its measured noise"
        )
    if precision < min_bits:
        raise IdentificationError(
            f"the oracle's noise (relative {session.eps:.2g}) leaves only {precision:.1f} bits of precision in the "
            f"recovered hyperplanes and kinks, below min_bits = {min_bits}"
        )
    allowed = np.maximum(bound, 4.0 * heldout_bound(session, rec.hypers, X, Y))

    def verify(net: Network) -> bool:
        """A realization chosen within the precision must still reproduce the held-out queries."""
        return bool(np.all(np.max(np.abs(Y - net.evaluate(X)), axis=1) <= allowed))

    return precision, max_rel, verify


def _worst_error(session: Session, rec: _Recovery) -> float:
    """Float mode: the largest relative error of the recovered hyperplanes and kinks (or of the affine part)."""
    hypers, k = rec.hypers, session.k
    worst = max([max(h.err_w, h.err_v) for h in hypers], default=session.eps)
    # never state more than the check lines showed: each kink found there lies on a true hyperplane, which
    # the nearest recovered one misses by at least its error there (twice the largest such miss)
    if session.kink_points and hypers:
        Xk = np.array(session.kink_points)
        Ah = np.array([np.asarray(h.a, dtype=np.float64) for h in hypers])
        bh = np.array([float(h.b) for h in hypers])
        nrm = np.hypot(np.linalg.norm(Ah, axis=1), bh)
        miss = np.abs(Xk @ Ah.T + bh[None, :]) / nrm[None, :]
        worst = max(worst, 2.0 * float(np.max(np.min(miss, axis=1))))
    if not hypers:
        # no kink class: what is recovered is the affine part, as precisely as its Jacobian was measured
        dM = math.sqrt(k) * float(np.linalg.norm(rec.line_regs[0][0].step_errors(session)))
        nM = float(np.linalg.norm(np.asarray(rec.M, dtype=np.float64)))
        # relative to ‖M‖, or to the output scale y0/scale when M is within its error of 0 (a constant)
        ref = nM if nM > 4.0 * ERR_SAFETY * dM else max(nM, session.y0 / session.scale)
        worst = max(worst, ERR_SAFETY * dM / ref)
    return max(worst, session.eps)
