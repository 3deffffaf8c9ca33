"""The exact reductions of a deep ReLU network, each valid on all of ℝ^m (docs/math/deep.md).

For a hidden unit u of layer ℓ with augmented row (w, β) and outgoing column c (its column of W_{ℓ+1}):

* **constant** (w = 0): the unit outputs σ(β) everywhere; c·σ(β) is added to b_{ℓ+1} and the unit removed;
* **dead on the orthant** (ℓ ≥ 2, w ≤ 0 and β ≤ 0 entrywise): its input h_{ℓ−1} = σ(…) is ≥ 0, so w·h + β ≤ 0
  and the unit never fires: removed;
* **affine on the orthant** (ℓ ≥ 2, w ≥ 0 entrywise, β > 0): w·h ≥ 0, so σ(w·h + β) = σ(w·h) + β; c·β is
  added to b_{ℓ+1} and β set to 0 (the unit stays: it acts linearly on the image of the earlier layers);
* **positive duplicate** ((w, β) = t·(w', β') for another unit u' of the layer, t > 0): σ(t z) = t σ(z), so u'
  takes the column c' + t·c and u is removed;
* **no output** (c = 0): removed.

Removing a unit deletes its row and its (then irrelevant) column; a removal can enable another (a column of the
next layer may become zero, a row of the layer after a constant may change), so the rules are applied until
none applies.  Every rule keeps the function on all of ℝ^m, exactly.

Reductions are rare in trained networks.  When the layers are still the arrays of a network (an unread
:class:`relusym._deep.rows.ArrayRows`), :func:`reduce_layers` first asks :func:`relusym._deep.dyadic.reductions_apply`
(vectorised sign tests, zero tests and row hashes verified exactly) whether any rule applies, and when none does
returns the layers as they are, without a Fraction.  When rules apply to float layers, :func:`_float_reduce`
applies them step for step as the reference does, on float64 copies, checking every entry an update changes
against its exact value; otherwise (exact rationals, or an update float64 cannot hold) the Fraction reference
(:func:`reduce_layers_reference`) runs.  All three give the same result in every case.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._deep.dyadic import reductions_apply
from relusym._deep.mlp import MLP
from relusym._deep.rows import ArrayRows, ReducedLayers, Row, dyadic_layers, primitive, rational_rows
from relusym._exact.numbers import is_float_array

__all__ = ["Reduction", "Reduced", "reduce_layers", "reduce_layers_reference", "reduce_mlp", "rows_to_mlp"]


@dataclass(frozen=True)
class Reduction:
    """One step of the reduction: ``kind`` is ``"constant"``, ``"dead"``, ``"affine-bias"``, ``"merged"`` or
    ``"no-output"``;
    ``layer`` is the hidden layer (1-based), ``unit`` the unit's index in the original network, ``into`` the unit
    it was merged into (for ``"merged"``) and ``factor`` the positive t with row(unit) = t·row(into)."""

    kind: str
    layer: int
    unit: int
    into: int | None = None
    factor: Fraction | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "layer": self.layer, "unit": self.unit}
        if self.into is not None:
            d["into"] = self.into
            d["factor"] = str(self.factor)
        return d


@dataclass(frozen=True)
class Reduced:
    """The reduced layers (augmented rows, exact) with, per hidden layer, the original index of each kept unit."""

    layers: list[list[Row]]
    kept: list[list[int]]
    steps: tuple[Reduction, ...]
    m: int

    @property
    def hidden_widths(self) -> tuple[int, ...]:
        return tuple(len(rows) for rows in self.layers[:-1])


def reduce_layers(layers: list[list[Row]], m: int) -> Reduced:
    """Apply the four rules to augmented rows (copied, not changed) until none applies."""
    fast = _already_reduced(layers, m)
    if fast is None:
        fast = _float_reduce(layers, m)
    return fast if fast is not None else reduce_layers_reference(layers, m)


class _Inexact(Exception):
    """An update of the float path that float64 cannot hold exactly: the Fraction reference takes over."""


def _float_reduce(layers: list[list[Row]], m: int) -> Reduced | None:
    """The reference's reductions, step for step, on float64 copies of float layers: every entry an update
    changes is checked against its exact value (Fractions for those few entries only), and duplicates are found
    from the exact primitive rows (:mod:`relusym._deep.dyadic`).  None when the layers are not unread float
    arrays or an update is not exact in float64 (then the reference runs)."""
    if not layers or not all(isinstance(r, ArrayRows) and r.untouched for r in layers):
        return None
    arrays = [r for r in layers if isinstance(r, ArrayRows)]
    if not all(is_float_array(r.weight) and is_float_array(r.bias) for r in arrays):
        return None
    Ws = [np.array(r.weight, dtype=np.float64) for r in arrays]
    bs = [np.array(r.bias, dtype=np.float64) for r in arrays]
    kept = [list(range(W.shape[0])) for W in Ws[:-1]]
    steps: list[Reduction] = []
    try:
        while True:
            changed = _forward_float(Ws, bs, kept, steps)
            changed = _backward_float(Ws, kept, steps, bs) or changed
            if not changed:
                break
    except _Inexact:
        return None
    out = [ArrayRows(*_in_dtype_of(W, b, r)) for W, b, r in zip(Ws, bs, arrays, strict=True)]
    return Reduced(ReducedLayers(out), kept, tuple(steps), m)


def _in_dtype_of(W: np.ndarray, b: np.ndarray, ref: ArrayRows) -> tuple[np.ndarray, np.ndarray]:
    """The arrays, read-only, in the original layer's dtype where that holds them exactly (else float64)."""
    dt = np.result_type(ref.weight.dtype, ref.bias.dtype)
    out = []
    for x in (W, b):
        with np.errstate(over="ignore"):
            y = x.astype(dt)
        z = y if np.array_equal(y.astype(np.float64), x) else x
        z.setflags(write=False)
        out.append(z)
    return out[0], out[1]


def _add_exact(target: np.ndarray, addend: np.ndarray, t: Fraction) -> None:
    """target += t·addend in float64, each changed entry checked against its exact value."""
    nz = np.flatnonzero(addend)
    if nz.size == 0:
        return
    old = target[nz].copy()
    try:
        tf = float(t)
    except OverflowError:  # a factor beyond float64: the float path cannot hold the result, the exact one takes over
        raise _Inexact from None
    with np.errstate(all="ignore"):
        target[nz] = old + tf * addend[nz]
    for o, a, new in zip(old.tolist(), addend[nz].tolist(), target[nz].tolist(), strict=True):
        if not np.isfinite(new) or Fraction(new) != Fraction(o) + t * Fraction(a):
            raise _Inexact


def _forward_float(Ws: list[np.ndarray], bs: list[np.ndarray], kept: list[list[int]], steps: list[Reduction]) -> bool:
    from relusym._deep.dyadic import dyadic_of_arrays, equal_rows, row_hashes, scale_fractions

    changed = False
    for ell in range(len(Ws) - 1):
        W, b, Wn, bn = Ws[ell], bs[ell], Ws[ell + 1], bs[ell + 1]
        n = W.shape[0]
        if n == 0:
            continue
        const: np.ndarray = np.logical_not(W.any(axis=1))
        dead: np.ndarray = np.zeros(n, dtype=bool)
        affine: np.ndarray = np.zeros(n, dtype=bool)
        if ell >= 1:  # the input of layers 2, 3, … is ≥ 0
            dead = ~const & (W <= 0).all(axis=1) & (b <= 0)
            affine = ~const & (W >= 0).all(axis=1) & (b > 0)
        b_eff = np.where(affine, 0.0, b)
        D = dyadic_of_arrays(W, b_eff)
        if D is None:
            raise _Inexact
        P = D.primitive()
        hashes = row_hashes(P.rows).tolist()
        scales = scale_fractions(P.g, P.x)
        keep: list[int] = []
        seen: dict[int, list[int]] = {}
        for i in range(n):
            ident = kept[ell][i]
            if const[i]:
                if b[i] > 0:
                    _add_exact(bn, Wn[:, i], Fraction(float(b[i])))
                steps.append(Reduction("constant", ell + 1, ident))
                continue
            if dead[i]:
                steps.append(Reduction("dead", ell + 1, ident))
                continue
            if affine[i]:
                _add_exact(bn, Wn[:, i], Fraction(float(b[i])))
                b[i] = 0.0
                steps.append(Reduction("affine-bias", ell + 1, ident))
            match = None
            for j in seen.get(hashes[i], ()):
                if bool(equal_rows(P.rows, np.array([i]), P.rows, np.array([j]))[0]):
                    match = j
                    break
            if match is not None:
                tfac = scales[i] / scales[match]
                col = Wn[:, match].copy()
                _add_exact(col, Wn[:, i], tfac)
                Wn[:, match] = col
                steps.append(Reduction("merged", ell + 1, ident, kept[ell][match], tfac))
                continue
            seen.setdefault(hashes[i], []).append(i)
            keep.append(i)
        if len(keep) < n:
            changed = True
            _keep_float(Ws, bs, kept, ell, keep)
    return changed


def _backward_float(Ws: list[np.ndarray], kept: list[list[int]], steps: list[Reduction], bs: list[np.ndarray]) -> bool:
    changed = False
    for ell in range(len(Ws) - 2, -1, -1):
        live = Ws[ell + 1].any(axis=0)
        if not bool(live.all()):
            changed = True
            for i in np.flatnonzero(~live).tolist():
                steps.append(Reduction("no-output", ell + 1, kept[ell][i]))
            _keep_float(Ws, bs, kept, ell, np.flatnonzero(live).tolist())
    return changed


def _keep_float(Ws: list[np.ndarray], bs: list[np.ndarray], kept: list[list[int]], ell: int, keep: list[int]) -> None:
    Ws[ell] = Ws[ell][keep]
    bs[ell] = bs[ell][keep]
    Ws[ell + 1] = Ws[ell + 1][:, keep]
    kept[ell] = [kept[ell][i] for i in keep]


def _already_reduced(layers: list[list[Row]], m: int) -> Reduced | None:
    """The result of the reference when the layers are unread arrays to which no rule applies, else None."""
    if not layers or not all(isinstance(rows, ArrayRows) and rows.untouched for rows in layers):
        return None
    D = dyadic_layers(layers, m)
    if D is None or reductions_apply(D):
        return None
    arrays = [rows.sibling() for rows in layers if isinstance(rows, ArrayRows)]
    return Reduced(ReducedLayers(arrays), [list(range(len(rows))) for rows in arrays[:-1]], (), m)


def reduce_layers_reference(layers: list[list[Row]], m: int) -> Reduced:
    """:func:`reduce_layers` in Fractions, rule by rule (the reference the fast path agrees with)."""
    L = len(layers)
    work = [[list(r) for r in rows] for rows in layers]
    kept = [list(range(len(work[ell]))) for ell in range(L - 1)]
    steps: list[Reduction] = []
    while True:
        changed = _forward(work, kept, steps)
        changed = _backward(work, kept, steps, m) or changed
        if not changed:
            return Reduced(work, kept, tuple(steps), m)


def _forward(work: list[list[Row]], kept: list[list[int]], steps: list[Reduction]) -> bool:
    changed = False
    for ell in range(len(work) - 1):
        rows, nxt = work[ell], work[ell + 1]
        keep: list[int] = []
        seen: dict[tuple[int, ...], tuple[int, Fraction]] = {}
        for i, row in enumerate(rows):
            ident = kept[ell][i]
            if not any(row[:-1]):
                beta = row[-1]
                if beta > 0:
                    for r in nxt:
                        if r[i]:
                            r[-1] += r[i] * beta
                steps.append(Reduction("constant", ell + 1, ident))
                continue
            if ell >= 1 and all(v <= 0 for v in row):
                steps.append(Reduction("dead", ell + 1, ident))
                continue
            if ell >= 1 and row[-1] > 0 and all(v >= 0 for v in row[:-1]):
                beta = row[-1]
                for r in nxt:
                    if r[i]:
                        r[-1] += r[i] * beta
                row[-1] = Fraction(0)
                steps.append(Reduction("affine-bias", ell + 1, ident))
            p, d = primitive(row)
            if p in seen:
                j, dj = seen[p]
                t = d / dj
                for r in nxt:
                    if r[i]:
                        r[j] += t * r[i]
                steps.append(Reduction("merged", ell + 1, ident, kept[ell][j], t))
                continue
            seen[p] = (i, d)
            keep.append(i)
        if len(keep) < len(rows):
            changed = True
            _keep_units(work, kept, ell, keep)
    return changed


def _backward(work: list[list[Row]], kept: list[list[int]], steps: list[Reduction], m: int) -> bool:
    changed = False
    for ell in range(len(work) - 2, -1, -1):
        rows, nxt = work[ell], work[ell + 1]
        keep = [i for i in range(len(rows)) if any(r[i] for r in nxt)]
        if len(keep) < len(rows):
            changed = True
            keepset = set(keep)
            for i in range(len(rows)):
                if i not in keepset:
                    steps.append(Reduction("no-output", ell + 1, kept[ell][i]))
            _keep_units(work, kept, ell, keep)
    return changed


def _keep_units(work: list[list[Row]], kept: list[list[int]], ell: int, keep: list[int]) -> None:
    work[ell] = [work[ell][i] for i in keep]
    work[ell + 1] = [[r[i] for i in keep] + [r[-1]] for r in work[ell + 1]]
    kept[ell] = [kept[ell][i] for i in keep]


def reduce_mlp(net: MLP) -> tuple[MLP, Reduced]:
    """The reduced MLP (same function on ℝ^m, widths never larger) and what was done.

    Layers that no rule touched keep their original arrays (a float network stays a float network); a changed
    layer keeps its float dtype where every entry still fits it exactly, else it holds exact rationals."""
    layers = [rational_rows(W, b) for W, b in zip(net.weights, net.biases, strict=True)]
    red = reduce_layers(layers, net.m)
    return rows_to_mlp(red.layers, net.m, like=net, untouched=_untouched(red, net)), red


def _untouched(red: Reduced, net: MLP) -> list[bool]:
    """Whether each layer's rows are exactly the original ones (same units in, same units out, same values)."""
    widths = net.widths
    out = []
    for ell in range(len(red.layers)):
        rows_same = ell == len(red.layers) - 1 or len(red.kept[ell]) == widths[ell + 1]
        cols_same = ell == 0 or len(red.kept[ell - 1]) == widths[ell]
        out.append(rows_same and cols_same and not any(s.layer in (ell, ell + 1) for s in red.steps))
    return out


def rows_to_mlp(
    layers: list[list[Row]], m: int, *, like: MLP | None = None, untouched: list[bool] | None = None
) -> MLP:
    """An MLP from augmented rows; with ``like``, a layer marked untouched reuses ``like``'s arrays and a changed
    one is stored in ``like``'s float dtype when that holds every entry exactly."""
    Ws: list[np.ndarray] = []
    bs: list[np.ndarray] = []
    prev = m
    for ell, rows in enumerate(layers):
        if like is not None and untouched is not None and untouched[ell]:
            Ws.append(like.weights[ell])
            bs.append(like.biases[ell])
            prev = like.weights[ell].shape[0]
            continue
        if isinstance(rows, ArrayRows) and rows.untouched and rows.weight.shape[1] == prev:
            Ws.append(rows.weight)  # the same values, in the arrays they were read from
            bs.append(rows.bias)
            prev = rows.weight.shape[0]
            continue
        W = np.empty((len(rows), prev), dtype=object)
        b = np.empty(len(rows), dtype=object)
        for i, r in enumerate(rows):
            W[i, :] = r[:-1]
            b[i] = r[-1]
        if like is not None:
            W = _as_dtype_of(W, like.weights[ell])
            b = _as_dtype_of(b, like.biases[ell])
        Ws.append(W)
        bs.append(b)
        prev = len(rows)
    return MLP(Ws, bs)


def _as_dtype_of(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``x`` (Fractions) in ``ref``'s float dtype when that is exact, else unchanged."""
    if not is_float_array(ref):
        return x
    flat = x.ravel().tolist()
    try:
        with np.errstate(over="ignore"):
            y = np.array([float(v) for v in flat], dtype=ref.dtype).reshape(x.shape)
    except OverflowError:
        return x
    if not bool(np.isfinite(y).all()):
        return x  # beyond the dtype's range
    if all(Fraction(float(f)) == v for f, v in zip(y.ravel().tolist(), flat, strict=True)):
        return y
    return x
