"""Reading and writing networks: one module per format, each with the same small protocol.

A format module defines ``NAME``, ``SUFFIXES``, ``sniff(path, head) -> bool``, ``load(path) -> Network``,
``save(net, path, like=None)`` and, for in-memory models, ``accepts(obj) -> bool`` and
``from_object(obj) -> Network``.  Heavy packages are imported inside those functions only.
"""

from __future__ import annotations

import importlib
import os
import stat
import struct
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

from .._fileio import atomic_path, check_output, temporary_file
from .._limits import Limits, file_limit, limits, shorten
from .._limits import current as current_limits
from .._network import Network
from ..errors import InvalidNetworkError, UnsupportedModelError

__all__ = ["load", "save", "format_of", "FORMATS", "input_box", "Limits", "limits", "is_stdin", "STDIN"]

# module names under relusym.io, in the order they are tried
FORMATS: tuple[str, ...] = (
    "_json_format",
    "_npz_format",
    "_safetensors_format",
    "_onnx_format",
    "_torch_format",
    "_flax_format",
    "_sklearn_format",
    "_nnet_format",
)


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:  # a format module not shipped in this build
        if exc.name and exc.name.endswith(name):
            return None
        raise


def _modules() -> list[ModuleType]:
    return [mod for mod in (_module(n) for n in FORMATS) if mod is not None]


def format_of(path: str | os.PathLike[str], *, for_writing: bool = False) -> ModuleType:
    """The format module for a file: by content when it exists (reading), else by suffix."""
    p = Path(path)
    mods = _modules()
    if not for_writing:
        _check_input(p)
        with open(p, "rb") as fh:
            head = fh.read(64)
        if not head:
            raise InvalidNetworkError(f"{p} is empty")
        for mod in mods:
            if mod.sniff(p, head):
                return mod
    suffix = p.suffix.lower()
    for mod in mods:
        if suffix in mod.SUFFIXES:
            return mod
    known = sorted({s for mod in mods for s in mod.SUFFIXES})
    what = "write" if for_writing else "recognise the format of"
    raise UnsupportedModelError(f"cannot {what} {p}: supported files are {', '.join(known)}")


# ----------------------------------------------------------------------------------------------------------
# input checks: regular files only (or standard input), sizes within the limits, every failure one sentence

STDIN = "-"
_STDIN_NAMES = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
_STDIN_LABEL = "<stdin>"
# what a reader raises on malformed data (anything else escaping a reader is a bug, reported as such)
_DATA_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    OverflowError,
    EOFError,
    KeyError,
    IndexError,
    UnicodeError,
    RecursionError,
    MemoryError,
    zipfile.BadZipFile,
    struct.error,
)


def _check_input(p: Path) -> os.stat_result:
    """A readable regular file (symlinks followed): never a device, FIFO or socket, which could block or never
    end."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InvalidNetworkError(f"{p}: no such file") from None
    except OSError as exc:
        raise InvalidNetworkError(f"cannot read {p}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InvalidNetworkError(f"{p} is a directory, not a network file")
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(st.st_mode)
            else "a character device"
            if stat.S_ISCHR(st.st_mode)
            else "a block device"
            if stat.S_ISBLK(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "not a regular file"
        )
        raise InvalidNetworkError(
            f"{p} is {kind}, not a regular file; relusym reads regular files, or standard input given as -"
        )
    if not os.access(p, os.R_OK):
        raise InvalidNetworkError(f"cannot read {p}: permission denied")
    return st


def is_stdin(source: Any) -> bool:
    """True for ``-`` and for ``/dev/stdin`` when standard input is not a regular file (a pipe)."""
    if not isinstance(source, str | os.PathLike):
        return False
    text = os.fspath(source)
    if text == STDIN:
        return True
    if text in _STDIN_NAMES:
        try:
            return not stat.S_ISREG(os.stat(text).st_mode)
        except OSError:
            return True
    return False


def _spool_stdin(target: Path) -> None:
    """Standard input copied once into a private file (readers need a seekable file), within the limits: the
    format is recognised from the first bytes before more is read, and the format's size limit applies."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise InvalidNetworkError("standard input is not available")
    lim = current_limits()
    cap = lim.stdin_bytes
    with open(target, "wb") as out:
        head = stream.read(64)
        while head and len(head) < 64:  # a pipe may deliver the first bytes in pieces
            more = stream.read(64 - len(head))
            if not more:
                break
            head += more
        if not head:
            raise InvalidNetworkError("standard input is empty")
        out.write(head)
        out.flush()
        mods = [mod for mod in _modules() if _sniffs(mod, target, head)]
        if not mods and not head.startswith(b"PK"):  # a zip (NPZ, torch) is recognised once it is complete
            raise UnsupportedModelError("cannot recognise the format of standard input from its first bytes")
        if mods and all(mod.NAME == mods[0].NAME for mod in mods):
            cap = min(cap, file_limit(mods[0].NAME))
        name = mods[0].NAME if len(mods) == 1 else "stdin"
        total = len(head)
        while True:
            chunk = stream.read(1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise InvalidNetworkError(
                    f"standard input is larger than {cap} bytes, the limit for {name} input "
                    f"(raise it with --limit {name}_bytes=N)"
                )
            out.write(chunk)


def _sniffs(mod: ModuleType, path: Path, head: bytes) -> bool:
    try:
        return bool(mod.sniff(path, head))
    except Exception:  # a sniffer that trips over a partial file does not recognise it
        return False


def _relabel(exc: Exception, real: Path) -> Exception:
    """The same error with the private spool file's path and name replaced by ``<stdin>``."""
    msg = str(exc).replace(str(real), _STDIN_LABEL).replace(real.name, _STDIN_LABEL)
    return type(exc)(msg)


def _read_checked(p: Path, kwargs: dict[str, Any]) -> Network:
    mod = format_of(p)
    size = os.stat(p).st_size
    cap = file_limit(mod.NAME)
    if size > cap:
        raise InvalidNetworkError(
            f"{p} is {size} bytes, more than the limit {mod.NAME}_bytes = {cap} (raise it with "
            f"--limit {mod.NAME}_bytes=N)"
        )
    try:
        return mod.load(p, **kwargs)  # type: ignore[no-any-return]
    except (InvalidNetworkError, UnsupportedModelError):
        raise
    except FileNotFoundError as exc:
        raise InvalidNetworkError(f"{p}: cannot read {exc.filename or 'a file it refers to'}: no such file") from None
    except OSError as exc:
        raise InvalidNetworkError(f"cannot read {p}: {exc.strerror or shorten(str(exc), 100)}") from None
    except _DATA_ERRORS as exc:
        raise InvalidNetworkError(
            f"{p} is not a readable {mod.NAME} file (truncated or corrupted?): {type(exc).__name__}: "
            f"{shorten(str(exc).strip().splitlines()[0] if str(exc).strip() else '', 100)[1:-1]}"
        ) from None


def load(source: Any, **kwargs: Any) -> Network:
    """A network from a path (any supported format, found from the content) or an in-memory object:
    a ``Network``, a ``relusym.network/1`` dict, a torch module or state_dict, a fitted scikit-learn MLP, a
    Flax parameter dict or an ONNX ModelProto."""
    if isinstance(source, Network):
        return source
    if isinstance(source, str | os.PathLike):
        if is_stdin(source):
            with temporary_file("relusym-stdin-") as spooled:
                _spool_stdin(spooled)
                try:
                    return _read_checked(spooled, kwargs)
                except (InvalidNetworkError, UnsupportedModelError) as exc:
                    raise _relabel(exc, spooled) from None
        return _read_checked(Path(source), kwargs)
    if isinstance(source, dict) and "V" in source and "A" in source:
        return Network.from_dict(source)
    for mod in _modules():
        accepts = getattr(mod, "accepts", None)
        if accepts is not None and accepts(source):
            return mod.from_object(source)  # type: ignore[no-any-return]
    raise UnsupportedModelError(
        f"cannot read a network from a {type(source).__module__}.{type(source).__name__} object; supported: "
        "file paths, relusym.Network, relusym.network/1 dicts, torch modules and state_dicts, fitted "
        "scikit-learn MLPs, Flax parameter dicts and ONNX models"
    )


def save(net: Network, path: str | os.PathLike[str], *, like: str | os.PathLike[str] | None = None) -> None:
    """Write ``net`` to ``path`` atomically (a temporary file in the same folder, then a rename).

    The format is ``like``'s when given (the original file, whose layout is reproduced), else the suffix's.
    """
    if not isinstance(net, Network):
        raise InvalidNetworkError(f"save needs a Network, got {type(net).__name__}")
    p = Path(path)
    mod = format_of(like) if like is not None else format_of(p, for_writing=True)
    check_output(p)
    with atomic_path(p) as tmp:
        mod.save(net, tmp, like=Path(like) if like is not None else None)


def input_box(path: str | os.PathLike[str]) -> Any:
    """The input box of an NNet file (its per-input minima and maxima, exactly), a :class:`relusym.Box`."""
    from ._nnet_format import input_box as _input_box

    return _input_box(Path(path))
