"""Shared fixtures and independent oracles for the tests (no relusym code is used by the oracles)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

DATA = Path(__file__).parent / "data"

# Keras 3 tests make their files with keras itself, on the torch backend (the one installed here and in CI)
os.environ.setdefault("KERAS_BACKEND", "torch")

# No test may depend on the machine's speed: hypothesis's per-example deadline (200 ms) and its too_slow health
# check are wall-clock bounds, so neither applies anywhere (explicit @settings inherit this profile)
# Under CI (CI=true) the examples are derandomized: a submission is judged on the same examples every run, and the
# exploration that finds new bugs happens in development runs, where a failure is kept in the example database.
settings.register_profile(
    "relusym",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("CI", "").lower() == "true",
)
settings.load_profile("relusym")


@pytest.fixture(scope="session")
def spec() -> dict[str, Any]:
    return json.loads((DATA / "spec_examples.json").read_text())
