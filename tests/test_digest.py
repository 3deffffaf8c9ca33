"""The normal-form digest: fixed values that must never change, and the vectorized integer computation
against the definition (SHA-256 of the canonical JSON of (m, k, K, M, e), built here from Fractions)."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from relusym import Network, normal_form

from conftest import DATA

RECORDED = json.loads((DATA / "digests.json").read_text())["networks"]


def _decode(d: dict[str, Any]) -> Any:
    shape = tuple(d["shape"])
    if d["dtype"] == "rational":
        out = np.empty(shape, dtype=object)
        out.ravel()[:] = [Fraction(x) for x in d["values"]]
        return out
    return np.array([float.fromhex(x) for x in d["values"]], dtype=np.float64).astype(d["dtype"]).reshape(shape)


def recorded_network(rec: dict[str, Any]) -> Network:
    return Network(_decode(rec["V"]), _decode(rec["A"]), _decode(rec["b"]), _decode(rec["c"]), m=rec["m"])


@pytest.mark.parametrize("rec", RECORDED, ids=[r["name"] for r in RECORDED])
def test_recorded_digests_never_change(rec):
    # E1–E16 and seeded float16/32/64 and rational networks (ties, opposite pairs, cancelling kinks, wide
    # exponent spreads, 30-digit rationals), digests recorded before the integer rewrite
    assert normal_form(recorded_network(rec)).digest() == rec["digest"]


def test_e1_to_e16_are_all_recorded(spec):
    names = {r["name"] for r in RECORDED}
    assert set(spec["networks"]) <= names
    for name, ex in spec["networks"].items():
        rec = next(r for r in RECORDED if r["name"] == name)
        assert recorded_network(rec).same_parameters(Network.from_dict(ex["network"]))
