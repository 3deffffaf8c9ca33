"""The digest's definition for the zoo's batched digests: ``reference_digest`` (scheme relusym.nf/2, from
Fractions) of the exact normal form, for one network and for every network of a stack."""

from __future__ import annotations

from typing import Any

import relusym
from relusym import Network, normal_form
from relusym._core.digest import reference_digest


def expected_digest(net: Network) -> str:
    """The definition from the exact normal form (what ``normal_form(net).digest()`` returns under relusym.nf/2)."""
    nf = normal_form(net)
    return reference_digest(nf.m, nf.k, nf.K, nf.M, nf.e)


def stack_definition(V: Any, A: Any, b: Any, c: Any) -> list[str | None]:
    """``expected_digest`` of every network of the stack (V[i], A[i], b[i], c[i]); None where ``Network`` refuses it."""
    out: list[str | None] = []
    for i in range(A.shape[0]):
        try:
            out.append(expected_digest(Network(V[i], A[i], b[i], c[i])))
        except relusym.InvalidNetworkError:
            out.append(None)
    return out
