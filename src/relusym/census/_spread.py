"""The census table on workers: every distinct function's fibre computed once, by one worker.

A chunk's rows are the fibres of the functions its networks compute, and ``fiber`` runs once per distinct
function.  Chunk by chunk on several workers, each worker met in its own chunks most of the functions the others
met too (a grid's chunks share most of their functions) and computed them again: on Ω(1,2,1) over {−1, 0, 1, 2}
in 8 chunks, 3,678 ``fiber`` calls for 2,518 functions, one worker holding 2,196 of them, so that two workers
were 1.2× a serial run.  So a parallel census runs in three passes on one runner: the distinct functions of each
chunk (their keys, vectorized, and the first network of each), then the fibres of all the distinct functions not
known yet, dealt out evenly, one ``fiber`` each, and then the chunks' parts as before, each given the fibres of
its functions (its own checks, ``fiber`` on every ``check_every``-th network, stay in its task)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relusym._base.progress import progress_bar

__all__ = ["fibres_of_chunks"]


def fibres_of_chunks(
    runner: Any,
    spec: Any,
    todo: list[int],
    known: dict[bytes, Any],
    key: str,
    tasks: tuple[Callable[[Any, int], dict[bytes, int]], Callable[[Any, list[int]], list[Any]]],
    progress: bool | None = None,
) -> dict[int, Any]:
    """For each chunk in ``todo``, the fibre fields of its distinct functions (a dict key → fields), computed on
    ``runner`` (:class:`relusym._zoo._jobs.Runner`) in the first two passes (see the module docstring); ``known``
    holds the fields found already (the finished parts of a resumed census) and gains the new ones.  ``tasks``:
    the census's :func:`~relusym.census._table.chunk_functions` and :func:`~relusym.census._table.census_fibres`.
    The first network of a function in the census's order computes its fibre, in batches of functions dealt
    round-robin in that order, two for each chunk to do (the heavy and the light ones mixed); ``progress``: a bar
    of the functions done (the parts' pass has its own)."""
    chunk_functions, census_fibres = tasks
    functions: dict[int, dict[bytes, int]] = {}
    for t, found in runner.run(chunk_functions, [(spec, c) for c in todo], key=f"{key}-functions", labels=todo):
        functions[todo[t]] = found
    first: dict[bytes, int] = {}
    for c in todo:
        for k, i in functions[c].items():
            if k not in known and (k not in first or i < first[k]):
                first[k] = i
    order = sorted(first, key=first.__getitem__)
    batches = [order[b :: 2 * len(todo)] for b in range(2 * len(todo))]
    batches = [b for b in batches if b]
    deals = [(spec, [first[k] for k in b]) for b in batches]
    with progress_bar(total=len(order), desc="census functions", unit="fn", progress=progress) as bar:
        for t, fields in runner.run(census_fibres, deals, key=f"{key}-fibres", labels=list(range(len(deals)))):
            known.update(zip(batches[t], fields, strict=True))
            bar.update(len(fields))
    return {c: {k: known[k] for k in functions[c]} for c in todo}
