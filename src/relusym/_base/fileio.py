"""Atomic file writes: the one mechanism every writer of relusym uses.

A file is written to a temporary sibling named ``.<name>.relusym-<random>.tmp`` in the target's folder, flushed
and fsynced (except a zoo's parts, which their reader checks whole), given the permissions a plain
``open(path, "w")`` would give (``0o666`` less the umask), and renamed over the target with :func:`os.replace`.
A reader therefore sees the old file, or the complete new one, never a half-written one.  If the write fails (an
exception, a full disk, a file-size limit) the temporary file is removed.  Temporaries left by a process killed
with SIGKILL (which no code can intercept) carry relusym's own naming and are swept by :func:`sweep_stale` on
the next write into the same folder.
"""

from __future__ import annotations

import errno
import os
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from relusym.errors import BudgetExceededError, InvalidNetworkError, OutputError, UnsupportedModelError

__all__ = [
    "TMP_MARK",
    "atomic_path",
    "atomic_write",
    "check_output",
    "current_umask",
    "remove_temporaries",
    "sweep_stale",
    "temporaries",
    "temporary_file",
]

TMP_MARK = ".relusym-"
_STALE_AFTER_S = 3600.0  # a temporary older than this cannot belong to a live write of ours
_live: set[str] = set()  # temporaries of this process, removed by the signal handlers of the CLI


def current_umask() -> int:
    """The process umask (read without changing it for longer than one call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temporaries() -> frozenset[str]:
    """The temporary files this process is writing right now (for cleanup on SIGTERM/SIGINT)."""
    return frozenset(_live)


@contextmanager
def temporary_file(prefix: str) -> Iterator[Path]:
    """A private temporary file (mode 0o600, in the system's temporary folder) that is removed when the block
    ends, and by :func:`remove_temporaries` if a signal ends the process first (standard input is spooled here)."""
    import tempfile

    fd, name = tempfile.mkstemp(prefix=prefix)
    os.close(fd)
    _live.add(name)
    try:
        yield Path(name)
    finally:
        _live.discard(name)
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


def remove_temporaries() -> None:
    """Unlink every temporary this process is writing (the CLI's SIGTERM/SIGINT handlers call this just before
    exiting; a temporary already renamed onto its target is gone and is skipped)."""
    for name in list(_live):
        try:
            os.unlink(name)
        except OSError:
            pass


def _full(p: Path) -> str:
    """A path as the person typed it (relative stays relative): messages name what was given, not where the
    process happens to run."""
    return os.fspath(p)


def check_output(path: str | os.PathLike[str], inputs: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """Refuse, before any work, an output path that cannot be written: its folder is missing or not a folder or
    not writable, it is a folder itself, it is standard input/output, or it is one of the ``inputs`` (the same
    file, links followed).  The message names the path as it was given."""
    target = Path(path)
    full = _full(target)
    if os.fspath(path) in ("", "-"):
        raise OutputError(f"cannot write to {os.fspath(path)!r}: an output file name is needed")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.exists():
        raise OutputError(f"cannot write {full}: the folder {_full(folder)} does not exist")
    if not folder.is_dir():
        raise OutputError(f"cannot write {full}: {_full(folder)} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {full}: the folder {_full(folder)} is not writable")
    if target.is_dir():
        raise OutputError(f"cannot write {full}: it is a folder")
    if target.exists() and not target.is_file():
        raise OutputError(f"cannot write {full}: it exists and is not a regular file")
    for inp in inputs:
        if os.fspath(inp) == "-":
            continue
        try:
            same = target.exists() and os.path.samefile(target, inp)
        except OSError:
            same = False
        if same or os.path.realpath(target) == os.path.realpath(inp):
            raise OutputError(f"cannot write {full}: it is the input file {os.fspath(inp)}; choose another name")
    return target


_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EFBIG: "the file-size limit was reached",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOENT: "no such file or folder (was the folder removed?)",
}
_TEXT_REASONS = (
    ("no space left", errno.ENOSPC),
    ("storagefull", errno.ENOSPC),
    ("file too large", errno.EFBIG),
    ("filetoolarge", errno.EFBIG),
    ("quota", errno.EDQUOT),
)
_WRITER_MODULES = ("safetensors", "onnx", "google.protobuf", "h5py", "msgpack", "torch")


def _probe(tmp: Path | None) -> int | None:
    """Why a writer that reports no errno failed (torch's "unexpected pos"): a file-size limit reached by the
    temporary file, or a file system with no space left."""
    if tmp is None:
        return None
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if soft != resource.RLIM_INFINITY and tmp.exists() and tmp.stat().st_size + 65536 >= soft:
            return errno.EFBIG
    except (ImportError, OSError, ValueError):
        pass
    try:
        vfs = os.statvfs(tmp.parent)
        if vfs.f_bavail * vfs.f_frsize < 65536:
            return errno.ENOSPC
    except OSError:
        pass
    return None


def _failure(target: Path, exc: BaseException, tmp: Path | None = None) -> OutputError:
    code = getattr(exc, "errno", None)
    text = str(exc).lower().replace(" ", "")
    if code not in _REASONS:
        code = next((c for t, c in _TEXT_REASONS if t.replace(" ", "") in text), None)
    if code not in _REASONS:
        code = _probe(tmp)
    if code in _REASONS:
        reason = _REASONS[code]
    else:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reason = first if len(first) <= 120 else first[:119] + "…"
    err = OutputError(f"cannot write {_full(target)}: {reason}; nothing was written")
    err.errno = code
    return err


def sweep_stale(folder: Path, name: str | None = None) -> None:
    """Remove relusym temporaries in ``folder`` left by killed processes: those of ``name`` (the target being
    written again) whatever their age, and any other of ours older than an hour."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        if TMP_MARK not in entry.name or not entry.name.endswith(".tmp") or entry.path in _live:
            continue
        ours = name is not None and entry.name.startswith(f".{name}{TMP_MARK}")
        try:
            if ours or now - entry.stat(follow_symlinks=False).st_mtime > _STALE_AFTER_S:
                os.unlink(entry.path)
        except OSError:
            pass


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, sync: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends normally it is renamed onto ``path``.

    For writers that need a file name (torch.save, safetensors, onnx.save, h5py).  On any exception the temporary
    file is removed and the exception propagates; the target is untouched.  ``sync=False`` skips the fsync before
    the rename, for files whose reader checks them whole (a zoo's parts: after a power loss the renamed file can
    be empty or short, never another file's or a half-written one's bytes that pass the reader's checks).
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    sweep_stale(folder, target.name)
    tmp = folder / f".{target.name}{TMP_MARK}{secrets.token_hex(4)}.tmp"
    _live.add(str(tmp))
    try:
        try:
            yield tmp
            if not tmp.exists():
                raise FileNotFoundError(f"the writer produced no file for {target}")
            if sync:
                with open(tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~current_umask())
            os.replace(tmp, target)
        except (InvalidNetworkError, UnsupportedModelError, BudgetExceededError, OutputError):
            raise
        except OSError as exc:  # a full disk, a size limit, a vanished folder: one sentence, nothing left
            raise _failure(target, exc, tmp) from exc
        except Exception as exc:  # a writer library's own error type (SafetensorError, torch's RuntimeError)
            if isinstance(exc, RuntimeError) or type(exc).__module__.split(".")[0] in _WRITER_MODULES:
                raise _failure(target, exc, tmp) from exc
            raise
    finally:
        _live.discard(str(tmp))
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Write a file atomically: ``write`` receives a binary file object open on the temporary file."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
