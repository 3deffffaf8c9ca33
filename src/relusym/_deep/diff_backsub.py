"""Difference bounds by back-substitution, in floats: a proposer and a measurement, not yet a proof (issue 22).

The forward symbolic intervals of :mod:`relusym._deep.box_diff` carry a lower and an upper affine form of each
δ_k = z1_k − z2_k; through W1 their gap grows by about ‖W1‖ a layer even where every unit is stable.  Here the
bound of each δ_k is found as CROWN finds a pre-activation's: the target c·δ_k is rewritten layer by layer in the
state (δ_j, z2_j), which is exact where both units are stable (η = σ(z1) − σ(z2) is δ, 0, δ + z2 or −z2) and
otherwise uses linear bounds of η in (δ, z2) — the chords of max(0, δ) and min(0, δ) over [dl, du] or the
constant interval [σ(l1) − σ(u2), σ(u1) − σ(l2)] — and DeepPoly's bounds of h2 = σ(z2) in z2:

    δ_k = W1_k η_{k−1} + (W1_k − W2_k) h2_{k−1} + Δb_k,   z2_k = W2_k h2_{k−1} + b2_k,
    δ_0 = (W1_0 − W2_0) x + Δb_0,                          z2_0 = W2_0 x + b2_0.

Each layer's back-substituted bounds cut [dl, du] before the next layer's relaxation.  Measured on ACAS Xu 1_1
against its float16 copy (``benchmarks/bench_reludiff.py --float-study``) it gives bounds 4 to 8 times below the
forward forms' on the same boxes, at 2 to 3 ms a box; making it a proof needs its exact twin (the relaxations'
slopes rounded up as in :mod:`relusym._deep.box_diff_exact`, the coefficient rows in integers).
"""

from __future__ import annotations

import numpy as np

from relusym._deep.box_diff import DiffBounds, FloatPair, Tables, float_diff_bounds

__all__ = ["backsub_diff_bounds"]

Relax = tuple[np.ndarray, ...]


def _relax(bounds: tuple[np.ndarray, ...]) -> Relax:
    """Per unit: η ≤ ud·δ + uz·z2 + uc, η ≥ ld·δ + lz·z2 + lc, σ(z2) ≤ hu·z2 + huc, σ(z2) ≥ hl·z2."""
    l1, u1, l2, u2, dl, du = bounds
    a1, d1, a2, d2 = l1 >= 0, u1 <= 0, l2 >= 0, u2 <= 0
    cross = (dl < 0) & (du > 0)
    w = np.where(cross, du - dl, 1.0)
    ud = np.where(dl >= 0, 1.0, np.where(du <= 0, 0.0, du / w))
    ld = np.where(du <= 0, 1.0, np.where(dl >= 0, 0.0, -dl / w))
    uc, lc = np.where(cross, -ud * dl, 0.0), np.where(cross, -ld * du, 0.0)
    cu = np.maximum(u1, 0) - np.maximum(l2, 0)
    cl = np.maximum(l1, 0) - np.maximum(u2, 0)
    use_u, use_l = cu < np.maximum(du, 0), cl > np.minimum(dl, 0)  # the constant bound where it is tighter
    ud, uc = np.where(use_u, 0.0, ud), np.where(use_u, cu, uc)
    ld, lc = np.where(use_l, 0.0, ld), np.where(use_l, cl, lc)
    uz, lz = np.zeros_like(ud), np.zeros_like(ld)
    for mask, dd, zz in ((a1 & a2, 1.0, 0.0), (d1 & d2, 0.0, 0.0), (a1 & d2, 1.0, 1.0), (d1 & a2, 0.0, -1.0)):
        ud, ld = np.where(mask, dd, ud), np.where(mask, dd, ld)
        uz, lz = np.where(mask, zz, uz), np.where(mask, zz, lz)
        uc, lc = np.where(mask, 0.0, uc), np.where(mask, 0.0, lc)
    unst = ~a2 & ~d2
    hu = np.where(unst, u2 / np.where(unst, u2 - l2, 1.0), a2.astype(np.float64))
    huc = np.where(unst, -hu * l2, 0.0)
    hl = np.where(a2 | (unst & (u2 > -l2)), 1.0, 0.0)
    return ud, uz, uc, ld, lz, lc, hu, huc, hl


def _bound(P: FloatPair, lo: np.ndarray, hi: np.ndarray, rel: list[Relax], K: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds of +δ_K and of −δ_K on each box (B × n_K each), by back-substitution through ``rel``
    (the relaxations of layers 0 … K − 1)."""
    B = len(lo)
    mid, r = (lo + hi) / 2, (hi - lo) / 2
    out = []
    for sgn in (1.0, -1.0):
        A = np.broadcast_to(sgn * P.W1[K], (B, *P.W1[K].shape)).copy()  # the coefficients of η_{K−1}
        H = np.broadcast_to(sgn * P.dW[K], (B, *P.dW[K].shape)).copy()  # and of h2_{K−1}
        const = np.broadcast_to(sgn * P.db[K], (B, P.W1[K].shape[0])).copy()
        for k in range(K - 1, -1, -1):
            ud, uz, uc, ld, lz, lc, hu, huc, hl = (v[:, None, :] for v in rel[k])
            pos, hpos = A > 0, H > 0
            cd = np.where(pos, A * ud, A * ld)  # now on δ_k
            cz = np.where(pos, A * uz, A * lz) + np.where(hpos, H * hu, H * hl)  # and on z2_k
            const = const + np.where(pos, A * uc, A * lc).sum(axis=2) + np.where(hpos, H * huc, 0.0).sum(axis=2)
            const = const + cd @ P.db[k] + cz @ P.b2[k]
            if k == 0:
                G = cd @ P.dW[0] + cz @ P.W2[0]
                const = const + np.einsum("bij,bj->bi", G, mid) + np.einsum("bij,bj->bi", np.abs(G), r)
            else:
                A, H = cd @ P.W1[k], cd @ P.dW[k] + cz @ P.W2[k]
        out.append(const)
    return out[0], out[1]


def backsub_diff_bounds(P: FloatPair, lo: np.ndarray, hi: np.ndarray, tables: Tables | None = None) -> DiffBounds:
    """A float upper bound of max_i |Δ_i| on each box [lo_b, hi_b]: the forward pass's bounds of every layer,
    each δ_k's then cut by back-substitution (layer after layer), and the output's by back-substitution; the
    side to split is the forward pass's (a :class:`relusym._deep.box_diff.DiffBounds`, for ``propose_partition``)."""
    record: list[tuple[np.ndarray, ...]] = []
    d = float_diff_bounds(P, lo, hi, tables, record)
    fwd = d.upper
    rel: list[Relax] = [_relax(record[0])]
    for k in range(1, len(record) + 1):
        up, down = _bound(P, lo, hi, rel, k)
        if k == len(record):
            return DiffBounds(np.minimum(fwd, np.maximum(up, down).max(axis=1)), d.split)
        l1, u1, l2, u2, dl, du = record[k]
        rel.append(_relax((l1, u1, l2, u2, np.maximum(dl, -down), np.minimum(du, up))))
    return d
