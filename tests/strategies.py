"""The one home of the tests' random networks: hypothesis strategies and seeded builders.

Every test that needs random or planted networks draws them from here (docs/architecture.md, "One mechanism
each"), so that a generator exists once and a fix to it reaches every test.  The helpers of the oracles
(``oracles.py``, ``deep_oracles.py``, ``fibre_helpers.py``) hold oracles and worked examples, not generators.

* seeded builders (``random.Random`` or ``numpy.random.Generator`` first): :func:`random_int_net` (integer
  parameter lists), :func:`random_net_with_pair`, :func:`seeded_int_network`, :func:`dyadic_parameters`,
  :func:`repeated_hyperplane_network`, :func:`gaussian_network`, :func:`float32_network`, :func:`random_layers`
  (deep, exact), :func:`random_nnet_layers` (decimal text, for .nnet files);
* hypothesis strategies: :func:`int_networks`, :func:`int_parameters`, :func:`small_networks`,
  :func:`planted_networks`, :func:`float_networks`, :func:`rational_networks`.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from relusym import Network

Layers = list[tuple[list[list[Fraction]], list[Fraction]]]  # (W rows, b) per affine layer


# ---------------------------------------------------------------------------------------------------------
# seeded builders


def random_int_net(rng: random.Random, m: int, n: int, k: int, lo: int = -2, hi: int = 2) -> tuple:
    """Integer parameter lists (V, A, b, c) with entries in [lo, hi]."""
    V = [[rng.randint(lo, hi) for _ in range(n)] for _ in range(k)]
    A = [[rng.randint(lo, hi) for _ in range(m)] for _ in range(n)]
    b = [rng.randint(lo, hi) for _ in range(n)]
    c = [rng.randint(lo, hi) for _ in range(k)]
    return V, A, b, c


def random_net_with_pair(rng: random.Random, m_max: int, k_max: int, n_min: int, chance: float) -> Network:
    """A random integer network with 1..m_max inputs, 1..k_max outputs, n_min..5 neurons and entries in [−2, 2];
    with probability ``chance`` neurons 0 and 1 form an opposite pair (w_1 = −w_0)."""
    m, k = rng.randint(1, m_max), rng.randint(1, k_max)
    n = rng.randint(n_min, 5)
    V, A, b, c = random_int_net(rng, m, n, k, -2, 2)
    if n >= 2 and rng.random() < chance:
        A[1] = [-x for x in A[0]]
        b[1] = -b[0]
    return Network(V, A, b, c, m=m)


def seeded_int_network(seed: int, m: int, n: int, k: int = 1) -> Network:
    """An integer network from a numpy seed (entries in [−3, 3], c in [−2, 2]), no zero row of A."""
    rng = np.random.default_rng(seed)
    A = rng.integers(-3, 4, size=(n, m))
    A[~A.any(axis=1), 0] = 1
    return Network(
        rng.integers(-3, 4, size=(k, n)).tolist(),
        A.tolist(),
        rng.integers(-3, 4, size=n).tolist(),
        rng.integers(-2, 3, size=k).tolist(),
    )


def dyadic_parameters(rng: random.Random, m: int, n: int, k: int = 1) -> tuple[list, list, list, list]:
    """Parameter lists (V, A, b, c) of dyadic rationals p/q, p in [−4, 4], q in {1, 2, 4}."""
    r = lambda: Fraction(rng.randint(-4, 4), rng.choice((1, 2, 4)))  # noqa: E731
    A = [[r() for _ in range(m)] for _ in range(n)]
    b = [r() for _ in range(n)]
    V = [[r() for _ in range(n)] for _ in range(k)]
    c = [r() for _ in range(k)]
    return V, A, b, c


def repeated_hyperplane_network(r: random.Random) -> Network:
    """Small integer networks with repeated hyperplanes (both orientations), zero columns of V and zero rows
    of A, so that every branch of the analysis is met."""
    m, k, n = r.randint(1, 2), r.randint(1, 2), r.randint(1, 7)
    base = [([r.randint(-2, 2) for _ in range(m)], r.randint(-2, 2)) for _ in range(3)]
    A, b, V = [], [], []
    for _ in range(n):
        a, bb = r.choice(base)
        s = r.choice([1, 2, -1, -3])
        if r.random() < 0.15:
            a, bb, s = [0] * m, r.randint(-1, 1), 1
        A.append([s * x for x in a])
        b.append(s * bb)
        V.append([r.randint(-2, 2) if r.random() < 0.8 else 0 for _ in range(k)])
    Vt = [[V[i][j] for i in range(n)] for j in range(k)]
    return Network(Vt, A, b, [r.randint(-2, 2) for _ in range(k)], m=m)


def gaussian_network(rng: np.random.Generator, m: int, n: int, k: int, dtype: type = np.float64) -> Network:
    """A network of standard normal draws (V, A, b, c in that order), stored as ``dtype``."""
    return Network(
        rng.standard_normal((k, n)).astype(dtype),
        rng.standard_normal((n, m)).astype(dtype),
        rng.standard_normal(n).astype(dtype),
        rng.standard_normal(k).astype(dtype),
    )


def float32_network(rng: np.random.Generator, m: int, n: int, k: int, *, fan_in: bool = True) -> Network:
    """A float32 network of standard normal draws; ``fan_in`` scales them as benchmarks/bench_speed.py does
    (weights N(0, 1)/sqrt(fan-in), biases N(0, 0.01)), else they are left N(0, 1)."""
    f32 = np.float32
    if not fan_in:
        return gaussian_network(rng, m, n, k, f32)
    return Network(
        (rng.standard_normal((k, n)) / np.sqrt(n)).astype(f32),
        (rng.standard_normal((n, m)) / np.sqrt(m)).astype(f32),
        (rng.standard_normal(n) * 0.1).astype(f32),
        (rng.standard_normal(k) * 0.1).astype(f32),
    )


def random_layers(rng: random.Random, widths: list[int], *, lo: int = -3, hi: int = 3, den: int = 1) -> Layers:
    """Exact layers of a deep network with the given widths (entries p/q, p in [lo, hi], q ≤ den)."""
    out: Layers = []
    for a, b in zip(widths, widths[1:], strict=False):
        dens = [d for d in (1, 2, 3, 4) if d <= den]
        W = [[Fraction(rng.randint(lo, hi), rng.choice(dens)) for _ in range(a)] for _ in range(b)]
        bias = [Fraction(rng.randint(lo, hi), rng.choice(dens)) for _ in range(b)]
        out.append((W, bias))
    return out


def random_decimal(rng: random.Random) -> str:
    """A decimal with two places in [−9.99, 9.99], as text."""
    return f"{rng.randint(-999, 999) / 100:.2f}"


def random_nnet_layers(rng: random.Random, m: int, n: int, k: int):
    """The two layers of an m-n-k network as decimal text (the .nnet writer's input)."""
    W1 = [[random_decimal(rng) for _ in range(m)] for _ in range(n)]
    b1 = [random_decimal(rng) for _ in range(n)]
    W2 = [[random_decimal(rng) for _ in range(n)] for _ in range(k)]
    b2 = [random_decimal(rng) for _ in range(k)]
    return [(W1, b1), (W2, b2)]


# ---------------------------------------------------------------------------------------------------------
# hypothesis strategies


_ints = st.integers(-3, 3)


def _int_lists(
    draw: st.DrawFn, m: int, n: int, k: int, ints: st.SearchStrategy[int] = _ints
) -> tuple[list, list, list, list]:
    """(V, A, b, c) drawn entry by entry from ``ints``, in that order."""
    V = [[draw(ints) for _ in range(n)] for _ in range(k)]
    A = [[draw(ints) for _ in range(m)] for _ in range(n)]
    b = [draw(ints) for _ in range(n)]
    c = [draw(ints) for _ in range(k)]
    return V, A, b, c


@st.composite
def int_networks(draw: st.DrawFn, max_m: int = 3, max_n: int = 5, max_k: int = 2) -> Network:
    """Integer networks, entries in [−3, 3], 1..max_m inputs, 0..max_n neurons, 1..max_k outputs."""
    m = draw(st.integers(1, max_m))
    n = draw(st.integers(0, max_n))
    k = draw(st.integers(1, max_k))
    return Network(*_int_lists(draw, m, n, k), m=m)


@st.composite
def int_parameters(draw: st.DrawFn, m: int | None = None) -> tuple[list, list, list, list]:
    """The parameter lists (V, A, b, c) of an integer network as :func:`int_networks` draws them, with m inputs
    (drawn in 1..3 when not given) and 0..4 neurons."""
    m = m or draw(st.integers(1, 3))
    n = draw(st.integers(0, 4))
    k = draw(st.integers(1, 2))
    return _int_lists(draw, m, n, k)


_small_int = st.integers(-2, 2)


@st.composite
def small_networks(draw, max_n=4):
    """Small integer networks (m, k ≤ 2, n ≤ max_n), half of them with an opposite pair."""
    m = draw(st.integers(1, 2))
    k = draw(st.integers(1, 2))
    n = draw(st.integers(0, max_n))
    V, A, b, c = _int_lists(draw, m, n, k, _small_int)
    if n >= 2 and draw(st.booleans()):
        A[1] = [-x for x in A[0]]
        b[1] = -b[0]
    return Network(V, A, b, c, m=m)


_PLANTS = ("duplicate", "cancel_same", "opposite", "cancel_pair", "null_v", "null_a", "constant", "split_outputs")


@st.composite
def planted_networks(draw, max_n=4):
    """Small networks (m, k ≤ 2, n ≤ max_n) with planted degeneracies: parallel duplicates on one oriented
    hyperplane, same-orientation groups with cancelling kinks, opposite pairs (with or without cancelling
    kinks), null (v = 0, or a = 0 and b ≤ 0) and constant neurons, and for k = 2 neurons whose output
    components cancel separately (one component of a pair cancels, the other does not)."""
    m = draw(st.integers(1, 2))
    k = draw(st.integers(1, 2))
    n = draw(st.integers(1, max_n))
    V, A, b, c = _int_lists(draw, m, n, k, _small_int)
    for _ in range(draw(st.integers(0, 2))):
        plant = draw(st.sampled_from(_PLANTS))
        i = draw(st.integers(0, n - 1))
        j = draw(st.integers(0, n - 1))
        mu = draw(st.sampled_from((1, 2)))
        if i == j and plant not in ("null_v", "null_a", "constant"):
            continue
        if plant in ("duplicate", "cancel_same"):
            A[j] = [mu * x for x in A[i]]
            b[j] = mu * b[i]
            if plant == "cancel_same":  # |λ_j| v_j = −|λ_i| v_i: v_j = −v_i / μ, kept integral with μ = 1
                A[j], b[j] = list(A[i]), b[i]
                for r in range(k):
                    V[r][j] = -V[r][i]
        elif plant in ("opposite", "cancel_pair", "split_outputs"):
            A[j] = [-x for x in A[i]]
            b[j] = -b[i]
            if plant == "cancel_pair":
                for r in range(k):
                    V[r][j] = -V[r][i]
            elif plant == "split_outputs" and k == 2:
                V[0][j] = -V[0][i]
        elif plant == "null_v":
            for r in range(k):
                V[r][i] = 0
        elif plant == "null_a":
            A[i] = [0] * m
            b[i] = -abs(b[i])
        else:
            A[i] = [0] * m
            b[i] = abs(b[i]) or 1
    return Network(V, A, b, c, m=m)


DTYPES = (np.float16, np.float32, np.float64)


@st.composite
def float_networks(draw: st.DrawFn, *, mixed: bool = False, max_n: int = 20) -> Network:
    """Float16/32/64 networks: ties (neurons on one hyperplane), subnormals and wide spreads; with ``mixed``
    an opposite pair."""
    dtype = draw(st.sampled_from(DTYPES))
    m = draw(st.integers(1, 4))
    k = draw(st.integers(1, 3))
    n = draw(st.integers(0, max_n))
    info = np.finfo(dtype)
    lo = int(info.minexp) - int(info.nmant) if draw(st.booleans()) else -8  # down to the subnormals, or tame
    hi = int(info.maxexp) - 2 if draw(st.booleans()) else 8
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def floats(shape: tuple[int, ...]) -> np.ndarray:
        mant = rng.integers(-(2**10), 2**10, size=shape).astype(np.float64)
        ex = rng.integers(lo // 2 if lo < -8 else lo, hi // 2 if hi > 8 else hi, size=shape)
        x = np.ldexp(mant, ex - 10)
        x[rng.random(shape) < 0.15] = 0.0
        with np.errstate(over="ignore", under="ignore"):
            y = x.astype(dtype)
        return np.where(np.isfinite(y), y, dtype(1.5)).astype(dtype)

    A, b, V = floats((n, m)), floats((n,)), floats((k, n))
    if n >= 2 and draw(st.booleans()):  # ties: copies of earlier rows scaled by positive powers of two
        for i in range(1, n, 2):
            j = int(rng.integers(0, i))
            s = dtype(2.0 ** int(rng.integers(-3, 4)))
            with np.errstate(over="ignore", under="ignore"):
                A[i], b[i] = A[j] * s, b[j] * s
    if mixed and n >= 2:  # an opposite pair: neuron 1 on neuron 0's hyperplane with the other orientation
        A[1], b[1] = -A[0], -b[0]
    bad = ~np.isfinite(A).all(axis=1) | ~np.isfinite(b)
    A[bad], b[bad] = 0, 0
    c = floats((k,))
    return Network(V, A, b, c, m=m)


@st.composite
def rational_networks(draw: st.DrawFn) -> Network:
    """Rational networks, entries p/q in [−8, 8] with q ≤ 12, up to 16 neurons."""
    m = draw(st.integers(1, 3))
    k = draw(st.integers(1, 2))
    n = draw(st.integers(0, 16))
    q = st.fractions(min_value=-8, max_value=8, max_denominator=12)
    A = [[draw(q) for _ in range(m)] for _ in range(n)]
    b = [draw(q) for _ in range(n)]
    V = [[draw(q) for _ in range(n)] for _ in range(k)]
    return Network(V if n else np.zeros((k, 0)), A if n else np.zeros((0, m)), b, [draw(q) for _ in range(k)], m=m)
