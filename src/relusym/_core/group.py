"""The group H_n of positive monomial matrices, its action, orbits and stabilizers (docs/math/symmetries.md, Theorem
2)."""

from __future__ import annotations

import math
import random as _random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.document import tagged
from relusym._core.network import Network
from relusym._exact.hashing import float_key, quotient_row_hashes, row_hash, rows_proportional
from relusym._exact.numbers import exact_view, fraction_str, fractions_of, products_exact, to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["Symmetry", "find_symmetry", "search_symmetry", "stabilizer", "Stabilizer"]


def _is_power_of_two(q: Fraction) -> bool:
    p, d = q.numerator, q.denominator
    return p > 0 and p & (p - 1) == 0 and d & (d - 1) == 0


class Symmetry:
    """An element h = P_π D of H_n (docs/math/symmetries.md).

    Neuron j moves to slot ``permutation[j]`` and becomes (v_j/d_j, d_j a_j, d_j b_j) with d_j = ``scales[j]``
    > 0; the output bias is untouched.  ``h @ net`` (or ``h.act(net)``) applies h; ``h @ g`` is the composition
    "apply g, then h".  Scales are exact rationals (floats are read at their exact value).

    >>> h = Symmetry([1, 0], [2, "1/2"])
    >>> (h.inverse() @ h) == Symmetry.identity(2)
    True
    """

    __slots__ = ("permutation", "scales")

    permutation: tuple[int, ...]
    scales: tuple[Fraction, ...]

    def __init__(self, permutation: Sequence[int], scales: Sequence[Any] | None = None) -> None:
        perm = tuple(int(p) for p in permutation)
        n = len(perm)
        if sorted(perm) != list(range(n)):
            raise InvalidNetworkError(f"permutation must be a rearrangement of 0..{n - 1}, got {list(perm)}")
        if scales is None:
            sc = tuple(Fraction(1) for _ in range(n))
        else:
            sc = tuple(to_fraction(s, f"scales[{i}]") for i, s in enumerate(scales))
        if len(sc) != n:
            raise InvalidNetworkError(f"scales must have {n} entries (one per neuron), got {len(sc)}")
        for i, s in enumerate(sc):
            if s <= 0:
                raise InvalidNetworkError(f"scales[{i}] = {fraction_str(s)} is not positive")
        object.__setattr__(self, "permutation", perm)
        object.__setattr__(self, "scales", sc)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Symmetry is immutable")

    @property
    def n(self) -> int:
        return len(self.permutation)

    @classmethod
    def _trusted(cls, permutation: list[int], scales: list[Fraction]) -> Symmetry:
        """An element built from data already known to be valid (a permutation, positive Fractions)."""
        h = object.__new__(cls)
        object.__setattr__(h, "permutation", tuple(permutation))
        object.__setattr__(h, "scales", tuple(scales))
        return h

    @classmethod
    def identity(cls, n: int) -> Symmetry:
        """The identity of H_n."""
        return cls(range(n))

    @classmethod
    def random(cls, n: int, rng: Any = None, *, dyadic: bool = False, spread: int = 4) -> Symmetry:
        """A random element: a uniform permutation and random positive rational scales.

        With ``dyadic=True`` the scales are powers of two 2^j, |j| ≤ ``spread``, so that h·θ of a float
        network is again exactly a float network.  ``rng`` is a ``random.Random``, a numpy Generator or a seed.
        """
        r = (
            rng
            if isinstance(rng, _random.Random)
            else _random.Random(int(rng.integers(2**63)) if isinstance(rng, np.random.Generator) else rng)
        )
        perm = list(range(n))
        r.shuffle(perm)
        if dyadic:
            scales = [Fraction(2) ** r.randint(-spread, spread) for _ in range(n)]
        else:
            scales = [Fraction(r.randint(1, 2**spread), r.randint(1, 2**spread)) for _ in range(n)]
        return cls(perm, scales)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Symmetry:
        return cls(d["permutation"], d.get("scales"))

    def to_dict(self) -> dict[str, Any]:
        return {"permutation": list(self.permutation), "scales": [fraction_str(s) for s in self.scales]}

    def inverse(self) -> Symmetry:
        """h⁻¹: the neuron in slot π(j) goes back to slot j, scaled by 1/d_j."""
        n = self.n
        perm = [0] * n
        scales = [Fraction(1)] * n
        for j, (p, d) in enumerate(zip(self.permutation, self.scales, strict=True)):
            perm[p] = j
            scales[p] = 1 / d
        return Symmetry(perm, scales)

    def compose(self, other: Symmetry) -> Symmetry:
        """``self ∘ other``: apply ``other`` first, then ``self``."""
        if other.n != self.n:
            raise InvalidNetworkError(f"cannot compose elements of H_{self.n} and H_{other.n}")
        perm = [self.permutation[p] for p in other.permutation]
        scales = [d * self.scales[p] for d, p in zip(other.scales, other.permutation, strict=True)]
        return Symmetry(perm, scales)

    def act(self, net: Network) -> Network:
        """h·θ = (V h⁻¹, h A, h b, c) (docs/math/symmetries.md).  Float networks stay float networks when every scale
        is a
        power of two (then the result is exact); otherwise the result holds Fractions."""
        if net.n != self.n:
            raise InvalidNetworkError(f"this symmetry acts on n = {self.n} neurons, the network has n = {net.n}")
        inv = np.empty(self.n, dtype=np.int64)
        inv[np.asarray(self.permutation, dtype=np.int64)] = np.arange(self.n)  # slot -> source neuron
        src = inv
        if net.is_float and all(_is_power_of_two(d) for d in self.scales):
            expo = np.array(
                [d.numerator.bit_length() - d.denominator.bit_length() for d in self.scales], dtype=np.int64
            )
            e = expo[src]
            V = np.ldexp(net.V[:, src], -e[None, :]).astype(net.V.dtype)
            A = np.ldexp(net.A[src, :], e[:, None]).astype(net.A.dtype)
            b = np.ldexp(net.b[src], e).astype(net.b.dtype)
            ok = (
                np.array_equal(np.ldexp(V.astype(np.float64), e[None, :]), net.V[:, src].astype(np.float64))
                and np.array_equal(np.ldexp(A.astype(np.float64), -e[:, None]), net.A[src].astype(np.float64))
                and np.array_equal(np.ldexp(b.astype(np.float64), -e), net.b[src].astype(np.float64))
                and np.isfinite(V).all()
                and np.isfinite(A).all()
                and np.isfinite(b).all()
            )
            if ok:
                return Network(V, A, b, net.c, m=net.m)
        d = np.array(self.scales, dtype=object)[src]
        V = fractions_of(net.V)[:, src] / d[None, :]
        A = fractions_of(net.A)[src, :] * d[:, None]
        b = fractions_of(net.b)[src] * d
        return Network(V, A, b, net.c, m=net.m)

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, Symmetry):
            return self.compose(other)
        if isinstance(other, Network):
            return self.act(other)
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Symmetry):
            return NotImplemented
        return self.permutation == other.permutation and self.scales == other.scales

    def __hash__(self) -> int:
        return hash((self.permutation, self.scales))

    def __repr__(self) -> str:
        if self.n <= 12:
            return f"Symmetry({list(self.permutation)}, [{', '.join(fraction_str(s) for s in self.scales)}])"
        return f"Symmetry(<H_{self.n} element>)"


# ----------------------------------------------------------------------------------------------------------
# neuron keys up to positive scaling (the H_n-invariant of one neuron)


class _ScaleKind(IntEnum):
    """How a neuron is normalized up to positive scaling (not a neuron type: see NeuronType for that):
    ZERO (v = 0 and w = 0), ROW (w = (a, b) ≠ 0: divide by |w_q|), OUTPUT (w = 0, v ≠ 0: divide by |v_q|)."""

    ZERO = 0
    ROW = 1
    OUTPUT = 2


@dataclass(frozen=True)
class _ScaleKeys:
    """For each neuron: a 64-bit hash of (v, w) up to positive scaling (the H_n-invariant of one neuron), and
    the exact data that verifies candidates.  kind: a _ScaleKind per neuron.  w = (a, b) is kept as the network's
    own A and b (no concatenated copy): hashes are linear over the columns and proportionality holds for the
    row exactly when it holds for both parts."""

    kind: np.ndarray  # (n,) int
    hashes: np.ndarray  # (n,) uint64
    A: np.ndarray  # n × m exact view of a
    b: np.ndarray  # n × 1 exact view of b
    Vt: np.ndarray  # n × k exact view of v
    norm: np.ndarray  # (n,) exact |w_q| (kind 1) or |v_q| (kind 2), 1 for inactive; float64 or Fractions
    w_hash: np.ndarray  # (n,) uint64: row_hash of the float keys of w / |w_q| (kind 1), of 0 otherwise


def _first_nonzero(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of X: whether it has a nonzero entry and the column of the first one (0 when none), a block of
    rows at a time (no boolean matrix of the whole array)."""
    n = X.shape[0]
    has = np.zeros(n, dtype=bool)
    q = np.zeros(n, dtype=np.int64)
    step = max(1, (1 << 18) // max(1, X.shape[1]))
    for s0 in range(0, n, step):
        nz = X[s0 : s0 + step] != 0
        q[s0 : s0 + step] = np.argmax(nz, axis=1)
        has[s0 : s0 + step] = nz.any(axis=1)
    return has, q


@np.errstate(over="ignore")  # keys beyond float range become ±inf: still equal for equal rationals
def _scale_keys(A: np.ndarray, b: np.ndarray, Vt: np.ndarray) -> _ScaleKeys:
    n, m = A.shape
    rows = np.arange(n)
    b2 = b.reshape(n, 1)
    has_a, qa = _first_nonzero(A)
    has_v, qv = _first_nonzero(Vt)
    has_w = has_a | (b != 0)
    kind = np.where(has_w, _ScaleKind.ROW, np.where(has_v, _ScaleKind.OUTPUT, _ScaleKind.ZERO)).astype(np.int64)
    obj = A.dtype == object or Vt.dtype == object
    one: Any = Fraction(1) if obj else 1.0
    wq = np.where(has_a, A[rows, qa], b) if n else b
    norm = np.where(kind == _ScaleKind.ROW, abs(wq), np.where(kind == _ScaleKind.OUTPUT, abs(Vt[rows, qv]), one))
    norm = np.array(norm.tolist(), dtype=object) if obj else norm.astype(np.float64)
    if n == 0:
        empty = np.zeros(0, dtype=np.uint64)
        return _ScaleKeys(kind, empty, A, b2, Vt, norm, empty)
    k1 = (kind == _ScaleKind.ROW)[:, None]
    # w / |w_q| (kind 1; zero rows otherwise) and v·|w_q| (kind 1) or v / |v_q| (kind 2): correctly rounded
    tail = row_hash(float_key(b2 / norm[:, None]), offset=m)
    w_hash = (row_hash(float_key(A / norm[:, None])) if obj else quotient_row_hashes(A, norm)) + tail
    Fv = float_key(np.where(k1, Vt * norm[:, None], Vt / norm[:, None]))
    hashes = w_hash + row_hash(Fv, offset=m + 1) + kind.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return _ScaleKeys(kind, hashes, A, b2, Vt, norm, w_hash)


def _w_proportional(
    sk1: _ScaleKeys, s2: np.ndarray, sk2: _ScaleKeys, s1: np.ndarray, rows2: np.ndarray | None = None
) -> np.ndarray:
    """:func:`rows_proportional` of the rows w = (a, b) of two networks' scale keys, part by part."""
    a_ok = rows_proportional(sk1.A, s2, sk2.A, s1, rows2=rows2)
    return np.asarray(a_ok & rows_proportional(sk1.b, s2, sk2.b, s1, rows2=rows2))


def _related(sk1: _ScaleKeys, j: int, sk2: _ScaleKeys, l_: int) -> Fraction | None:
    """The exact d > 0 with neuron l of θ2 = (v_j/d, d w_j) of θ1, or None (exact verification)."""
    kind = int(sk1.kind[j])
    if kind != int(sk2.kind[l_]):
        return None
    if kind == _ScaleKind.ZERO:
        return Fraction(1)
    n1, n2 = sk1.norm[[j]], sk2.norm[[l_]]
    if kind == _ScaleKind.ROW:
        ok = (
            bool(rows_proportional(sk1.A[[j]], n2, sk2.A[[l_]], n1)[0])
            and bool(rows_proportional(sk1.b[[j]], n2, sk2.b[[l_]], n1)[0])
            and bool(rows_proportional(sk1.Vt[[j]], n1, sk2.Vt[[l_]], n2)[0])
        )
        return Fraction(n2[0]) / Fraction(n1[0]) if ok else None
    ok = bool(rows_proportional(sk1.Vt[[j]], n2, sk2.Vt[[l_]], n1)[0])
    return Fraction(n1[0]) / Fraction(n2[0]) if ok else None


def _neuron_arrays(net: Network) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, b, Vᵀ) in one exact representation: views of the network's own arrays when they are floats."""
    A, b, V = exact_view(net.A, net.b, net.V)
    return A, b, V.T


def _scales_of(sk1: _ScaleKeys, sk2: _ScaleKeys, perm: np.ndarray) -> list[Fraction]:
    """The exact scales d_j: |w'_q| / |w_q| (kind 1), |v_q| / |v'_q| (kind 2), 1 (inactive).

    When the float64 quotient is exact (checked exactly), one Fraction is built per distinct quotient."""
    kind = sk1.kind
    num = np.where(kind == _ScaleKind.ROW, sk2.norm[perm], sk1.norm)
    den = np.where(kind == _ScaleKind.ROW, sk1.norm, sk2.norm[perm])
    quick = np.zeros(kind.shape[0], dtype=bool)
    if num.dtype != object and den.dtype != object:
        with np.errstate(all="ignore"):
            r = num / den
            # r·den is exact in float64 when both fit in float32, so this equality is exact
            quick = (r.astype(np.float32) == r) & products_exact(den) & (r * den == num)
    cache: dict[float, Fraction] = {}
    out: list[Fraction] = []
    for j, (kd, ok) in enumerate(zip(kind.tolist(), quick.tolist(), strict=True)):
        if kd == _ScaleKind.ZERO:
            out.append(Fraction(1))
        elif ok:
            rv = float(r[j])
            d = cache.get(rv)
            if d is None:
                d = cache[rv] = Fraction(rv)
            out.append(d)
        else:
            out.append(Fraction(num[j]) / Fraction(den[j]))
    return out


def find_symmetry(net1: Network, net2: Network) -> Symmetry | None:
    """An h ∈ H_n with h·θ1 = θ2 exactly, or None (docs/math/symmetries.md).

    Neurons are matched by sorting 64-bit hashes of their scale-invariant keys (O(n log n), not an
    assignment problem); every match is then verified in exact arithmetic.
    """
    return search_symmetry(net1, net2)[0]


def search_symmetry(net1: Network, net2: Network) -> tuple[Symmetry | None, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`find_symmetry`, and the hashes of the float keys of w_i / |w_q| (q the first nonzero entry of w_i)
    of both networks when the search computed them: for a hyperplane neuron they give its class hash up to the
    sign of λ_i (``hyperplane_classes(net, row_hashes=...)``), so a decision that goes on to the normal forms
    does not divide the weights again."""
    if net1.shape != net2.shape:
        return None, None
    if not all(to_fraction(x) == to_fraction(y) for x, y in zip(net1.c.tolist(), net2.c.tolist(), strict=True)):
        return None, None
    sk1 = _scale_keys(*_neuron_arrays(net1))
    sk2 = _scale_keys(*_neuron_arrays(net2))
    return _search(net1, sk1, sk2), (sk1.w_hash, sk2.w_hash)


def _search(net1: Network, sk1: _ScaleKeys, sk2: _ScaleKeys) -> Symmetry | None:
    o1 = np.argsort(sk1.hashes, kind="stable")
    o2 = np.argsort(sk2.hashes, kind="stable")
    if not np.array_equal(sk1.hashes[o1], sk2.hashes[o2]):
        return None  # equal invariants have equal hashes, so the multisets of invariants differ
    perm = np.empty(net1.n, dtype=np.int64)
    perm[o1] = o2
    n1, n2 = sk1.norm, sk2.norm[perm]
    V2 = sk2.Vt[perm]
    ok = sk1.kind == sk2.kind[perm]
    ok &= _w_proportional(sk1, n2, sk2, n1, rows2=perm)
    ok &= np.where(
        sk1.kind == _ScaleKind.ROW, rows_proportional(sk1.Vt, n1, V2, n2), rows_proportional(sk1.Vt, n2, V2, n1)
    )
    if ok.all():
        return Symmetry._trusted(perm.tolist(), _scales_of(sk1, sk2, perm))
    return _find_symmetry_exact(net1, sk1, sk2)


def _find_symmetry_exact(net1: Network, sk1: _ScaleKeys, sk2: _ScaleKeys) -> Symmetry | None:
    """The same search, one neuron at a time (used only after a hash collision)."""
    buckets: dict[int, list[int]] = defaultdict(list)
    for l_ in range(net1.n - 1, -1, -1):
        buckets[int(sk2.hashes[l_])].append(l_)
    perm = [0] * net1.n
    scales: list[Fraction] = [Fraction(1)] * net1.n
    for j in range(net1.n):
        cand = buckets.get(int(sk1.hashes[j]))
        if not cand:
            return None
        for pos in range(len(cand) - 1, -1, -1):
            d = _related(sk1, j, sk2, cand[pos])
            if d is not None:
                perm[j], scales[j] = cand.pop(pos), d
                break
        else:
            return None
    return Symmetry(perm, scales)


@dataclass(frozen=True)
class Stabilizer:
    """Stab_{H_n}(θ) ≅ S × H_{n′} (docs/math/symmetries.md, Theorem C ≈ Theorem 2).

    ``inactive`` is n′ (all-zero neurons, each giving a free positive scale and permutable among themselves),
    ``blocks`` the classes (of size ≥ 2) of neurons related by positive scaling (0-based), ``order`` = |S| =
    Π |C|!, and ``generators`` transpositions P_(j l) D generating S, each verified to fix θ.
    """

    inactive: int
    inactive_neurons: tuple[int, ...]
    blocks: tuple[tuple[int, ...], ...]
    order: int
    generators: tuple[Symmetry, ...]

    @property
    def dimension(self) -> int:
        """dim Stab = n′."""
        return self.inactive

    @property
    def trivial(self) -> bool:
        return self.inactive == 0 and self.order == 1

    def to_dict(self) -> dict[str, Any]:
        d = {
            "inactive": self.inactive,
            "inactive_neurons": list(self.inactive_neurons),
            "blocks": [list(b) for b in self.blocks],
            "order": self.order,
            "dimension": self.dimension,
            "generators": [g.to_dict() for g in self.generators],
        }
        return tagged("relusym.stabilizer/1", d)

    def __str__(self) -> str:
        blocks = ", ".join("{" + ", ".join(map(str, b)) + "}" for b in self.blocks) or "none"
        return (
            f"Stab ≅ S × H_{self.inactive}: {self.inactive} inactive neuron(s), "
            f"blocks related by positive scaling: {blocks}, |S| = {self.order}"
        )


def stabilizer(net: Network) -> Stabilizer:
    """The stabilizer of θ in H_n (docs/math/symmetries.md, Theorem C ≈ Theorem 2), with verified generators."""
    sk = _scale_keys(*_neuron_arrays(net))
    inactive = tuple(i for i in range(net.n) if sk.kind[i] == _ScaleKind.ZERO)
    groups: dict[int, list[list[int]]] = defaultdict(list)
    for i in range(net.n):
        if sk.kind[i] == _ScaleKind.ZERO:
            continue
        # exact classes inside one hash bucket
        for cls in groups[int(sk.hashes[i])]:
            if _related(sk, cls[0], sk, i) is not None:
                cls.append(i)
                break
        else:
            groups[int(sk.hashes[i])].append([i])
    blocks = sorted(tuple(c) for lst in groups.values() for c in lst if len(c) >= 2)
    order = math.prod(math.factorial(len(b)) for b in blocks)
    gens: list[Symmetry] = []
    for blk in blocks:
        for j, l_ in zip(blk, blk[1:], strict=False):
            d = _related(sk, j, sk, l_)  # neuron l = (v_j/d, d w_j)
            assert d is not None
            perm = list(range(net.n))
            perm[j], perm[l_] = l_, j
            scales = [Fraction(1)] * net.n
            scales[j], scales[l_] = d, 1 / d
            g = Symmetry(perm, scales)
            if not g.act(net).same_parameters(net):  # pragma: no cover - would be a bug
                raise AssertionError(f"stabilizer generator {g} does not fix θ")
            gens.append(g)
    return Stabilizer(len(inactive), inactive, tuple(blocks), order, tuple(gens))
