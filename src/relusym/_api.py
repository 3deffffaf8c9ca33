"""The front door: the one place where a question is sent to the exact, tolerance, domain or deep machinery.

``equivalent``, ``normal_form`` and ``distance`` each answer one question in several modes; the mode is chosen
here, once, from the arguments (``atol``/``rtol`` for the tolerance mode, ``domain`` for a bounded domain) and
from the networks (an :class:`relusym.MLP` with two or more hidden layers goes to the deep machinery).  The typed
overloads let a type checker see which result each call returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

from relusym._bounded.distance import DomainDistance, distance_on
from relusym._bounded.equality import DomainVerdict, equivalent_on
from relusym._bounded.restriction import DomainNormalForm
from relusym._bounded.restriction import normal_form_on as _normal_form_on
from relusym._core import equivalence as _equivalence
from relusym._core import normal_form as _nf
from relusym._core.equivalence import Verdict
from relusym._core.network import Network
from relusym._core.normal_form import NormalForm
from relusym.errors import InvalidNetworkError

if TYPE_CHECKING:
    from relusym._deep.box_decide import WithinVerdict
    from relusym._deep.canonical import DeepNormalForm
    from relusym._deep.decide import DeepVerdict
    from relusym._deep.mlp import MLP
    from relusym._tolerance.approx import ApproxVerdict

__all__ = [
    "equivalent",
    "normal_form",
    "distance",
    "prune",
    "find_symmetry",
    "align",
    "unit_status",
    "is_deep",
    "shallow_or_deep",
]


def is_deep(net: Any) -> bool:
    """True for an MLP with two or more hidden layers (the deep machinery's input)."""
    from relusym._deep.mlp import MLP

    return isinstance(net, MLP) and net.depth != 1


def shallow_or_deep(net: Any) -> Any:
    """A one-hidden-layer MLP as the ``Network`` it is; anything else unchanged."""
    from relusym._deep.mlp import MLP

    if isinstance(net, MLP) and net.depth == 1:
        return net.to_network()
    return net


@overload
def equivalent(
    net1: MLP,
    net2: MLP | Network,
    *,
    certificate: bool = ...,
    domain: None = None,
    atol: None = None,
    rtol: None = None,
    budget: float = ...,
) -> DeepVerdict: ...


@overload
def equivalent(
    net1: Network,
    net2: MLP,
    *,
    certificate: bool = ...,
    domain: None = None,
    atol: None = None,
    rtol: None = None,
    budget: float = ...,
) -> DeepVerdict: ...


@overload
def equivalent(
    net1: Network,
    net2: Network,
    *,
    certificate: bool = ...,
    domain: None = None,
    atol: None = None,
    rtol: None = None,
    budget: float = ...,
) -> Verdict: ...


@overload
def equivalent(
    net1: Network,
    net2: Network,
    *,
    certificate: bool = ...,
    domain: Any,
    atol: None = None,
    rtol: None = None,
    budget: float = ...,
) -> DomainVerdict: ...


@overload
def equivalent(
    net1: Network,
    net2: Network,
    *,
    certificate: bool = ...,
    domain: None = None,
    atol: float,
    rtol: float | None = ...,
    budget: float = ...,
) -> ApproxVerdict: ...


@overload
def equivalent(
    net1: Network,
    net2: Network,
    *,
    certificate: bool = ...,
    domain: None = None,
    atol: float | None = ...,
    rtol: float,
    budget: float = ...,
) -> ApproxVerdict: ...


def equivalent(
    net1: Network | MLP,
    net2: Network | MLP,
    *,
    certificate: bool = True,
    domain: Any = None,
    atol: float | None = None,
    rtol: float | None = None,
    budget: float = 5.0,
) -> Verdict | DomainVerdict | ApproxVerdict | DeepVerdict | WithinVerdict:
    """Decide exactly whether θ1 and θ2 realize the same function, on all of ℝ^m or on a bounded domain.

    Without ``domain``: equality on ℝ^m, through the normal form (see docs/math/normal-form.md).  The answer is a
    :class:`relusym.Verdict`: the witness h ∈ H_n with h·θ1 = θ2, or a flip set T and h with
    h·flip_T(θ1) = θ2, or the shared normal form; when not equivalent, an exact counterexample.  Widths may
    differ.  With ``certificate=False`` only the decision is made.  ``atol``/``rtol`` ask for the explicit
    tolerance mode instead (an ``ApproxVerdict``, see :func:`relusym.equivalent_approx`).

    With ``domain`` (a :class:`relusym.Box`, a :class:`relusym.Polytope`, or a pair (lo, hi) of scalars or
    length-m sequences): equality on that domain only, decided exactly from the normal forms of the restricted
    networks (see docs/math/domains.md); for deep networks on a box a ``DeepVerdict``, and with ``atol=`` the
    verifiers' question |f1 − f2| ≤ atol, a ``WithinVerdict`` answering "yes", "no" or "undecided".  For one
    hidden layer the answer is a ``DomainVerdict``: its certificate lists the neurons
    that cross the domain and those affine or zero on it; a counterexample lies inside the domain and is
    verified by exact evaluation.

    Deep networks (an :class:`relusym.MLP` with two or more hidden layers, against an MLP or a ``Network``): a
    ``DeepVerdict`` whose ``status`` is ``"equal"`` (with a certificate), ``"different"`` (with an exact
    counterexample) or ``"undecided"`` (with the reason); ``budget`` bounds its search, in seconds (see
    docs/math/deep.md).

    >>> e2 = Network([[1, 1]], [[1], [-1]], [0, 1])
    >>> flipped = Network([[1, 1]], [[-1], [1]], [0, -1], [1])
    >>> v = equivalent(e2, flipped)
    >>> bool(v), v.flips
    (True, (0, 1))
    >>> far = Network([[1, 1]], [[1], [1]], [0, -5])       # the second neuron fires only for x > 5
    >>> one = Network([[1]], [[1]], [0])
    >>> bool(equivalent(far, one)), bool(equivalent(far, one, domain=(0, 1)))
    (False, True)
    """
    a: Any = shallow_or_deep(net1)
    b: Any = shallow_or_deep(net2)
    if is_deep(a) or is_deep(b):
        if domain is not None:
            from relusym._deep import box_decide

            if rtol is not None:
                raise InvalidNetworkError("deep networks on a box take atol= (|f1 − f2| ≤ atol), not rtol=")
            if atol is not None:
                return box_decide.within_on_deep(a, b, domain, atol, budget=budget)
            from relusym._deep.box_equal import equivalent_on_box

            return equivalent_on_box(a, b, domain, budget=budget)
        if atol is not None or rtol is not None:
            raise InvalidNetworkError(
                "the tolerance mode (atol=, rtol=) on all of ℝ^m is for one-hidden-layer networks; for deep networks "
                "give a box too (domain=…, atol=…)"
            )
        from relusym._deep.decide import equivalent_deep

        return equivalent_deep(a, b, budget=budget)
    if atol is not None or rtol is not None:
        if domain is not None:
            raise InvalidNetworkError("a domain does not combine with the tolerance mode (atol=, rtol=): choose one")
        from relusym._tolerance.approx import equivalent_approx

        tol = {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v is not None}
        return equivalent_approx(a, b, **tol)
    if domain is not None:
        return equivalent_on(a, b, domain, certificate=certificate)
    return _equivalence.equivalent(a, b, certificate=certificate)


@overload
def normal_form(net: MLP, *, domain: None = None) -> NormalForm | DeepNormalForm: ...


@overload
def normal_form(net: Network, *, domain: None = None) -> NormalForm: ...


@overload
def normal_form(net: Network, *, domain: Any) -> DomainNormalForm: ...


def normal_form(net: Network | MLP, *, domain: Any = None) -> NormalForm | DeepNormalForm:
    """NF(θ) = (K, M, e), the complete invariant of ρ(θ); with ``domain``, the invariant of its restriction.

    Without ``domain``: the kink classes (û, κ_û) sorted by û, the linear part M and the offset e, all exact
    (see docs/math/normal-form.md); two networks realize the same function iff their normal forms are equal.
    With ``domain`` (a Box, a Polytope or a pair (lo, hi)): a ``DomainNormalForm``, the classes whose
    hyperplanes cross the domain with their kinks, and the affine map the other neurons add up to there; two
    networks agree on the domain iff these are equal (see docs/math/domains.md).

    For an :class:`relusym.MLP` with two or more hidden layers: a ``DeepNormalForm``, the canonical form under
    the per-layer group after the exact reductions (see docs/math/deep.md); a one-hidden-layer MLP gets the
    normal form of its ``Network``.

    >>> nf = normal_form(Network([[1, 2]], [[1], [-1]], [0, 1]))
    >>> [(tuple(map(str, u)), tuple(map(str, kap))) for u, kap in nf.K]
    [(('1', '-1'), ('2',)), (('1', '0'), ('1',))]
    >>> normal_form(Network([[1, 2]], [[1], [-1]], [0, 1]), domain=(2, 3)).K   # affine on [2, 3]
    ()
    """
    one: Any = shallow_or_deep(net)
    if is_deep(one):
        if domain is not None:
            raise InvalidNetworkError("normal forms on a domain are not available for deep networks yet")
        from relusym._deep.canonical import deep_normal_form

        return deep_normal_form(one).form
    if domain is None:
        return _nf.normal_form(one)
    return _normal_form_on(one, domain)


@overload
def distance(
    net1: Network | MLP,
    net2: Network | MLP,
    *,
    atol: float = ...,
    rtol: float = ...,
    domain: None = None,
    norm: str = ...,
    budget: float = ...,
) -> float: ...


@overload
def distance(
    net1: Network | MLP,
    net2: Network | MLP,
    *,
    atol: float = ...,
    rtol: float = ...,
    domain: Any,
    norm: Literal["max"] = ...,
    budget: float = ...,
) -> DomainDistance: ...


def distance(
    net1: Network | MLP,
    net2: Network | MLP,
    *,
    atol: float = 0.0,
    rtol: float = 1e-9,
    domain: Any = None,
    norm: str = "max",
    budget: float = 5.0,
) -> float | DomainDistance:
    """How far apart ρ(θ1) and ρ(θ2) are: a tolerance-mode pseudo-distance, or an exact bracket on a box.

    Without ``domain``: the scale-aware pseudo-distance of the tolerance mode (a float, invariant under the
    symmetries of either network, 0 up to rounding iff the networks are equivalent; its definition is given
    with ``relusym.equivalent_approx``).  With ``domain`` (a Box or a pair (lo, hi)) and ``norm="max"``: the
    maximum over the box of ‖ρ(θ1)(x) − ρ(θ2)(x)‖_∞, as a ``DomainDistance`` with a lower bound attained at an
    exact point, a sound upper bound and, when proved, the maximum (``kind`` is ``"exact"``, ``"milp"`` or
    ``"bounds"``); ``budget`` is in seconds (see docs/math/domains.md).
    """
    a: Any = shallow_or_deep(net1)
    b: Any = shallow_or_deep(net2)
    if is_deep(a) or is_deep(b):
        if domain is None:
            raise InvalidNetworkError("the distance of deep networks is measured on a box: give domain=…")
        from relusym._deep.box_decide import distance_on_deep

        return distance_on_deep(a, b, domain, norm=norm, budget=budget)
    if domain is None:
        from relusym._tolerance.approx import distance as _approx_distance

        return _approx_distance(a, b, atol=atol, rtol=rtol)
    return distance_on(a, b, domain, norm=norm, budget=budget)


def prune(net: Any, **kwargs: Any) -> Any:
    """A network computing the same function with fewer neurons: for one hidden layer, of minimal width w(f)
    (see :func:`relusym._fibre.width.prune` and docs/math/width.md); for a deep :class:`relusym.MLP`, the
    reduction by every exact rule of docs/math/deep.md (constant, dead-on-the-orthant, duplicate and output-less
    units), an MLP equal to ``net`` on all of ℝ^m whose widths are never larger.  With ``domain=`` (a box or a
    polytope): also the units proved dead on the domain removed, and units proved active folded where that is
    exact (:func:`relusym.unit_status`); the result equals ``net`` at every input of the domain.

    >>> from relusym import MLP
    >>> deep = MLP([[[1], [2], [0]], [[1, 1, 5], [-1, 0, 0]], [[1, 0]]], [[0, 0, 1], [0, 0], [0]])
    >>> prune(deep).widths    # the duplicate merged, the constant folded, the dead-on-the-orthant unit removed
    (1, 1, 1, 1)
    """
    from relusym._fibre.width import prune as _prune_shallow

    one = shallow_or_deep(net)
    domain = kwargs.pop("domain", None)
    if domain is not None:
        from relusym._deep.box_prune import prune_on
        from relusym._deep.mlp import MLP

        unknown = sorted(set(kwargs) - {"budget", "progress"})
        if unknown:
            raise InvalidNetworkError(f"prune on a domain takes no {', '.join(unknown)} argument")
        small = prune_on(net, domain, budget=kwargs.get("budget", 10.0)).network
        return small.to_network() if isinstance(net, Network) and small.depth == 1 else small
    if is_deep(one):
        from relusym._deep.reduce import reduce_mlp

        unknown = sorted(set(kwargs) - {"budget", "progress"})
        if unknown:
            raise InvalidNetworkError(f"prune of a deep network takes no {', '.join(unknown)} argument")
        return reduce_mlp(one)[0]
    out = _prune_shallow(one, **kwargs)
    from relusym._deep.mlp import MLP

    return MLP.from_network(out) if isinstance(net, MLP) else out


def find_symmetry(net1: Any, net2: Any) -> Any:
    """An exact symmetry h with h·θ1 = θ2, or None.

    One hidden layer: h ∈ H_n (a :class:`relusym.Symmetry`, see docs/math/symmetries.md).  Deep networks of the
    same widths: a ``DeepSymmetry`` (per-layer permutations, positive scales and the hidden flips whose condition
    holds, see docs/math/deep.md), verified exactly, or None."""
    from relusym._core.group import find_symmetry as _find_shallow

    a, b = shallow_or_deep(net1), shallow_or_deep(net2)
    if is_deep(a) or is_deep(b):
        from relusym._deep.mlp import as_mlp
        from relusym._deep.rows import rational_rows
        from relusym._deep.symmetry import align_layers

        ma, mb = as_mlp(a), as_mlp(b)
        if ma.widths != mb.widths:
            return None
        la = [rational_rows(W, c) for W, c in zip(ma.weights, ma.biases, strict=True)]
        lb = [rational_rows(W, c) for W, c in zip(mb.weights, mb.biases, strict=True)]
        return align_layers(la, lb)[0]
    return _find_shallow(a, b)


def align(net1: Any, net2: Any, **kwargs: Any) -> Any:
    """The symmetry that best maps a noisy, permuted, rescaled copy onto a network (the tolerance mode: nothing
    here is exact).  One hidden layer: an ``Alignment`` (see :func:`relusym._tolerance.alignment.align`); deep
    networks of equal widths: a ``DeepAlignment``, layer by layer (see docs/math/deep.md)."""
    a, b = shallow_or_deep(net1), shallow_or_deep(net2)
    if is_deep(a) or is_deep(b):
        from relusym._deep.align import align_deep
        from relusym._deep.mlp import as_mlp

        unknown = sorted(set(kwargs) - {"tol", "progress"})
        if unknown:
            raise InvalidNetworkError(f"align of deep networks takes no {', '.join(unknown)} argument")
        return align_deep(as_mlp(a), as_mlp(b), tol=kwargs.get("tol"))
    from relusym._tolerance.alignment import align as _align_shallow

    return _align_shallow(a, b, **kwargs)


def unit_status(net: Any, domain: Any, *, budget: float = 10.0, cover_leaves: int = 256, only: Any = None) -> Any:
    """Every hidden unit's status on a domain (a Box, a Polytope or a pair (lo, hi)), exactly: ``"dead"`` (its
    pre-activation is ≤ 0 on the whole domain), ``"active"`` (≥ 0 there: it acts linearly), ``"crossing"`` (two
    exact inputs of the domain where it is < 0 and > 0) or ``"undecided"`` within ``budget`` seconds.  Each
    dead/active proof is an exact bound with its certificate; see docs/math/deep.md.  ``cover_leaves``: the
    leaves a unit's cover by input splitting may use on a box (0 turns the covers off).  ``only``: an iterable of
    (layer, unit) pairs (hidden layers numbered from 1, as the certificates number them) to classify; the others
    get only the cheap statuses and are otherwise "undecided" with reason "not requested".

    >>> from relusym import MLP
    >>> net = MLP([[[1], [-1]], [[1, 1]], [[1]]], [[0, 0], [-3], [0]])   # σ(|x| − 3) on [−1, 1] is dead
    >>> unit_status(net, (-1, 1)).statuses
    (('crossing', 'crossing'), ('dead',))
    """
    from relusym._deep.mlp import as_mlp
    from relusym._deep.status import unit_status as _unit_status

    return _unit_status(as_mlp(net), domain, budget=budget, cover_leaves=cover_leaves, only=only)
