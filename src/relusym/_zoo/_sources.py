"""Zoo stores and their chunk descriptions.

A *chunk* is a small, picklable description of some networks of a store (a list of model files, or a row range
of a stacked shard or of a Parquet file); the process that runs a chunk reads the data itself, so networks never
travel through a scheduler one by one.  Stores:

* a folder, walked recursively: every ``.parquet`` file is a zoo table (an unreadable one is one error row), every
  ``.npz`` or ``.safetensors`` file whose ``A`` has three dimensions is a stacked shard, every other file with the
  suffix of a model format a model file for :func:`relusym.load`; files with other suffixes (a ``README.md``) are
  skipped and counted (:func:`plan_job`); a folder of Parquet files is therefore also a (hive-partitioned
  or flat) pyarrow Dataset;
* a stacked shard: arrays ``V`` (B×k×n), ``A`` (B×n×m), ``b`` (B×n) and optionally ``c`` (B×k);
* a Parquet zoo table, one row per network: integer columns ``m``, ``n``, ``k`` and either list columns ``V``,
  ``A``, ``b``, ``c`` (each flattened row-major) or one list column ``weights`` holding V, A, b, c flattened and
  concatenated in that order;
* a ``pyarrow.dataset.Dataset`` object (its files);
* an iterable of :class:`relusym.Network` (or of ``(name, Network)`` pairs), kept in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np

from relusym._core.network import Network
from relusym._deep.mlp import MLP
from relusym._zoo._shards import read_stack, stack_shape
from relusym.errors import InvalidNetworkError, UnsupportedModelError

__all__ = [
    "Chunk",
    "Item",
    "StackRows",
    "item_indices",
    "item_sources",
    "model_suffixes",
    "plan_chunks",
    "plan_job",
    "read_chunk",
    "stack_headers",
    "stack_shapes",
]

_STACK_SUFFIXES = (".npz", ".safetensors")


def model_suffixes() -> frozenset[str]:
    """The suffixes of files a zoo folder reads: every format's, and ``.parquet`` for zoo tables."""
    import importlib

    from relusym.io import FORMATS

    out = {".parquet"}
    for name in FORMATS:
        try:
            mod = importlib.import_module(f"relusym.io.{name}")
        except ImportError:  # a format not shipped in this build
            continue
        out.update(s.lower() for s in getattr(mod, "SUFFIXES", ()))
    return frozenset(out)


@dataclass(frozen=True)
class Chunk:
    """One task: ``kind`` is "files" (``paths``), "shard" or "table" (rows ``start``..``stop`` of ``paths[0]``)
    or "memory" (``nets``).  ``names`` are the sources as reported (paths relative to the store's root);
    ``first`` is the position of the chunk's first network in the whole zoo."""

    index: int
    kind: str
    paths: tuple[str, ...]
    names: tuple[str, ...]
    start: int = 0
    stop: int = 0
    first: int = 0
    nets: tuple[Any, ...] | None = field(default=None, compare=False)

    @property
    def size(self) -> int:
        return len(self.paths) if self.kind == "files" else (self.stop - self.start)

    def describe(self, identities: Mapping[str, list[Any]] | None = None) -> dict[str, Any]:
        """What identifies the chunk for resuming (file identities included, not the data): each file's size and
        modification time, taken from ``identities`` where the planning found them (:func:`stack_headers`), else
        by a ``stat`` now."""
        d: dict[str, Any] = {"kind": self.kind, "names": list(self.names), "start": self.start, "stop": self.stop}
        if self.kind != "memory":
            known = identities or {}
            d["files"] = [known[p] if p in known else _identity(p) for p in self.paths]
        else:
            d["nets"] = hashlib.sha256(repr([_net_key(x) for x in self.nets or ()]).encode()).hexdigest()
        return d


def _net_key(x: Any) -> Any:
    if isinstance(x, Network):
        return json.dumps(x.to_dict(), sort_keys=True)
    return repr(x)


def _identity(path: str) -> list[Any]:
    try:
        st = os.stat(path)
        return [st.st_size, st.st_mtime_ns]
    except OSError:
        return [None, None]


@dataclass(frozen=True)
class Item:
    """One network of a chunk: its source name, its position in the zoo, and its Network or deep MLP (None for a
    row of a stack, whose arrays stay in the stack) or the reason it could not be read."""

    source: str
    index: int
    net: Network | MLP | None = None
    error: str | None = None


class StackRows(Sequence[Item]):
    """The items of rows ``start``..``stop`` of a stacked shard named ``name`` (row r is network ``first + r −
    start``, source ``name#r``), made only when asked for: a chunk of a shard holds thousands of rows, and one
    ``Item`` object per row cost the job more than reading its weights.  :func:`item_indices` and
    :func:`item_sources` give the columns of all of them at once."""

    __slots__ = ("name", "first", "start", "stop")

    def __init__(self, name: str, first: int, start: int, stop: int) -> None:
        self.name, self.first, self.start, self.stop = name, first, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    @overload
    def __getitem__(self, t: int) -> Item: ...

    @overload
    def __getitem__(self, t: slice) -> list[Item]: ...

    def __getitem__(self, t: int | slice) -> Item | list[Item]:
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self)))]
        if not -len(self) <= t < len(self):
            raise IndexError(t)
        t %= len(self)
        return Item(f"{self.name}#{self.start + t}", self.first + t)


def item_indices(items: Sequence[Item]) -> np.ndarray:
    """The zoo positions of ``items`` (int64)."""
    if isinstance(items, StackRows):
        return np.arange(items.first, items.first + len(items), dtype=np.int64)
    return np.array([it.index for it in items], dtype=np.int64)


def item_sources(items: Sequence[Item]) -> Any:
    """The source names of ``items``, as a pyarrow string array: the rows of a stack (``name#row``) are written by
    pyarrow's kernels (the row numbers cast to text, the prefix inserted), a sixth of the CPU time of one Python
    string per row."""
    import pyarrow as pa

    if isinstance(items, StackRows):
        import pyarrow.compute as pc

        rows = pc.cast(pa.array(np.arange(items.start, items.stop, dtype=np.int64)), pa.string())
        return pc.utf8_replace_slice(rows, 0, 0, items.name + "#")
    return pa.array([it.source for it in items], type=pa.string())


# ----------------------------------------------------------------------------------------------------------
# discovering a store


_TASK_WEIGHTS = 1 << 24  # weights per task of a stacked shard by default: a fifth to half a second of work
_MIN_TASKS = 16  # a shard of 256 rows or more is cut into at least this many tasks (balanced shares for workers)
_TASKS_OF = 12  # the number of tasks is a multiple of this (equal tasks: 1, 2, 3, 4, 6 or 12 workers share them evenly)


def auto_rows(shape: tuple[int, ...]) -> int:
    """Rows per task of a stacked shard whose ``A`` has ``shape`` (B, n, m), by default: tasks of about 2^24
    weights, at least :data:`_MIN_TASKS` of them (a small shard still gives each of a few workers several), their
    number rounded up to a multiple of :data:`_TASKS_OF` and the rows shared among them as evenly as one step
    allows (only the last task is shorter), so that 2, 3, 4, 6 or 12 workers get equal shares and finish
    together; between 16 and 65,536 rows.

    About 2^24 weights are 0.2-0.5 s of work on one core at 8-64-1 (a few dozen MB read): long enough that a
    task's fixed costs (its part's write; on Dask the scheduler's round trip, about 5 ms here) are 1-2% of it,
    short enough for a balanced end (tasks of 2^22 weights were 0.06 s: the Dask workers of a 10^6 network job
    then spent 7% of their tasks' time off their cores).  Independent of the executor, so that a job resumed on
    another one finds the same chunks."""
    B, n, m = (int(x) for x in shape[:3])
    per = max(1, min(_TASK_WEIGHTS // max(1, n * (m + 1)), -(-B // _MIN_TASKS)))
    tasks = -(-B // per)
    tasks = -(-tasks // _TASKS_OF) * _TASKS_OF if tasks > 1 else 1
    return max(16, min(65536, -(-B // tasks)))


_TASK_FILES = 1024  # model files per task of a folder by default: a quarter second of small files


def auto_files(files: int) -> int:
    """Model files per task for a folder of ``files`` model files (its stacked shards and tables apart), by
    default: at most :data:`_TASK_FILES` a task, at least :data:`_MIN_TASKS` tasks (or one per file), their
    number rounded up to a multiple of :data:`_TASKS_OF` and the files shared equally among them (the few left
    over in one more task), as :func:`auto_rows` does for a shard.  A small file (a network of a few thousand
    weights) costs about 0.25 ms to read and digest: a task of 1024 is a quarter of a second, against 5 ms of a
    Dask round trip per task (tasks of 256 files, the earlier default, left a folder of 20,000 files 1.4-1.5×
    faster on two Dask workers than serially); a folder of a thousand large models still gets 25 tasks."""
    if files <= 1:
        return 1
    tasks = max(-(-files // _TASK_FILES), min(_MIN_TASKS, files))
    tasks = -(-tasks // _TASKS_OF) * _TASKS_OF
    return max(1, files // tasks)  # rounded down: at least that many tasks, the few files left in one more


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(str(path)).metadata.num_rows)
    except Exception as exc:  # noqa: BLE001
        raise InvalidNetworkError(f"{path} is not a readable Parquet file ({exc})") from None


def _folder(root: Path) -> tuple[list[tuple[str, str]], int]:
    """The model files of a zoo folder as (path, name relative to ``root`` with ``/``), sorted by path within
    each folder, and how many files were skipped (not model files by their suffix).  Strings, not ``Path``
    objects: a folder of 10^5 files is walked by the client before any worker starts."""
    known = model_suffixes()
    out: list[tuple[str, str]] = []
    skipped = 0
    top = os.fspath(root)
    cut = len(os.path.join(top, ""))
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        rel = dirpath[cut:].replace(os.sep, "/") + "/" if len(dirpath) > len(top) else ""
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            if os.path.splitext(name)[1].lower() in known:
                out.append((os.path.join(dirpath, name), rel + name))
            else:
                skipped += 1
    return out, skipped


def _name(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def plan_chunks(source: Any, *, chunk_size: int | None = None, files_per_chunk: int | None = None) -> list[Chunk]:
    """The chunks of a store (see the module docstring), in a fixed order: files sorted by path, rows in order.
    ``chunk_size`` rows per task of a shard or a table; None: :func:`auto_rows` for a shard, 4096 for a table.
    ``files_per_chunk`` model files per task of a folder; None: :func:`auto_files`."""
    return plan_job(source, chunk_size=chunk_size, files_per_chunk=files_per_chunk)[0]


def stack_shapes(paths: Sequence[str]) -> list[tuple[int, ...] | None]:
    """:func:`stack_shape` of each file (None: not a stacked shard): the shards of a folder, found at planning;
    a task of its own when the planning runs on the job's workers."""
    return [stack_shape(Path(p)) for p in paths]


def stack_headers(paths: Sequence[str]) -> list[tuple[tuple[int, ...] | None, list[Any]]]:
    """:func:`stack_shapes`, and each file's identity as the job's fingerprint records it (size and modification
    time, :meth:`Chunk.describe`), the planning task of a folder on the job's workers: the client then does not
    ``stat`` those files again between the planning and the first chunk, with the workers idle (0.04-0.08 s for
    20,000 files here)."""
    return list(zip(stack_shapes(paths), (_identity(p) for p in paths), strict=True))


def plan_job(
    source: Any,
    *,
    chunk_size: int | None = None,
    files_per_chunk: int | None = None,
    shapes: Callable[[list[str]], list[tuple[int, ...] | None]] = stack_shapes,
) -> tuple[list[Chunk], int]:
    """:func:`plan_chunks`, and how many files of a folder were skipped (not model files by their suffix; 0 for
    any other source), from one walk of the folder.  ``shapes`` finds which ``.npz`` and ``.safetensors`` files
    are stacked shards (:func:`stack_shapes`, or the same on the job's workers: one header read per file)."""
    skipped = 0
    if (chunk_size is not None and chunk_size < 1) or (files_per_chunk is not None and files_per_chunk < 1):
        raise InvalidNetworkError("chunk sizes must be at least 1")
    entries: list[tuple[str, str, int, str, int]] = []  # (kind, path, rows, name, rows per task)
    table_rows_per_task = chunk_size if chunk_size is not None else 4096
    if isinstance(source, str | os.PathLike):
        p = Path(source)
        if not p.exists():
            raise InvalidNetworkError(f"{p}: no such file or folder")
        p = Path(os.path.abspath(p))  # read by workers that may run in another directory (a Dask scheduler's)
        folder = p.is_dir()
        files, skipped = _folder(p) if folder else ([(str(p), _name(p, p.parent))], 0)
        if folder and not files:
            known = model_suffixes()
            raise InvalidNetworkError(
                f"{p} holds no model files (suffixes {', '.join(sorted(known))}): no networks to read"
            )
        stacks = [path for path, _ in files if os.path.splitext(path)[1].lower() in _STACK_SUFFIXES]
        found = dict(zip(stacks, shapes(stacks), strict=True)) if stacks else {}
        for path, name in files:
            suffix = os.path.splitext(path)[1].lower()
            if suffix == ".parquet":
                try:
                    table_rows = _parquet_rows(Path(path))
                except InvalidNetworkError:
                    if not folder:
                        raise
                    entries.append(("file", path, 1, name, 1))  # one error row, read again by its worker
                    continue
                entries.append(("table", path, table_rows, name, table_rows_per_task))
            elif (shape := found.get(path)) is not None:
                per = chunk_size if chunk_size is not None else auto_rows(shape)
                entries.append(("shard", path, shape[0], name, per))
            else:
                entries.append(("file", path, 1, name, 1))
    elif _is_dataset(source):
        paths = [Path(x) for x in source.files]
        root = Path(os.path.commonpath([str(x.parent) for x in paths])) if paths else Path(".")
        for f in paths:
            entries.append(("table", os.path.abspath(f), _parquet_rows(f), _name(f, root), table_rows_per_task))
    elif isinstance(source, Iterable) and not isinstance(source, bytes | dict):
        return _memory_chunks(source, table_rows_per_task), 0
    else:
        raise InvalidNetworkError(
            f"cannot read a zoo from a {type(source).__name__}: give a folder, a stacked shard, a Parquet file, a "
            "pyarrow Dataset or an iterable of Networks"
        )
    chunks: list[Chunk] = []
    first = 0
    pending: list[tuple[str, str]] = []
    if files_per_chunk is None:
        files_per_chunk = auto_files(sum(e[0] == "file" for e in entries))

    def flush() -> None:
        nonlocal first
        if pending:
            chunks.append(
                Chunk(
                    len(chunks),
                    "files",
                    tuple(x for x, _ in pending),
                    tuple(n for _, n in pending),
                    0,
                    len(pending),
                    first,
                )
            )
            first += len(pending)
            pending.clear()

    for kind, path, rows, name, per in entries:
        if kind == "file":
            pending.append((path, name))
            if len(pending) >= files_per_chunk:
                flush()
            continue
        flush()
        for s in range(0, rows, per):
            t = min(rows, s + per)
            chunks.append(Chunk(len(chunks), kind, (path,), (name,), s, t, first))
            first += t - s
    flush()
    return chunks, skipped


def _is_dataset(x: Any) -> bool:
    return type(x).__module__.startswith("pyarrow") and hasattr(x, "files") and hasattr(x, "schema")


def _memory_chunks(source: Iterable[Any], chunk_size: int) -> list[Chunk]:
    items: list[tuple[str, Any]] = []
    for i, x in enumerate(source):
        if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str):
            items.append((x[0], x[1]))
        else:
            items.append((f"#{i}", x))
    chunks: list[Chunk] = []
    for s in range(0, len(items), chunk_size):
        part = items[s : s + chunk_size]
        chunks.append(
            Chunk(len(chunks), "memory", (), tuple(n for n, _ in part), 0, len(part), s, tuple(x for _, x in part))
        )
    return chunks


# ----------------------------------------------------------------------------------------------------------
# reading a chunk


@dataclass
class ChunkData:
    """What a chunk holds once read: stacks of equal-shape float arrays with their row items, and single
    networks (or errors)."""

    stacks: list[tuple[Sequence[Item], np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    singles: list[Item]


def _message(exc: BaseException) -> str:
    if isinstance(exc, InvalidNetworkError | UnsupportedModelError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _table_rows(path: str, start: int, stop: int) -> Iterator[tuple[int, Any]]:
    """(row, network or error message) for rows start..stop of a Parquet zoo table."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = set(pf.schema_arrow.names)
    flat = {"V", "A", "b"} <= names
    if not flat and "weights" not in names:
        raise InvalidNetworkError(
            f"{path}: a zoo table needs columns m, n, k and either V, A, b, c or weights (found {sorted(names)})"
        )
    if not {"m", "n", "k"} <= names:
        raise InvalidNetworkError(f"{path}: a zoo table needs integer columns m, n and k (found {sorted(names)})")
    cols = ["m", "n", "k"] + ([x for x in ("V", "A", "b", "c") if x in names] if flat else ["weights"])
    # the row groups covering start..stop
    md = pf.metadata
    pos = 0
    groups = []
    offset = None
    for g in range(md.num_row_groups):
        cnt = md.row_group(g).num_rows
        if pos + cnt > start and pos < stop:
            groups.append(g)
            if offset is None:
                offset = pos
        pos += cnt
    table = pf.read_row_groups(groups, columns=cols) if groups else None
    if table is None:
        return
    table = table.slice(start - (offset or 0), stop - start)
    data = table.to_pydict()
    for r in range(table.num_rows):
        row = start + r
        try:
            m, n, k = (int(data[x][r]) for x in ("m", "n", "k"))
            if flat:
                parts = [data["V"][r], data["A"][r], data["b"][r], data["c"][r] if "c" in data else [0.0] * k]
            else:
                w = data["weights"][r]
                sizes = [k * n, n * m, n, k]
                if w is None or len(w) != sum(sizes):
                    got = "null" if w is None else len(w)
                    raise InvalidNetworkError(
                        f"{path} row {row}: weights has {got} entries, expected k·n + n·m + n + k = {sum(sizes)}"
                    )
                cuts = np.cumsum([0] + sizes)
                parts = [w[cuts[i] : cuts[i + 1]] for i in range(4)]
            V, A, b, c = (np.asarray(x, dtype=_dtype(table)) for x in parts)
            nested = [x for x, arr in zip(("V", "A", "b", "c"), (V, A, b, c), strict=True) if arr.ndim != 1]
            if nested:
                col = "weights" if not flat else nested[0]
                raise InvalidNetworkError(
                    f"{path} row {row}: the column {col} holds nested lists; a zoo table holds each array as one "
                    "flat list (row-major)"
                )
            if V.size != k * n or A.size != n * m or b.size != n or c.size != k:
                raise InvalidNetworkError(
                    f"{path} row {row}: V, A, b, c have {V.size}, {A.size}, {b.size}, {c.size} entries, expected "
                    f"{k * n}, {n * m}, {n}, {k} for m = {m}, n = {n}, k = {k}"
                )
            yield row, (V.reshape(k, n), A.reshape(n, m), b, c)
        except (InvalidNetworkError, TypeError, ValueError) as exc:
            yield row, _message(exc)


def _dtype(table: Any) -> Any:
    """The float dtype of the weights column(s) of a zoo table (float32 stays float32)."""
    import pyarrow as pa

    for name in ("weights", "V"):
        if name in table.column_names:
            t = table.schema.field(name).type
            while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
                t = t.value_type
            if pa.types.is_float32(t):
                return np.float32
            if pa.types.is_float16(t):
                return np.float16
    return np.float64


def read_chunk(chunk: Chunk) -> ChunkData:
    """Read the networks of a chunk (in the process that runs it).  Nothing raises: unreadable networks become
    items with an error."""
    stacks: list[tuple[Sequence[Item], np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    singles: list[Item] = []
    if chunk.kind == "shard":
        name = chunk.names[0]
        try:
            V, A, b, c = read_stack(chunk.paths[0], chunk.start, chunk.stop)
            stacks.append((StackRows(name, chunk.first, chunk.start, chunk.stop), V, A, b, c))
        except Exception as exc:  # noqa: BLE001 - the whole shard is unreadable: one error row per network
            msg = _message(exc)
            singles += [
                Item(f"{name}#{r}", chunk.first + i, error=msg) for i, r in enumerate(range(chunk.start, chunk.stop))
            ]
        return ChunkData(stacks, singles)
    loaded: list[tuple[Item, tuple[np.ndarray, ...] | None]] = []
    if chunk.kind == "table":
        name = chunk.names[0]
        try:
            for row, res in _table_rows(chunk.paths[0], chunk.start, chunk.stop):
                item = Item(f"{name}#{row}", chunk.first + row - chunk.start)
                if isinstance(res, str):
                    singles.append(Item(item.source, item.index, error=res))
                else:
                    loaded.append((item, res))
        except Exception as exc:  # noqa: BLE001
            msg = _message(exc)
            singles += [
                Item(f"{name}#{r}", chunk.first + i, error=msg) for i, r in enumerate(range(chunk.start, chunk.stop))
            ]
            return ChunkData(stacks, singles)
    elif chunk.kind == "files":
        from relusym.io import load

        for i, (path, name) in enumerate(zip(chunk.paths, chunk.names, strict=True)):
            try:
                if path.lower().endswith(".parquet"):  # a table that could not be opened when the job was planned
                    _parquet_rows(Path(path))
                    raise InvalidNetworkError(f"{name} changed since the job started; run it again")
                net = load(path)
                loaded.append((Item(name, chunk.first + i, net=net), None))
            except Exception as exc:  # noqa: BLE001 - any failure to read a file is that file's error row
                singles.append(Item(name, chunk.first + i, error=_message(exc)))
    else:
        for i, (x, name) in enumerate(zip(chunk.nets or (), chunk.names, strict=True)):
            if isinstance(x, Network | MLP):
                loaded.append((Item(name, chunk.first + i, net=x), None))
            else:
                try:
                    from relusym.io import load

                    loaded.append((Item(name, chunk.first + i, net=load(x)), None))
                except Exception as exc:  # noqa: BLE001
                    singles.append(Item(name, chunk.first + i, error=_message(exc)))
    # group equal-shape float networks into stacks
    groups: dict[tuple[Any, ...], list[tuple[Item, tuple[np.ndarray, ...]]]] = {}
    for item, arrs in loaded:
        if arrs is None:
            if item.net is None:
                continue
            net = item.net
            if isinstance(net, MLP) or not net.is_float or any(x.dtype == object for x in (net.V, net.A, net.b, net.c)):
                singles.append(item)
                continue
            arrs = (net.V, net.A, net.b, net.c)
        key = tuple(x.shape for x in arrs) + (np.result_type(*arrs).str,)
        groups.setdefault(key, []).append((item, arrs))
    for members in groups.values():
        items = [it for it, _ in members]
        V, A, b, c = (np.stack([arrs[j] for _, arrs in members]) for j in range(4))
        stacks.append((items, V, A, b, c))
    return ChunkData(stacks, singles)
