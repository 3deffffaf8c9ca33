"""Every install line of the documentation names extras that pyproject.toml defines: ``pip install
relusym[EXTRA]`` or ``pip install -e '.[EXTRA,…]'`` in README.md and docs/**/*.md, each EXTRA an optional-dependency
group of the project."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# a pip install command up to the end of its line (or of its inline code span), then each [extras] in it
INSTALL = re.compile(r"pip install[^\n`]*")
EXTRAS = re.compile(r"(?:relusym|\.)\[([^\]]*)\]")


def _extras() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(data["project"]["optional-dependencies"])


def _install_lines() -> list[tuple[str, int, str]]:
    out = []
    for page in PAGES:
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            out += [(str(page.relative_to(ROOT)), n, cmd) for cmd in INSTALL.findall(line)]
    return out


def test_the_install_lines_are_found() -> None:
    lines = _install_lines()
    assert any(page == "docs/gallery.md" for page, _, _ in lines)
    assert any(EXTRAS.search(cmd) for _, _, cmd in lines)
    assert EXTRAS.findall("pip install -e '.[test,all]' && pip install 'relusym[zoo]'") == ["test,all", "zoo"]


def test_every_extra_named_in_the_docs_exists() -> None:
    extras = _extras()
    bad = []
    for page, n, cmd in _install_lines():
        for group in EXTRAS.findall(cmd):
            for name in (x.strip() for x in group.split(",")):
                if name not in extras:
                    bad.append(f"{page}:{n}: {cmd!r} names the extra {name!r}, which pyproject.toml does not define")
    assert not bad, "\n".join(bad)


def test_the_gallery_install_line_installs_matplotlib() -> None:
    text = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8")
    groups = [g for cmd in INSTALL.findall(text) for g in EXTRAS.findall(cmd)]
    assert groups == ["plot"]
    assert any(req.startswith("matplotlib") for req in _extras()["plot"])
    assert "pip install -e '.[plot]'" in text  # from a checkout, quoted for shells that glob brackets
