"""Which units of two deep ReLU networks have no partner in the other: the units box equality must prove removable.

A network and a copy with some units removed because they are dead on a box (``relusym prune --box-from``), or
two copies of one network with units planted that are dead only on the box, agree unit for unit elsewhere: unit
i of the second network computes t_i times unit π(i) of the first (t_i > 0) at every input where the unpartnered
units output 0.  This module *proposes* the partnered pairs, layer by layer, in floats: with the previous layer's
pairs (k1, k2, s) (h2_k2 = s·h1_k1), unit j of the first network has the row u1_j = (W1[j, k1] …, b1_j) over the
partnered columns and unit i of the second u2_i = (W2[i, k2]·s …, b2_i); they are partners when u2_i = t·u1_j
with t > 0 (equal directions after normalising).  A direction one network holds more often than the other
leaves all its units on both sides unpartnered.  Columns of unpartnered units are left out: on the box those
units are to be proved dead, so they contribute nothing there.

Unlike :func:`relusym._deep.align.align_deep` (networks of the same widths, noisy rows, every unit assigned a
partner by a linear assignment), the widths differ here and a unit without an equal direction in the other network
must stay unpartnered.

Nothing here proves anything.  :mod:`relusym._deep.box_equal` asks the exact unit statuses for just the
unpartnered units (the expensive part of the full statuses, run on a handful of units), removes the units proved
dead and lets the exact decision on ℝ^m (:func:`relusym._deep.decide.equivalent_deep`) certify the rest; a wrong
proposal only costs the fast route.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from relusym._deep.mlp import MLP
from relusym._exact.numbers import as_float64

__all__ = ["unpartnered_units"]

_DIGITS = 9  # normalised directions are compared rounded to this many decimals


def _key(v: np.ndarray) -> tuple[float, ...] | None:
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return tuple(np.round(v / norm, _DIGITS).tolist())


def unpartnered_units(n1: MLP, n2: MLP) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The hidden units (layer, unit), layers numbered from 1, of ``n1`` and of ``n2`` with no proposed partner
    in the other network (see the module); ([], []) also when the networks have different depths or inputs."""
    if n1.depth != n2.depth or n1.m != n2.m:
        return [], []
    pairs = [(i, i, 1.0) for i in range(n1.m)]
    left1: list[tuple[int, int]] = []
    left2: list[tuple[int, int]] = []
    for ell in range(len(n1.weights) - 1):
        W1, b1 = as_float64(n1.weights[ell]), as_float64(n1.biases[ell])
        W2, b2 = as_float64(n2.weights[ell]), as_float64(n2.biases[ell])
        c1 = [k1 for k1, _, _ in pairs]
        c2 = [k2 for _, k2, _ in pairs]
        s = np.array([t for _, _, t in pairs])
        u1 = np.hstack([W1[:, c1], b1[:, None]])
        u2 = np.hstack([W2[:, c2] * s, b2[:, None]])
        keys1, keys2 = [_key(r) for r in u1], [_key(r) for r in u2]
        by_key: dict[tuple[float, ...], list[int]] = defaultdict(list)
        count2: dict[tuple[float, ...], int] = defaultdict(int)
        for j, key in enumerate(keys1):
            if key is not None:
                by_key[key].append(j)
        for key in keys2:
            if key is not None:
                count2[key] += 1
        new_pairs: list[tuple[int, int, float]] = []
        for i, key in enumerate(keys2):
            # a direction both networks hold equally often is paired in order; one held more often by one
            # network leaves every unit of it unpartnered (which copy is the extra one is not known here)
            if key is not None and len(by_key.get(key, ())) == count2[key]:
                j = by_key[key].pop(0)
                new_pairs.append((j, i, float(np.linalg.norm(u2[i]) / np.linalg.norm(u1[j]))))
            else:
                left2.append((ell + 1, i))
        taken = {j for j, _, _ in new_pairs}
        left1.extend((ell + 1, j) for j in range(len(u1)) if j not in taken)
        pairs = new_pairs
    return left1, left2
