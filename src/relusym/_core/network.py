"""Networks θ = (V, A, b, c) ∈ Ω(m, n, k) and the realization map ρ (docs/math/realization.md)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from enum import IntEnum
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.document import check_schema
from relusym._base.limits import current as current_limits
from relusym._base.limits import shorten
from relusym._exact.mantissas import exact_matvec_float, integer_matrix
from relusym._exact.numbers import (
    as_exact_array,
    as_rational_vector,
    common_denominator,
    fraction_str,
    fractions_of,
    is_float_array,
    same_values,
    to_fraction,
)
from relusym.errors import InvalidNetworkError

__all__ = ["check_pair", "Network", "NeuronType"]


class NeuronType(IntEnum):
    """What one neuron (v_i, a_i, b_i) contributes to ρ(θ) = Σ_i v_i σ(a_i·x + b_i) + c.

    * ``NULL`` (0): nothing: v_i = 0, or a_i = 0 and b_i ≤ 0 (σ(b_i) = 0);
    * ``CONSTANT`` (1): the constant b_i v_i: a_i = 0, b_i > 0, v_i ≠ 0;
    * ``HYPERPLANE`` (2): a kink on the hyperplane a_i·x + b_i = 0: a_i ≠ 0 and v_i ≠ 0.

    The one code for neuron types (arrays of these values are plain int8 arrays compared with the members).
    """

    NULL = 0
    CONSTANT = 1
    HYPERPLANE = 2


def _hidden_rows(A: Any, m: int | None) -> np.ndarray:
    """A as an exact n×m array; an empty A (n = 0) needs ``m`` given."""
    A_in = A
    if not isinstance(A_in, np.ndarray) and not hasattr(A_in, "detach"):
        try:
            if len(A_in) == 0:
                if m is None:
                    raise InvalidNetworkError("A is empty (n = 0), so m must be given explicitly")
                A_in = _no_rows(m)
        except TypeError:
            raise InvalidNetworkError(f"A must be an n×m array, got {type(A).__name__}") from None
    elif isinstance(A_in, np.ndarray) and A_in.size == 0 and A_in.ndim != 2:
        if m is None:
            raise InvalidNetworkError("A is empty (n = 0), so m must be given explicitly")
        A_in = _no_rows(m)
    A_arr = as_exact_array(A_in, "A", 2)
    m_a = A_arr.shape[1]
    if m is not None and int(m) != m_a:
        raise InvalidNetworkError(f"m = {m} was given but A has shape {A_arr.shape} (m = {m_a})")
    if m_a == 0:
        raise InvalidNetworkError("m = 0: a network needs at least one input")
    return A_arr


def _output_layer(V: Any, c: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """V as an exact k×n array and c (zeros of V's type when None) as k entries."""
    V_in = V
    if n == 0 and not isinstance(V, np.ndarray):
        try:
            rows = list(V)
        except TypeError:
            raise InvalidNetworkError("V must be a k×n array") from None
        V_in = np.zeros((len(rows), 0))
    V_arr = as_exact_array(V_in, "V", 2)
    k = V_arr.shape[0]
    if V_arr.shape[1] != n:
        hint = "; V looks transposed (pass V.T)" if V_arr.shape[0] == n else ""
        raise InvalidNetworkError(f"V must be k×n with n = {n} columns (one per neuron), got shape {V_arr.shape}{hint}")
    if k == 0:
        raise InvalidNetworkError("k = 0: a network needs at least one output (V has no rows)")
    if c is None:
        c_arr = as_exact_array(np.zeros(k, dtype=V_arr.dtype if is_float_array(V_arr) else np.float64), "c", 1)
    else:
        c_arr = as_exact_array(c, "c", 1)
    if c_arr.shape != (k,):
        raise InvalidNetworkError(f"c must have k = {k} entries (one per row of V), got shape {c_arr.shape}")
    return V_arr, c_arr


class Network:
    """A parameter θ = (V, A, b, c) of a shallow ReLU network, x ↦ V·σ(Ax + b) + c (docs/math/realization.md).

    ``V`` is k×n (column i is the output weight v_i of neuron i), ``A`` is n×m (row i is a_i), ``b`` has n
    entries and ``c`` has k (``None`` means zeros).  Entries are exact: ints, Fractions, rational strings, or
    floats at their exact binary value.  Float arrays are kept as read-only float arrays, not converted.
    ``m`` must be given when n = 0 (``A`` is then empty).

    >>> net = Network([[1, 2]], [[1], [-1]], [0, 1])
    >>> net.evaluate_exact([3])
    (Fraction(3, 1),)
    """

    __slots__ = ("V", "A", "b", "c")

    V: np.ndarray
    A: np.ndarray
    b: np.ndarray
    c: np.ndarray

    def __init__(self, V: Any, A: Any, b: Any, c: Any = None, *, m: int | None = None) -> None:
        A_arr = _hidden_rows(A, m)
        n, m_a = A_arr.shape
        b_arr = as_exact_array(b if not (n == 0 and _is_empty(b)) else np.zeros(0), "b", 1)
        if b_arr.shape != (n,):
            hint = ""
            if b_arr.shape == (m_a,) and np.ndim(V) == 2 and np.shape(V)[1] == m_a:
                hint = f"; A looks transposed (it is {n}×{m_a}, as m×n; pass A.T)"
            raise InvalidNetworkError(f"b must have n = {n} entries (one per row of A), got shape {b_arr.shape}{hint}")
        V_arr, c_arr = _output_layer(V, c, n)
        object.__setattr__(self, "V", V_arr)
        object.__setattr__(self, "A", A_arr)
        object.__setattr__(self, "b", b_arr)
        object.__setattr__(self, "c", c_arr)

    # -- immutability -------------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Network is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Network, (self.V, self.A, self.b, self.c), None)

    # -- shape --------------------------------------------------------------------------------------------
    @property
    def m(self) -> int:
        """Number of inputs."""
        return int(self.A.shape[1])

    @property
    def n(self) -> int:
        """Number of hidden neurons."""
        return int(self.A.shape[0])

    @property
    def k(self) -> int:
        """Number of outputs."""
        return int(self.V.shape[0])

    @property
    def shape(self) -> tuple[int, int, int]:
        """The architecture (m, n, k)."""
        return (self.m, self.n, self.k)

    @property
    def is_float(self) -> bool:
        """True when every parameter array is a float array (taken at its exact binary value)."""
        return all(is_float_array(x) for x in (self.V, self.A, self.b, self.c))

    @property
    def num_parameters(self) -> int:
        """dim Ω(m, n, k) = n(m + k + 1) + k."""
        return self.n * (self.m + self.k + 1) + self.k

    def neuron(self, i: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction]:
        """Neuron i as the exact triple (v_i, a_i, b_i)."""
        if not 0 <= i < self.n:
            raise IndexError(f"neuron index {i} out of range for n = {self.n}")
        v = tuple(Fraction(x) for x in self.V[:, i].tolist())
        a = tuple(Fraction(x) for x in self.A[i, :].tolist())
        return v, a, to_fraction(self.b[i])

    # -- conversions --------------------------------------------------------------------------------------
    def to_float(self, dtype: Any = np.float64) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(V, A, b, c) as float arrays (rounded to ``dtype`` when they are not already floats)."""

        def conv(x: np.ndarray) -> np.ndarray:
            if x.dtype == object:
                return np.array([float(v) for v in x.ravel().tolist()], dtype=dtype).reshape(x.shape)
            return x.astype(dtype)

        return conv(self.V), conv(self.A), conv(self.b), conv(self.c)

    def to_fractions(self) -> Network:
        """The same network with every entry stored as a Fraction."""
        return Network(fractions_of(self.V), fractions_of(self.A), fractions_of(self.b), fractions_of(self.c), m=self.m)

    def to_dict(self) -> dict[str, Any]:
        """The ``relusym.network/1`` JSON object (rationals as strings)."""

        def rows(x: np.ndarray) -> list[Any]:
            if x.ndim == 1:
                return [fraction_str(to_fraction(v)) for v in x.tolist()]
            return [rows(r) for r in x]

        return {
            "schema": "relusym.network/1",
            "m": self.m,
            "V": [rows(self.V[r]) for r in range(self.k)],
            "A": [rows(self.A[i]) for i in range(self.n)],
            "b": rows(self.b),
            "c": rows(self.c),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Network:
        """Read a ``relusym.network/1`` object (see interfaces.md)."""
        if not isinstance(d, dict):
            raise InvalidNetworkError("a network must be a JSON object with keys V, A, b (and c, m)")
        check_schema(d, "relusym.network/1", "network")
        missing = [key for key in ("V", "A", "b") if key not in d]
        if missing:
            raise InvalidNetworkError(f"the network object has no {', '.join(repr(x) for x in missing)} key")
        m = d.get("m")
        if m is not None and (not isinstance(m, int) or isinstance(m, bool)):
            raise InvalidNetworkError(f"m must be an integer, got {shorten(m)}")
        return cls(
            _exact_json(d["V"]),
            _exact_json(d["A"]),
            _exact_json(d["b"]),
            None if d.get("c") is None else _exact_json(d["c"]),
            m=m,
        )

    # -- evaluation: the realization map ρ ---------------------------------------------------------------------
    def evaluate_exact(self, x: Sequence[Any] | np.ndarray) -> tuple[Fraction, ...]:
        """ρ(θ)(x) in exact rational arithmetic, at one point x ∈ ℚ^m (docs/math/realization.md)."""
        xv = as_rational_vector(x)
        if len(xv) != self.m:
            raise InvalidNetworkError(f"x must have m = {self.m} entries, got {len(xv)}")
        n, k = self.n, self.k
        if n == 0:
            return tuple(to_fraction(v) for v in self.c.tolist())
        den = common_denominator(xv)
        xi = [q.numerator * (den // q.denominator) for q in xv]
        if is_float_array(self.A):
            S, emin = exact_matvec_float(self.A, xi)
            pre = [
                Fraction(s << int(e), den) if e >= 0 else Fraction(s, den << int(-e))
                for s, e in zip(S, emin.tolist(), strict=True)
            ]
        else:
            Ai, As = integer_matrix(self.A)
            dots = Ai.dot(np.array(xi, dtype=object))
            pre = [Fraction(int(t)) * As / den for t in dots.tolist()]
        hidden = []
        for z, bi in zip(pre, self.b.tolist(), strict=True):
            z = z + to_fraction(bi)
            hidden.append(z if z > 0 else Fraction(0))
        c = [to_fraction(v) for v in self.c.tolist()]
        if is_float_array(self.V):
            hden = common_denominator(hidden)
            hi = [h.numerator * (hden // h.denominator) for h in hidden]
            S, emin = exact_matvec_float(self.V, hi)
            return tuple(
                ci + (Fraction(s << int(e), hden) if e >= 0 else Fraction(s, hden << int(-e)))
                for ci, s, e in zip(c, S, emin.tolist(), strict=True)
            )
        out = []
        for r in range(k):
            row = self.V[r].tolist()
            s = c[r]
            for i in range(n):
                if hidden[i]:
                    s += to_fraction(row[i]) * hidden[i]
            out.append(s)
        return tuple(out)

    def evaluate(self, X: Any) -> np.ndarray:
        """ρ(θ) in float64 at a batch of points X (shape (B, m), or (m,) for one point): fast, not exact."""
        Xa = np.asarray(X, dtype=np.float64)
        single = Xa.ndim == 1
        if single:
            Xa = Xa[None, :]
        if Xa.ndim != 2 or Xa.shape[1] != self.m:
            raise InvalidNetworkError(f"X must have shape (B, {self.m}), got {np.asarray(X).shape}")
        V, A, b, c = self.to_float(np.float64)
        H = np.maximum(Xa @ A.T + b, 0.0)
        Y = H @ V.T + c
        return np.asarray(Y[0] if single else Y)

    def __call__(self, x: Any) -> tuple[Fraction, ...] | list[tuple[Fraction, ...]]:
        """ρ(θ)(x), always exactly: one rule, whatever the numbers are.

        ``x`` is one point (m numbers: ints, Fractions, decimal strings or floats, each read at its exact value)
        and gives a tuple of k Fractions; a batch (B points, e.g. a (B, m) array) gives a list of B such
        tuples.  For a fast float64 evaluation of many points use :meth:`evaluate`.

        >>> net = Network([[1, 1]], [[1], [-1]], [0, 1])
        >>> net([3]), net([3.0]), net([[0], ["1/2"]])
        ((Fraction(3, 1),), (Fraction(3, 1),), [(Fraction(1, 1),), (Fraction(1, 1),)])
        """
        arr = np.asarray(x, dtype=object)
        if arr.ndim == 2:
            return [self.evaluate_exact(row) for row in arr.tolist()]
        if arr.ndim == 1 or (arr.ndim == 0 and self.m == 1):
            return self.evaluate_exact(arr.reshape(-1).tolist())
        raise InvalidNetworkError(f"x must be one point of {self.m} numbers or a batch of shape (B, {self.m})")

    # -- comparison -----------------------------------------------------------------------------------------
    def same_parameters(self, other: Network) -> bool:
        """Exact equality of the parameters (not of the realized functions: see ``relusym.equivalent``)."""
        if self.shape != other.shape:
            return False
        pairs = zip((self.V, self.A, self.b, self.c), (other.V, other.A, other.b, other.c), strict=True)
        return all(same_values(x, y) for x, y in pairs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Network):
            return NotImplemented
        return self.same_parameters(other)

    def __hash__(self) -> int:
        # exact values (hash(Fraction) agrees with hash(float) for equal values; float() could overflow)
        return hash((self.shape, tuple(to_fraction(x) for x in self.b.tolist()[:8])))

    def __repr__(self) -> str:
        kind = "float" if self.is_float else "exact"
        if self.n * (self.m + self.k) <= 24:
            d = self.to_dict()
            return f"Network(V={d['V']}, A={d['A']}, b={d['b']}, c={d['c']})"
        return f"Network(m={self.m}, n={self.n}, k={self.k}, {kind})"


def _is_empty(x: Any) -> bool:
    try:
        return len(x) == 0
    except TypeError:
        return False


def _no_rows(m: Any) -> np.ndarray:
    """The 0×m matrix A of a network without neurons; m is then backed by no data, so it is bounded."""
    try:
        mi = operator.index(m)
    except TypeError:
        raise InvalidNetworkError(f"m must be an integer, got {shorten(m)}") from None
    lim = current_limits().max_declared_dim
    if not 1 <= mi <= lim:
        raise InvalidNetworkError(
            f"m = {shorten(mi)} is declared with no rows in A; it must be between 1 and max_declared_dim = {lim}"
        )
    return np.zeros((0, mi))


def _exact_json(x: Any) -> Any:
    """JSON numbers and strings as exact values (floats from a JSON parser are re-read as decimals upstream)."""
    if isinstance(x, list):
        return [_exact_json(y) for y in x]
    if isinstance(x, float):
        return to_fraction(repr(x))
    return x


def check_pair(net1: Any, net2: Any, what: str) -> None:
    """Refuse two arguments that are not Networks of the same (m, k): the one check of every two-network
    function (widths may differ)."""
    if not isinstance(net1, Network) or not isinstance(net2, Network):
        raise InvalidNetworkError(f"{what} needs two Network objects")
    if (net1.m, net1.k) != (net2.m, net2.k):
        raise InvalidNetworkError(
            f"the networks have different shapes: m = {net1.m}, k = {net1.k} against m = {net2.m}, k = {net2.k}"
        )
