"""One panel of an m = 1 network: the graph of ρ(θ), the neuron contributions, the kinks of NF(θ) labelled with
κ, a counterexample marked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from relusym._base.display import compact, compact_vector
from relusym._plots.geometry import Colors, Domain, Geo
from relusym._plots.style import MAX_LABELS, input_names, neuron_str

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from relusym._core.equivalence import Counterexample

__all__ = ["panel_1d", "pad_ylim"]


def panel_1d(
    ax: Axes,
    g: Geo,
    *,
    dom: Domain,
    r: int | None,
    colors: Colors,
    contributions: bool,
    max_contributions: int,
    reference: Geo | None,
    ce: Counterexample | None,
    title: str,
    sym: str = "θ",
    ylabel: bool = True,
) -> tuple[float, float]:
    """Draw one m = 1 panel; return the y range used (so that rows can share padded limits)."""
    lo, hi = dom[0]
    outputs = list(range(g.k)) if r is None else [r]
    out_colors = ["black"] if len(outputs) == 1 else [f"C{q}" for q in range(len(outputs))]
    bps = _breakpoints(g)
    inside = bps[(bps > lo) & (bps < hi)]
    xs = np.unique(np.concatenate([[lo, hi], inside, [float(ce.x[0])] if ce is not None else []]))
    Y = g.evaluate(xs[:, None])
    ys: list[np.ndarray] = [Y[:, outputs].ravel()]
    if reference is not None:
        ys += _reference(ax, reference, lo, hi, outputs)
    for q, col in zip(outputs, out_colors, strict=True):
        lab = f"ρ({sym})" if len(outputs) == 1 else f"output {q + 1}"
        ax.plot(xs, Y[:, q], color=col, lw=2.6, alpha=0.9, zorder=4, label=lab)
    # neuron contributions v_i σ(a_i x + b_i), drawn on top of the graph (thin) so that coinciding pieces show
    if contributions and g.net.n:
        ys += _contributions(ax, g, (lo, hi), outputs, out_colors, colors, max_contributions, bps)
    _kinks(ax, g, (lo, hi), outputs, out_colors)
    _outside_note(ax, g, (lo, hi), outputs)
    if ce is not None:
        _counterexample(ax, g, ce, outputs[0], sym)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("x")
    if ylabel:
        ax.set_ylabel("ρ(θ)(x)" if r is None or g.k == 1 else f"ρ(θ)(x), output {r + 1}")
    ax.set_title(title, fontsize=9.5)
    ax.grid(True, alpha=0.25)
    ax.axhline(0, color="0.6", lw=0.6, zorder=0)
    allv = np.concatenate([np.ravel(v) for v in ys])
    return float(allv.min()), float(allv.max())


def pad_ylim(axes: Sequence[Axes], ranges: Sequence[tuple[float, float]]) -> None:
    """One padded y range for a row of panels: room for the κ labels above and below the graph."""
    lo = min(r[0] for r in ranges)
    hi = max(r[1] for r in ranges)
    pad = 0.16 * (hi - lo) if hi > lo else max(1.0, abs(hi) / 10)
    for ax in axes:
        ax.set_ylim(lo - pad, hi + pad)


def _breakpoints(g: Geo) -> np.ndarray:
    """−b_i/a_i of each neuron (NaN where a_i = 0)."""
    a0 = g.A[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a0 != 0, -g.b / np.where(a0 == 0, 1.0, a0), np.nan)


def _reference(ax: Axes, reference: Geo, lo: float, hi: float, outputs: list[int]) -> list[np.ndarray]:
    """ρ(θ1) drawn underneath, wide and grey, for comparison; returns its values."""
    rb = _breakpoints(reference)
    rx = np.unique(np.concatenate([[lo, hi], rb[(rb > lo) & (rb < hi)]]))
    RY = reference.evaluate(rx[:, None])
    for q in outputs:
        ax.plot(
            rx,
            RY[:, q],
            color="0.55",
            lw=4.0,
            alpha=0.4,
            zorder=2,
            solid_capstyle="butt",
            label="ρ(θ1), for comparison" if q == outputs[0] else None,
        )
    return [RY[:, outputs].ravel()]


def _contributions(
    ax: Axes,
    g: Geo,
    window: tuple[float, float],
    outputs: list[int],
    out_colors: list[str],
    colors: Colors,
    max_contributions: int,
    bps: np.ndarray,
) -> list[np.ndarray]:
    """Each neuron's v_i σ(a_i x + b_i) (the largest ``max_contributions``) and the output bias; their values."""
    from matplotlib.collections import LineCollection

    lo, hi = window
    net, a0 = g.net, g.A[:, 0]
    ys: list[np.ndarray] = []
    # the size of each contribution: |v|·|a| for a ramp, |v|·b for a constant neuron, 0 for a null one
    weight = np.abs(g.V[outputs]).max(axis=0) * (np.abs(a0) + np.where(a0 == 0, np.maximum(g.b, 0), 0))
    shown = np.nonzero(weight > 0)[0]
    total = shown.size
    if total > max_contributions:
        shown = np.sort(shown[np.argsort(-weight[shown], kind="stable")[:max_contributions]])
    few = total <= 8 and len(outputs) == 1
    names = input_names(1)
    segs, cols, styles = [], [], []
    for i in shown.tolist():
        xi = np.unique(np.concatenate([[lo, hi], [bps[i]] if lo < bps[i] < hi else []]))
        yi = np.maximum(a0[i] * xi + g.b[i], 0.0)
        for q, qcol in zip(outputs, out_colors, strict=True):
            col = colors.neuron(g, i) if len(outputs) == 1 else qcol
            ls = "--" if g.sign[i] < 0 else "-"
            ys.append(g.V[q, i] * yi)
            if few:
                ax.plot(
                    xi,
                    g.V[q, i] * yi,
                    color=col,
                    lw=1.4,
                    ls=ls,
                    zorder=5,
                    label=f"n{i}: {neuron_str(net, i, q, names)}",
                )
            else:
                segs.append(np.stack([xi, g.V[q, i] * yi], axis=1))
                cols.append(col)
                styles.append(ls)
    if segs:
        lc = LineCollection(segs, colors=cols, linestyles=styles, linewidths=0.8, alpha=0.7, zorder=5)
        ax.add_collection(lc)
        note = f" ({len(shown)} largest of {total} shown)" if len(shown) < total else ""
        ax.plot([], [], color="0.4", lw=0.8, label=f"neuron contributions{note}")
    for q in outputs:
        cq = g.c[q]
        ax.axhline(
            cq,
            color="0.35",
            lw=1.0,
            ls=(0, (1, 2)),
            zorder=3,
            label=f"output bias c = {compact(g.net.c[q])}" if q == outputs[0] and len(outputs) == 1 else None,
        )
        ys.append(np.array([cq]))
    return ys


def _kinks(ax: Axes, g: Geo, window: tuple[float, float], outputs: list[int], out_colors: list[str]) -> None:
    """The kinks of NF(θ) in the window, labelled with κ (a rug of ticks when there are many), and the hyperplanes
    whose kinks cancel."""
    lo, hi = window
    # kinks of the normal form (and hyperplanes whose kinks cancel)
    kink_x: list[float] = []
    kink_k: list[float] = []
    kink_txt: list[str] = []
    flat_x: list[float] = []
    for j in range(g.u.shape[0]):
        x = -float(g.u[j, 1])
        if not lo <= x <= hi:
            continue
        kap = g.h.kappa[j] if len(outputs) > 1 else [g.h.kappa[j][outputs[0]]]
        if any(v != 0 for v in kap):
            kink_x.append(x)
            kink_k.append(float(kap[0]))
            kink_txt.append("κ = " + (compact(kap[0]) if len(kap) == 1 else compact_vector(kap, 3)))
        else:
            flat_x.append(x)
    if kink_x:
        ky = g.evaluate(np.array(kink_x)[:, None])
        for q, col in zip(outputs, out_colors, strict=True):
            ax.scatter(
                kink_x,
                ky[:, q],
                s=34 if len(kink_x) <= MAX_LABELS else 9,
                color=col,
                edgecolor="white",
                linewidth=0.8 if len(kink_x) <= MAX_LABELS else 0.3,
                zorder=6,
                label="kink of NF(θ)" if q == outputs[0] else None,
            )
        if len(kink_x) <= MAX_LABELS:
            ax.vlines(kink_x, 0, 1, transform=ax.get_xaxis_transform(), colors="0.5", lw=0.6, ls=":", zorder=1)
            order = np.argsort(kink_x)
            stagger, prev = 0, -np.inf
            for idx in order.tolist():
                # kinks closer than 12% of the window take turns at two heights, so that labels do not collide
                stagger = 1 - stagger if kink_x[idx] - prev < 0.12 * (hi - lo) else 0
                prev = kink_x[idx]
                # below a convex kink (κ > 0) and above a concave one: that side of the graph is empty
                dist = 23 if stagger else 11
                dy = -dist - 6 if kink_k[idx] > 0 else dist
                ax.annotate(
                    kink_txt[idx],
                    (kink_x[idx], ky[idx, outputs[0]]),
                    xytext=(0, dy),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                    zorder=7,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "0.7", "alpha": 0.9},
                )
        else:
            # many kinks: a rug of ticks along the bottom instead of labels
            ax.vlines(kink_x, 0, 0.035, transform=ax.get_xaxis_transform(), colors="0.25", lw=0.6, zorder=6)
            ax.text(
                0.01,
                0.045,
                f"{len(kink_x)} kinks (ticks; labels omitted)",
                transform=ax.transAxes,
                fontsize=7,
                color="0.3",
                va="bottom",
            )
    if flat_x:
        fy = g.evaluate(np.array(flat_x)[:, None])
        ax.scatter(flat_x, fy[:, outputs[0]], s=40, marker="x", color="0.3", zorder=6, label="cancelled kink (κ = 0)")


def _outside_note(ax: Axes, g: Geo, window: tuple[float, float], outputs: list[int]) -> None:
    """Say how many kinks of the drawn outputs lie outside the window, and where (the default window leaves out
    far kinks of tiny |κ|; see relusym.plot.auto_domain)."""
    lo, hi = window
    x = -g.u[:, 1] / g.u[:, 0] if g.u.size else np.zeros(0)
    out = (np.abs(g.kappa[:, outputs]).max(axis=1) > 0) & ((x < lo) | (x > hi)) if x.size else np.zeros(0, bool)
    if not out.any():
        return
    xs = x[out]
    where = f"at x ≈ {xs[0]:.4g}" if xs.size == 1 else f"from x ≈ {xs.min():.4g} to {xs.max():.4g}"
    ax.text(
        0.01,
        0.985,
        f"{int(out.sum())} kink(s) outside the window, {where}",
        transform=ax.transAxes,
        fontsize=7,
        color="0.3",
        va="top",
    )


def _counterexample(ax: Axes, g: Geo, ce: Counterexample, q: int, sym: str) -> None:
    """The point where the two networks differ, its exact values in the legend (below the axes: they hide
    nothing)."""
    yv = g.evaluate(np.array([[float(ce.x[0])]]))[0]
    txt = (
        f"counterexample x = {compact(ce.x[0], 20)}:\nρ(θ1)(x) = {compact(ce.y1[q], 20)}, "
        f"ρ({sym})(x) = {compact(ce.y2[q], 20)}"
    )
    ax.scatter([float(ce.x[0])], [yv[q]], s=150, marker="*", color="red", edgecolor="black", zorder=8, label=txt)
