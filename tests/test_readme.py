"""The README's Python snippets run, in order, as a new user would run them from the repository root."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_has_python_snippets() -> None:
    assert len(_blocks()) >= 3


def test_readme_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    env: dict[str, object] = {"__name__": "__readme__"}
    for i, block in enumerate(_blocks()):
        try:
            exec(compile(block, f"README.md python block {i + 1}", "exec"), env)
        except Exception as exc:  # pragma: no cover - the message names the block
            raise AssertionError(f"README python block {i + 1} fails: {type(exc).__name__}: {exc}") from exc
