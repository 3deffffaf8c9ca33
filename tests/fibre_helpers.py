"""Helpers shared by the tests of the fibre and of the minimal width (spec §5, §6): the worked examples, plain
parameter lists for the oracles, small random networks (some with an opposite pair), and a rank over ℚ that is
independent of relusym.linalg."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from relusym import Network

from oracles import (
    random_int_net,
    rank_q,  # noqa: F401  (re-exported for the fibre tests)
)

NAMES = [f"E{i}" for i in range(1, 17)]


def net_from_dict(d) -> Network:
    return Network.from_dict(d)


def plain(net: Network):
    """(V, A, b, c) as plain lists, for the oracles."""
    d = net.to_dict()
    return d["V"], d["A"], d["b"], d["c"]


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


_small_int = st.integers(-2, 2)


@st.composite
def small_networks(draw, max_n=4):
    """Small integer networks (m, k ≤ 2, n ≤ max_n), half of them with an opposite pair."""
    m = draw(st.integers(1, 2))
    k = draw(st.integers(1, 2))
    n = draw(st.integers(0, max_n))
    V = [[draw(_small_int) for _ in range(n)] for _ in range(k)]
    A = [[draw(_small_int) for _ in range(m)] for _ in range(n)]
    b = [draw(_small_int) for _ in range(n)]
    c = [draw(_small_int) for _ in range(k)]
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
    V = [[draw(_small_int) for _ in range(n)] for _ in range(k)]
    A = [[draw(_small_int) for _ in range(m)] for _ in range(n)]
    b = [draw(_small_int) for _ in range(n)]
    c = [draw(_small_int) for _ in range(k)]
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
