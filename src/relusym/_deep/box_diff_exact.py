"""The symbolic difference intervals of :mod:`relusym._deep.box_diff`, recomputed exactly on a batch of boxes.

Every number is a dyadic rational n / 2^F (F = :data:`FRAC_BITS`) held as a Python integer n (numpy object
arrays), so no float decides.  Each step keeps a proved inequality; rounding is always outward:

* a box [lo, hi] is written x = mid + r·t with t ∈ [−1, 1]^m (mid, r exact rationals); an affine form of t is
  (g, c) with value g·t + c, and its maximum over the box is c + Σ|g_j| (exact);
* rounding a form to the grid 2^−F: each coefficient is floored (error e_j ∈ [0, 2^−F)), so |Σ e_j t_j| < m·2^−F,
  and the constant is moved outward by m·2^−F more (down for a lower form, up for an upper one);
* W v for v between forms L ≤ v ≤ U (pointwise in t): W⁺L + W⁻U ≤ Wv ≤ W⁺U + W⁻L, computed as
  (W(L+U) ∓ |W|(U−L))/2 with W = Wi / D exactly (the layer's integer numerators and common denominator);
* σ(z) on a unit with proved bounds l < 0 < u (l, u on the grid): σ(z) ≤ s(z − l) for z ∈ [l, u] whenever
  s ≥ u/(u − l) (the line is ≥ σ at both ends and σ is convex), so s is rounded *up*; and σ(z) ≤ s(U − l) as
  s ≥ 0.  σ(z) ≥ αz ≥ αL for α ∈ {0, 1}; σ(z) ∈ [0, max(u, 0)];
* η = σ(z1) − σ(z2) with δ = z1 − z2 ∈ [dl, du]: σ is monotone and 1-Lipschitz, so min(0, δ) ≤ η ≤ max(0, δ);
  on dl < 0 < du, max(0, δ) ≤ s(δ − dl) for any s ≥ du/(du − dl) (convex, checked at the ends) and
  min(0, δ) ≥ s'(δ − du) for any s' ≥ −dl/(du − dl) (concave, at δ = dl: s'(dl − du) ≤ dl ⇔ s' ≥ −dl/(du − dl));
  both slopes are rounded up and are ≥ 0, so δ's forms may be substituted.  Also h1 − h2 between the forms of
  h1 and h2; η ∈ [σ(l1) − σ(u2), σ(u1) − σ(l2)]; η = δ, z1, −z2 or 0 when both units are stable (proved bounds).
  Which valid candidate is kept (the one with the best concrete bound) does not affect soundness.

The float proposer and this module share their case analysis; only this one's numbers are returned as proofs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._deep.bounds import BoundTable, ExactLayers, certified_bounds
from relusym._exact.numbers import common_denominator

__all__ = [
    "FRAC_BITS",
    "ExactPair",
    "exact_diff_bounds",
    "exact_partition_bound",
    "exact_partition_values",
    "refine_worst",
    "int_dot",
    "limbs",
]

FRAC_BITS = 48
_ONE = 1 << FRAC_BITS

Obj = Any  # a numpy object array of Python integers (numerators over 2^F)
Layer = tuple[Obj, int, list[Fraction], list[np.ndarray], list[np.ndarray]]


_LIMB = 24  # bits per limb of the integer products (below)


def limbs(X: Obj) -> list[np.ndarray]:
    """Signed int64 digits of an object array of integers: X = Σ_a D_a·2^(24a), |D_a| < 2^24 (all of sign X)."""
    sign = np.where(X < 0, -1, 1)
    A = np.abs(X)
    mask = (1 << _LIMB) - 1
    out = [(np.bitwise_and(A, mask) * sign).astype(np.int64)]
    A = np.right_shift(A, _LIMB)
    while A.size and A.any():
        out.append((np.bitwise_and(A, mask) * sign).astype(np.int64))
        A = np.right_shift(A, _LIMB)
    return out


def int_dot(Wl: list[np.ndarray], S: Obj) -> Obj:
    """The exact product W·S of integer matrices (W given by its digits :func:`limbs`, S an object array), from
    int64 products of digits: each digit product is < 2^48 in absolute value and each int64 sum below adds at
    most n·(number of digit pairs) of them, kept < 2^62 (else the object product is used), so no int64 sum
    overflows and the recombination (in Python integers) is exact."""
    Sl = limbs(S)
    n = S.shape[0]
    if n * len(Wl) * len(Sl) >= 1 << (62 - 2 * _LIMB):
        W = sum((d.astype(object) * (1 << (_LIMB * a)) for a, d in enumerate(Wl)), np.zeros(Wl[0].shape, dtype=object))
        return np.asarray(W).dot(S)
    out = np.zeros((Wl[0].shape[0], S.shape[1]), dtype=object)
    for shift in range(len(Wl) + len(Sl) - 1):
        T = np.zeros((Wl[0].shape[0], S.shape[1]), dtype=np.int64)
        for a in range(max(0, shift - len(Sl) + 1), min(shift, len(Wl) - 1) + 1):
            T += Wl[a] @ Sl[shift - a]
        out = out + (T.astype(object) << (_LIMB * shift))
    return out


def _ceil_div(a: Obj, d: Obj) -> Obj:
    return -((-a) // d)


def _round(N: Obj, den: int, upper: bool) -> Obj:
    """Forms with numerators N over den·2^F rounded outward to the grid 2^−F (see the module's note)."""
    m = N.shape[-1] - 1
    out = N // den
    if upper:
        out[..., -1] = _ceil_div(N[..., -1], den) + m
    else:
        out[..., -1] = out[..., -1] - m
    return out


def _conc(F: Obj, upper: bool) -> Obj:
    s = np.abs(F[..., :-1]).sum(axis=-1)
    return F[..., -1] + s if upper else F[..., -1] - s


class ExactPair:
    """Two networks of the same widths as integer layers: W1 = Wi1/D1, the difference W1 − W2 = dWi/dD, biases."""

    def __init__(self, L1: ExactLayers, L2: ExactLayers) -> None:
        if L1.widths != L2.widths:
            raise ValueError("the networks must have the same widths")
        zero = Fraction(0)
        self.L1, self.L2 = L1, L2
        self.D = ExactLayers(
            [
                [[p - q for p, q in zip(r1, r2, strict=True)] for r1, r2 in zip(l1, l2, strict=True)]
                for l1, l2 in zip(L1.rows, L2.rows, strict=True)
            ],
            L1.m,
        )
        del zero
        self._layers: dict[tuple[int, int], Layer] = {}

    def layer(self, which: int, k: int) -> Layer:
        """Layer k of the first network (0), the second (1) or the difference (2): Wi, D, bias, the digits of Wi
        and of |Wi|."""
        if (which, k) not in self._layers:
            lay = (self.L1, self.L2, self.D)[which]
            Wi = lay.Wi[k]
            self._layers[which, k] = (Wi, lay.D[k], lay.bias[k], limbs(Wi), limbs(np.abs(Wi)))
        return self._layers[which, k]


def _mm(W: Layer, L: Obj, U: Obj) -> tuple[Obj, Obj]:
    """Forms bounding (Wi/D)·v + bias for L ≤ v ≤ U (B × n × (m+1) object arrays), rounded outward."""
    Wi, D, bias, Wl, Al = W
    B, n, c = L.shape
    S = (L + U).transpose(1, 0, 2).reshape(n, B * c)
    R = (U - L).transpose(1, 0, 2).reshape(n, B * c)
    WS = int_dot(Wl, S)
    WR = int_dot(Al, R)
    rows = Wi.shape[0]
    lo = (WS - WR).reshape(rows, B, c).transpose(1, 0, 2)
    up = (WS + WR).reshape(rows, B, c).transpose(1, 0, 2)
    # the bias, exactly over 2·D·2^F before rounding
    bn = np.array([(b * 2 * D * _ONE) for b in bias], dtype=object)
    bl = np.array([v.numerator // v.denominator for v in bn], dtype=object)
    bu = np.array([-((-v.numerator) // v.denominator) for v in bn], dtype=object)
    lo[..., -1] += bl
    up[..., -1] += bu
    return _round(lo, 2 * D, False), _round(up, 2 * D, True)


def _first(
    Wi: Obj, D: int, bias: Sequence[Fraction], mid: list[list[Fraction]], r: list[list[Fraction]]
) -> tuple[Obj, Obj]:
    """The first layer's forms: coefficients W_ij r_j and constants W·mid + b, in integers over each box's
    common denominators, floored (the constants then moved outward by m, see the module's note)."""
    m = len(mid[0])
    qm = np.array([common_denominator(row) for row in mid], dtype=object)
    qr = np.array([common_denominator(row) for row in r], dtype=object)
    MN = np.array(
        [[v.numerator * (q // v.denominator) for v in row] for row, q in zip(mid, qm, strict=True)], dtype=object
    )
    RN = np.array(
        [[v.numerator * (q // v.denominator) for v in row] for row, q in zip(r, qr, strict=True)], dtype=object
    )
    bd = common_denominator(bias)
    BN = np.array([v.numerator * (bd // v.denominator) for v in bias], dtype=object)
    G = (Wi[None, :, :] * RN[:, None, :] * _ONE) // (D * qr)[:, None, None]
    num = (MN.dot(Wi.T) * bd + BN[None, :] * (D * qm)[:, None]) * _ONE
    den = (D * bd * qm)[:, None]
    lo = np.concatenate([G, (num // den - m)[..., None]], axis=-1)
    up = np.concatenate([G, (-((-num) // den) + m)[..., None]], axis=-1)
    return lo, up


def _pick(cands: list[tuple[Obj, Obj]]) -> Obj:
    """Per unit, the candidate form whose concrete value (second entry, to minimise) is smallest, the earlier
    one on a near tie (the float proposer's rule, so both choose alike; any choice is valid)."""
    F, v = cands[0]
    for G, w in cands[1:]:
        better = w < v - (abs(v) >> 20) - (1 << (FRAC_BITS - 40))  # a later one only when clearly better
        F = np.where(better[..., None], G, F)
        v = np.where(better, w, v)
    return F


def _relu(L: Obj, U: Obj, lo: Obj, up: Obj) -> tuple[Obj, Obj]:
    dead, act = up <= 0, lo >= 0
    unst = ~dead & ~act
    zero = np.zeros_like(L)
    zero[...] = 0
    width = np.where(unst, up - lo, 1)
    s = np.where(unst, _ceil_div(up * _ONE, width), 0)  # ≥ u/(u − l), over 2^F
    N = U * s[..., None]
    N[..., -1] -= s * lo
    Hu = np.where(unst[..., None], _round(N, _ONE, True), np.where(act[..., None], U, zero))
    a = act | (unst & (up > -lo))
    Hl = np.where(a[..., None], L, zero)
    cu = zero.copy()
    cu[..., -1] = np.where(up > 0, up, 0)
    Hu = _pick([(Hu, _conc(Hu, True)), (cu, cu[..., -1])])
    Hl = _pick([(Hl, -_conc(Hl, False)), (zero, np.zeros_like(up))])
    return Hl, Hu


def _eta(st: tuple[Obj, ...], z1: tuple[Obj, ...], z2: tuple[Obj, ...], d: tuple[Obj, ...]) -> tuple[Obj, Obj]:
    H1l, H1u, H2l, H2u = st
    L1, U1, l1, u1 = z1
    L2, U2, l2, u2 = z2
    Ld, Ud, dl, du = d
    zero = np.zeros_like(L1)
    zero[...] = 0

    def pos(v: Obj) -> Obj:
        return np.where(v > 0, v, 0)

    cu, cl = pos(u1) - pos(l2), pos(l1) - pos(u2)
    const_u, const_l = zero.copy(), zero.copy()
    const_u[..., -1], const_l[..., -1] = cu, cl
    cross = (dl < 0) & (du > 0)
    w = np.where(cross, du - dl, 1)
    su = np.where(cross, _ceil_div(du * _ONE, w), 0)
    sl = np.where(cross, _ceil_div(-dl * _ONE, w), 0)
    Nu = Ud * su[..., None]
    Nu[..., -1] -= su * dl
    Nl = Ld * sl[..., None]
    Nl[..., -1] -= sl * du
    chord_u = np.where(cross[..., None], _round(Nu, _ONE, True), np.where((dl >= 0)[..., None], Ud, zero))
    chord_l = np.where(cross[..., None], _round(Nl, _ONE, False), np.where((du <= 0)[..., None], Ld, zero))
    diff_u, diff_l = H1u - H2l, H1l - H2u
    Fu = _pick([(diff_u, _conc(diff_u, True)), (chord_u, _conc(chord_u, True)), (const_u, cu)])
    Fl = _pick([(diff_l, -_conc(diff_l, False)), (chord_l, -_conc(chord_l, False)), (const_l, -cl)])
    a1, d1, a2, d2 = l1 >= 0, u1 <= 0, l2 >= 0, u2 <= 0
    for mask, fl, fu in ((a1 & a2, Ld, Ud), (d1 & d2, zero, zero), (a1 & d2, L1, U1), (d1 & a2, -U2, -L2)):
        Fl = np.where(mask[..., None], fl, Fl)
        Fu = np.where(mask[..., None], fu, Fu)
    return Fl, Fu


def _maxw(a: Obj, b: Obj) -> Obj:
    return np.where(a > b, a, b)


def _minw(a: Obj, b: Obj) -> Obj:
    return np.where(a < b, a, b)


Cuts = list[tuple[Obj, Obj, Obj, Obj]]


def _cuts(tables: Sequence[tuple[BoundTable, BoundTable]], layers: int) -> Cuts:
    """Per layer, the tables' bounds of z1 and z2 as numerators over 2^F, rounded outward (B × n arrays)."""

    def grid(vals: Sequence[Fraction], upper: bool) -> list[int]:
        return [
            -((-v.numerator * _ONE) // v.denominator) if upper else (v.numerator * _ONE) // v.denominator for v in vals
        ]

    out: Cuts = []
    for k in range(layers):
        out.append(
            tuple(  # type: ignore[arg-type]
                np.array([grid((t[w].lower if side == 0 else t[w].upper)[k], side == 1) for t in tables], dtype=object)
                for w in (0, 1)
                for side in (0, 1)
            )
        )
    return out


def _concrete(L1: Obj, U1: Obj, L2: Obj, U2: Obj, cuts: Cuts | None, k: int) -> tuple[Obj, Obj, Obj, Obj]:
    """Layer k's proved bounds of z1 and z2 on each box: the forms' extremes, cut by the tables' when given."""
    l1, u1 = _conc(L1, False), _conc(U1, True)
    l2, u2 = _conc(L2, False), _conc(U2, True)
    if cuts is not None:
        a1, b1, a2, b2 = cuts[k]
        l1, u1, l2, u2 = _maxw(l1, a1), _minw(u1, b1), _maxw(l2, a2), _minw(u2, b2)
    return l1, u1, l2, u2


def exact_diff_bounds(
    P: ExactPair,
    boxes: Sequence[tuple[Sequence[Fraction], Sequence[Fraction]]],
    tables: Sequence[tuple[BoundTable, BoundTable]] | None = None,
) -> list[Fraction]:
    """For each box (lo, hi), a proved upper bound of max_i |y1_i(x) − y2_i(x)| over the box (exact).
    ``tables``: per box, both networks' exact bound tables there (:func:`relusym._deep.bounds.certified_bounds`
    of every layer, the output's included): proved bounds of z1 and z2 that cut the forms' (any proved bound may
    replace l, u in the relaxations and the stable cases, and Δ = z1 − z2 ∈ [l1 − u2, u1 − l2])."""
    half = Fraction(1, 2)
    mid = [[(a + b) * half for a, b in zip(lo, hi, strict=True)] for lo, hi in boxes]
    rad = [[(b - a) * half for a, b in zip(lo, hi, strict=True)] for lo, hi in boxes]
    L1, U1 = _first(*P.layer(0, 0)[:3], mid, rad)
    L2, U2 = _first(*P.layer(1, 0)[:3], mid, rad)
    Ld, Ud = _first(*P.layer(2, 0)[:3], mid, rad)
    cuts = None if tables is None else _cuts(tables, len(P.L1.rows))
    for k in range(1, len(P.L1.rows)):
        l1, u1, l2, u2 = _concrete(L1, U1, L2, U2, cuts, k - 1)
        dl = _maxw(_conc(Ld, False), l1 - u2)
        du = _minw(_conc(Ud, True), u1 - l2)
        H1l, H1u = _relu(L1, U1, l1, u1)
        H2l, H2u = _relu(L2, U2, l2, u2)
        El, Eu = _eta((H1l, H1u, H2l, H2u), (L1, U1, l1, u1), (L2, U2, l2, u2), (Ld, Ud, dl, du))
        W1 = P.layer(0, k)
        a_l, a_u = _mm((W1[0], W1[1], [Fraction(0)] * W1[0].shape[0], W1[3], W1[4]), El, Eu)
        c_l, c_u = _mm(P.layer(2, k), H2l, H2u)
        Ld, Ud = a_l + c_l, a_u + c_u
        L1, U1 = _mm(W1, H1l, H1u)
        L2, U2 = _mm(P.layer(1, k), H2l, H2u)
    l1, u1, l2, u2 = _concrete(L1, U1, L2, U2, cuts, len(P.L1.rows) - 1)
    dl = _maxw(_conc(Ld, False), l1 - u2)
    du = _minw(_conc(Ud, True), u1 - l2)
    worst = _maxw(du, -dl).max(axis=1)
    return [max(Fraction(int(v), _ONE), Fraction(0)) for v in worst]


def _unit_boxes(
    lo: Sequence[Fraction], hi: Sequence[Fraction], ulo: np.ndarray, uhi: np.ndarray
) -> list[tuple[list[Fraction], list[Fraction]]]:
    """The boxes lo + (hi − lo)·[ulo_b, uhi_b] (unit coordinates: dyadic floats, read exactly)."""
    return [
        (
            [a + (b - a) * Fraction(float(p)) for a, b, p in zip(lo, hi, pl, strict=True)],
            [a + (b - a) * Fraction(float(q)) for a, b, q in zip(lo, hi, ph, strict=True)],
        )
        for pl, ph in zip(ulo, uhi, strict=True)
    ]


def exact_partition_values(
    P: ExactPair,
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    ulo: np.ndarray,
    uhi: np.ndarray,
    expired: Callable[[], bool],
    chunk: int = 32,
) -> list[Fraction]:
    """The exact bound of each box lo + (hi − lo)·[ulo_b, uhi_b] in order, as many as ``expired()`` allows."""
    out: list[Fraction] = []
    for i in range(0, len(ulo), chunk):
        if expired():
            break
        out += exact_diff_bounds(P, _unit_boxes(lo, hi, ulo[i : i + chunk], uhi[i : i + chunk]))
    return out


def exact_partition_bound(
    P: ExactPair,
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    ulo: np.ndarray,
    uhi: np.ndarray,
    root_bound: Fraction,
    expired: Callable[[], bool],
    chunk: int = 32,
) -> tuple[Fraction, int]:
    """The largest exact bound over the boxes lo + (hi − lo)·[ulo_b, uhi_b] (unit coordinates, dyadic floats read
    exactly) of a partition of the box, and how many were proved; when ``expired()`` stops the proofs, the boxes
    left keep ``root_bound`` (an exact bound over the whole box, so over each of them)."""
    vals = exact_partition_values(P, lo, hi, ulo, uhi, expired, chunk)
    if len(vals) < len(ulo):
        return max([root_bound, *vals]), len(vals)
    return max([Fraction(0), *vals]), len(vals)


def refine_worst(
    P: ExactPair,
    lo: Sequence[Fraction],
    hi: Sequence[Fraction],
    ulo: np.ndarray,
    uhi: np.ndarray,
    vals: list[Fraction],
    goal: Fraction,
    expired: Callable[[], bool],
) -> list[Fraction]:
    """``vals`` (exact bounds of the boxes) with the boxes above ``goal``, worst first and while time lasts,
    bounded again with both networks' exact bound tables on the box (:func:`exact_diff_bounds` with ``tables``;
    about 0.2 s a box and network on ACAS Xu); each box keeps the smaller of its two proved bounds."""
    out = list(vals)
    for j in sorted(range(len(out)), key=lambda j: -out[j]):
        if out[j] <= goal or expired():
            break
        ((blo, bhi),) = _unit_boxes(lo, hi, ulo[j : j + 1], uhi[j : j + 1])
        t1 = certified_bounds(P.L1, blo, bhi, P.L1.hidden)
        t2 = certified_bounds(P.L2, blo, bhi, P.L2.hidden)
        out[j] = min(out[j], exact_diff_bounds(P, [(blo, bhi)], [(t1, t2)])[0])
    return out
