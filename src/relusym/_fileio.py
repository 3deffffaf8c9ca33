"""Atomic file writes: the one mechanism every writer of relusym uses.

A file is written to a temporary sibling named ``.<name>.relusym-<random>.tmp`` in the target's folder, flushed
and fsynced, given the permissions a plain ``open(path, "w")`` would give (``0o666`` less the umask), and renamed
over the target with :func:`os.replace`.  A reader therefore sees the old file, or the complete new one, never a
half-written one.  If the write fails (an exception, a full disk, a file-size limit) the temporary file is removed.
Temporaries left by a process killed with SIGKILL (which no code can intercept) carry relusym's own naming and are
swept by :func:`sweep_stale` on the next write into the same folder.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["TMP_MARK", "atomic_path", "atomic_write", "current_umask", "sweep_stale", "temporaries"]

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
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends normally it is renamed onto ``path``.

    For writers that need a file name (torch.save, safetensors, onnx.save, h5py).  On any exception the temporary
    file is removed and the exception propagates; the target is untouched.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    sweep_stale(folder, target.name)
    tmp = folder / f".{target.name}{TMP_MARK}{secrets.token_hex(4)}.tmp"
    _live.add(str(tmp))
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"the writer produced no file for {target}")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
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
