"""The options and the run of ``relusym census``: the classic census table, or with ``--shape`` the census table
of a grid or a sample as a resumable job.  The command itself is a sub-command of the one ``relusym`` parser
(:mod:`relusym._cli.census` adds these options to it); ``python -m relusym.census`` runs that same command, and
:func:`main` parses the same options for callers of the library."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from relusym._base.arguments import OneLineArgumentParser, progress_flag
from relusym._base.deadline import Stopwatch
from relusym._exact import linalg as linalg
from relusym.census._chunked import run_census_chunked
from relusym.census._families import run_census
from relusym.census._table import DISTRIBUTIONS, CensusSpec, census_table_text, run_census_table

__all__ = ["HELP", "add_arguments", "run", "main"]

HELP = "classify every network of a small integer grid and check the theorems"


def _count(text: str) -> int:
    """A command-line count: a non-negative integer (argparse reports anything else as a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a count must be 0 or more")
    return value


# ----------------------------------------------------------------------------------------------------------
# the census on executors: chunks of a family (row ranges of its enumeration), tallies merged in chunk order


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a comma-separated list of integers") from None


def _shape(text: str) -> tuple[int, int, int]:
    t = _int_list(text)
    if len(t) != 3 or min(t) < 1:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not M,N,K with three positive integers")
    return t[0], t[1], t[2]


def _main_table(args: argparse.Namespace) -> int:
    from relusym.errors import InvalidNetworkError

    if args.shape is None:
        print("relusym census: -o and --resume need --shape M,N,K (the census table)", file=sys.stderr)
        return 2
    if args.resume and args.output is None:
        print("relusym census: --resume needs -o OUT.parquet (the parts live beside it)", file=sys.stderr)
        return 2
    clock = Stopwatch()
    try:
        spec = CensusSpec(
            shape=args.shape,
            values=args.values,
            sample=args.sample,
            distribution=args.distribution,
            denominators=args.denominators,
            seed=args.seed,
            chunk_size=args.chunk_size or 16384,
            budget=args.budget,
            check_every=args.check_every,
        )
        res = run_census_table(
            spec,
            args.output,
            resume=args.resume,
            workers=args.workers,
            scheduler=args.scheduler,
            dask_local=args.dask_local,
            progress=progress_flag(args),
        )
    except InvalidNetworkError as exc:
        print(f"relusym census: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("relusym census: interrupted; the finished chunks are kept, rerun with --resume", file=sys.stderr)
        return 130
    seconds = clock.elapsed()
    if args.json:
        print(json.dumps(res.summary if not args.timings else {**res.summary, "seconds": round(seconds, 2)}))
    else:
        print(census_table_text(res, seconds))
    return 1 if res.summary["differs"] else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``relusym census [--sample N] [--seed S] [--samples K] [--json]``: print the checked census table;
    ``relusym census --shape M,N,K [--values=V,...] [--sample N --distribution D] -o OUT.parquet [--resume]``:
    the census table, one row per network (docs/census.md).  Exit code 0 when every check passed, 1 otherwise,
    2 for a refused argument.  The same options as the command line's ``relusym census``."""
    p = OneLineArgumentParser(prog="relusym census", description=HELP)
    add_arguments(p)
    return run(p.parse_args(argv))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``relusym census`` (one definition, for the sub-command and for :func:`main`)."""
    p.add_argument("--sample", type=_count, default=None, help="random networks (default 500 of Ω(2,3,1))")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=_count, default=None, help="fibre points drawn per network (default 3)")
    p.add_argument("--limit-121", type=_count, default=None, help="only the first N networks of Ω(1,2,1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, metavar="N", help="chunks on a process pool of N")
    where.add_argument("--dask-local", type=int, default=None, metavar="N", help="chunks on a local Dask cluster")
    where.add_argument("--scheduler", default=None, metavar="ADDR", help="chunks on a Dask scheduler")
    p.add_argument("--chunk-size", type=int, default=None, help="networks per chunk (table: default 16384)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it appears only on a terminal)")
    p.add_argument("--timings", action="store_true", help="include the run time in --json output")
    table = p.add_argument_group("the census table (one row per network, a resumable job)")
    table.add_argument("--shape", type=_shape, default=None, metavar="M,N,K", help="the networks of Ω(M,N,K)")
    table.add_argument("--values", type=_int_list, default=(-1, 0, 1), metavar="V,...",
                       help="the integer entries of the grid (write --values=-1,0,1,2; default -1,0,1)")  # fmt: skip
    table.add_argument("--distribution", choices=DISTRIBUTIONS, default="int", help="of a --sample (default int)")
    table.add_argument("--denominators", type=int, default=3, metavar="D", help="rational: q in 1..D (default 3)")
    table.add_argument("--budget", type=float, default=5.0, help="seconds of fiber per function (default 5)")
    table.add_argument("--check-every", type=_count, default=100, metavar="K",
                       help="classify every K-th network again on itself (default 100; 0: never)")  # fmt: skip
    table.add_argument("-o", "--output", default=None, metavar="OUT.parquet", help="write the table (and parts)")
    table.add_argument("--resume", action="store_true", help="keep the finished parts of an interrupted run")


def run(args: argparse.Namespace) -> int:
    """Run the census that the parsed options ask for; prints its table or JSON; returns the exit code."""
    if args.shape is not None or args.output is not None or args.resume:
        if args.samples is not None or args.limit_121 is not None:
            print(
                "relusym census: --samples and --limit-121 belong to the checked census, not to --shape",
                file=sys.stderr,
            )
            return 2
        return _main_table(args)
    if args.sample is None:
        args.sample = 500
    if args.samples is None:
        args.samples = 3
    if any(x is not None for x in (args.workers, args.dask_local, args.scheduler, args.chunk_size)):
        if args.chunk_size is not None and args.chunk_size < 1:
            print("relusym census: --chunk-size must be at least 1", file=sys.stderr)
            return 2
        census = run_census_chunked(
            sample_231=args.sample,
            seed=args.seed,
            samples=args.samples,
            limit_121=args.limit_121,
            chunk_size=args.chunk_size or 256,
            workers=args.workers,
            scheduler=args.scheduler,
            dask_local=args.dask_local,
            progress=progress_flag(args),
        )
    else:
        census = run_census(
            sample_231=args.sample,
            seed=args.seed,
            samples=args.samples,
            limit_121=args.limit_121,
            progress=progress_flag(args),
        )
    if args.json:
        d = census.to_dict()
        if not args.timings:
            d.pop("seconds", None)
        print(json.dumps(d))
    else:
        print(census.table())
        print(
            f"\n{sum(r.total for r in census.rows)} networks in {census.seconds:.1f} s; "
            f"{'all checks passed' if census.ok else 'SOME CHECKS FAILED'}"
        )
        for row in census.rows:
            for f in row.failures[:10]:
                print("  failed:", f)
    return 0 if census.ok else 1
