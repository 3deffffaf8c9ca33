"""The zoo's digests through the compiled kernel (:mod:`relusym._zoo._jit_kernel`) when numba is importable.

numba is the optional extra ``relusym[fast]``; it is imported on the first stack digest, never by ``import
relusym``.  Without it, or with the environment variable ``RELUSYM_NO_JIT=1``, :func:`jit_digests` answers None
and the numpy path of :mod:`relusym._zoo._digest` does everything, unchanged.  With it, the kernel writes the
bytes of relusym.nf/2 for the networks it takes (the common case: every neuron a class of its own) into one
buffer and hashes them there at once, still in the cache: on x86-64 with AVX-512 16 networks at a time in the
kernel's own vector SHA-256 (:mod:`relusym._zoo._jit_sha`; ``RELUSYM_NO_LANES=1`` turns it off), elsewhere one
at a time by OpenSSL's low-level ``SHA256_Init``/``Update``/``Final`` called from the compiled code (those of the
libcrypto hashlib uses, found by ctypes and checked against hashlib; SHA-NI where the CPU has it; not the
one-shot ``SHA256``, which OpenSSL 3 looks up by name on each call): no Python work per network but the hex
text.  Without those functions (or with ``RELUSYM_NO_CSHA=1``)
the kernel writes the bytes a few megabytes at a time and each is hashed by ``hashlib.sha256`` over a
memoryview slice.  The networks it flags go on to the numpy path.  A process loads the kernel only after its
first 2^24 weights (the numpy path digests those): numba's import and cache load would cost small jobs more
than the kernel saves them.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from typing import Any

import numpy as np

__all__ = ["jit_digests", "jit_available", "jit_installed", "jit_loaded", "readonly", "sha_address", "JIT_WORK"]

_BUFFER = 1 << 24  # bytes of the kernel's output buffer (grown when one network needs more)
JIT_WORK = 1 << 24  # weights a process digests by numpy before it loads the kernel (see jit_digests)
_STATE: dict[str, Any] = {}
_LOCAL = threading.local()


def _buffer(size: int) -> np.ndarray:
    """This thread's output buffer of at least ``size`` bytes, kept from call to call (fresh pages would cost
    the kernel's zeroing, a page fault every few networks)."""
    buf = getattr(_LOCAL, "buffer", None)
    if buf is None or buf.size < size:
        buf = _LOCAL.buffer = np.empty(size, dtype=np.uint8)
    return buf


def _kernel() -> Any:
    """The kernel's entry point, or None (numba missing, or ``RELUSYM_NO_JIT`` set to anything but '' or '0')."""
    if os.environ.get("RELUSYM_NO_JIT", "") not in ("", "0"):
        return None
    if "kernel" not in _STATE:
        try:
            from relusym._zoo._jit_kernel import stack_bytes
        except ImportError:
            _STATE["kernel"] = None
        else:
            _STATE["kernel"] = stack_bytes
    return _STATE["kernel"]


def _openssl_sha256() -> tuple[int, int, int]:
    """The addresses of OpenSSL's low-level ``SHA256_Init``, ``SHA256_Update`` and ``SHA256_Final`` in the
    libcrypto hashlib uses, checked against hashlib on a few inputs; (0, 0, 0) when there are none (another build
    of Python, a libcrypto without them): the digests are then taken by hashlib from Python, one call per
    network.  (The one-shot ``SHA256`` of OpenSSL 3 fetches the algorithm by name on each call: about 1 µs more
    per network.)"""
    if os.environ.get("RELUSYM_NO_CSHA", "") not in ("", "0"):
        return (0, 0, 0)
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("crypto")
        if name is None:
            return (0, 0, 0)
        lib = ctypes.CDLL(name)
        init, update, final = lib.SHA256_Init, lib.SHA256_Update, lib.SHA256_Final
        init.restype = update.restype = final.restype = ctypes.c_int
        init.argtypes = (ctypes.c_char_p,)
        update.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t)
        final.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
        for size in (0, 1, 55, 56, 64, 1000, 4099):
            data = bytes(range(256)) * (size // 256 + 1)
            md = ctypes.create_string_buffer(32)
            ctx = ctypes.create_string_buffer(128)  # sizeof(SHA256_CTX) is 112
            if not (init(ctx) and update(ctx, data[:size], size) and final(md, ctx)):
                return (0, 0, 0)
            if md.raw != hashlib.sha256(data[:size]).digest():
                return (0, 0, 0)
        addrs = tuple(int(ctypes.cast(f, ctypes.c_void_p).value or 0) for f in (init, update, final))
        return (addrs[0], addrs[1], addrs[2]) if all(addrs) else (0, 0, 0)
    except (OSError, AttributeError, TypeError, ValueError):
        return (0, 0, 0)


def _lanes() -> bool:
    """Whether the kernel hashes 16 networks at once (:mod:`relusym._zoo._jit_sha`): on an x86-64 processor with
    AVX-512 (F and VL: the lanes' rotations and three-input functions are single instructions), where it takes
    half the time of OpenSSL's SHA-NI per network; elsewhere OpenSSL's own SHA-256 (SHA instructions on most
    recent processors) is kept.  ``RELUSYM_NO_LANES=1`` keeps OpenSSL; ``RELUSYM_NO_CSHA=1`` hashes by hashlib."""
    if any(os.environ.get(v, "") not in ("", "0") for v in ("RELUSYM_NO_LANES", "RELUSYM_NO_CSHA")):
        return False
    try:
        import platform

        from llvmlite import binding

        features = binding.get_host_cpu_features()
        return platform.machine().lower() in ("x86_64", "amd64") and all(
            features.get(f, False) for f in ("avx512f", "avx512vl")
        )
    except (ImportError, RuntimeError, AttributeError):
        return False


def sha_address() -> tuple[int, int, int]:
    """How the kernel hashes each network's bytes: (1, 0, 0) with its own 16 lanes (:func:`_lanes`), else the
    addresses of the C SHA-256 functions it calls (:func:`_openssl_sha256`), else (0, 0, 0): by hashlib, from
    Python.  Decided once per process."""
    if "sha" not in _STATE:
        _STATE["sha"] = (1, 0, 0) if _lanes() else _openssl_sha256()
    init, update, final = _STATE["sha"]
    return (int(init), int(update), int(final))


def jit_loaded() -> bool:
    """Whether this process has loaded the compiled kernel (and ``RELUSYM_NO_JIT`` is unset): a zoo job's other
    compiled helpers (the probe values, the near-duplicate sweep) are used only then, so that small jobs never
    import numba for them.  Loads nothing."""
    return "relusym._zoo._jit_kernel" in sys.modules and os.environ.get("RELUSYM_NO_JIT", "") in ("", "0")


def jit_installed() -> bool:
    """Whether the compiled kernels may be used here (numba installed, ``RELUSYM_NO_JIT`` unset), found without
    importing numba (0.2 s): for choices made before the kernels load (:func:`jit_available` then decides)."""
    if os.environ.get("RELUSYM_NO_JIT", "") not in ("", "0"):
        return False
    if "kernel" in _STATE:
        return _STATE["kernel"] is not None
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def jit_available() -> bool:
    """Whether stack digests go through the compiled kernel (numba importable, ``RELUSYM_NO_JIT`` unset); loads
    it (numba's import), so that the next stack digests use it at once."""
    return _kernel() is not None


def readonly(x: np.ndarray) -> np.ndarray:
    """``x``, or a read-only view of it: what the compiled kernels receive as their input arrays.  numba compiles
    (or loads from its cache) one version of a function per combination of writable and read-only arguments,
    each load about 0.05 s of LLVM's work in a fresh process; a job's rows come memory-mapped (read-only) or
    copied (writable) by their size, so a task of a large shard saw a mix (V, A, b mapped, c copied) that the
    kernels loaded before a pool forks did not cover, and each worker loaded it again on its first task.  With
    every input read-only there is one version, the one loaded before the fork."""
    if not x.flags.writeable:
        return x
    v = x.view()
    v.flags.writeable = False
    return v


def _stack_arrays(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """The four arrays in one float dtype the kernel is compiled for (float32 when all are float16/float32, else
    float64: exact conversions), C-contiguous and read-only (:func:`readonly`); None for other data (integers,
    complex, longdouble)."""
    xs = (V, A, b, c)
    if not all(x.dtype.kind == "f" and x.dtype.itemsize <= 8 for x in xs):
        return None
    dtype = np.float32 if all(x.dtype.itemsize <= 4 for x in xs) else np.float64
    return tuple(readonly(np.ascontiguousarray(x, dtype=dtype)) for x in xs)


def jit_digests(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, list[str]] | None:
    """Digests of the stack's networks that the kernel takes: (which networks, their digests in stack order),
    or None when the kernel is not available or not for this data (the caller's numpy path does all).  The
    shapes are checked by the caller (V: B×k×n, A: B×n×m, b: B×n, c: B×k, n, m, k ≥ 1)."""
    if "kernel" not in _STATE:  # numba's import and the kernel's load from its cache cost about 0.7 s CPU:
        # a process pays them once it has digested 2^24 weights by numpy (about as long), so small jobs (a
        # folder of a few thousand small files, each worker of a pool) never do and large ones lose little
        _STATE["work"] = _STATE.get("work", 0) + V.size + A.size + b.size + c.size
        if _STATE["work"] < JIT_WORK:
            return None
    kernel = _kernel()
    arrays = _stack_arrays(V, A, b, c) if kernel is not None else None
    if arrays is None:
        return None
    B = arrays[1].shape[0]
    flag = np.zeros(B, dtype=bool)
    offs = np.zeros(B + 1, dtype=np.int64)
    sha = sha_address()
    digests = np.empty((B if sha[0] else 0, 32), dtype=np.uint8)
    buf = _buffer(_BUFFER)
    out: list[str] = []
    start = 0
    while start < B:
        end = int(kernel(*arrays, start, buf, offs, flag, sha, digests))
        if end == start:  # one network larger than the buffer
            buf = _buffer(max(2 * buf.size, int(offs[0])))
            continue
        if not sha[0]:
            out += _hashed(buf, offs, ~flag[start:end])
        start = end
    if sha[0]:
        text = digests[~flag].tobytes().hex()
        out = [text[i : i + 64] for i in range(0, len(text), 64)]
    return ~flag, out


def _hashed(buf: np.ndarray, offs: np.ndarray, keep: np.ndarray) -> list[str]:
    """hashlib's SHA-256 (hex) of the networks' byte strings buf[offs[u]:offs[u + 1]] where ``keep``."""
    mv = buf.data
    o = offs[: keep.size + 1].tolist()
    sha = hashlib.sha256
    return [sha(mv[o[u] : o[u + 1]]).hexdigest() for u, t in enumerate(keep.tolist()) if t]
