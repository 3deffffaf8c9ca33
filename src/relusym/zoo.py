"""Model zoos at scale: normal-form digests, exact duplicate groups, near-duplicate clusters, minimal widths and
fibre types of many networks, as one resumable batch job on a laptop or on a Dask cluster.

>>> from relusym.zoo import scan_zoo                                   # doctest: +SKIP
>>> res = scan_zoo("checkpoints/", "zoo.parquet", workers=4)           # doctest: +SKIP
>>> res.summary["exact_duplicate_groups"]                              # doctest: +SKIP

**Stores** (``source``): a folder (walked recursively; model files in any format :func:`relusym.load` reads,
stacked shards and Parquet tables may be mixed), a stacked shard (``.npz`` or ``.safetensors`` holding ``V``
B×k×n, ``A`` B×n×m, ``b`` B×n and ``c`` B×k), a Parquet zoo table (one row per network: integer columns ``m``,
``n``, ``k`` and either list columns ``V``, ``A``, ``b``, ``c``, each flattened row-major, or one list column
``weights`` = V, A, b, c flattened and concatenated), a folder of such tables or a ``pyarrow.dataset.Dataset``,
or an iterable of :class:`relusym.Network` (or ``(name, Network)`` pairs).

**Output**: one Parquet table, one row per network, with the columns of :data:`COLUMNS` (schema
``relusym.zoo/2``, recorded in the file's metadata together with the tolerances), and a summary (a JSON-ready
dict, also written beside the table as ``<name>.summary.json``): exact duplicate groups, near-duplicate groups
with the tolerance used, counts by fibre type, generic/not/undecided, widths, and every error row.

* ``digest`` is exactly ``relusym.normal_form(net).digest()``: two networks have the same digest iff they compute
  the same function (whatever their widths: permuted, rescaled, flipped by a hidden symmetry, padded with dead
  neurons or with split neurons).  Stacks of equal-shape float32 networks are digested vectorized; everything
  else goes through ``normal_form`` itself.
* ``near_cluster`` joins networks accepted by :func:`relusym.equivalent_approx` with the given ``atol``/``rtol``
  (connected components: tolerance equality is not transitive).  Candidate pairs are found from the networks'
  values at fixed probe points, with a radius that no accepted pair can exceed, then decided by
  ``equivalent_approx``.
* ``width`` is the minimal width: without search whenever no hyperplane class carries neurons of both
  orientations, else :func:`relusym.minimal_width` with ``budget`` seconds per network.
* ``generic``, ``fibre_type``, ``flip_sets``: by default only what is decided in bounded time per network
  (genericity's conditions G-a and G-b from the digests' classes: dead, null, constant and duplicate neurons;
  outside class A without mixed classes a positive-dimensional fibre; in class A the absence of hidden flips
  when an n×n minor of the flip matrix is nonsingular modulo a prime, possible when n ≤ km, tried when
  n ≤ 64), the rest
  "undecided"; ``fibre_search=True`` runs :func:`relusym.fiber` with its searches (flip sets, configurations)
  within ``budget`` seconds per network; ``fibre=False`` skips these columns.  The summary reports the
  undecided rate of each column.  Results that hit the budget are "undecided"; only they can depend on the
  machine's speed.

**Executors**: serial (default), a process pool (``workers=N``), any ``concurrent.futures.Executor``
(``executor=``), an existing ``dask.distributed`` scheduler (``scheduler="tcp://host:8786"``) or a local Dask
cluster on 127.0.0.1 (``dask_local=N``).  Tasks are chunk descriptions (file lists, row ranges); workers read the
data themselves, so they need the same file system paths (and relusym installed).  On a folder of more than 2,048
``.npz``/``.safetensors`` files, finding which of them are stacked shards (one header read per file) runs on the
pool, executor or scheduler too (a local Dask cluster starts after it, so it runs in the client there).  The
table does not depend on the executor.

**Resuming**: with ``output``, every finished chunk is written atomically as a part (an Arrow IPC file) in
``<output>.parts/``; ``resume=True`` skips the parts already there (of the same job: same source files and
options), so a job killed at any point and restarted ends with exactly the same table.  The parts are removed
once the table is written.  A network that cannot be read or is invalid becomes a row with ``status = "error"``
and its message; it never stops the job.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from typing import Any

from relusym._zoo._run import COLUMNS, SCHEMA, Options, ZooResult, run_job

__all__ = ["SCHEMA", "COLUMNS", "ZooResult", "scan_zoo", "read_zoo_table"]


def scan_zoo(
    source: Any,
    output: str | os.PathLike[str] | None = None,
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    atol: float = 0.0,
    rtol: float = 1e-9,
    fibre: bool = True,
    fibre_search: bool = False,
    budget: float = 1.0,
    chunk_size: int | None = None,
    files_per_chunk: int | None = None,
    resume: bool = False,
    progress: bool | None = None,
) -> ZooResult:
    """Analyse every network of a zoo (see the module docstring) and return the table and its summary.

    ``chunk_size`` networks per task for shards and tables (None: about 2^24 weights per task for a shard, at
    most 1/16 of its rows, a multiple of 12 tasks; 4096 rows for a table), ``files_per_chunk`` files per task for
    folders of model files (None: at most 1024, at least 16 tasks, a multiple of 12 tasks).  ``progress``: None
    shows a bar when stderr is a terminal, False never."""
    opts = Options(
        atol=float(atol), rtol=float(rtol), fibre=bool(fibre), budget=float(budget), search=bool(fibre_search)
    )
    return run_job(
        source,
        output,
        options=opts,
        workers=workers,
        executor=executor,
        scheduler=scheduler,
        dask_local=dask_local,
        chunk_size=chunk_size,
        files_per_chunk=files_per_chunk,
        resume=resume,
        progress=progress,
    )


def read_zoo_table(path: str | os.PathLike[str]) -> Any:
    """Read a zoo table written by :func:`scan_zoo`, checking its schema version."""
    import pyarrow.parquet as pq

    from relusym.errors import InvalidNetworkError

    table = pq.read_table(str(path))
    meta = table.schema.metadata or {}
    if meta.get(b"schema") != SCHEMA.encode():
        raise InvalidNetworkError(f"{path} is not a {SCHEMA} table (schema metadata {meta.get(b'schema')!r})")
    return table
