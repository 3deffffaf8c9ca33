"""Helpers shared by the tests of the fibre and of the minimal width (spec §5, §6): the worked examples, plain
parameter lists for the oracles, and a rank over ℚ that is independent of relusym.linalg (the random networks
these tests draw live in ``strategies.py``)."""

from __future__ import annotations

from relusym import Network

from oracles import rank_q  # noqa: F401  (re-exported for the fibre tests)

NAMES = [f"E{i}" for i in range(1, 17)]


def net_from_dict(d) -> Network:
    return Network.from_dict(d)


def plain(net: Network):
    """(V, A, b, c) as plain lists, for the oracles."""
    d = net.to_dict()
    return d["V"], d["A"], d["b"], d["c"]
