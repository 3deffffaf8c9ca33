"""One panel of an m ≥ 2 network (on a plane of ℝ^m): the heat map of one output, the kink lines coloured by
|κ|, the orientation arrows, a counterexample marked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from relusym._base.display import compact, compact_vector
from relusym._plots.geometry import Domain, Geo, Slice
from relusym._plots.style import (
    DIFF_CMAP,
    MAX_ARROWS,
    MAX_LABELS,
    MAX_LINES,
    heat_cmap,
    kink_cmap,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from relusym._core.equivalence import Counterexample

__all__ = ["clip_segment", "grid", "panel_2d", "kink_lines"]


def clip_segment(p: float, q: float, r: float, dom: Domain) -> np.ndarray | None:
    """The part of the line p s + q t + r = 0 inside the window, as a 2 × 2 array, or None."""
    (s0, s1), (t0, t1) = dom
    n2 = p * p + q * q
    base = np.array([-r * p / n2, -r * q / n2])
    d = np.array([-q, p]) / np.sqrt(n2)
    if d[0] < 0 or (d[0] == 0 and d[1] < 0):  # one direction per line, whatever the sign of (p, q, r)
        d = -d
    lo_, hi_ = -np.inf, np.inf
    for k_, (a_, b_) in enumerate(((s0, s1), (t0, t1))):
        if abs(d[k_]) < 1e-15:
            if not a_ <= base[k_] <= b_:
                return None
            continue
        e1, e2 = (a_ - base[k_]) / d[k_], (b_ - base[k_]) / d[k_]
        lo_, hi_ = max(lo_, min(e1, e2)), min(hi_, max(e1, e2))
    if not lo_ < hi_:
        return None
    return np.stack([base + lo_ * d, base + hi_ * d])


def grid(dom: Domain, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    (s0, s1), (t0, t1) = dom
    res = 160 if n <= 300 else 110
    s = np.linspace(s0, s1, res)
    t = np.linspace(t0, t1, res)
    S, T = np.meshgrid(s, t)
    return s, t, S, T


def panel_2d(
    ax: Axes,
    g: Geo,
    *,
    dom: Domain,
    plane: Slice,
    r: int,
    Z: np.ndarray,
    vlim: tuple[float, float],
    knorm: Any,
    reference: Geo | None,
    ce: Counterexample | None,
    title: str,
    sym: str = "θ2",
    diff: bool = False,
) -> Any:
    """Draw one m ≥ 2 panel (heatmap Z of output r, or of a difference when ``diff``); return the image."""
    (s0, s1), (t0, t1) = dom
    cmap = DIFF_CMAP if diff else heat_cmap()
    im = ax.imshow(
        Z,
        origin="lower",
        extent=(s0, s1, t0, t1),
        cmap=cmap,
        vmin=vlim[0],
        vmax=vlim[1],
        aspect="auto",
        interpolation="nearest",
        zorder=0,
    )
    if np.ptp(Z) > 0:
        s, t, _, _ = grid(dom, g.net.n)
        ax.contour(
            s,
            t,
            Z,
            levels=9,
            colors="0.35" if not diff else "0.5",
            linewidths=0.5,
            alpha=0.6,
            linestyles="solid",
            zorder=1,
        )
    names = ("s", "t") if not plane.is_standard else ("x₁", "x₂")
    # hyperplanes of the reference network (θ1), dashed
    if reference is not None:
        RL = plane.lines(np.concatenate([reference.A, reference.b[:, None]], axis=1)[reference.label >= 0])
        segs = [sg for p, q, rr in RL.tolist() if p * p + q * q > 0 and (sg := clip_segment(p, q, rr, dom)) is not None]
        if segs:
            from matplotlib.collections import LineCollection

            ax.add_collection(LineCollection(segs, colors="black", linestyles=(0, (4, 3)), linewidths=1.0, zorder=3))
            ax.plot([], [], color="black", ls=(0, (4, 3)), lw=1.0, label="θ1 hyperplanes")
    if not diff:
        kink_lines(ax, g, dom=dom, plane=plane, r=r, knorm=knorm)
    if ce is not None:
        st = plane.coordinates(ce.x)
        txt = (
            f"counterexample x = {compact_vector(ce.x, 4, 14)}{'' if st is not None else ' (not on this slice)'}:\n"
            f"ρ(θ1)(x) = {compact(ce.y1[r], 20)}, ρ({sym})(x) = {compact(ce.y2[r], 20)}"
        )
        if st is not None:
            ax.scatter([st[0]], [st[1]], s=180, marker="*", color="red", edgecolor="black", zorder=8, label=txt)
        else:
            ax.plot([], [], marker="*", ls="", color="red", mec="black", ms=12, label=txt)
    ax.set_xlim(s0, s1)
    ax.set_ylim(t0, t1)
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(title, fontsize=9.5)
    return im


def kink_lines(ax: Axes, g: Geo, *, dom: Domain, plane: Slice, r: int, knorm: Any) -> None:
    """The kink hyperplanes of NF(θ) coloured by |κ|, cancelled ones dotted, κ labels, orientation arrows."""
    from matplotlib.collections import LineCollection

    (s0, s1), (t0, t1) = dom
    span = np.array([s1 - s0, t1 - t0])
    cmap = kink_cmap()
    L = plane.lines(g.u)
    segs, cols, flat, labels = [], [], [], []
    parallel = 0
    order = np.arange(L.shape[0])
    if order.size > MAX_LINES:  # many classes: the largest kinks only
        order = np.sort(order[np.argsort(-np.abs(g.kappa[:, r]), kind="stable")[:MAX_LINES]])
    for j in order.tolist():
        p, q, rr = L[j].tolist()
        if p * p + q * q <= 1e-24 * (1 + rr * rr):
            parallel += 1
            continue
        sg = clip_segment(p, q, rr, dom)
        if sg is None:
            continue
        kap = float(g.kappa[j, r])
        if kap == 0:
            flat.append(sg)
            continue
        segs.append(sg)
        cols.append(cmap(knorm(abs(kap))))
        labels.append((sg, f"κ = {compact(g.h.kappa[j][r])}"))
    total = int(np.count_nonzero(g.kappa[:, r]))
    if segs:
        lw = 2.4 if len(segs) <= 20 else 1.2 if len(segs) <= 60 else 0.6
        ax.add_collection(LineCollection(segs, colors=cols, linewidths=lw, zorder=4))
        note = f", {len(segs)} largest of {total} shown" if order.size < L.shape[0] else ""
        ax.plot([], [], color=cmap(0.55), lw=2.4, label=f"kink hyperplane (colour: |κ|{note})")
    if flat:
        ax.add_collection(LineCollection(flat, colors="0.2", linestyles=(0, (1, 1.5)), linewidths=1.6, zorder=4))
        ax.plot([], [], color="0.2", ls=(0, (1, 1.5)), lw=1.6, label="hyperplane without kink (κ = 0)")
    if len(labels) <= MAX_LABELS:
        # near one end of the visible segment (alternating), away from the crossings in the middle
        for n_, (sg, txt) in enumerate(labels):
            f = (0.13, 0.87, 0.25, 0.75)[n_ % 4]
            pt = sg[0] + f * (sg[1] - sg[0])
            ax.text(
                pt[0],
                pt[1],
                txt,
                fontsize=7.5,
                ha="center",
                va="center",
                zorder=7,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "0.6", "alpha": 0.9},
            )
    # orientation arrows: from each neuron's line towards the side where the neuron is active (docs/math/realization.md)
    idx = np.nonzero(g.label >= 0)[0]
    if idx.size > MAX_ARROWS:  # a forest of arrows would hide the lines: none at all
        idx = idx[:0]
    NL = plane.lines(np.concatenate([g.A[idx], g.b[idx, None]], axis=1))
    seen: dict[int, int] = {}
    base, vec = [], []
    for i, (p, q, rr) in zip(idx.tolist(), NL.tolist(), strict=True):
        sg = clip_segment(p, q, rr, dom) if p * p + q * q > 1e-24 * (1 + rr * rr) else None
        if sg is None:
            continue
        cnt = seen.get(int(g.label[i]), 0)
        seen[int(g.label[i])] = cnt + 1
        pt = sg[0] + (0.35, 0.65, 0.5, 0.25, 0.75)[cnt % 5] * (sg[1] - sg[0])
        d = np.array([p, q]) * span * span  # the normal, drawn at the same length whatever the aspect ratio
        d = d / np.linalg.norm(d / span) * 0.07
        base.append(pt)
        vec.append(d)
    if base:
        B, D = np.array(base), np.array(vec)
        ax.quiver(
            B[:, 0],
            B[:, 1],
            D[:, 0],
            D[:, 1],
            angles="xy",
            scale_units="xy",
            scale=1,
            color="black",
            width=0.006,
            headwidth=3.5,
            headlength=4,
            zorder=6,
        )
        ax.plot([], [], marker=r"$\rightarrow$", ls="", color="black", ms=10, label="side where a neuron is active")
    if parallel:
        ax.text(
            0.99,
            0.01,
            f"{parallel} hyperplane(s) parallel to the slice",
            transform=ax.transAxes,
            fontsize=7,
            ha="right",
            va="bottom",
            color="0.3",
        )
