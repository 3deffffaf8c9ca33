"""A census of small fibres: every θ ∈ Ω(1,2,1) with entries in {−1, 0, 1} and a random sample of Ω(2,3,1)
with small integer entries, classified into generic / rigid but not generic / finitely many orbits /
positive-dimensional, with checks of the classification on every network (spec §3, §5).

Checks made on each network:

* every sampled fibre point has the same normal form as θ (``Fiber.sample`` verifies it), and for m = 1 also
  the same values at every breakpoint and beyond (the exact oracle of spec §2.6, independent of the normal
  form);
* generic and rigid fibres are single free orbits: θ has a trivial stabilizer and every sampled point is h·θ
  for an h ∈ H_n found by :func:`relusym.find_symmetry`;
* in class A every sampled point is h·flip_T(θ) for a flip set T of §3 (O4) reported by :func:`fiber`, and
  :func:`relusym.equivalent` certifies it with ``Verdict.flips`` (every hidden symmetry found is a flip);
* when the fibre is a finite union of orbits, the sampled points fall into at most that many orbits.

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

from ._equivalence import equivalent
from ._fiber import Fiber, fiber
from ._group import find_symmetry, stabilizer
from ._network import Network

__all__ = [
    "CATEGORIES",
    "Census",
    "CensusRow",
    "classify",
    "networks_121",
    "networks_231",
    "run_census",
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
    """Spec §2.6: for m = 1, ρ1 − ρ2 is piecewise linear with breakpoints B; it vanishes iff it vanishes on B
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
    failures: list[str] = field(default_factory=list)
    widths: dict[int, int] = field(default_factory=dict)
    orbit_counts: dict[int, int] = field(default_factory=dict)


def classify(
    net: Network, *, samples: int = 3, rng: Any = None, budget: float = 5.0
) -> tuple[str, Fiber, list[str], dict[str, int]]:
    """The category of θ's fibre, the :class:`~relusym._fiber.Fiber`, the failed checks (empty when all pass)
    and counters of the checks made."""
    r = rng if isinstance(rng, _random.Random) else _random.Random(rng)
    fb = fiber(net, budget=budget)
    cat = _category(fb)
    failures: list[str] = []
    stats = {"samples": 0, "orbit_checks": 0, "flip_checks": 0, "hidden_flips": 0}
    name = json.dumps(net.to_dict()["V"] + net.to_dict()["A"] + [net.to_dict()["b"], net.to_dict()["c"]])
    single_orbit = cat in ("generic", "rigid, not generic")
    if single_orbit and not stabilizer(net).trivial:
        failures.append(f"{name}: {cat} but the stabilizer is not trivial")
    reps: list[Network] = []
    for _ in range(samples):
        s = fb.sample(r)
        stats["samples"] += 1
        if net.m == 1 and not _oracle_m1(net, s):
            failures.append(f"{name}: a fibre sample differs from θ at a breakpoint (oracle §2.6)")
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
            "flip checks (hidden flips) | failed checks |"
        )
        sep = "|" + "---|" * (len(CATEGORIES) + 6)
        lines = [head, sep]
        for row in self.rows:
            cells = [
                row.family,
                str(row.total),
                *(str(row.counts[c]) for c in CATEGORIES),
                str(row.samples),
                str(row.orbit_checks),
                f"{row.flip_checks} ({row.hidden_flips})",
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


def _run_family(family: str, nets: Iterator[Network], samples: int, r: _random.Random, budget: float) -> CensusRow:
    tally = _Tally(family)
    total = 0
    for net in nets:
        total += 1
        cat, fb, failures, stats = classify(net, samples=samples, rng=r, budget=budget)
        tally.counts[cat] += 1
        if fb.width is not None:
            tally.widths[fb.width] = tally.widths.get(fb.width, 0) + 1
        if fb.orbits is not None:
            tally.orbit_counts[fb.orbits] = tally.orbit_counts.get(fb.orbits, 0) + 1
        tally.samples += stats["samples"]
        tally.orbit_checks += stats["orbit_checks"]
        tally.flip_checks += stats["flip_checks"]
        tally.hidden_flips += stats["hidden_flips"]
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
) -> Census:
    """Classify every θ ∈ Ω(1,2,1) with entries in ``values_121`` (the first ``limit_121`` of them if given)
    and ``sample_231`` random θ ∈ Ω(2,3,1) with entries in ``values_231``, drawing ``samples`` fibre points of
    each."""
    t0 = time.monotonic()
    r = _random.Random(seed)
    nets_121: Iterator[Network] = networks_121(values_121)
    if limit_121 is not None:
        nets_121 = itertools.islice(nets_121, limit_121)
    vals = "{" + ", ".join(map(str, values_121)) + "}"
    rows = [_run_family(f"Ω(1,2,1), entries in {vals}", nets_121, samples, r, budget)]
    if sample_231:
        vals2 = "{" + ", ".join(map(str, values_231)) + "}"
        rows.append(
            _run_family(
                f"Ω(2,3,1), {sample_231} random, entries in {vals2}",
                networks_231(sample_231, seed, values_231),
                samples,
                r,
                budget,
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m relusym.census [--sample N] [--seed S] [--samples K] [--json]``: print the census table.
    Exit code 0 when every check passed, 1 otherwise."""
    p = _Parser(prog="relusym census", description="classify the fibres of small networks")
    p.add_argument("--sample", type=_count, default=500, help="random networks of Ω(2,3,1) (default 500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=_count, default=3, help="fibre points drawn per network (default 3)")
    p.add_argument("--limit-121", type=_count, default=None, help="only the first N networks of Ω(1,2,1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    census = run_census(sample_231=args.sample, seed=args.seed, samples=args.samples, limit_121=args.limit_121)
    if args.json:
        print(json.dumps(census.to_dict()))
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
