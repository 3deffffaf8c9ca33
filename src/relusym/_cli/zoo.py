"""``relusym zoo``: model zoos at scale (pyarrow and dask imported on use)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from relusym._base.arguments import progress_flag
from relusym._base.deadline import Stopwatch
from relusym._cli.common import Result, check_output
from relusym.errors import InvalidNetworkError

__all__ = ["cmd_zoo", "add_zoo_parser"]


def cmd_zoo(args: argparse.Namespace) -> Result:

    from relusym.zoo import scan_zoo

    if args.workers is not None and args.workers < 1:
        raise InvalidNetworkError(f"--workers must be at least 1, got {args.workers}")
    check_output(args.output, args.source)
    clock = Stopwatch()
    try:
        res = scan_zoo(
            args.source,
            args.output,
            workers=args.workers,
            scheduler=args.scheduler,
            dask_local=args.dask_local,
            atol=args.atol,
            rtol=args.rtol,
            fibre=not args.no_fibre,
            fibre_search=args.fibre_search,
            budget=args.budget,
            chunk_size=args.chunk_size,
            files_per_chunk=args.files_per_chunk,
            resume=args.resume,
            progress=progress_flag(args),
        )
    except KeyboardInterrupt:
        return {"interrupted": True}, "interrupted: the finished chunks are kept; rerun with --resume to go on", 130
    s = res.summary
    lines = [
        f"{s['networks']} network(s) from {args.source} in {clock.elapsed():.1f} s: {s['ok']} ok, "
        f"{s['errors']} error(s), {s['distinct_functions']} distinct function(s)",
        f"exact duplicate groups (same function): {len(s['exact_duplicate_groups'])}",
    ]
    if s.get("skipped_files"):
        lines.insert(1, f"skipped {s['skipped_files']} file(s) that are not model files by their suffix")
    for g in s["exact_duplicate_groups"][:20]:
        shown = ", ".join(g["sources"][:6]) + (", ..." if g["size"] > 6 else "")
        lines.append(f"  group {g['group']} ({g['size']}): {shown}")
    if len(s["exact_duplicate_groups"]) > 20:
        lines.append(f"  … and {len(s['exact_duplicate_groups']) - 20} more groups (see the summary file)")
    tol = s["tolerance"]
    lines.append(
        f"near-duplicate groups (atol = {tol['atol']:g}, rtol = {tol['rtol']:g}; not transitive): "
        f"{len(s['near_duplicate_groups'])}"
    )
    for g in s["near_duplicate_groups"][:20]:
        shown = ", ".join(g["sources"][:6]) + (", ..." if g["size"] > 6 else "")
        lines.append(f"  cluster {g['cluster']} ({g['size']}, {g['distinct_digests']} functions): {shown}")
    if len(s["near_duplicate_groups"]) > 20:
        lines.append(f"  … and {len(s['near_duplicate_groups']) - 20} more clusters (see the summary file)")
    if s["fibre_types"] is not None:
        lines.append("fibre types: " + (", ".join(f"{c} {v}" for c, v in s["fibre_types"].items()) or "none"))
        lines.append("generic: " + (", ".join(f"{c} {v}" for c, v in s["generic"].items()) or "none"))
    if s.get("undecided_rate"):
        lines.append("undecided: " + ", ".join(f"{c} {v:.0%}" for c, v in s["undecided_rate"].items()))
    lines.append("minimal widths: " + (", ".join(f"{w}: {v}" for w, v in s["widths"].items()) or "none"))
    for e in s["error_rows"][:20]:
        lines.append(f"  error {e['source']}: {e['error']}")
    if len(s["error_rows"]) > 20:
        lines.append(f"  … and {len(s['error_rows']) - 20} more error rows (see the table)")
    lines.append(f"wrote {res.output} and {res.summary_path}")
    return s, "\n".join(lines), 0


def add_zoo_parser(add: Callable[[str, Callable[[argparse.Namespace], Result], str], argparse.ArgumentParser]) -> None:
    sp = add("zoo", cmd_zoo, "digests, duplicate groups, near-duplicates, widths and fibre types of a model zoo")
    sp.add_argument("source", metavar="SOURCE", help="folder, stacked shard (.npz/.safetensors) or Parquet table")
    sp.add_argument("-o", "--output", required=True, metavar="OUT.parquet", help="the table to write")
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, metavar="N", help="a local process pool of N workers")
    where.add_argument("--dask-local", type=int, default=None, metavar="N", help="a Dask LocalCluster of N workers")
    where.add_argument("--scheduler", default=None, metavar="ADDR", help="an existing Dask scheduler (tcp://host:port)")
    sp.add_argument("--atol", type=float, default=0.0, help="near-duplicates: absolute tolerance (default 0)")
    sp.add_argument("--rtol", type=float, default=1e-9, help="near-duplicates: relative tolerance (default 1e-9)")
    sp.add_argument("--budget", type=float, default=1.0, help="seconds per network for the hard searches (default 1)")
    sp.add_argument("--no-fibre", action="store_true", help="skip the fibre analysis (generic, type, flips)")
    sp.add_argument(
        "--fibre-search",
        action="store_true",
        help="run the flip-set and configuration searches per network (within --budget); by default the fibre "
        "columns hold only what is decided in bounded time (class A, dead and duplicate neurons, certified widths)",
    )
    sp.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        help="networks per task (default: about 2^24 weights of a shard and at most 1/16 of it, 4096 rows of a table)",
    )
    sp.add_argument(
        "--files-per-chunk",
        type=int,
        default=None,
        help="model files per task for folders (default: at most 1024, at least 16 tasks, a multiple of 12 tasks)",
    )
    sp.add_argument("--resume", action="store_true", help="keep the finished chunks of an interrupted run")
    # --quiet comes with every command (see add_edge_options)
