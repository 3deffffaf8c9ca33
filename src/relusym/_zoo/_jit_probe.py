"""The probe values of the zoo's near-duplicate filter (:func:`relusym._zoo._summary.probe_stack`), compiled by
numba: each network's values at the probe points and its scale quantities, in float64, network by network, with
nothing but the weights read from memory.  Sums in any order (``fastmath`` reassociation): their rounding, about
(n + m)·2^-53 of the magnitudes, is far inside the slack of the near-duplicate radius
(:func:`relusym._zoo._near.near_pairs`), whose candidates are then decided exactly.

Imported only by :func:`relusym._zoo._summary.probe_kernel`, when numba is importable (``relusym[fast]``)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = ["probe_values"]

_FAST = {"reassoc", "contract", "arcp"}  # sums in any order; no assumption about inf or NaN


@numba.njit(cache=True, nogil=True, inline="always")
def _hidden_blas(A: Any, i: int, a: Any, an2: Any, bb: Any, X: Any, H: Any) -> None:
    """H[p, j] = relu(a_j·x_p + b_j) of network i by one BLAS product (A's rows copied into ``a`` in float64,
    their squared norms summed into an2 on the way)."""
    n, m = a.shape
    for j in range(n):
        s = 0.0
        for ell in range(m):
            x = np.float64(A[i, j, ell])
            a[j, ell] = x
            s += x * x
        an2[j] = s
    np.dot(X, a.T, H)
    for p in range(H.shape[0]):
        for j in range(n):
            H[p, j] = max(H[p, j] + bb[j], 0.0)


@numba.njit(cache=True, nogil=True, inline="always")
def _hidden_loops(A: Any, i: int, aT: Any, an2: Any, bb: Any, X: Any, H: Any) -> None:
    """:func:`_hidden_blas` by loops along the neurons (vector lanes; A transposed into aT): faster for small
    networks."""
    m, n = aT.shape
    for j in range(n):
        an2[j] = 0.0
    for ell in range(m):
        for j in range(n):
            x = np.float64(A[i, j, ell])
            aT[ell, j] = x
            an2[j] += x * x
    for p in range(X.shape[0]):
        hp = H[p]
        for j in range(n):
            hp[j] = bb[j]
        for ell in range(m):
            xp = X[p, ell]
            for j in range(n):
                hp[j] += xp * aT[ell, j]
        for j in range(n):
            hp[j] = max(hp[j], 0.0)


@numba.njit(cache=True, nogil=True, inline="always")
def _scales(an2: Any, bb: Any, vn2: Any, cn2: float, nd: Any, i: int) -> None:
    """nd[i] = (T = Σ‖v_j‖‖(a_j, b_j)‖, its largest term, ‖c‖, n, max ‖(a_j, b_j)‖/‖a_j‖ over a_j ≠ 0)."""
    tsum = 0.0
    tmax = 0.0
    wmax = 0.0
    n = an2.size
    for j in range(n):
        hn = np.sqrt(an2[j] + bb[j] * bb[j])  # ‖(a_j, b_j)‖
        an = np.sqrt(an2[j])
        term = np.sqrt(vn2[j]) * hn
        tsum += term
        tmax = max(tmax, term)
        wmax = max(wmax, hn / an if an > 0.0 else 0.0)
    nd[i, 0] = tsum
    nd[i, 1] = tmax
    nd[i, 2] = np.sqrt(cn2)
    nd[i, 3] = float(n)
    nd[i, 4] = wmax


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def probe_values(V: Any, A: Any, b: Any, c: Any, X: Any, vals: Any, nd: Any, blas: bool) -> None:
    """``vals`` (B×(P·k): network i's values at the probe points X, probe-major) and ``nd`` (B×5: its scale
    quantities, :func:`_scales`) of the stack (V, A, b, c) (float32 or float64, one dtype): the hidden layer's
    values by one BLAS product per network with ``blas`` (the larger shapes,
    :func:`relusym._zoo._summary._blas_shape`), else by loops."""
    B, n, m = A.shape
    k = V.shape[1]
    P = X.shape[0]
    a = np.empty((n, m) if blas else (m, n))
    H = np.empty((P, n))
    an2 = np.empty(n)
    bb = np.empty(n)
    vn2 = np.empty(n)
    for i in range(B):
        for j in range(n):
            vn2[j] = 0.0
            bb[j] = b[i, j]
        if blas:
            _hidden_blas(A, i, a, an2, bb, X, H)
        else:
            _hidden_loops(A, i, a, an2, bb, X, H)
        for p in range(P):
            for q in range(k):
                s = 0.0
                for j in range(n):
                    s += np.float64(V[i, q, j]) * H[p, j]
                vals[i, p * k + q] = s + np.float64(c[i, q])
        cn2 = 0.0
        for q in range(k):
            cq = np.float64(c[i, q])
            cn2 += cq * cq
            for j in range(n):
                v = np.float64(V[i, q, j])
                vn2[j] += v * v
        _scales(an2, bb, vn2, cn2, nd, i)
