"""The census of small fibres: the families Ω(1,2,1) and Ω(2,3,1), each network classified and checked against
the classification (docs/math/fibres.md), the table of the tallies."""

from __future__ import annotations

import itertools
import json
import random as _random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from relusym._base.deadline import Stopwatch
from relusym._base.progress import progress_bar
from relusym._base.rng import RNGLike, as_random
from relusym._core.analysis import Analysis, KinkData
from relusym._core.equivalence import equivalent
from relusym._core.group import find_symmetry, stabilizer
from relusym._core.network import Network
from relusym._core.normal_form import normal_form
from relusym._exact import linalg as linalg
from relusym._fibre.fiber import Fiber, fiber
from relusym._fibre.tangent import point_type
from relusym._zoo._categories import CATEGORIES, fibre_category

__all__ = [
    "Census",
    "CensusRow",
    "brute_force_types",
    "classify",
    "networks_121",
    "networks_231",
    "run_census",
    "run_family",
]


def networks_121(values: Sequence[int] = (-1, 0, 1)) -> Iterator[Network]:
    """Every θ ∈ Ω(1,2,1) with entries in ``values`` (V, A, b, c: 7 entries; 3^7 = 2187 networks)."""
    for v1, v2, a1, a2, b1, b2, c in itertools.product(values, repeat=7):
        yield Network([[v1, v2]], [[a1], [a2]], [b1, b2], [c])


def networks_231(count: int, seed: int = 0, values: Sequence[int] = (-2, -1, 0, 1, 2)) -> Iterator[Network]:
    """``count`` random θ ∈ Ω(2,3,1) with entries drawn uniformly from ``values`` (13 entries each)."""
    r = _random.Random(seed)
    for _ in range(count):
        e = [r.choice(values) for _ in range(13)]
        yield Network([e[0:3]], [e[3:5], e[5:7], e[7:9]], e[9:12], [e[12]])


def _oracle_m1(net1: Network, net2: Network) -> bool:
    """See docs/math/normal-form.md: for m = 1, ρ1 − ρ2 is piecewise linear with breakpoints B; it vanishes iff it
    vanishes on B
    and at min B − 1 and max B + 1 (at −1, 0, 1 when B is empty).  Exact evaluation, no normal form."""
    pts: set[Fraction] = set()
    for net in (net1, net2):
        for i in range(net.n):
            a = Fraction(net.A[i, 0])
            if a:
                pts.add(-Fraction(net.b[i]) / a)
    pts = pts | {min(pts) - 1, max(pts) + 1} if pts else {Fraction(-1), Fraction(0), Fraction(1)}
    return all(net1.evaluate_exact([x]) == net2.evaluate_exact([x]) for x in pts)


@dataclass
class _Tally:
    family: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    samples: int = 0
    orbit_checks: int = 0
    flip_checks: int = 0
    hidden_flips: int = 0
    strata_checks: int = 0
    strata: int = 0
    failures: list[str] = field(default_factory=list)
    widths: dict[int, int] = field(default_factory=dict)
    orbit_counts: dict[int, int] = field(default_factory=dict)


Type = tuple[tuple[int, ...], tuple[int, ...], int]


def _canonical(vec: Sequence[Fraction]) -> tuple[Fraction, ...]:
    lead = next(x for x in vec if x != 0)
    return tuple(x / lead for x in vec)


def brute_force_types(net: Network, *, grid: Sequence[int] = (-2, -1, 0, 1, 2)) -> frozenset[Type]:
    """The types (S, P, t) of the realizations of ρ(θ) with n neurons found by brute force over small rational
    hidden layers: every live neuron lies, with either orientation and scale 1, on a kink class of NF(θ) or on
    one of up to (n − N)/2 further classes whose normals are drawn from the canonical directions of
    ``grid``^m and of the rows of M + Σ_S κ α̂ᵀ (S ⊆ U*); for each such hidden layer the output weights
    realizing NF(θ) form an affine space (a linear system over ℚ), and the type of the hidden layer occurs
    iff that space is nonempty and lies in none of the subspaces v_i = 0.  Null and constant neurons and
    classes carried by one orientation only (they can be removed without changing the function) are left
    out.  Nothing of the classification of docs/math/strata.md is used."""
    kd = KinkData.of(normal_form(net))
    m, n, N = net.m, net.n, kd.N
    if N > n:
        return frozenset()
    pool = {_canonical(v) for v in itertools.product([Fraction(g) for g in grid], repeat=m) if any(v)}
    for size in range(N + 1):
        for S in itertools.combinations(range(N), size):
            pool |= {_canonical(row) for row in kd.R(S) if any(row)}
    normals = sorted(pool)
    L = (n - N) // 2
    roles = [("kink", j, s) for j in range(N) for s in (1, -1)] + [("extra", e, s) for e in range(L) for s in (1, -1)]
    found: set[Type] = set()
    for size in range(N, n + 1):
        for ms in itertools.combinations_with_replacement(roles, size):
            if {j for kind, j, _ in ms if kind == "kink"} != set(range(N)):
                continue
            extra = sorted({j for kind, j, _ in ms if kind == "extra"})
            if extra != list(range(len(extra))) or any(
                {s for kind, j, s in ms if kind == "extra" and j == e} != {1, -1} for e in extra
            ):
                continue
            sides = {j: {s for kind, jj, s in ms if kind == "kink" and jj == j} for j in range(N)}
            typ = (
                tuple(j for j in range(N) if sides[j] == {-1}),
                tuple(j for j in range(N) if sides[j] == {1, -1}),
                len(extra),
            )
            if typ in found:
                continue
            for chosen in itertools.combinations_with_replacement(normals, len(extra)):
                if _live_solution(kd, ms, chosen):
                    found.add(typ)
                    break
    return frozenset(found)


def _live_solution(kd: KinkData, ms: Sequence[tuple[str, int, int]], normals: Sequence[tuple[Fraction, ...]]) -> bool:
    """Whether the output weights of the hidden layer ``ms`` (roles (kind, class, orientation), scale 1) can
    realize the kinks and the linear part of ``kd`` with every v_i ≠ 0 (the bias is always solvable)."""
    k, m = kd.k, kd.m
    nv = k * len(ms)
    rows: list[list[Fraction]] = []
    groups: dict[tuple[str, int], list[int]] = {}
    for i, (kind, j, _) in enumerate(ms):
        groups.setdefault((kind, j), []).append(i)
    for (kind, j), mem in groups.items():
        target = kd.kappa[j] if kind == "kink" else tuple(Fraction(0) for _ in range(k))
        for a in range(k):
            row = [Fraction(0)] * (nv + 1)
            for i in mem:
                row[i * k + a] = Fraction(1)
            row[nv] = target[a]
            rows.append(row)
    for a in range(k):
        for col in range(m):
            row = [Fraction(0)] * (nv + 1)
            for i, (kind, j, s) in enumerate(ms):
                if s < 0:
                    al = kd.alpha[j] if kind == "kink" else normals[j]
                    row[i * k + a] = -al[col]
            row[nv] = kd.M[a][col]
            rows.append(row)
    red, piv = linalg.rref(rows, nv + 1)
    if piv and piv[-1] == nv:
        return False
    free = [x for x in range(nv) if x not in piv]
    at = {p: red[i] for i, p in enumerate(piv)}
    for i in range(len(ms)):
        coords = range(i * k, (i + 1) * k)
        if not any(x in free or at[x][nv] != 0 or any(at[x][f] != 0 for f in free) for x in coords):
            return False
    return True


def _check_strata(fb: Fiber, net: Network, name: str, brute: frozenset[Type]) -> list[str]:
    """The strata checks of one network: complete, equal to the brute-force types, witnessed, own marked."""
    out: list[str] = []
    if not fb.strata_complete:
        return [f"{name}: the strata are not proven complete ({fb.undecided})"]
    listed = {s.key for s in fb.strata}
    if listed != brute:
        out.append(
            f"{name}: strata {sorted(listed)} differ from the brute-force types {sorted(brute)} of the same normal form"
        )
    theta = Analysis(net)
    for s in fb.strata:
        w = None if s.witness is None else Analysis(s.witness)
        if w is None or w.normal_form != theta.normal_form or point_type(w) != s.key:
            out.append(f"{name}: stratum {s.key} has no verified witness")
    own = [s.key for s in fb.strata if s.own]
    if own != [point_type(theta)]:
        out.append(f"{name}: θ's own stratum {point_type(theta)} is not the one marked ({own})")
    return out


def classify(
    net: Network,
    *,
    samples: int = 3,
    rng: RNGLike = None,
    budget: float = 5.0,
    brute: frozenset[Type] | None = None,
) -> tuple[str, Fiber, list[str], dict[str, int]]:
    """The category of θ's fibre, the :class:`~relusym._fibre.fiber.Fiber`, the failed checks (empty when all pass)
    and counters of the checks made.  ``rng``: an int seed, a numpy Generator, a random.Random or None.
    ``brute``: the brute-force types of θ's normal form when already known (:func:`brute_force_types`)."""
    r = as_random(rng)
    fb = fiber(net, budget=budget)
    cat = fibre_category(fb)
    failures: list[str] = []
    stats = {"samples": 0, "orbit_checks": 0, "flip_checks": 0, "hidden_flips": 0, "strata_checks": 0, "strata": 0}
    name = json.dumps(net.to_dict()["V"] + net.to_dict()["A"] + [net.to_dict()["b"], net.to_dict()["c"]])
    failures += _check_strata(fb, net, name, brute if brute is not None else brute_force_types(net))
    stats["strata_checks"] += 1
    stats["strata"] += len(fb.strata)
    listed = {s.key for s in fb.strata}
    single_orbit = cat in ("generic", "rigid, not generic")
    if single_orbit and not stabilizer(net).trivial:
        failures.append(f"{name}: {cat} but the stabilizer is not trivial")
    reps: list[Network] = []
    for _ in range(samples):
        s = fb.sample(r)
        stats["samples"] += 1
        s_type = point_type(Analysis(s))
        if s_type not in listed:
            failures.append(f"{name}: a fibre sample has the type {s_type}, which is not listed")
        if net.m == 1 and not _oracle_m1(net, s):
            failures.append(f"{name}: a fibre sample differs from θ at a breakpoint (oracle docs/math/normal-form.md)")
        if single_orbit:
            stats["orbit_checks"] += 1
            if find_symmetry(net, s) is None:
                failures.append(f"{name}: {cat}, but a fibre point is not in the H_n-orbit of θ")
        if fb.class_a and fb.flips_complete:
            stats["flip_checks"] += 1
            v = equivalent(net, s)
            flips = set(fb.flips or ())
            if not v or v.witness is None or v.flips is None or tuple(v.flips) not in flips:
                failures.append(f"{name}: a fibre point of a class-A network is not h·flip_T(θ) for a flip set T")
            elif v.flips:
                stats["hidden_flips"] += 1
        if fb.orbits is not None and all(find_symmetry(x, s) is None for x in reps):
            reps.append(s)
    if fb.orbits is not None and len(reps) > fb.orbits:
        failures.append(f"{name}: samples fall into {len(reps)} orbits, more than the {fb.orbits} reported")
    return cat, fb, failures, stats


@dataclass(frozen=True)
class CensusRow:
    """One family of the census: how many networks fall into each category, and the checks made."""

    family: str
    total: int
    counts: dict[str, int]
    samples: int
    orbit_checks: int
    flip_checks: int
    hidden_flips: int
    widths: dict[int, int]
    failures: tuple[str, ...]
    orbit_counts: dict[int, int] = field(default_factory=dict)
    strata_checks: int = 0
    strata: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "total": self.total,
            "counts": dict(self.counts),
            "samples": self.samples,
            "orbit_checks": self.orbit_checks,
            "flip_checks": self.flip_checks,
            "hidden_flips": self.hidden_flips,
            "widths": {str(k): v for k, v in sorted(self.widths.items())},
            "orbit_counts": {str(k): v for k, v in sorted(self.orbit_counts.items())},
            "strata_checks": self.strata_checks,
            "strata": self.strata,
            "failures": list(self.failures),
        }


@dataclass(frozen=True)
class Census:
    rows: tuple[CensusRow, ...]
    seconds: float
    command: str = ""

    @property
    def ok(self) -> bool:
        return all(not row.failures for row in self.rows)

    def table(self) -> str:
        """The census as a Markdown table."""
        head = (
            "| family | networks | " + " | ".join(CATEGORIES) + " | fibre samples | orbit checks | "
            "flip checks (hidden flips) | strata checks (strata) | failed checks |"
        )
        sep = "|" + "---|" * (len(CATEGORIES) + 7)
        lines = [head, sep]
        for row in self.rows:
            cells = [
                row.family,
                str(row.total),
                *(str(row.counts[c]) for c in CATEGORIES),
                str(row.samples),
                str(row.orbit_checks),
                f"{row.flip_checks} ({row.hidden_flips})",
                f"{row.strata_checks} ({row.strata})",
                str(len(row.failures)),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        for row in self.rows:
            widths = ", ".join(f"w = {w}: {c}" for w, c in sorted(row.widths.items()))
            orbits = ", ".join(f"{o} orbits: {c}" for o, c in sorted(self.orbit_counts_of(row).items()))
            several = orbits or "none"
            lines.append(f"- {row.family}: minimal widths {widths}; fibres made of several orbits: {several}")
        return "\n".join(lines)

    @staticmethod
    def orbit_counts_of(row: CensusRow) -> dict[int, int]:
        return {o: c for o, c in row.orbit_counts.items() if o > 1}

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "relusym.census/1",
            "rows": [r.to_dict() for r in self.rows],
            "seconds": round(self.seconds, 2),
            "ok": self.ok,
        }


def run_family(
    family: str, nets: Iterator[Network], samples: int, r: _random.Random, budget: float, bar: Any = None
) -> CensusRow:
    tally = _Tally(family)
    total = 0
    brute: dict[str, frozenset[Type]] = {}  # brute-force types by (normal form, n): equal functions share them
    for net in nets:
        total += 1
        if bar is not None:
            bar.update(1)
        key = normal_form(net).digest() + f"/{net.n}"
        if key not in brute:
            brute[key] = brute_force_types(net)
        cat, fb, failures, stats = classify(net, samples=samples, rng=r, budget=budget, brute=brute[key])
        tally.counts[cat] += 1
        if fb.width is not None:
            tally.widths[fb.width] = tally.widths.get(fb.width, 0) + 1
        if fb.orbits is not None:
            tally.orbit_counts[fb.orbits] = tally.orbit_counts.get(fb.orbits, 0) + 1
        tally.samples += stats["samples"]
        tally.orbit_checks += stats["orbit_checks"]
        tally.flip_checks += stats["flip_checks"]
        tally.hidden_flips += stats["hidden_flips"]
        tally.strata_checks += stats["strata_checks"]
        tally.strata += stats["strata"]
        tally.failures += failures
    return CensusRow(
        family,
        total,
        dict(tally.counts),
        tally.samples,
        tally.orbit_checks,
        tally.flip_checks,
        tally.hidden_flips,
        dict(tally.widths),
        tuple(tally.failures),
        dict(tally.orbit_counts),
        tally.strata_checks,
        tally.strata,
    )


def run_census(
    *,
    sample_231: int = 500,
    seed: int = 0,
    samples: int = 3,
    values_121: Sequence[int] = (-1, 0, 1),
    values_231: Sequence[int] = (-2, -1, 0, 1, 2),
    budget: float = 5.0,
    limit_121: int | None = None,
    progress: bool | None = None,
) -> Census:
    """Classify every θ ∈ Ω(1,2,1) with entries in ``values_121`` (the first ``limit_121`` of them if given)
    and ``sample_231`` random θ ∈ Ω(2,3,1) with entries in ``values_231``, drawing ``samples`` fibre points of
    each.  ``progress`` shows a bar over the networks (on stderr when it is a terminal, by default)."""
    total_121 = len(values_121) ** 7 if limit_121 is None else min(limit_121, len(values_121) ** 7)
    with progress_bar(total=total_121 + sample_231, desc="census", unit="net", progress=progress) as bar:
        return _run_census(sample_231, seed, samples, values_121, values_231, budget, limit_121, bar)


def _run_census(
    sample_231: int,
    seed: int,
    samples: int,
    values_121: Sequence[int],
    values_231: Sequence[int],
    budget: float,
    limit_121: int | None,
    bar: Any,
) -> Census:
    clock = Stopwatch()
    r = as_random(seed)
    nets_121: Iterator[Network] = networks_121(values_121)
    if limit_121 is not None:
        nets_121 = itertools.islice(nets_121, limit_121)
    vals = "{" + ", ".join(map(str, values_121)) + "}"
    rows = [run_family(f"Ω(1,2,1), entries in {vals}", nets_121, samples, r, budget, bar)]
    if sample_231:
        vals2 = "{" + ", ".join(map(str, values_231)) + "}"
        rows.append(
            run_family(
                f"Ω(2,3,1), {sample_231} random, entries in {vals2}",
                networks_231(sample_231, seed, values_231),
                samples,
                r,
                budget,
                bar,
            )
        )
    return Census(tuple(rows), clock.elapsed())
