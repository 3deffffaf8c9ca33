"""The largest reduction of a network whose entries a file's number type holds: null, dead and constant neurons
dropped or folded, neurons on one hyperplane with one orientation merged, each step kept only when its result
fits (``relusym prune`` writes it when the full reduction needs entries the file's dtype cannot hold)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relusym._core.network import Network
from relusym._core.normal_form import normal_form
from relusym._exact.dtypes import exactly_in_dtype
from relusym._exact.numbers import to_fraction
from relusym.errors import InvalidNetworkError

__all__ = ["ExactReduction", "exact_reduction"]


@dataclass(frozen=True)
class ExactReduction:
    """The result of :func:`exact_reduction`: a network computing the same function whose every entry passed
    ``fits``, with θ's own rows (A, b) for every neuron it keeps; the neurons of θ it ``removed`` (null, dead,
    constant ones folded into c, and those merged into another), the ``merged`` groups (θ's neuron first, then
    those added into it), and ``unmerged``: pairs (i, j) of neurons on the same hyperplane with the same
    orientation that stay apart because v_i + s·v_j does not fit (or constant neurons (j, j) whose b_j·v_j does
    not fit into c)."""

    network: Network
    removed: tuple[int, ...]
    merged: tuple[tuple[int, ...], ...]
    unmerged: tuple[tuple[int, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "width": self.network.n,
            "removed": list(self.removed),
            "merged": [list(g) for g in self.merged],
            "unmerged": [list(p) for p in self.unmerged],
        }


def _predicate(fits: Callable[[Sequence[Fraction]], bool] | Any) -> Callable[[Sequence[Fraction]], bool]:
    """``fits`` as a predicate: a numpy float dtype (or its name) accepts the values it holds exactly."""
    if isinstance(fits, type | np.dtype | str):  # a dtype (np.float32 is callable: tested first)
        target = np.dtype(fits)

        def in_dtype(values: Sequence[Fraction]) -> bool:
            return exactly_in_dtype(list(values), target) is not None

        return in_dtype
    return fits


def _stored(
    net: Network, V: list[list[Fraction]], A: list[list[Fraction]], b: list[Fraction], c: list[Fraction]
) -> list[Any]:
    """V, A, b and c as arrays: each in θ's float dtype when θ is a float network and the dtype holds it, else
    Fractions."""
    k, m, n = net.k, net.m, len(b)
    dtype = np.result_type(net.V.dtype, net.A.dtype, net.b.dtype, net.c.dtype) if net.is_float else None
    arrays: list[Any] = []
    for values, shape in ((V, (k, n)), (A, (n, m)), (b, (n,)), (c, (k,))):
        flat = [x for row in values for x in row] if values and isinstance(values[0], list) else list(values)
        fit = exactly_in_dtype(flat, dtype) if dtype is not None else None
        arrays.append(fit.reshape(shape) if fit is not None else np.array(flat, dtype=object).reshape(shape))
    return arrays


def exact_reduction(net: Network, fits: Callable[[Sequence[Fraction]], bool] | Any) -> ExactReduction:
    """The largest reduction of θ made of steps whose results ``fits`` accepts, each of which keeps the function:
    dropping null and dead neurons, folding constant neurons into c, and merging neurons on the same hyperplane
    with the same orientation (v_i + s·v_j for a_j = s·a_i, b_j = s·b_i, s > 0), greedily in θ's order.  The
    kept neurons keep θ's own rows a_i, b_i.  ``fits`` is a predicate on a list of exact values, or a numpy
    float dtype (the values must be exactly representable in it), e.g. the dtype of the file θ came from, where
    the full reduction (:func:`minimal_network`) needs entries that the dtype cannot hold.  Pairs of neurons of
    opposite orientation (which the full reduction may cancel) are kept."""
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"exact_reduction needs a Network, got {type(net).__name__}")
    fits = _predicate(fits)
    k, m, n = net.k, net.m, net.n
    cols = [[to_fraction(x) for x in net.V[:, i].tolist()] for i in range(n)]
    rows = [[to_fraction(x) for x in net.A[i].tolist()] for i in range(n)]
    bias = [to_fraction(x) for x in net.b.tolist()]
    c = [to_fraction(x) for x in net.c.tolist()]
    removed: list[int] = []
    unmerged: list[tuple[int, int]] = []
    groups: dict[tuple[Fraction, ...], list[tuple[int, Fraction]]] = {}
    for i in range(n):
        if not any(cols[i]) or (not any(rows[i]) and bias[i] <= 0):
            removed.append(i)
            continue
        if not any(rows[i]):
            folded = [x + bias[i] * v for x, v in zip(c, cols[i], strict=True)]
            if fits(folded):
                c = folded
                removed.append(i)
            else:
                unmerged.append((i, i))
                groups[(Fraction(i), Fraction(-1))] = [(i, Fraction(1))]  # kept as it is
            continue
        lam = abs(next(x for x in rows[i] if x != 0))
        key = (*(x / lam for x in rows[i]), bias[i] / lam)
        groups.setdefault(key, []).append((i, lam))
    kept: list[tuple[int, list[Fraction]]] = []
    merged: list[tuple[int, ...]] = []
    for members in groups.values():
        rest = list(members)
        while rest:
            (rep, lam_rep), rest = rest[0], rest[1:]
            acc, into, left = list(cols[rep]), [rep], []
            for j, lam_j in rest:
                s = lam_j / lam_rep
                cand = [x + s * v for x, v in zip(acc, cols[j], strict=True)]
                if fits(cand):
                    acc = cand
                    into.append(j)
                else:
                    unmerged.append((rep, j))
                    left.append((j, lam_j))
            rest = left
            if len(into) > 1:
                merged.append(tuple(into))
                removed.extend(into[1:])
            if any(acc):
                kept.append((rep, acc))
            else:  # the kinks cancel: the whole group goes
                removed.append(rep)
    kept.sort()
    arrays = _stored(net, [[col[r] for _, col in kept] for r in range(k)], [rows[i] for i, _ in kept],
                     [bias[i] for i, _ in kept], c)  # fmt: skip
    out = Network(arrays[0], arrays[1], arrays[2], arrays[3], m=m)
    if normal_form(out) != normal_form(net):  # pragma: no cover - each step keeps the function
        raise AssertionError("the exact reduction does not realize the same function")
    return ExactReduction(out, tuple(sorted(set(removed))), tuple(merged), tuple(unmerged))
