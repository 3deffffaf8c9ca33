"""The zoo's digests of dense float32 networks: the common case of :mod:`relusym._zoo._digest`, in few passes.

A network is *dense* here when every neuron has λ_i = a_i1 ≠ 0 (the first input weight) and v_i ≠ 0, every row
(a_i, b_i) spans fewer than 62 bits from its lowest set bit to its highest (so its integers fit an int64), its
exponents lie inside float32's normal range, and no two of its primitive vectors share their first entry.  Then
every neuron is a kink class of its own (ŵ_i ≠ ŵ_j: their first entries differ), κ_i = |λ_i| v_i ≠ 0 and the
classes' order is the order of their first entries' bytes; every other network of the block (ties, duplicate
or opposite neurons, dead or constant neurons, zero first weights, wide spreads, subnormals) is left to the
general vectorized path, which the caller runs on it.

Per block of networks, each pass reads the block once:

* **row integers.**  Every entry of row i is a multiple of 2^(e_i), e_i the exponent of the row's smallest
  nonzero magnitude less 24; |W|·2^(−e_i) (exact in float32) cast to int64, the row's common power of two
  (the lowest set bit of the bitwise or) shifted out, then the odd gcd divided out: the gcd of the entries' odd
  parts (float32 significands', below 2²⁴), proved 1 for most rows by a few Euclid steps in float64 on the
  first two (:func:`_coprime`), by ``np.gcd`` column after column on the others.  These are the magnitudes of
  ŵ_i; its signs are those of W flipped where λ_i < 0.
* **order.**  One argsort per network of the first entries byte-swapped (comparing them as integers compares
  their little-endian bytes, whatever the block's width); equal neighbours send the network to the general path.
  The networks of a block are then put in the order of their block widths w, and the rows of all of them
  gathered in one ``take`` (whole rows, flat indices).
* **kinks.**  κ_i = |λ_i| v_i: the product of two odd float32 mantissas times a power of two, already split.
* **M and e.**  Σ over the neurons with λ_i < 0 of v_i (a_i, b_i), and c (a constant neuron (0, 2^(t_W)) with
  output weights c·2^(−t_W)): (a, b) on the network's grid 2^(e_W) cut into 24-bit limbs, v (masked by λ_i < 0)
  on 2^(e_V) into limbs of 52 − 24 − bitlen(n+1) bits, one batched BLAS product per limb of (a, b) (every dot
  product an exact float64 integer), the limb products added into base-2³² words and split
  (:func:`relusym._zoo._ints.split_words`).
* **bytes.**  Per block width w, one matrix of rows header ‖ u32(w) ‖ magnitudes in w bytes (a record view, no
  byte loop) ‖ signs ‖ the kinks, M and e (:class:`relusym._zoo._bytes.Ragged`, left-aligned), each row hashed
  up to its own length: the only Python work per network is that SHA-256 call.

The large temporaries come from a per-thread pool while :func:`workspace` is open (``stack_digests`` opens it
for a whole stack), so that a block does not pay the kernel for fresh pages.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from math import prod
from typing import Any

import numpy as np

from relusym._zoo._bytes import Ragged, headers, le_into
from relusym._zoo._ints import log2_pow2, odd_parts, split_words, u64_bytes

__all__ = ["dense_digests", "float_limbs", "DENSE_BITS", "workspace"]

_AFFINE_ENTRIES = 1 << 18  # weights per call of _affine (its limbs: 16 bytes a weight and limb pair)
DENSE_BITS = 96  # bits of V (and c·2^(−t_W)) and of W on their grids beyond which the general path is used


_LOCAL = threading.local()


@contextmanager
def workspace() -> Iterator[None]:
    """Reuse the large temporaries of :func:`dense_digests` from block to block while the context lasts (one
    pool per thread, released at the end): fresh pages cost the kernel's zeroing at every block otherwise."""
    old = getattr(_LOCAL, "pool", None)
    _LOCAL.pool = {}
    try:
        yield
    finally:
        _LOCAL.pool = old


def _work(name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialized array for the temporary ``name``: a view of this thread's pooled buffer when a
    :func:`workspace` is open (grown as needed), else a new array."""
    pool = getattr(_LOCAL, "pool", None)
    if pool is None:
        return np.empty(shape, dtype=dtype)
    size = prod(shape) * np.dtype(dtype).itemsize
    buf = pool.get(name)
    if buf is None or buf.size < size:
        buf = pool[name] = np.empty(max(size, 64), dtype=np.uint8)
    out: np.ndarray = buf[:size].view(dtype).reshape(shape)
    return out


def float_limbs(S: np.ndarray, L: int, bits: int) -> np.ndarray:
    """Integer-valued float64 S = Σ_l limbs[l] · 2^(bits·l) exactly, stacked on a new axis 1: limbs in
    [0, 2^bits) but the last, which is signed (a power-of-two scaling, a floor and a difference, each exact)."""
    out = np.empty(S.shape[:1] + (L,) + S.shape[1:])
    lo, hi = 2.0**-bits, 2.0**bits
    for limb in range(L - 1):
        Q = np.floor(S * lo)
        np.subtract(S, Q * hi, out=out[:, limb])
        S = Q
    out[:, L - 1] = S
    return out


def _frexp_exp(x: np.ndarray) -> np.ndarray:
    """The exponent e of frexp (x = f·2^e, f in [0.5, 1)) of positive float32 values, from their bits (normal
    values; the caller sends subnormals elsewhere)."""
    return ((x.view(np.int32) >> 23) & 0xFF).astype(np.int64) - 126


def _odd(x: np.ndarray) -> np.ndarray:
    """The odd parts of nonnegative int64 integers below 2^63 (0 stays 0)."""
    low = x & -x
    return np.asarray(x >> np.maximum(log2_pow2(low), 0))


def _coprime(a: np.ndarray, b: np.ndarray, steps: int = 12) -> np.ndarray:
    """True where gcd(a, b) = 1 is shown by ``steps`` steps of Euclid's algorithm in float64 (nonnegative int64
    below 2^52; False: not shown).  A step replaces (x, y) by (y, |x − q·y|) for an integer q (x/y rounded), which
    keeps gcd(x, y) whatever the rounding (q·y and the difference are exact below 2^53); a remainder of 1 proves
    the gcd is 1.  A zero remainder turns the pair into inf/nan, which never equals 1."""
    x, y = a.astype(np.float64), b.astype(np.float64)
    q = np.empty_like(x)
    one = (x == 1) | (y == 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(steps):
            np.divide(x, y, out=q)
            np.rint(q, out=q)
            np.multiply(q, y, out=q)
            np.subtract(x, q, out=q)
            np.abs(q, out=q)
            x, y, q = y, q, x
            one |= y == 1
    return np.asarray(one)


def _rows(ufunc: np.ufunc, X: np.ndarray) -> np.ndarray:
    """``ufunc`` reduced over the last axis: column by column when it is short (a reduction over a short
    contiguous axis pays the inner loop's start-up per row), else by ``ufunc.reduce``."""
    C = X.shape[-1]
    if C > 16:
        return np.asarray(ufunc.reduce(X, axis=-1))
    out = X[..., 0].copy()
    for j in range(1, C):
        ufunc(out, X[..., j], out=out)
    return out


def _row_integers(W: np.ndarray, F: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The magnitudes of the primitive vectors of the rows of W (B × n × C float32, |W| in F): (X int64 B × n × C,
    E the exponent of each row's unit before the gcd, the rows' top exponents, ok per network)."""
    B, n, C = W.shape
    low = _rows(np.minimum, F)
    gaps = low == 0
    if gaps.any():  # rows with a zero entry: their smallest nonzero magnitude
        r = np.nonzero(gaps)
        low[r] = F[r].min(axis=1, initial=np.inf, where=F[r] > 0)
    high = _rows(np.maximum, F)
    e_lo = _frexp_exp(low) - 24
    e_hi = _frexp_exp(high)
    ok = ((e_hi - e_lo <= 62) & (e_lo >= -127)).all(axis=1)  # 2^(−e_lo) a float32; no subnormal in the row
    e_lo = np.clip(e_lo, -127, 126)
    Xi = _work("X", F.shape, np.int64)
    with np.errstate(over="ignore", invalid="ignore"):  # only in the rows refused above
        scale = ((127 - e_lo) << 23).astype(np.int32).view(np.float32)  # 2^(−e_lo), a normal float32
        np.multiply(F, scale[:, :, None], out=F)
        np.copyto(Xi, F, casting="unsafe")
    orv = _rows(np.bitwise_or, Xi)
    orv &= -orv
    sh = np.maximum(log2_pow2(orv), 0)
    Xi >>= sh[:, :, None]
    flat = Xi.reshape(B * n, C)
    g = _odd(flat[:, 0])  # the odd gcd: that of the entries' odd parts (some entry is odd now)
    rows = np.arange(B * n)
    if C > 1:  # most rows: their first two odd parts (float32 significands': below 2^24) are coprime, as a few
        # float Euclid steps show
        o1 = _odd(flat[:, 1])
        shown = _coprime(g, o1)
        rows = np.nonzero(~shown)[0]
        g[rows] = np.gcd(g[rows], o1[rows])
        g[shown] = 1
    for j in range(2, C):
        rows = rows[g[rows] != 1]
        if rows.size == 0:
            break
        g[rows] = np.gcd(g[rows], _odd(flat[rows, j]))
    big = np.nonzero(g > 1)[0]
    if big.size:
        flat[big] //= g[big, None]
    return Xi, e_lo + sh, e_hi - 1, ok


def _split(T: np.ndarray, L: int, bits: int, out: np.ndarray) -> None:
    """out[l] = limb l of the integer S = T·2^bits (T float64, S integer-valued; out L × T.shape): limbs in
    [0, 2^bits) but the last, which is signed.  Each step is exact: T − floor(T) is a multiple of 2^(−bits) in
    [0, 1), scalings are by powers of two."""
    if L == 1:
        np.multiply(T, 2.0**bits, out=out[0])
        return
    Q = out[L - 1]  # the quotients, ending as the last limb: no temporaries
    for limb in range(L - 1):
        np.floor(T, out=Q)
        np.subtract(T, Q, out=T)
        np.multiply(T, 2.0**bits, out=out[limb])
        if limb < L - 2:
            np.multiply(Q, 2.0**-bits, out=T)


def _affine(
    V: np.ndarray,
    W: np.ndarray,
    c: np.ndarray,
    sel: np.ndarray,
    grids: tuple[np.ndarray, np.ndarray, np.ndarray],
    bits: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 2-adic splits (t, bytes of |p|, p < 0, bytes used) of M and e (B·k·(m+1) entries, row-major, e's last
    in each row): Σ_i sel_i v_i (a_i, b_i) + (0, c) exactly, V and W on the grids 2^(eV), 2^(eW) (``grids`` =
    (eW, tW, eV); the constant neuron (0, 2^(tW)) carries c·2^(−tW)), below 2^bits (``bits`` = (V's, W's)).
    Limbs: of 24 bits for (a, b), of 52 − 24 − bitlen(n+1) bits for v (limb axis first, each limb contiguous),
    one batched BLAS product per pair of limbs, every dot product an exact float64 integer."""
    eW, tW, eV = grids
    B, n, C = W.shape
    k = V.shape[1]
    h = (n + 1).bit_length()
    yb = 24
    xb = 52 - yb - h
    Ly = max(1, -(-bits[1] // yb))
    Lx = max(1, -(-bits[0] // xb))
    YL = _work("YL", (Ly, B, n + 1, C), np.float64)
    T = np.multiply(W, np.ldexp(1.0, -eW - yb)[:, None, None], out=_work("X", W.shape, np.float64))  # X is free
    _split(T, Ly, yb, YL[:, :, :n])
    YL[:, :, n] = 0.0
    _split(np.ldexp(1.0, tW - eW - yb), Ly, yb, YL[:, :, n, C - 1])
    X = np.empty((B, k, n + 1))
    np.multiply(V, (sel * np.ldexp(1.0, -eV - xb)[:, None])[:, None, :], out=X[:, :, :n])
    X[:, :, n] = np.ldexp(c.astype(np.float64), -(tW + eV + xb)[:, None])
    XL = np.empty((Lx, B, k, n + 1))
    _split(X, Lx, xb, XL)
    XB = np.ascontiguousarray(XL.transpose(1, 0, 2, 3)).reshape(B, Lx * k, n + 1)  # the limbs of v as rows
    terms = []
    for ly in range(Ly):
        prod = np.matmul(XB, YL[ly]).reshape(B, Lx, k, C)
        terms += [(prod[:, lx].astype(np.int64), xb * lx + yb * ly) for lx in range(Lx)]
    return split_words(terms, np.repeat(eV + eW, k * C))


def dense_digests(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The digests of the dense networks of a block of float32 networks (V: B×k×n, A: B×n×m, b: B×n, c: B×k;
    n ≥ 1, m ≥ 1): (which networks are dense, their digests in order); the others are left to the caller."""
    B, n, m = A.shape
    pre = (A[:, :, 0] != 0).all(axis=1) & (V != 0).any(axis=1).all(axis=1)  # the cheap conditions first
    if not pre.all():  # only the networks that meet them go further: the others cost the general path nothing
        ok = np.zeros(B, dtype=bool)
        sub = np.nonzero(pre)[0]
        if not sub.size:
            return ok, []
        ok_sub, digests = dense_digests(V[sub], A[sub], b[sub], c[sub])
        ok[sub[ok_sub]] = True
        return ok, digests
    k = V.shape[1]
    C = m + 1
    W = _work("W", (B, n, C), np.float32)
    W[:, :, :m] = A
    W[:, :, m] = b
    F = np.abs(W, out=_work("F", W.shape, np.float32))
    lam = W[:, :, 0]
    X, E, top, ok = _row_integers(W, F)
    # the order of the classes: their first entries' little-endian bytes
    key = X[:, :, 0].view(np.uint64).byteswap()
    order = np.argsort(key, axis=1)
    ks = np.take_along_axis(key, order, axis=1)
    ok &= (ks[:, 1:] != ks[:, :-1]).all(axis=1)
    # V, c and the grids of the affine part
    oV, sV = odd_parts(V)
    oc, sc = odd_parts(c)
    sc = sc.astype(np.int64)
    zero_v = oV == 0
    tW = top.max(axis=1)
    eW = E.min(axis=1)
    aV = np.abs(V)
    topV = _frexp_exp(np.where(zero_v, np.float32(1), aV)).reshape(B, -1)
    topV = np.where(zero_v.reshape(B, -1), -(1 << 40), topV - 1).max(axis=1)
    ac = np.abs(c)
    topc = np.where(c != 0, _frexp_exp(np.where(c != 0, ac, np.float32(1))) - 1, -(1 << 40)).max(axis=1)
    topV = np.maximum(topV, topc - tW)
    eV = np.minimum(sV.reshape(B, -1).min(axis=1).astype(np.int64), (sc - tW[:, None]).min(axis=1, initial=1 << 40))
    ok &= (topV - eV < DENSE_BITS) & (tW - eW < DENSE_BITS)
    ok &= ((aV >= np.float32(2.0**-126)) | zero_v).reshape(B, -1).all(axis=1)  # no subnormal in V
    ok &= ((ac >= np.float32(2.0**-126)) | (c == 0)).all(axis=1)
    sub = np.nonzero(ok)[0]
    if sub.size == 0:
        return ok, []
    if sub.size < B:
        V, W, c, lam, X, order = V[sub], W[sub], c[sub], lam[sub], X[sub], order[sub]
        oV, sV, tW, eW, eV, topV = oV[sub], sV[sub], tW[sub], eW[sub], eV[sub], topV[sub]
    Bo = sub.size
    neg_lam = lam < 0
    # the networks by the width of their hyperplane block (equal layouts side by side), the rows of each in
    # its classes' order: one gather of whole rows (flat indices)
    wmag = u64_bytes(X.reshape(Bo, -1).max(axis=1).view(np.uint64))
    perm = np.argsort(wmag, kind="stable")
    wmag = wmag[perm]
    at = (order[perm] + (perm * n)[:, None]).ravel()
    mag = X.reshape(Bo * n, C).take(at, axis=0, out=_work("mag", (Bo * n, C), np.int64))
    mag = mag.view(np.uint64).reshape(Bo, n * C)
    Ws = W.reshape(Bo * n, C).take(at, axis=0, out=_work("F", (Bo * n, C), np.float32)).reshape(Bo, n, C)  # F is free
    np.multiply(Ws, np.where(Ws[:, :, :1] < 0, np.float32(-1), np.float32(1)), out=Ws)  # the rows of ŵ (exact)
    sneg = np.less(Ws, 0, out=_work("sneg", Ws.shape, np.bool_))  # −0.0 is not negative
    # the kinks |λ_i| v_i, in the classes' order (B × n × k)
    ol, sl = odd_parts(Ws[:, :, 0])
    Vt = np.empty((Bo, n, 2 * k), dtype=np.int32)
    Vt[:, :, :k] = oV.transpose(0, 2, 1)
    Vt[:, :, k:] = sV.transpose(0, 2, 1)
    Vt = Vt.reshape(Bo * n, 2 * k).take(at, axis=0).reshape(Bo, n, 2 * k)
    prod = np.abs(ol.astype(np.int64))[:, :, None] * Vt[:, :, :k]
    tk = (sl.astype(np.int64)[:, :, None] + Vt[:, :, k:]) * (prod != 0)
    magk = np.abs(prod).astype("<u8")
    # M and e
    bits = (int((topV - eV).max()) + 1, int((tW - eW).max()) + 1)
    step = max(1, _AFFINE_ENTRIES // (n * C))  # networks per product: its limbs stay a fraction of the block
    parts = [
        _affine(V[s0 : s0 + step], W[s0 : s0 + step], c[s0 : s0 + step], neg_lam[s0 : s0 + step],
                (eW[s0 : s0 + step], tW[s0 : s0 + step], eV[s0 : s0 + step]), bits)
        for s0 in range(0, Bo, step)
    ]  # fmt: skip
    ta, pa, na, wa = (np.concatenate([p[i] for p in parts]).reshape(Bo, k, C, -1)[perm] for i in range(4))
    tail = Ragged(Bo)
    tail.dyadic(tk.reshape(Bo, n * k), magk.view(np.uint8).reshape(Bo, n * k, 8), (prod < 0).reshape(Bo, -1),
                u64_bytes(magk).reshape(Bo, n * k), None)  # fmt: skip
    tail.dyadic(ta[:, :, :m].reshape(Bo, k * m), pa[:, :, :m].reshape(Bo, k * m, pa.shape[3]),
                na[:, :, :m].reshape(Bo, k * m), wa[:, :, :m].reshape(Bo, k * m), None)  # fmt: skip
    tail.dyadic(ta[:, :, m, 0], pa[:, :, m], na[:, :, m, 0], wa[:, :, m, 0], None)
    digests = _assemble(headers(m, k, np.full(1, n, dtype=np.int64))[0], mag, sneg.reshape(Bo, -1), wmag, tail)
    if bool((perm[1:] > perm[:-1]).all()):  # one width: already in the stack's order
        return ok, digests
    out = np.empty(Bo, dtype=object)
    out[perm] = digests
    return ok, out.tolist()


def _assemble(head: np.ndarray, mag: np.ndarray, sneg: np.ndarray, wmag: np.ndarray, tail: Ragged) -> list[str]:
    """The digests of networks sorted by the width of their hyperplane block: per width, one matrix of rows
    head ‖ u32(w) ‖ hyperplane magnitudes in w bytes ‖ their signs ‖ the rest (left-aligned, ``tail``), each
    row hashed up to its length."""
    B, S = mag.shape
    rest, rest_len = tail.padded()
    signs = np.packbits(sneg, axis=1, bitorder="little")
    ns, T = signs.shape[1], rest.shape[1]
    cuts = np.flatnonzero(np.diff(wmag)) + 1
    starts, ends = np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [B]]).tolist()
    sha = hashlib.sha256
    out: list[str] = []
    for g0, g1 in zip(starts, ends, strict=True):
        w = max(1, int(wmag[g0]))
        h = 41 + S * w
        P = _work("P", (g1 - g0, h + ns + T), np.uint8)
        P[:, :37] = head
        P[:, 37:41] = np.frombuffer(np.uint32(w).astype("<u4").tobytes(), dtype=np.uint8)
        le_into(P[:, 41:h], mag[g0:g1], w)
        P[:, h : h + ns] = signs[g0:g1]
        P[:, h + ns :] = rest[g0:g1]
        mv = memoryview(P.data).cast("B")
        row = P.shape[1]
        at = np.arange(g1 - g0) * row
        ends = (at + h + ns + rest_len[g0:g1]).tolist()
        out += [sha(mv[a:z]).hexdigest() for a, z in zip(at.tolist(), ends, strict=True)]
    return out
