"""The fibre ρ⁻¹(ρ(θ)) of a network: generic or not, rigid or not, its H_n-orbits, width, dimension, strata and
random points, gathered in one immutable :class:`Fiber` (docs/math/fibres.md, docs/math/strata.md).

Two regimes:

* **class A** (no null or constant neuron, pairwise non-proportional w_i; Theorem B(ii)): the fibre is
  ⊔_{T ∈ 𝒯(θ)} H_n·flip_T(θ), so everything follows from the family 𝒯(θ) = {T : Σ_T v_i a_iᵀ = 0} of flip
  sets T (:mod:`relusym._fibre.flips`), held as ``Fiber.flip_sets``.
* otherwise: the exact configurations (S, P) (:func:`relusym._fibre.configurations.configurations`) give the width,
  the orbits at minimal width and R5, and every type (S, P, t) of a fibre point is decided, with its dimension
  and a verified witness (:mod:`relusym._fibre.strata`).

Every hard search takes a budget; what is not decided within it is reported as ``None`` with an explanation.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from relusym._base.deadline import Deadline, Stopwatch
from relusym._base.limits import check_budget
from relusym._base.progress import ticking
from relusym._base.rng import RNGLike, as_random
from relusym._core.analysis import Analysis, KinkData
from relusym._core.group import Symmetry
from relusym._core.network import Network
from relusym._core.normal_form import normal_form
from relusym._core.operations import flip
from relusym._exact.numbers import fraction_str
from relusym._fibre.configurations import OwnConfiguration, configurations, own_configuration
from relusym._fibre.flips import LIST_LIMIT, FlipSets, flip_sets, flip_sets_of, flips_certified_absent
from relusym._fibre.genericity import configuration_r5, generic_conditions, rigidity_verdict
from relusym._fibre.strata import (
    Stratum,
    closed_form_dimension,
    fibre_dimension,
    flip_strata,
    own_stratum,
    stratum_dimension,
    stratum_point,
    type_strata,
)
from relusym._fibre.width import width_search
from relusym.errors import InvalidNetworkError

__all__ = [
    "Fiber",
    "FlipSets",
    "Stratum",
    "fiber",
    "flip_sets",
    "stratum_dimension",
    "flips_certified_absent",
]


_STRATA_CONFIGS = 2000  # configurations whose strata are listed
_FAST_N = 12  # above this many kink classes the exact configuration search cannot finish anyway


# ----------------------------------------------------------------------------------------------------------
# the fibre


@dataclass(frozen=True)
class Fiber:
    """The fibre ρ⁻¹(ρ(θ)) ∩ Ω(m, n, k) of θ (docs/math/fibres.md, docs/math/strata.md); see :func:`fiber`.

    ``generic`` (G-a, G-b, G-c; ``generic_reason`` says which fails and why), ``rigid`` (R1–R5,
    ``rigid_reason``), ``flip_sets`` (in class A, where Theorem B(ii) applies: the family 𝒯(θ) of flip sets T
    as a :class:`~relusym._fibre.flips.FlipSets`; None outside class A; ``flips``, ``flips_complete``,
    ``flip_count``, … read it), ``orbits`` (number of H_n-orbits when the fibre is a finite union of them and
    that number is known), ``width``, ``dimension`` (global), ``strata`` (the combinatorial types (S, P, t)
    of its points with their dimensions and witness points, highest first; all of them when
    ``strata_complete``).  Undecided values are None, with the reason in ``undecided``.

    A Fiber is immutable, hashable and equal by value; ``elapsed`` (seconds) is not compared and is left out
    of :meth:`to_dict` unless asked for.
    """

    m: int
    n: int
    k: int
    N: int
    generic: bool | None
    generic_reason: str
    conditions: dict[str, bool | None]
    rigid: bool | None
    rigid_reason: str
    rigidity: dict[str, bool | None]
    flip_sets: FlipSets | None
    orbits: int | None
    width: int | None
    width_bounds: tuple[int, int]
    dimension: int | None
    strata: tuple[Stratum, ...]
    strata_complete: bool
    strata_count: int | None
    certificate: str
    undecided: str | None
    net: Network = field(repr=False)
    elapsed: float = field(default=0.0, compare=False)
    _kd: KinkData | None = field(default=None, repr=False, compare=False)
    _own: OwnConfiguration | None = field(default=None, repr=False, compare=False)
    _analysis: Analysis | None = field(default=None, repr=False, compare=False)  # θ's, for sampling

    def __hash__(self) -> int:
        return hash(
            (
                self.net,
                self.generic,
                self.rigid,
                tuple(sorted(self.conditions.items())),
                tuple(sorted(self.rigidity.items())),
                self.flip_sets,
                self.orbits,
                self.width,
                self.dimension,
                self.strata,
                self.strata_complete,
            )
        )

    # -- the family 𝒯(θ) of flip sets, read from flip_sets -------------------------------------------------
    @property
    def class_a(self) -> bool:
        """True when Theorem B(ii) applies (no null or constant neuron, pairwise non-proportional w_i)."""
        return self.flip_sets is not None

    @property
    def flips(self) -> tuple[tuple[int, ...], ...] | None:
        """The verified flip sets T ∈ 𝒯(θ), ∅ first (all of them when ``flips_complete``); None outside class A."""
        return None if self.flip_sets is None else self.flip_sets.sets

    @property
    def flips_complete(self) -> bool:
        return self.flip_sets is not None and self.flip_sets.complete

    @property
    def flip_count(self) -> int | None:
        """|𝒯(θ)| when known."""
        return None if self.flip_sets is None else self.flip_sets.count

    @property
    def flip_count_lower_bound(self) -> int | None:
        return None if self.flip_sets is None else self.flip_sets.lower_bound

    @property
    def flip_count_estimate_log2(self) -> float | None:
        return None if self.flip_sets is None else self.flip_sets.estimate_log2

    @property
    def delta(self) -> int:
        """δ = max(m + 1, k + 1): the dimensions one spare (null or constant) neuron adds (docs/math/fibres.md)."""
        return max(self.m + 1, self.k + 1)

    @property
    def classes(self) -> list[dict[str, list[str]]]:
        """The kink classes in NF order, as in ``NormalForm.to_dict()['kinks']`` (the indices used by
        strata)."""
        if self._kd is None:
            return []
        kd = self._kd
        return [
            {
                "hyperplane": [fraction_str(x) for x in kd.hyperplane(j)],
                "kink": [fraction_str(x) for x in kd.kappa[j]],
            }
            for j in range(kd.N)
        ]

    def to_dict(self, *, timing: bool = False) -> dict[str, Any]:
        """The JSON object of ``relusym fiber --json``: deterministic (the same bytes for the same θ); the
        seconds spent are added as ``elapsed_seconds`` only when ``timing``."""
        d = {
            "schema": "relusym.fiber/1",
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "N": self.N,
            "delta": self.delta,
            "generic": self.generic,
            "generic_reason": self.generic_reason,
            "conditions": dict(self.conditions),
            "rigid": self.rigid,
            "rigid_reason": self.rigid_reason,
            "rigidity": dict(self.rigidity),
            "class_a": self.class_a,
            "flips": None if self.flips is None else [list(T) for T in self.flips[:LIST_LIMIT]],
            "flips_complete": self.flips_complete if self.flips is not None else None,
            "flip_sets": None if self.flip_sets is None else self.flip_sets.to_dict(),
            "flip_count": self.flip_count,
            "flip_count_lower_bound": self.flip_count_lower_bound,
            "flip_count_estimate": _pow2(self.flip_count_estimate_log2),
            "flip_count_estimate_log2": self.flip_count_estimate_log2,
            "orbits": self.orbits,
            "width": self.width,
            "width_bounds": list(self.width_bounds),
            "dimension": self.dimension,
            "strata": [s.to_dict() for s in self.strata[:LIST_LIMIT]],
            "strata_complete": self.strata_complete,
            "strata_count": self.strata_count,
            "classes": self.classes if self.N <= LIST_LIMIT else None,
            "certificate": self.certificate,
            "undecided": self.undecided,
        }
        if timing:
            d["elapsed_seconds"] = round(self.elapsed, 4)
        return d

    def report(self) -> str:
        """A readable multi-line summary (the output of ``relusym fiber``)."""

        def yn(x: bool | None) -> str:
            return "undecided" if x is None else ("yes" if x else "no")

        lines = [
            f"fibre of a network with m = {self.m} input(s), n = {self.n} neuron(s), k = {self.k} output(s); "
            f"N = {self.N} kink class(es)"
        ]
        lines.append(f"generic (G-a, G-b, G-c of docs/math/fibres.md): {yn(self.generic)} — {self.generic_reason}")
        lines.append(
            f"rigid (fibre = one free H_n-orbit, R1–R5 of docs/math/fibres.md): {yn(self.rigid)} — {self.rigid_reason}"
        )
        lines.append(f"class A (Theorem B(ii): no null/constant neuron, distinct hyperplanes): {yn(self.class_a)}")
        if self.flips is not None:
            shown = ", ".join(_flip_set_text(T) for T in self.flips[:6])
            more = " …" if len(self.flips) > 6 else ""
            if self.flips_complete:
                lines.append(f"flip sets 𝒯(θ): {self.flip_count} (all): {shown}{more}")
            else:
                lg = self.flip_count_estimate_log2
                est = f", estimate ≈ 2^{lg:.0f}" if lg is not None else ""
                lines.append(
                    f"flip sets 𝒯(θ): at least {self.flip_count_lower_bound}{est}; "
                    f"{len(self.flips)} verified: {shown}{more}"
                )
        lines.append(
            "H_n-orbits in the fibre: " + (str(self.orbits) if self.orbits is not None else "not a known finite number")
        )
        if self.width is not None:
            lines.append(f"minimal width w = {self.width}")
        else:
            lines.append(f"minimal width undecided: {self.width_bounds[0]} ≤ w ≤ {self.width_bounds[1]}")
        lines.append(
            f"dimension of the fibre: {self.dimension if self.dimension is not None else 'undecided'} "
            f"(δ = {self.delta}; the H_n-orbit of θ has dimension {self.n - _inactive(self.net)})"
        )
        if self.strata:
            total = f" of {self.strata_count}" if self.strata_count is not None else ""
            lines.append(
                f"strata (S, P, t) ({min(len(self.strata), 8)} shown{total}"
                f"{'' if self.strata_complete else ', list incomplete'}):"
            )
            for s in self.strata[:8]:
                lines.append("  " + s.describe())
        lines.append(f"certificate: {self.certificate}")
        if self.undecided:
            lines.append(f"undecided: {self.undecided}")
        return "\n".join(lines)

    def sample(self, rng: RNGLike = None) -> Network:
        """A random point of the fibre (same n), from a random listed stratum (in class A: h·flip_T(θ) for a
        random flip set T and h ∈ H_n; otherwise a random pattern of the stratum with random spare neurons:
        null, constant, duplicates, same-orientation cancelling pairs), so that every listed stratum can be
        reached.  Each point is checked to have the same normal form as θ before it is returned.  ``rng``: an
        int seed, a numpy Generator, a random.Random or None (fresh entropy)."""
        r = as_random(rng)
        nf = self._of_net.normal_form
        for _ in range(40):
            cand = self._candidate(r)
            if cand is not None and cand.n == self.n and normal_form(cand) == nf:
                return cand
        h = Symmetry.random(self.n, r, dyadic=self.net.is_float)  # the orbit itself is always available
        out = h.act(self.net)
        if normal_form(out) != nf:  # pragma: no cover - would contradict H_n-invariance
            raise AssertionError("h·θ has a different normal form")
        return out

    @property
    def _of_net(self) -> Analysis:
        """The analysis of θ: the one :func:`fiber` computed, or a new one for a Fiber built otherwise."""
        if self._analysis is None:
            object.__setattr__(self, "_analysis", Analysis(self.net))
        assert self._analysis is not None
        return self._analysis

    def _candidate(self, r: _random.Random) -> Network | None:
        if not self.class_a:
            return stratum_point(self._of_net, self._kd, self.strata, r)
        sets = self.flips or ((),)
        T = sets[r.randrange(len(sets))]
        base = flip(self.net, T) if T else self.net
        return Symmetry.random(self.net.n, r, dyadic=base.is_float).act(base)


def _pow2(lg: float | None) -> float | None:
    return None if lg is None or lg > 1000 else round(2.0**lg, 3)


def _inactive(net: Network) -> int:
    if net.n == 0:
        return 0
    z = ~np.asarray(net.V != 0).any(axis=0) & ~np.asarray(net.A != 0).any(axis=1) & np.asarray(net.b == 0)
    return int(z.sum())


def _flip_set_text(T: tuple[int, ...]) -> str:
    """A flip set as a person reads it: ∅, {0, 1}, or for a long one its first and last neurons and its size."""
    if not T:
        return "∅"
    if len(T) <= 12:
        return "{" + ", ".join(map(str, T)) + "}"
    return "{" + ", ".join(map(str, T[:8])) + f", …, {T[-1]}}} ({len(T)} neurons)"


def fiber(net: Network, *, budget: float = 10.0, progress: bool | None = None) -> Fiber:
    """The fibre of θ (docs/math/fibres.md): generic, rigid, flips, orbits, width, dimension, strata; exact, within
    ``budget`` seconds for the hard searches (flip sets, configurations).  ``progress`` shows which stage runs
    (a bar on stderr when it is a terminal, by default; ``False`` never).

    >>> fb = fiber(Network([[1, 1]], [[1], [-1]], [0, 1]))   # E2: a hidden flip
    >>> fb.generic, fb.generic_reason, fb.flips, fb.orbits, fb.width, fb.dimension
    (False, 'G-c fails: flipping neurons [0, 1] leaves the function unchanged', ((), (0, 1)), 2, 2, 2)
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"fiber needs a Network, got {type(net).__name__}")
    budget = check_budget(budget)
    with ticking(budget, desc="fibre: hyperplane classes", progress=progress) as bar:
        clock = Stopwatch()
        deadline = Deadline.at(clock.start + budget)
        an = Analysis(net)  # θ's exact analysis: computed once, on first use, and handed to every step
        bar.set_description_str("fibre: genericity")
        ga, ga_reason, gb, gb_reason = generic_conditions(an)
        if ga and gb:
            bar.set_description_str("fibre: flip sets")
            return _fiber_class_a(an, budget, clock)
        gc: bool | None = False
        bar.set_description_str("fibre: flip sets, configurations and strata")
        if ga:  # G-b fails: decide G-c too when it is cheap (a failing G-a implies a failing G-c)
            gc = flip_sets_of(an, budget=max(0.0, budget / 4), max_sets=64).trivial
        ctx = _Context(an, {"G-a": ga, "G-b": gb, "G-c": gc}, ga_reason or gb_reason, ga_reason, clock)
        if an.N > _FAST_N and not an.mixed:
            return _fiber_no_mixed(ctx)
        return _fiber_general(ctx, deadline)


class _Context(NamedTuple):
    """What :func:`fiber` knows of θ outside class A before it chooses how to describe the fibre."""

    an: Analysis  # θ's analysis
    conditions: dict[str, bool | None]  # G-a, G-b, G-c
    generic_reason: str  # the first of them that fails, and why
    ga_reason: str  # why G-a fails ("" when it holds)
    clock: Stopwatch  # started when fiber started


def _fiber_no_mixed(ctx: _Context) -> Fiber:
    """Many classes, none carrying both orientations, not class A: θ's own configuration has cost 0, so w = N
    and dim = N + (n − N)δ (docs/math/fibres.md), without the exact normal form; R1 or R2 fails, and n > N."""
    net, hc, ga_reason = ctx.an.net, ctx.an.classes, ctx.ga_reason
    m, n, k = net.shape
    N = ctx.an.N
    dimension = N + (n - N) * max(m + 1, k + 1)
    S_size = int((hc.kink_mask & (ctx.an.orientations[1] > 0)).sum())  # kink classes with a negative neuron
    own = Stratum(None, (), 0, 0, 0, dimension, n - N, S_size, own=True, min_neurons=N, witness=net)
    rigidity: dict[str, bool | None] = {
        "R1": not ga_reason,
        "R2": None if ga_reason else False,
        "R3": None,
        "R4": None,
        "R5": None,
    }
    certificate = (
        "no hyperplane carries neurons of both orientations, so θ's own configuration has cost 0: w = N and "
        "dim = N + (n − N)δ (docs/math/fibres.md)"
    )
    return _outside_class_a(
        ctx,
        rigidity,
        "",
        N=N,
        width=N,
        width_bounds=(N, N),
        dimension=dimension,
        strata=[own],
        certificate=certificate,
    )


def _fiber_class_a(an: Analysis, budget: float, clock: Stopwatch) -> Fiber:
    """Theorem B(ii): the fibre is ⊔_{T ∈ 𝒯} H_n·flip_T(θ); w = N = n and dim = n."""
    net = an.net
    n = net.n
    fs = flip_sets_of(an, budget=budget)
    nonempty = [T for T in fs.sets if T]
    if nonempty:
        generic: bool | None = False
        gc_reason = f"G-c fails: flipping neurons {list(nonempty[0])} leaves the function unchanged"
    elif fs.count == 1:
        generic = True
        gc_reason = "G-a, G-b and G-c hold"
    else:
        generic = None
        gc_reason = "G-a and G-b hold; G-c undecided within budget (no flip set found, no certificate)"
    orbits = fs.count
    if generic:
        rigid_reason = "R1–R5 hold (θ is generic: the fibre is its free H_n-orbit)"
    elif generic is None:
        rigid_reason = "R1–R4 hold; R5 is (G-c) here and is undecided"
    else:
        rigid_reason = f"R5 fails: the flip {list(nonempty[0])} gives another free orbit (Theorem B(ii))"
    kd, strata = flip_strata(an, fs.sets[:LIST_LIMIT] if n <= LIST_LIMIT else None)
    return Fiber(
        m=net.m,
        n=n,
        k=net.k,
        N=n,
        generic=generic,
        generic_reason=gc_reason,
        conditions={"G-a": True, "G-b": True, "G-c": fs.trivial},
        rigid=generic,
        rigid_reason=rigid_reason,
        rigidity={"R1": True, "R2": True, "R3": True, "R4": True, "R5": fs.trivial},
        flip_sets=fs,
        orbits=orbits,
        width=n,
        width_bounds=(n, n),
        dimension=n,
        strata=tuple(strata),
        strata_complete=fs.complete and len(fs.sets) <= LIST_LIMIT,
        strata_count=fs.count,
        certificate=fs.certificate,
        undecided=fs.undecided,
        elapsed=clock.elapsed(),
        net=net,
        _kd=kd,
        _own=None,
        _analysis=an,
    )


def _fiber_general(ctx: _Context, deadline: Deadline) -> Fiber:
    """Outside class A: the exact configuration search (or, past its budget, the width search) gives the width,
    the strata and their dimensions (docs/math/strata.md, docs/math/width.md, docs/math/fibres.md), the orbits at
    minimal width and R5 (docs/math/fibres.md)."""
    an = ctx.an
    net, hc = an.net, an.classes
    m, n, k = net.shape
    kd = an.kinks
    N = kd.N
    own = own_configuration(an)
    notes: list[str] = []
    rigidity: dict[str, bool | None] = {
        "R1": not ctx.ga_reason,
        "R2": not own.duplicates,
        "R3": hc.N_all == N,
        "R4": own.rank_P == len(own.P),
        "R5": None,
    }
    r5_reason = "R1–R4 hold; R5 undecided within budget"
    admissible = configurations(kd, n - N, deadline=deadline)
    complete = admissible.complete
    strata: list[Stratum] = []
    dimension: int | None = None
    strata_listed = False
    if complete:
        c_min = admissible.min_cost
        assert c_min is not None
        width: int | None = N + c_min
        width_bounds = (N + c_min, N + c_min)
        listed = admissible.configurations[:_STRATA_CONFIGS]
        if len(listed) < admissible.count:
            notes.append(f"strata are listed for the first {len(listed)} of {admissible.count} configurations")
        strata, missing = type_strata(kd, n, listed, (own.S, own.P, own.extra), deadline=deadline)
        notes += missing
        strata_listed = len(listed) == admissible.count and not missing
        dimension = fibre_dimension(kd, admissible, n)
        if strata_listed:  # every type is listed with a verified piece of its largest dimension
            dimension = max(st.dimension for st in strata)
        if all(rigidity[r] for r in ("R1", "R2", "R3", "R4")):
            rigidity["R5"], r5_reason = configuration_r5(admissible, own, N + c_min, n)
    else:
        ws = width_search(an, budget=deadline.left())
        width = ws.width
        width_bounds = (ws.lower, ws.upper)
        if ws.undecided and width is None:
            notes.append(ws.undecided)
        if width is not None:
            dimension = closed_form_dimension(N, n, k, m, width)
            if dimension is None:
                notes.append("the fibre dimension needs the full configuration search, which did not finish")
            own_type = own_stratum(kd, own, n, list_S=N <= LIST_LIMIT)
            strata = [] if own_type is None else [own_type]
    strata.sort(key=lambda s: (-s.dimension, len(s.P), s.P, s.S or (), s.t))
    # orbits: finitely many iff n = w and every minimizer has t = 0 (then one free orbit each)
    orbits: int | None = None
    if complete and width == n:
        if all(c.rho == 0 for c in admissible.configurations) and not admissible.truncated:
            orbits = admissible.count
    certificate = (
        "exact configuration search over all (S, P) with cost ≤ n − N"
        + ("; every type (S, P, t) decided exactly and witnessed (docs/math/strata.md)" if strata_listed else "")
        if complete
        else "partial: the configuration search did not finish within budget"
    )
    undecided = "; ".join(notes) if notes else None
    if not complete and admissible.undecided:
        undecided = admissible.undecided + ("; " + undecided if undecided else "")
    return _outside_class_a(
        ctx,
        rigidity,
        r5_reason,
        N=N,
        width=width,
        width_bounds=width_bounds,
        dimension=dimension,
        strata=strata,
        strata_listed=strata_listed,
        orbits=orbits,
        certificate=certificate,
        undecided=undecided,
        kd=kd,
        own=own,
    )


def _outside_class_a(
    ctx: _Context,
    rigidity: dict[str, bool | None],
    r5_reason: str,
    *,
    N: int,
    width: int | None,
    width_bounds: tuple[int, int],
    dimension: int | None,
    strata: Sequence[Stratum],
    strata_listed: bool = False,
    orbits: int | None = None,
    certificate: str,
    undecided: str | None = None,
    kd: KinkData | None = None,
    own: OwnConfiguration | None = None,
) -> Fiber:
    """The fibre of θ outside class A: not generic, no flip sets; rigid and its reason follow from R1–R5."""
    net = ctx.an.net
    rigid, rigid_reason = rigidity_verdict(ctx.an.classes, ctx.ga_reason, rigidity, r5_reason)
    return Fiber(
        m=net.m,
        n=net.n,
        k=net.k,
        N=N,
        generic=False,
        generic_reason=ctx.generic_reason,
        conditions=ctx.conditions,
        rigid=rigid,
        rigid_reason=rigid_reason,
        rigidity=rigidity,
        flip_sets=None,
        orbits=orbits,
        width=width,
        width_bounds=width_bounds,
        dimension=dimension,
        strata=tuple(strata),
        strata_complete=strata_listed,
        strata_count=len(strata) if strata_listed else None,
        certificate=certificate,
        undecided=undecided,
        elapsed=ctx.clock.elapsed(),
        net=net,
        _kd=kd,
        _own=own,
        _analysis=ctx.an,
    )
