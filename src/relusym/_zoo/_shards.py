"""Stacked shards (``V`` B×k×n, ``A`` B×n×m, ``b`` B×n, ``c`` B×k in one ``.npz`` or ``.safetensors`` file): the
shape that makes a file a shard, found when a zoo job is planned, and the rows of one task, read by the process
that runs it (only those rows, straight from their offset in the archive)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from relusym._base.limits import npy_header
from relusym.errors import InvalidNetworkError

__all__ = ["UNKNOWN", "npz_rows", "read_stack", "stack_shape", "stored_shape"]

_NPY_HEADER_CAP = 10000  # numpy's own default bound on an .npy header

UNKNOWN = (-1,)


def stored_shape(path: Path, member: bytes) -> tuple[int, ...] | None:
    """The shape in the header of the stored (uncompressed) ``.npy`` member ``member`` of a zip archive, found
    from the archive's central directory by hand (``zipfile.ZipFile`` parses every entry into objects; planning a
    folder reads one header per file, in the client, before any worker starts): one ``pread`` of the file's last
    64 KiB (a small file whole), which holds the directory and, in a small file, the member's header too; None
    when the archive has no such member; :data:`UNKNOWN` when the archive is not of the plain kind numpy writes
    (a comment, zip64 offsets, a compressed or encrypted member: then ``zipfile`` reads it)."""
    import io
    import os
    import struct

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if size < 22:
            return UNKNOWN
        tail = os.pread(fd, min(size, _TAIL), size - min(size, _TAIL))
        base = size - len(tail)

        def read(offset: int, count: int) -> bytes:
            if base <= offset and offset + count <= size:
                return tail[offset - base : offset - base + count]
            return os.pread(fd, count, offset)

        end = tail[-22:]
        if end[:4] != b"PK\x05\x06" or end[20:22] != b"\x00\x00":
            return UNKNOWN
        cd_size, cd_offset = struct.unpack("<II", end[12:20])
        if cd_offset == 0xFFFFFFFF or cd_offset + cd_size > size - 22:
            return UNKNOWN
        cd = read(cd_offset, cd_size)
        pos, local = 0, None
        while pos + 46 <= len(cd):
            if cd[pos : pos + 4] != b"PK\x01\x02":
                return UNKNOWN
            flags, method = struct.unpack("<HH", cd[pos + 8 : pos + 12])
            n_name, n_extra, n_comment = struct.unpack("<HHH", cd[pos + 28 : pos + 34])
            if cd[pos + 46 : pos + 46 + n_name] == member:
                offset = struct.unpack("<I", cd[pos + 42 : pos + 46])[0]
                if flags & 0x1 or method != 0 or offset == 0xFFFFFFFF:
                    return UNKNOWN
                local = offset  # the last entry of that name, as zipfile's getinfo
            pos += 46 + n_name + n_extra + n_comment
        if pos != len(cd):
            return UNKNOWN
        if local is None:
            return None
        head = read(local, 30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            return UNKNOWN
        n_name, n_extra = struct.unpack("<HH", head[26:30])
        data = local + 30 + n_name + n_extra
        fh = io.BytesIO(read(data, max(0, min(size - data, 12 + _NPY_HEADER_CAP))))
    finally:
        os.close(fd)
    version = np.lib.format.read_magic(fh)
    return tuple(int(x) for x in npy_header(fh, version, _NPY_HEADER_CAP)[0])


_TAIL = 1 << 16  # bytes read from the end of an archive to find its directory (a small archive: all of it)


def stack_shape(path: Path) -> tuple[int, ...] | None:
    """The shape of ``A`` when ``path`` is a stacked shard (three dimensions), else None."""
    try:
        if path.suffix.lower() == ".npz":
            import zipfile

            fast = stored_shape(path, b"A.npy")
            if fast != UNKNOWN:
                return fast if fast is not None and len(fast) == 3 else None
            with zipfile.ZipFile(path) as zf:
                if "A.npy" not in zf.namelist():
                    return None
                with zf.open("A.npy") as fh:
                    version = np.lib.format.read_magic(fh)
                    shape = npy_header(fh, version, _NPY_HEADER_CAP)[0]
            return tuple(int(x) for x in shape) if len(shape) == 3 else None
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as f:
            if "A" not in f.keys():
                return None
            shape = f.get_slice("A").get_shape()
        return tuple(int(x) for x in shape) if len(shape) == 3 else None
    except Exception:  # noqa: BLE001 - unreadable: it becomes a model file, whose loader reports the error
        return None


def npz_rows(zf: Any, name: str, start: int, stop: int) -> np.ndarray:
    """Rows start..stop of the array ``name`` of an open .npz (a ``zipfile.ZipFile``), reading only those rows
    when the member is a C-ordered array of a plain dtype (a stored member straight from its offset in the
    archive, see :func:`_stored_rows`; a deflated one decompressed up to it), else the whole array and then the
    rows."""
    import zipfile

    info = zf.getinfo(name + ".npy")
    if info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1 and hasattr(zf.fp, "seek"):
        got = _stored_rows(zf.fp, info, start, stop)
        if got is not None:
            return got
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        shape, fortran, dtype = npy_header(fh, version, _NPY_HEADER_CAP)
        if fortran or dtype.hasobject or not shape:
            fh.seek(0)
            return np.asarray(np.lib.format.read_array(fh, allow_pickle=False))[start:stop]
        stop = min(stop, shape[0])
        start = min(start, stop)
        row = dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
        fh.seek(fh.tell() + start * row)  # a deflated member: decompressed up to the rows
        buf = fh.read((stop - start) * row)
        return np.frombuffer(buf, dtype=dtype).reshape((stop - start,) + tuple(shape[1:]))


def _stored_rows(fp: Any, info: Any, start: int, stop: int) -> np.ndarray | None:
    """Rows start..stop of a stored (uncompressed) .npy member, read from the archive's file at the member's
    offset (its local header's fixed 30 bytes, then its name and extra field, then the .npy header): Python's
    ``ZipExtFile.seek`` before 3.12 reads and checksums every byte up to the target, which made a task of a
    large shard read all the rows before its own.  None when the member is not a C-ordered plain array (the
    caller then reads it whole)."""
    import struct

    fp.seek(info.header_offset)
    local = fp.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        return None
    n_name, n_extra = struct.unpack("<HH", local[26:30])
    data = info.header_offset + 30 + n_name + n_extra
    fp.seek(data)
    version = np.lib.format.read_magic(fp)
    shape, fortran, dtype = npy_header(fp, version, _NPY_HEADER_CAP)
    if fortran or dtype.hasobject or not shape:
        return None
    stop = min(stop, shape[0])
    start = min(start, stop)
    row = dtype.itemsize * math.prod(int(x) for x in shape[1:])
    first = fp.tell()
    if first + stop * row > data + info.compress_size:  # a header that claims more than its member holds
        raise InvalidNetworkError(f"{info.filename}: the member ends before row {stop} (its header claims more rows)")
    mapped = _mapped(fp, first + start * row, (stop - start) * row)
    if mapped is not None:
        return np.frombuffer(
            mapped[0], dtype=dtype, offset=mapped[1], count=(stop - start) * row // dtype.itemsize
        ).reshape((stop - start,) + tuple(shape[1:]))
    fp.seek(first + start * row)
    buf = fp.read((stop - start) * row)
    if len(buf) != (stop - start) * row:
        raise InvalidNetworkError(f"{info.filename}: the member ends before row {stop} (a truncated archive)")
    return np.frombuffer(buf, dtype=dtype).reshape((stop - start,) + tuple(shape[1:]))


_MAP_MIN = 1 << 20  # rows of at least this many bytes are memory-mapped (smaller ones are read: a map costs more)


def _mapped(fp: Any, pos: int, size: int) -> tuple[Any, int] | None:
    """The bytes pos..pos + size of the open file ``fp`` memory-mapped read-only (the map and the bytes' offset in
    it), when they are at least :data:`_MAP_MIN` and lie inside the file as it is now; else None (the caller reads
    them).  A task's rows of a shard are mostly many megabytes: read, they were copied out of the page cache into
    fresh memory (at 8-64-1, about 1.4 s of system time per 10^6 networks of a serial job); mapped, the kernel
    reads them where they are.  (A file truncated by another program while a task maps it would end the task's
    process, as with numpy's own ``mmap_mode``; the sizes are checked against the file before it is mapped.)"""
    import mmap
    import os

    if size < _MAP_MIN:
        return None
    try:
        fd = fp.fileno()
        if os.fstat(fd).st_size < pos + size:
            return None  # the caller's read reports the truncated archive
        base = pos - pos % mmap.ALLOCATIONGRANULARITY
        return mmap.mmap(fd, pos + size - base, offset=base, access=mmap.ACCESS_READ), pos - base
    except (AttributeError, OSError, ValueError):  # no descriptor (an archive in memory), no maps: read it
        return None


def read_stack(path: str, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if path.lower().endswith(".npz"):
        import zipfile

        with zipfile.ZipFile(path) as zf:
            keys = {x[:-4] for x in zf.namelist() if x.endswith(".npy")}
            missing = [x for x in ("V", "A", "b") if x not in keys]
            if missing:
                raise InvalidNetworkError(f"{path}: the stacked shard has no array {', '.join(missing)}")
            V, A, b = (npz_rows(zf, x, start, stop) for x in ("V", "A", "b"))
            c = npz_rows(zf, "c", start, stop) if "c" in keys else np.zeros((stop - start, V.shape[1]), dtype=V.dtype)
    else:
        from safetensors import safe_open

        with safe_open(path, framework="numpy") as f:
            keys = set(f.keys())
            missing = [x for x in ("V", "A", "b") if x not in keys]
            if missing:
                raise InvalidNetworkError(f"{path}: the stacked shard has no array {', '.join(missing)}")
            V = f.get_slice("V")[start:stop]
            A = f.get_slice("A")[start:stop]
            b = f.get_slice("b")[start:stop]
            c = f.get_slice("c")[start:stop] if "c" in keys else np.zeros((stop - start, V.shape[1]), dtype=V.dtype)
    B = stop - start
    if A.ndim != 3 or V.ndim != 3 or b.ndim != 2 or c.ndim != 2 or A.shape[0] != B or V.shape[0] != B:
        raise InvalidNetworkError(
            f"{path}: a stacked shard needs V (B×k×n), A (B×n×m), b (B×n), c (B×k); got V {V.shape}, A {A.shape}, "
            f"b {b.shape}, c {c.shape}"
        )
    return V, A, b, c
