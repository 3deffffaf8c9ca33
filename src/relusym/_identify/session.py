"""The oracle session of :func:`relusym.identify`: the query budget and counters, the exact/float mode, the
measured noise level and the tuning constants of the search, the random lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.deadline import Deadline
from relusym._exact.numbers import to_fraction
from relusym.errors import BudgetExceededError, IdentificationError, InvalidNetworkError

__all__ = [
    "BASIS_STEP",
    "ERR_SAFETY",
    "EXACT_NEAR",
    "EXACT_PROBE",
    "EXACT_STEP",
    "FLOAT_NEAR",
    "FLOAT_PROBE",
    "FLOAT_STEP",
    "GROW_EXACT",
    "GROW_FLOAT",
    "MAX_STEPS",
    "POOR",
    "QUANT",
    "Session",
    "TOL_FACTOR",
    "Y0_HINT",
    "estimate_noise",
    "random_line",
]

MAX_STEPS = 200  # window growth steps per side, at most


GROW_EXACT = 8  # each growth step multiplies the window by 2^8 (exact mode) or 2^4 (float mode)


GROW_FLOAT = 4


ERR_SAFETY = 4.0  # float mode: the error estimates model rounding as independent noise; real rounding is not


TOL_FACTOR = 16.0  # float mode: a value is "on a line" within this many noise levels


EXACT_PROBE = Fraction(1, 2**12)  # exact mode: probe half-width, relative to the gap explored


FLOAT_PROBE = 2.0**-3


QUANT = 16.0  # float mode: the shortest step along a line, in units of the oracle's input rounding


EXACT_NEAR = Fraction(1, 2**10)  # a confirmed kink is checked this close on each side (relative)


FLOAT_NEAR = 1.0 / 16


EXACT_STEP = Fraction(1, 2**16)  # exact mode: Jacobian step, relative to the half-width of the region


FLOAT_STEP = 1.0 / 32  # Jacobian step, relative to the half-width of the region on the line


POOR = 2.0**-16  # float mode: a recovered hyperplane with a larger estimated error is not used for steps


_Y0_FLOOR = 1e-100  # float mode: the least typical output size (noise levels stay normal floats, squared)


BASIS_STEP = 2.0  # float mode: second-pass steps along the dual basis, relative to max(scale, |x|)


# ----------------------------------------------------------------------------------------------------------
# the oracle and the session
class Session:
    """The oracle behind a counter and a budget, and the arithmetic of the mode (exact or float)."""

    def __init__(
        self,
        oracle: Callable[..., Any],
        m: int,
        k: int,
        exact: bool,
        max_queries: int | None,
        deadline: Deadline,
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
        if self.deadline.expired():
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
        return TOL_FACTOR * self.noise(y, t)

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
Y0_HINT = [1.0, 1.0, 0.0]  # float mode: y0, scale and g0 of the session, for the weights of piece fits


# ----------------------------------------------------------------------------------------------------------
# the algorithm
def random_line(session: Session) -> tuple[Any, Any]:
    p: Any
    d: Any
    if session.exact:
        q = 2**12
        sc = Fraction(session.scale).limit_denominator(2**20) / 2
        p = tuple(Fraction(int(session.rng.integers(-q, q + 1)), q) * sc for _ in range(session.m))
        d = tuple(Fraction(int(session.rng.integers(-q, q + 1)) or 1, q) for _ in range(session.m))
        return p, d
    p = session.rng.standard_normal(session.m) * (session.scale / 2 / math.sqrt(session.m))
    d = session.rng.standard_normal(session.m)
    d /= np.linalg.norm(d)
    return p, d


def estimate_noise(session: Session, p: Any, d: Any, T0: float) -> None:
    """Float mode: the oracle's relative noise from collinear triples on a short segment at several places."""
    res = []
    mags = []
    slopes = []
    tts = []
    for _ in range(16):
        t = float(session.rng.uniform(-T0, T0))
        dl = T0 * 2.0**-10
        Y = session.query(np.array([p + (t - dl) * d, p + t * d, p + (t + dl) * d]))
        res.append(float(np.max(np.abs((Y[0] + Y[2]) / 2 - Y[1]))))
        mags.append(float(np.max(np.abs(Y))))
        slopes.append(float(np.max(np.abs(Y[2] - Y[0]))) / (2 * dl))
        tts.append(abs(t))
    # the typical output size; where the oracle is zero at most of these places (a network inactive there, the
    # zero function) its largest value, and never so small that the noise level underflows
    session.y0 = max(float(np.median(mags)) or float(np.max(mags)), _Y0_FLOOR)
    # the rounding of the oracle's inner products grows with Σ_j |G_j x_j| ≈ √m |G·d| |x| for a random unit d
    session.g0 = float(np.median(slopes)) * math.sqrt(session.m)
    Y0_HINT[:] = [session.y0, session.scale, session.g0]
    rel = sorted(
        r / (session.y0 + mg + session.g0 * (0.5 * session.scale + t)) for r, mg, t in zip(res, mags, tts, strict=True)
    )
    # the third largest of sixteen, doubled (a triple that straddles a kink is an outlier; rounding noise is
    # not Gaussian, and an underestimate would make the search see kinks everywhere)
    session.eps = max(session.floor, rel[-3] * 2)
    # an oracle as noisy as float32 may round its inputs as coarsely: the shortest steps must see that
    session.u_in = max(session.u_in, session.eps / 2)
