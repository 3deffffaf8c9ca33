"""The census table: one row per network of a grid or a sample, as a resumable job (docs/census.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from relusym._base.limits import check_budget
from relusym._base.progress import progress_bar
from relusym._core.network import Network
from relusym._core.normal_form import normal_form
from relusym._exact import linalg as linalg
from relusym._fibre.fiber import Fiber, fiber
from relusym._zoo._categories import CATEGORIES, fibre_category

__all__ = [
    "DISTRIBUTIONS",
    "TABLE_COLUMNS",
    "TABLE_SCHEMA",
    "CensusSpec",
    "CensusTable",
    "census_entries",
    "census_fibres",
    "census_network",
    "census_part",
    "census_table_text",
    "chunk_functions",
    "fibre_fields",
    "function_keys",
    "integer_function_keys",
    "read_census_table",
    "run_census_table",
]


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
        check_budget(self.budget, positive=True)
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
    return fibre_category(fb), fb.width, fb.dimension, flips, fb.orbits


def function_keys(spec: CensusSpec, num: Any, den: Any) -> list[bytes]:
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


def census_part(spec: CensusSpec, chunk: int, known: dict[bytes, Fields] | None = None) -> Any:
    """The part (a pyarrow table) of chunk ``chunk``: networks chunk·C .. (chunk + 1)·C − 1 of the census.

    The fibre ρ⁻¹(ρ(θ)) ⊂ Ω(m, n, k) is determined by the function ρ(θ) alone, and so is everything a row
    reports: whether θ is generic (then the fibre is the free orbit H_n·θ and every point of it is generic),
    rigid, of class A, the orbits, the width, the dimension and the number of flip sets (the flip sets of
    h·flip_T(θ) are those of θ moved by h and T).  So :func:`relusym.fiber` runs once per distinct function —
    on the first network of the chunk that computes it, unless this process met the function before — and its
    answer is that of every network computing it.  The networks whose index is a multiple of ``check_every``
    are classified again by ``fiber`` on themselves (``check``: ``agrees`` or ``differs``).  ``known``: the
    fields of the chunk's functions, computed before (a parallel census: :mod:`relusym.census._spread`)."""
    import numpy as np
    import pyarrow as pa

    start = chunk * spec.chunk_size
    stop = min(spec.total, start + spec.chunk_size)
    num, den = census_entries(spec, start, stop)
    keys = function_keys(spec, num, den)
    first: dict[bytes, int] = {}
    for t, key in enumerate(keys):
        first.setdefault(key, t)
    found: dict[bytes, Fields] = dict(known) if known is not None else {}
    for key, t in first.items():
        if key in found:
            continue
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


def chunk_functions(spec: CensusSpec, chunk: int) -> dict[bytes, int]:
    """(a task) The distinct functions of chunk ``chunk`` of the census ``spec``: each one's key and the index of
    the first network of the chunk that computes it."""
    start = chunk * spec.chunk_size
    stop = min(spec.total, start + spec.chunk_size)
    num, den = census_entries(spec, start, stop)
    first: dict[bytes, int] = {}
    for t, key in enumerate(function_keys(spec, num, den)):
        first.setdefault(key, start + t)
    return first


def census_fibres(spec: CensusSpec, indices: list[int]) -> list[Fields]:
    """(a task) The fibre fields (:func:`fibre_fields`) of networks ``indices`` of the
    census, one ``fiber`` each."""
    return [fibre_fields(fiber(census_network(spec, i), budget=spec.budget)) for i in indices]


def _part_fibres(table: Any) -> dict[bytes, Fields]:
    """The fields of the functions of a finished part, from its rows not classified again on themselves."""
    names = ("fibre_type", "width", "dimension", "flip_sets", "orbits")
    d = table.select(["_key", "check", *names]).to_pydict()
    out: dict[bytes, Fields] = {}
    for i, k in enumerate(d["_key"]):
        if d["check"][i] is None and k not in out:
            out[k] = (d["fibre_type"][i], d["width"][i], d["dimension"][i], d["flip_sets"][i], d["orbits"][i])
    return out


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
    as a part (an Arrow IPC file) in ``OUTPUT.parts/`` (with a ``job.json`` manifest); ``resume=True`` skips the parts
    already there and refuses the parts of a census with other options.  The table and the summary
    (``OUTPUT`` and ``OUTPUT.summary.json`` without the suffix) do not depend on how the job was run or
    interrupted."""
    import hashlib

    import pyarrow as pa

    from relusym._zoo._jobs import PartsFolder, Runner, write_outputs
    from relusym.census._spread import fibres_of_chunks
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
    size = {c: min(spec.total, (c + 1) * spec.chunk_size) - c * spec.chunk_size for c in chunks}
    if parts is not None and resume:
        done = parts.done(chunks, rows=size.__getitem__)
    todo = [c for c in chunks if c not in done]
    tables: dict[int, Any] = {}
    runner = Runner(
        workers=workers if workers is not None and workers > 1 else None,
        executor=executor,
        scheduler=scheduler,
        dask_local=dask_local,
    )
    with runner:
        known: dict[int, Any] = {}
        if runner.parallel and len(todo) > 1:  # each function's fibre once, on one worker (see _spread)
            seen: dict[bytes, Fields] = {}
            for c in sorted(done):  # a resumed census: the functions of its finished parts
                seen.update(_part_fibres(parts.read(c)) if parts is not None else {})
            tasks = (chunk_functions, census_fibres)
            known = fibres_of_chunks(runner, spec, todo, seen, f"census-{key[:16]}", tasks, progress)
        with progress_bar(total=spec.total, desc="census", unit="net", progress=progress) as bar:
            bar.update(sum(size[c] for c in done))
            for t, table in runner.run(
                census_part,
                [(spec, c, known[c]) if c in known else (spec, c) for c in todo],
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
