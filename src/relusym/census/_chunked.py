"""The census on executors: chunks of a family (row ranges of its enumeration) run where they are scheduled, tallies
merged in chunk order (the same rows as the serial census)."""

from __future__ import annotations

import itertools
import json
import random as _random
from collections.abc import Iterator, Sequence
from typing import Any

from relusym._base.deadline import Stopwatch
from relusym._core.network import Network
from relusym._exact import linalg as linalg
from relusym._zoo._categories import CATEGORIES
from relusym.census._families import Census, CensusRow, networks_121, networks_231, run_family

__all__ = ["census_chunk", "run_census_chunked"]


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
    row = run_family(kind, _family_networks(kind, params, start, stop), samples, r, budget)
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
    from relusym._base.progress import progress_bar

    clock = Stopwatch()
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
    with progress_bar(total=sum(f[3] for f in fams), desc="census", unit="net", progress=progress) as bar:
        for t, res in _run_tasks(tasks, samples, seed, budget, workers, executor, scheduler, dask_local):
            results[t] = res
            bar.update(tasks[t][4] - tasks[t][3])
    rows = []
    for fi, (_, family, _, _) in enumerate(fams):
        rows.append(_merge(family, [results[t] for t, task in enumerate(tasks) if task[0] == fi]))
    return Census(tuple(rows), clock.elapsed())


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
