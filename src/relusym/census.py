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
import math
import os
import random as _random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

from relusym._base.progress import progress as show_progress
from relusym._base.rng import RNGLike, as_random
from relusym._core.analysis import Analysis, KinkData
from relusym._core.equivalence import equivalent
from relusym._core.group import find_symmetry, stabilizer
from relusym._core.network import Network
from relusym._core.normal_form import normal_form
from relusym._exact import linalg as linalg
from relusym._fibre.fiber import Fiber, fiber
from relusym._fibre.tangent import point_type

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
    "TABLE_SCHEMA",
    "TABLE_COLUMNS",
    "DISTRIBUTIONS",
    "CensusSpec",
    "CensusTable",
    "census_entries",
    "census_network",
    "census_part",
    "census_table_text",
    "fibre_fields",
    "integer_function_keys",
    "read_census_table",
    "run_census_table",
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
    """The category of θ's fibre, the :class:`~relusym._fibre.fiber.Fiber`, the failed checks (empty when all pass)
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
    from relusym._base.progress import progress as bar_of

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
    import hashlib

    from relusym._zoo._jobs import execute

    args = [(kind, params, s, e, samples, seed, budget) for _, kind, params, s, e in tasks]
    job = hashlib.sha256(json.dumps(args, default=str).encode()).hexdigest()[:16]
    yield from execute(
        census_chunk,
        args,
        workers=workers if workers is not None and workers > 1 else None,
        executor=executor,
        scheduler=scheduler,
        dask_local=dask_local,
        key=f"census-checked-{job}",
    )


# ----------------------------------------------------------------------------------------------------------
# the census table: one row per network of a grid or a sample, as a resumable job (docs/census.md)

TABLE_SCHEMA = "relusym.census-table/1"
DISTRIBUTIONS = ("int", "rational", "float32")
_BLOCK = 1024  # sampled networks are drawn in blocks of this many, each from its own seeded stream
_MAX_VALUE = 2**20  # integer entries up to this size get the vectorized exact key (products stay below 2^62)

# (name, pyarrow type name, description): the public columns of the census table, in order
TABLE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("index", "int64", "position of the network in the enumeration; census_network(spec, index) rebuilds it"),
    ("fibre_type", "string", "generic / rigid, not generic / finitely many orbits / positive-dimensional / undecided"),
    ("width", "int32", "minimal width w(ρ(θ)) (null when undecided)"),
    ("dimension", "int32", "dimension of the fibre (null when undecided)"),
    ("flip_sets", "int32", "nonempty flip sets T ∈ 𝒯(θ) in class A (null outside class A)"),
    ("orbits", "int32", "number of H_n-orbits when the fibre is a finite union of free orbits (null otherwise)"),
    ("check", "string", "null, or 'agrees'/'differs': fiber was run on this very network and compared"),
)


@dataclass(frozen=True)
class CensusSpec:
    """A census job: the networks of Ω(m, n, k) (``shape``) whose entries V, A, b, c (in this order, each
    row-major) range over ``values`` — all of them (``sample=None``: the grid, ``len(values)**E`` networks for
    E = kn + nm + n + k entries) or ``sample`` draws of a distribution:

    * ``"int"``: every entry uniform in ``values``;
    * ``"rational"``: every entry p/q with p uniform in ``values`` and q uniform in 1..``denominators``;
    * ``"float32"``: every entry uniform on the float32 grid j·2⁻²³ in [−1, 1).

    Network ``index`` of the grid has the entries whose positions in ``values`` are the base-``len(values)``
    digits of ``index``, most significant first (the last entry runs fastest, as in :func:`networks_121`);
    draw ``index`` of a sample comes from block ``index // 1024``, whose raw 64-bit words are those of a PCG64
    stream seeded by (seed, block) (a value is chosen by a word modulo the number of choices: uniform up to a
    bias below that number times 2⁻⁶⁴).  So :func:`census_network` rebuilds any network from its index.

    ``chunk_size`` networks per part; ``budget`` seconds of :func:`relusym.fiber` per function; every network
    whose index is a multiple of ``check_every`` (never when 0) is classified again by ``fiber`` on itself."""

    shape: tuple[int, int, int]
    values: tuple[int, ...] = (-1, 0, 1)
    sample: int | None = None
    distribution: str = "int"
    denominators: int = 3
    seed: int = 0
    chunk_size: int = 16384
    budget: float = 5.0
    check_every: int = 100

    def __post_init__(self) -> None:
        from relusym.errors import InvalidNetworkError

        m, n, k = self.shape
        if min(m, n, k) < 1:
            raise InvalidNetworkError(f"shape must be three positive integers m, n, k, got {self.shape}")
        if not self.values or len(set(self.values)) != len(self.values):
            raise InvalidNetworkError(f"values must be distinct integers, at least one, got {list(self.values)}")
        if self.distribution not in DISTRIBUTIONS:
            raise InvalidNetworkError(
                f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {self.distribution!r}"
            )
        if self.sample is None and self.distribution != "int":
            raise InvalidNetworkError("a distribution other than int needs a sample size (the grid is of integers)")
        if self.sample is not None and self.sample < 0:
            raise InvalidNetworkError(f"sample must be 0 or more networks, got {self.sample}")
        if self.denominators < 1:
            raise InvalidNetworkError(f"denominators must be at least 1, got {self.denominators}")
        if self.chunk_size < 1:
            raise InvalidNetworkError(f"chunk size must be at least 1, got {self.chunk_size}")
        if self.check_every < 0:
            raise InvalidNetworkError(f"check_every must be 0 (never) or more, got {self.check_every}")
        if not (math.isfinite(self.budget) and self.budget > 0):
            raise InvalidNetworkError(f"budget must be a positive number of seconds, got {self.budget}")
        if self.sample is None and len(self.values) ** self.entries >= 2**62:
            raise InvalidNetworkError(f"a grid of {len(self.values)}^{self.entries} networks is too large to enumerate")

    @property
    def entries(self) -> int:
        m, n, k = self.shape
        return k * n + n * m + n + k

    @property
    def total(self) -> int:
        return len(self.values) ** self.entries if self.sample is None else self.sample

    @property
    def chunks(self) -> int:
        return -(-self.total // self.chunk_size)

    def describe(self) -> dict[str, Any]:
        """Everything that determines the table (the job's manifest)."""
        d: dict[str, Any] = {
            "shape": list(self.shape),
            "values": list(self.values),
            "mode": "grid" if self.sample is None else "sample",
            "chunk_size": self.chunk_size,
            "budget": self.budget,
            "check_every": self.check_every,
        }
        if self.sample is not None:
            d.update(sample=self.sample, distribution=self.distribution, seed=self.seed)
            if self.distribution == "rational":
                d["denominators"] = self.denominators
        return d

    def label(self) -> str:
        m, n, k = self.shape
        vals = "{" + ", ".join(map(str, self.values)) + "}"
        if self.sample is None:
            return f"Ω({m},{n},{k}), every network with entries in {vals}"
        what = {
            "int": f"entries uniform in {vals}",
            "rational": f"entries p/q, p in {vals}, q in 1..{self.denominators}",
            "float32": "entries uniform on the float32 grid of [-1, 1)",
        }[self.distribution]
        return f"Ω({m},{n},{k}), {self.sample} random networks (seed {self.seed}), {what}"


def _raw_words(spec: CensusSpec, start: int, stop: int, per_entry: int) -> Any:
    """The raw 64-bit words of sampled networks start..stop: (stop − start, E·per_entry), block by block."""
    import numpy as np

    width = spec.entries * per_entry
    out = np.empty((stop - start, width), dtype=np.uint64)
    for block in range(start // _BLOCK, -(-stop // _BLOCK)):
        lo, hi = block * _BLOCK, (block + 1) * _BLOCK
        gen = np.random.PCG64(np.random.SeedSequence([spec.seed, block]))
        words = gen.random_raw(_BLOCK * width).reshape(_BLOCK, width)
        a, b = max(lo, start), min(hi, stop)
        out[a - start : b - start] = words[a - lo : b - lo]
    return out


def census_entries(spec: CensusSpec, start: int, stop: int) -> tuple[Any, Any]:
    """The entries of networks start..stop as arrays (B, E): integer numerators and denominators (the
    denominators all 1 except for the rational distribution) or, for float32, the float32 values and None."""
    import numpy as np

    vals = np.array(spec.values, dtype=np.int64)
    L, E = len(vals), spec.entries
    if spec.sample is None:
        idx = np.arange(start, stop, dtype=np.int64)
        digits = np.empty((stop - start, E), dtype=np.int64)
        for e in range(E - 1, -1, -1):
            digits[:, e] = idx % L
            idx //= L
        return vals[digits], np.ones_like(digits)
    if spec.distribution == "float32":
        w = _raw_words(spec, start, stop, 1)
        j = (w >> np.uint64(40)).astype(np.int64) - 2**23  # 24 random bits: j in [−2^23, 2^23)
        return (j.astype(np.float64) / 2.0**23).astype(np.float32), None
    if spec.distribution == "int":
        w = _raw_words(spec, start, stop, 1)
        return vals[(w % np.uint64(L)).astype(np.int64)], np.ones((stop - start, E), dtype=np.int64)
    w = _raw_words(spec, start, stop, 2)
    num = vals[(w[:, 0::2] % np.uint64(L)).astype(np.int64)]
    den = (w[:, 1::2] % np.uint64(spec.denominators)).astype(np.int64) + 1
    return num, den


def _network_of(spec: CensusSpec, num: Any, den: Any, t: int) -> Network:
    m, n, k = spec.shape
    if den is None:
        row: list[Any] = [float(x) for x in num[t]]
    elif spec.distribution == "rational":
        row = [Fraction(int(p), int(q)) for p, q in zip(num[t], den[t], strict=True)]
    else:
        row = [int(x) for x in num[t]]
    V = [row[i * n : (i + 1) * n] for i in range(k)]
    o = k * n
    A = [row[o + i * m : o + (i + 1) * m] for i in range(n)]
    o += n * m
    return Network(V, A, row[o : o + n], row[o + n : o + n + k])


def census_network(spec: CensusSpec, index: int) -> Network:
    """Network ``index`` of the census ``spec`` (the row of the table with this index describes its fibre)."""
    from relusym.errors import InvalidNetworkError

    if not 0 <= index < spec.total:
        raise InvalidNetworkError(f"index {index} is outside the census of {spec.total} networks")
    num, den = census_entries(spec, index, index + 1)
    return _network_of(spec, num, den, 0)


def _split(spec: CensusSpec, X: Any) -> tuple[Any, Any, Any, Any]:
    m, n, k = spec.shape
    B = X.shape[0]
    o = k * n
    V = X[:, :o].reshape(B, k, n)
    A = X[:, o : o + n * m].reshape(B, n, m)
    b = X[:, o + n * m : o + n * m + n]
    c = X[:, o + n * m + n :]
    return V, A, b, c


def integer_function_keys(V: Any, A: Any, b: Any, c: Any, bound: int) -> Any:
    """For a stack of integer networks (V: B×k×n, A: B×n×m, b: B×n, c: B×k, every entry of absolute value at
    most ``bound``): one row of int64 per network, equal for two networks iff they compute the same function.

    Each neuron with a_i ≠ 0 is written w_i = (a_i, b_i) = λ_i p_i with p_i the primitive integer vector whose
    first nonzero entry of a is positive and λ_i = ±gcd(w_i).  Since σ(−z) = σ(z) − z, the network computes
    Σ_p κ_p σ(p·(x, 1)) + M x + e with κ_p = Σ_{p_i = p} |λ_i| v_i, (M, e) = (0, c) + Σ_{λ_i < 0} v_i w_iᵀ +
    Σ_{a_i = 0} v_i σ(b_i).  The functions σ(p·(x, 1)) of distinct such p have distinct kink hyperplanes, so
    they are linearly independent modulo affine functions and this representation (the classes with κ_p ≠ 0,
    M, e) is unique: it is the normal form of docs/math/normal-form.md with integer scales.  The key lists the
    classes in increasing order of p (each p coded as one integer), then κ, M and e; unused class slots are
    padded with a code above every p.  All arithmetic is in int64 (the products stay below 2⁶²)."""
    import numpy as np

    B, k, n = V.shape
    m = A.shape[2]
    W = np.concatenate([A, b[:, :, None]], axis=2)  # B×n×(m+1)
    live = (A != 0).any(axis=2)
    g = np.gcd.reduce(np.abs(W), axis=2)
    first = np.argmax(A != 0, axis=2)
    s = np.sign(np.take_along_axis(A, first[:, :, None], axis=2)[:, :, 0])
    lam = np.where(live, s * g, 1)
    P = np.where(live[:, :, None], W // lam[:, :, None], 0)
    R = 2 * bound + 1
    code = np.zeros((B, n), dtype=np.int64)
    for j in range(m + 1):
        code = code * R + (P[:, :, j] + bound)
    top = R ** (m + 1)  # above every code
    kap = np.where(live[:, :, None], np.transpose(V, (0, 2, 1)) * g[:, :, None], 0)  # B×n×k
    neg = (live & (s < 0)).astype(np.int64)
    M = np.einsum("bki,bim->bkm", V * neg[:, None, :], A)
    e = c + np.einsum("bki,bi->bk", V * neg[:, None, :], b)
    e = e + np.einsum("bki,bi->bk", V * (~live)[:, None, :], np.maximum(b, 0))
    code = np.where(live, code, top)
    order = np.argsort(code, axis=1, kind="stable")
    code = np.take_along_axis(code, order, axis=1)
    kap = np.take_along_axis(kap, order[:, :, None], axis=1)
    for j in range(1, n):  # merge the neurons of one class into its last slot
        same = (code[:, j] == code[:, j - 1]) & (code[:, j] < top)
        kap[:, j] += np.where(same[:, None], kap[:, j - 1], 0)
        kap[:, j - 1] = np.where(same[:, None], 0, kap[:, j - 1])
    code = np.where((kap != 0).any(axis=2), code, top)
    order = np.argsort(code, axis=1, kind="stable")
    code = np.take_along_axis(code, order, axis=1)
    kap = np.take_along_axis(kap, order[:, :, None], axis=1)
    return np.concatenate([code, kap.reshape(B, n * k), M.reshape(B, k * m), e], axis=1)


Fields = tuple[str, int | None, int | None, int | None, int | None]
_FIBRES: dict[tuple[tuple[int, int, int], float, bytes], Fields] = {}  # per process: function → fields
_FIBRES_MAX = 2**20


def fibre_fields(fb: Fiber) -> Fields:
    """(fibre type, minimal width, dimension, nonempty flip sets, orbits) of a fibre: the census table's row."""
    flips = None if fb.flips is None else len([T for T in fb.flips if T])
    return _category(fb), fb.width, fb.dimension, flips, fb.orbits


def _function_keys(spec: CensusSpec, num: Any, den: Any) -> list[bytes]:
    """A key per network, equal iff the two compute the same function: the integer key of
    :func:`integer_function_keys` when it applies, otherwise the normal-form digest."""
    import numpy as np

    m, n, k = spec.shape
    bound = max(abs(v) for v in spec.values)
    integer = den is not None and spec.distribution == "int" and bound <= _MAX_VALUE and n <= 1024
    if integer and (2 * bound + 1) ** (m + 1) < 2**62:
        K = np.ascontiguousarray(integer_function_keys(*_split(spec, num), bound))
        return [K[t].tobytes() for t in range(K.shape[0])]
    return [normal_form(_network_of(spec, num, den, t)).digest().encode() for t in range(num.shape[0])]


def census_part(spec: CensusSpec, chunk: int) -> Any:
    """The Parquet part (a pyarrow table) of chunk ``chunk``: networks chunk·C .. (chunk + 1)·C − 1 of the census.

    The fibre ρ⁻¹(ρ(θ)) ⊂ Ω(m, n, k) is determined by the function ρ(θ) alone, and so is everything a row
    reports: whether θ is generic (then the fibre is the free orbit H_n·θ and every point of it is generic),
    rigid, of class A, the orbits, the width, the dimension and the number of flip sets (the flip sets of
    h·flip_T(θ) are those of θ moved by h and T).  So :func:`relusym.fiber` runs once per distinct function —
    on the first network of the chunk that computes it, unless this process met the function before — and its
    answer is that of every network computing it.  The networks whose index is a multiple of ``check_every``
    are classified again by ``fiber`` on themselves (``check``: ``agrees`` or ``differs``)."""
    import numpy as np
    import pyarrow as pa

    start = chunk * spec.chunk_size
    stop = min(spec.total, start + spec.chunk_size)
    num, den = census_entries(spec, start, stop)
    keys = _function_keys(spec, num, den)
    first: dict[bytes, int] = {}
    for t, key in enumerate(keys):
        first.setdefault(key, t)
    found: dict[bytes, Fields] = {}
    for key, t in first.items():
        memo = (spec.shape, spec.budget, key)
        if memo not in _FIBRES:
            if len(_FIBRES) >= _FIBRES_MAX:
                _FIBRES.clear()
            _FIBRES[memo] = fibre_fields(fiber(_network_of(spec, num, den, t), budget=spec.budget))
        found[key] = _FIBRES[memo]
    rows = [found[key] for key in keys]
    check: list[str | None] = [None] * len(keys)
    if spec.check_every:
        for t in range(-start % spec.check_every, len(keys), spec.check_every):
            own = fibre_fields(fiber(_network_of(spec, num, den, t), budget=spec.budget))
            check[t] = "agrees" if own == rows[t] else "differs"
            rows[t] = own
    cols: dict[str, Any] = {"index": np.arange(start, stop, dtype=np.int64)}
    for j, name in enumerate(("fibre_type", "width", "dimension", "flip_sets", "orbits")):
        cols[name] = [r[j] for r in rows]
    cols["check"] = check
    cols["_key"] = keys
    return pa.Table.from_pydict(cols, schema=_table_schema(private=True))


def _table_schema(private: bool, metadata: dict[str, str] | None = None) -> Any:
    import pyarrow as pa

    types = {"int64": pa.int64(), "int32": pa.int32(), "string": pa.string()}
    fields = [pa.field(name, types[t]) for name, t, _ in TABLE_COLUMNS]
    if private:
        fields.append(pa.field("_key", pa.binary()))
    schema = pa.schema(fields)
    return schema.with_metadata({k: v.encode() for k, v in metadata.items()}) if metadata else schema


@dataclass(frozen=True)
class CensusTable:
    """A finished census job: the table (pyarrow, one row per network), the summary and where they were written."""

    spec: CensusSpec
    table: Any
    summary: dict[str, Any]
    output: Path | None = None
    summary_path: Path | None = None


def _tally(values: Sequence[Any]) -> dict[str, int]:
    out: dict[Any, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    order = sorted(out, key=lambda v: (v is None, v if v is not None else 0))
    return {("undecided" if v is None else str(v)): out[v] for v in order}


def _census_summary(spec: CensusSpec, raw: Any) -> dict[str, Any]:
    import pyarrow.compute as pc

    d = {name: raw.column(name).to_pylist() for name in ("fibre_type", "width", "dimension", "flip_sets", "orbits")}
    check = raw.column("check").to_pylist()
    by_type: dict[str, dict[str, Any]] = {}
    for cat in CATEGORIES:
        rows = [r for r, t in enumerate(d["fibre_type"]) if t == cat]
        if rows:
            by_type[cat] = {
                "networks": len(rows),
                "widths": _tally([d["width"][r] for r in rows]),
                "dimensions": _tally([d["dimension"][r] for r in rows]),
                "flip_sets": _tally([d["flip_sets"][r] for r in rows if d["flip_sets"][r] is not None]),
                "orbits": _tally([d["orbits"][r] for r in rows if d["orbits"][r] is not None]),
            }
    return {
        "schema": TABLE_SCHEMA,
        "census": spec.label(),
        "job": spec.describe(),
        "networks": raw.num_rows,
        "distinct_functions": int(pc.count_distinct(raw.column("_key")).as_py()) if raw.num_rows else 0,
        "fibre_types": {cat: by_type[cat]["networks"] for cat in CATEGORIES if cat in by_type},
        "widths": _tally(d["width"]),
        "dimensions": _tally(d["dimension"]),
        "flip_sets": _tally([f for f in d["flip_sets"] if f is not None]),
        "by_type": by_type,
        "checked": sum(1 for x in check if x is not None),
        "differs": [int(raw.column("index")[r].as_py()) for r, x in enumerate(check) if x == "differs"],
    }


def _mismatch(parts: str, spec: CensusSpec, old: dict[str, Any]) -> str:
    job = old.get("job")
    if not isinstance(job, dict):
        return f"{parts} holds no census parts of this job; run without --resume to start over"
    new = spec.describe()
    diff = [f"{key} {job.get(key)!r} there, {new.get(key)!r} here" for key in sorted(set(job) | set(new))
            if job.get(key) != new.get(key)]  # fmt: skip
    what = "; ".join(diff) or "another version of the table"
    return f"{parts} holds the parts of another census ({what}); run without --resume to start over"


def run_census_table(
    spec: CensusSpec,
    output: str | os.PathLike[str] | None = None,
    *,
    resume: bool = False,
    workers: int | None = None,
    executor: Any = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    progress: bool | None = None,
    on_part: Callable[[int], None] | None = None,
) -> CensusTable:
    """Run the census ``spec`` chunk by chunk, serially or on the executors of :mod:`relusym.zoo`, and return
    its table (rows ordered by index) and summary.  With ``output`` every finished chunk is written atomically
    as a Parquet part in ``OUTPUT.parts/`` (with a ``job.json`` manifest); ``resume=True`` skips the parts
    already there and refuses the parts of a census with other options.  The table and the summary
    (``OUTPUT`` and ``OUTPUT.summary.json`` without the suffix) do not depend on how the job was run or
    interrupted."""
    import hashlib

    import pyarrow as pa

    from relusym._zoo._jobs import PartsFolder, execute, write_outputs
    from relusym.errors import InvalidNetworkError

    description = spec.describe()
    key = hashlib.sha256(json.dumps({"schema": TABLE_SCHEMA, **description}, sort_keys=True).encode()).hexdigest()
    out = Path(output) if output is not None else None
    parts: PartsFolder | None = None
    chunks = list(range(spec.chunks))
    done: set[int] = set()
    if out is not None:
        if not (out.parent if str(out.parent) else Path(".")).is_dir():
            raise InvalidNetworkError(f"cannot write {out}: folder {out.parent} does not exist")
        parts = PartsFolder(
            out,
            schema=TABLE_SCHEMA,
            fingerprint=key,
            chunks=len(chunks),
            resume=resume,
            description=description,
            mismatch=lambda old: _mismatch(str(out.with_name(out.name + ".parts")), spec, old),
        )
        if resume:
            done = parts.done(chunks)
    size = {c: min(spec.total, (c + 1) * spec.chunk_size) - c * spec.chunk_size for c in chunks}
    todo = [c for c in chunks if c not in done]
    tables: dict[int, Any] = {}
    with show_progress(total=spec.total, desc="census", unit="net", enabled=progress) as bar:
        bar.update(sum(size[c] for c in done))
        for t, table in execute(
            census_part,
            [(spec, c) for c in todo],
            workers=workers if workers is not None and workers > 1 else None,
            executor=executor,
            scheduler=scheduler,
            dask_local=dask_local,
            key=f"census-{key[:16]}",
            labels=todo,
        ):
            if parts is not None:
                parts.write(todo[t], table)
            else:
                tables[todo[t]] = table
            bar.update(size[todo[t]])
            if on_part is not None:
                on_part(todo[t])
    pieces = [parts.read(c) for c in chunks] if parts is not None else [tables[c] for c in chunks]
    private = _table_schema(private=True)
    raw = pa.concat_tables([p.cast(private) for p in pieces]) if pieces else private.empty_table()
    summary = _census_summary(spec, raw)
    meta = {"schema": TABLE_SCHEMA, "job": json.dumps(description, sort_keys=True)}
    table = raw.drop_columns(["_key"]).cast(_table_schema(private=False, metadata=meta))
    summary_path = write_outputs(table, summary, out, parts) if out is not None else None
    return CensusTable(spec, table, summary, out, summary_path)


def read_census_table(path: str | os.PathLike[str]) -> tuple[CensusSpec, Any]:
    """The census spec and the table of a census table written by :func:`run_census_table`."""
    import pyarrow.parquet as pq

    from relusym.errors import InvalidNetworkError

    table = pq.read_table(str(path))
    meta = table.schema.metadata or {}
    if meta.get(b"schema") != TABLE_SCHEMA.encode():
        raise InvalidNetworkError(f"{path} is not a {TABLE_SCHEMA} table (schema metadata {meta.get(b'schema')!r})")
    job = json.loads(meta[b"job"])
    spec = CensusSpec(
        shape=tuple(job["shape"]),
        values=tuple(job["values"]),
        sample=job.get("sample"),
        distribution=job.get("distribution", "int"),
        denominators=job.get("denominators", 3),
        seed=job.get("seed", 0),
        chunk_size=job["chunk_size"],
        budget=job["budget"],
        check_every=job["check_every"],
    )
    return spec, table


def census_table_text(res: CensusTable, seconds: float | None = None) -> str:
    """The summary of a census table in words and Markdown tables."""
    s = res.summary
    lines = [f"{res.spec.label()}: {s['networks']} networks, {s['distinct_functions']} distinct functions", ""]
    widths = sorted({w for t in s["by_type"].values() for w in t["widths"]}, key=lambda w: (w == "undecided", w))
    lines.append("| fibre type | networks | " + " | ".join(f"w = {w}" for w in widths) + " |")
    lines.append("|---|---|" + "---|" * len(widths))
    for cat, t in s["by_type"].items():
        cells = [str(t["widths"].get(w, 0)) for w in widths]
        lines.append(f"| {cat} | {t['networks']} | " + " | ".join(cells) + " |")
    lines.append("")
    for cat, t in s["by_type"].items():
        dims = ", ".join(f"{d}: {v}" for d, v in t["dimensions"].items())
        more = ""
        if t["flip_sets"]:
            more += "; nonempty flip sets " + ", ".join(f"{f}: {v}" for f, v in t["flip_sets"].items())
        if t["orbits"]:
            more += "; orbits " + ", ".join(f"{o}: {v}" for o, v in t["orbits"].items())
        lines.append(f"- {cat}: dimension {dims}{more}")
    lines.append("")
    checked = f"{s['checked']} networks classified again on themselves, {len(s['differs'])} differ"
    timing = "" if seconds is None else f"; {seconds:.1f} s, {s['networks'] / max(seconds, 1e-9):.0f} networks/s"
    lines.append(checked + timing)
    if res.output is not None:
        lines.append(f"wrote {res.output} and {res.summary_path}")
    return "\n".join(lines)


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a comma-separated list of integers") from None


def _shape(text: str) -> tuple[int, int, int]:
    t = _int_list(text)
    if len(t) != 3 or min(t) < 1:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not M,N,K with three positive integers")
    return t[0], t[1], t[2]


def _main_table(args: argparse.Namespace) -> int:
    from relusym.errors import InvalidNetworkError

    if args.shape is None:
        print("relusym census: -o and --resume need --shape M,N,K (the census table)", file=sys.stderr)
        return 2
    if args.resume and args.output is None:
        print("relusym census: --resume needs -o OUT.parquet (the parts live beside it)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    try:
        spec = CensusSpec(
            shape=args.shape,
            values=args.values,
            sample=args.sample,
            distribution=args.distribution,
            denominators=args.denominators,
            seed=args.seed,
            chunk_size=args.chunk_size or 16384,
            budget=args.budget,
            check_every=args.check_every,
        )
        res = run_census_table(
            spec,
            args.output,
            resume=args.resume,
            workers=args.workers,
            scheduler=args.scheduler,
            dask_local=args.dask_local,
            progress=False if args.quiet else None,
        )
    except InvalidNetworkError as exc:
        print(f"relusym census: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("relusym census: interrupted; the finished chunks are kept, rerun with --resume", file=sys.stderr)
        return 130
    seconds = time.monotonic() - t0
    if args.json:
        print(json.dumps(res.summary if not args.timings else {**res.summary, "seconds": round(seconds, 2)}))
    else:
        print(census_table_text(res, seconds))
    return 1 if res.summary["differs"] else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``relusym census [--sample N] [--seed S] [--samples K] [--json]``: print the checked census table;
    ``relusym census --shape M,N,K [--values=V,...] [--sample N --distribution D] -o OUT.parquet [--resume]``:
    the census table, one row per network (docs/census.md).  Exit code 0 when every check passed, 1 otherwise,
    2 for a refused argument."""
    p = _Parser(prog="relusym census", description="classify the fibres of small networks")
    p.add_argument("--sample", type=_count, default=None, help="random networks (default 500 of Ω(2,3,1))")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=_count, default=None, help="fibre points drawn per network (default 3)")
    p.add_argument("--limit-121", type=_count, default=None, help="only the first N networks of Ω(1,2,1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, metavar="N", help="chunks on a process pool of N")
    where.add_argument("--dask-local", type=int, default=None, metavar="N", help="chunks on a local Dask cluster")
    where.add_argument("--scheduler", default=None, metavar="ADDR", help="chunks on a Dask scheduler")
    p.add_argument("--chunk-size", type=int, default=None, help="networks per chunk (table: default 16384)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it appears only on a terminal)")
    p.add_argument("--timings", action="store_true", help="include the run time in --json output")
    table = p.add_argument_group("the census table (one row per network, a resumable job)")
    table.add_argument("--shape", type=_shape, default=None, metavar="M,N,K", help="the networks of Ω(M,N,K)")
    table.add_argument("--values", type=_int_list, default=(-1, 0, 1), metavar="V,...",
                       help="the integer entries of the grid (write --values=-1,0,1,2; default -1,0,1)")  # fmt: skip
    table.add_argument("--distribution", choices=DISTRIBUTIONS, default="int", help="of a --sample (default int)")
    table.add_argument("--denominators", type=int, default=3, metavar="D", help="rational: q in 1..D (default 3)")
    table.add_argument("--budget", type=float, default=5.0, help="seconds of fiber per function (default 5)")
    table.add_argument("--check-every", type=_count, default=100, metavar="K",
                       help="classify every K-th network again on itself (default 100; 0: never)")  # fmt: skip
    table.add_argument("-o", "--output", default=None, metavar="OUT.parquet", help="write the table (and parts)")
    table.add_argument("--resume", action="store_true", help="keep the finished parts of an interrupted run")
    args = p.parse_args(argv)
    if args.shape is not None or args.output is not None or args.resume:
        if args.samples is not None or args.limit_121 is not None:
            print(
                "relusym census: --samples and --limit-121 belong to the checked census, not to --shape",
                file=sys.stderr,
            )
            return 2
        return _main_table(args)
    if args.sample is None:
        args.sample = 500
    if args.samples is None:
        args.samples = 3
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
