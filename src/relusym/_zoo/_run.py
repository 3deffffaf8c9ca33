"""Running a zoo job: the work of one chunk (read, digest, width, fibre), its Parquet part, the executors, resuming,
and the final table with exact duplicate groups and near-duplicate clusters."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.progress import progress
from relusym._base.rng import as_generator
from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym._zoo._digest import network_digest, stack_digests
from relusym._zoo._jobs import PartsFolder, execute, write_outputs
from relusym._zoo._sources import Chunk, Item, plan_chunks, read_chunk, skipped_files
from relusym.errors import BudgetExceededError, InvalidNetworkError, UnsupportedModelError

__all__ = ["SCHEMA", "Options", "ZooResult", "run_chunk", "run_job", "COLUMNS"]

SCHEMA = "relusym.zoo/2"
_PROBE_SEED = 0x200_2026

# (name, pyarrow type name, description): the public columns of the table, in order
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("index", "int64", "position of the network in the zoo (files sorted by path, rows in order)"),
    ("source", "string", "file path relative to the zoo's root; 'path#row' for a row of a shard or table"),
    ("status", "string", "'ok', or 'error' when the network could not be read or is invalid"),
    ("error", "string", "the error message (null when ok)"),
    ("m", "int32", "inputs"),
    ("n", "int32", "hidden neurons"),
    ("k", "int32", "outputs"),
    ("digest", "string", "normal-form digest, identical to relusym.normal_form(net).digest()"),
    ("width", "int32", "minimal width (null when undecided within the budget)"),
    ("generic", "string", "'true', 'false' or 'undecided' (null when the fibre was not analysed)"),
    ("fibre_type", "string", "generic / rigid, not generic / finitely many orbits / positive-dimensional / undecided"),
    ("flip_sets", "int32", "number of nonempty verified flip sets found (null when not searched)"),
    ("flips_complete", "bool", "whether the flip sets found are all of them"),
    ("group", "int64", "exact duplicate group: equal for networks computing exactly the same function"),
    ("group_size", "int64", "networks in the exact duplicate group"),
    ("near_cluster", "int64", "near-duplicate cluster (tolerance mode; connected components of verified pairs)"),
)
_PRIVATE = ("_chunk", "_probe", "_nd")


@dataclass(frozen=True)
class Options:
    """What a chunk computes: tolerances of the near-duplicate clusters, whether the fibre is analysed, whether
    with the searches (flip sets, configurations: ``search``, within ``budget`` seconds per network) or only
    what is decided in bounded time per network (the default), and the number of probe points of the
    near-duplicate filter."""

    atol: float = 0.0
    rtol: float = 1e-9
    fibre: bool = True
    budget: float = 1.0
    probes: int = 8
    search: bool = False

    def __post_init__(self) -> None:
        for name in ("atol", "rtol", "budget"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise InvalidNetworkError(f"{name} must be a finite number ≥ 0, got {v!r}")
        if self.probes < 1:
            raise InvalidNetworkError(f"probes must be at least 1, got {self.probes}")


@dataclass(frozen=True)
class ZooResult:
    """A finished zoo job: the table (pyarrow), the summary (a JSON-ready dict) and where they were written."""

    table: Any
    summary: dict[str, Any]
    output: Path | None = None
    summary_path: Path | None = None


# ----------------------------------------------------------------------------------------------------------
# one chunk


def _probe_points(m: int, count: int) -> np.ndarray:
    """Fixed points of the closed unit ball of ℝ^m (the same on every machine)."""
    g = as_generator(_PROBE_SEED + m)
    X = g.standard_normal((count, m))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
    X *= g.random((count, 1)) ** (1.0 / m)
    return X


def _probe_stack(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray, P: int) -> tuple[np.ndarray, np.ndarray]:
    """For each network of a float64 stack: its values at the probe points (flattened P·k) and the scale
    quantities (T = Σ‖v_i‖‖(a_i, b_i)‖, max term, ‖c‖, n, max ‖(a_i, b_i)‖/‖a_i‖) of the near-duplicate filter."""
    B, n, m = A.shape
    X = _probe_points(m, P)
    H = np.maximum(np.einsum("bnm,pm->bnp", A, X) + b[:, :, None], 0.0)
    out = np.einsum("bkn,bnp->bpk", V, H) + c[:, None, :]
    vn = np.linalg.norm(V, axis=1)
    an = np.linalg.norm(A, axis=2)
    terms = vn * np.hypot(an, b)
    wn = np.where(an > 0, np.hypot(an, b) / np.where(an > 0, an, 1.0), 0.0)
    nd = np.stack(
        [
            terms.sum(axis=1),
            terms.max(axis=1, initial=0.0),
            np.linalg.norm(c, axis=1),
            np.full(B, float(n)),
            wn.max(axis=1, initial=0.0),
        ],
        axis=1,
    )
    return out.reshape(B, -1), nd


def _cheap_fibre(net: Network, unmixed: bool | None, class_a: bool | None) -> dict[str, Any]:
    """The fibre columns decided in bounded time per network (no search; docs/math/fibres.md):

    * outside class A (G-a or G-b fails: a dead, null or constant neuron, two proportional rows) θ is not
      generic; when moreover no hyperplane class carries neurons of both orientations (``unmixed``), its own
      configuration has cost 0, w = N < n and the fibre has dimension N + (n − N)δ > 0: "positive-dimensional";
    * in class A, (G-c) holds when the rows vec(v_i a_iᵀ) are certified independent (an n×n minor nonsingular
      modulo a prime, possible when n ≤ km): then θ is generic, its only flip set ∅;
    * everything else (hidden flips possible, mixed classes outside class A) is "undecided" until searched.

    ``unmixed`` and ``class_a`` come from the stack's digests; None: from θ's analysis."""
    from relusym._core.analysis import Analysis

    an = Analysis(net)
    if class_a is None:
        from relusym._fibre.genericity import generic_conditions

        ga, _, gb, _ = generic_conditions(an)
        class_a = ga and gb
    if unmixed is None:
        unmixed = not an.mixed
    if not class_a:
        return {"generic": "false", "fibre_type": "positive-dimensional" if unmixed else "undecided"}
    from relusym._fibre.flips import flips_certified_absent

    if net.n <= net.k * net.m and flips_certified_absent(an):
        return {"generic": "true", "fibre_type": "generic", "flip_sets": 0, "flips_complete": True}
    return {"generic": "undecided", "fibre_type": "undecided"}


def _analyse(net: Network, width: int | None, options: Options, class_a: bool | None = None) -> dict[str, Any]:
    """Width (when it needs the search) and fibre columns of one valid network; ``width`` the digests' width
    (−1: a mixed class; None: unknown) and ``class_a`` whether G-a and G-b hold, when the digests know them."""
    from relusym._fibre.width import minimal_width

    row: dict[str, Any] = {}
    unmixed = None if width is None else width >= 0  # no class carries neurons of both orientations
    if width is None or width < 0:
        try:
            width = minimal_width(net, budget=options.budget, progress=False)
        except BudgetExceededError:
            width = -1
    row["width"] = width if width >= 0 else None
    if options.fibre and not options.search:
        row.update(_cheap_fibre(net, unmixed, class_a))
    elif options.fibre:
        from relusym._fibre.fiber import fiber
        from relusym.census import fibre_category

        fb = fiber(net, budget=options.budget, progress=False)  # the zoo's own bar is the only one
        row["generic"] = {True: "true", False: "false", None: "undecided"}[fb.generic]
        row["fibre_type"] = fibre_category(fb)
        if fb.flips is not None:
            row["flip_sets"] = len([T for T in fb.flips if T])
            row["flips_complete"] = bool(fb.flips_complete)
        if row["width"] is None and fb.width is not None:
            row["width"] = int(fb.width)
    return row


def _deep_row(item: Item, chunk: Chunk, net: MLP) -> dict[str, Any]:
    """A network with two or more hidden layers: n is its number of hidden units, the digest that of its deep
    normal form (equal digests: the same function; the converse may fail, see docs/math/deep.md); width, fibre
    and near-duplicate columns do not apply (null; its near cluster is its exact group)."""
    row: dict[str, Any] = {
        "index": item.index,
        "source": item.source,
        "status": "ok",
        "m": net.m,
        "n": sum(net.hidden_widths),
        "k": net.k,
        "_chunk": chunk.index,
        "_probe": [],
        "_nd": [],
    }
    try:
        from relusym._deep.canonical import deep_normal_form

        row["digest"] = deep_normal_form(net).form.digest()
    except Exception as exc:  # noqa: BLE001 - a failing network is that network's error row
        row.update(status="error", error=f"{type(exc).__name__}: {exc}")
    return row


def _error_row(item: Item, chunk: Chunk, msg: str, shape: tuple[int, int, int] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "index": item.index,
        "source": item.source,
        "status": "error",
        "error": msg,
        "_chunk": chunk.index,
    }
    if shape is not None:
        row["m"], row["n"], row["k"] = shape
    return row


def run_chunk(chunk: Chunk, options: Options) -> Any:
    """The part table of one chunk (public columns without the global ones, plus private columns for the
    near-duplicate search).  Runs in a worker; reads the chunk's data itself; never raises for bad networks."""
    data = read_chunk(chunk)
    rows: list[dict[str, Any]] = []
    for items, V, A, b, c in data.stacks:
        try:
            sd = stack_digests(V, A, b, c)
        except Exception as exc:  # noqa: BLE001 - arrays no network can have: one error row each, not the job's end
            msg = exc.args[0] if isinstance(exc, InvalidNetworkError) and exc.args else f"{type(exc).__name__}: {exc}"
            rows += [_error_row(item, chunk, str(msg)) for item in items]
            continue
        k, n, m = V.shape[1], V.shape[2], A.shape[2]
        good = [t for t in range(len(items)) if sd.digest[t] is not None]
        probes, nd = (
            _probe_stack(
                V[good].astype(np.float64),
                A[good].astype(np.float64),
                b[good].astype(np.float64),
                c[good].astype(np.float64),
                options.probes,
            )
            if good
            else (np.zeros((0, 0)), np.zeros((0, 5)))
        )
        pos = {t: j for j, t in enumerate(good)}
        for t, item in enumerate(items):
            if sd.digest[t] is None:
                rows.append(_error_row(item, chunk, sd.error[t] or "invalid network", (m, n, k)))
                continue
            row = {
                "index": item.index,
                "source": item.source,
                "status": "ok",
                "m": m,
                "n": n,
                "k": k,
                "digest": sd.digest[t],
                "_chunk": chunk.index,
                "_probe": probes[pos[t]].tolist(),
                "_nd": nd[pos[t]].tolist(),
            }
            w = int(sd.width[t])
            if options.fibre or w < 0:
                net = item.net if isinstance(item.net, Network) else Network(V[t], A[t], b[t], c[t])
                try:
                    ca = bool(sd.class_a[t]) if sd.class_a is not None and sd.fast[t] else None
                    row.update(_analyse(net, w, options, ca))
                except Exception as exc:  # noqa: BLE001 - a failing analysis is that network's error, not the job's
                    row.update(status="error", error=f"fibre analysis failed: {type(exc).__name__}: {exc}")
            else:
                row["width"] = w
            rows.append(row)
    for item in data.singles:
        if item.error is not None or item.net is None:
            rows.append(_error_row(item, chunk, item.error or "no network"))
            continue
        if isinstance(item.net, MLP):
            rows.append(_deep_row(item, chunk, item.net))
            continue
        net = item.net
        row = {
            "index": item.index,
            "source": item.source,
            "status": "ok",
            "m": net.m,
            "n": net.n,
            "k": net.k,
            "_chunk": chunk.index,
        }
        try:
            row["digest"] = network_digest(net)
            Vf, Af, bf, cf = net.to_float(np.float64)
            p, q = _probe_stack(Vf[None], Af[None], bf[None], cf[None], options.probes)
            row["_probe"], row["_nd"] = p[0].tolist(), q[0].tolist()
            row.update(_analyse(net, None, options))
        except Exception as exc:  # noqa: BLE001
            row.update(status="error", error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    rows.sort(key=lambda r: r["index"])
    return _part_table(rows)


def _schema(private: bool) -> Any:
    import pyarrow as pa

    types = {"int64": pa.int64(), "int32": pa.int32(), "string": pa.string(), "bool": pa.bool_()}
    fields = [
        pa.field(name, types[t])
        for name, t, _ in COLUMNS
        if name not in ("group", "group_size", "near_cluster") or not private
    ]
    if private:
        fields += [
            pa.field("_chunk", pa.int64()),
            pa.field("_probe", pa.list_(pa.float64())),
            pa.field("_nd", pa.list_(pa.float64())),
        ]
    return pa.schema(fields)


def _part_table(rows: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    schema = _schema(private=True)
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.Table.from_pydict(cols, schema=schema)


# ----------------------------------------------------------------------------------------------------------
# the job


def _fingerprint(chunks: list[Chunk], options: Options) -> str:
    d = {"schema": SCHEMA, "options": asdict(options), "chunks": [c.describe() for c in chunks]}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()


def run_job(
    source: Any,
    output: str | os.PathLike[str] | None = None,
    *,
    options: Options | None = None,
    workers: int | None = None,
    executor: Executor | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    chunk_size: int = 4096,
    files_per_chunk: int = 256,
    resume: bool = False,
    show_progress: bool | None = None,
    on_part: Callable[[int], None] | None = None,
) -> ZooResult:
    """Run a zoo job (see :func:`relusym.zoo.scan_zoo`)."""
    import pyarrow as pa

    options = options or Options()
    chunks = plan_chunks(source, chunk_size=chunk_size, files_per_chunk=files_per_chunk)
    key = _fingerprint(chunks, options)
    out = Path(output) if output is not None else None
    parts: PartsFolder | None = None
    done: set[int] = set()
    if out is not None:
        if not (out.parent if str(out.parent) else Path(".")).is_dir():
            raise InvalidNetworkError(f"cannot write {out}: folder {out.parent} does not exist")
        parts = PartsFolder(out, schema=SCHEMA, fingerprint=key, chunks=len(chunks), resume=resume)
        if resume:
            done = parts.done([c.index for c in chunks])
    total = sum(c.size for c in chunks)
    tables: dict[int, Any] = {}
    todo = [c for c in chunks if c.index not in done]
    try:
        with progress(total=total, desc="zoo", unit="net", enabled=show_progress) as bar:
            bar.update(sum(c.size for c in chunks if c.index in done))
            for t, table in execute(
                run_chunk,
                [(c, options) for c in todo],
                workers=workers,
                executor=executor,
                scheduler=scheduler,
                dask_local=dask_local,
                key=f"zoo-{key[:16]}",
                labels=[c.index for c in todo],
            ):
                chunk = todo[t]
                if parts is not None:
                    parts.write(chunk.index, table)
                else:
                    tables[chunk.index] = table
                bar.update(chunk.size)
                if on_part is not None:
                    on_part(chunk.index)
    except (InvalidNetworkError, UnsupportedModelError):
        # a refusal (exit 2) leaves nothing behind unless finished parts are worth resuming from
        if parts is not None and not parts.done([c.index for c in chunks]):
            parts.remove()
        raise
    done_tables = [parts.read(c.index) for c in chunks] if parts is not None else [tables[c.index] for c in chunks]
    schema = _schema(private=True)
    raw = pa.concat_tables([p.cast(schema) for p in done_tables]) if done_tables else schema.empty_table()
    table, summary = _finish(raw, chunks, options)
    summary["skipped_files"] = skipped_files(source)
    summary_path = write_outputs(table, summary, out, parts) if out is not None else None
    return ZooResult(table, summary, out, summary_path)


# ----------------------------------------------------------------------------------------------------------
# groups, clusters, summary


def _networks_at(chunks: list[Chunk], wanted: dict[int, int]) -> dict[int, Network]:
    """The networks with the given indices (index → chunk), read again from their chunks."""
    by_chunk: dict[int, set[int]] = {}
    for idx, ch in wanted.items():
        by_chunk.setdefault(ch, set()).add(idx)
    out: dict[int, Network] = {}
    for ch, idxs in by_chunk.items():
        data = read_chunk(chunks[ch])
        for items, V, A, b, c in data.stacks:
            for t, item in enumerate(items):
                if item.index in idxs:
                    out[item.index] = item.net if isinstance(item.net, Network) else Network(V[t], A[t], b[t], c[t])
        for item in data.singles:
            if item.index in idxs and isinstance(item.net, Network):
                out[item.index] = item.net
    return out


def _near_pairs(
    idx: np.ndarray,
    probes: np.ndarray,
    nd: np.ndarray,
    m: int,
    options: Options,
    chunk_of: dict[int, int],
    chunks: list[Chunk],
) -> list[tuple[int, int]]:
    """Pairs of distinct-digest networks of one shape that ``equivalent_approx`` accepts.

    Candidates come from the values at the probe points: for two networks accepted within (atol, rtol), the
    difference of their functions on the unit ball is at most
    √2·(n₁+n₂)·τ_κ·W + √2·(n₁+n₂)·τ_w·(T₁+T₂) + 2·τ_aff (each cluster's kink and the affine part are within
    their tolerances τ_κ, τ_aff; each neuron's hyperplane lies within (n₁+n₂)·τ_w of its cluster's first one),
    so no accepted pair is further apart than that bound (times √P) in probe space; every candidate is then
    decided by ``equivalent_approx`` itself."""
    from scipy.spatial import cKDTree

    from relusym._tolerance.approx import equivalent_approx, project, projector

    if len(idx) < 2 or (options.atol == 0 and options.rtol == 0):
        return []
    T, tmax, cn, n, wmax = (float(nd[:, j].max()) for j in range(5))
    atol, rtol = options.atol, options.rtol
    tol_kink = atol + rtol * max(cn, tmax)
    tol_aff = atol + rtol * 2 * (cn + T)
    tol_w = atol + rtol * wmax
    bound = math.sqrt(2) * 2 * n * (tol_kink * wmax + tol_w * 2 * T) + 2 * tol_aff
    P = probes.shape[1]
    slack = 1e-12 * (n + m + 2) * (cn + T + 1.0)
    radius = math.sqrt(P) * (bound + slack)
    Q = projector(P)
    tree = cKDTree(project(probes, Q))
    cand = tree.query_pairs(radius, output_type="ndarray")
    if len(cand):
        d = np.linalg.norm(probes[cand[:, 0]] - probes[cand[:, 1]], axis=1)
        cand = cand[d <= radius]
    if not len(cand):
        return []
    need = {int(idx[i]): chunk_of[int(idx[i])] for i in np.unique(cand).tolist()}
    nets = _networks_at(chunks, need)
    pairs = []
    for i, j in cand.tolist():
        a, b = int(idx[i]), int(idx[j])
        if a in nets and b in nets and equivalent_approx(nets[a], nets[b], atol=atol, rtol=rtol):
            pairs.append((min(a, b), max(a, b)))
    return sorted(pairs)


def _finish(raw: Any, chunks: list[Chunk], options: Options) -> tuple[Any, dict[str, Any]]:
    import pyarrow as pa

    from relusym.census import CATEGORIES

    raw = raw.sort_by("index")
    d = raw.to_pydict()
    N = len(d["index"])
    ok = [s == "ok" for s in d["status"]]
    group: list[int | None] = [None] * N
    first_of: dict[str, int] = {}
    members: dict[str, list[int]] = {}
    for r in range(N):
        if ok[r]:
            dg = d["digest"][r]
            first_of.setdefault(dg, len(first_of))
            members.setdefault(dg, []).append(r)
            group[r] = first_of[dg]
    size = [len(members[d["digest"][r]]) if ok[r] else None for r in range(N)]
    # near-duplicate clusters: union-find over exact groups and verified pairs of group representatives
    parent = list(range(len(first_of)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    reps = {dg: rows[0] for dg, rows in members.items()}
    by_shape: dict[tuple[int, int], list[int]] = {}
    for _, r in reps.items():
        if d["_probe"][r]:  # deep networks have no probes: they join no near-duplicate cluster
            by_shape.setdefault((d["m"][r], d["k"][r]), []).append(r)
    chunk_of = {int(d["index"][r]): int(d["_chunk"][r]) for r in reps.values()}
    row_of_index = {int(d["index"][r]): r for r in reps.values()}
    for (m, _k), rows in sorted(by_shape.items()):
        idx = np.array([d["index"][r] for r in rows], dtype=np.int64)
        probes = np.array([d["_probe"][r] for r in rows], dtype=np.float64)
        nd = np.array([d["_nd"][r] for r in rows], dtype=np.float64)
        for a, b in _near_pairs(idx, probes, nd, m, options, chunk_of, chunks):
            ga, gb = find(group[row_of_index[a]]), find(group[row_of_index[b]])  # type: ignore[arg-type]
            if ga != gb:
                parent[max(ga, gb)] = min(ga, gb)
    roots = sorted({find(g) for g in range(len(first_of))})
    cluster_id = {r: i for i, r in enumerate(roots)}
    near = [cluster_id[find(g)] if g is not None else None for g in group]
    cols = {name: d[name] for name, _, _ in COLUMNS if name in d}
    cols["group"], cols["group_size"], cols["near_cluster"] = group, size, near
    meta = {
        "schema": SCHEMA,
        "atol": repr(float(options.atol)),
        "rtol": repr(float(options.rtol)),
        "fibre": str(bool(options.fibre)).lower(),
        "fibre_search": str(bool(options.search)).lower(),
        "budget": repr(float(options.budget)),
    }
    schema = _schema(private=False).with_metadata({k: v.encode() for k, v in meta.items()})
    table = pa.Table.from_pydict(cols, schema=schema)
    # summary
    exact = [
        {"group": first_of[dg], "digest": dg, "size": len(rows), "sources": [d["source"][r] for r in rows]}
        for dg, rows in members.items()
        if len(rows) > 1
    ]
    clusters: dict[int, list[int]] = {}
    for r in range(N):
        if near[r] is not None:
            clusters.setdefault(near[r], []).append(r)  # type: ignore[arg-type]
    near_groups = [
        {
            "cluster": cid,
            "size": len(rows),
            "distinct_digests": len({d["digest"][r] for r in rows}),
            "sources": [d["source"][r] for r in rows],
        }
        for cid, rows in sorted(clusters.items())
        if len({d["digest"][r] for r in rows}) > 1
    ]
    fib: dict[str, int] = {}
    gen: dict[str, int] = {}
    widths: dict[str, int] = {}
    for r in range(N):
        if not ok[r]:
            continue
        if d["fibre_type"][r] is not None:
            fib[d["fibre_type"][r]] = fib.get(d["fibre_type"][r], 0) + 1
        if d["generic"][r] is not None:
            gen[d["generic"][r]] = gen.get(d["generic"][r], 0) + 1
        w = "undecided" if d["width"][r] is None else str(d["width"][r])
        widths[w] = widths.get(w, 0) + 1
    summary = {
        "schema": SCHEMA,
        "networks": N,
        "ok": sum(ok),
        "errors": N - sum(ok),
        "distinct_functions": len(first_of),
        "tolerance": {"atol": float(options.atol), "rtol": float(options.rtol)},
        "exact_duplicate_groups": exact,
        "near_duplicate_groups": near_groups,
        "fibre_types": {c: fib[c] for c in CATEGORIES if c in fib} if options.fibre else None,
        "generic": {g: gen[g] for g in ("true", "false", "undecided") if g in gen} if options.fibre else None,
        "fibre_search": bool(options.search) if options.fibre else None,
        "undecided_rate": (
            {
                "generic": gen.get("undecided", 0) / max(1, sum(gen.values())),
                "fibre_type": fib.get("undecided", 0) / max(1, sum(fib.values())),
                "width": widths.get("undecided", 0) / max(1, sum(widths.values())),
            }
            if options.fibre
            else None
        ),
        "widths": dict(sorted(widths.items(), key=lambda t: (t[0] == "undecided", int(t[0]) if t[0].isdigit() else 0))),
        "error_rows": [{"source": d["source"][r], "error": d["error"][r]} for r in range(N) if not ok[r]],
    }
    return table, summary
