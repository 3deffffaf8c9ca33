"""The one error path and the output every command shares: input problems → one sentence, exit 2; anything
else → "internal error", exit 3; a closed stdout → quiet exit with the command's code; Ctrl-C → 130; SIGTERM →
143 (temporaries removed).  The JSON object: ``schema`` first, the command's keys, ``inputs`` last."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from relusym._cli.common import one_line
from relusym.errors import BudgetExceededError, InvalidNetworkError, UnsupportedModelError

__all__ = [
    "split_globals",
    "show_warning",
    "on_signal",
    "install_handlers",
    "input_error",
    "negative_box",
    "quiet_stdout",
    "without_timings",
    "print_result",
    "json_object",
    "SHAPE_KEYS",
]

GLOBAL_FLAGS = ("--debug", "--quiet")


def split_globals(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Take ``--debug``, ``--quiet`` and ``--limit NAME=VALUE`` from anywhere before ``--`` (so that they work
    before or after the command, census included)."""
    opts: dict[str, Any] = {"debug": False, "quiet": False, "limits": []}
    rest: list[str] = []
    it = iter(range(len(argv)))
    for i in it:
        a = argv[i]
        if a == "--":
            rest.extend(argv[i:])
            break
        if a in GLOBAL_FLAGS:
            opts[a[2:]] = True
        elif a == "--limit" and i + 1 < len(argv):
            opts["limits"].append(argv[i + 1])
            next(it, None)
        elif a.startswith("--limit="):
            opts["limits"].append(a.split("=", 1)[1])
        else:
            rest.append(a)
    return opts, rest


def show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    try:
        print(f"warning: {one_line(str(message))}", file=sys.stderr)
    except (OSError, ValueError):
        pass


def on_signal(signum: int, frame: Any) -> None:
    """SIGTERM/SIGINT: remove the temporary files of writes in progress, then exit at once, quietly.  Nothing is
    imported here: the signal may come while ``relusym._base.fileio`` itself is being imported (its functions not yet
    defined), and then no write has begun and there is nothing to remove."""
    remove = getattr(sys.modules.get("relusym._base.fileio"), "remove_temporaries", None)
    if remove is not None:
        remove()
    os._exit(128 + signum)


def install_handlers(quiet: bool) -> Callable[[], None]:
    """Signal handlers, the one-line warning format and --quiet, for the duration of one main() call; returns
    the function that puts back what was there (main() may be called from a program or a test)."""
    import signal
    import warnings

    from relusym._base import progress as _progress

    saved: list[tuple[int, Any]] = []
    for sig, handler in (
        (signal.SIGTERM, on_signal),
        (signal.SIGINT, on_signal),
        # a file-size limit then fails the write (EFBIG: one sentence) instead of killing the process
        (getattr(signal, "SIGXFSZ", None), signal.SIG_IGN),
    ):
        if sig is None:
            continue
        try:
            saved.append((sig, signal.signal(sig, handler)))
        except (ValueError, OSError):  # not the main thread: leave them
            pass
    saved_warnings = warnings.catch_warnings()  # restores the filters and showwarning on __exit__
    saved_warnings.__enter__()
    warnings.showwarning = show_warning
    # what reading assumed is printed once, as a note after the answer (load_with_info): not again as a warning
    warnings.filterwarnings("ignore", message=r".*no activation is recorded \(weights only\)")
    if quiet:
        _progress.silence(True)
        warnings.simplefilter("ignore")

    def restore() -> None:
        for sig, handler in saved:
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError, TypeError):
                pass
        saved_warnings.__exit__(None, None, None)
        if quiet:
            _progress.silence(False)

    return restore


def input_error(exc: BaseException) -> str | None:
    """The sentence for an exception that means "this input (or output path) cannot be used", else None."""
    from relusym.errors import OutputError

    if isinstance(exc, InvalidNetworkError | UnsupportedModelError | BudgetExceededError | OutputError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError):
        return f"this command needs the package {exc.name!r}, which is not installed"
    if isinstance(exc, OverflowError):  # an exact value (or a kink computed from it) beyond float range
        return (
            "the network holds a value (or a kink computed from its values) beyond the range of floating point, "
            "which this command works in; the exact commands (canon, equiv, orbit, stabilizer, fiber, prune -o "
            "x.json) decide it exactly"
        )
    if isinstance(exc, OSError) and exc.errno is not None:
        name = exc.filename if isinstance(exc.filename, str) else os.fsdecode(exc.filename or b"")
        return f"{exc.strerror or exc}{': ' + name if name else ''}"
    return None


NEGATIVE_BOX = re.compile(r"^-[0-9.]")


def negative_box(argv: list[str]) -> list[str]:
    """``--box -1:1`` as ``--box=-1:1`` (also ``--domain`` and ``--xlim``): argparse would take a value starting
    with '-' for an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--box", "--domain", "--xlim") and i + 1 < len(argv) and NEGATIVE_BOX.match(argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final flush stays silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


TIMING_KEYS = ("elapsed_seconds", "elapsed", "seconds", "timings")


def without_timings(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj


SHAPE_KEYS = ("m", "n", "k", "N")


def json_object(command: str, data: dict[str, Any], inputs: list[Any]) -> dict[str, Any]:
    """The one key order of every command's JSON (docs/cli.md): ``schema``, the shape keys the command has
    (m, n, k, N), the command's own keys in their order, ``inputs`` last.  The schema is
    ``relusym.<command>/1`` unless the command's data names a later version of its own (the zoo's summary,
    ``relusym.zoo/2``, is the same document as the file written beside the table); a nested result's schema
    (``relusym.verdict/1`` …) gives way to the command's."""
    own = data.get("schema")
    schema = own if isinstance(own, str) and own.startswith(f"relusym.{command}/") else f"relusym.{command}/1"
    out: dict[str, Any] = {"schema": schema}
    out.update({key: data[key] for key in SHAPE_KEYS if key in data})
    out.update({key: v for key, v in data.items() if key not in (*SHAPE_KEYS, "schema", "inputs")})
    out["inputs"] = inputs
    return out


def print_result(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    """One JSON object (:func:`json_object`, byte-for-byte deterministic: no timings unless ``--timings``) or the
    human report, followed by what reading assumed."""
    inputs = [info.to_dict() for info in getattr(args, "load_infos", [])]
    if args.json:
        out = json_object(args.command, data if getattr(args, "timings", False) else without_timings(data), inputs)
        print(json.dumps(out, default=str, ensure_ascii=False))
        return
    notes = [f"note: {info['source']}: {note}" for info in inputs for note in info["notes"]]
    print("\n".join([text, *notes]) if notes else text)
