"""How the pictures of :mod:`relusym.plot` look: the caps on what is drawn, numbers as short text, colour maps,
one colour per hyperplane class, figures without pyplot, legends below the panels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from relusym._base.display import compact, compact_vector
from relusym._core.network import Network

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "MAX_CONTRIBUTIONS",
    "MAX_ARROWS",
    "MAX_LINES",
    "MAX_LABELS",
    "MAX_OUTPUTS",
    "DIFF_CMAP",
    "CLASS_COLORS",
    "affine_str",
    "neuron_str",
    "short",
    "input_names",
    "cmap_part",
    "kink_cmap",
    "heat_cmap",
    "new_figure",
    "kink_norm",
    "legend",
]


MAX_CONTRIBUTIONS = 40  # neuron contribution lines drawn per panel (m = 1)
MAX_ARROWS = 40  # orientation arrows: drawn only when at most this many neurons lie on visible lines (m ≥ 2)
MAX_LINES = 150  # kink hyperplanes drawn per panel (m ≥ 2): the largest |κ|
MAX_LABELS = 12  # kinks labelled with κ per panel
MAX_OUTPUTS = 4  # outputs drawn (one row each) by plot_networks
DIFF_CMAP = "RdBu_r"
CLASS_COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
]


def affine_str(a: Sequence[Any], b: Any, names: Sequence[str]) -> str:
    """a·x + b as text, e.g. "−x + 1" or "2x₁ − x₂"."""
    parts: list[str] = []
    for coef, name in zip(a, names, strict=True):
        if coef == 0:
            continue
        mag = abs(coef)
        txt = name if mag == 1 else f"{compact(mag)}{name}"
        parts.append(("−" if coef < 0 else "+") + txt)
    if b != 0 or not parts:
        parts.append(("−" if b < 0 else "+") + compact(abs(b)))
    s = " ".join(p[0] + " " + p[1:] for p in parts)
    return s[2:] if s.startswith("+ ") else "−" + s[2:]


def neuron_str(net: Network, i: int, r: int | None, names: Sequence[str]) -> str:
    v, a, b = net.neuron(i)
    vr = v[r] if r is not None else None
    inner = f"σ({affine_str(a, b, names)})"
    if vr is None:
        return f"{compact_vector(v, 3)}·{inner}"
    if vr == 1:
        return inner
    if vr == -1:
        return "−" + inner
    return f"{compact(vr)}·{inner}"


def short(label: str, width: int = 60) -> str:
    return label if len(label) <= width else "…" + label[-(width - 1) :]


def input_names(m: int) -> list[str]:
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    return ["x"] if m == 1 else [f"x{str(j + 1).translate(sub)}" for j in range(m)]


def cmap_part(name: str, lo: float, hi: float) -> Any:
    """Part of a matplotlib colormap (e.g. plasma without its pale yellow end, which vanishes on white)."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    return ListedColormap(colormaps[name](np.linspace(lo, hi, 256)), name=f"{name}_{lo}_{hi}")


def kink_cmap() -> Any:
    return cmap_part("plasma", 0.0, 0.85)


def heat_cmap() -> Any:
    return cmap_part("Greys", 0.0, 0.5)


def new_figure(figsize: tuple[float, float], dpi: float) -> Figure:
    """A pyplot-free figure with constrained layout and a little room at the edges for the legends."""
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    return Figure(figsize=figsize, dpi=dpi, layout=ConstrainedLayoutEngine(h_pad=0.1, w_pad=0.06))


def kink_norm(geos: Sequence[Any], r: int) -> Any:
    """The colour scale of |κ| shared by the panels of one output (``geos``: the panels' geometries)."""
    from matplotlib.colors import Normalize

    vals = [abs(float(v)) for g in geos for v in g.kappa[:, r].tolist() if v != 0]
    top = max(vals, default=1.0)
    return Normalize(vmin=0.0, vmax=top if top > 0 else 1.0)


def legend(ax: Axes) -> None:
    """The legend of a panel, below it (outside the data, so that it hides nothing)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    ncol = 2 if len(handles) > 4 else 1
    ax.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=ncol,
        fontsize=7.5,
        frameon=False,
        handlelength=2.2,
    )
