"""Symbolic difference intervals of two ReLU networks of the same widths on a batch of boxes, in floats (issue 22).

A float *proposer* (nothing here proves anything; :mod:`relusym._deep.box_diff_exact` recomputes the same
relaxation exactly on the leaves that decide).  On a box x = mid + r·t, t ∈ [−1, 1]^m, every pre-activation z1_k
of the first network, z2_k of the second and their difference δ_k = z1_k − z2_k is enclosed between two affine
forms of t (ReluDiff's symbolic intervals, Paulsen, Wang and Wang, ICSE 2020), propagated layer by layer:

* z_{k+1} = W_{k+1} h_k + b_{k+1} with h_k = σ(z_k) between affine forms (DeepPoly's relaxation: σ(z) ≤ s(z − l)
  with s = u/(u − l) and σ(z) ≥ αz, α ∈ {0, 1}, on an unstable unit with exact bounds l < 0 < u);
* δ_{k+1} = W1_{k+1}(h1_k − h2_k) + (W1_{k+1} − W2_{k+1}) h2_k + (b1 − b2)_{k+1}, with η = σ(z1) − σ(z2)
  between affine forms chosen per unit: η = δ, z1, −z2 or 0 when both units are stable; otherwise the tighter
  (by the concrete bound) of the forms of h1 − h2, of the chords of max(0, δ) and min(0, δ) over [dl, du] applied
  to δ's forms, and of the constant interval [σ(l1) − σ(u2), σ(u1) − σ(l2)].

The output layer's forms bound Δ = y1 − y2 on the box: max_i |Δ_i| ≤ max_i max(du_i, −dl_i).  Boxes are split on
the coordinate of largest "smear" (ReluVal's and ReluDiff's rule): an enclosure of |∂Δ_i/∂x_j| for the box's worst
output i (:func:`gradient_enclosure`) times the side's width.  The coefficients of Δ's forms, the earlier rule,
point at the side where the relaxation is loose rather than where Δ moves; on ACAS Xu property 1's box against a
float16 copy the smear rule reaches ε = 0.05 (normalised) with about 2,000 float boxes where the coefficient rule
was at 15× ε after 10,000.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relusym._deep.box_split import FloatBounds
from relusym._deep.witness import FloatNet

__all__ = [
    "FloatPair",
    "DiffBounds",
    "Tables",
    "float_diff_bounds",
    "gradient_enclosure",
    "propose_partition",
    "refine_partition",
]

_CHUNK = 1024  # boxes per vectorised pass
Tables = tuple[tuple[list[np.ndarray], list[np.ndarray]], tuple[list[np.ndarray], list[np.ndarray]]]


@dataclass
class DiffBounds:
    """Per box (rows): ``upper`` ≥ max_i |Δ_i| (in floats) and the coordinate ``split`` to bisect next."""

    upper: np.ndarray
    split: np.ndarray


class FloatPair:
    """Two networks' layers (float64 weights W1, W2 and biases) for the batched propagation; with ``nets`` (the
    two networks over the root box, :class:`relusym._deep.witness.FloatNet`) each box's pre-activation bounds are
    also taken from CROWN's back-substitution (:class:`relusym._deep.box_split.FloatBounds`), far tighter than
    the forward forms in the deeper layers."""

    def __init__(
        self,
        W1: list[np.ndarray],
        b1: list[np.ndarray],
        W2: list[np.ndarray],
        b2: list[np.ndarray],
        nets: tuple[FloatNet, FloatNet] | None = None,
    ) -> None:
        self.W1, self.b1, self.W2, self.b2 = W1, b1, W2, b2
        self.dW = [p - q for p, q in zip(W1, W2, strict=True)]
        self.db = [p - q for p, q in zip(b1, b2, strict=True)]
        self.nets = nets

    def crown(self, ulo: np.ndarray, uhi: np.ndarray) -> Tables | None:
        """CROWN's bounds (lower, upper per layer, every layer) of both networks on the boxes [ulo, uhi] of the
        root box's unit coordinates, or None without ``nets``."""
        if self.nets is None:
            return None
        last = len(self.W1) - 1
        F1 = FloatBounds.of(self.nets[0], ulo, uhi, last)
        F2 = FloatBounds.of(self.nets[1], ulo, uhi, last)
        return (F1.lower, F1.upper), (F2.lower, F2.upper)


def _mm(W: np.ndarray, Lg: np.ndarray, Ug: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of W·v for v between the stacked forms Lg ≤ v ≤ Ug (shape B × n × (m+1))."""
    Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
    B, n, c = Lg.shape
    Lt = Lg.transpose(1, 0, 2).reshape(n, B * c)
    Ut = Ug.transpose(1, 0, 2).reshape(n, B * c)
    lo = (Wp @ Lt + Wn @ Ut).reshape(-1, B, c).transpose(1, 0, 2)
    up = (Wp @ Ut + Wn @ Lt).reshape(-1, B, c).transpose(1, 0, 2)
    return lo, up


def _conc(F: np.ndarray, upper: bool) -> np.ndarray:
    """The max (or min) over t ∈ [−1, 1]^m of each form (last entry the constant)."""
    s = np.abs(F[..., :-1]).sum(axis=-1)
    return np.asarray(F[..., -1] + s if upper else F[..., -1] - s)


def _relu(L: np.ndarray, U: np.ndarray, lo: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forms between which σ(z) lies, for L ≤ z ≤ U with concrete bounds lo ≤ z ≤ up."""
    dead, act = up <= 0, lo >= 0
    unst = ~dead & ~act
    s = np.where(unst, up / np.where(unst, up - lo, 1.0), act.astype(np.float64))
    Hu = U * s[..., None]
    Hu[..., -1] -= np.where(unst, s * lo, 0.0)
    a = np.where(act | (unst & (up > -lo)), 1.0, 0.0)
    Hl = L * a[..., None]
    zero = np.zeros_like(L)
    cu = zero.copy()
    cu[..., -1] = np.maximum(up, 0.0)
    Hu, _ = _pick([(Hu, _conc(Hu, True)), (cu, np.maximum(up, 0.0))])
    Hl, _ = _pick([(Hl, -_conc(Hl, False)), (zero, np.zeros_like(up))])
    return Hl, Hu


def _pick(cands: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Per unit, the candidate form with the best concrete value (cands: (form, concrete value to minimise))."""
    F, v = cands[0]
    for G, w in cands[1:]:
        better = w < v - np.abs(v) * 2.0**-20 - 2.0**-40  # a later one only when clearly better
        F = np.where(better[..., None], G, F)
        v = np.where(better, w, v)
    return F, v


def _eta(
    st: tuple[np.ndarray, ...], z1: tuple[np.ndarray, ...], z2: tuple[np.ndarray, ...], d: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Forms between which η = σ(z1) − σ(z2) lies (each triple: lower form, upper form, lower, upper)."""
    H1l, H1u, H2l, H2u = st
    L1, U1, l1, u1 = z1
    L2, U2, l2, u2 = z2
    Ld, Ud, dl, du = d
    zero = np.zeros_like(L1)
    cu = np.maximum(u1, 0) - np.maximum(l2, 0)
    cl = np.maximum(l1, 0) - np.maximum(u2, 0)
    const_u, const_l = zero.copy(), zero.copy()
    const_u[..., -1], const_l[..., -1] = cu, cl
    # the chords of max(0, δ) (upper) and min(0, δ) (lower) over [dl, du]
    w = np.where(du > dl, du - dl, 1.0)
    su = np.clip(np.where(dl >= 0, 1.0, np.where(du <= 0, 0.0, du / w)), 0, 1)
    sl = np.clip(np.where(du <= 0, 1.0, np.where(dl >= 0, 0.0, -dl / w)), 0, 1)
    chord_u = Ud * su[..., None]
    chord_u[..., -1] -= np.where((dl < 0) & (du > 0), su * dl, 0.0)
    chord_l = Ld * sl[..., None]
    chord_l[..., -1] -= np.where((dl < 0) & (du > 0), sl * du, 0.0)
    diff_u, diff_l = H1u - H2l, H1l - H2u
    Fu, vu = _pick([(diff_u, _conc(diff_u, True)), (chord_u, _conc(chord_u, True)), (const_u, cu)])
    Fl, vl = _pick([(diff_l, -_conc(diff_l, False)), (chord_l, -_conc(chord_l, False)), (const_l, -cl)])
    a1, d1 = l1 >= 0, u1 <= 0
    a2, d2 = l2 >= 0, u2 <= 0
    exact = [
        (a1 & a2, Ld, Ud),
        (d1 & d2, zero, zero),
        (a1 & d2, L1, U1),
        (d1 & a2, -U2, -L2),
    ]
    for mask, fl, fu in exact:
        Fl = np.where(mask[..., None], fl, Fl)
        Fu = np.where(mask[..., None], fu, Fu)
    return Fl, Fu


def _concrete(
    L1: np.ndarray, U1: np.ndarray, L2: np.ndarray, U2: np.ndarray, tables: Tables | None, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Layer k's bounds of z1 and z2 on each box: the forms' extremes, cut by ``tables`` when given."""
    l1, u1 = _conc(L1, False), _conc(U1, True)
    l2, u2 = _conc(L2, False), _conc(U2, True)
    if tables is not None:
        (a1, b1), (a2, b2) = tables
        l1, u1 = np.maximum(l1, a1[k]), np.minimum(u1, b1[k])
        l2, u2 = np.maximum(l2, a2[k]), np.minimum(u2, b2[k])
    return l1, u1, l2, u2


def float_diff_bounds(
    P: FloatPair,
    lo: np.ndarray,
    hi: np.ndarray,
    tables: Tables | None = None,
    record: list[tuple[np.ndarray, ...]] | None = None,
) -> DiffBounds:
    """The symbolic-difference upper bound of max_i |Δ_i| on each box [lo_b, hi_b] (rows of lo, hi); ``tables``:
    bounds of every layer of both networks on each box (:meth:`FloatPair.crown`), intersected with the forms'.
    ``record``: a list that receives each hidden layer's bounds (l1, u1, l2, u2, dl, du) on each box."""
    B, m = lo.shape
    rec: list[tuple[np.ndarray, ...]] = []
    mid, r = (lo + hi) / 2, (hi - lo) / 2
    X = np.zeros((B, m, m + 1))
    X[:, np.arange(m), np.arange(m)] = r
    X[:, :, -1] = mid
    n_layers = len(P.W1)

    def first(W: np.ndarray, b: np.ndarray) -> np.ndarray:
        F = np.asarray(np.einsum("ij,bjk->bik", W, X))
        F[..., -1] += b
        return F

    L1 = U1 = first(P.W1[0], P.b1[0])
    L2 = U2 = first(P.W2[0], P.b2[0])
    Ld = Ud = first(P.dW[0], P.db[0])
    for k in range(1, n_layers):
        l1, u1, l2, u2 = _concrete(L1, U1, L2, U2, tables, k - 1)
        dl = np.maximum(_conc(Ld, False), l1 - u2)
        du = np.minimum(_conc(Ud, True), u1 - l2)
        rec.append((l1, u1, l2, u2, dl, du))
        H1l, H1u = _relu(L1, U1, l1, u1)
        H2l, H2u = _relu(L2, U2, l2, u2)
        El, Eu = _eta((H1l, H1u, H2l, H2u), (L1, U1, l1, u1), (L2, U2, l2, u2), (Ld, Ud, dl, du))
        a_l, a_u = _mm(P.W1[k], El, Eu)
        c_l, c_u = _mm(P.dW[k], H2l, H2u)
        Ld, Ud = a_l + c_l, a_u + c_u
        Ld[..., -1] += P.db[k]
        Ud[..., -1] += P.db[k]
        L1, U1 = _mm(P.W1[k], H1l, H1u)
        L1[..., -1] += P.b1[k]
        U1[..., -1] += P.b1[k]
        L2, U2 = _mm(P.W2[k], H2l, H2u)
        L2[..., -1] += P.b2[k]
        U2[..., -1] += P.b2[k]
    l1, u1, l2, u2 = _concrete(L1, U1, L2, U2, tables, n_layers - 1)
    dl = np.maximum(_conc(Ld, False), l1 - u2)
    du = np.minimum(_conc(Ud, True), u1 - l2)
    worst = np.maximum(du, -dl)
    if record is not None:
        record.extend(rec)
    gl, gu = gradient_enclosure(P, rec, np.argmax(worst, axis=1))
    smear = np.maximum(np.abs(gl), np.abs(gu)) * (hi - lo)
    return DiffBounds(np.max(worst, axis=1), np.argmax(smear, axis=1))


def gradient_enclosure(
    P: FloatPair, rec: list[tuple[np.ndarray, ...]], out: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per box b, an interval [gl_b, gu_b] (in floats) around every partial derivative of Δ_out[b] = y1 − y2 on the
    box: back-propagation of the output row through both networks, each hidden unit's slope 0 where it is dead on
    the box, 1 where active, [0, 1] where unstable (``rec``: each hidden layer's bounds (l1, u1, l2, u2, …) of
    :func:`float_diff_bounds`).  Only the split rule reads it (ReluVal's and ReluDiff's "smear": the largest
    |derivative| times the side), so it proves nothing."""
    enc = []
    for W, sign, at in ((P.W1, 1.0, 0), (P.W2, -1.0, 2)):
        gl = sign * W[-1][out]
        gu = gl.copy()
        for k in range(len(W) - 2, -1, -1):
            lo, up = rec[k][at], rec[k][at + 1]
            dead, unstable = up <= 0, (lo < 0) & (up > 0)
            gl = np.where(dead, 0.0, np.where(unstable, np.minimum(gl, 0.0), gl))
            gu = np.where(dead, 0.0, np.where(unstable, np.maximum(gu, 0.0), gu))
            Wp, Wn = np.maximum(W[k], 0.0), np.minimum(W[k], 0.0)
            gl, gu = gl @ Wp + gu @ Wn, gu @ Wp + gl @ Wn
        enc.append((gl, gu))
    return enc[0][0] + enc[1][0], enc[0][1] + enc[1][1]


Bounder = Callable[[FloatPair, np.ndarray, np.ndarray, "Tables | None"], DiffBounds]


def propose_partition(
    P: FloatPair,
    lo: np.ndarray,
    hi: np.ndarray,
    goal: float,
    cap: int,
    expired: Callable[[], bool],
    bounder: Bounder | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A partition of [0, 1]^m (boxes as rows of unit coordinates ulo, uhi, dyadic) of the box [lo, hi] into at most
    about ``cap`` boxes, splitting best-first (the boxes of largest float bound, up to a quarter of them a round)
    until every box's float bound is ≤ ``goal``, ``cap`` is reached or ``expired()``.  ``bounder``: the float
    bound of a batch of boxes (default :func:`float_diff_bounds`)."""
    m = len(lo)
    ulo, uhi, _ = refine_partition(P, lo, hi, np.zeros((1, m)), np.ones((1, m)), goal, cap, expired, bounder)
    return ulo, uhi


def refine_partition(
    P: FloatPair,
    lo: np.ndarray,
    hi: np.ndarray,
    ulo: np.ndarray,
    uhi: np.ndarray,
    goal: float,
    cap: int,
    expired: Callable[[], bool],
    bounder: Bounder | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`propose_partition` started from the boxes (ulo, uhi) (unit coordinates of [lo, hi]) instead of the
    whole box: a partition of their union into at most about ``cap`` boxes, each inside one of them; returns the
    boxes and, for each, the index of the starting box it lies in (the boxes sorted by it)."""
    parent = np.arange(len(ulo))
    ub, ax = _eval(P, lo, hi, ulo, uhi, bounder)
    while not expired():
        open_ = np.nonzero(ub > goal)[0]
        room = cap - len(ulo)
        if len(open_) == 0 or room <= 0:
            break
        take = open_[np.argsort(-ub[open_])][: max(1, min(room, len(open_), max(8, len(ulo) // 4)))]
        rows = np.arange(len(take))
        s = _axis(ax[take], uhi[take] - ulo[take])
        cut = (ulo[take, s] + uhi[take, s]) / 2
        a_hi, b_lo = uhi[take].copy(), ulo[take].copy()
        a_hi[rows, s], b_lo[rows, s] = cut, cut
        n_lo = np.concatenate([ulo[take], b_lo])
        n_hi = np.concatenate([a_hi, uhi[take]])
        n_ub, n_ax = _eval(P, lo, hi, n_lo, n_hi, bounder)
        keep = np.ones(len(ulo), dtype=bool)
        keep[take] = False
        ulo, uhi = np.concatenate([ulo[keep], n_lo]), np.concatenate([uhi[keep], n_hi])
        ub, ax = np.concatenate([ub[keep], n_ub]), np.concatenate([ax[keep], n_ax])
        parent = np.concatenate([parent[keep], parent[take], parent[take]])
    order = np.argsort(parent, kind="stable")
    return ulo[order], uhi[order], parent[order]


def _axis(proposed: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """The side to bisect: the proposed one (the largest smear), unless that side is already a point (a box whose
    smear is 0 on every side, as where Δ does not depend on x), then the widest.  An earlier guard that also
    overrode a proposed side more than 8 times narrower than the widest cost a factor of 50 on ACAS Xu property
    1's box: the sides that Δ hardly depends on were split for nothing."""
    rows = np.arange(len(proposed))
    widest = np.argmax(widths, axis=1)
    return np.where(widths[rows, proposed] > 0, proposed, widest)


def _eval(
    P: FloatPair, lo: np.ndarray, hi: np.ndarray, ulo: np.ndarray, uhi: np.ndarray, bounder: Bounder | None = None
) -> tuple[np.ndarray, np.ndarray]:
    ubs, axs = [], []
    for i in range(0, len(ulo), _CHUNK):
        a, b = ulo[i : i + _CHUNK], uhi[i : i + _CHUNK]
        d = (bounder or float_diff_bounds)(P, lo + (hi - lo) * a, lo + (hi - lo) * b, P.crown(a, b))
        ubs.append(d.upper)
        axs.append(d.split)
    return np.concatenate(ubs), np.concatenate(axs)
