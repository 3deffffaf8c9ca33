"""The kink classes of a normal form in the exact order of û, and the canonical JSON text of (m, k, K, M, e), in
blocks (what ``relusym canon --json --full`` streams)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from relusym._core.classes import HyperplaneClasses
from relusym._exact.decimal import bit_length, quotient_parts, render_cells
from relusym._exact.mantissas import float_parts
from relusym._exact.numbers import fraction_str


class _Form(Protocol):
    """What :func:`json_chunks` reads of a normal form."""

    @property
    def m(self) -> int: ...
    @property
    def k(self) -> int: ...
    @property
    def classes(self) -> HyperplaneClasses: ...
    @property
    def kink_order(self) -> np.ndarray: ...
    def M_strings(self) -> list[list[str]]: ...
    def e_strings(self) -> list[str]: ...


__all__ = ["kink_order", "kinks_json", "json_chunks"]


# ----------------------------------------------------------------------------------------------------------
# the kink classes in exact order, and the canonical JSON text of the normal form


_CHUNK_ENTRIES = 32768  # entries per rendered block: small working sets


def _float_rows(h: HyperplaneClasses, js: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The canonical triples (num, den, d) of û for the classes js of a float network: û = num/den · 2^d."""
    reps = h.rep[js]
    X = np.concatenate([h.A[reps].astype(np.float64), h.b[reps].astype(np.float64)[:, None]], axis=1)
    mx, ex = float_parts(X)
    ml, el = float_parts(h.lam[reps])
    return quotient_parts(mx, ex, ml[:, None], el[:, None])


def _lex_order(column: Callable[[int, np.ndarray], np.ndarray], N: int, C: int) -> np.ndarray:
    """Lexicographic order of N rows of C float keys, refining column by column only inside ties;
    ``column(c, rows)`` gives column c of the keys of the rows ``rows``."""
    order = np.arange(N)
    gid = np.zeros(N, dtype=np.int64)
    for c in range(C):
        col = column(c, order)
        o = np.lexsort((col, gid))
        order, col, gid = order[o], col[o], gid[o]
        new = np.ones(N, dtype=bool)
        new[1:] = (gid[1:] != gid[:-1]) | (col[1:] != col[:-1])
        gid = np.cumsum(new)
        if bool(new.all()):
            break
    return order


def _key_column(h: HyperplaneClasses, js: np.ndarray) -> Callable[[int, np.ndarray], np.ndarray]:
    """Column c of the float64 keys of the classes js (the values of ``h.keys``), computed for the rows asked for
    only: the sort seldom needs more than two columns, and the whole key matrix is twice a float32 network's
    weights."""
    reps = h.rep[js]
    lam = h.lam[reps]
    m = h.m

    @np.errstate(over="ignore")
    def column(c: int, rows: np.ndarray) -> np.ndarray:
        x = h.A[reps[rows], c] if c < m else h.b[reps[rows]]
        return np.asarray(np.divide(x, lam[rows], dtype=np.float64) + 0.0)

    return column


def kink_order(h: HyperplaneClasses) -> np.ndarray:
    """The kink classes (κ_û ≠ 0) sorted lexicographically by their exact û.

    Float networks are sorted by the float64 keys of û (correctly rounded, hence monotone).  When A and b are
    float16 or float32 the keys are injective: two distinct quotients of 24-bit mantissas differ by a relative
    2^-48 at least, more than two float64 roundings can bridge, so the key order is the exact order.  For
    float64 networks adjacent classes are compared exactly on the columns whose keys tie (canonical triples),
    and any undecided pair sends the whole sort to exact rationals."""
    js = np.nonzero(h.kink_mask)[0]
    if js.size <= 1:
        return js
    if h.A.dtype == object:
        us = h.u_exact_many(js.tolist())
        return js[sorted(range(len(us)), key=lambda t: us[t])]
    C = h.m + 1
    if h.A.dtype.itemsize <= 4 and h.b.dtype.itemsize <= 4:
        if "keys" in h.__dict__:
            keys = h.keys
            return np.asarray(js[_lex_order(lambda c, rows: keys[js[rows], c], js.size, C)])
        return np.asarray(js[_lex_order(_key_column(h, js), js.size, C)])
    keys = h.keys[js]
    order = _lex_order(lambda c, rows: keys[rows, c], js.size, C)
    js = js[order]
    keys = keys[order]
    num, den, d = _float_rows(h, js)
    tie = keys[1:] == keys[:-1]
    strict = ~tie
    first = np.where(strict.any(axis=1), strict.argmax(axis=1), keys.shape[1])
    same = (num[1:] == num[:-1]) & (den[1:] == den[:-1]) & (d[1:] == d[:-1])
    prefix = np.arange(keys.shape[1])[None, :] < first[:, None]
    if bool(np.all(same | ~prefix)) and bool((first < keys.shape[1]).all()):
        return np.asarray(js)
    us = h.u_exact_many(js.tolist())  # pragma: no cover - float64 keys tie on distinct rationals
    return np.asarray(js[sorted(range(len(us)), key=lambda t: us[t])])


def _py_row(h: HyperplaneClasses, j: int, head: bytes) -> bytes:
    u = h.u_exact(j)
    kap = h.kappa_exact(j)
    return (
        head
        + ",".join(f'"{fraction_str(x)}"' for x in u).encode()
        + b'],"kink":['
        + ",".join(f'"{fraction_str(x)}"' for x in kap).encode()
        + b"]}"
    )


def kinks_json(h: HyperplaneClasses, order: np.ndarray) -> Iterator[bytes]:
    """The bytes of the canonical JSON list of the kink classes ``order`` without its brackets:
    ``{"hyperplane":["û_0",…],"kink":["κ_0",…]}`` joined by commas, in blocks.

    Float networks go through :func:`relusym._exact.decimal.render_cells` on the integer triples of û and the
    mantissas of κ; a row with an integer beyond 62 bits, and every row of a rational network, is written from
    exact Fractions with :func:`relusym._exact.numbers.fraction_str`.  Both give the same bytes."""
    N = int(order.shape[0])
    if N == 0:
        return
    m, k = h.m, h.k
    if h.A.dtype == object:
        step = 256
        for s in range(0, N, step):
            yield b"".join(
                _py_row(h, int(j), b'{"hyperplane":[' if s + t == 0 else b',{"hyperplane":[')
                for t, j in enumerate(order[s : s + step].tolist())
            )
        return
    R = max(1, _CHUNK_ENTRIES // (m + 1 + k))
    starts = list(range(0, N, R))
    if len(starts) <= 2:
        for s in starts:
            yield _render_block(h, order[s : s + R], s)
        return
    # two blocks at a time in worker threads (numpy releases the GIL), yielded in order, a few ahead at most
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: list[Any] = []
        for s in starts:
            pending.append(pool.submit(_render_block, h, order[s : s + R], s))
            if len(pending) > 4:
                yield pending.pop(0).result()
        for f in pending:
            yield f.result()


def _render_block(h: HyperplaneClasses, js: np.ndarray, s: int) -> bytes:
    """The bytes of the kink classes js (sorted), the first of which is number s of K."""
    kap_float = h.kappa.dtype != object
    small_mantissas = h.A.dtype.itemsize <= 4 and h.b.dtype.itemsize <= 4
    num, den, d = _float_rows(h, js)
    up = np.maximum(d, 0)
    dn = np.maximum(-d, 0)
    if small_mantissas and int(d.max(initial=0)) <= 62 - 24 and int(d.min(initial=0)) >= 24 - 62:
        ok = np.ones(num.shape, dtype=bool)  # 24-bit odd parts: every shifted value fits
    else:
        ok = (bit_length(num) + up <= 62) & (bit_length(den) + dn <= 62)
    row_ok: np.ndarray = np.asarray(ok.all(axis=1))
    if not bool(ok.all()):
        up = np.where(ok, up, 0)
        dn = np.where(ok, dn, 0)
        u_seg = (num < 0, np.where(ok, np.abs(num) << up, 0), np.where(ok, den << dn, 1))
    else:
        u_seg = (num < 0, np.abs(num) << up, den << dn)
    # û and κ in two grids (their digit widths differ a lot), joined row by row
    utext, ulen = render_cells(
        [b',{"hyperplane":[', u_seg, b'],"kink":['], len(js), first=b'{"hyperplane":[' if s == 0 else None
    )
    ktext, klen = b"", None
    if kap_float:
        mk, ek = float_parts(h.kappa[js])
        kup = np.maximum(ek, 0)
        kdn = np.maximum(-ek, 0)
        kok = bit_length(mk) + kup <= 62
        row_ok &= kok.all(axis=1)
        kup = np.where(kok, kup, 0)
        kdn = np.where(kok, kdn, 0)
        ktext, klen = render_cells([(mk < 0, np.where(kok, np.abs(mk) << kup, 0), None, kdn), b"]}"], len(js))
    uends = np.cumsum(ulen).tolist()
    kends = np.cumsum(klen).tolist() if klen is not None else None
    parts: list[bytes] = []
    a = b_ = 0
    for t, (j, good) in enumerate(zip(js.tolist(), row_ok.tolist(), strict=True)):
        e_ = uends[t]
        if not good:
            parts.append(_py_row(h, int(j), b'{"hyperplane":[' if s + t == 0 else b',{"hyperplane":['))
        elif kends is not None:
            parts.append(utext[a:e_])
            parts.append(ktext[b_ : kends[t]])
        else:
            kap = ",".join(f'"{fraction_str(x)}"' for x in h.kappa_exact(int(j))).encode()
            parts.append(utext[a:e_] + kap + b"]}")
        a = e_
        if kends is not None:
            b_ = kends[t]
    return b"".join(parts)


def _vector_json(values: Iterable[str]) -> bytes:
    return ("[" + ",".join(f'"{v}"' for v in values) + "]").encode()


def json_chunks(nf: _Form) -> Iterator[bytes]:
    """The canonical JSON text of (m, k, K, M, e), in blocks: ``json.dumps(payload, sort_keys=True,
    separators=(",", ":"))`` in ASCII for the payload of :meth:`NormalForm.to_dict` (without the digest), so
    the text begins ``{"M":[[`` and ends ``],"m":<m>}``.  Every rational is the string ``"p/q"`` in lowest terms
    with q > 0, or ``"p"`` when q = 1; the kink classes are in the exact lexicographic order of û.  This is
    the JSON form that ``canon --json --full`` and ``-o nf.json`` stream (relusym 0.x hashed this text as the
    digest; the digest is now :mod:`relusym._core.digest`'s scheme)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        head = pool.submit(lambda: (nf.M_strings(), nf.e_strings()))  # the affine part beside the kinks
        kinks = kinks_json(nf.classes, nf.kink_order)
        first = next(kinks, None)
        M, e = head.result()
        yield b'{"M":[' + b",".join(_vector_json(row) for row in M) + b'],"e":' + _vector_json(e)
        yield b',"k":%d,"kinks":[' % nf.k
        if first is not None:
            yield first
        yield from kinks
        yield b'],"m":%d}' % nf.m
