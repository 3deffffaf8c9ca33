"""Pictures of shallow ReLU networks: graphs, kinks, hyperplane arrangements and fibres (docs/math/realization.md,
docs/math/normal-form.md, docs/math/fibres.md, docs/math/examples.md).

* m = 1: the graph of ρ(θ) (docs/math/realization.md), each neuron's contribution v_i σ(a_i x + b_i) as a thin line,
and the
  kinks of NF(θ) (docs/math/normal-form.md) marked and labelled with their coefficients κ.
* m = 2: the hyperplane arrangement α̂·x + β̂ = 0 of the kink classes, coloured by |κ|, with an arrow from each
  neuron's line towards the side where it is active, over a heatmap of the output.
* m > 2: the same on a 2-D slice x = x0 + s·d1 + t·d2 (:class:`Slice`).

Several networks are drawn side by side; each panel says how it relates to the first one (same H_n-orbit, a
hidden flip of docs/math/hidden-symmetries.md, same normal form, or not equivalent, with the exact counterexample
marked).
Neurons are numbered from 0 in the pictures, as in the JSON output and the CLI.  Colours mark hyperplane
classes (the same class has the same colour in every panel); solid lines are positively oriented neurons,
dashed negatively oriented ones (docs/math/realization.md), so a flip shows as a change of line style on an unchanged
hyperplane.

matplotlib is an optional extra (``pip install -e '.[plot]'`` from a checkout).  It is imported inside the
functions that draw, and only through :class:`matplotlib.figure.Figure`: no pyplot, no change of the global backend.

This module holds the public functions; their parts are in :mod:`relusym._plots` (``geometry``: the window and
the slice; ``style``: the look; ``line`` and ``plane``: the m = 1 and m ≥ 2 panels).
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from relusym._base.fileio import atomic_write
from relusym._core.network import Network
from relusym._plots.geometry import Colors, Slice, as_list, auto_domain, check_domain, choose_slice, geometry_of
from relusym._plots.line import pad_ylim, panel_1d
from relusym._plots.plane import grid, panel_2d
from relusym._plots.style import MAX_CONTRIBUTIONS, MAX_OUTPUTS, kink_cmap, kink_norm, legend, new_figure, short
from relusym.errors import InvalidNetworkError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from relusym._core.equivalence import Verdict

__all__ = [
    "Slice",
    "choose_slice",
    "auto_domain",
    "plot_network",
    "plot_networks",
    "plot_to_file",
    "png_base64",
]

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


# ----------------------------------------------------------------------------------------------------------
# how each network relates to the first


def _relation(v: Verdict | None, j: int) -> str:
    if v is None:
        return ""
    if v.equivalent:
        if v.in_orbit:
            return f"same function: θ{j} = h·θ1, h ∈ H_n (O0)"
        if v.flips:
            T = ", ".join(str(i) for i in v.flips)
            return f"same function: h·flip_T(θ1), T = {{{T}}}\nhidden symmetry (O4)"
        return "same function (same NF), but neither h·θ1\nnor h·flip_T(θ1): another H_n-orbit"
    if v.counterexample is None:
        return "NOT the same function as θ1"
    return "NOT the same function as θ1\n(★ marks a point where they differ)"


def _verdicts(nets: Sequence[Network], compare: bool) -> list[Verdict | None]:
    if not compare or len(nets) < 2:
        return [None] * len(nets)
    from relusym._core.equivalence import equivalent

    return [None] + [equivalent(nets[0], x) for x in nets[1:]]


# ----------------------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------------------
# public drawing functions


def plot_network(
    net: Network,
    ax: Axes | None = None,
    *,
    domain: Any = None,
    output: int | None = None,
    label: str | None = None,
    contributions: bool = True,
    max_contributions: int = MAX_CONTRIBUTIONS,
    origin: Sequence[Any] | None = None,
    directions: Sequence[Sequence[Any]] | None = None,
    seed: int = 0,
    reference: Network | None = None,
    title: str | None = None,
) -> Axes:
    """Draw one network on ``ax`` (a new figure when None) and return the axes (docs/math/realization.md,
    docs/math/normal-form.md).

    m = 1: the graph of ρ(θ) (all outputs in colours when k > 1 and ``output`` is None), neuron contributions
    (at most ``max_contributions``), the kinks of NF(θ) labelled with κ.  m = 2: heatmap of output ``output``
    (default the first) with the kink hyperplanes coloured by |κ| and orientation arrows.  m > 2: the same on
    the slice given by ``origin``/``directions`` (random directions by default, see :func:`choose_slice`).
    ``reference`` (another network) is drawn underneath for comparison; ``domain`` overrides
    :func:`auto_domain`.
    """

    if not isinstance(net, Network):
        raise InvalidNetworkError(f"plot_network needs a Network, got {type(net).__name__}")
    if output is not None and not 0 <= output < net.k:
        raise InvalidNetworkError(f"output must be in 0..{net.k - 1}, got {output}")
    if ax is None:
        fig = new_figure((6.4, 4.8) if net.m == 1 else (6.6, 5.8), 100)
        ax = fig.add_subplot()
    nets = [net] if reference is None else [reference, net]
    geos = [geometry_of(x) for x in nets]
    g = geos[-1]
    ref = geos[0] if reference is not None else None
    head = title if title is not None else (label or "θ")
    if net.m == 1:
        dom = check_domain(domain, 1) if domain is not None else auto_domain(nets)
        yr = panel_1d(
            ax,
            g,
            dom=dom,
            r=output,
            colors=Colors(geos),
            contributions=contributions,
            max_contributions=max_contributions,
            reference=ref,
            ce=None,
            title=head,
        )
        pad_ylim([ax], [yr])
        legend(ax)
        return ax
    plane = choose_slice(net.m, origin=origin, directions=directions, seed=seed)
    dom = check_domain(domain, 2) if domain is not None else auto_domain(nets, plane=plane)
    r = output or 0
    _, _, S, T = grid(dom, net.n)
    Z = g.evaluate(plane.points(S, T))[:, r].reshape(S.shape)
    knorm = kink_norm(geos, r)
    if not plane.is_standard and title is None:
        head = f"{head}\n{plane.describe()}"
    im = panel_2d(
        ax,
        g,
        dom=dom,
        plane=plane,
        r=r,
        Z=Z,
        vlim=(float(Z.min()), float(Z.max()) + 1e-12),
        knorm=knorm,
        reference=ref,
        ce=None,
        title=head,
    )
    ax.figure.colorbar(im, ax=ax, shrink=0.8, label="ρ(θ)(x)" if net.k == 1 else f"ρ(θ)(x), output {r + 1}")
    legend(ax)
    return ax


def plot_networks(
    nets: Network | Sequence[Network],
    labels: Sequence[str] | None = None,
    *,
    domain: Any = None,
    outputs: Sequence[int] | None = None,
    contributions: bool = True,
    max_contributions: int = MAX_CONTRIBUTIONS,
    origin: Sequence[Any] | None = None,
    directions: Sequence[Sequence[Any]] | None = None,
    seed: int = 0,
    compare: bool = True,
    figsize: tuple[float, float] | None = None,
    dpi: float = 100,
) -> Figure:
    """One or more networks side by side (one row per output, at most four), returned as a Figure.

    Every later panel says how its network relates to the first (docs/math/normal-form.md Theorem A,
    docs/math/fibres.md): the same
    H_n-orbit, a hidden flip h·flip_T(θ1) (O4, with T), the same normal form by another route, or not
    equivalent, with the exact counterexample of :func:`relusym.equivalent` marked and its two values written
    out.  m = 1 panels share the y axis and draw ρ(θ1) underneath the later graphs; m ≥ 2 panels share a colour
    scale, overlay the hyperplanes of θ1 (dashed), and for two non-equivalent networks add a panel of
    ρ(θ2) − ρ(θ1).  m > 2 networks are drawn on one slice (:func:`choose_slice`), stated in the title.
    """

    lst = as_list(nets)
    labs = list(labels) if labels is not None else []
    if len(labs) > len(lst):
        raise InvalidNetworkError(f"{len(labs)} labels for {len(lst)} networks")
    m, k = lst[0].m, lst[0].k
    outs = list(outputs) if outputs is not None else list(range(min(k, MAX_OUTPUTS)))
    for q in outs:
        if not 0 <= q < k:
            raise InvalidNetworkError(f"output {q} is out of range for k = {k}")
    verdicts = _verdicts(lst, compare)
    ce = [v.counterexample if v is not None and not v.equivalent else None for v in verdicts]
    ce_points = [c.x for c in ce if c is not None]
    geos = [geometry_of(x) for x in lst]
    heads = []
    syms = [f"θ{j + 1}" if len(lst) > 1 else "θ" for j in range(len(lst))]
    for j, v in enumerate(verdicts):
        name = syms[j] + (f": {short(labs[j])}" if j < len(labs) and labs[j] else "")
        rel = _relation(v, j + 1)
        heads.append(name + ("\n" + rel if rel else ""))
    more = "" if len(outs) == k else f" (outputs {', '.join(str(q + 1) for q in outs)} of {k} shown)"
    if m == 1:
        dom = check_domain(domain, 1) if domain is not None else auto_domain(lst, points=ce_points)
        ncol = len(lst)
        fs = figsize or (max(4.4 * ncol, 6.0), 4.6 * len(outs) + 0.6)
        fig = new_figure(fs, dpi)
        axes = fig.subplots(len(outs), ncol, sharey="row", squeeze=False)
        colors = Colors(geos)
        for row, q in enumerate(outs):
            ranges = []
            for j, g in enumerate(geos):
                ranges.append(
                    panel_1d(
                        axes[row][j],
                        g,
                        dom=dom,
                        r=q,
                        colors=colors,
                        contributions=contributions,
                        max_contributions=max_contributions,
                        reference=geos[0] if j else None,
                        ce=ce[j],
                        title=heads[j] if row == 0 else f"{syms[j]}, output {q + 1}",
                        sym=syms[j],
                        ylabel=j == 0,
                    )
                )
                legend(axes[row][j])
            pad_ylim(list(axes[row]), ranges)
        if more:
            fig.suptitle(more.strip(" ()"), fontsize=9)
        return fig
    if origin is None and ce_points and m > 2:
        origin = ce_points[0]  # the slice goes through the first counterexample, so that it can be marked
    plane = choose_slice(m, origin=origin, directions=directions, seed=seed)
    dom = check_domain(domain, 2) if domain is not None else auto_domain(lst, plane=plane, points=ce_points)
    add_diff = len(lst) == 2 and ce[1] is not None
    ncol = len(lst) + int(add_diff)
    fs = figsize or (max(4.6 * ncol + 1.0, 6.6), 5.2 * len(outs) + 0.8)
    fig = new_figure(fs, dpi)
    axes = fig.subplots(len(outs), ncol, squeeze=False)
    _, _, S, T = grid(dom, max(x.n for x in lst))
    X = plane.points(S, T)
    Zs = [g.evaluate(X).reshape(S.shape + (k,)) for g in geos]
    for row, q in enumerate(outs):
        lo = min(float(Z[..., q].min()) for Z in Zs)
        hi = max(float(Z[..., q].max()) for Z in Zs)
        vlim = (lo, hi if hi > lo else lo + 1.0)
        knorm = kink_norm(geos, q)
        ims = []
        for j, g in enumerate(geos):
            ims.append(
                panel_2d(
                    axes[row][j],
                    g,
                    dom=dom,
                    plane=plane,
                    r=q,
                    Z=Zs[j][..., q],
                    vlim=vlim,
                    knorm=knorm,
                    reference=geos[0] if j else None,
                    ce=ce[j],
                    sym=syms[j],
                    title=heads[j] if row == 0 else f"{syms[j]}, output {q + 1}",
                )
            )
            legend(axes[row][j])
        im = ims[0]
        cb = fig.colorbar(
            im,
            ax=list(axes[row][: len(lst)]),
            shrink=0.85,
            pad=0.02,
            label="ρ(θ)(x)" if k == 1 else f"ρ(θ)(x), output {q + 1}",
        )
        cb.ax.tick_params(labelsize=8)
        from matplotlib.cm import ScalarMappable

        kb = fig.colorbar(
            ScalarMappable(norm=knorm, cmap=kink_cmap()),
            shrink=0.85,
            pad=0.01,
            ax=list(axes[row][: len(lst)]),
            label="|κ| (kink coefficient)",
        )
        kb.ax.tick_params(labelsize=8)
        if add_diff:
            D = Zs[1][..., q] - Zs[0][..., q]
            top = float(np.abs(D).max()) or 1.0
            dim = panel_2d(
                axes[row][-1],
                geos[1],
                dom=dom,
                plane=plane,
                r=q,
                Z=D,
                vlim=(-top, top),
                knorm=knorm,
                reference=None,
                ce=ce[1],
                title="ρ(θ2) − ρ(θ1)",
                diff=True,
            )
            legend(axes[row][-1])
            db = fig.colorbar(dim, ax=axes[row][-1], shrink=0.85, pad=0.02, label="difference")
            db.ax.tick_params(labelsize=8)
    sup = plane.describe() if not plane.is_standard else ""
    if sup or more:
        fig.suptitle((sup + more).strip(), fontsize=9)
    return fig


# ----------------------------------------------------------------------------------------------------------
# files


def _format_of(path: str | os.PathLike[str]) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InvalidNetworkError(
            f"cannot tell the figure format from {os.fspath(path)!r}: use a .png, .svg or .pdf file name"
        )
    return FORMATS[suffix]


def plot_to_file(
    nets: Network | Sequence[Network], path: str | os.PathLike[str], labels: Sequence[str] | None = None, **kw: Any
) -> Figure:
    """Draw :func:`plot_networks` (keywords passed on) into ``path``, a .png, .svg or .pdf file (from its
    suffix), written atomically, and return the figure.  An unknown suffix raises InvalidNetworkError before
    anything is drawn or written."""
    fmt = _format_of(path)
    dpi = kw.pop("dpi", 100)
    fig = plot_networks(nets, labels, dpi=dpi, **kw)
    meta = {"Creator": "relusym"} if fmt != "png" else {"Software": "relusym"}
    atomic_write(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi, metadata=meta))
    return fig


def png_base64(fig: Figure, dpi: float = 90) -> str:
    """The figure as a base64-encoded PNG (for pages that embed their pictures)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")
