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
  (the lowest set bit of the bitwise or) shifted out, then the odd gcd divided out (column by column, only the
  rows not yet at 1): the magnitudes of ŵ_i.  Its signs are those of W flipped where λ_i < 0.
* **order.**  One argsort per network of the first entries byte-swapped (comparing them as integers compares
  their little-endian bytes, whatever the block's width); equal neighbours send the network to the general path.
* **kinks.**  κ_i = |λ_i| v_i: the product of two odd float32 mantissas times a power of two, already split.
* **M and e.**  Σ over the neurons with λ_i < 0 of v_i (a_i, b_i), and c (a constant neuron (0, 2^(t_W)) with
  output weights c·2^(−t_W)): (a, b) on the network's grid 2^(e_W) cut into 24-bit limbs, v (masked by λ_i < 0)
  on 2^(e_V) into limbs of 52 − 24 − bitlen(n+1) bits, one batched BLAS product of the limbs (every dot
  product an exact float64 integer), the limb products carried into base-2¹⁶ digits
  (:func:`relusym._zoo._ints.split_digits`).
* **bytes.**  :class:`relusym._zoo._bytes.Ragged`, hashed one slice per network.
"""

from __future__ import annotations

import numpy as np

from relusym._zoo._bytes import Ragged, headers
from relusym._zoo._ints import DIGIT, MASK, odd_parts, split_digits, u64_bytes

__all__ = ["dense_digests", "float_limbs", "DENSE_BITS"]

DENSE_BITS = 96  # bits of V (and c·2^(−t_W)) and of W on their grids beyond which the general path is used


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
    np.multiply(F, np.ldexp(np.float32(1), -e_lo).astype(np.float32)[:, :, None], out=F)
    with np.errstate(invalid="ignore"):
        Xi = F.astype(np.int64)
    orv = _rows(np.bitwise_or, Xi)
    orv &= -orv
    sh = np.frexp(orv.astype(np.float64))[1].astype(np.int64) - 1
    sh = np.maximum(sh, 0)
    Xi >>= sh[:, :, None]
    flat = Xi.reshape(B * n, C)
    g = flat[:, 0].copy()
    rows = np.arange(B * n)
    for j in range(1, C):
        rows = rows[g[rows] != 1]
        if rows.size == 0:
            break
        g[rows] = np.gcd(g[rows], flat[rows, j])
    big = np.nonzero(g > 1)[0]
    if big.size:
        flat[big] //= g[big, None]
    return Xi, e_lo + sh, e_hi - 1, ok


def _affine(
    V: np.ndarray, W: np.ndarray, c: np.ndarray, sel: np.ndarray, eW: np.ndarray, tW: np.ndarray, eV: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 2-adic splits (t, bytes of |p|, p < 0, bytes used) of M and e (B·k·(m+1) entries, row-major, e's last
    in each row): Σ_i sel_i v_i (a_i, b_i) + (0, c) exactly, V and W on the grids 2^(eV), 2^(eW) (the constant
    neuron (0, 2^(tW)) carries c·2^(−tW))."""
    B, n, C = W.shape
    k = V.shape[1]
    Y = np.empty((B, n + 1, C))
    np.multiply(W, np.ldexp(1.0, -eW)[:, None, None], out=Y[:, :n])
    Y[:, n] = 0.0
    Y[:, n, C - 1] = np.ldexp(1.0, tW - eW)
    X = np.empty((B, k, n + 1))
    np.multiply(V, (sel * np.ldexp(1.0, -eV)[:, None])[:, None, :], out=X[:, :, :n])
    X[:, :, n] = np.ldexp(c.astype(np.float64), -(tW + eV)[:, None])
    h = (n + 1).bit_length()
    yb = 24
    xb = 52 - yb - h
    Ly = max(1, -(-int(np.frexp(np.abs(Y).max(initial=0.0))[1]) // yb))
    Lx = max(1, -(-int(np.frexp(np.abs(X).max(initial=0.0))[1]) // xb))
    XL = float_limbs(X, Lx, xb).reshape(B, Lx * k, n + 1)
    YL = float_limbs(Y.transpose(0, 2, 1), Ly, yb).reshape(B, Ly * C, n + 1).transpose(0, 2, 1)
    prod = np.matmul(XL, YL).reshape(B, Lx, k, Ly, C)
    J = (xb * (Lx - 1) + yb * (Ly - 1)) // DIGIT + 5  # the last limb product's top digit, one free above
    D = np.zeros((J, B, k, C), dtype=np.int64)
    for lx in range(Lx):
        for ly in range(Ly):
            a = prod[:, lx, :, ly, :].astype(np.int64)
            q, r = divmod(xb * lx + yb * ly, DIGIT)
            for j in range(3):
                D[q + j] += ((a >> (DIGIT * j)) & MASK) << r
            D[q + 3] += (a >> (3 * DIGIT)) << r
    return split_digits(D.reshape(J, -1), np.repeat(eV + eW, k * C))


def dense_digests(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The digests of the dense networks of a block of float32 networks (V: B×k×n, A: B×n×m, b: B×n, c: B×k;
    n ≥ 1, m ≥ 1): (which networks are dense, their digests in order); the others are left to the caller."""
    B, n, m = A.shape
    k = V.shape[1]
    C = m + 1
    W = np.empty((B, n, C), dtype=np.float32)
    W[:, :, :m] = A
    W[:, :, m] = b
    F = np.abs(W)
    lam = W[:, :, 0]
    ok = (lam != 0).all(axis=1) & (V != 0).any(axis=1).all(axis=1)
    X, E, top, ok_rows = _row_integers(W, F)
    ok &= ok_rows
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
        oV, sV, tW, eW, eV = oV[sub], sV[sub], tW[sub], eW[sub], eV[sub]
    Bo = sub.size
    neg_lam = lam < 0
    # the hyperplane block: rows gathered in the classes' order (flat indices, whole rows at a time)
    at = (order + (np.arange(Bo) * n)[:, None]).ravel()
    sneg = ((W < 0) ^ neg_lam[:, :, None]) & (W != 0)
    mag = X.reshape(Bo * n, C).take(at, axis=0).view("<u8").reshape(Bo, n * C)
    sneg = sneg.reshape(Bo * n, C).take(at, axis=0).reshape(Bo, n * C)
    wmag = u64_bytes(mag.max(axis=1))
    # the kinks |λ_i| v_i, in the classes' order (B × n × k)
    ol, sl = odd_parts(lam.ravel().take(at).reshape(Bo, n))
    Vt = np.empty((Bo, n, 2 * k), dtype=np.int32)
    Vt[:, :, :k] = oV.transpose(0, 2, 1)
    Vt[:, :, k:] = sV.transpose(0, 2, 1)
    Vt = Vt.reshape(Bo * n, 2 * k).take(at, axis=0).reshape(Bo, n, 2 * k)
    prod = np.abs(ol.astype(np.int64))[:, :, None] * Vt[:, :, :k]
    nzk = prod != 0
    tk = (sl.astype(np.int64)[:, :, None] + Vt[:, :, k:]) * nzk
    magk = np.abs(prod).astype("<u8")
    wk = u64_bytes(magk)
    # M and e
    ta, pa, na, wa = _affine(V, W, c, neg_lam, eW, tW, eV)
    ta, pa, na, wa = ta.reshape(Bo, k, C), pa.reshape(Bo, k, C, -1), na.reshape(Bo, k, C), wa.reshape(Bo, k, C)
    out = Ragged(Bo)
    out.fixed(headers(m, k, np.full(Bo, n, dtype=np.int64)))
    out.block(mag.view(np.uint8).reshape(Bo, n * C, 8), sneg, None, wmag)
    out.dyadic(tk.reshape(Bo, n * k), magk.view(np.uint8).reshape(Bo, n * k, 8), (prod < 0).reshape(Bo, -1),
               wk.reshape(Bo, n * k), None)  # fmt: skip
    out.dyadic(ta[:, :, :m].reshape(Bo, k * m), pa[:, :, :m].reshape(Bo, k * m, pa.shape[3]),
               na[:, :, :m].reshape(Bo, k * m), wa[:, :, :m].reshape(Bo, k * m), None)  # fmt: skip
    out.dyadic(ta[:, :, m], pa[:, :, m], na[:, :, m], wa[:, :, m], None)
    return ok, out.digests()
