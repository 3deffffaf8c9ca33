"""The zoo's table: its schema name, its public columns (name, type, description), the private columns of the
part tables, the job's options and its result (:mod:`relusym._zoo._run` computes the rows,
:mod:`relusym._zoo._summary` the groups, clusters and summary)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relusym._base.limits import check_budget
from relusym.errors import InvalidNetworkError

__all__ = ["SCHEMA", "COLUMNS", "PRIVATE", "Options", "ZooResult", "table_schema", "public_schema", "part_table"]

SCHEMA = "relusym.zoo/2"

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
PRIVATE = ("_chunk", "_probe", "_nd")


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
        for name in ("atol", "rtol"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise InvalidNetworkError(f"{name} must be a finite number ≥ 0, got {v!r}")
        check_budget(self.budget)
        if self.probes < 1:
            raise InvalidNetworkError(f"probes must be at least 1, got {self.probes}")


@dataclass(frozen=True)
class ZooResult:
    """A finished zoo job: the table (pyarrow), the summary (a JSON-ready dict) and where they were written."""

    table: Any
    summary: dict[str, Any]
    output: Path | None = None
    summary_path: Path | None = None


def table_schema(private: bool) -> Any:
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


def public_schema(options: Options) -> Any:
    """The schema of a job's table, with the options that made it as the file's key-value metadata."""
    meta = {
        "schema": SCHEMA,
        "atol": repr(float(options.atol)),
        "rtol": repr(float(options.rtol)),
        "fibre": str(bool(options.fibre)).lower(),
        "fibre_search": str(bool(options.search)).lower(),
        "budget": repr(float(options.budget)),
    }
    return table_schema(private=False).with_metadata({k: v.encode() for k, v in meta.items()})


def part_table(rows: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    schema = table_schema(private=True)
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.Table.from_pydict(cols, schema=schema)
