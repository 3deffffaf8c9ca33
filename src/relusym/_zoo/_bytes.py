"""The byte strings of the zoo's batched digests (:mod:`relusym._zoo._digest`): the blocks of the digest's
definition (relusym/_core/digest.py) for a whole batch of networks as padded segments, each row beginning with
that network's bytes, compressed end to end and hashed one slice per network."""

from __future__ import annotations

import hashlib

import numpy as np

from relusym._core.digest import digest_header
from relusym._zoo._ints import bit_length

__all__ = ["Ragged", "headers", "bytes_of", "le_into"]

_SMALL_BLOCK = 32  # integer blocks of at most this many entries are packed by masks, larger ones width by width


def headers(m: int, k: int, N: np.ndarray) -> np.ndarray:
    """The first bytes of every network's digest (:func:`relusym._core.digest.digest_header`), one row each."""
    B = N.shape[0]
    head = np.empty((B, 37), dtype=np.uint8)
    head[:] = np.frombuffer(digest_header(m, k, 0), dtype=np.uint8)
    head[:, 29:] = N.astype("<u8").view(np.uint8).reshape(B, 8)
    return head


def bytes_of(x: np.ndarray) -> np.ndarray:
    """Bytes of each nonnegative int64 entry up to its last nonzero byte (0 for 0)."""
    return (bit_length(x) + 7) >> 3


def _low_bytes(mag: np.ndarray, w: int) -> np.ndarray:
    """The first w bytes of every entry of ``mag`` (B, S, nb) uint8, as a (B, S·w) matrix: one copy of w-byte
    fields (a structured view), not a strided byte slice."""
    B, S, nb = mag.shape
    if w == nb or S == 0:
        return np.ascontiguousarray(mag[:, :, :w]).reshape(B, S * w)
    field = np.dtype({"names": ["f"], "formats": [f"V{w}"], "offsets": [0], "itemsize": nb})
    low = np.ascontiguousarray(np.ascontiguousarray(mag).reshape(B, S * nb).view(field)["f"])
    return low.view(np.uint8).reshape(B, S * w)


class Ragged:
    """The digest bytes of a batch of networks as padded segments: every segment is a (B, width) uint8 matrix
    whose row i begins with the bytes of network i (all of the row, or a prefix of ``lens[i]`` bytes); the
    strings are the prefixes row by row (one compress of the whole batch), hashed one slice at a time."""

    def __init__(self, B: int) -> None:
        self.B = B
        self.data: list[np.ndarray] = []
        self.lens: list[np.ndarray | None] = []

    def fixed(self, rows: np.ndarray) -> None:
        self.data.append(rows)
        self.lens.append(None)

    def block(self, mag: np.ndarray, neg: np.ndarray, cnt: np.ndarray | None, w: np.ndarray) -> None:
        """Integer blocks: ``mag`` (B, S, ≥ max w) uint8 little-endian magnitudes, ``neg`` (B, S) signs (False
        beyond ``cnt``), ``cnt`` entries per network (None: all S), ``w`` (B,) the widths (max(1, w) used).
        Networks of one width are packed together (a few widths per batch), each row at its own width."""
        B, S = neg.shape
        w = np.maximum(w, 1)
        wb = int(w.max(initial=1))
        self.fixed(w.astype("<u4").view(np.uint8).reshape(B, 4))
        full = cnt is None or bool((cnt == S).all())
        count = np.full(B, S, dtype=np.int64) if cnt is None else cnt
        if bool((w == wb).all()):
            self.data.append(_low_bytes(mag, wb))
            self.lens.append(None if full else count * wb)
        elif S <= _SMALL_BLOCK:  # a few entries: the bytes under each row's width, moved to the row's front
            n_b = count * w
            body = np.zeros((B, S * wb), dtype=np.uint8)
            ent = np.arange(S) < count[:, None]
            keep = ent[:, :, None] & (np.arange(wb) < w[:, None, None])
            body[np.arange(S * wb) < n_b[:, None]] = mag[:, :, :wb][keep]
            self.data.append(body)
            self.lens.append(n_b)
        else:
            body = np.zeros((B, S * wb), dtype=np.uint8)
            for wv in np.unique(w).tolist():
                rows = np.nonzero(w == wv)[0]
                body[rows, : S * wv] = _low_bytes(mag[rows], wv)
            self.data.append(body)
            self.lens.append(count * w)
        self.data.append(np.packbits(neg, axis=1, bitorder="little"))
        self.lens.append(None if full else (count + 7) >> 3)

    def dyadic(self, t: np.ndarray, p: np.ndarray, neg: np.ndarray, wp: np.ndarray, cnt: np.ndarray | None) -> None:
        """Rational blocks of dyadic rationals 2^t · p: ``t`` (B, S) int64, ``p`` (B, S, ·) uint8 the bytes of
        |p|, ``neg`` its signs, ``wp`` (B, S) the bytes |p| uses; ``cnt`` as in :meth:`block`."""
        B, S = t.shape
        at = np.abs(t)
        if cnt is not None:
            live = np.arange(S) < cnt[:, None]
            wt = np.where(live, bytes_of(at), 0).max(axis=1, initial=0)
            wpp = np.where(live, wp, 0).max(axis=1, initial=0)
        else:
            wt, wpp = bytes_of(at).max(axis=1, initial=0), wp.max(axis=1, initial=0)
        self.block(at.astype("<u8").view(np.uint8).reshape(B, S, 8), t < 0, cnt, wt)
        self.block(p, neg, cnt, wpp)
        ones = np.zeros((B, S, 1), dtype=np.uint8)
        ones[:, :, 0] = 1
        self.block(ones, np.zeros((B, S), dtype=bool), cnt, np.ones(B, dtype=np.int64))

    def padded(self) -> tuple[np.ndarray, np.ndarray]:
        """The byte strings as rows of one (B, width) uint8 matrix, each left-aligned (zeros after it), and their
        lengths."""
        B = self.B
        data = np.concatenate(self.data, axis=1)
        if all(ln is None for ln in self.lens):
            return data, np.full(B, data.shape[1], dtype=np.int64)
        mask = np.concatenate(
            [
                np.ones(d.shape, dtype=bool) if ln is None else np.arange(d.shape[1]) < ln[:, None]
                for d, ln in zip(self.data, self.lens, strict=True)
            ],
            axis=1,
        )
        size = np.zeros(B, dtype=np.int64)
        for d, ln in zip(self.data, self.lens, strict=True):
            size += d.shape[1] if ln is None else ln
        out = np.zeros_like(data)
        out[np.arange(data.shape[1]) < size[:, None]] = data[mask]
        return out, size

    def digests(self) -> list[str]:
        B = self.B
        data = np.concatenate(self.data, axis=1)
        if all(ln is None for ln in self.lens):
            L = data.shape[1]
            flat, offs = data.ravel(), np.arange(B + 1) * L
        else:
            mask = np.concatenate(
                [
                    np.ones(d.shape, dtype=bool) if ln is None else np.arange(d.shape[1]) < ln[:, None]
                    for d, ln in zip(self.data, self.lens, strict=True)
                ],
                axis=1,
            )
            flat = data[mask]
            size = sum(d.shape[1] if ln is None else ln for d, ln in zip(self.data, self.lens, strict=True))
            offs = np.zeros(B + 1, dtype=np.int64)
            np.cumsum(size, out=offs[1:])
        mv = memoryview(flat.data)
        sha = hashlib.sha256
        o = offs.tolist()
        return [sha(mv[o[i] : o[i + 1]]).hexdigest() for i in range(B)]


def le_into(dst: np.ndarray, vals: np.ndarray, w: int) -> None:
    """Write uint64 values (G, S), each below 2^(8w), as their w low bytes little-endian into ``dst`` (G, S·w)
    uint8 with a contiguous last axis (rows may be strided): a record of fields of 4, 2 and 1 bytes at offsets
    0, 4, 6 (those that w needs) viewed onto ``dst``, each assigned the values shifted down by its offset."""
    if w == 8:
        dst.view("<u8")[...] = vals
        return
    fields, off = [], 0
    for size in (4, 2, 1):
        if w - off >= size:
            fields.append((f"f{off}", f"<u{size}", off))
            off += size
    rec = np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields],
                    "offsets": [f[2] for f in fields], "itemsize": w})  # fmt: skip
    out = dst.view(rec)
    for name, _, o in fields:
        out[name] = vals >> np.uint64(8 * o) if o else vals
