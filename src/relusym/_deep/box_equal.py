"""Equality of deep ReLU networks on a box, with the units each network's exact statuses remove there (issue 22).

:func:`relusym._deep.box_decide.equivalent_on_deep` proves "equal" by the per-layer group after removing the
units that exact *interval arithmetic* proves dead on the box, or by a partition of the box into pieces where
both networks are affine.  Neither reaches a network and its own box-pruned copy on ACAS Xu (the pruned units are
dead by covers or LP proofs, and the partition needs far too many pieces): the first thing a user checks after
``relusym prune net.nnet --box-from net.nnet``.

Two routes reach them.

**The partnered route, first.**  The units of each network that have no partner in the other under the per-layer
group (proposed in floats by :func:`relusym._deep.box_match.unpartnered_units`: unit i of one computes a positive
multiple of unit π(i) of the other once the unpartnered units output 0) are the only ones whose removal the
comparison needs.  Just those are classified (``unit_status(only=…)``); when every one is proved dead on the box,
they are removed (:func:`relusym._deep.box_prune.prune_with`) and the exact decision on ℝ^m
(:func:`relusym._deep.decide.equivalent_deep`) certifies the rest.  A network against its box-pruned copy needs
the proofs of the removed units only: on ACAS Xu 1_1, 7 units in about 1 s of CPU, where all 300 statuses take
about 13 s.  A wrong proposal costs only this route (the units are not all proved dead, or the pruned networks are
not shown equal) and the next one follows.

**The full route.**  When the first two answers are "undecided", each network is pruned on the box by all its
proved unit statuses (:func:`relusym._deep.box_prune.prune_on`: dead units removed, dependent active units folded,
then the reductions exact on all of ℝ^m).  The second network is first compared as it is with the first one
pruned, then pruned too.

Why both are sound: each pruned network equals its original at every input of the (closed) box.  Hence

* the pruned networks equal on all of ℝ^m (certified by the per-layer group) ⇒ the originals are equal on the box;
* an input strictly inside the box where the pruned networks differ is one where the originals differ (it is
  re-evaluated on the originals, exactly, before it is returned).

The certificate is the ℝ^m certificate of the pruned pair, with the unit statuses the removals rest on (one per
network, None for a network used as it is; each proof re-checkable by
:func:`relusym._deep.box_check.check_certificates`) in ``box_statuses``.
"""

from __future__ import annotations

from typing import Any

from relusym._base.deadline import Deadline
from relusym._base.limits import check_budget
from relusym._bounded.domain import Box, as_domain
from relusym._core.equivalence import Counterexample
from relusym._deep.box_decide import equivalent_on_deep
from relusym._deep.box_match import unpartnered_units
from relusym._deep.box_prune import BoxPruned, prune_on, prune_with
from relusym._deep.decide import DeepVerdict, equivalent_deep
from relusym._deep.mlp import MLP, as_mlp
from relusym._deep.status import ACTIVE, DEAD, UnitStatus, unit_status

__all__ = ["equivalent_on_box"]

_PARTNERED = 0.85  # the share of the budget the route through the unpartnered units gets first (it ends early
# when a unit crosses; the full route rarely finishes within a default budget anyway)
_FIRST = 0.4  # the share of the time left then that the interval-dead symmetry and the partition get
_MAX_UNPARTNERED = 0.25  # that route is tried when at most this fraction of the hidden units (or 8) lack a partner


def equivalent_on_box(a: Any, b: Any, domain: Any, *, budget: float = 5.0, seed: int = 0) -> DeepVerdict:
    """Decide ρ(a) = ρ(b) on a box: "equal" (certified), "different" (an exact input strictly inside the box) or
    "undecided".  First, when few units lack a partner in the other network, those units alone are proved dead
    and removed (:func:`_partnered`); then :func:`equivalent_on_deep`; then the comparison of the two networks
    pruned on the box by all their statuses."""
    check_budget(budget)
    deadline = Deadline(budget)
    n1, n2 = as_mlp(a), as_mlp(b)
    box = as_domain(domain, n1.m)
    if (n1.m, n1.k) == (n2.m, n2.k) and isinstance(box, Box):
        fast = _partnered(n1, n2, box, deadline.sub(_PARTNERED), seed)
        if fast is not None:
            return fast
    first = equivalent_on_deep(a, b, domain, budget=deadline.left() * _FIRST, seed=seed)  # validates pair and box
    if first.status != "undecided" or deadline.expired():
        return first
    p1 = prune_on(n1, box, budget=deadline.left() * 0.45, seed=seed)
    # the second network as it is first (a network against its own box-pruned copy needs no second pruning)
    v = equivalent_deep(p1.network, n2, budget=max(min(deadline.left(), 1.0), 0.05), seed=seed)
    if v.status == "equal" and v.certificate is not None:
        cert = v.certificate.with_box_statuses((p1.statuses,))
        why = f"the first pruned on the box ({_removed(p1)}) and the second: {v.reason} on all of ℝ^m"
        return DeepVerdict("equal", why, cert)
    p2 = prune_on(n2, box, budget=max(deadline.left() * 0.8, 0.0), seed=seed)
    v = equivalent_deep(p1.network, p2.network, budget=max(min(deadline.left(), 2.0), 0.05), seed=seed)
    removed = f"{_removed(p1)}; {_removed(p2)}"
    if v.status == "equal" and v.certificate is not None:
        cert = v.certificate.with_box_statuses((p1.statuses, p2.statuses))
        return DeepVerdict("equal", f"both pruned on the box ({removed}), {v.reason} on all of ℝ^m", cert)
    ce = v.counterexample
    if v.status == "different" and ce is not None and box.contains(ce.x, strict=True):
        y1, y2 = n1.evaluate_exact(ce.x), n2.evaluate_exact(ce.x)
        if y1 != y2:
            return DeepVerdict(
                "different",
                "an exact input inside the box where the outputs differ",
                None,
                Counterexample(ce.x, y1, y2),
            )
    return DeepVerdict(
        "undecided",
        f"{first.reason}; both pruned on the box ({removed}), the networks were not shown equal on ℝ^m ({v.reason})",
    )


def _partnered(n1: MLP, n2: MLP, box: Any, deadline: Deadline, seed: int) -> DeepVerdict | None:
    """The fast route: the units without a proposed partner in the other network
    (:func:`relusym._deep.box_match.unpartnered_units`) proved dead or active on the box — only those, by
    ``unit_status(only=…)`` — and removed or folded as :func:`relusym._deep.box_prune.prune_with` allows (an
    active unit is also what the exact reductions on ℝ^m may have rewritten in a pruned copy), then the exact
    decision on ℝ^m; None when a unit is not proved dead or active, or the pruned networks are not shown equal
    (the full route follows)."""
    u1, u2 = unpartnered_units(n1, n2)
    hidden = sum(n1.hidden_widths) + sum(n2.hidden_widths)
    if not (u1 or u2) or len(u1) + len(u2) > max(8, _MAX_UNPARTNERED * hidden):
        return None
    statuses: list[UnitStatus | None] = []
    nets: list[MLP] = []
    for net, units, share in ((n1, u1, 0.5 if u2 else 0.95), (n2, u2, 0.95)):
        if not units:
            statuses.append(None)
            nets.append(net)
            continue
        st = unit_status(net, box, budget=max(deadline.left() * share, 0.0), seed=seed, only=units)
        if any(st.statuses[ell - 1][j] not in (DEAD, ACTIVE) for ell, j in units):
            return None
        statuses.append(st)
        nets.append(prune_with(net, st, set(units)).network)
    v = equivalent_deep(nets[0], nets[1], budget=max(min(deadline.left(), 2.0), 0.05), seed=seed)
    if v.status != "equal" or v.certificate is None:
        return None
    gone = len(u1) + len(u2)
    why = f"the {gone} unit(s) without a partner proved dead or active on the box, then {v.reason} on all of ℝ^m"
    return DeepVerdict("equal", why, v.certificate.with_box_statuses(tuple(statuses)))


def _removed(p: BoxPruned) -> str:
    return f"{len(p.dead)} unit(s) proved dead there, {len(p.folded)} active one(s) folded"
