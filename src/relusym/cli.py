"""The ``relusym`` command line (interfaces.md, "Command line").  It parses arguments, calls the API and renders
results; no mathematics lives here.  Exit codes: 0 yes/ok, 1 no (not equivalent, not in orbit), 2 unusable
input (nothing is written then), 3 internal error, 4 undecided (``equiv`` of deep networks).

The parts live in :mod:`relusym._cli`: the parser (``parser``), the one error path and the shared JSON output
(``runtime``), what every command shares (``common``) and one module per group of commands (``single``,
``compare``, ``prune``, ``pictures``, ``identify``, ``zoo``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from relusym._cli.common import STREAMED, Result, one_line
from relusym._cli.parser import build_parser
from relusym._cli.runtime import input_error, install_handlers, negative_box, print_result, quiet_stdout, split_globals
from relusym._cli.runtime import on_signal as _on_signal  # noqa: F401  (the SIGTERM/SIGINT handler, by its old name)

__all__ = ["main", "script", "build_parser"]


def _run(argv: list[str]) -> tuple[str, argparse.Namespace | None, Result]:
    parser = build_parser()
    args = parser.parse_args(negative_box(argv))
    if not getattr(args, "func", None):
        parser.print_help()
        return "", None, ({}, "", 2)
    data, text, code = args.func(args)
    return args.command, args, (data, text, code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts, argv = split_globals(argv)
    restore = install_handlers(bool(opts["quiet"]))
    # numbers are bounded by the input limits (relusym._base.limits), so Python's own guard against converting huge
    # integers to and from text would only turn a raised --limit max_digits into an internal error
    get_digits = getattr(sys, "get_int_max_str_digits", None)
    digits = get_digits() if get_digits is not None else None
    if digits is not None:
        sys.set_int_max_str_digits(0)
    try:
        return _main(argv, opts)
    finally:
        restore()
        if digits is not None:
            sys.set_int_max_str_digits(digits)


def script() -> int:
    """The ``relusym`` program (its console script and ``python -m relusym``): :func:`main` on ``sys.argv``, then
    every object the process holds moved out of the garbage collector's sight (:func:`gc.freeze`) before the
    interpreter exits.  Its exit otherwise collects them once more, numba's and LLVM's many among them: 0.13 s
    of a 0.18 s exit after a zoo job that loaded the compiled kernels (measured with ``python -m relusym zoo``
    on a 10^6-network shard), paid by every such run.  Everything :func:`main` writes is closed and flushed by
    then; atexit handlers and the freeing of objects by their reference counts still run.  A zoo or census job
    leaves its BLAS libraries at one thread for the exit (:func:`relusym._zoo._processes.ends_with_the_command`)."""
    import gc

    from relusym._zoo._processes import ends_with_the_command

    ends_with_the_command()  # a job's BLAS threads are not restarted for the exit (see there)
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    gc.freeze()
    return code


def _main(argv: list[str], opts: dict[str, Any]) -> int:
    debug = bool(opts["debug"])
    for stream in (sys.stdout, sys.stderr):  # file names that are not UTF-8 are printed as \xNN, never a crash
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    command = next((a for a in argv if not a.startswith("-")), "")
    try:
        from relusym._base import limits as _limits

        lim = _limits.current()
        for spec in opts["limits"]:
            lim = _limits.from_spec(spec, lim)
        with _limits.limits(lim):  # --limit: for this call only
            command, args, (data, text, code) = _run(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, its message already printed)
        code = exc.code if isinstance(exc.code, int) else 2
        return 2 if code == 1 else code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        quiet_stdout()
        return 2
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        sentence = input_error(exc)
        prefix = f"relusym {command}: " if command else "relusym: "
        if sentence is not None:
            print(prefix + one_line(sentence), file=sys.stderr)
            return 2
        hint = "" if debug else "; rerun with --debug for the traceback"
        print(
            prefix + f"internal error: {type(exc).__name__}: {one_line(str(exc))[:300]} (this is a bug in relusym"
            f"{hint})",
            file=sys.stderr,
        )
        return 3
    try:
        if args is not None and data is not STREAMED:
            print_result(args, data, text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. relusym canon net.json | head -1: the reader is gone, the answer stands
        quiet_stdout()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(script())
