"""Deep ReLU networks x ↦ W_L σ(… σ(W_1 x + b_1) …) + b_L: the value type (docs/math/deep.md).

An :class:`MLP` holds L affine layers (W_ℓ, b_ℓ) in torch layout (W_ℓ is n_ℓ × n_{ℓ−1}), with a ReLU after every
layer but the last.  Entries are exact like a :class:`relusym.Network`'s: float arrays stay read-only float arrays
(read at their exact binary value), integers, Fractions and decimal strings become exact rationals.  An MLP with
one hidden layer and a ``Network`` are the same thing and convert both ways.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.document import check_schema
from relusym._core.network import Network
from relusym._deep.evaluate import ExactEvaluator
from relusym._exact.numbers import (
    as_exact_array,
    as_float64,
    as_rational_vector,
    fraction_str,
    is_float_array,
    same_values,
    to_fraction,
)
from relusym.errors import InvalidNetworkError

__all__ = ["MLP", "as_mlp"]


class MLP:
    """A deep (or shallow) ReLU network given by its affine layers, exactly.

    ``weights`` is a sequence of L ≥ 1 matrices, W_ℓ of shape n_ℓ × n_{ℓ−1} (torch layout: ``Linear.weight``),
    ``biases`` a sequence of L vectors (``None`` for zeros, as a whole or per layer).  The network computes
    x ↦ W_L σ(… σ(W_1 x + b_1) …) + b_L with σ = ReLU after every layer but the last.

    >>> net = MLP([[[1], [-1]], [[1, 1]], [[2]]], [[0, 0], [-1], [0]])
    >>> net.widths, net.depth
    ((1, 2, 1, 1), 2)
    >>> net([3])                      # 2·σ(σ(3) + σ(−3) − 1) = 4
    (Fraction(4, 1),)
    """

    __slots__ = ("weights", "biases", "_evaluator")

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    _evaluator: ExactEvaluator

    def __init__(self, weights: Sequence[Any], biases: Sequence[Any] | None = None) -> None:
        try:
            ws = list(weights)
        except TypeError:
            raise InvalidNetworkError("weights must be a sequence of matrices, one per affine layer") from None
        if not ws:
            raise InvalidNetworkError("an MLP needs at least one affine layer (weights is empty)")
        if biases is None:
            bs: list[Any] = [None] * len(ws)
        else:
            try:
                bs = list(biases)
            except TypeError:
                raise InvalidNetworkError("biases must be a sequence of vectors, one per affine layer") from None
            if len(bs) != len(ws):
                raise InvalidNetworkError(f"{len(ws)} weight matrices but {len(bs)} bias vectors")
        W_out: list[np.ndarray] = []
        b_out: list[np.ndarray] = []
        prev: int | None = None
        for ell, (W, b) in enumerate(zip(ws, bs, strict=True), start=1):
            Wa = as_exact_array(W, f"weights[{ell - 1}]", 2)
            rows, cols = Wa.shape
            if prev is not None and cols != prev:
                raise InvalidNetworkError(
                    f"weights[{ell - 1}] has shape {Wa.shape} but layer {ell - 1} has {prev} outputs "
                    f"(W_{ell} must be n_{ell} × n_{ell - 1} = ? × {prev})"
                )
            if ell == 1 and cols == 0:
                raise InvalidNetworkError("m = 0: a network needs at least one input (weights[0] has no columns)")
            if b is None:
                ba = as_exact_array(np.zeros(rows, dtype=Wa.dtype if is_float_array(Wa) else np.float64), "b", 1)
            else:
                ba = as_exact_array(b, f"biases[{ell - 1}]", 1)
            if ba.shape != (rows,):
                raise InvalidNetworkError(
                    f"biases[{ell - 1}] must have {rows} entries (one per row of weights[{ell - 1}]), "
                    f"got shape {ba.shape}"
                )
            W_out.append(Wa)
            b_out.append(ba)
            prev = rows
        if W_out[-1].shape[0] == 0:
            raise InvalidNetworkError("k = 0: a network needs at least one output (the last layer has no rows)")
        object.__setattr__(self, "weights", tuple(W_out))
        object.__setattr__(self, "biases", tuple(b_out))

    # -- immutability ----------------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("MLP is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (MLP, (self.weights, self.biases), None)

    # -- shape ----------------------------------------------------------------------------------------------
    @property
    def widths(self) -> tuple[int, ...]:
        """(m, n_1, …, n_{L−1}, k): the input size, the hidden widths and the output size."""
        return (int(self.weights[0].shape[1]),) + tuple(int(W.shape[0]) for W in self.weights)

    @property
    def depth(self) -> int:
        """The number of hidden layers, L − 1."""
        return len(self.weights) - 1

    @property
    def m(self) -> int:
        """Number of inputs."""
        return int(self.weights[0].shape[1])

    @property
    def k(self) -> int:
        """Number of outputs."""
        return int(self.weights[-1].shape[0])

    @property
    def hidden_widths(self) -> tuple[int, ...]:
        """(n_1, …, n_{L−1})."""
        return self.widths[1:-1]

    @property
    def num_parameters(self) -> int:
        """Σ_ℓ n_ℓ (n_{ℓ−1} + 1)."""
        w = self.widths
        return sum(w[i + 1] * (w[i] + 1) for i in range(len(w) - 1))

    @property
    def is_float(self) -> bool:
        """True when every parameter array is a float array (taken at its exact binary value)."""
        return all(is_float_array(x) for x in self.weights + self.biases)

    # -- conversions ----------------------------------------------------------------------------------------
    @classmethod
    def from_network(cls, net: Network) -> MLP:
        """The one-hidden-layer MLP (A, b), (V, c) of a ``Network``."""
        return cls([net.A, net.V], [net.b, net.c])

    def to_network(self) -> Network:
        """The ``Network`` of an MLP with exactly one hidden layer (refused otherwise)."""
        if self.depth != 1:
            raise InvalidNetworkError(
                f"this MLP has {self.depth} hidden layers; a Network (x ↦ V·σ(Ax + b) + c) has exactly one"
            )
        return Network(self.weights[1], self.weights[0], self.biases[0], self.biases[1], m=self.m)

    def layer(self, ell: int) -> tuple[np.ndarray, np.ndarray]:
        """(W_ℓ, b_ℓ) for ℓ = 1 … L (1-based, as in the mathematics)."""
        if not 1 <= ell <= len(self.weights):
            raise IndexError(f"layer {ell} out of range 1 … {len(self.weights)}")
        return self.weights[ell - 1], self.biases[ell - 1]

    def to_dict(self) -> dict[str, Any]:
        """The ``relusym.mlp/1`` JSON object: ``weights`` and ``biases`` as lists, rationals as strings."""

        def cells(x: np.ndarray) -> Any:
            if x.ndim == 1:
                return [fraction_str(to_fraction(v)) for v in x.tolist()]
            return [cells(r) for r in x]

        return {
            "schema": "relusym.mlp/1",
            "widths": list(self.widths),
            "weights": [cells(W) for W in self.weights],
            "biases": [cells(b) for b in self.biases],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MLP:
        """Read a ``relusym.mlp/1`` object."""
        if not isinstance(d, dict):
            raise InvalidNetworkError("an MLP must be a JSON object with keys weights and biases")
        check_schema(d, "relusym.mlp/1", "MLP")
        if "weights" not in d or not isinstance(d["weights"], list):
            raise InvalidNetworkError("the MLP object has no list 'weights'")
        widths = d.get("widths")
        ws = []
        for ell, W in enumerate(d["weights"]):
            if isinstance(W, list) and len(W) > 0 and all(isinstance(r, list) and not r for r in W):
                ws.append(np.zeros((len(W), 0)))
            elif isinstance(W, list) and not W and isinstance(widths, list) and ell + 1 < len(widths):
                prev = widths[ell]
                if not isinstance(prev, int) or isinstance(prev, bool) or not 0 <= prev <= 1 << 20:
                    raise InvalidNetworkError(f"widths[{ell}] must be a small non-negative integer")
                ws.append(np.zeros((0, prev)))
            else:
                ws.append(W)
        return cls(ws, d.get("biases"))

    # -- evaluation -----------------------------------------------------------------------------------------
    def evaluate_exact(self, x: Sequence[Any] | np.ndarray) -> tuple[Fraction, ...]:
        """The network at one point x ∈ ℚ^m, in exact rational arithmetic."""
        xv = as_rational_vector(x)
        if len(xv) != self.m:
            raise InvalidNetworkError(f"x must have m = {self.m} entries, got {len(xv)}")
        return self._exact(xv)

    def _exact(self, xv: Sequence[Fraction]) -> tuple[Fraction, ...]:
        try:
            ev = self._evaluator
        except AttributeError:
            ev = ExactEvaluator(self.weights, self.biases)
            object.__setattr__(self, "_evaluator", ev)
        out: tuple[Fraction, ...] = ev(xv)
        return out

    def evaluate(self, X: Any) -> np.ndarray:
        """The network in float64 at a batch of points X (shape (B, m), or (m,) for one point): fast, not exact."""
        Xa = np.asarray(X, dtype=np.float64)
        single = Xa.ndim == 1
        if single:
            Xa = Xa[None, :]
        if Xa.ndim != 2 or Xa.shape[1] != self.m:
            raise InvalidNetworkError(f"X must have shape (B, {self.m}), got {np.asarray(X).shape}")
        H = Xa
        L = len(self.weights)
        for ell, (W, b) in enumerate(zip(self.weights, self.biases, strict=True), start=1):
            H = H @ as_float64(W).T + as_float64(b)
            if ell < L:
                H = np.maximum(H, 0.0)
        return np.asarray(H[0] if single else H)

    def __call__(self, x: Any) -> tuple[Fraction, ...] | list[tuple[Fraction, ...]]:
        """The network at x, always exactly: one point gives a tuple of k Fractions, a batch (B, m) a list."""
        arr = np.asarray(x, dtype=object)
        if arr.ndim == 2:
            out = []
            for row in arr.tolist():
                xv = as_rational_vector(row)
                if len(xv) != self.m:
                    raise InvalidNetworkError(f"x must have m = {self.m} entries, got {len(xv)}")
                out.append(self._exact(xv))
            return out
        if arr.ndim == 1 or (arr.ndim == 0 and self.m == 1):
            return self.evaluate_exact(arr.reshape(-1).tolist())
        raise InvalidNetworkError(f"x must be one point of {self.m} numbers or a batch of shape (B, {self.m})")

    # -- comparison -----------------------------------------------------------------------------------------
    def same_parameters(self, other: MLP) -> bool:
        """Exact equality of the parameters (not of the realized functions: see ``relusym.equivalent``)."""
        if self.widths != other.widths:
            return False
        return all(
            same_values(x, y) for x, y in zip(self.weights + self.biases, other.weights + other.biases, strict=True)
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MLP):
            return NotImplemented
        return self.same_parameters(other)

    def __hash__(self) -> int:
        return hash((self.widths, tuple(to_fraction(x) for x in self.biases[-1].tolist()[:8])))

    def __repr__(self) -> str:
        kind = "float" if self.is_float else "exact"
        return f"MLP(widths={self.widths}, {kind})"


def as_mlp(x: Any) -> MLP:
    """An MLP from an MLP or a ``Network`` (anything else is refused)."""
    if isinstance(x, MLP):
        return x
    if isinstance(x, Network):
        return MLP.from_network(x)
    raise InvalidNetworkError(f"expected an MLP or a Network, got {type(x).__name__}")
