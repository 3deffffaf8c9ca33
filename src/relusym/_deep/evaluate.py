"""Exact evaluation of deep networks at rational points, in Python-int arithmetic.

Each layer is written once as an integer matrix times one positive rational (float arrays over one power of
two), so a point costs one integer matrix-vector product per layer instead of a Fraction per weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from relusym._exact.mantissas import integer_matrix
from relusym._exact.numbers import common_denominator, to_fraction

__all__ = ["ExactEvaluator"]


class ExactEvaluator:
    """x ↦ W_L σ(… σ(W_1 x + b_1) …) + b_L at rational points, exactly; built once per network."""

    def __init__(self, weights: Sequence[np.ndarray], biases: Sequence[np.ndarray]) -> None:
        self._layers: list[tuple[np.ndarray, Fraction, list[Fraction]]] = []
        for W, b in zip(weights, biases, strict=True):
            Wi, scale = integer_matrix(W)
            self._layers.append((Wi, scale, [to_fraction(v) for v in b.tolist()]))

    def __call__(self, x: Sequence[Fraction]) -> tuple[Fraction, ...]:
        h = list(x)
        last = len(self._layers) - 1
        for ell, (Wi, scale, bias) in enumerate(self._layers):
            if Wi.shape[1] == 0 or not any(h):
                z = list(bias)
            else:
                den = common_denominator(h)
                hi = np.array([q.numerator * (den // q.denominator) for q in h], dtype=object)
                dots = Wi.dot(hi).tolist()
                f = scale / den
                z = [bi + f * int(t) for t, bi in zip(dots, bias, strict=True)]
            h = z if ell == last else [v if v > 0 else Fraction(0) for v in z]
        return tuple(h)
