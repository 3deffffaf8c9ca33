"""``relusym canon --json``: the normal form streamed in the key order every command's JSON follows.

The order (docs/cli.md, "The JSON output"): ``schema`` first; then the shape (``m``, ``n``, ``k``, ``N``); then
the content (``kinks``, ``M``, ``e`` when included, then ``digest``, ``full``, ``shapes``); ``inputs`` last.
The kink classes are streamed block by block (:func:`relusym._core.normal_form.kinks_json`), never built as one
string, so that a normal form of millions of classes costs memory for one block.  The keys and values are
those of :mod:`relusym._core.nf_export` (schema ``relusym.canon/2``); only the order is the command line's.
"""

from __future__ import annotations

import json
from typing import IO, Any

from relusym._core.nf_export import FULL_BY_DEFAULT, SCHEMA
from relusym._core.nf_json import kinks_json
from relusym._core.normal_form import NormalForm

__all__ = ["KEY_ORDER", "write_canon"]

KEY_ORDER = ("schema", "m", "n", "k", "N", "kinks", "M", "e", "digest", "full", "shapes", "inputs")


def _small(d: dict[str, Any]) -> bytes:
    """``"key": value, …`` of a dict without its braces, as the other commands write their JSON."""
    return json.dumps(d, ensure_ascii=False)[1:-1].encode("utf-8", "backslashreplace")


def write_canon(nf: NormalForm, out: IO[bytes], n: int, *, full: bool | None, inputs: list[dict[str, Any]]) -> None:
    """Write the one ``relusym.canon/2`` object of ``nf`` (a network of width ``n``) to ``out``, in
    :data:`KEY_ORDER`.  ``full=None``: kinks, M and e when the normal form has at most
    :data:`relusym._core.nf_export.FULL_BY_DEFAULT` rational entries."""
    entries = nf.N * (nf.m + 1 + nf.k) + nf.k * nf.m + nf.k
    if full is None:
        full = entries <= FULL_BY_DEFAULT
    shapes = {"kinks": [nf.N, nf.m + 1], "kink_values": [nf.N, nf.k], "M": [nf.k, nf.m], "e": [nf.k]}
    out.write(b"{" + _small({"schema": SCHEMA, "m": nf.m, "n": n, "k": nf.k, "N": nf.N}))
    if full:
        if type(nf)._payload is NormalForm._payload:
            out.write(b', "kinks": [')
            for chunk in kinks_json(nf.classes, nf.kink_order):
                out.write(chunk)
            out.write(b"], " + _small({"M": nf.M_strings(), "e": nf.e_strings()}))
        else:  # a subclass hashing more than (m, k, K, M, e): its own JSON form
            d = nf.to_dict()
            out.write(b", " + _small({"kinks": d["kinks"], "M": d["M"], "e": d["e"]}))
    tail = {"digest": nf.digest(), "full": full, "shapes": shapes, "inputs": inputs}
    out.write(b", " + _small(tail) + b"}\n")
