"""Float mode: an oracle that is smooth where a ReLU network is piecewise linear, refused early.

Along a line x = p + t·d, the forward second difference D(h) = |f(t + 2h) − 2 f(t + h) + f(t)| of a ReLU network
is zero (up to rounding) unless a kink lies in (t, t + 2h); one kink at t + δ gives |Δs|·δ when δ ≤ h (constant as
h halves, until h < δ) and |Δs|·(2h − δ) when h < δ < 2h (zero after the next halving), so one kink never divides
D by about 4 at two halvings in a row, and a few kinks give sums of such terms.  A function with a second
derivative f'' ≠ 0 at t has D(h) ≈ |f''(t)|·h², divided by 4 at every halving.  :func:`smoothness` looks at
``_PLACES`` random places of a line over ``_SCALES`` halvings of h and calls a place *smooth* when D(h) divides by 3.3
to 4.8 at each of the ``_RUN`` halvings that end at the finest step where D is still well above the oracle's rounding
(its dtype's unit times the values' size), that step being at most T0·2^-10.  When most places are smooth the
oracle is refused at once, with the evidence, instead of after a search that cannot converge (a float64 tanh network
took about 30 s of CPU a try, three tries by default).  :func:`relusym.identify` runs the test once the first line's
search has found ``WATCH_KINKS`` (32) kinks (a 16-neuron tanh network shows over a thousand) and before each retry,
so a network with fewer kinks never pays its queries.

Dense kinks look smooth at coarse steps (4,096 neurons of one sign on a line of length 2 do, at steps above
2^-8); at the finest resolved step at most one kink lies within 2h of most places, and one kink does not divide
D by 4 twice in a row, so a ReLU network passes whenever the oracle's rounding resolves steps of T0·2^-10: a
float64 oracle does; a float32 oracle resolves about 2^-6 to 2^-8 and is never refused here (its search decides,
as before).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relusym.errors import IdentificationError

__all__ = ["NotPiecewiseLinearError", "refuse_smooth", "smoothness"]

_PLACES = 12  # random places of the line
_SMOOTH = 9  # places that must look smooth for a refusal
_SCALES = 21  # h = T0·2^-4 … T0·2^-24
_RUN = 3  # consecutive halvings with ratio in [_LO, _HI]
_LO, _HI = 3.3, 4.8
_ABOVE = 64.0  # a second difference counts only above this many rounding units of the values' size
_FINE = 10  # ... and the finest such step must be at most T0·2^-_FINE (see the module docstring)


class NotPiecewiseLinearError(IdentificationError):
    """The oracle is smooth where a ReLU network is piecewise linear (no retry can help)."""


def smoothness(query: Any, p: np.ndarray, d: np.ndarray, T0: float, floor: float, rng: Any) -> str | None:
    """The refusal's sentence when most places of the line p + t·d look smooth (module docstring), else None.
    ``query``: the session's float query (B × m → B × k); ``floor``: the oracle's rounding unit.  Costs
    ``_PLACES`` · (``_SCALES`` + 2) = 276 queries: the forward differences of all steps share their points."""
    ts = rng.uniform(-T0, T0, size=_PLACES)
    first = 4
    hs = T0 * 2.0 ** -np.arange(first - 1, first + _SCALES)  # 2h_s = h_(s-1): the points t + 2h are shared
    offs = np.concatenate([[0.0], hs])
    X = p[None, None, :] + (ts[:, None, None] + offs[None, :, None]) * d[None, None, :]
    Y = query(X.reshape(-1, len(p))).reshape(_PLACES, len(offs), -1)
    f0, f = Y[:, :1, :], Y[:, 1:, :]
    # D(h_s) = f(t + 2h_s) − 2 f(t + h_s) + f(t), s = 0 … _SCALES − 1 (h_s = hs[s + 1])
    D = np.abs(f[:, :-1, :] - 2 * f[:, 1:, :] + f0)
    size = np.max(np.abs(Y), axis=1, keepdims=True) + np.abs(f[:, :1, :] - f0)
    real = D > _ABOVE * floor * np.maximum(size, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = D[:, :-1, :] / D[:, 1:, :]
    good = (r >= _LO) & (r <= _HI) & real[:, :-1, :] & real[:, 1:, :]
    # the finest scales that still see the curvature: the _RUN halvings ending at the last h where D is above
    # rounding must all be good (a ReLU network's kinks, however dense, stop looking smooth there)
    S = real.shape[1]
    last = S - 1 - np.argmax(real[:, ::-1, :], axis=1)  # (places, outputs): the last real scale
    seen = real.any(axis=1)
    smooth = np.zeros(real.shape[0], dtype=bool)
    for q in range(real.shape[0]):
        for o in range(real.shape[2]):
            e = int(last[q, o])
            if seen[q, o] and e >= max(_RUN, _FINE - first) and good[q, e - _RUN : e, o].all():
                smooth[q] = True
    count = int(smooth.sum())
    if count < _SMOOTH:
        return None
    return (
        f"the oracle is not piecewise linear: at {count} of {_PLACES} random points of a line its second "
        f"differences shrink like the square of the step ({_RUN} halvings in a row divide them by about 4, "
        "as a smooth function's do), where a ReLU network's vanish away from its kinks"
    )


def refuse_smooth(session: Any, p: np.ndarray, d: np.ndarray, T0: float) -> None:
    """Raise :class:`NotPiecewiseLinearError` when the float oracle of ``session`` looks smooth on the line
    p + t·d (:func:`smoothness`)."""
    why = smoothness(session.query, p, d, T0, session.floor, session.rng)
    if why is not None:
        raise NotPiecewiseLinearError(why)
