"""The documentation site cannot rot: it builds with warnings as errors, its links resolve, and its code runs.

- The site is built with ``mkdocs build --strict`` into a temporary directory (mkdocs itself then refuses a broken
  link, a missing anchor or a docstring it cannot render); the test then checks, independently of mkdocs, that
  every page of the navigation was written and that every internal link of the built HTML points at a file that
  exists and at an ``id`` that exists in it.
- Every ``python`` block of ``docs/index.md``, ``docs/tutorials/*.md`` and ``docs/math/*.md`` is executed, and every
  ``pycon`` block is run as a doctest (its printed output must match), in the order of the page, in one namespace
  per page, in a temporary working directory that holds a copy of ``examples/`` and ``docs/gallery/``.
  A page that needs an optional package says so in a comment ``<!-- requires: torch -->``.
"""

from __future__ import annotations

import doctest
import html.parser
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

CODE_PAGES = sorted(
    [DOCS / "index.md", *(DOCS / "tutorials").glob("*.md"), *(DOCS / "math").glob("*.md")],
    key=lambda p: str(p),
)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
REQUIRES = re.compile(r"<!--\s*requires:\s*([\w ,.-]+?)\s*-->")


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """The fenced blocks of a Markdown page as (language, code, line number), in order."""
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def test_code_blocks_are_found() -> None:
    blocks = code_blocks("text\n```python\nx = 1\n```\n\n```pycon\n>>> x\n1\n```\n```bash\nls\n```\n")
    assert [(lang, line) for lang, _, line in blocks] == [("python", 2), ("pycon", 6), ("bash", 10)]
    assert blocks[1][1] == ">>> x\n1\n"


@pytest.mark.parametrize("page", CODE_PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_page_code_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = page.read_text(encoding="utf-8")
    for names in REQUIRES.findall(text):
        for name in re.split(r"[ ,]+", names.strip()):
            pytest.importorskip(name, reason=f"{page.name} needs {name}")
    blocks = [(lang, code, line) for lang, code, line in code_blocks(text) if lang in ("python", "pycon")]
    if not blocks:
        pytest.skip(f"{page.name} has no Python code")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(DOCS / "gallery", tmp_path / "docs" / "gallery")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    parser = doctest.DocTestParser()
    for lang, code, line in blocks:
        where = f"{page.relative_to(ROOT)}:{line}"
        if lang == "python":
            exec(compile(code, where, "exec"), namespace)
            continue
        test = parser.get_doctest(code, namespace, where, str(page), line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        out: list[str] = []
        runner.run(test, out=out.append, clear_globs=False)
        namespace.update(test.globs)
        assert runner.failures == 0, f"{where}: a pycon block's output differs\n" + "".join(out)


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        d = dict(attrs)
        if d.get("id"):
            self.ids.add(str(d["id"]))
        if tag in ("a", "link") and d.get("href"):
            self.links.append(str(d["href"]))
        if tag in ("img", "script") and d.get("src"):
            self.links.append(str(d["src"]))


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.skip("mkdocs and mkdocstrings are not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def _nav_pages() -> list[str]:
    nav_lines = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1].splitlines()
    return [m.group(1) for line in nav_lines if (m := re.match(r"\s*-\s*(?:[^#:]+:\s*)?([\w/.-]+\.md)\s*$", line))]


def test_every_nav_page_is_built(site: Path) -> None:
    pages = _nav_pages()
    for required in ("index.md", "math/normal-form.md", "tutorials/pruning-torch.md", "reference/networks.md"):
        assert required in pages
    for page in pages:
        built = site / ("index.html" if page == "index.md" else page[: -len(".md")] + "/index.html")
        assert built.is_file(), f"{page} was not built"
        assert (DOCS / page).is_file()


def test_every_public_name_has_a_reference_entry(site: Path) -> None:
    import relusym

    ids: set[str] = set()
    for page in (site / "reference").glob("*/index.html"):
        ids |= _parse(page).ids
    for name in relusym.__all__:
        anchors = {f"relusym.{name}", f"relusym._alignment.{name}", f"relusym._approx.{name}", f"relusym.errors.{name}"}
        assert ids & anchors, f"relusym.{name} is not documented in docs/reference/"
    for module in ("relusym.io", "relusym.plot", "relusym.report", "relusym.errors"):
        assert module in ids


def test_internal_links_resolve(site: Path) -> None:
    broken: list[str] = []
    parsed: dict[Path, _Links] = {}
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        links = parsed.setdefault(page, _parse(page)).links
        for href in links:
            url = urlsplit(href)
            if url.scheme or url.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = page if not url.path else (page.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {href}")
                continue
            if url.fragment and target.suffix == ".html":
                ids = parsed.setdefault(target, _parse(target)).ids
                if unquote(url.fragment) not in ids:
                    broken.append(f"{page.relative_to(site)}: {href} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(broken)


def test_math_is_rendered_without_the_network(site: Path) -> None:
    page = (site / "math" / "normal-form" / "index.html").read_text(encoding="utf-8")
    assert 'class="arithmatex"' in page
    assert "\\(" in page
