"""What document is this: the one key that names the layout of every JSON object relusym writes.

Every JSON object the library writes as a document (a network file, a normal form, a result's ``to_dict()``)
and every object the command line prints starts with ``"schema": "relusym.<name>/<version>"``: the name says
what the object is, the version which layout of its keys it follows.  ``schema`` is the key ``relusym canon
--json`` has always used; files written by earlier versions that named their layout under ``format`` (the
network and MLP files, ``relusym.network/1`` and ``relusym.mlp/1``) are still read (:func:`schema_of`).

Two keys that look alike are not document keys and keep their names: a domain's ``type`` (``box`` or
``polytope``, which kind of value a nested object is) and a load record's ``format`` (which file format was
read: ``onnx``, ``safetensors`` …).  The digest ``scheme`` of a deep normal form names how its digest is
computed, not the document.
"""

from __future__ import annotations

from typing import Any

from relusym.errors import InvalidNetworkError

__all__ = ["KEY", "OLD_KEYS", "schema_of", "check_schema", "tagged"]

KEY = "schema"  #: the one key naming a document's layout
OLD_KEYS = ("format",)  #: keys that earlier versions used for it, still read


def schema_of(d: dict[str, Any]) -> str | None:
    """The layout a JSON object names (under ``schema``, or an older version's key), or None."""
    for key in (KEY, *OLD_KEYS):
        value = d.get(key)
        if value is not None:
            return str(value)
    return None


def check_schema(d: dict[str, Any], expected: str, what: str) -> None:
    """Refuse an object that names a layout other than ``expected`` (an object naming none is accepted:
    hand-written files may leave it out)."""
    found = schema_of(d)
    if found is not None and found != expected:
        raise InvalidNetworkError(f"unknown {what} format {found!r}; expected {expected!r}")


def tagged(schema: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as a document: ``{"schema": schema, **body}`` (the key first)."""
    return {KEY: schema, **{k: v for k, v in body.items() if k != KEY}}
