"""Equality of deep ReLU networks on a box, with the units each network's exact statuses remove there (issue 22).

:func:`relusym._deep.box_decide.equivalent_on_deep` proves "equal" by the per-layer group after removing the
units that exact *interval arithmetic* proves dead on the box, or by a partition of the box into pieces where
both networks are affine.  Neither reaches a network and its own box-pruned copy on ACAS Xu (the pruned units are
dead by covers or LP proofs, and the partition needs far too many pieces): the first thing a user checks after
``relusym prune net.nnet --box-from net.nnet``.

So, when that answer is "undecided", each network is pruned on the box by its proved unit statuses
(:func:`relusym._deep.box_prune.prune_on`: dead units removed, dependent active units folded, then the
reductions exact on all of ℝ^m).  Each pruned network equals its original at every input of the (closed) box.
Hence

* the pruned networks equal on all of ℝ^m (:func:`relusym._deep.decide.equivalent_deep`, certified) ⇒ the
  originals are equal on the box;
* an input strictly inside the box where the pruned networks differ is one where the originals differ (it is
  re-evaluated on the originals, exactly, before it is returned).

The second network is first compared as it is with the first one pruned (a network against its own box-pruned
copy), then pruned too.  The certificate is the ℝ^m certificate of the pruned pair, with the pruned networks' unit
statuses (each proof
re-checkable by :func:`relusym._deep.box_check.check_certificates`) in ``box_statuses``.
"""

from __future__ import annotations

from typing import Any

from relusym._base.deadline import Deadline
from relusym._base.limits import check_budget
from relusym._bounded.domain import as_domain
from relusym._core.equivalence import Counterexample
from relusym._deep.box_decide import equivalent_on_deep
from relusym._deep.box_prune import BoxPruned, prune_on
from relusym._deep.decide import DeepVerdict, equivalent_deep
from relusym._deep.mlp import as_mlp

__all__ = ["equivalent_on_box"]

_FIRST = 0.3  # the share of the budget the interval-dead symmetry and the partition get first


def equivalent_on_box(a: Any, b: Any, domain: Any, *, budget: float = 5.0, seed: int = 0) -> DeepVerdict:
    """Decide ρ(a) = ρ(b) on a box: "equal" (certified), "different" (an exact input strictly inside the box) or
    "undecided"; :func:`equivalent_on_deep` first, then the comparison of the two networks pruned on the box."""
    check_budget(budget)
    deadline = Deadline(budget)
    first = equivalent_on_deep(a, b, domain, budget=budget * _FIRST, seed=seed)  # validates the pair and the box
    if first.status != "undecided" or deadline.expired():
        return first
    n1, n2 = as_mlp(a), as_mlp(b)
    box = as_domain(domain, n1.m)
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


def _removed(p: BoxPruned) -> str:
    return f"{len(p.dead)} unit(s) proved dead there, {len(p.folded)} active one(s) folded"
