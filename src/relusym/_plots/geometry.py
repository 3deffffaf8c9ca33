"""The geometry of the pictures: each network's float view and hyperplane classes (docs/math/normal-form.md),
the plane an m ≥ 2 network is drawn on (:class:`Slice`) and the window drawn (:func:`auto_domain`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from relusym._base.display import compact_vector
from relusym._core.network import Network
from relusym._exact.hashing import float_key
from relusym._plots.style import CLASS_COLORS
from relusym.errors import InvalidNetworkError

if TYPE_CHECKING:
    from relusym._core.classes import HyperplaneClasses

Domain = tuple[tuple[float, float], ...]

__all__ = [
    "Domain",
    "Geo",
    "geometry_of",
    "Colors",
    "Slice",
    "choose_slice",
    "as_list",
    "hyper_rows",
    "auto_domain",
    "check_domain",
    "kinks_m1",
    "change_window",
    "KEEP_SHARE",
    "TAIL_SHARE",
]


@dataclass(frozen=True)
class Geo:
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


def geometry_of(net: Network) -> Geo:
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
    return Geo(net, V, A, b, c, h, u, kappa, h.label.copy(), sign)


class Colors:
    """One colour per unoriented hyperplane class, shared by every panel of a figure."""

    def __init__(self, geos: Sequence[Geo]) -> None:
        self._index: dict[bytes, int] = {}
        for g in geos:
            for j in range(g.u.shape[0]):
                self._index.setdefault((g.u[j] + 0.0).tobytes(), len(self._index))

    def neuron(self, g: Geo, i: int) -> str:
        j = int(g.label[i])
        if j < 0:
            return "#999999"
        return CLASS_COLORS[self._index[(g.u[j] + 0.0).tobytes()] % len(CLASS_COLORS)]


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
            d1, d2 = compact_vector(self.d1), compact_vector(self.d2)
            return f"slice x = x0 + s·d1 + t·d2 with x0 = {x0},\nd1 = {d1}, d2 = {d2}"
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


def as_list(nets: Network | Sequence[Network]) -> list[Network]:
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


def hyper_rows(net: Network) -> np.ndarray:
    """[a_i | b_i] (float) of the hyperplane neurons (a_i ≠ 0, v_i ≠ 0), the ones whose breakpoints matter."""
    V, A, b, _ = net.to_float(np.float64)
    keep = (A != 0).any(axis=1) & (V != 0).any(axis=0) if net.n else np.zeros(0, dtype=bool)
    return np.concatenate([A[keep], b[keep, None]], axis=1)


KEEP_SHARE = 1 / 20  # a kink whose |Δslope| is at least this share of the network's largest is always shown
TAIL_SHARE = 0.025  # the kinks left out on each side carry at most this share of the network's total |Δslope|


def kinks_m1(net: Network) -> tuple[np.ndarray, np.ndarray]:
    """The kinks of NF(θ) of an m = 1 network, as floats: their positions x_j and weights w_j = max_r |κ_j,r|,
    the change of slope there (the largest over the outputs); cancelled kinks (κ = 0) are left out."""
    g = geometry_of(net)
    w = np.abs(g.kappa).max(axis=1) if g.kappa.size else np.zeros(g.u.shape[0])
    keep = w > 0
    return -g.u[keep, 1] / g.u[keep, 0], w[keep]


def change_window(xs: np.ndarray, w: np.ndarray) -> tuple[float, float] | None:
    """The part of the line where one m = 1 function changes: the smallest interval of kinks that keeps every
    kink of weight ≥ KEEP_SHARE · max w and leaves out, on each side, kinks of total weight ≤ TAIL_SHARE · Σ w
    (None without kinks).  See docs/gallery.md, "The window"."""
    if xs.size == 0:
        return None
    order = np.argsort(xs, kind="stable")
    xs, w = xs[order], w[order]
    total, major = float(w.sum()), w >= KEEP_SHARE * float(w.max())
    # the first kink from each end that is major or past the tail's share of the weight (the largest kink
    # is major, so the two meet at worst there)
    left = np.nonzero(major | (np.cumsum(w) > TAIL_SHARE * total))[0][0]
    right = np.nonzero(major | (np.cumsum(w[::-1])[::-1] > TAIL_SHARE * total))[0][-1]
    return float(xs[left]), float(xs[right])


def auto_domain(
    nets: Network | Sequence[Network],
    *,
    plane: Slice | None = None,
    points: Sequence[Sequence[Any]] = (),
    every_kink: bool = False,
) -> Domain:
    """A window that shows where the networks change (docs/math/normal-form.md) and the given ``points`` of ℝ^m.

    m = 1: ((lo, hi),) around the kinks that carry the change of each network (:func:`change_window`: every kink
    whose change of slope |κ| is at least 1/20 of the network's largest, and all but tails of at most 2.5 % of
    its total |κ| on each side), with a margin of a third of their spread on each side (±1 around a single
    point, [−1, 1] without any).  A trained network's far kinks of tiny |κ| (neurons with small input weights)
    are thus left out instead of shrinking the fitted region to a sliver of the picture; ``every_kink=True``
    spans every breakpoint −b_i/a_i of a hyperplane neuron instead.
    m ≥ 2: ((s_lo, s_hi), (t_lo, t_hi)) in the coordinates of ``plane`` (default :func:`choose_slice`): a
    square holding the origin and the point of each hyperplane's line closest to the origin, with a margin, so
    that every line crosses the window.
    """
    lst = as_list(nets)
    m = lst[0].m
    if m == 1:
        xs: list[float] = [float(p[0]) for p in points]
        for x in lst:
            if every_kink:
                rows = hyper_rows(x)
                xs += list(-rows[:, 1] / rows[:, 0])
            else:
                span = change_window(*kinks_m1(x))
                xs += list(span) if span is not None else []
        if not xs:
            return ((-1.0, 1.0),)
        lo, hi = float(min(xs)), float(max(xs))
        span_ = hi - lo
        margin = span_ / 3 if span_ > 0 else max(1.0, abs(lo) / 10)
        return ((lo - margin, hi + margin),)
    rows = np.concatenate([hyper_rows(x) for x in lst], axis=0)
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


def check_domain(domain: Any, m: int) -> Domain:
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
