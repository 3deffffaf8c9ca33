"""Shared fixtures and independent oracles for the tests (no relusym code is used by the oracles)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"

# Keras 3 tests make their files with keras itself, on the torch backend (the one installed here and in CI)
os.environ.setdefault("KERAS_BACKEND", "torch")


@pytest.fixture(scope="session")
def spec() -> dict[str, Any]:
    return json.loads((DATA / "spec_examples.json").read_text())
