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


_CERTIFY_MAX_N = 64  # the certificate of no hidden flips in the default fibre column: an n×n LU modulo p, n ≤ 64


def _certifiable(m: int, n: int, k: int) -> bool:
    """Whether the default fibre column certifies the absence of hidden flips (an n×n minor of the flip matrix
    modulo a prime): possible when n ≤ km, and cheap beside the digest when n ≤ 64 (larger n: on request)."""
    return n <= k * m and n <= _CERTIFY_MAX_N


def _cheap_fibre(net: Network, unmixed: bool | None, class_a: bool | None) -> dict[str, Any]:
    """The fibre columns decided in bounded time per network (no search; docs/math/fibres.md):

    * outside class A (G-a or G-b fails: a dead, null or constant neuron, two proportional rows) θ is not
      generic; when moreover no hyperplane class carries neurons of both orientations (``unmixed``), its own
      configuration has cost 0, w = N < n and the fibre has dimension N + (n − N)δ > 0: "positive-dimensional";
    * in class A, (G-c) holds when the rows vec(v_i a_iᵀ) are certified independent (an n×n minor nonsingular
      modulo a prime, possible when n ≤ km; tried when n ≤ 64, :func:`_certifiable`): then θ is generic, its
      only flip set ∅;
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

    if _certifiable(net.m, net.n, net.k) and flips_certified_absent(an):
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
        from relusym._zoo._categories import fibre_category

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
    parts: list[Any] = []
    for items, V, A, b, c in data.stacks:
        try:
            sd = stack_digests(V, A, b, c)
        except Exception as exc:  # noqa: BLE001 - arrays no network can have: one error row each, not the job's end
            msg = exc.args[0] if isinstance(exc, InvalidNetworkError) and exc.args else f"{type(exc).__name__}: {exc}"
            rows += [_error_row(item, chunk, str(msg)) for item in items]
            continue
        parts.append(_stack_part(items, chunk, sd, (V, A, b, c), options))
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
    import pyarrow as pa

    table = pa.concat_tables([*parts, _part_table(rows)]) if parts else _part_table(rows)
    return table.sort_by("index") if len(parts) + bool(rows) > 1 else table


def _stack_part(items: list[Item], chunk: Chunk, sd: Any, arrays: tuple[np.ndarray, ...], options: Options) -> Any:
    """The part table of the networks of one stack, column by column: digests, widths and (by default) the
    fibre columns come vectorized from :func:`stack_digests`; only the networks that need more (a width search
    for a mixed class, the certificate of no hidden flips in class A when n ≤ km, the fibre searches on
    request, a network outside the vectorized path) are analysed one by one."""
    import pyarrow as pa

    V, A, b, c = arrays
    B = len(items)
    k, n, m = V.shape[1], V.shape[2], A.shape[2]
    ok = np.array([d is not None for d in sd.digest], dtype=bool)
    good = np.nonzero(ok)[0]
    P = options.probes
    if good.size:
        f64 = [x[good].astype(np.float64) for x in (V, A, b, c)]
        probes, nd = _probe_stack(f64[0], f64[1], f64[2], f64[3], P)
    else:
        probes, nd = np.zeros((0, P * k)), np.zeros((0, 5))
    status: list[str] = ["ok" if x else "error" for x in ok.tolist()]
    error: list[str | None] = [None if x else (sd.error[t] or "invalid network") for t, x in enumerate(ok.tolist())]
    width = np.where(ok, sd.width, -1)
    generic: list[str | None] = [None] * B
    ftype: list[str | None] = [None] * B
    flips: list[int | None] = [None] * B
    complete: list[bool | None] = [None] * B
    fast = np.asarray(sd.fast, dtype=bool)
    class_a = np.asarray(sd.class_a, dtype=bool) if sd.class_a is not None else np.zeros(B, dtype=bool)
    need = ok & (width < 0)
    if options.fibre and not options.search:
        certify = _certifiable(m, n, k)
        need |= ok & (~fast | (class_a & certify))
        for t in np.nonzero(ok & fast & ~need)[0].tolist():  # decided by the digests alone
            if class_a[t]:
                generic[t], ftype[t] = "undecided", "undecided"
            else:
                generic[t], ftype[t] = "false", "positive-dimensional"
    elif options.fibre:
        need |= ok
    for t in np.nonzero(need)[0].tolist():
        item = items[t]
        net = item.net if isinstance(item.net, Network) else Network(V[t], A[t], b[t], c[t])
        try:
            res = _analyse(net, int(sd.width[t]) if fast[t] else None, options, bool(class_a[t]) if fast[t] else None)
        except Exception as exc:  # noqa: BLE001 - a failing analysis is that network's error, not the job's
            status[t], error[t] = "error", f"fibre analysis failed: {type(exc).__name__}: {exc}"
            continue
        width[t] = res["width"] if res.get("width") is not None else -1
        generic[t], ftype[t] = res.get("generic"), res.get("fibre_type")
        flips[t], complete[t] = res.get("flip_sets"), res.get("flips_complete")
    lengths = np.zeros(B, dtype=np.int32)
    lengths[good] = P * k
    offsets = np.zeros(B + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    nd_off = np.zeros(B + 1, dtype=np.int32)
    np.cumsum(np.where(ok, 5, 0).astype(np.int32), out=nd_off[1:])
    null = pa.array(~ok)
    schema = _schema(private=True)
    cols = {
        "index": pa.array([it.index for it in items], type=pa.int64()),
        "source": pa.array([it.source for it in items], type=pa.string()),
        "status": pa.array(status, type=pa.string()),
        "error": pa.array(error, type=pa.string()),
        "m": pa.array(np.full(B, m, dtype=np.int32)),
        "n": pa.array(np.full(B, n, dtype=np.int32)),
        "k": pa.array(np.full(B, k, dtype=np.int32)),
        "digest": pa.array(sd.digest, type=pa.string()),
        "width": pa.array(width.astype(np.int32), mask=width < 0),
        "generic": pa.array(generic, type=pa.string()),
        "fibre_type": pa.array(ftype, type=pa.string()),
        "flip_sets": pa.array(flips, type=pa.int32()),
        "flips_complete": pa.array(complete, type=pa.bool_()),
        "_chunk": pa.array(np.full(B, chunk.index, dtype=np.int64)),
        "_probe": pa.ListArray.from_arrays(pa.array(offsets), pa.array(probes.ravel()), mask=null),
        "_nd": pa.ListArray.from_arrays(pa.array(nd_off), pa.array(nd.ravel()), mask=null),
    }
    return pa.Table.from_pydict(cols, schema=schema)


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
    chunk_size: int | None = None,
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
    chunk_of: np.ndarray,
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
    need = {int(idx[i]): int(chunk_of[i]) for i in np.unique(cand).tolist()}
    nets = _networks_at(chunks, need)
    pairs = []
    for i, j in cand.tolist():
        a, b = int(idx[i]), int(idx[j])
        if a in nets and b in nets and equivalent_approx(nets[a], nets[b], atol=atol, rtol=rtol):
            pairs.append((min(a, b), max(a, b)))
    return sorted(pairs)


def _finish(raw: Any, chunks: list[Chunk], options: Options) -> tuple[Any, dict[str, Any]]:
    """The table (public columns, with the exact groups and near clusters) and the summary, column by column:
    groups are the digests' codes in order of first appearance (rows by index), near clusters the connected
    components of the groups joined by verified near pairs, numbered by their smallest group."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from relusym._zoo._categories import CATEGORIES

    raw = raw.sort_by("index").combine_chunks()
    N = raw.num_rows
    ok = np.asarray(pc.fill_null(pc.equal(raw["status"], "ok"), False).to_numpy(zero_copy_only=False), dtype=bool)
    okmask = pa.array(ok)
    digests = pc.if_else(okmask, raw["digest"], pa.scalar(None, pa.string())).combine_chunks()
    enc = pc.dictionary_encode(digests)
    codes = enc.indices.to_numpy(zero_copy_only=False)
    group = np.where(ok, np.nan_to_num(codes, nan=-1), -1).astype(np.int64)
    G = len(enc.dictionary)
    counts = np.bincount(group[ok], minlength=G)
    size = np.where(ok, counts[np.maximum(group, 0)] if G else 0, 0)
    okrows = np.nonzero(ok)[0]
    rep = np.zeros(G, dtype=np.int64)
    if G:
        _, first_pos = np.unique(group[okrows], return_index=True)
        rep = okrows[first_pos]
    index = raw["index"].to_numpy()
    # near-duplicate clusters: union-find over the groups, joined by verified pairs of their representatives
    parent = np.arange(G)
    probe_len = pc.list_value_length(raw["_probe"]).to_numpy(zero_copy_only=False)
    with_probe = rep[np.nan_to_num(probe_len[rep], nan=0) > 0] if G else rep
    ms, ks = raw["m"].to_numpy(zero_copy_only=False), raw["k"].to_numpy(zero_copy_only=False)
    chunk_col = raw["_chunk"].to_numpy()
    pairs: list[tuple[int, int]] = []
    if with_probe.size >= 2 and (options.atol != 0 or options.rtol != 0):
        shapes = np.stack([ms[with_probe], ks[with_probe]], axis=1)
        kinds, inv = np.unique(shapes, axis=0, return_inverse=True)
        row_of_index = {}
        for j, (m, _k) in enumerate(kinds.tolist()):
            rows = with_probe[inv.reshape(-1) == j]
            if rows.size < 2:
                continue
            probes = np.stack(raw["_probe"].take(pa.array(rows)).to_numpy(zero_copy_only=False))
            nd = np.stack(raw["_nd"].take(pa.array(rows)).to_numpy(zero_copy_only=False))
            found = _near_pairs(index[rows], probes, nd, int(m), options, chunk_col[rows], chunks)
            if found:
                row_of_index.update({int(index[r]): int(r) for r in rows})
                pairs += [(row_of_index[a_], row_of_index[b_]) for a_, b_ in found]
    for ra, rb in pairs:
        ga, gb = _root(parent, int(group[ra])), _root(parent, int(group[rb]))
        if ga != gb:
            parent[max(ga, gb)] = min(ga, gb)
    while G and not np.array_equal(parent, parent[parent]):
        parent = parent[parent]
    roots, cluster_of_group = np.unique(parent, return_inverse=True)
    near = np.where(ok, cluster_of_group.reshape(-1)[np.maximum(group, 0)] if G else 0, -1)
    public = [name for name, _, _ in COLUMNS if name not in ("group", "group_size", "near_cluster")]
    cols = {name: raw[name] for name in public}
    nok = pa.array(~ok)
    cols["group"] = pa.array(group, type=pa.int64(), mask=~ok)
    cols["group_size"] = pa.array(size.astype(np.int64), type=pa.int64(), mask=~ok)
    cols["near_cluster"] = pa.array(near.astype(np.int64), type=pa.int64(), mask=nok.to_numpy(zero_copy_only=False))
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
    source = raw["source"]
    multi = np.nonzero(counts > 1)[0]
    exact = []
    if multi.size:
        by_group = okrows[np.argsort(group[okrows], kind="stable")]
        starts = np.concatenate([[0], np.cumsum(counts)])
        dict_py = enc.dictionary
        for g in multi.tolist():
            rows = by_group[starts[g] : starts[g + 1]]
            exact.append(
                {
                    "group": g,
                    "digest": dict_py[g].as_py(),
                    "size": int(counts[g]),
                    "sources": source.take(pa.array(rows)).to_pylist(),
                }
            )
    near_groups = []
    if pairs:
        n_groups = np.bincount(cluster_of_group.reshape(-1), minlength=roots.size)
        for cid in np.nonzero(n_groups > 1)[0].tolist():
            rows = np.nonzero(near == cid)[0]
            near_groups.append(
                {
                    "cluster": cid,
                    "size": int(rows.size),
                    "distinct_digests": int(n_groups[cid]),
                    "sources": source.take(pa.array(rows)).to_pylist(),
                }
            )
    okt = raw.filter(okmask)

    def counted(col: str) -> dict[str, int]:
        vc = pc.value_counts(okt[col].combine_chunks().drop_null()).to_pylist() if okt.num_rows else []
        return {x["values"]: int(x["counts"]) for x in vc}

    fib, gen = counted("fibre_type"), counted("generic")
    wcol = okt["width"].to_numpy(zero_copy_only=False) if okt.num_rows else np.zeros(0)
    decided = wcol[~np.isnan(wcol)].astype(np.int64) if wcol.size else np.zeros(0, dtype=np.int64)
    wv, wc = np.unique(decided, return_counts=True)
    widths = {str(w): int(c) for w, c in zip(wv.tolist(), wc.tolist(), strict=True)}
    if int(np.isnan(wcol).sum()) if wcol.size else 0:
        widths["undecided"] = int(np.isnan(wcol).sum())
    bad = np.nonzero(~ok)[0]
    err_src = source.take(pa.array(bad)).to_pylist()
    err_msg = raw["error"].take(pa.array(bad)).to_pylist()
    summary = {
        "schema": SCHEMA,
        "networks": N,
        "ok": int(ok.sum()),
        "errors": int(N - ok.sum()),
        "distinct_functions": G,
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
        "widths": widths,
        "error_rows": [{"source": s_, "error": e_} for s_, e_ in zip(err_src, err_msg, strict=True)],
    }
    return table, summary


def _root(parent: np.ndarray, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = int(parent[x])
    return x
