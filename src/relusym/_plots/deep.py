"""Pictures and a report of deep networks (two or more hidden layers).

* m = 1: the graph of every output, with its exact breakpoints (:mod:`relusym._deep.line`) marked, and the
  first layer's kinks as vertical lines;
* m = 2: the first output as a heat map, with the first layer's lines (where its units switch) drawn;
* m > 2: the graph along a line through the origin (the slice is named in the title).

The report is one self-contained HTML page: the widths, the reductions, the normal form's digest and per-layer
sizes, and the picture as an embedded PNG.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._base.fileio import atomic_write
from relusym._deep.mlp import MLP
from relusym._exact.numbers import as_float64
from relusym.errors import InvalidNetworkError

__all__ = ["plot_deep", "deep_plot_to_file", "deep_report_html", "deep_report_to_file"]


def _breakpoints(net: MLP) -> list[float]:
    from relusym._deep.line import LineBudget, breakpoints
    from relusym._deep.rows import rational_rows

    layers = [rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)]
    try:
        return [float(t) for t in breakpoints(layers, max_points=2000)]
    except LineBudget:
        return []


def _window(points: Sequence[float]) -> tuple[float, float]:
    finite = [p for p in points if math.isfinite(p)]
    if not finite:
        return -1.0, 1.0
    lo, hi = min(finite), max(finite)
    pad = max(1.0, 0.15 * (hi - lo))
    return lo - pad, hi + pad


Window = tuple[tuple[float, float], ...]


def plot_deep(
    nets: Sequence[MLP], labels: Sequence[str] | None = None, *, dpi: float = 100, domain: Window | None = None
) -> Any:
    """A matplotlib ``Figure`` of one or more deep networks with the same number of inputs (see the module).
    ``domain``: the window drawn, ((lo, hi),) for m = 1 or ((lo₁, hi₁), (lo₂, hi₂)) for m = 2 (default: around
    the breakpoints, or the first layer's lines)."""
    from matplotlib.figure import Figure

    if not nets:
        raise InvalidNetworkError("plot needs at least one network")
    m = nets[0].m
    if any(n.m != m for n in nets):
        raise InvalidNetworkError("the networks to plot have different numbers of inputs")
    names = list(labels) if labels is not None else [f"network {i + 1}" for i in range(len(nets))]
    fig = Figure(figsize=(6.4 * min(len(nets), 2) if m == 2 else 7.0, 4.4), dpi=dpi)
    if m == 2:
        axes = fig.subplots(1, len(nets), squeeze=False)[0]
        for ax, net, name in zip(axes, nets, names, strict=True):
            _panel_2d(ax, net, name, domain)
    else:
        ax = fig.add_subplot(1, 1, 1)
        for net, name in zip(nets, names, strict=True):
            _panel_1d(ax, net, name, domain)
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def _line_of(net: MLP) -> tuple[np.ndarray, np.ndarray, str]:
    """(x0, d, title suffix) of the line drawn for m ≥ 3 (through the origin, along the first input)."""
    d = np.zeros(net.m)
    d[0] = 1.0
    return np.zeros(net.m), d, f" (slice x = t·e₁ of ℝ^{net.m})"


def _panel_1d(ax: Any, net: MLP, name: str, domain: Window | None = None) -> None:
    if net.m == 1:
        bps = _breakpoints(net)
        lo, hi = domain[0] if domain is not None else _window(bps)
        t = np.linspace(lo, hi, 801)
        Y = net.evaluate(t[:, None])
        for r in range(Y.shape[1]):
            ax.plot(t, Y[:, r], lw=1.5, label=f"{name}" + (f", output {r + 1}" if Y.shape[1] > 1 else ""))
        inside = [p for p in bps if lo <= p <= hi]
        if inside:
            yb = net.evaluate(np.array(inside)[:, None])
            ax.plot(inside, yb[:, 0], "o", ms=3, color="k")
        W, b = as_float64(net.weights[0])[:, 0], as_float64(net.biases[0])
        for w, c in zip(W, b, strict=True):
            if w != 0 and lo <= -c / w <= hi:
                ax.axvline(-c / w, color="0.85", lw=0.8, zorder=0)
        if domain is not None:
            ax.set_xlim(lo, hi)
        ax.set_xlabel("x")
        ax.set_title(f"{'-'.join(map(str, net.widths))}: breakpoints (dots), first-layer kinks (grey)", fontsize=9)
        return
    x0, d, suffix = _line_of(net)
    t = np.linspace(-4, 4, 801)
    Y = net.evaluate(x0[None, :] + t[:, None] * d[None, :])
    ax.plot(t, Y[:, 0], lw=1.5, label=name)
    ax.set_xlabel("t")
    ax.set_title(f"{'-'.join(map(str, net.widths))}: output 1{suffix}", fontsize=9)


def _panel_2d(ax: Any, net: MLP, name: str, domain: Window | None = None) -> None:
    W, b = as_float64(net.weights[0]), as_float64(net.biases[0])
    nn = np.hypot(W[:, 0], W[:, 1])
    ok = nn > 0
    if domain is None:
        centres = (-(b[ok] / nn[ok] ** 2))[:, None] * W[ok]
        lo, hi = _window(list(centres.ravel()) + [-1.0, 1.0])
        domain = ((lo, hi), (lo, hi))
    (lo1, hi1), (lo2, hi2) = domain
    g, g2 = np.linspace(lo1, hi1, 241), np.linspace(lo2, hi2, 241)
    X1, X2 = np.meshgrid(g, g2)
    Z = net.evaluate(np.stack([X1.ravel(), X2.ravel()], axis=1))[:, 0].reshape(X1.shape)
    im = ax.pcolormesh(X1, X2, Z, shading="auto", cmap="viridis")
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    for (w1, w2), c in zip(W[ok], b[ok], strict=True):
        if abs(w2) >= abs(w1):
            ax.plot(g, -(c + w1 * g) / w2, color="w", lw=0.6, alpha=0.8)
        else:
            ax.plot(-(c + w2 * g2) / w1, g2, color="w", lw=0.6, alpha=0.8)
    ax.set_xlim(lo1, hi1)
    ax.set_ylim(lo2, hi2)
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.set_title(f"{name}: output 1, first-layer lines (white)", fontsize=9)


def deep_plot_to_file(
    nets: Sequence[MLP],
    path: str | os.PathLike[str],
    labels: Sequence[str] | None = None,
    *,
    domain: Window | None = None,
) -> Any:
    """Draw :func:`plot_deep` into a .png, .svg or .pdf file (from its suffix), atomically; returns the figure."""
    fmt = os.fspath(path).rsplit(".", 1)[-1].lower()
    if fmt not in ("png", "svg", "pdf"):
        raise InvalidNetworkError(f"{os.fspath(path)}: a figure is written as .png, .svg or .pdf")
    fig = plot_deep(nets, labels, domain=domain)
    atomic_write(path, lambda fh: fig.savefig(fh, format=fmt))
    return fig


def deep_report_html(net: MLP, name: str = "network", *, notes: Sequence[str] = (), dpi: float = 90) -> str:
    """A self-contained HTML page about a deep network: widths, reductions, normal form, picture."""
    import base64
    import io

    from relusym._deep.canonical import deep_normal_form

    can = deep_normal_form(net)
    nf = can.form
    kinds: dict[str, int] = {}
    for s in can.reduced.steps:
        kinds[s.kind] = kinds.get(s.kind, 0) + 1
    buf = io.BytesIO()
    plot_deep([net], [name], dpi=dpi).savefig(buf, format="png")
    png = base64.b64encode(buf.getvalue()).decode("ascii")
    rows = "".join(
        f"<tr><td>{ell}</td><td>{net.widths[ell]}</td><td>{nf.widths[ell]}</td></tr>" for ell in range(1, net.depth + 1)
    )
    red = ", ".join(f"{n} {html.escape(k)}" for k, n in sorted(kinds.items())) or "none"
    note_html = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes)
    m_exact = ", ".join(str(Fraction(v)) for v in nf.output[0][:6]) if nf.output else ""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>relusym report: {html.escape(name)}</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}td,th{padding:.2em .8em}"
        ".note{color:#555}</style></head><body>"
        f"<h1>{html.escape(name)}</h1>"
        f"<p>A deep ReLU network: widths {'-'.join(map(str, net.widths))} ({net.depth} hidden layers).</p>{note_html}"
        "<h2>Exact reductions</h2>"
        f"<p>Reductions that keep the function on all of ℝ<sup>m</sup>: {red}.</p>"
        "<table><tr><th>hidden layer</th><th>width</th><th>reduced</th></tr>"
        f"{rows}</table>"
        "<h2>Normal form</h2>"
        f"<p>Digest <code>{nf.digest()}</code> (scheme relusym.mlp-nf/1): equal digests mean the same function.</p>"
        f"<p>First output row of [W<sub>L</sub> | b<sub>L</sub>] in canonical coordinates: {html.escape(m_exact)}"
        f"{' …' if nf.output and len(nf.output[0]) > 6 else ''}</p>"
        f"<h2>Picture</h2><img alt='the network' src='data:image/png;base64,{png}'>"
        "</body></html>"
    )


def deep_report_to_file(net: MLP, path: str | os.PathLike[str], name: str = "network", **kw: Any) -> None:
    text = deep_report_html(net, name, **kw)
    atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))
