"""A griffe extension for the documentation build only: render docstrings written as plain text faithfully.

The source docstrings are plain text with doctests and a few reStructuredText habits. Read as Markdown, a ``>>>``
doctest becomes a nested block quote, a wrapped line that starts with ``>`` (``> 0``) becomes a quote, a Sphinx role
such as ``:func:`fiber``` shows its role name, and a paragraph ending in ``::`` keeps both colons. This extension,
loaded by mkdocstrings (``mkdocs.yml``), fences every doctest as a ``pycon`` code block, escapes a leading ``>``
on other lines, turns roles into inline code and ``::`` into ``:``. It changes what the site shows, never the
source: the doctests still run as written.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):`~?([^`]+)`")


def fence_doctests(text: str) -> str:
    """``text`` with each doctest (a ``>>>`` line, its ``...`` lines and its output) in a ``pycon`` fence."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            out.append(line)
            i += 1
            continue
        if not in_fence and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(indent + "```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out.append(indent + "```")
            continue
        if not in_fence:
            if stripped.startswith(">"):
                line = line[: len(line) - len(stripped)] + "\\" + stripped
            line = ROLE.sub(r"`\1`", line)
            if line.endswith("::") and not line.endswith(" ::"):
                line = line[:-1]
        out.append(line)
        i += 1
    return "\n".join(out)


class PlainTextDocstrings(griffe.Extension):
    """Apply `fence_doctests` to every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
