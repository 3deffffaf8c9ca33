"""The zoo's table written while its chunks run: each finished part becomes row groups of the output file at once,
in chunk order, so that the end of the job no longer writes the whole table after the last chunk.

Three columns of the table are global: ``group`` (the exact groups, numbered in order of first appearance),
``group_size`` and ``near_cluster``.  They are known only at the end, but in most zoos every network is its own
group and no near pair joins two groups: then ``group`` is the row's rank among the rows that succeeded,
``group_size`` is 1 and ``near_cluster`` equals ``group`` (nulls on error rows).  The stream writes those values,
and at the end :meth:`TableStream.commit` compares them, and the row order, with the finished table; only when
they agree is the file renamed into place.  Otherwise the streamed file is discarded and the table is written
whole, as before: a zoo with duplicates pays the write twice, never a wrong table.

Why (measured on this project's 2-core machine, 10^6 networks of 8-64-1 in 36 chunks): the whole table's write
took 0.27-0.3 s of the client's time after the workers had finished, on a path nothing else could share; written
part by part it costs 0.23-0.25 s of CPU time spread over the chunks' run, while the workers compute the next
ones.  The table is the same bytes whether the job ran serially, on a pool or on Dask: the rows go out in chunk
order, one row group per part (and more for a part above Parquet's row group limit)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.fileio import atomic_path

__all__ = ["parquet_options", "TableStream", "speculated_columns"]


def parquet_options(
    names: Sequence[str], distinct: Sequence[str] = (), sequential: Sequence[str] = ()
) -> dict[str, Any]:
    """The Parquet writer's options for a table with columns ``names``.

    ``distinct`` names columns whose values are mostly distinct (digests, sources): they are written without a
    dictionary (Parquet's writer would build one per page and then drop it), and random hex digests without
    compression (Snappy finds nothing in them); together a third of the table's writing time.  ``sequential``
    names integer columns that mostly count up (row indices, group numbers): they are written delta-encoded
    (``DELTA_BINARY_PACKED``, a standard Parquet encoding), without a dictionary: a fifth of the time of a
    dictionary attempt and Snappy (5 against 24 ms per 10^6 rows), and a few kilobytes instead of 4 MB."""
    plain = [x for x in distinct if x in names]
    delta = [x for x in sequential if x in names]
    options: dict[str, Any] = {}
    if plain or delta:
        options["use_dictionary"] = [x for x in names if x not in plain and x not in delta]
        options["compression"] = {x: "none" if x == "digest" else "snappy" for x in names}
    if delta:
        options["column_encoding"] = dict.fromkeys(delta, "DELTA_BINARY_PACKED")
    return options


def speculated_columns(status: Any, offset: int) -> tuple[Any, Any, Any, int]:
    """``group``, ``group_size`` and ``near_cluster`` of rows with the status column ``status`` when every network
    is its own group and no near pair joins groups, the rows before having ``offset`` successes; and the new
    offset."""
    import pyarrow as pa

    ok = _succeeded(status)
    rank = offset + np.cumsum(ok, dtype=np.int64) - 1
    nok = ~ok
    group = pa.array(rank, type=pa.int64(), mask=nok)
    size = pa.array(np.ones(len(ok), dtype=np.int64), type=pa.int64(), mask=nok)
    return group, size, group, offset + int(ok.sum())


class TableStream:
    """The public table of a zoo job written to ``out`` as its parts arrive (see the module docstring).

    ``order`` is the chunks' indices in table order; :meth:`add` takes a part (the private columns included) in any
    order and writes every part whose predecessors are written; :meth:`commit` renames the file into place when
    the finished table is what was written, else discards it; :meth:`abort` discards it (a failed job)."""

    def __init__(self, out: Path, schema: Any, order: Sequence[int], options: dict[str, Any]) -> None:
        self.out, self.schema, self.options = out, schema, options
        self._position = {index: k for k, index in enumerate(order)}
        self._pending: dict[int, Any] = {}
        self._next = 0
        self._ok = 0
        self._indices: list[Any] = []
        self._file: Any = None  # atomic_path(out), entered at the first write
        self._tmp: Path | None = None
        self._writer: Any = None
        self._sync: threading.Thread | None = None  # the fsync of the whole file, while the job's end runs
        self._sync_error: BaseException | None = None

    def add(self, index: int, part: Any) -> None:
        """Part ``index`` (a chunk's table): written now if every chunk before it is."""
        self._pending[self._position[index]] = part
        while self._next in self._pending:
            self._write(self._pending.pop(self._next))
            self._next += 1
        if self._next == len(self._position) and self._writer is not None:
            self._close()

    def _close(self) -> None:
        """Every part written: the footer, then the file's fsync in a thread (it waits on the disk without the
        GIL, beside the end of the job; 0.03 s for the 73 MB of 10^6 networks)."""
        try:
            self._writer.close()
        except BaseException as exc:
            self._fail(exc)
            raise
        self._writer = None
        self._sync = threading.Thread(target=self._fsync, name="relusym-table-fsync", daemon=True)
        self._sync.start()

    def _fsync(self) -> None:
        try:
            with open(str(self._tmp), "rb+") as fh:
                os.fsync(fh.fileno())
        except OSError as exc:
            self._sync_error = exc

    def _write(self, part: Any) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            if self._file is None:
                self._file = atomic_path(self.out, sync=False)  # fsynced by _close
                self._tmp = self._file.__enter__()
                self._writer = pq.ParquetWriter(str(self._tmp), self.schema, **self.options)
            group, size, near, self._ok = speculated_columns(part["status"], self._ok)
            made = {"group": group, "group_size": size, "near_cluster": near}
            cols = [made[f.name] if f.name in made else part[f.name] for f in self.schema]
            cols = [c if c.type == f.type else c.cast(f.type) for c, f in zip(cols, self.schema, strict=True)]
            self._writer.write_table(pa.Table.from_arrays(cols, schema=self.schema))
        except BaseException as exc:
            self._fail(exc)
            raise
        self._indices.append(part["index"])

    def commit(self, table: Any) -> bool:
        """When every part was written and ``table`` (the finished public table) has the rows in the order written
        and the global columns speculated: the file renamed onto ``out`` (fsynced first), True.  Else the file
        is discarded, False.  (Compared as numpy arrays: pyarrow's ``equals`` of chunked arrays cut differently
        took 0.25 s at 10^6 rows.)"""
        whole = self._next == len(self._position) and not self._pending and table.schema.equals(self.schema, True)
        if whole and self._file is not None:
            ok = _succeeded(table["status"])
            rank = np.cumsum(ok, dtype=np.int64) - 1
            index = np.concatenate([c.to_numpy() for c in self._indices]) if self._indices else rank[:0]
            whole = (
                np.array_equal(index, table["index"].to_numpy())
                and _holds(table["group"], rank, ok)
                and _holds(table["group_size"], np.ones_like(rank), ok)
                and _holds(table["near_cluster"], rank, ok)
            )
        else:
            whole = False
        if not whole:
            self.abort()
            return False
        self._join()
        if self._sync_error is not None:
            exc = self._sync_error
            self._fail(exc)
            raise exc
        file, self._file = self._file, None
        file.__exit__(None, None, None)  # the rename
        return True

    def abort(self) -> None:
        """Discard the file written so far, if any (the target is untouched)."""
        self._fail(_Discarded())

    def _join(self) -> None:
        sync, self._sync = self._sync, None
        if sync is not None:
            sync.join()

    def _fail(self, exc: BaseException) -> None:
        """The file discarded after ``exc``: raises the one-sentence error :func:`atomic_path` makes of a failed
        write (a full disk: "cannot write OUT: no space left on the device; nothing was written")."""
        self._join()
        writer, file = self._writer, self._file
        self._writer = self._file = None
        try:
            if writer is not None:
                writer.close()
        except Exception:  # noqa: BLE001, S110 - the file is discarded; exc is what went wrong
            pass
        if file is not None:
            file.__exit__(type(exc), exc, exc.__traceback__)


def _succeeded(status: Any) -> np.ndarray:
    """The rows of a status column that are ``ok``, as a bool array."""
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(pc.equal(status, "ok"), False).to_numpy(zero_copy_only=False), dtype=bool)


def _holds(col: Any, values: np.ndarray, valid: np.ndarray) -> bool:
    """Whether the integer column ``col`` is ``values`` where ``valid`` and null elsewhere."""
    isnull = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if not np.array_equal(isnull, ~valid):
        return False
    got = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return bool(np.array_equal(got[valid], values[valid]))


class _Discarded(Exception):
    """Thrown into :func:`atomic_path` to discard its temporary file."""
