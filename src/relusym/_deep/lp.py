"""Exact bounds of hidden units over a box from linear programs: the triangle relaxation solved by HiGHS, each
bound proved by an exact dual certificate (issue 22).

The triangle relaxation of z_T = W_T h_{T−1} + b_T over the box, with bounds l_k ≤ z_k ≤ u_k on the earlier
layers, has the variables x, z_k, h_k (k < T), the equalities z_k = W_k h_{k−1} + b_k (h_{−1} = x) and, per unit,
the convex hull of {(z, σ(z)) : l ≤ z ≤ u}.  Its dual, written as a Lagrangian with free multipliers μ_k on the
equalities (:func:`relusym._deep.bounds.dual_bounds`), is

    sign·z_T ≤ B(μ) = sign·b_T + Σ_k ( μ_k·b_k + Σ_j max_{z∈[l_kj, u_kj]} (λ_kj σ(z) − μ_kj z) )
                      + Σ_j max(λ_−1,j lo_j, λ_−1,j hi_j),        λ_{k−1} = μ_k W_k,  λ_{T−1} = sign·W_T[unit].

Every real μ is dual feasible (the μ are free and each inner maximum is over a bounded interval, attained at l,
u or 0), so B(μ) is a valid bound for *any* μ; at the LP's optimal μ it equals the LP's optimum.  HiGHS
proposes μ (the equality marginals), which are rounded to dyadic rationals (:class:`DualProof` keeps the
integers and the shifts) and B(μ) is evaluated in exact arithmetic: the solver's word is never the proof.

The proof of a bound rests on the bounds of the earlier layers, proved on the same box by
:func:`relusym._deep.bounds.certified_bounds` (which the checker recomputes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._deep.bounds import ExactLayers, dual_bounds

__all__ = ["DualProof", "FloatLP", "prove", "check_proof"]

_MU_BITS = 40


@dataclass(frozen=True)
class DualProof:
    """sign·z[layer][unit] ≤ ``value`` on the box, given the bounds of the earlier layers: μ_k = mus[k][i] /
    2^shifts[k]."""

    layer: int
    unit: int
    sign: int
    mus: tuple[tuple[int, ...], ...]
    shifts: tuple[int, ...]
    value: Fraction

    def multipliers(self) -> list[list[Fraction]]:
        """μ_k as exact rationals."""
        return [[Fraction(v) / Fraction(2) ** s for v in row] for row, s in zip(self.mus, self.shifts, strict=True)]


def _quantized(mus: Sequence[np.ndarray]) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    rows, shifts = [], []
    for mu in mus:
        mu = np.nan_to_num(np.asarray(mu, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        big = float(np.max(np.abs(mu))) if mu.size else 0.0
        s = _MU_BITS - math.frexp(big)[1] if big else 0
        rows.append(tuple(int(v) for v in np.rint(np.ldexp(mu, s)).tolist()))
        shifts.append(s)
    return tuple(rows), tuple(shifts)


Bounds = Sequence[Sequence[Fraction]]


def _evaluate(
    layers: ExactLayers,
    layer: int,
    unit: int,
    sign: int,
    mus: Sequence[Sequence[int]],
    shifts: Sequence[int],
    box: tuple[Sequence[Fraction], Sequence[Fraction]],
    lower: Bounds,
    upper: Bounds,
) -> Fraction:
    qm = [(np.array([list(r)], dtype=object).reshape(1, len(r)), s) for r, s in zip(mus, shifts, strict=True)]
    return dual_bounds(layers, layer, [sign], [unit], qm, box[0], box[1], lower[:layer], upper[:layer])[0]


def prove(
    layers: ExactLayers,
    layer: int,
    unit: int,
    sign: int,
    mus: Sequence[np.ndarray],
    box: tuple[Sequence[Fraction], Sequence[Fraction]],
    lower: Bounds,
    upper: Bounds,
) -> DualProof:
    """The exact dual proof for float multipliers μ on proved bounds ``lower``/``upper`` of the earlier layers."""
    q, s = _quantized(mus)
    return DualProof(layer, unit, sign, q, s, _evaluate(layers, layer, unit, sign, q, s, box, lower, upper))


def check_proof(
    layers: ExactLayers,
    proof: DualProof,
    box: tuple[Sequence[Fraction], Sequence[Fraction]],
    lower: Bounds,
    upper: Bounds,
) -> bool:
    """Recompute the proof's bound exactly from proved bounds of the earlier layers (the caller proves them)."""
    T = proof.layer
    if not (0 < T <= layers.hidden and 0 <= proof.unit < layers.widths[T + 1] and proof.sign in (1, -1)):
        return False
    if len(proof.mus) != T or len(proof.shifts) != T or len(lower) < T or len(upper) < T:
        return False
    if any(len(r) != layers.widths[k + 1] for k, r in enumerate(proof.mus)):
        return False
    return _evaluate(layers, T, proof.unit, proof.sign, proof.mus, proof.shifts, box, lower, upper) == proof.value


# ----------------------------------------------------------------------------------------------------------
# the float linear program (a proposal: HiGHS chooses μ)


class FloatLP:
    """The triangle relaxation in floats, the input box mapped to [0, 1]^m (μ does not depend on it)."""

    def __init__(self, layers: ExactLayers, lo: Sequence[Fraction], hi: Sequence[Fraction]) -> None:
        self.layers = layers
        flo = np.array([float(v) for v in lo])
        fhi = np.array([float(v) for v in hi])
        self.flo, self.fhi = flo, fhi
        self.W = [w.copy() for w in layers.Wf]
        self.b = [b.copy() for b in layers.bf]
        self.b[0] = self.b[0] + self.W[0] @ flo
        self.W[0] = self.W[0] * (fhi - flo)[None, :]

    def solve(
        self,
        T: int,
        unit: int,
        sign: int,
        lower: Sequence[np.ndarray],
        upper: Sequence[np.ndarray],
        elastic: float = 0.0,
    ) -> tuple[float, list[np.ndarray], np.ndarray] | None:
        """max sign·z[T][unit] over the relaxation: (the float optimum, μ_k for k < T, the optimal input x).

        ``elastic`` > 0: each equality z_k − W_k h_{k−1} = b_k gets a slack of cost ``elastic`` per unit, so the
        LP is feasible and |μ| ≤ ``elastic``; an infeasible relaxation (an empty phase leaf) then has a very
        negative optimum, and its μ, evaluated exactly, prove it (a Farkas ray scaled into the Lagrangian)."""
        return self.solve_many(T, [(unit, sign)], lower, upper, elastic)[0]

    def solve_many(
        self,
        T: int,
        targets: Sequence[tuple[int, int]],
        lower: Sequence[np.ndarray],
        upper: Sequence[np.ndarray],
        elastic: float = 0.0,
    ) -> list[tuple[float, list[np.ndarray], np.ndarray] | None]:
        """:meth:`solve` for each (unit, sign) of ``targets`` on one relaxation (built once)."""
        from scipy.optimize import linprog
        from scipy.sparse import coo_matrix, csr_matrix

        m = self.layers.m
        widths = self.layers.widths[1 : T + 1]
        lw = [np.array(v, dtype=np.float64) for v in lower[:T]]
        up = [np.array(v, dtype=np.float64) for v in upper[:T]]
        oz, oh, off = [], [], m
        for n in widths:
            oz.append(off)
            oh.append(off + n)
            off += 2 * n
        nv = off
        nx = nv
        bl = np.zeros(nv)
        bu = np.ones(nv)
        er, ec, ev, beq = [], [], [], []
        ir, ic, iv, bub = [], [], [], []
        row = 0
        irow = 0
        for k, n in enumerate(widths):
            l, u = lw[k], up[k]
            if np.any(l > u):
                return [None] * len(targets)
            bl[oz[k] : oz[k] + n], bu[oz[k] : oz[k] + n] = l, u
            # z_k − W_k h_{k−1} = b_k
            W = self.W[k]
            src = 0 if k == 0 else oh[k - 1]
            rr, cc = np.nonzero(W)
            er += [row + np.arange(n), row + rr]
            ec += [oz[k] + np.arange(n), src + cc]
            ev += [np.ones(n), -W[rr, cc]]
            beq.append(self.b[k])
            row += n
            dead, act = u <= 0, l >= 0
            cross = ~dead & ~act
            hl = np.where(act, l, 0.0)
            hu = np.where(dead, 0.0, u)
            bl[oh[k] : oh[k] + n], bu[oh[k] : oh[k] + n] = hl, hu
            a = np.nonzero(act)[0]
            er += [row + np.arange(len(a)), row + np.arange(len(a))]
            ec += [oh[k] + a, oz[k] + a]
            ev += [np.ones(len(a)), -np.ones(len(a))]
            beq.append(np.zeros(len(a)))
            row += len(a)
            x = np.nonzero(cross)[0]
            s = u[x] / (u[x] - l[x])
            t = len(x)
            # z − h ≤ 0 and h − s z ≤ −s l
            ir += [irow + np.arange(t), irow + np.arange(t), irow + t + np.arange(t), irow + t + np.arange(t)]
            ic += [oz[k] + x, oh[k] + x, oh[k] + x, oz[k] + x]
            iv += [np.ones(t), -np.ones(t), np.ones(t), -s]
            bub += [np.zeros(t), -s * l[x]]
            irow += 2 * t
        if elastic > 0:
            # slack columns s⁺, s⁻ ≥ 0 on the n rows z_k − W_k h_{k−1} = b_k of each layer (not the rows h = z)
            zrows, r0 = [], 0
            for k, n in enumerate(widths):
                zrows.append(r0 + np.arange(n))
                r0 += n + int(np.count_nonzero(lw[k] >= 0))
            zr = np.concatenate(zrows)
            ns = len(zr)
            er += [zr, zr]
            ec += [nv + np.arange(ns), nv + ns + np.arange(ns)]
            ev += [np.ones(ns), -np.ones(ns)]
            bl = np.concatenate([bl, np.zeros(2 * ns)])
            bu = np.concatenate([bu, np.full(2 * ns, np.inf)])
            nv += 2 * ns
        A_eq = csr_matrix(coo_matrix((np.concatenate(ev), (np.concatenate(er), np.concatenate(ec))), (row, nv)))
        b_eq = np.concatenate(beq)
        kw: dict[str, Any] = {}
        if irow:
            kw["A_ub"] = csr_matrix(
                coo_matrix((np.concatenate(iv), (np.concatenate(ir), np.concatenate(ic))), (irow, nv))
            )
            kw["b_ub"] = np.concatenate(bub)
        out: list[tuple[float, list[np.ndarray], np.ndarray] | None] = []
        bounds = np.stack([bl, bu], axis=1)
        for unit, sign in targets:
            c = np.zeros(nv)
            c[oh[T - 1] : oh[T - 1] + widths[T - 1]] = -sign * self.W[T][unit]
            c[nx:] = float(elastic)
            res = linprog(c, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs", **kw)
            if res.status != 0:
                out.append(None)
                continue
            marg = -np.asarray(res.eqlin.marginals)
            mus = self._mus(marg, widths, lw)
            x = self.flo + (self.fhi - self.flo) * res.x[:m]
            out.append((float(-res.fun + sign * self.b[T][unit]), mus, x))
        return out

    @staticmethod
    def _mus(marg: np.ndarray, widths: Sequence[int], lw: Sequence[np.ndarray]) -> list[np.ndarray]:
        out, r0 = [], 0
        for k, n in enumerate(widths):
            out.append(marg[r0 : r0 + n].copy())
            r0 += n + int(np.count_nonzero(lw[k] >= 0))  # the active units' rows h = z follow each layer's
        return out
