"""One key names every JSON document relusym writes (``schema``, docs/architecture.md "One mechanism each"):
the result types carry it first in ``to_dict()``, the documents that can be read back round-trip, files of
earlier versions (which named their layout under ``format``) still load, and the command line's JSON keeps the
command's own schema."""

from __future__ import annotations

import json
from fractions import Fraction
from fractions import Fraction as F

import pytest

import relusym
import relusym.io
from relusym import MLP, Box, InvalidNetworkError, Network, NormalForm, Polytope
from relusym._base.document import KEY, check_schema, schema_of
from relusym._bounded.domain import domain_from_dict
from relusym._bounded.restriction import DomainNormalForm, normal_form_on
from relusym._cli.runtime import json_object

E2 = Network([[1, 1]], [[1], [-1]], [0, 1])  # a hidden flip
DEEP = MLP([[[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, -1]]], [[0, 1], [Fraction(1, 2), 0], [3]])


def _first_key(d: dict[str, object]) -> str:
    return next(iter(d))


def test_every_result_type_names_its_schema_first() -> None:
    other = Network([[1, 1]], [[1], [-1]], [0, 2])
    box = Box([-1], [1])
    results = {
        "relusym.network/1": E2,
        "relusym.mlp/1": DEEP,
        "relusym.normal-form/1": relusym.normal_form(E2),
        "relusym.domain-normal-form/1": normal_form_on(E2, box),
        "relusym.fiber/1": relusym.fiber(E2, budget=5.0),
        "relusym.approx-verdict/1": relusym.equivalent(E2, other, atol=1e-9),
        "relusym.domain-verdict/1": relusym.equivalent(E2, other, domain=box),
        "relusym.deep-verdict/1": relusym.equivalent(DEEP, DEEP, budget=5.0),
        "relusym.alignment/1": relusym.align(E2, E2),
        "relusym.verdict/1": relusym.equivalent(E2, E2),
        "relusym.stabilizer/1": relusym.stabilizer(E2),
        "relusym.mlp-symmetry/1": relusym.find_symmetry(DEEP, DEEP),
    }
    for schema, obj in results.items():
        d = obj.to_dict()
        assert _first_key(d) == KEY and d[KEY] == schema, (schema, list(d)[:3])
        assert json.loads(json.dumps(d))[KEY] == schema


def test_documents_round_trip() -> None:
    assert Network.from_dict(E2.to_dict()).same_parameters(E2)
    assert MLP.from_dict(DEEP.to_dict()) == DEEP
    nf = relusym.normal_form(E2)
    assert NormalForm.from_dict(json.loads(json.dumps(nf.to_dict()))) == nf
    dnf = normal_form_on(E2, Box([0], [2]))
    back = DomainNormalForm.from_dict(json.loads(json.dumps(dnf.to_dict())))
    assert back == dnf and back.digest() == dnf.digest()
    for dom in (Box([0, -1], [F(1, 3), 2]), Polytope([[1, 1], [-1, 0], [0, -1]], [1, 0, 0])):
        again = domain_from_dict(json.loads(json.dumps(dom.to_dict())))
        assert again == dom and again.to_dict() == dom.to_dict()
    with pytest.raises(InvalidNetworkError, match="not a domain"):
        domain_from_dict({"type": "ball"})


def test_files_of_earlier_versions_still_load(tmp_path) -> None:
    old = {"format": "relusym.network/1", "V": [["1", "1"]], "A": [["1"], ["-1"]], "b": ["0", "1"], "c": ["0"]}
    assert Network.from_dict(old).same_parameters(E2)
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert relusym.io.load(tmp_path / "old.json").same_parameters(E2)
    deep_old = {k: v for k, v in DEEP.to_dict().items() if k != KEY}
    deep_old = {"format": "relusym.mlp/1", **deep_old}
    (tmp_path / "deep_old.json").write_text(json.dumps(deep_old))
    assert relusym.io.load(tmp_path / "deep_old.json") == DEEP
    # what relusym writes now names its layout under the one key
    relusym.io.save(E2, tmp_path / "new.json")
    assert json.loads((tmp_path / "new.json").read_text())[KEY] == "relusym.network/1"


def test_a_document_of_another_kind_is_refused() -> None:
    with pytest.raises(InvalidNetworkError, match="unknown network format 'relusym.mlp/1'"):
        Network.from_dict({**E2.to_dict(), KEY: "relusym.mlp/1"})
    with pytest.raises(InvalidNetworkError, match="unknown MLP format 'relusym.network/1'"):
        MLP.from_dict({**{k: v for k, v in DEEP.to_dict().items() if k != KEY}, "format": "relusym.network/1"})
    with pytest.raises(InvalidNetworkError, match="unknown normal form format 'relusym.fiber/1'"):
        NormalForm.from_dict({**relusym.normal_form(E2).to_dict(), KEY: "relusym.fiber/1"})
    assert schema_of({}) is None and schema_of({"format": "x/1"}) == "x/1" and schema_of({KEY: "y/1"}) == "y/1"
    check_schema({}, "relusym.network/1", "network")  # hand-written files may leave the key out


def test_the_command_line_keeps_the_command_schema() -> None:
    fb = relusym.fiber(E2, budget=5.0).to_dict()
    out = json_object("fiber", fb, [])
    assert _first_key(out) == KEY and out[KEY] == "relusym.fiber/1"
    out = json_object("equiv", relusym.equivalent(DEEP, DEEP, budget=5.0).to_dict(), [])
    assert out[KEY] == "relusym.equiv/1" and out["status"] == "equal"


def test_verdicts_round_trip_with_their_certificates() -> None:
    """Verdict.from_dict(to_dict()) keeps the decision and the certificate, which still applies: the witness maps
    θ1 (flipped by the flip set) onto θ2 exactly, and the counterexample's outputs are those of the networks."""
    from relusym._core.equivalence import Verdict
    from relusym._core.operations import flip

    flipped = Network([[1, 1]], [[-1], [1]], [0, -1], [1])
    other = Network([[1, 1]], [[1], [-1]], [0, 2])
    yes = relusym.equivalent(E2, flipped)
    back = Verdict.from_dict(json.loads(json.dumps(yes.to_dict())))
    assert back.equivalent and back.flip_set == yes.flip_set and back.witness == yes.witness
    assert back.witness is not None and back.flip_set is not None
    assert back.witness.act(flip(E2, back.flip_set)).same_parameters(flipped)
    no = relusym.equivalent(E2, other)
    again = Verdict.from_dict(json.loads(json.dumps(no.to_dict())))
    assert not again.equivalent and again.counterexample == no.counterexample
    cex = again.counterexample
    assert cex is not None
    assert tuple(E2(list(cex.x))) == cex.y1 and tuple(other(list(cex.x))) == cex.y2 and cex.y1 != cex.y2
    with pytest.raises(InvalidNetworkError, match="unknown verdict format"):
        Verdict.from_dict({**no.to_dict(), "schema": "relusym.fiber/1"})
