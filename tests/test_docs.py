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

import ast
import doctest
import html.parser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
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
    every = code_blocks(text)
    blocks = [(lang, code, line) for lang, code, line in every if lang in ("python", "pycon")]
    cli = [
        (code.strip(), shown, line)
        for (lang, code, line), (next_lang, shown, _) in zip(every, every[1:], strict=False)
        if lang == "bash" and next_lang == "text" and re.fullmatch(r"relusym [^\n;&|]+", code.strip())
    ]
    if not blocks and not cli:
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
    for command, shown, line in cli:  # a command followed by its output: the output must be what it prints
        args = command.split()[1:]
        proc = subprocess.run([sys.executable, "-m", "relusym", *args], capture_output=True, text=True)
        assert proc.stdout.strip() == shown.strip(), (
            f"{page.relative_to(ROOT)}:{line}: `{command}` prints\n{proc.stdout}"
        )


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
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([*command, "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True, env=env)
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
        stem = page[: -len(".md")]
        built = site / (stem[: -len("index")] if stem.endswith("index") else stem + "/") / "index.html"
        assert built.is_file(), f"{page} was not built"
        assert (DOCS / page).is_file()


def test_every_public_name_has_a_reference_entry(site: Path) -> None:
    import relusym

    ids: set[str] = set()
    for page in (site / "reference").rglob("index.html"):
        ids |= _parse(page).ids
    for name in relusym.__all__:
        anchors = {
            f"relusym.{name}",
            f"relusym._tolerance.alignment.{name}",
            f"relusym._tolerance.approx.{name}",
            f"relusym.errors.{name}",
            f"relusym.zoo.{name}",
            f"relusym._identify.identify.{name}",
        }
        assert ids & anchors, f"relusym.{name} is not documented in docs/reference/"
    for module in ("relusym.io", "relusym.plot", "relusym.report", "relusym.errors"):
        assert module in ids


def broken_links(site: Path) -> list[str]:
    """Internal links of the built HTML whose file or ``#anchor`` does not exist (404.html links from the root)."""
    broken: list[str] = []
    parsed: dict[Path, _Links] = {}

    def links(path: Path) -> _Links:  # each page parsed once (a setdefault(path, _parse(path)) parses every time)
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    for page in sorted(p for p in site.rglob("*.html") if p.name != "404.html"):
        for href in links(page).links:
            url = urlsplit(href)
            if url.scheme or url.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = page if not url.path else (page.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {href}")
            elif url.fragment and target.suffix == ".html":
                if unquote(url.fragment) not in links(target).ids:
                    broken.append(f"{page.relative_to(site)}: {href} (no such anchor)")
    return broken


def test_the_link_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text('<h1 id="top">A</h1><a href="../b/">b</a><a href="#top">up</a>')
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "index.html").write_text(
        '<a href="../a/#top">ok</a><a href="../a/#nowhere">bad anchor</a><img src="../c.png"><a href="https://x.org/">x</a>'
    )
    assert broken_links(tmp_path) == ["b/index.html: ../a/#nowhere (no such anchor)", "b/index.html: ../c.png"]


def test_internal_links_resolve(site: Path) -> None:
    assert len(list(site.rglob("*.html"))) > 20
    broken = broken_links(site)
    assert not broken, "broken internal links:\n" + "\n".join(broken)


def test_pages_load_nothing_from_the_network(site: Path) -> None:
    """Every script and stylesheet is a file of the site (an air-gapped reader opening ``site/`` from disk sees the
    same pages), KaTeX and every font its stylesheet names included."""
    remote = []
    for page in sorted(site.rglob("*.html")):
        parsed = _Assets()
        parsed.feed(page.read_text(encoding="utf-8"))
        where = page.relative_to(site)
        remote += [f"{where}: {url}" for url in parsed.assets if urlsplit(url).scheme or url.startswith("//")]
    assert not remote, "pages that need the network:\n" + "\n".join(remote)
    katex = site / "javascripts" / "katex"
    assert (katex / "katex.min.js").is_file() and (katex / "LICENSE").is_file()
    fonts = re.findall(r"url\(([^)]+)\)", (katex / "katex.min.css").read_text(encoding="utf-8"))
    assert len(fonts) >= 10 and all(f.endswith(".woff2") for f in fonts)
    missing = [f for f in fonts if not (katex / f).is_file()]
    assert not missing, f"fonts named by katex.min.css but not shipped: {missing}"
    page = (site / "math" / "normal-form" / "index.html").read_text(encoding="utf-8")
    assert page.count('class="arithmatex"') > 10 and "\\(" in page  # TeX for the renderer, in the page itself
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "katex/katex.min.js" in index and "katex-render.js" in index and "katex/katex.min.css" in index


class _Assets(html.parser.HTMLParser):
    """The scripts and stylesheets a page loads."""

    def __init__(self) -> None:
        super().__init__()
        self.assets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        d = dict(attrs)
        if tag == "script" and d.get("src"):
            self.assets.append(str(d["src"]))
        if tag == "link" and d.get("href") and "stylesheet" in str(d.get("rel", "")):
            self.assets.append(str(d["href"]))


class _Rendered(html.parser.HTMLParser):
    """A page's DOM after its scripts ran: its formulas (``arithmatex`` elements) and how many of them hold KaTeX's
    rendering (a ``katex`` element inside), KaTeX's errors (``katex-error``), and the text a reader sees outside
    code (KaTeX's MathML copy keeps the TeX in an ``annotation``, which is not shown)."""

    HIDDEN = {"code", "pre", "script", "style", "annotation", "textarea", "template", "noscript", "title"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.formulas = self.rendered = self.errors = 0
        self.open: list[tuple[str, bool]] = []  # the open elements: (tag, is a formula not yet seen rendered)
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = str(dict(attrs).get("class") or "").split()
        self.errors += "katex-error" in classes
        if "katex" in classes:
            for i in range(len(self.open) - 1, -1, -1):
                if self.open[i][1]:  # the innermost formula around it, counted once
                    self.open[i] = (self.open[i][0], False)
                    self.rendered += 1
                    break
        formula = "arithmatex" in classes
        self.formulas += formula
        if tag not in self.VOID:
            self.open.append((tag, formula))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                del self.open[i:]
                break

    def handle_data(self, data: str) -> None:
        if not any(tag in self.HIDDEN for tag, _ in self.open):
            self.text.append(data)


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        if found := shutil.which(name):
            return found
    return None


def _math_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("index.html") if 'class="arithmatex"' in p.read_text(encoding="utf-8"))


def rendered_dom(browser: str, page: Path, profile: Path) -> str:
    """The DOM of ``page`` (a file of the built site) after a headless Chromium ran its scripts, with every network
    request refused (no proxy reachable, no host name resolves): what a reader offline sees."""
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=20000",
        "--dump-dom",
        page.as_uri(),
    ]
    # the timeout only guards against a hung browser; it is not what the test measures
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "</html>" in proc.stdout, f"{browser} failed on {page}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def _check_rendered(dom: str, where: str) -> None:
    parsed = _Rendered()
    parsed.feed(dom)
    assert parsed.formulas > 0, f"{where}: no formulas in the page"
    assert parsed.rendered == parsed.formulas, f"{where}: {parsed.rendered} of {parsed.formulas} formulas rendered"
    assert parsed.errors == 0, f"{where}: KaTeX could not parse {parsed.errors} formulas"
    text = "".join(parsed.text)
    for raw in ("\\(", "\\)", "\\[", "\\]", "$$"):
        assert raw not in text, f"{where}: raw TeX {raw!r} left in the text: ...{text[text.find(raw) - 80 :][:200]}..."


def test_the_rendered_check_tells_raw_tex_from_katex() -> None:
    raw = '<html><body><p>Let <span class="arithmatex">\\(x\\)</span></p></body></html>'
    with pytest.raises(AssertionError, match="0 of 1 formulas rendered"):
        _check_rendered(raw, "raw")
    katex = (
        '<span class="katex"><span class="katex-mathml"><math><semantics><mi>x</mi><annotation encoding="tex">'
        '\\(x\\)</annotation></semantics></math></span><span class="katex-html">x<br></span></span>'
    )
    done = f'<html><body><p>Let <span class="arithmatex">{katex}</span> and <code>\\(y\\)</code></p></body></html>'
    _check_rendered(done, "done")
    with pytest.raises(AssertionError, match="raw TeX"):
        _check_rendered(done.replace("</p>", "$$z$$</p>"), "dollars")
    with pytest.raises(AssertionError, match="raw TeX"):  # a heading's formula in the table of contents
        _check_rendered(done.replace("<p>", '<nav><a href="#t">The map \\(\\rho\\)</a></nav><p>'), "toc")
    # a rendering outside the formula does not count for it (the table of contents renders its own copies)
    beside = done.replace(f'<span class="arithmatex">{katex}</span>', f'<span class="arithmatex">x</span>{katex}')
    with pytest.raises(AssertionError, match="0 of 1 formulas rendered"):
        _check_rendered(beside, "beside")


def test_math_renders_offline_in_a_headless_browser(site: Path, tmp_path: Path) -> None:
    """The home page (its first sentence has a formula) and the heaviest mathematics page, opened from disk with
    the network refused: every formula is KaTeX's rendering, none is raw TeX."""
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium)")
    for page in (site / "index.html", site / "math" / "strata" / "index.html"):
        _check_rendered(rendered_dom(browser, page, tmp_path / "profile"), str(page.relative_to(site)))


@pytest.mark.slow
def test_every_math_page_renders_offline_in_a_headless_browser(site: Path, tmp_path: Path) -> None:
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium)")
    pages = _math_pages(site)
    assert len(pages) >= 10
    for page in pages:
        _check_rendered(rendered_dom(browser, page, tmp_path / "profile"), str(page.relative_to(site)))


# --- the table of worked examples (docs/math/examples.md) is recomputed from its own network column ---------------

EXAMPLES_PAGE = DOCS / "math" / "examples.md"


def _q(x: object) -> str:
    return str(x)


def _vec(xs: Sequence[object]) -> str:
    return _q(xs[0]) if len(xs) == 1 else "(" + ", ".join(map(_q, xs)) + ")"


def example_row(name: str, net: Any) -> str:
    """One row of the worked-examples table, computed by relusym from the network."""
    from relusym import fiber, normal_form, stabilizer

    d = net.to_dict()
    lit = ", ".join(json.dumps([[_num(x) for x in row] for row in M]) for M in (d["V"], d["A"]))
    lit += ", " + json.dumps([_num(x) for x in d["b"]]) + ", " + json.dumps([_num(x) for x in d["c"]])
    nf = normal_form(net)
    classes = ", ".join(f"({', '.join(map(_q, u))}): {_vec(kap)}" for u, kap in nf.K) or "none"
    M = [[_q(x) for x in row] for row in nf.M]
    m_text = M[0][0] if len(M) == 1 and len(M[0]) == 1 else "[" + ", ".join("[" + ", ".join(r) + "]" for r in M) + "]"
    st = stabilizer(net)
    fb = fiber(net)
    blocks = " ".join("{" + ", ".join(map(str, b)) + "}" for b in st.blocks) or "–"
    flips = "–" if fb.flips is None else str(len(fb.flips))
    orbits = "–" if fb.orbits is None else str(fb.orbits)
    yes = {True: "yes", False: "no"}
    cells = [
        name,
        f"`{lit.replace(chr(34), '')}`",
        f"{classes}; M = {m_text}; e = {_vec(nf.e)}",
        f"{st.inactive}, {blocks}, {st.order}",
        yes[fb.generic],
        yes[fb.rigid],
        flips,
        str(fb.width),
        str(fb.dimension),
        orbits,
    ]
    return "| " + " | ".join(cells) + " |"


def _num(x: str) -> int | str:
    return int(x) if "/" not in x else x


def test_worked_examples_table_is_what_relusym_computes() -> None:
    from relusym import Network

    rows = [line for line in EXAMPLES_PAGE.read_text(encoding="utf-8").splitlines() if re.match(r"\| E\d+ \|", line)]
    assert len(rows) == 16
    for row in rows:
        name, lit = (cell.strip() for cell in row.split("|")[1:3])
        V, A, b, c = ast.literal_eval(_quote_fractions(lit.strip("`")))
        net = Network(V, A, b, c)
        assert example_row(name, net) == row, f"the row of {name} differs from what relusym computes"


def _quote_fractions(text: str) -> str:
    return re.sub(r"(-?\d+/\d+)", r'"\1"', text)


def test_plain_text_docstrings_are_rendered_faithfully() -> None:
    spec = importlib.util.spec_from_file_location("griffe_doctests", DOCS / "_ext" / "griffe_doctests.py")
    if spec is None or spec.loader is None or importlib.util.find_spec("griffe") is None:
        pytest.skip("griffe (mkdocstrings[python]) is not installed")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "See :func:`~relusym.fiber`, with d\n> 0.  Then::\n\n    x = 1\n\n>>> 1 + 1\n2\n\nafter"
    assert module.fence_doctests(text) == (
        "See `relusym.fiber`, with d\n\\> 0.  Then:\n\n    x = 1\n\n```pycon\n>>> 1 + 1\n2\n```\n\nafter"
    )
