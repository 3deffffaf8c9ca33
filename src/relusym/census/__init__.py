"""A census of small fibres: every θ ∈ Ω(1,2,1) with entries in {−1, 0, 1} and a random sample of Ω(2,3,1)
with small integer entries, classified into generic / rigid but not generic / finitely many orbits /
positive-dimensional, with checks of the classification on every network (docs/math/fibres.md).

Checks made on each network:

* every sampled fibre point has the same normal form as θ (``Fiber.sample`` verifies it), and for m = 1 also
  the same values at every breakpoint and beyond (the exact oracle of docs/math/normal-form.md, independent of the
  normal
  form);
* generic and rigid fibres are single free orbits: θ has a trivial stabilizer and every sampled point is h·θ
  for an h ∈ H_n found by :func:`relusym.find_symmetry`;
* in class A every sampled point is h·flip_T(θ) for a flip set T of docs/math/fibres.md (O4) reported by
:func:`fiber`, and
  :func:`relusym.equivalent` certifies it with ``Verdict.flips`` (every hidden symmetry found is a flip);
* when the fibre is a finite union of orbits, the sampled points fall into at most that many orbits;
* the strata listed by :func:`fiber` are proven complete and are exactly the types (S, P, t) found by an
  independent brute-force enumeration of realizations over small rational hidden layers with the same normal
  form (:func:`brute_force_types`), every listed stratum has a verified witness, θ's own stratum is marked,
  and every sampled point has a listed type.

Run ``python -m relusym.census`` (or ``relusym census``) to print the table.

The package holds one idea per module: ``_families`` (the families, :func:`classify`, the serial census and its
table), ``_chunked`` (the census on executors), ``_table`` (the census table of a grid or a sample, one row
per network, as a resumable job) and ``_cli`` (the command line); the fibre categories are the zoo's
(``relusym._zoo._categories``), so that the zoo engine never imports the census.
"""

from __future__ import annotations

from relusym._zoo._categories import CATEGORIES, fibre_category
from relusym.census._chunked import census_chunk, run_census_chunked
from relusym.census._cli import main
from relusym.census._families import (
    Census,
    CensusRow,
    brute_force_types,
    classify,
    networks_121,
    networks_231,
    run_census,
)
from relusym.census._table import (
    DISTRIBUTIONS,
    TABLE_COLUMNS,
    TABLE_SCHEMA,
    CensusSpec,
    CensusTable,
    census_entries,
    census_network,
    census_part,
    census_table_text,
    fibre_fields,
    integer_function_keys,
    read_census_table,
    run_census_table,
)

__all__ = [
    "CATEGORIES",
    "Census",
    "CensusRow",
    "brute_force_types",
    "classify",
    "networks_121",
    "networks_231",
    "run_census",
    "run_census_chunked",
    "census_chunk",
    "fibre_category",
    "main",
    "TABLE_SCHEMA",
    "TABLE_COLUMNS",
    "DISTRIBUTIONS",
    "CensusSpec",
    "CensusTable",
    "census_entries",
    "census_network",
    "census_part",
    "census_table_text",
    "fibre_fields",
    "integer_function_keys",
    "read_census_table",
    "run_census_table",
]
