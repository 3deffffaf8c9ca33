"""The examples in the docstrings are run, so that they stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import relusym

MODULES = sorted(m.name for m in pkgutil.walk_packages(relusym.__path__, "relusym.") if not m.name.endswith("__main__"))


def _has_examples(name: str) -> bool:
    mod = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    return any(t.examples for t in finder.find(mod))


@pytest.mark.parametrize("name", [m for m in MODULES if _has_examples(m)])
def test_docstring_examples(name: str) -> None:
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert res.failed == 0, f"{res.failed} of {res.attempted} docstring examples of {name} failed"
