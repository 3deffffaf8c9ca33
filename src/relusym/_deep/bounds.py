"""Certified bounds on the pre-activations of a deep ReLU network over a box, proved in exact arithmetic.

Floats only *propose*; every bound that is returned is computed exactly (Python integers and Fractions).

Two bounds are computed for every hidden unit, layer by layer, from the exact bounds [l_j, u_j] of the units of
the earlier layers, and the tighter of the two is kept (both are valid):

* **interval**: z = W h + b with h_j ∈ [σ(l_j), σ(u_j)] (x in the box for the first layer), evaluated exactly;
* **relaxation** (a Lagrangian dual certificate of the per-neuron relaxation, i.e. of the triangle LP): for the
  target c·z_T and *any* real multipliers μ_k on the equalities z_k = W_k h_{k−1} + b_k (k < T),

      c·z_T ≤ c·b_T + Σ_{k<T} ( μ_k·b_k + Σ_j max_{z∈[l_kj, u_kj]} (λ_kj σ(z) − μ_kj z) ) + max_{x∈box} λ_{−1}·x,

  where λ_{k−1} = μ_k W_k (μ_T = c).  Each inner maximum is the maximum of a piecewise-linear function of one
  variable, attained at l, u or 0; the last term is Σ_j max(λ_j lo_j, λ_j hi_j).  The multipliers come from a
  float back-substitution (CROWN's slopes), rounded to dyadic numbers; the bound is then evaluated exactly, so
  the float computation only chooses which valid bound is computed.

Bounds are rounded outward to dyadic rationals (about 40 significant bits) before they are used for later
layers; rounding outward keeps them valid and keeps the integers short.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from relusym._deep.mlp import MLP
from relusym._deep.rows import Row, rational_rows
from relusym._exact.numbers import common_denominator

__all__ = [
    "Point",
    "Region",
    "ExactLayers",
    "BoundTable",
    "certified_bounds",
    "dual_bounds",
    "unit_bound",
    "target_rows",
    "ROUND_BITS",
    "MU_BITS",
    "exact_preactivations",
    "float_preactivations",
    "interval_bounds",
    "quantize",
    "crown_multipliers",
    "round_out",
    "exact_matmul",
    "crown_back_substitution",
]

Point = tuple[Fraction, ...]  # an exact input
Region = tuple[Point, Point]  # a box (lo, hi)

_BITS = 40  # significant bits kept when a bound is rounded outward
_MU_BITS = 30  # significant bits of the multipliers (any multipliers give a valid bound)
ROUND_BITS, MU_BITS = _BITS, _MU_BITS  # for the batched twin of unit_bound (box_leaves)


class ExactLayers:
    """A network's layers prepared once: exact rows, integer matrices over one denominator, float copies."""

    def __init__(self, rows: Sequence[Sequence[Row]], m: int) -> None:
        self.m = m
        self.rows: list[list[Row]] = [[list(r) for r in layer] for layer in rows]
        self.widths = [m] + [len(layer) for layer in self.rows]
        self.Wi: list[np.ndarray] = []
        self.D: list[int] = []
        self.bias: list[list[Fraction]] = []
        self.Wf: list[np.ndarray] = []
        self.bf: list[np.ndarray] = []
        for ell, layer in enumerate(self.rows):
            cols = self.widths[ell]
            den = common_denominator(v for r in layer for v in r[:-1])
            Wi = np.zeros((len(layer), cols), dtype=object)
            for i, r in enumerate(layer):
                for j in range(cols):
                    Wi[i, j] = r[j].numerator * (den // r[j].denominator)
            self.Wi.append(Wi)
            self.D.append(den)
            self.bias.append([r[-1] for r in layer])
            self.Wf.append(np.array([[float(v) for v in r[:-1]] for r in layer], dtype=np.float64).reshape(-1, cols))
            self.bf.append(np.array([float(r[-1]) for r in layer], dtype=np.float64))

    @classmethod
    def of(cls, net: MLP) -> ExactLayers:
        return cls([rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)], net.m)

    @property
    def hidden(self) -> int:
        """The number of hidden layers."""
        return len(self.rows) - 1


# ----------------------------------------------------------------------------------------------------------
# evaluation


def exact_preactivations(layers: ExactLayers, x: Sequence[Fraction]) -> list[list[Fraction]]:
    """The exact pre-activations of every layer (the last is the output) at a rational point."""
    out: list[list[Fraction]] = []
    h = list(x)
    for ell in range(len(layers.rows)):
        den = common_denominator(h)
        hi = np.array([q.numerator * (den // q.denominator) for q in h], dtype=object)
        dots = layers.Wi[ell].dot(hi).tolist() if len(h) else [0] * len(layers.rows[ell])
        scale = den * layers.D[ell]
        z = [b + Fraction(int(t), scale) for t, b in zip(dots, layers.bias[ell], strict=True)]
        out.append(z)
        h = [v if v > 0 else Fraction(0) for v in z]
    return out


def float_preactivations(layers: ExactLayers, X: np.ndarray) -> list[np.ndarray]:
    """The pre-activations of every layer at a batch of points, in float64 (a proposal, never a proof)."""
    out = []
    H = X
    for ell in range(len(layers.rows)):
        Z = H @ layers.Wf[ell].T + layers.bf[ell]
        out.append(Z)
        H = np.maximum(Z, 0.0)
    return out


# ----------------------------------------------------------------------------------------------------------
# the bound table


@dataclass(frozen=True)
class BoundTable:
    """Exact bounds lower[k][j] ≤ z_kj ≤ upper[k][j] over a box for the layers 0 … len−1 (hidden layers first),
    with, for each bound, the method that gave it (``"interval"`` or ``"relaxation"``) and the exact unrounded
    value (``raw_lower``/``raw_upper``)."""

    lo: tuple[Fraction, ...]
    hi: tuple[Fraction, ...]
    lower: tuple[tuple[Fraction, ...], ...]
    upper: tuple[tuple[Fraction, ...], ...]
    raw_lower: tuple[tuple[Fraction, ...], ...]
    raw_upper: tuple[tuple[Fraction, ...], ...]
    how_lower: tuple[tuple[str, ...], ...]
    how_upper: tuple[tuple[str, ...], ...]


def round_out(vals: list[Fraction], up: bool) -> list[Fraction]:
    """Each value rounded outward (up or down) to a multiple of 2^−e, e chosen so the largest keeps _BITS bits
    (integer arithmetic on numerators and denominators)."""
    big = max((abs(v) for v in vals), default=Fraction(0))
    e = _BITS - (math.ceil(big).bit_length() if big else 0)
    out = []
    for v in vals:
        n, d = v.numerator, v.denominator
        if e >= 0:
            n <<= e
        else:
            d <<= -e
        q = -(-n // d) if up else n // d
        out.append(Fraction(q, 1 << e) if e >= 0 else Fraction(q << -e))
    return out


def interval_bounds(
    layers: ExactLayers, k: int, lo: Sequence[Fraction], hi: Sequence[Fraction]
) -> tuple[list[Fraction], list[Fraction]]:
    """Exact interval bounds of layer k's pre-activations given bounds lo ≤ h_{k−1} ≤ hi."""
    den = common_denominator(list(lo) + list(hi))
    L = np.array([v.numerator * (den // v.denominator) for v in lo], dtype=object)
    U = np.array([v.numerator * (den // v.denominator) for v in hi], dtype=object)
    W = layers.Wi[k]
    Wp = np.where(W > 0, W, 0)
    Wn = np.where(W < 0, W, 0)
    up = (Wp.dot(U) + Wn.dot(L)).tolist() if W.shape[1] else [0] * W.shape[0]
    dn = (Wp.dot(L) + Wn.dot(U)).tolist() if W.shape[1] else [0] * W.shape[0]
    scale = den * layers.D[k]
    b = layers.bias[k]
    return (
        [bi + Fraction(int(v), scale) for v, bi in zip(dn, b, strict=True)],
        [bi + Fraction(int(v), scale) for v, bi in zip(up, b, strict=True)],
    )


def crown_multipliers(Lam: np.ndarray, l: np.ndarray, u: np.ndarray) -> np.ndarray:
    """CROWN's multipliers μ for the coefficients λ (``Lam``) of a layer whose pre-activations lie in [l, u]
    (arrays broadcasting against ``Lam``): λ·(slope of the chosen linear bound of σ), the upper chord
    u/(u − l) for λ > 0 and the lower line of slope 0 or 1 (whichever is closer) for λ < 0 on a crossing unit,
    1 on an active one, 0 on a dead one.  Floats only: any multipliers give a valid certificate."""
    cross = (l < 0) & (u > 0)
    act = l >= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        su = np.where(cross, u / np.where(cross, u - l, 1.0), 0.0)
    slow = np.where(cross, (u > -l).astype(np.float64), 0.0)
    pos, neg = np.maximum(Lam, 0.0), np.minimum(Lam, 0.0)
    return np.asarray(pos * np.where(act, 1.0, su) + neg * np.where(act, 1.0, slow))


def _multipliers(
    layers: ExactLayers, T: int, C: np.ndarray, fl: list[np.ndarray], fu: list[np.ndarray]
) -> list[np.ndarray]:
    """Float multipliers μ_k (k < T) for the targets C·z_T by back-substitution with CROWN's slopes."""
    mus: list[np.ndarray] = [np.zeros((C.shape[0], 0))] * T
    Lam = C @ layers.Wf[T]
    for k in range(T - 1, -1, -1):
        mu = np.nan_to_num(crown_multipliers(Lam, fl[k][None, :], fu[k][None, :]), nan=0.0, posinf=0.0, neginf=0.0)
        mus[k] = mu
        Lam = mu @ layers.Wf[k]
    return mus


def quantize(mu: np.ndarray) -> tuple[np.ndarray, int]:
    """μ ≈ M / 2^s with integer M (any multipliers are valid: rounding costs tightness, never soundness)."""
    big = float(np.max(np.abs(mu))) if mu.size else 0.0
    if not big or not math.isfinite(big):
        return np.zeros(mu.shape, dtype=object), 0
    s = _MU_BITS - math.frexp(big)[1]
    M = np.rint(np.ldexp(mu, s))
    out = np.empty(mu.shape, dtype=object)
    out.ravel()[:] = [int(v) for v in M.ravel().tolist()]
    return out, s


def _matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Exact product of two object arrays of Python ints (python-flint when it helps)."""
    if A.shape[0] * A.shape[1] * B.shape[1] < 4096:
        return np.asarray(A.dot(B))
    import flint

    P = flint.fmpz_mat(A.tolist()) * flint.fmpz_mat(B.tolist())
    out = np.empty((A.shape[0], B.shape[1]), dtype=object)
    out.ravel()[:] = [int(v) for v in P.entries()]
    return out


exact_matmul = _matmul  # for the batched leaves (units_leaves): the same product
crown_back_substitution = _multipliers  # the float multipliers certified_bounds proposes, for the batched leaves


def target_rows(layers: ExactLayers, T: int, signs: Sequence[int], units: Sequence[int]) -> np.ndarray:
    """The float rows c (one per target) of the targets sign·z_{T,unit}: c[r, unit] = sign."""
    C = np.zeros((len(units), layers.widths[T + 1]))
    for r, (sg, u) in enumerate(zip(signs, units, strict=True)):
        C[r, u] = sg
    return C


def _relaxation(
    layers: ExactLayers,
    T: int,
    signs: Sequence[int],
    units: Sequence[int],
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    lower: list[list[Fraction]],
    upper: list[list[Fraction]],
) -> list[Fraction]:
    """Exact upper bounds of sign·z_{T,unit} for each (sign, unit) from the Lagrangian certificate."""
    C = target_rows(layers, T, signs, units)
    fl = [np.array([float(v) for v in lay]) for lay in lower]
    fu = [np.array([float(v) for v in lay]) for lay in upper]
    mus = [quantize(mu) for mu in _multipliers(layers, T, C, fl, fu)]
    return dual_bounds(layers, T, signs, units, mus, lo, hi, lower, upper)


def _ints(vals: Sequence[Fraction], den: int) -> np.ndarray:
    return np.array([v.numerator * (den // v.denominator) for v in vals], dtype=object)


def dual_bounds(
    layers: ExactLayers,
    T: int,
    signs: Sequence[int],
    units: Sequence[int],
    mus: Sequence[tuple[np.ndarray, int]],
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    lower: Sequence[Sequence[Fraction]],
    upper: Sequence[Sequence[Fraction]],
) -> list[Fraction]:
    """The exact Lagrangian bound (module docstring) of sign·z_{T,unit} for each target r, with the multipliers
    μ_k = M_k[r] / 2^(s_k) given by ``mus[k] = (M_k, s_k)`` (M_k an object array of Python ints, one row per
    target) and the bounds lower[k] ≤ z_k ≤ upper[k] of the layers k < T.  Any multipliers give a valid upper
    bound: they are free variables of the dual."""
    n = len(units)
    total = [Fraction(sg) * layers.bias[T][u] for sg, u in zip(signs, units, strict=True)]
    Cm = np.zeros((n, layers.widths[T + 1]), dtype=object)
    for r, (sg, u) in enumerate(zip(signs, units, strict=True)):
        Cm[r, u] = sg
    # λ_{T−1} = C W_T exactly: integers over D_T
    Lam, lam_den = _matmul(Cm, layers.Wi[T]), layers.D[T]
    for k in range(T - 1, -1, -1):
        M, s = mus[k]
        # λ = Lam / lam_den, μ = M / 2^s; common denominator lam_den · 2^s · E
        Ld = common_denominator(list(lower[k]) + list(upper[k]))
        Li, Ui = _ints(lower[k], Ld), _ints(upper[k], Ld)
        lam = Lam * (1 << s) if s >= 0 else Lam
        Mx = M * lam_den if s >= 0 else M * lam_den * (1 << -s)
        # values of λσ(z) − μz at z = l, u (scaled by lam_den·2^max(s,0)·Ld), and 0 when l < 0 < u
        sL = np.where(Li > 0, Li, 0)
        sU = np.where(Ui > 0, Ui, 0)
        best = np.maximum(lam * sL - Mx * Li, lam * sU - Mx * Ui)
        inside = (Li < 0) & (Ui > 0)
        best = np.where(inside[None, :] & (best < 0), 0, best)
        den = lam_den * (1 << max(s, 0)) * Ld
        sums = best.sum(axis=1).tolist() if best.shape[1] else [0] * n
        # μ_k · b_k
        bden = common_denominator(layers.bias[k])
        mb = M.dot(_ints(layers.bias[k], bden)).tolist() if M.shape[1] else [0] * n
        for r in range(n):
            total[r] += Fraction(int(sums[r]), den) + Fraction(int(mb[r]), bden) / Fraction(2) ** s
        Lam, lam_den = _matmul(M, layers.Wi[k]), layers.D[k]
        if s >= 0:
            lam_den *= 1 << s
        else:
            Lam = Lam * (1 << -s)
    # the input term: Σ_j max(λ_j lo_j, λ_j hi_j)
    xd = common_denominator(list(lo) + list(hi))
    loi, hii = _ints(lo, xd), _ints(hi, xd)
    term = np.maximum(Lam * loi[None, :], Lam * hii[None, :]).sum(axis=1).tolist()
    for r in range(n):
        total[r] += Fraction(int(term[r]), lam_den * xd)
    return total


def certified_bounds(
    layers: ExactLayers,
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    upto: int | None = None,
    *,
    relax: bool = True,
    first: tuple[Sequence[Fraction], Sequence[Fraction]] | None = None,
) -> BoundTable:
    """Exact bounds of the pre-activations of layers 0 … upto (default: every hidden layer) over the box.

    ``first``: exact bounds of the first layer known otherwise (a polytope's linear programs), used where tighter."""
    last = layers.hidden - 1 if upto is None else upto
    lower: list[list[Fraction]] = []
    upper: list[list[Fraction]] = []
    raw_l: list[list[Fraction]] = []
    raw_u: list[list[Fraction]] = []
    how_l: list[tuple[str, ...]] = []
    how_u: list[tuple[str, ...]] = []
    for T in range(last + 1):
        if T == 0:
            il, iu = interval_bounds(layers, 0, lo, hi)
            if first is not None:
                il = [max(a, b) for a, b in zip(il, first[0], strict=True)]
                iu = [min(a, b) for a, b in zip(iu, first[1], strict=True)]
        else:
            zero = Fraction(0)
            il, iu = interval_bounds(
                layers, T, [max(v, zero) for v in lower[T - 1]], [max(v, zero) for v in upper[T - 1]]
            )
        hl = ["interval"] * len(il)
        hu = ["interval"] * len(iu)
        # the relaxation for every unit that interval arithmetic leaves unsettled or active (a dead unit's bound
        # changes nothing later)
        todo = [j for j in range(len(il)) if iu[j] > 0]
        if relax and T > 0 and todo:
            n = len(todo)
            vals = _relaxation(layers, T, [1] * n + [-1] * n, todo * 2, lo, hi, lower, upper)
            for r, j in enumerate(todo):
                if vals[r] < iu[j]:
                    iu[j], hu[j] = vals[r], "relaxation"
                if -vals[n + r] > il[j]:
                    il[j], hl[j] = -vals[n + r], "relaxation"
        raw_l.append(il)
        raw_u.append(iu)
        how_l.append(tuple(hl))
        how_u.append(tuple(hu))
        lower.append(round_out(il, up=False))
        upper.append(round_out(iu, up=True))
    return BoundTable(
        tuple(lo),
        tuple(hi),
        tuple(tuple(v) for v in lower),
        tuple(tuple(v) for v in upper),
        tuple(tuple(v) for v in raw_l),
        tuple(tuple(v) for v in raw_u),
        tuple(how_l),
        tuple(how_u),
    )


def unit_bound(
    layers: ExactLayers,
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    lower: Sequence[Sequence[Fraction]],
    upper: Sequence[Sequence[Fraction]],
    ell: int,
    j: int,
    sign: int,
) -> Fraction:
    """An exact bound of the one unit z[ell][j] (ell ≥ 1) over the box from exact bounds of the layers before it
    (e.g. a :class:`BoundTable`'s rounded ones): its upper bound for sign −1, its lower bound for sign +1, the
    tighter of interval arithmetic and the Lagrangian certificate with CROWN's multipliers for that unit alone
    (quantized on their own, so the value depends only on the unit and the bounds given)."""
    zero = Fraction(0)
    one = ExactLayers([layers.rows[ell][j : j + 1]], layers.widths[ell])
    il, iu = interval_bounds(one, 0, [max(v, zero) for v in lower[ell - 1]], [max(v, zero) for v in upper[ell - 1]])
    if iu[0] <= 0:
        return iu[0] if sign < 0 else il[0]
    sg = -sign  # the target is sg·z ≤ …: the upper bound for sign −1, minus the lower bound for sign +1
    (v,) = _relaxation(layers, ell, [sg], [j], lo, hi, [list(r) for r in lower[:ell]], [list(r) for r in upper[:ell]])
    return min(iu[0], v) if sign < 0 else max(il[0], -v)
