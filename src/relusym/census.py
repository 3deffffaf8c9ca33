"""A census of small fibres: every θ ∈ Ω(1,2,1) with entries in {−1, 0, 1} and a random sample of Ω(2,3,1)
with small integer entries, classified into generic / rigid but not generic / finitely many orbits /
positive-dimensional, with checks of the classification on every network (docs/math/fibres.md).

Checks made on each network:

* every sampled fibre point has the same normal form as θ (``Fiber.sample`` verifies it), and for m = 1 also
  the same values at every breakpoint and beyond (the exact oracle of docs/math/normal-form.md, independent of the
  normal
  form);
* generic and rigid fibres are single free orbits: θ has a trivial stabilizer and every sampled point is h·θ
  for an h ∈ H_n found by :func:`relusym.find_symmetry`;
* in class A every sampled point is h·flip_T(θ) for a flip set T of docs/math/fibres.md (O4) reported by
:func:`fiber`, and
  :func:`relusym.equivalent` certifies it with ``Verdict.flips`` (every hidden symmetry found is a flip);
* when the fibre is a finite union of orbits, the sampled points fall into at most that many orbits;
* the strata listed by :func:`fiber` are proven complete and are exactly the types (S, P, t) found by an
  independent brute-force enumeration of realizations over small rational hidden layers with the same normal
  form (:func:`brute_force_types`), every listed stratum has a verified witness, θ's own stratum is marked,
  and every sampled point has a listed type.

Run ``python -m relusym.census`` (or ``relusym census``) to print the table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random as _random
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NoReturn

from . import _linalg as linalg
from ._analysis import Analysis, KinkData
from ._equivalence import equivalent
from ._fiber import Fiber, fiber
from ._group import find_symmetry, stabilizer
from ._network import Network
from ._normal_form import normal_form
from ._progress import progress as show_progress
from ._rng import RNGLike, as_random
from ._strata import point_type

__all__ = [
    "CATEGORIES",
    "Census",
    "CensusRow",
    "brute_force_types",
    "classify",
    "networks_121",
    "networks_231",
    "run_census",
    "run_census_chunked",
    "census_chunk",
    "fibre_category",
    "main",
]

CATEGORIES = ("generic", "rigid, not generic", "finitely many orbits", "positive-dimensional", "undecided")


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


def _category(fb: Fiber) -> str:
    if fb.generic:
        return "generic"
    if fb.rigid:
        return "rigid, not generic"
    if fb.orbits is not None:
        return "finitely many orbits"
    if fb.dimension is not None and fb.width is not None:
        return "positive-dimensional"
    return "undecided"


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
    """The category of θ's fibre, the :class:`~relusym._fiber.Fiber`, the failed checks (empty when all pass)
    and counters of the checks made.  ``rng``: an int seed, a numpy Generator, a random.Random or None.
    ``brute``: the brute-force types of θ's normal form when already known (:func:`brute_force_types`)."""
    r = as_random(rng)
    fb = fiber(net, budget=budget)
    cat = _category(fb)
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
        return {"rows": [r.to_dict() for r in self.rows], "seconds": round(self.seconds, 2), "ok": self.ok}


def _run_family(
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
    with show_progress(total=total_121 + sample_231, desc="census", unit="net", enabled=progress) as bar:
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
    t0 = time.monotonic()
    r = as_random(seed)
    nets_121: Iterator[Network] = networks_121(values_121)
    if limit_121 is not None:
        nets_121 = itertools.islice(nets_121, limit_121)
    vals = "{" + ", ".join(map(str, values_121)) + "}"
    rows = [_run_family(f"Ω(1,2,1), entries in {vals}", nets_121, samples, r, budget, bar)]
    if sample_231:
        vals2 = "{" + ", ".join(map(str, values_231)) + "}"
        rows.append(
            _run_family(
                f"Ω(2,3,1), {sample_231} random, entries in {vals2}",
                networks_231(sample_231, seed, values_231),
                samples,
                r,
                budget,
                bar,
            )
        )
    return Census(tuple(rows), time.monotonic() - t0)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one sentence on stderr, exit 2 (as every refusal of the relusym command line)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {' '.join(message.split())} (see {self.prog} --help)\n")


def _count(text: str) -> int:
    """A command-line count: a non-negative integer (argparse reports anything else as a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a count must be 0 or more")
    return value


# ----------------------------------------------------------------------------------------------------------
# the census on executors: chunks of a family (row ranges of its enumeration), tallies merged in chunk order


def fibre_category(fb: Fiber) -> str:
    """The census category of a fibre (one of :data:`CATEGORIES`), as the census and relusym.zoo report it."""
    return _category(fb)


def _family_networks(kind: str, params: dict[str, Any], start: int, stop: int) -> Iterator[Network]:
    """Networks start..stop of a family, regenerated where the chunk runs (never shipped)."""
    if kind == "121":
        return itertools.islice(networks_121(tuple(params["values"])), start, stop)
    return itertools.islice(networks_231(params["count"], params["seed"], tuple(params["values"])), start, stop)


def census_chunk(
    kind: str, params: dict[str, Any], start: int, stop: int, samples: int, seed: int, budget: float
) -> dict[str, Any]:
    """The tally of networks start..stop of a family, with fibre samples drawn from a generator seeded by
    (seed, family, start), so that a chunk gives the same tally wherever and whenever it runs."""
    r = _random.Random(f"relusym-census/{seed}/{kind}/{start}")
    row = _run_family(kind, _family_networks(kind, params, start, stop), samples, r, budget)
    return row.to_dict()


def _merge(family: str, parts: list[dict[str, Any]]) -> CensusRow:
    counts = dict.fromkeys(CATEGORIES, 0)
    widths: dict[int, int] = {}
    orbits: dict[int, int] = {}
    tot = {"total": 0, "samples": 0, "orbit_checks": 0, "flip_checks": 0, "hidden_flips": 0}
    failures: list[str] = []
    for d in parts:
        for c in CATEGORIES:
            counts[c] += d["counts"][c]
        for w, v in d["widths"].items():
            widths[int(w)] = widths.get(int(w), 0) + v
        for o, v in d["orbit_counts"].items():
            orbits[int(o)] = orbits.get(int(o), 0) + v
        for key in tot:
            tot[key] += d[key]
        failures += d["failures"]
    return CensusRow(
        family,
        tot["total"],
        counts,
        tot["samples"],
        tot["orbit_checks"],
        tot["flip_checks"],
        tot["hidden_flips"],
        widths,
        tuple(failures),
        orbits,
    )


def run_census_chunked(
    *,
    sample_231: int = 500,
    seed: int = 0,
    samples: int = 3,
    values_121: Sequence[int] = (-1, 0, 1),
    values_231: Sequence[int] = (-2, -1, 0, 1, 2),
    budget: float = 5.0,
    limit_121: int | None = None,
    chunk_size: int = 256,
    workers: int | None = None,
    executor: Any = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    progress: bool | None = None,
) -> Census:
    """The census of :func:`run_census` in chunks of ``chunk_size`` networks, serially or on an executor (a
    process pool of ``workers``, any ``concurrent.futures.Executor``, a Dask scheduler or a local Dask cluster;
    the executors of :mod:`relusym.zoo`).  The categories, widths and orbit counts are those of the serial
    census; the fibre samples are drawn per chunk, so the count of hidden flips met by the samples can differ
    from the serial census's, but not between executors."""
    from ._progress import progress as bar_of

    t0 = time.monotonic()
    n121 = len(values_121) ** 7 if limit_121 is None else min(limit_121, len(values_121) ** 7)
    fams: list[tuple[str, str, dict[str, Any], int]] = [
        ("121", "Ω(1,2,1), entries in {" + ", ".join(map(str, values_121)) + "}", {"values": list(values_121)}, n121)
    ]
    if sample_231:
        fams.append(
            (
                "231",
                f"Ω(2,3,1), {sample_231} random, entries in {{" + ", ".join(map(str, values_231)) + "}",
                {"count": sample_231, "seed": seed, "values": list(values_231)},
                sample_231,
            )
        )
    tasks = [
        (fi, kind, params, s, min(total, s + chunk_size))
        for fi, (kind, _, params, total) in enumerate(fams)
        for s in range(0, total, chunk_size)
    ]
    results: dict[int, dict[str, Any]] = {}
    with bar_of(total=sum(f[3] for f in fams), desc="census", unit="net", enabled=progress) as bar:
        for t, res in _run_tasks(tasks, samples, seed, budget, workers, executor, scheduler, dask_local):
            results[t] = res
            bar.update(tasks[t][4] - tasks[t][3])
    rows = []
    for fi, (_, family, _, _) in enumerate(fams):
        rows.append(_merge(family, [results[t] for t, task in enumerate(tasks) if task[0] == fi]))
    return Census(tuple(rows), time.monotonic() - t0)


def _run_tasks(
    tasks: list[tuple[int, str, dict[str, Any], int, int]],
    samples: int,
    seed: int,
    budget: float,
    workers: int | None,
    executor: Any,
    scheduler: str | None,
    dask_local: int | None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    from concurrent.futures import as_completed

    args = [(kind, params, s, e, samples, seed, budget) for _, kind, params, s, e in tasks]
    if scheduler is not None or dask_local is not None:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed

        cluster = (
            LocalCluster(n_workers=dask_local, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)
            if dask_local is not None
            else None
        )
        client = Client(cluster if cluster is not None else scheduler)
        try:
            futs = {client.submit(census_chunk, *a, pure=False, retries=5): t for t, a in enumerate(args)}
            for f in dask_completed(futs):
                yield futs[f], f.result()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return
    if executor is None and workers is not None and workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            yield from _run_tasks(tasks, samples, seed, budget, None, pool, None, None)
        return
    if executor is not None:
        fut = {executor.submit(census_chunk, *a): t for t, a in enumerate(args)}
        for f in as_completed(fut):
            yield fut[f], f.result()
        return
    for t, a in enumerate(args):
        yield t, census_chunk(*a)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m relusym.census [--sample N] [--seed S] [--samples K] [--json]``: print the census table.
    Exit code 0 when every check passed, 1 otherwise."""
    p = _Parser(prog="relusym census", description="classify the fibres of small networks")
    p.add_argument("--sample", type=_count, default=500, help="random networks of Ω(2,3,1) (default 500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=_count, default=3, help="fibre points drawn per network (default 3)")
    p.add_argument("--limit-121", type=_count, default=None, help="only the first N networks of Ω(1,2,1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, metavar="N", help="chunks on a process pool of N")
    where.add_argument("--dask-local", type=int, default=None, metavar="N", help="chunks on a local Dask cluster")
    where.add_argument("--scheduler", default=None, metavar="ADDR", help="chunks on a Dask scheduler")
    p.add_argument("--chunk-size", type=int, default=None, help="networks per chunk (chunked census)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it appears only on a terminal)")
    p.add_argument("--timings", action="store_true", help="include the run time in --json output")
    args = p.parse_args(argv)
    if any(x is not None for x in (args.workers, args.dask_local, args.scheduler, args.chunk_size)):
        if args.chunk_size is not None and args.chunk_size < 1:
            print("relusym census: --chunk-size must be at least 1", file=sys.stderr)
            return 2
        census = run_census_chunked(
            sample_231=args.sample,
            seed=args.seed,
            samples=args.samples,
            limit_121=args.limit_121,
            chunk_size=args.chunk_size or 256,
            workers=args.workers,
            scheduler=args.scheduler,
            dask_local=args.dask_local,
            progress=False if args.quiet else None,
        )
    else:
        census = run_census(
            sample_231=args.sample,
            seed=args.seed,
            samples=args.samples,
            limit_121=args.limit_121,
            progress=False if args.quiet else None,
        )
    if args.json:
        d = {"schema": "relusym.census/1", **census.to_dict()}
        if not args.timings:
            d.pop("seconds", None)
        print(json.dumps(d))
    else:
        print(census.table())
        print(
            f"\n{sum(r.total for r in census.rows)} networks in {census.seconds:.1f} s; "
            f"{'all checks passed' if census.ok else 'SOME CHECKS FAILED'}"
        )
        for row in census.rows:
            for f in row.failures[:10]:
                print("  failed:", f)
    return 0 if census.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
