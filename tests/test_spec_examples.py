"""The worked examples E1–E16 of spec §9: normal forms, equivalences both ways, stabilizers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from relusym import Network, equivalent, find_symmetry, flip, normal_form, stabilizer
from relusym._core.normal_form import NormalForm

from oracles import eval_oracle

F = Fraction

# NF (K; M; e) as printed in the table of spec §9
NF_TABLE = {
    "E1": ([((1, -1), (2,)), ((1, 0), (1,))], [[-2]], [2]),
    "E2": ([((1, -1), (1,)), ((1, 0), (1,))], [[-1]], [1]),
    "E3": ([((1, 0), (2,))], [[-1]], [0]),
    "E4": ([], [[1]], [0]),
    "E5": ([((1, 1), (4,))], [[0]], [0]),
    "E6": ([((0, 1, 0), (1,)), ((1, 0, 0), (1,)), ((1, 1, -1), (-2,))], [[0, 0]], [F(1, 2)]),
    "E7": ([((0, 1, 0), (1,)), ((1, 0, 0), (1,)), ((1, 1, -1), (-1,))], [[0, 0]], [F(1, 2)]),
    "E8": ([], [[1, 0], [0, 1]], [0, 0]),
    "E9": ([((1, -1), (1,)), ((1, 0), (2,))], [[-1]], [0]),
    "E10": ([((1, 0), (1,))], [[0]], [7]),
    "E11": ([((0, 1, 1), (1,)), ((1, 0, 0), (2,))], [[-1, 0]], [0]),
    "E12": ([((1, -1), (3,)), ((1, 0), (2,))], [[-1]], [0]),
    "E13": ([((0, 1, 0), (3,)), ((1, 0, 0), (2,))], [[-1, -2]], [0]),
    "E14": ([((1, 0), (-1, 1))], [[0], [0]], [0, 0]),
    "E15": ([((1, -1), (1, 3)), ((1, 0), (1, 2))], [[-1], [-3]], [1, 3]),
    "E16": ([((1, -1), (1, 2)), ((1, 0), (1, 2))], [[-1], [-2]], [1, 2]),
}


def _net(d):
    return Network.from_dict(d)


@pytest.mark.parametrize("name", sorted(NF_TABLE, key=lambda s: int(s[1:])))
def test_normal_form_matches_table(spec, name):
    nf = normal_form(_net(spec["networks"][name]["network"]))
    K, M, e = NF_TABLE[name]
    assert [(u, kap) for u, kap in nf.K] == [(tuple(map(F, u)), tuple(map(F, kap))) for u, kap in K]
    assert nf.M == tuple(tuple(map(F, row)) for row in M)
    assert nf.e == tuple(map(F, e))
    # the JSON form round-trips to an equal normal form
    assert NormalForm.from_dict(nf.to_dict()) == nf
    assert NormalForm.from_dict(nf.to_dict()).digest() == nf.digest()


@pytest.mark.parametrize("name", [f"E{i}" for i in range(1, 17)])
def test_stabilizer_matches_examples(spec, name):
    ex = spec["networks"][name]
    st = stabilizer(_net(ex["network"]))
    assert st.inactive == ex["stabilizer"]["inactive"]
    assert st.order == ex["stabilizer"]["order"]
    assert [list(b) for b in st.blocks] == ex["stabilizer"]["blocks"]
    net = _net(ex["network"])
    for g in st.generators:
        assert g.act(net).same_parameters(net)


def _pairs(spec):
    return [(i, eq) for i, eq in enumerate(spec["equivalences"])]


def test_every_equivalence_pair_both_ways(spec):
    assert len(spec["equivalences"]) >= 19
    for eq in spec["equivalences"]:
        a = _net(spec["networks"][eq["first"]]["network"])
        b = _net(eq["second"])
        for x, y in ((a, b), (b, a)):
            v = equivalent(x, y)
            assert bool(v) is eq["equivalent"], (eq["first"], eq["why"])
            assert (normal_form(x) == normal_form(y)) is eq["equivalent"]
            if v:
                assert v.counterexample is None
                if v.witness is not None:
                    src = flip(x, v.flips) if v.flips else x
                    assert v.witness.act(src).same_parameters(y)
            else:
                ce = v.counterexample
                assert ce is not None
                to_lists = lambda n: ([list(r) for r in n.V.tolist()], n.A.tolist(), n.b.tolist(), n.c.tolist())  # noqa: E731
                assert eval_oracle(*to_lists(x), ce.x) != eval_oracle(*to_lists(y), ce.x)


def test_e2_flip_is_a_hidden_symmetry_not_an_orbit(spec):
    e2 = _net(spec["networks"]["E2"]["network"])
    flipped = next(_net(eq["second"]) for eq in spec["equivalences"] if eq["first"] == "E2" and eq["equivalent"])
    assert find_symmetry(e2, flipped) is None
    v = equivalent(e2, flipped)
    assert v and v.flips == (0, 1) and not v.in_orbit


def test_e1_orbit_witness(spec):
    e1 = _net(spec["networks"]["E1"]["network"])
    other = _net(spec["equivalences"][0]["second"])
    v = equivalent(e1, other)
    assert v.in_orbit and v.witness.permutation == (1, 0)
    assert v.witness.scales == (F(3), F(4))


def test_e12_second_orbit_is_not_a_flip_or_orbit(spec):
    e12 = _net(spec["networks"]["E12"]["network"])
    for eq in spec["equivalences"]:
        if eq["first"] == "E12":
            v = equivalent(e12, _net(eq["second"]))
            assert v and not v.in_orbit
