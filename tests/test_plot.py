"""relusym.plot: every kind of figure renders to a valid, non-blank image; domains show every kink; files are
written atomically in the format of their suffix; the HTML report is self-contained and complete."""

from __future__ import annotations

import base64
import html
import json
import subprocess
import sys
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from relusym import InvalidNetworkError, Network, flip
from relusym._core.normal_form import normal_form

pytest.importorskip("matplotlib")

from matplotlib import image as mpimg  # noqa: E402

from relusym import plot, report  # noqa: E402

from strategies import seeded_int_network

DATA = Path(__file__).parent / "data" / "spec_examples.json"
FIGSIZE = (7.0, 4.0)
DPI = 50
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def spec_net(name: str) -> Network:
    return Network.from_dict(json.loads(DATA.read_text())["networks"][name]["network"])


def figsize_for(nets: list[Network]) -> tuple[float, float]:
    """Room for every panel (one column per network, one row per output, a difference panel for m ≥ 2)."""
    return (4.6 * len(nets) + 2.0, 5.0 * min(nets[0].k, 4))


def check_png(path: Path, figsize: tuple[float, float] = FIGSIZE, dpi: float = DPI) -> np.ndarray:
    """A valid PNG of the expected pixel size that is neither blank nor all white."""
    assert path.read_bytes()[:8] == PNG_MAGIC
    img = mpimg.imread(str(path))
    assert img.shape[:2] == (round(figsize[1] * dpi), round(figsize[0] * dpi))
    rgb = img[..., :3]
    assert float(rgb.var()) > 0
    assert float(rgb.min()) < 0.5  # something dark was drawn, not just white
    return img


def titles(fig) -> str:
    return "\n".join(ax.get_title() for ax in fig.axes) + "\n" + (fig._suptitle.get_text() if fig._suptitle else "")


def legend_texts(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts())


E2 = Network([[1, 1]], [[1], [-1]], [0, 1])
E2_FLIP = flip(E2, [0, 1])


# ----------------------------------------------------------------------------------------------------------
# import hygiene


def test_import_relusym_does_not_import_matplotlib():
    code = "import relusym, sys; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_plot_module_does_not_import_matplotlib():
    code = "import relusym.plot, sys; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------------------------------------------
# every kind of figure


CASES = {
    "m1_single": ([spec_net("E3")], ["E3"]),
    "m1_flip": ([E2, E2_FLIP], ["E2", "flipped"]),
    "m1_k2": ([spec_net("E15"), spec_net("E16")], ["E15", "E16"]),
    "m1_four_orbits": (
        [
            spec_net("E12"),
            Network([[4, -2, 3]], [[1], [-1], [-1]], [0, 0, 1], [-3]),
            Network([[2, 2, 1]], [[1], [1], [-1]], [0, -1, 1], [-1]),
            Network([[2, 4, -1]], [[-1], [1], [-1]], [0, -1, 1], [1]),
        ],
        None,
    ),
    "m2_single": ([spec_net("E6")], ["E6"]),
    "m2_compare": (
        [spec_net("E13"), Network([[2, 3, -1, 1]], [[1, 0], [0, 1], [1, 2], [-1, -2]], [0, 0, 1, -1], [1])],
        None,
    ),
    "m2_k2": ([spec_net("E8")], ["E8"]),
    "m3_slice": ([seeded_int_network(1, 3, 5)], ["random"]),
    "m1_counterexample": ([spec_net("E1"), Network([[1, 2]], [[1], [-1]], [0, 1], ["1/1000"])], None),
    "m2_counterexample": ([spec_net("E6"), spec_net("E7")], ["E6", "E7"]),
    "m3_counterexample": ([seeded_int_network(2, 3, 4), seeded_int_network(3, 3, 4)], None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_kind_of_figure_renders(case, tmp_path):
    nets, labels = CASES[case]
    path = tmp_path / f"{case}.png"
    fs = figsize_for(nets)
    plot.plot_to_file(nets, path, labels=labels, figsize=fs, dpi=DPI)
    check_png(path, fs)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind


def test_flip_is_named_in_the_title():
    fig = plot.plot_networks([E2, E2_FLIP], ["E2", "flipped"])
    text = titles(fig)
    assert "T = {0, 1}" in text and "O4" in text
    assert "ρ(θ1), for comparison" in legend_texts(fig)


def test_orbit_and_other_orbit_titles():
    h_e2 = Network([[2, "1/3"]], [["1/2"], [-3]], [0, 3])  # a positive rescaling of E2
    fig = plot.plot_networks([E2, h_e2, Network([[4, -2, 3]], [[1], [-1], [-1]], [0, 0, 1], [-3])], compare=True)
    text = titles(fig)
    assert "h ∈ H_n (O0)" in text
    assert "NOT the same function" in text
    fig = plot.plot_networks([spec_net("E12"), Network([[4, -2, 3]], [[1], [-1], [-1]], [0, 0, 1], [-3])])
    assert "another H_n-orbit" in titles(fig)


@pytest.mark.parametrize("case", ["m1_counterexample", "m2_counterexample", "m3_counterexample"])
def test_counterexample_is_marked(case):
    nets, _ = CASES[case]
    fig = plot.plot_networks(nets)
    assert "NOT the same function" in titles(fig)
    legend = legend_texts(fig)
    assert "counterexample x = " in legend and "ρ(θ1)(x) =" in legend and "ρ(θ2)(x) =" in legend


def test_m1_counterexample_values_are_exact():
    fig = plot.plot_networks([spec_net("E1"), Network([[1, 2]], [[1], [-1]], [0, 1], ["1/1000"])])
    assert "ρ(θ2)(x) = 2001/1000" in legend_texts(fig)


def test_m2_difference_panel_only_when_not_equivalent():
    e13b = CASES["m2_compare"][0][1]
    fig = plot.plot_networks([spec_net("E13"), e13b])
    assert "ρ(θ2) − ρ(θ1)" not in titles(fig)
    fig = plot.plot_networks([spec_net("E6"), spec_net("E7")])
    assert "ρ(θ2) − ρ(θ1)" in titles(fig)


def test_slice_is_stated_in_the_title():
    net = seeded_int_network(4, 3, 5)
    fig = plot.plot_networks([net], directions=[(1, 0, 0), (0, 1, 1)], origin=(0, 0, 1))
    text = titles(fig)
    assert "slice x = x0 + s·d1 + t·d2" in text and "d2 = (0, 1, 1)" in text and "x0 = (0, 0, 1)" in text
    fig = plot.plot_networks([net])  # random directions, seed 0: deterministic
    assert plot.choose_slice(3) == plot.choose_slice(3)
    assert "slice" in titles(fig)


def test_plot_network_on_given_axes_and_domain_override():
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    assert plot.plot_network(spec_net("E2"), ax, domain=[(-5, 7)]) is ax
    assert ax.get_xlim() == (-5.0, 7.0)
    ax2 = plot.plot_network(spec_net("E6"), domain=[(-3, 3), (-2, 2)])
    assert ax2.get_xlim() == (-3.0, 3.0) and ax2.get_ylim() == (-2.0, 2.0)
    ax3 = plot.plot_network(spec_net("E15"))  # k = 2 on one axes: one colour per output
    assert {"output 1", "output 2"} <= set(ax3.get_legend_handles_labels()[1])


def test_large_networks_render_quickly_and_cap_the_lines(tmp_path):
    rng = np.random.default_rng(0)
    big1 = Network(rng.standard_normal((1, 1200)), rng.standard_normal((1200, 1)), rng.standard_normal(1200))
    big2 = Network(
        rng.standard_normal((1, 1000)).astype(np.float32),
        rng.standard_normal((1000, 2)).astype(np.float32),
        rng.standard_normal(1000).astype(np.float32),
    )
    for name, net in (("big1", big1), ("big2", big2)):
        fig = plot.plot_networks([net], figsize=FIGSIZE, dpi=DPI)
        path = tmp_path / f"{name}.png"
        plot.plot_to_file([net], path, figsize=FIGSIZE, dpi=DPI)
        check_png(path)
        assert "of 1" in legend_texts(fig)  # "... largest of 1200 / 1000 shown"


# ----------------------------------------------------------------------------------------------------------
# domains


def far_net_m1() -> Network:
    # kinks at x = 1000 (a = 1e-3), x = −2 and x = 1/2
    return Network([[1, -2, 3]], [["1/1000"], [1], [-2]], [-1, 2, 1])


def test_auto_domain_m1_contains_every_kink_that_matters():
    for net in (spec_net("E2"), spec_net("E12"), spec_net("E15")):  # kinks of comparable |κ|: every one
        ((lo, hi),) = plot.auto_domain(net)
        for u, _ in normal_form(net).K:
            assert lo < float(-u[1]) < hi
    # far_net_m1: the kink at 1000 changes the slope by 1/1000, the others by 2 and 6: it is left out (the
    # window is where the function changes), unless every kink is asked for
    ((lo, hi),) = plot.auto_domain(far_net_m1())
    assert lo < -2 and 0.5 < hi < 10
    ((lo, hi),) = plot.auto_domain(far_net_m1(), every_kink=True)
    assert hi > 1000 and lo < -2
    assert plot.auto_domain(Network([[1]], [[0]], [1])) == ((-1.0, 1.0),)  # no kink


def test_auto_domain_includes_extra_points_and_several_networks():
    ((lo, hi),) = plot.auto_domain([spec_net("E2"), far_net_m1()], points=[(Fraction(-50),)])
    assert lo < -50 and 0.5 < hi < 100  # the point, and both networks' kinks that matter (−2, 0, 1/2, 1)
    ((lo, hi),) = plot.auto_domain([spec_net("E2"), far_net_m1()], points=[(Fraction(-50),)], every_kink=True)
    assert lo < -50 and hi > 1000


def _line_meets_window(u, plane, dom) -> bool:
    ((p, q, r),) = plane.lines(np.array([[float(x) for x in u]]))
    (s0, s1), (t0, t1) = dom
    # the line meets the rectangle iff p s + q t + r changes sign (or vanishes) over its corners
    vals = [p * s + q * t + r for s in (s0, s1) for t in (t0, t1)]
    return min(vals) <= 0 <= max(vals)


def test_auto_domain_m2_every_kink_line_crosses_the_window():
    far = Network([[1, 2, -1]], [["1/1000", 0], [1, 1], [0, -3]], [1, -4, 600])  # lines far from the origin
    for net in (far, spec_net("E6"), spec_net("E13"), seeded_int_network(5, 2, 8)):
        plane = plot.choose_slice(2)
        dom = plot.auto_domain(net, plane=plane)
        assert len(dom) == 2
        for u, _ in normal_form(net).K:
            assert _line_meets_window(u, plane, dom)
    (s0, s1), (t0, t1) = plot.auto_domain(far)  # no slice: the window of the inputs (x, y) themselves
    assert s0 < -1000 < s1 and t0 < 200 < t1  # the lines x = -1000 and y = 200 (not their mirror images)
    for u, _ in normal_form(far).K:  # and x + y = 4: every kink line a·(x, y) + b = 0 crosses the window
        p, q, r = (float(x) for x in u)
        corners = [p * s + q * t + r for s in (s0, s1) for t in (t0, t1)]
        assert min(corners) < 0 < max(corners), u


def test_auto_domain_m3_slice_shows_every_kink_not_parallel_to_it():
    net = Network([[1, 1, 1]], [["1/1000", 0, 0], [0, 1, 0], [1, 1, 1]], [-1, 3, -5])
    plane = plot.choose_slice(3, directions=[(1, 0, 0), (0, 1, 0)])
    dom = plot.auto_domain(net, plane=plane)
    for u, _ in normal_form(net).K:
        assert _line_meets_window(u, plane, dom)


def test_bad_domain_and_slice_arguments():
    with pytest.raises(InvalidNetworkError, match="with lo < hi"):
        plot.plot_networks([spec_net("E2")], domain=[(1, 0)])
    with pytest.raises(InvalidNetworkError):
        plot.choose_slice(3, directions=[(1, 0, 0), (2, 0, 0)])
    with pytest.raises(InvalidNetworkError):
        plot.plot_networks([spec_net("E2"), spec_net("E6")])  # different m
    with pytest.raises(InvalidNetworkError):
        plot.plot_networks([])


# ----------------------------------------------------------------------------------------------------------
# files


def test_svg_and_pdf_are_written(tmp_path):
    svg, pdf = tmp_path / "f.svg", tmp_path / "f.PDF"
    plot.plot_to_file([E2, E2_FLIP], svg, labels=["a", "b"])
    plot.plot_to_file(spec_net("E6"), pdf)
    assert b"<svg" in svg.read_bytes()[:2000]
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.PDF", "f.svg"]


def test_existing_file_is_replaced(tmp_path):
    path = tmp_path / "f.png"
    path.write_bytes(b"old")
    plot.plot_to_file([E2], path, figsize=FIGSIZE, dpi=DPI)
    check_png(path)


@pytest.mark.parametrize("name", ["f.jpg", "f", "f.png.txt"])
def test_unknown_suffix_is_an_error_and_writes_nothing(tmp_path, name):
    with pytest.raises(InvalidNetworkError, match="png"):
        plot.plot_to_file([E2], tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_failed_drawing_leaves_nothing(tmp_path):
    with pytest.raises(InvalidNetworkError):
        plot.plot_to_file([E2], tmp_path / "f.png", outputs=[3])
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------------------------------------
# HTML report


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.imgs: list[str] = []
        self.external: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("h1", "h2"):
            self._in = tag
            self.headings.append("")
        if tag == "img":
            self.imgs.append(a.get("src") or "")
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith(("data:", "#")):
                self.external.append(a[key])
        if tag in ("script", "link", "iframe"):
            self.external.append(tag)

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.headings[-1] += data


def parse_report(text: str) -> _Collect:
    p = _Collect()
    p.feed(text)
    p.close()
    return p


@pytest.mark.parametrize("name", ["E2", "E6", "E15"])
def test_report_sections_and_embedded_png(name, tmp_path):
    net = spec_net(name)
    text = report.report_html(net, name=name)
    p = parse_report(text)
    for heading in ("Summary", "Normal form", "Stabilizer", "Fibre", "Plots"):
        assert heading in p.headings
    assert any(name in h for h in p.headings)
    assert p.external == []
    pngs = [s for s in p.imgs if s.startswith("data:image/png;base64,")]
    assert pngs
    raw = base64.b64decode(pngs[0].split(",", 1)[1], validate=True)
    assert raw[:8] == PNG_MAGIC
    f = tmp_path / "img.png"
    f.write_bytes(raw)
    img = mpimg.imread(str(f))
    assert img.ndim == 3 and float(img[..., :3].var()) > 0
    assert normal_form(net).digest() in text
    out = tmp_path / "r.html"
    report.report_to_file(net, out, name)
    assert out.read_text(encoding="utf-8") == text
    assert sorted(x.name for x in tmp_path.iterdir()) == ["img.png", "r.html"]


def test_report_escapes_the_name():
    text = report.report_html(E2, name="<b>&x</b>")
    assert "<b>&x</b>" not in text and "&lt;b&gt;" in text


def test_report_fibre_table_text_and_flip_picture():
    """The fibre table, the fibre's text report and the picture of a hidden flip (E2 has the flip T = {0, 1})."""
    from relusym import fiber

    text = report.report_html(E2, name="E2")
    assert "fibre summary unavailable" not in text
    assert html.escape(fiber(E2).report()) in text and "dimension" in text
    assert "flip_T(θ), T = {0, 1}" in text
    assert len(parse_report(text).imgs) == 2
