"""A self-contained HTML report about one network: its normal form, stabilizer, fibre and pictures.

The page embeds its figures as base64 PNG and loads nothing from outside, so it can be mailed or archived as one
file.  Drawing needs the ``plot`` extra (matplotlib); without it the page says so and keeps the exact sections.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from relusym._base.display import vector
from relusym._base.fileio import atomic_write
from relusym._base.progress import progress_bar
from relusym._core.group import stabilizer
from relusym._core.network import Network
from relusym._core.normal_form import normal_form
from relusym._core.operations import flip
from relusym._fibre.fiber import Fiber, fiber
from relusym.errors import InvalidNetworkError
from relusym.plot import plot_networks, png_base64

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["report_html", "report_to_file"]


_CSS = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;font-size:.92em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto}img{max-width:100%;height:auto;border:1px solid #eee}
.note{color:#666;font-size:.9em}.wrap{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
td{vertical-align:top;max-width:60em}"""


def _row(cells: Sequence[str], head: bool = False) -> str:
    tag = "th" if head else "td"
    return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"


def _exact_vec(values: Sequence[Any], limit: int | None = 8) -> str:
    """An exact vector for a person: each entry with its decimal, long exact forms left to the JSON output."""
    return vector(values, limit=limit)


def _yes_no(flag: bool | None, reason: str = "") -> str:
    word = "undecided" if flag is None else ("yes" if flag else "no")
    return f"{word} — {reason}" if reason else word


def _sets(sets: Sequence[Sequence[int]] | None, limit: int = 12) -> str:
    if sets is None:
        return "not enumerated"
    shown = ["∅" if not T else "{" + ", ".join(map(str, T)) + "}" for T in list(sets)[:limit]]
    more = f", … {len(sets) - limit} more" if len(sets) > limit else ""
    return ", ".join(shown) + more


TERMS = (
    "<p class='note'><b>Configuration (S, P).</b> A network realizing ρ(θ) carries each kink class (each "
    "hyperplane where the function bends) either by neurons of one orientation, or, for the classes in S, by a "
    "single neuron facing the other way, or, for the classes in P, by a pair of neurons of opposite orientations; "
    "the configuration records which classes are carried which way, and it fixes how many neurons are needed.</p>"
    "<p class='note'><b>Stratum.</b> The points of the fibre that share one configuration (S, P) and one number t "
    "of extra cancelling neuron pairs form a stratum: a smooth piece of the fibre whose dimension is given "
    "below; the fibre is the union of its strata.</p>"
)


def _fiber_section(net: Network, budget: float, progress: bool | None = False) -> tuple[str, Fiber]:
    """The fibre summary as HTML tables (every value rendered for a person), and the Fiber object."""
    esc = html.escape
    fb = fiber(net, budget=budget, progress=progress)
    flips = _sets(fb.flips)
    if fb.flips is not None and not fb.flips_complete:
        flips += f" (verified ones found; at least {fb.flip_count_lower_bound} in all)"
    facts = [
        ("generic", _yes_no(fb.generic, fb.generic_reason)),
        ("rigid (the fibre is one free H_n-orbit)", _yes_no(fb.rigid, fb.rigid_reason)),
        ("hidden flip sets 𝒯(θ)", flips),
        ("H_n-orbits in the fibre", "—" if fb.orbits is None else str(fb.orbits)),
        ("minimal width w", "—" if fb.width is None else str(fb.width)),
        ("dimension of the fibre", "—" if fb.dimension is None else str(fb.dimension)),
    ]
    rows = [_row(["property", "value"], head=True)]
    rows += [_row([esc(key), f"<span class='wrap'>{esc(val)}</span>"]) for key, val in facts]
    out = "<table>" + "".join(rows) + "</table>"
    if fb.strata:
        srows = [_row(["S (single neurons facing the other way)", "P (opposite pairs)", "t", "dimension", ""], True)]
        for st in fb.strata[:20]:
            S = _sets([st.S]) if st.S is not None else f"{st.S_size} classes"
            kind = "θ's own stratum" if st.own else ("one free orbit" if st.orbit else "")
            srows.append(_row([esc(S), esc(_sets([st.P])), str(st.t), str(st.dimension), esc(kind)]))
        more = len(fb.strata) - 20 if fb.strata_complete else None
        out += "<p>Strata of the fibre (classes numbered as in the normal form, from 0):</p>"
        out += "<table>" + "".join(srows) + "</table>"
        if more and more > 0:
            out += f"<p class='note'>… {more} more strata (see relusym fiber --json).</p>"
    out += TERMS
    out += (
        "<p class='note'>Neurons are numbered from 0, in the JSON output and in the pictures alike.</p>"
        f"<details><summary>the fibre report as text</summary><pre class='wrap'>{esc(fb.report())}</pre></details>"
    )
    return out, fb


def report_html(
    net: Network,
    name: str = "network",
    *,
    budget: float = 10.0,
    dpi: float = 90,
    progress: bool | None = None,
    notes: Sequence[str] = (),
) -> str:
    """A self-contained HTML page about θ: summary (shape), normal form (docs/math/normal-form.md: kinks, M, e, digest),
    stabilizer (docs/math/symmetries.md), fibre (docs/math/fibres.md: generic, rigid, flips, width, dimension, strata)
    and plots, with the figures
    embedded as base64 PNG (no external resources).  ``budget`` (seconds) goes to the fibre's searches.
    ``progress`` shows which section is being computed (on stderr when it is a terminal, by default).  ``notes``
    (what reading the file assumed, e.g. ``relusym.io.load_with_info(path)[1].notes``) are shown under the
    summary."""
    with progress_bar(total=4, desc="report: normal form", unit="section", progress=progress) as bar:
        return _report_html(net, name, budget, dpi, bar, notes)


def _report_html(net: Network, name: str, budget: float, dpi: float, bar: Any, notes: Sequence[str]) -> str:
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"report_html needs a Network, got {type(net).__name__}")
    esc = html.escape
    m, n, k = net.shape
    nf = normal_form(net)
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>relusym report: {esc(name)}"
        f"</title><style>{_CSS}</style></head><body>",
        f"<h1>relusym report: <code>{esc(name)}</code></h1>",
        "<h2 id='summary'>Summary</h2>",
        "<table>"
        + _row(["inputs m", "hidden neurons n", "outputs k", "parameters", "entries", "kink classes N"], head=True)
        + _row(
            [
                str(m),
                str(n),
                str(k),
                str(net.num_parameters),
                "floats (exact binary value)" if net.is_float else "exact rationals",
                str(nf.N),
            ]
        )
        + "</table>",
        "".join(f"<p class='note'><b>Reading the file.</b> {esc(n)}</p>" for n in notes),
        "<p>ρ(θ)(x) = V·σ(Ax + b) + c (docs/math/realization.md).</p>",
        "<h2 id='normal-form'>Normal form</h2>",
        "<p>NF(θ) = (K, M, e) (docs/math/normal-form.md): ρ(θ)(x) = Σ κ<sub>û</sub> σ(α̂·x + β̂) + Mx + e. Two networks "
        "compute the same function iff their normal forms are equal.</p>",
    ]
    K = nf.K
    cap = 60
    rows = [_row(["#", "hyperplane û = (α̂, β̂)", "kink κ"], head=True)]
    for j, (u, kap) in enumerate(K[:cap]):
        rows.append(
            _row(
                [str(j + 1), f"<code class='wrap'>{esc(_exact_vec(u))}</code>", f"<code>{esc(_exact_vec(kap))}</code>"]
            )
        )
    parts.append("<table>" + "".join(rows) + "</table>" if K else "<p>No kinks: ρ(θ) is affine.</p>")
    if len(K) > cap:
        parts.append(f"<p class='note'>… and {len(K) - cap} more kink classes.</p>")
    M_rows = nf.M
    M_txt = "\n".join(_exact_vec(row, 12) for row in M_rows[:12]) + ("\n…" if len(M_rows) > 12 else "")
    bar.update(1)
    bar.set_description_str("report: stabilizer")
    parts += [
        f"<p>M ({k}×{m}):</p><pre class='wrap'>{esc(M_txt)}</pre>",
        f"<p>e = <code>{esc(_exact_vec(nf.e, 12))}</code></p>",
        f"<p>digest <code>{esc(nf.digest())}</code></p>",
        "<h2 id='stabilizer'>Stabilizer</h2>",
    ]
    try:
        st = stabilizer(net)
        parts.append(f"<p>{esc(str(st))} (docs/math/symmetries.md, Theorem C).</p>")
    except Exception as exc:  # pragma: no cover - the stabilizer is exact and total
        parts.append(f"<p class='note'>stabilizer unavailable: {esc(str(exc))}</p>")
    bar.update(1)
    bar.set_description_str("report: fibre")
    parts.append("<h2 id='fibre'>Fibre</h2>")
    fib_html, fb = _fiber_section(net, budget)
    parts.append(fib_html)
    bar.update(1)
    bar.set_description_str("report: plots")
    parts.append("<h2 id='plots'>Plots</h2>")
    figs: list[tuple[str, Figure]] = []
    try:
        figs.append((f"{name}: the function, its neurons and its kinks", plot_networks([net], [name])))
    except Exception as exc:
        parts.append(f"<p class='note'>plot unavailable: {esc(type(exc).__name__)}: {esc(str(exc))}</p>")
    other = _fibre_partner(net, fb)
    if other is not None:
        cap_txt, partner = other
        try:
            figs.append((cap_txt, plot_networks([net, partner], [name, "another point of the fibre"])))
        except Exception as exc:
            parts.append(f"<p class='note'>fibre plot unavailable: {esc(str(exc))}</p>")
    for caption, fig in figs:
        parts.append(
            f"<figure><img alt='{esc(caption)}' src='data:image/png;base64,{png_base64(fig, dpi)}'>"
            f"<figcaption>{esc(caption)}</figcaption></figure>"
        )
    parts.append("<p class='note'>Generated by relusym.</p></body></html>")
    return "\n".join(parts)


def _fibre_partner(net: Network, fb: Fiber) -> tuple[str, Network] | None:
    """A second point of the fibre to draw beside θ: a flip when there is one, else a sample."""
    for T in fb.flips or []:
        if len(T):
            T1 = ", ".join(str(i) for i in T)
            return (
                f"θ and flip_T(θ), T = {{{T1}}}: the same function (hidden symmetry, docs/math/hidden-symmetries.md)",
                flip(net, T),
            )
    return "θ and a random point of its fibre (the same function)", fb.sample(0)


def report_to_file(net: Network, path: str | os.PathLike[str], name: str = "network", **kw: Any) -> None:
    """Write :func:`report_html` to ``path`` (UTF-8, atomically)."""
    text = report_html(net, name, **kw)
    atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))
