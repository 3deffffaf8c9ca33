"""A small file read once: :func:`relusym.io.load` reads a file of at most :data:`WHOLE` bytes (and within every
format's size limit) in one ``read`` and hands its bytes to the format's sniffer and reader, which would
otherwise open it again each (an NPZ was opened three times and its zip directory parsed four times: about
two thirds of reading a small network, the main cost of a zoo folder of model files).  The bytes are a snapshot:
detection and reading see the same file, even when it is replaced meanwhile.

The snapshot is this thread's, for the duration of one :func:`preloaded` block, and only for that path; a reader
that finds none opens the path itself, as before.  A reader may keep what it parsed of the bytes in
``Snapshot.cache`` (the NPZ keeps its ``zipfile.ZipFile``), so that the sniffer's parse serves the reader."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["WHOLE", "Snapshot", "preloaded", "snapshot"]

WHOLE = 1 << 20  # bytes: a file up to this size is read whole, once

_LOCAL = threading.local()


@dataclass
class Snapshot:
    """The bytes of ``path`` as read once, and what readers parsed of them (``cache``)."""

    path: Path
    data: bytes
    cache: dict[str, Any] = field(default_factory=dict)


@contextmanager
def preloaded(path: Path, data: bytes | None) -> Iterator[Snapshot | None]:
    """Within the block, :func:`snapshot` of ``path`` gives ``data`` (None: no snapshot, readers open the path)."""
    old = getattr(_LOCAL, "snap", None)
    snap = Snapshot(path, data) if data is not None else None
    _LOCAL.snap = snap
    try:
        yield snap
    finally:
        _LOCAL.snap = old
        if snap is not None:
            snap.cache.clear()


def snapshot(path: Path) -> Snapshot | None:
    """This thread's snapshot of ``path``, when a :func:`preloaded` block holds one."""
    snap: Snapshot | None = getattr(_LOCAL, "snap", None)
    return snap if snap is not None and snap.path == path else None
