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
