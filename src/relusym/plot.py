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

matplotlib is an optional extra (``pip install relusym[plot]``).  It is imported inside the functions that
draw, and only through :class:`matplotlib.figure.Figure`: no pyplot, no change of the global backend.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from relusym._base.fileio import atomic_write
from relusym._core.network import Network
from relusym._exact.numbers import float_key, fraction_str
from relusym.errors import InvalidNetworkError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from relusym._core.classes import HyperplaneClasses
    from relusym._core.equivalence import Counterexample, Verdict

__all__ = [
    "Slice",
    "choose_slice",
    "auto_domain",
    "plot_network",
    "plot_networks",
    "plot_to_file",
    "png_base64",
]

Domain = tuple[tuple[float, float], ...]

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
MAX_CONTRIBUTIONS = 40  # neuron contribution lines drawn per panel (m = 1)
MAX_ARROWS = 40  # orientation arrows: drawn only when at most this many neurons lie on visible lines (m ≥ 2)
MAX_LINES = 150  # kink hyperplanes drawn per panel (m ≥ 2): the largest |κ|
MAX_LABELS = 12  # kinks labelled with κ per panel
MAX_OUTPUTS = 4  # outputs drawn (one row each) by plot_networks
_DIFF_CMAP = "RdBu_r"
_CLASS_COLORS = [
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


# ----------------------------------------------------------------------------------------------------------
# numbers as short text


def _fmt(q: Any, width: int = 8) -> str:
    """A short readable form of an exact or float number: "3/2" when short, else 4 significant digits."""
    if isinstance(q, Fraction | int) and not isinstance(q, bool):
        s = fraction_str(Fraction(q))
        if len(s) <= width:
            return s.replace("-", "−")
    x = float(q)
    if x == int(x) and abs(x) < 1e7:
        return str(int(x)).replace("-", "−")
    return f"{x:.4g}".replace("-", "−")


def _vec(values: Sequence[Any], limit: int = 6, width: int = 8) -> str:
    vals = [_fmt(v, width) for v in list(values)[:limit]]
    more = ", …" if len(values) > limit else ""
    return "(" + ", ".join(vals) + more + ")"


def _affine_str(a: Sequence[Any], b: Any, names: Sequence[str]) -> str:
    """a·x + b as text, e.g. "−x + 1" or "2x₁ − x₂"."""
    parts: list[str] = []
    for coef, name in zip(a, names, strict=True):
        if coef == 0:
            continue
        mag = abs(coef)
        txt = name if mag == 1 else f"{_fmt(mag)}{name}"
        parts.append(("−" if coef < 0 else "+") + txt)
    if b != 0 or not parts:
        parts.append(("−" if b < 0 else "+") + _fmt(abs(b)))
    s = " ".join(p[0] + " " + p[1:] for p in parts)
    return s[2:] if s.startswith("+ ") else "−" + s[2:]


def _neuron_str(net: Network, i: int, r: int | None, names: Sequence[str]) -> str:
    v, a, b = net.neuron(i)
    vr = v[r] if r is not None else None
    inner = f"σ({_affine_str(a, b, names)})"
    if vr is None:
        return f"{_vec(v, 3)}·{inner}"
    if vr == 1:
        return inner
    if vr == -1:
        return "−" + inner
    return f"{_fmt(vr)}·{inner}"


def _short(label: str, width: int = 60) -> str:
    return label if len(label) <= width else "…" + label[-(width - 1) :]


def _names(m: int) -> list[str]:
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    return ["x"] if m == 1 else [f"x{str(j + 1).translate(sub)}" for j in range(m)]


def _cmap(name: str, lo: float, hi: float) -> Any:
    """Part of a matplotlib colormap (e.g. plasma without its pale yellow end, which vanishes on white)."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    return ListedColormap(colormaps[name](np.linspace(lo, hi, 256)), name=f"{name}_{lo}_{hi}")


def _kink_cmap() -> Any:
    return _cmap("plasma", 0.0, 0.85)


def _heat_cmap() -> Any:
    return _cmap("Greys", 0.0, 0.5)


# ----------------------------------------------------------------------------------------------------------
# geometry of one network (float view for drawing; classes from the exact decomposition of docs/math/normal-form.md)


@dataclass(frozen=True)
class _Geo:
    net: Network
    V: np.ndarray  # k × n
    A: np.ndarray  # n × m
    b: np.ndarray
    c: np.ndarray
    h: HyperplaneClasses
    u: np.ndarray  # N_all × (m+1): û of every hyperplane class (float)
    kappa: np.ndarray  # N_all × k (float)
    label: np.ndarray  # (n,) class or −1
    sign: np.ndarray  # (n,) +1 / −1 orientation (0 for null and constant neurons)

    @property
    def m(self) -> int:
        return self.net.m

    @property
    def k(self) -> int:
        return self.net.k

    def evaluate(self, X: np.ndarray) -> np.ndarray:
        """ρ(θ) in float64 on a batch, in chunks (so that n = 1000+ on a fine grid stays small in memory)."""
        out = np.empty((X.shape[0], self.k))
        step = max(1, 4_000_000 // max(1, self.net.n))
        for s in range(0, X.shape[0], step):
            H = np.maximum(X[s : s + step] @ self.A.T + self.b, 0.0)
            out[s : s + step] = H @ self.V.T + self.c
        return out


def _geo(net: Network) -> _Geo:
    from relusym._core.classes import hyperplane_classes

    h = hyperplane_classes(net)
    V, A, b, c = net.to_float(np.float64)
    u = h.keys.astype(np.float64) if h.N_all else np.zeros((0, net.m + 1))
    kappa = float_key(h.kappa) if h.N_all else np.zeros((0, net.k))
    lam = float_key(np.asarray(h.lam)) if net.n else np.zeros(0)
    sign = np.where(h.label >= 0, np.sign(lam), 0).astype(int)
    # the drawing is in float64: a weight, kink or hyperplane beyond its range cannot be placed (the exact
    # commands still decide such networks); refuse before anything is drawn
    for what, arr in (
        ("a weight", np.concatenate([V.ravel(), A.ravel(), b, c])),
        ("a hyperplane", u),
        ("a kink", kappa),
    ):
        if not np.isfinite(arr).all():
            raise InvalidNetworkError(
                f"cannot draw this network: {what} lies beyond the range of float64 (e.g. a kink of a subnormal "
                "weight); the exact commands canon, equiv and fiber handle it"
            )
    return _Geo(net, V, A, b, c, h, u, kappa, h.label.copy(), sign)


class _Colors:
    """One colour per unoriented hyperplane class, shared by every panel of a figure."""

    def __init__(self, geos: Sequence[_Geo]) -> None:
        self._index: dict[bytes, int] = {}
        for g in geos:
            for j in range(g.u.shape[0]):
                self._index.setdefault((g.u[j] + 0.0).tobytes(), len(self._index))

    def neuron(self, g: _Geo, i: int) -> str:
        j = int(g.label[i])
        if j < 0:
            return "#999999"
        return _CLASS_COLORS[self._index[(g.u[j] + 0.0).tobytes()] % len(_CLASS_COLORS)]


# ----------------------------------------------------------------------------------------------------------
# slices and domains


@dataclass(frozen=True)
class Slice:
    """The plane x = origin + s·d1 + t·d2 in ℝ^m on which an m ≥ 2 network is drawn.

    For m = 2 the default is origin 0, d1 = e₁, d2 = e₂, so (s, t) = (x₁, x₂).  A hyperplane α·x + β = 0
    meets the plane in the line (α·d1) s + (α·d2) t + (α·origin + β) = 0 (not drawn when parallel to the plane).
    """

    origin: tuple[float, ...]
    d1: tuple[float, ...]
    d2: tuple[float, ...]

    @property
    def m(self) -> int:
        return len(self.origin)

    @property
    def is_standard(self) -> bool:
        """True for the m = 2 plane (x₁, x₂) itself."""
        return self.m == 2 and self.origin == (0.0, 0.0) and self.d1 == (1.0, 0.0) and self.d2 == (0.0, 1.0)

    def points(self, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The points x of ℝ^m at plane coordinates (s, t) (flattened), shape (B, m)."""
        s, t = np.ravel(s), np.ravel(t)
        return np.asarray(
            np.asarray(self.origin)[None, :]
            + s[:, None] * np.asarray(self.d1)[None, :]
            + t[:, None] * np.asarray(self.d2)[None, :]
        )

    def lines(self, W: np.ndarray) -> np.ndarray:
        """Rows (p, q, r) of the lines p s + q t + r = 0 cut out by the hyperplanes W = [a | b] (rows)."""
        if W.shape[0] == 0:
            return np.zeros((0, 3))
        a, b = W[:, :-1], W[:, -1]
        d1, d2, x0 = np.asarray(self.d1), np.asarray(self.d2), np.asarray(self.origin)
        return np.stack([a @ d1, a @ d2, a @ x0 + b], axis=1)

    def coordinates(self, x: Sequence[Any]) -> tuple[float, float] | None:
        """The plane coordinates of x, or None when x does not lie (up to rounding) on the plane."""
        xv = np.array([float(v) for v in x]) - np.asarray(self.origin)
        D = np.stack([np.asarray(self.d1), np.asarray(self.d2)], axis=1)
        st, *_ = np.linalg.lstsq(D, xv, rcond=None)
        if np.linalg.norm(D @ st - xv) > 1e-9 * (1.0 + np.linalg.norm(xv)):
            return None
        return float(st[0]), float(st[1])

    def describe(self) -> str:
        """One line stating the slice (vectors shown for m ≤ 6)."""
        if self.is_standard:
            return "the plane (x₁, x₂)"
        if self.m <= 6:
            x0 = "0" if not any(self.origin) else "(" + ", ".join(f"{v:.6g}" for v in self.origin) + ")"
            return f"slice x = x0 + s·d1 + t·d2 with x0 = {x0},\nd1 = {_vec(self.d1)}, d2 = {_vec(self.d2)}"
        x0 = "0" if not any(self.origin) else "a chosen point x0"
        return f"slice x = x0 + s·d1 + t·d2 through {x0},\nd1, d2 two random directions in ℝ^{self.m}"


def choose_slice(
    m: int, *, origin: Sequence[Any] | None = None, directions: Sequence[Sequence[Any]] | None = None, seed: int = 0
) -> Slice:
    """The plane drawn for m ≥ 2 inputs: given ``directions`` (d1, d2) and ``origin`` x0, or for m > 2 two
    random orthonormal directions (rounded to two decimals, so that the title states them exactly) through x0 = 0."""
    if m < 2:
        raise InvalidNetworkError(f"a slice needs m ≥ 2 inputs, got m = {m}")
    x0 = np.zeros(m) if origin is None else np.array([float(v) for v in origin])
    if x0.shape != (m,):
        raise InvalidNetworkError(f"origin must have m = {m} entries, got {x0.shape[0]}")
    if directions is None:
        if m == 2:
            D = np.eye(2)
        else:
            rng = np.random.default_rng(seed)
            while True:
                Q, _ = np.linalg.qr(rng.standard_normal((m, 2)))
                D = np.round(Q.T, 2)
                if np.linalg.matrix_rank(D) == 2:
                    break
    else:
        D = np.array([[float(v) for v in d] for d in directions])
        if D.shape != (2, m):
            raise InvalidNetworkError(f"directions must be two vectors of m = {m} entries, got shape {D.shape}")
        if np.linalg.matrix_rank(D) < 2:
            raise InvalidNetworkError("directions must be two linearly independent vectors")
    return Slice(
        tuple(float(v) + 0.0 for v in x0), tuple(float(v) + 0.0 for v in D[0]), tuple(float(v) + 0.0 for v in D[1])
    )


def _as_list(nets: Network | Sequence[Network]) -> list[Network]:
    lst = [nets] if isinstance(nets, Network) else list(nets)
    if not lst:
        raise InvalidNetworkError("nothing to draw: the list of networks is empty")
    for x in lst:
        if not isinstance(x, Network):
            raise InvalidNetworkError(f"plots need Network objects, got {type(x).__name__}")
    m, k = lst[0].m, lst[0].k
    for j, x in enumerate(lst[1:], start=2):
        if (x.m, x.k) != (m, k):
            raise InvalidNetworkError(f"network {j} has m = {x.m}, k = {x.k}, but network 1 has m = {m}, k = {k}")
    return lst


def _hyper_rows(net: Network) -> np.ndarray:
    """[a_i | b_i] (float) of the hyperplane neurons (a_i ≠ 0, v_i ≠ 0), the ones whose breakpoints matter."""
    V, A, b, _ = net.to_float(np.float64)
    keep = (A != 0).any(axis=1) & (V != 0).any(axis=0) if net.n else np.zeros(0, dtype=bool)
    return np.concatenate([A[keep], b[keep, None]], axis=1)


def auto_domain(
    nets: Network | Sequence[Network], *, plane: Slice | None = None, points: Sequence[Sequence[Any]] = ()
) -> Domain:
    """A window that shows every kink (docs/math/normal-form.md) of every network, and the given ``points`` of ℝ^m.

    m = 1: ((lo, hi),) around every breakpoint −b_i/a_i of a hyperplane neuron, with a margin of a third of
    their spread on each side (±1 around a single breakpoint, [−1, 1] without any).
    m ≥ 2: ((s_lo, s_hi), (t_lo, t_hi)) in the coordinates of ``plane`` (default :func:`choose_slice`): a
    square
    holding the origin and the point of each hyperplane's line closest to the origin, with a margin, so that
    every line crosses the window.
    """
    lst = _as_list(nets)
    m = lst[0].m
    rows = np.concatenate([_hyper_rows(x) for x in lst], axis=0)
    if m == 1:
        xs = list(-rows[:, 1] / rows[:, 0]) + [float(p[0]) for p in points]
        if not xs:
            return ((-1.0, 1.0),)
        lo, hi = float(min(xs)), float(max(xs))
        span = hi - lo
        margin = span / 3 if span > 0 else max(1.0, abs(lo) / 10)
        return ((lo - margin, hi + margin),)
    pl = plane or choose_slice(m)
    L = pl.lines(rows)
    nrm = L[:, 0] ** 2 + L[:, 1] ** 2
    L = L[nrm > 1e-24 * (1 + L[:, 2] ** 2)]
    nrm = L[:, 0] ** 2 + L[:, 1] ** 2
    pts = [np.zeros(2)]
    if L.shape[0]:
        pts.append(-(L[:, 2] / nrm)[:, None] * L[:, :2])
    for p in points:
        st = pl.coordinates(p)
        if st is not None:
            pts.append(np.array([st]))
    P = np.concatenate([np.atleast_2d(p) for p in pts], axis=0)
    lo, hi = P.min(axis=0), P.max(axis=0)
    centre = (lo + hi) / 2
    half = max(float((hi - lo).max()) / 2 * 1.3, 1.25)
    return tuple((float(cc - half), float(cc + half)) for cc in centre)


def _check_domain(domain: Any, m: int) -> Domain:
    want = 1 if m == 1 else 2
    try:
        dom = tuple((float(lo), float(hi)) for lo, hi in domain)
    except (TypeError, ValueError):
        dom = ()
    if len(dom) == 1 and want == 2:
        dom = dom * 2
    if len(dom) != want or any(not lo < hi for lo, hi in dom):
        raise InvalidNetworkError(f"domain must be {want} interval(s) (lo, hi) with lo < hi, got {domain!r}")
    return dom


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
# m = 1


def _panel_1d(
    ax: Axes,
    g: _Geo,
    *,
    dom: Domain,
    r: int | None,
    colors: _Colors,
    contributions: bool,
    max_contributions: int,
    reference: _Geo | None,
    ce: Counterexample | None,
    title: str,
    sym: str = "θ",
    ylabel: bool = True,
) -> tuple[float, float]:
    """Draw one m = 1 panel; return the y range used (so that rows can share padded limits)."""
    from matplotlib.collections import LineCollection

    lo, hi = dom[0]
    net = g.net
    outputs = list(range(g.k)) if r is None else [r]
    out_colors = ["black"] if len(outputs) == 1 else [f"C{q}" for q in range(len(outputs))]
    a0 = g.A[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        bps = np.where(a0 != 0, -g.b / np.where(a0 == 0, 1.0, a0), np.nan)
    inside = bps[(bps > lo) & (bps < hi)]
    xs = np.unique(np.concatenate([[lo, hi], inside, [float(ce.x[0])] if ce is not None else []]))
    Y = g.evaluate(xs[:, None])
    ys: list[np.ndarray] = [Y[:, outputs].ravel()]
    if reference is not None:
        ra = reference.A[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            rb = np.where(ra != 0, -reference.b / np.where(ra == 0, 1.0, ra), np.nan)
        rx = np.unique(np.concatenate([[lo, hi], rb[(rb > lo) & (rb < hi)]]))
        RY = reference.evaluate(rx[:, None])
        ys.append(RY[:, outputs].ravel())
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
    for q, col in zip(outputs, out_colors, strict=True):
        lab = f"ρ({sym})" if len(outputs) == 1 else f"output {q + 1}"
        ax.plot(xs, Y[:, q], color=col, lw=2.6, alpha=0.9, zorder=4, label=lab)
    # neuron contributions v_i σ(a_i x + b_i), drawn on top of the graph (thin) so that coinciding pieces show
    if contributions and net.n:
        # the size of each contribution: |v|·|a| for a ramp, |v|·b for a constant neuron, 0 for a null one
        weight = np.abs(g.V[outputs]).max(axis=0) * (np.abs(a0) + np.where(a0 == 0, np.maximum(g.b, 0), 0))
        shown = np.nonzero(weight > 0)[0]
        total = shown.size
        if total > max_contributions:
            shown = np.sort(shown[np.argsort(-weight[shown], kind="stable")[:max_contributions]])
        few = total <= 8 and len(outputs) == 1
        names = _names(1)
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
                        label=f"n{i}: {_neuron_str(net, i, q, names)}",
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
                label=f"output bias c = {_fmt(g.net.c[q])}" if q == outputs[0] and len(outputs) == 1 else None,
            )
            ys.append(np.array([cq]))
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
            kink_txt.append("κ = " + (_fmt(kap[0]) if len(kap) == 1 else _vec(kap, 3)))
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
    if ce is not None:
        yv = g.evaluate(np.array([[float(ce.x[0])]]))[0]
        q = outputs[0]
        # the exact values go into the legend, below the axes, where they hide nothing
        txt = (
            f"counterexample x = {_fmt(ce.x[0], 20)}:\nρ(θ1)(x) = {_fmt(ce.y1[q], 20)}, "
            f"ρ({sym})(x) = {_fmt(ce.y2[q], 20)}"
        )
        ax.scatter([float(ce.x[0])], [yv[q]], s=150, marker="*", color="red", edgecolor="black", zorder=8, label=txt)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("x")
    if ylabel:
        ax.set_ylabel("ρ(θ)(x)" if r is None or g.k == 1 else f"ρ(θ)(x), output {r + 1}")
    ax.set_title(title, fontsize=9.5)
    ax.grid(True, alpha=0.25)
    ax.axhline(0, color="0.6", lw=0.6, zorder=0)
    allv = np.concatenate([np.ravel(v) for v in ys])
    return float(allv.min()), float(allv.max())


def _pad_ylim(axes: Sequence[Axes], ranges: Sequence[tuple[float, float]]) -> None:
    """One padded y range for a row of panels: room for the κ labels above and below the graph."""
    lo = min(r[0] for r in ranges)
    hi = max(r[1] for r in ranges)
    pad = 0.16 * (hi - lo) if hi > lo else max(1.0, abs(hi) / 10)
    for ax in axes:
        ax.set_ylim(lo - pad, hi + pad)


# ----------------------------------------------------------------------------------------------------------
# m ≥ 2


def _clip_segment(p: float, q: float, r: float, dom: Domain) -> np.ndarray | None:
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


def _grid(dom: Domain, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    (s0, s1), (t0, t1) = dom
    res = 160 if n <= 300 else 110
    s = np.linspace(s0, s1, res)
    t = np.linspace(t0, t1, res)
    S, T = np.meshgrid(s, t)
    return s, t, S, T


def _panel_2d(
    ax: Axes,
    g: _Geo,
    *,
    dom: Domain,
    plane: Slice,
    r: int,
    Z: np.ndarray,
    vlim: tuple[float, float],
    knorm: Any,
    reference: _Geo | None,
    ce: Counterexample | None,
    title: str,
    sym: str = "θ2",
    diff: bool = False,
) -> Any:
    """Draw one m ≥ 2 panel (heatmap Z of output r, or of a difference when ``diff``); return the image."""
    (s0, s1), (t0, t1) = dom
    cmap = _DIFF_CMAP if diff else _heat_cmap()
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
        s, t, _, _ = _grid(dom, g.net.n)
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
        segs = [
            sg for p, q, rr in RL.tolist() if p * p + q * q > 0 and (sg := _clip_segment(p, q, rr, dom)) is not None
        ]
        if segs:
            from matplotlib.collections import LineCollection

            ax.add_collection(LineCollection(segs, colors="black", linestyles=(0, (4, 3)), linewidths=1.0, zorder=3))
            ax.plot([], [], color="black", ls=(0, (4, 3)), lw=1.0, label="θ1 hyperplanes")
    if not diff:
        _kink_lines(ax, g, dom=dom, plane=plane, r=r, knorm=knorm)
    if ce is not None:
        st = plane.coordinates(ce.x)
        txt = (
            f"counterexample x = {_vec(ce.x, 4, 14)}{'' if st is not None else ' (not on this slice)'}:\n"
            f"ρ(θ1)(x) = {_fmt(ce.y1[r], 20)}, ρ({sym})(x) = {_fmt(ce.y2[r], 20)}"
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


def _kink_lines(ax: Axes, g: _Geo, *, dom: Domain, plane: Slice, r: int, knorm: Any) -> None:
    """The kink hyperplanes of NF(θ) coloured by |κ|, cancelled ones dotted, κ labels, orientation arrows."""
    from matplotlib.collections import LineCollection

    (s0, s1), (t0, t1) = dom
    span = np.array([s1 - s0, t1 - t0])
    cmap = _kink_cmap()
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
        sg = _clip_segment(p, q, rr, dom)
        if sg is None:
            continue
        kap = float(g.kappa[j, r])
        if kap == 0:
            flat.append(sg)
            continue
        segs.append(sg)
        cols.append(cmap(knorm(abs(kap))))
        labels.append((sg, f"κ = {_fmt(g.h.kappa[j][r])}"))
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
        sg = _clip_segment(p, q, rr, dom) if p * p + q * q > 1e-24 * (1 + rr * rr) else None
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
        fig = _figure((6.4, 4.8) if net.m == 1 else (6.6, 5.8), 100)
        ax = fig.add_subplot()
    nets = [net] if reference is None else [reference, net]
    geos = [_geo(x) for x in nets]
    g = geos[-1]
    ref = geos[0] if reference is not None else None
    head = title if title is not None else (label or "θ")
    if net.m == 1:
        dom = _check_domain(domain, 1) if domain is not None else auto_domain(nets)
        yr = _panel_1d(
            ax,
            g,
            dom=dom,
            r=output,
            colors=_Colors(geos),
            contributions=contributions,
            max_contributions=max_contributions,
            reference=ref,
            ce=None,
            title=head,
        )
        _pad_ylim([ax], [yr])
        _legend(ax)
        return ax
    plane = choose_slice(net.m, origin=origin, directions=directions, seed=seed)
    dom = _check_domain(domain, 2) if domain is not None else auto_domain(nets, plane=plane)
    r = output or 0
    _, _, S, T = _grid(dom, net.n)
    Z = g.evaluate(plane.points(S, T))[:, r].reshape(S.shape)
    knorm = _kink_norm(geos, r)
    if not plane.is_standard and title is None:
        head = f"{head}\n{plane.describe()}"
    im = _panel_2d(
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
    _legend(ax)
    return ax


def _figure(figsize: tuple[float, float], dpi: float) -> Figure:
    """A pyplot-free figure with constrained layout and a little room at the edges for the legends."""
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    return Figure(figsize=figsize, dpi=dpi, layout=ConstrainedLayoutEngine(h_pad=0.1, w_pad=0.06))


def _kink_norm(geos: Sequence[_Geo], r: int) -> Any:
    from matplotlib.colors import Normalize

    vals = [abs(float(v)) for g in geos for v in g.kappa[:, r].tolist() if v != 0]
    top = max(vals, default=1.0)
    return Normalize(vmin=0.0, vmax=top if top > 0 else 1.0)


def _legend(ax: Axes) -> None:
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

    lst = _as_list(nets)
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
    geos = [_geo(x) for x in lst]
    heads = []
    syms = [f"θ{j + 1}" if len(lst) > 1 else "θ" for j in range(len(lst))]
    for j, v in enumerate(verdicts):
        name = syms[j] + (f": {_short(labs[j])}" if j < len(labs) and labs[j] else "")
        rel = _relation(v, j + 1)
        heads.append(name + ("\n" + rel if rel else ""))
    more = "" if len(outs) == k else f" (outputs {', '.join(str(q + 1) for q in outs)} of {k} shown)"
    if m == 1:
        dom = _check_domain(domain, 1) if domain is not None else auto_domain(lst, points=ce_points)
        ncol = len(lst)
        fs = figsize or (max(4.4 * ncol, 6.0), 4.6 * len(outs) + 0.6)
        fig = _figure(fs, dpi)
        axes = fig.subplots(len(outs), ncol, sharey="row", squeeze=False)
        colors = _Colors(geos)
        for row, q in enumerate(outs):
            ranges = []
            for j, g in enumerate(geos):
                ranges.append(
                    _panel_1d(
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
                _legend(axes[row][j])
            _pad_ylim(list(axes[row]), ranges)
        if more:
            fig.suptitle(more.strip(" ()"), fontsize=9)
        return fig
    if origin is None and ce_points and m > 2:
        origin = ce_points[0]  # the slice goes through the first counterexample, so that it can be marked
    plane = choose_slice(m, origin=origin, directions=directions, seed=seed)
    dom = _check_domain(domain, 2) if domain is not None else auto_domain(lst, plane=plane, points=ce_points)
    add_diff = len(lst) == 2 and ce[1] is not None
    ncol = len(lst) + int(add_diff)
    fs = figsize or (max(4.6 * ncol + 1.0, 6.6), 5.2 * len(outs) + 0.8)
    fig = _figure(fs, dpi)
    axes = fig.subplots(len(outs), ncol, squeeze=False)
    _, _, S, T = _grid(dom, max(x.n for x in lst))
    X = plane.points(S, T)
    Zs = [g.evaluate(X).reshape(S.shape + (k,)) for g in geos]
    for row, q in enumerate(outs):
        lo = min(float(Z[..., q].min()) for Z in Zs)
        hi = max(float(Z[..., q].max()) for Z in Zs)
        vlim = (lo, hi if hi > lo else lo + 1.0)
        knorm = _kink_norm(geos, q)
        ims = []
        for j, g in enumerate(geos):
            ims.append(
                _panel_2d(
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
            _legend(axes[row][j])
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
            ScalarMappable(norm=knorm, cmap=_kink_cmap()),
            shrink=0.85,
            pad=0.01,
            ax=list(axes[row][: len(lst)]),
            label="|κ| (kink coefficient)",
        )
        kb.ax.tick_params(labelsize=8)
        if add_diff:
            D = Zs[1][..., q] - Zs[0][..., q]
            top = float(np.abs(D).max()) or 1.0
            dim = _panel_2d(
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
            _legend(axes[row][-1])
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
) -> None:
    """Draw :func:`plot_networks` (keywords passed on) into ``path``, a .png, .svg or .pdf file (from its
    suffix), written atomically.  An unknown suffix raises InvalidNetworkError before anything is drawn or written."""
    fmt = _format_of(path)
    dpi = kw.pop("dpi", 100)
    fig = plot_networks(nets, labels, dpi=dpi, **kw)
    meta = {"Creator": "relusym"} if fmt != "png" else {"Software": "relusym"}
    atomic_write(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi, metadata=meta))


def png_base64(fig: Figure, dpi: float = 90) -> str:
    """The figure as a base64-encoded PNG (for pages that embed their pictures)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")
