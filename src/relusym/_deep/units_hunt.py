"""Crossing witnesses hunted where a cover in floats stays open (issue 22).

A unit whose cover by input splitting (:func:`relusym._deep.box_split.split_cover`) does not close has leaves where
the float bounds still allow the sign it is not known to take.  When the unit does cross, that sign often lives
in a thin region of the box that uniform samples and gradient steps the size of the box miss; the open leaves with
the largest float bound in that direction are where to look.  :func:`hunt_open_leaves` runs projected
sign-gradient ascent of ±z from the centre and a few random points of each such leaf, with steps of the leaf's
size and every iterate kept inside the leaf.  Nothing here proves anything: the best point of each unit is read
as a dyadic grid point of the box and :class:`relusym._deep.box_witnesses.Witnesses` keeps it only after
evaluating the unit exactly there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relusym._base.deadline import Deadline
from relusym._deep.bounds import Region
from relusym._deep.box_split import Cover, Splitter
from relusym._deep.box_witnesses import Witnesses
from relusym._deep.witness import FloatNet, exact_point

__all__ = ["hunt_open_leaves"]

_LEAVES = 6  # open leaves of a unit to start from (the largest float bounds of the sign looked for)
_STARTS = 2  # starts per leaf: its centre and random points of it
_STEPS = 60
_TRIES = 2  # a unit's best points confirmed exactly (a float value > 0 may round to ≤ 0 on the grid)


def hunt_open_leaves(
    wit: Witnesses,
    net: FloatNet,
    root: Region,
    sp: Splitter,
    covers: Sequence[Cover],
    deadline: Deadline,
    seed: int = 2,
) -> None:
    """For each cover with open leaves whose unit is seen with one sign only, ascent towards the other sign from
    its most promising open leaves (all units of the call batched); the best point of each unit is confirmed
    exactly."""
    rng = np.random.default_rng(seed)
    for ell in sorted({cv.ell for cv in covers}):
        if deadline.expired():
            return
        todo = [cv for cv in covers if cv.ell == ell and cv.open and not wit.crossing(ell, cv.j)]
        todo = [cv for cv in todo if wit.pos[ell][cv.j] is None or wit.neg[ell][cv.j] is None]
        if not todo:
            continue
        starts, los, his, units, signs = [], [], [], [], []
        for cv in todo:
            sg = 1.0 if wit.pos[ell][cv.j] is None else -1.0
            # the open leaves with the largest float bound of sg·z first
            score = [sp.bounds(i, ell, cv.j)[1] if sg > 0 else -sp.bounds(i, ell, cv.j)[0] for i in cv.open]
            for t in np.argsort(score)[::-1][:_LEAVES]:
                i = cv.open[int(t)]
                lo, hi = sp.L[i], sp.U[i]
                pts = lo + (hi - lo) * rng.random((_STARTS, net.m))
                pts[0] = (lo + hi) / 2
                starts.append(pts)
                los.append(np.broadcast_to(lo, pts.shape))
                his.append(np.broadcast_to(hi, pts.shape))
                units += [cv.j] * _STARTS
                signs += [sg] * _STARTS
        tu, ts = np.array(units), np.array(signs)
        box = (np.concatenate(los), np.concatenate(his))
        V = net.ascend(np.concatenate(starts), ell, tu, ts, steps=_STEPS, box=box, step0=0.1, floor=1e-3)
        val = ts * net.preactivations(V, ell)[ell][np.arange(len(tu)), tu]
        tries: dict[int, int] = {}  # points evaluated exactly per unit (each costs an exact pass of the network)
        for r in np.argsort(-val):
            if val[r] <= 0:
                break
            j = int(tu[r])
            if not wit.crossing(ell, j) and tries.get(j, 0) < _TRIES:
                tries[j] = tries.get(j, 0) + 1
                wit.record(exact_point(root[0], root[1], V[r]))
