"""The census table against what a user would otherwise write: a loop calling ``relusym.fiber`` on every network.

Both classify the same networks: every network of a grid (default Ω(1,2,1) with entries in {-1, 0, 1, 2}, 4^7 =
16,384 networks).  The table path computes an exact integer key per network (vectorized), runs ``fiber`` once per
distinct function and spreads its answer; the loop runs ``fiber`` on each network (with ``--loop N`` on N
random networks of the grid, for grids too large to loop over).  The benchmark checks that the two agree on
every network the loop classified and prints networks per second and the ratio, measured in one run (the machine's
load matters: compare the ratio, not the seconds).

    python benchmarks/bench_census.py
    python benchmarks/bench_census.py --shape 1,3,1 --values=-1,0,1,2 --loop 3000   # the 4^10 grid
    python benchmarks/bench_census.py --parallel 8   # also serial / 2 pool workers / Dask clusters of 2 workers

With ``--parallel C`` the same table is also written serially, on a process pool of 2, on relusym's own local
Dask cluster of 2 workers (``dask_local=2``: Dask's import and the cluster's start included) and on the scheduler
of a real Dask ``LocalCluster`` of 2 workers on 127.0.0.1 started before, with Dask's default settings (a cluster
user's: its start-up timed apart; its first job, whose workers import relusym, and a second one), in C chunks, and
the five files are compared byte for byte; wall times, ratios and the load beside each.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402

from relusym import fiber  # noqa: E402
from relusym.census import CensusSpec, census_network, fibre_fields, run_census_table  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="1,2,1")
    p.add_argument("--values", default="-1,0,1,2")
    p.add_argument("--loop", type=int, default=None, help="time the loop on N random networks of the grid only")
    p.add_argument("--parallel", type=int, default=0, metavar="C", help="also serial vs parallel, in C chunks")
    a = p.parse_args()
    m, n, k = (int(x) for x in a.shape.split(","))
    spec = CensusSpec((m, n, k), tuple(int(x) for x in a.values.split(",")), check_every=0)
    t0 = time.perf_counter()
    res = run_census_table(spec, progress=False)
    t_table = time.perf_counter() - t0
    rows = res.table.to_pydict()
    count = spec.total if a.loop is None else min(a.loop, spec.total)
    rng = np.random.default_rng(0)
    chosen = range(count) if count == spec.total else sorted(rng.choice(spec.total, count, replace=False).tolist())
    t0 = time.perf_counter()
    loop = [fibre_fields(fiber(census_network(spec, i), budget=spec.budget)) for i in chosen]
    t_loop = time.perf_counter() - t0
    cols = ("fibre_type", "width", "dimension", "flip_sets", "orbits")
    table = [tuple(rows[c][i] for c in cols) for i in chosen]
    assert table == loop, "the table and the loop over fiber disagree"
    r_table, r_loop = spec.total / t_table, count / t_loop
    print(f"{spec.label()}: {spec.total} networks, {res.summary['distinct_functions']} distinct functions")
    print(f"census table (vectorized keys, fiber per function): {r_table:10.0f} networks/s ({t_table:.1f} s)")
    print(f"loop over fiber(net) on {count} networks:{'':9s}{r_loop:10.0f} networks/s ({t_loop:.1f} s)")
    print(f"ratio: {r_table / r_loop:.1f}x; the two agree on all {count} networks (load {os.getloadavg()[0]:.1f})")
    if a.parallel:
        parallel(dataclasses.replace(spec, chunk_size=max(1, -(-spec.total // a.parallel))))


def parallel(spec: CensusSpec) -> None:
    from relusym.census import _table

    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        times: dict[str, tuple[float, float]] = {}

        def timed(name: str, **kw: object) -> None:
            _table._FIBRES.clear()  # the per-process memo of fibres by function: each run starts cold
            t0 = time.perf_counter()
            run_census_table(spec, out / f"{name}.parquet", progress=False, **kw)
            times[name] = (time.perf_counter() - t0, os.getloadavg()[0])

        timed("serial")
        timed("pool", workers=2)
        timed("local", dask_local=2)  # relusym's own cluster: Dask's import and the cluster's start included
        from distributed import LocalCluster

        t0 = time.perf_counter()
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)
        start = time.perf_counter() - t0
        try:  # a cluster user's: started before, default settings, first job and a second one
            timed("first", scheduler=cluster.scheduler_address)
            timed("second", scheduler=cluster.scheduler_address)
        finally:
            cluster.close()
        same = len({(out / f"{x}.parquet").read_bytes() for x in times}) == 1
    s_ = times["serial"][0]

    def cell(name: str) -> str:
        return f"{times[name][0]:.1f} s, {s_ / times[name][0]:.2f}× (load {times[name][1]:.1f})"

    print(
        "\n| census table | serial | process pool, 2 workers | `dask_local=2` (Dask's import and start included) | "
        f"scheduler of a LocalCluster of 2 (started in {start:.1f} s): first job | second job | tables |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {spec.label()}, {spec.chunks} chunks | {s_:.1f} s (load {times['serial'][1]:.1f}) | {cell('pool')} | "
        f"{cell('local')} | {cell('first')} | {cell('second')} | {'identical' if same else 'DIFFER'} |"
    )


if __name__ == "__main__":
    main()
