"""Two constructions on networks around the normal form: a network realizing a given normal form (``realize``),
and the flip flip_T(θ) of docs/math/fibres.md (O4)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._exact.dtypes import exactly_in_dtype
from relusym._exact.mantissas import exact_matmul
from relusym._exact.numbers import fractions_of, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["realize", "flip"]


def realize(d: dict[str, Any]) -> Network:
    """A network realizing the normal form ``d`` (as produced by ``NormalForm.to_dict``): one positively
    oriented neuron per kink and a cancelling pair σ(x_j) − σ(−x_j) = x_j per nonzero column of M."""
    try:
        m, k = int(d["m"]), int(d["k"])
        kinks = d["kinks"]
        M = [[to_fraction(x) for x in row] for row in d["M"]]
        e = [to_fraction(x) for x in d["e"]]
    except (KeyError, TypeError) as exc:
        raise InvalidNetworkError(f"not a normal-form object: missing or malformed {exc}") from None
    V_cols: list[list[Fraction]] = []
    A_rows: list[list[Fraction]] = []
    b: list[Fraction] = []
    for item in kinks:
        u = [to_fraction(x) for x in item["hyperplane"]]
        kap = [to_fraction(x) for x in item["kink"]]
        if len(u) != m + 1 or len(kap) != k:
            raise InvalidNetworkError("a kink entry has the wrong length for m and k")
        V_cols.append(kap)
        A_rows.append(u[:m])
        b.append(u[m])
    for j in range(m):
        col = [M[r][j] for r in range(k)]
        if any(col):
            unit = [Fraction(int(i == j)) for i in range(m)]
            V_cols += [col, [-x for x in col]]
            A_rows += [unit, [-x for x in unit]]
            b += [Fraction(0), Fraction(0)]
    V = [[V_cols[i][r] for i in range(len(V_cols))] for r in range(k)]
    return Network(V, A_rows, b, e, m=m)


def flip(net: Network, T: Any) -> Network:
    """flip_T(θ): (v_i, a_i, b_i) ↦ (v_i, −a_i, −b_i) for i ∈ T and c ↦ c + Σ_T b_i v_i (docs/math/fibres.md, O4).

    It preserves ρ(θ) iff Σ_T v_i a_iᵀ = 0 (Proposition 14)."""
    T = sorted({int(i) for i in T})
    for i in T:
        if not 0 <= i < net.n:
            raise InvalidNetworkError(f"flip index {i} is out of range for n = {net.n}")
    idx = np.asarray(T, dtype=np.int64)
    if net.is_float:
        A = np.array(net.A, copy=True)
        b = np.array(net.b, copy=True)
        A[idx] = -A[idx]
        b[idx] = -b[idx]
        dc = exact_matmul(net.V[:, idx], net.b[idx][:, None])[:, 0] if idx.size else np.zeros(net.k, dtype=object)
        c_new = [Fraction(x) + Fraction(y) for x, y in zip(net.c.tolist(), dc.tolist(), strict=True)]
        fits = exactly_in_dtype(c_new, net.c.dtype)
        c_arr: Any = c_new if fits is None else fits  # a bias the float dtype cannot hold is kept exact
        return Network(net.V, A, b, c_arr, m=net.m)
    A = fractions_of(net.A).copy()
    b = fractions_of(net.b).copy()
    c = list(fractions_of(net.c).tolist())
    for i in T:
        for r in range(net.k):
            c[r] += to_fraction(net.b[i]) * to_fraction(net.V[r, i])
        A[i] = -A[i]
        b[i] = -b[i]
    return Network(net.V, A, b, c, m=net.m)
