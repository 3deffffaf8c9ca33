"""Normal-form digests of many equal-shape networks at once, without Python work per neuron or per number.

The digest (scheme ``relusym.nf/2``, defined in relusym/_digest.py and docs/zoo.md) hashes integer blocks built
from NF(θ) = (K, M, e): the primitive integer vectors ŵ of the kink classes, the kinks κ, the linear part M and
the offset e, rationals by their 2-adic split (t, p, q).  For a network with float (or small integer) entries
all of these are integers computed here exactly, for a whole stack of networks at once:

* **classes.**  A neuron w_i = (a_i, b_i) with a_i ≠ 0 and v_i ≠ 0 has the primitive vector
  ŵ_i = sgn(λ_i) · (o_ij 2^(s_ij − min_j s_ij) / g_i)_j, where x_ij = o_ij 2^(s_ij) with o_ij odd and g_i the gcd of
  the o_ij (one batched gcd over the rows, stopping as soon as every row is at 1).  Two neurons lie in one
  class exactly when their ŵ are equal, so the classes are runs of equal rows after one sort per stack by
  (network, row key), and that sort is also the order the digest lists the classes in (by the bytes of the row:
  its little-endian magnitudes, then its signs; the magnitudes are compared as byte-swapped 64-bit limbs).
  Ties, opposite pairs and split duplicates need nothing special: they are equal integer rows.
* **sums.**  κ_û = Σ_û |λ_i| v_i, M = Σ_neg v_i a_iᵀ and e = c + Σ_const b_i v_i + Σ_neg b_i v_i are sums of
  products x·y of entries.  Per network, the entries of V (and c) and of (A, b) are written as integers on two
  grids 2^(e_V) and 2^(e_W) (their smallest set bits), cut into 16-bit digits; products of digits are below
  2³², their sums over the neurons below 2⁵³, so float64 products (one batched matrix product for M and e,
  c entering as a constant neuron) and segment sums (for κ) are exact in any order.  Carries give the exact
  integers in base 2¹⁶, from which the 2-adic split (t, p, 1) follows by counting trailing zeros.
* **bytes.**  Networks with the same byte layout (number of classes and the eight block widths) get their
  bytes as the rows of one uint8 matrix (the batched encoders of relusym/_digest.py), one SHA-256 per row.

Networks are grouped by the number of digits their entries need, so a single extreme exponent does not slow
its neighbours down.  Outside the vectorized path (exact rationals, integers beyond 2⁵³, spreads of more than
about 300 bits, NaN or infinity) a network takes the single-network path :func:`network_digest`; the tests
compare both with the definition on thousands of networks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._digest import (
    byte_widths,
    digest_header,
    dyadic_block_rows,
    int_block_rows,
    odd_part_digits,
    reference_digest,
)
from .._network import Network
from .._normal_form import normal_form
from ..errors import InvalidNetworkError

__all__ = ["StackDigests", "stack_digests", "network_digest"]

_DIGIT = 16  # bits per digit of the exact sums
_MAX_DIGITS = 20  # digits per entry (320 bits: every float32 network fits); more: the single-network path
_MAX_LIMBS = 5  # 64-bit limbs per entry of ŵ (320 bits)
_BIG = 1 << 40
_MAX_ENTRIES = 1 << 21  # float64 entries of the largest temporary of one batch


@dataclass(frozen=True)
class StackDigests:
    """Digests of a stack of networks.

    ``digest[i]`` is ``normal_form(θ_i).digest()`` (None when θ_i is invalid, with the reason in ``error[i]``);
    ``width[i]`` the minimal width when it follows without search (no hyperplane class carries neurons of both
    orientations: then it is the number of kink classes), else −1; ``fast[i]`` whether the vectorized path
    computed it."""

    digest: list[str | None]
    width: np.ndarray
    fast: np.ndarray
    error: list[str | None]


def network_digest(net: Network) -> str:
    """The single-network path: the digest of ``normal_form(net)`` by its definition (scheme relusym.nf/2)."""
    nf = normal_form(net)
    # NormalForm.digest() computes scheme relusym.nf/2 once the `digest` branch is merged; until then the
    # definition itself, from the normal form's exact rationals (the same value, slower)
    return reference_digest(nf.m, nf.k, nf.K, nf.M, nf.e)


# ----------------------------------------------------------------------------------------------------------
# integers from floats


def _odd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = o · 2^s exactly, o an odd int64 (|o| < 2⁵³), or o = 0 and s = 0 for x = 0 (float64 input)."""
    fr, ex = np.frexp(x)
    mi = (fr * 2.0**53).astype(np.int64)
    low = mi & -mi
    tz = np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1
    nz = mi != 0
    o = np.where(nz, mi >> np.where(nz, tz, 0), 0)
    return o, np.where(nz, ex.astype(np.int64) - 53 + tz, 0)


def _top(x: np.ndarray) -> np.ndarray:
    """Exponent of the leading bit of each x (−_BIG for 0)."""
    ex = np.frexp(x)[1].astype(np.int64) - 1
    return np.where(x != 0, ex, -_BIG)


def _row_gcd(x: np.ndarray) -> np.ndarray:
    """gcd of each row of a nonnegative int64 matrix, column by column on the rows not yet at 1."""
    g = x[:, 0].copy()
    rows = np.arange(x.shape[0])
    for j in range(1, x.shape[1]):
        rows = rows[g[rows] != 1]
        if rows.size == 0:
            break
        g[rows] = np.gcd(g[rows], x[rows, j])
    return g


def _shift_limbs(q: np.ndarray, d: np.ndarray, L: int) -> np.ndarray:
    """q · 2^d as L little-endian 64-bit limbs (q < 2⁵³ and d ≥ 0 int64 arrays of one shape, q·2^d < 2^(64 L))."""
    qu = q.astype(np.uint64)
    li = d // 64
    r = (d % 64).astype(np.uint64)
    lo = qu << r
    hi = np.where(r > 0, qu >> np.minimum(np.uint64(64) - r, np.uint64(63)), np.uint64(0))
    out = np.zeros(q.shape + (L,), dtype="<u8")
    for l_ in range(L):
        out[..., l_] = np.where(li == l_, lo, 0) | np.where(li + 1 == l_, hi, 0)
    return out


def _digits(x: np.ndarray, e0: np.ndarray, P: int) -> np.ndarray:
    """The signed base-2¹⁶ digits of x · 2^(−e0) (an integer for every entry): x (B, ...) float64, e0 (B,),
    result (B, P, ...) float64 with x·2^(−e0) = Σ_p D[:, p]·2^(16 p), every digit of the sign of x."""
    sh = (-e0).astype(np.int32).reshape((-1,) + (1,) * (x.ndim - 1))
    y = np.ldexp(np.abs(x), sh)
    sg = np.sign(x)
    out = np.empty((x.shape[0], P) + x.shape[1:])
    for p in range(P):
        out[:, p] = np.fmod(np.floor(np.ldexp(y, -_DIGIT * p)), 2.0**_DIGIT) * sg
    return out


def _normalize(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact integers Σ_j S[..., j]·2^(16 j) (float64 integer digits below 2⁵³) as (magnitude digits in [0, 2¹⁶),
    int64 (X, J), negative) with X the product of the leading axes; the top digit must stay unused."""
    J = S.shape[-1]
    D = S.reshape(-1, J).astype(np.int64)
    mask = (1 << _DIGIT) - 1
    for j in range(J - 1):
        D[:, j + 1] += D[:, j] >> _DIGIT
        D[:, j] &= mask
    neg = D[:, J - 1] < 0
    if neg.any():
        Dn = -D[neg]
        for j in range(J - 1):
            Dn[:, j + 1] += Dn[:, j] >> _DIGIT
            Dn[:, j] &= mask
        D[neg] = Dn
    return D, neg


def _split(S: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 2-adic splits of the exact dyadic numbers 2^base · Σ_j S[..., j] 2^(16 j): (t, bytes of |p|, p < 0),
    with t and the sign flattened over the leading axes and the bytes (X, 2J) little-endian."""
    D, neg = _normalize(S)
    s, P = odd_part_digits(D)
    nz = D.any(axis=1)
    t = np.where(nz, base.reshape(-1) + s, 0)
    return t, P.astype("<u2").view(np.uint8), neg & nz


# ----------------------------------------------------------------------------------------------------------
# the vectorized path


def _profile(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per network: the ŵ limbs, the digits of V (with c) and of (A, b), the grids e_V and e_W and the exponent
    t_W of the constant neuron that carries c (b = 2^(t_W), v = c·2^(−t_W)); limbs 0 when out of range."""
    B = A.shape[0]
    W = np.concatenate([A, b[:, :, None]], axis=2)  # B × n × (m+1)
    _, sW = _odd(W)
    tW_ = _top(W)
    nzW = W != 0
    low_i = np.where(nzW, sW, _BIG).min(axis=2)
    top_i = tW_.max(axis=2)
    has_a = (A != 0).any(axis=2)
    bits = np.where(has_a, top_i - low_i + 1, 0)
    Lw = -(-bits.max(axis=1, initial=0) // 64)
    topW = top_i.max(axis=1, initial=-_BIG)
    tW = np.where(topW > -_BIG, topW, 0)
    eW = np.minimum(low_i.min(axis=1, initial=_BIG), tW)
    cv = np.ldexp(c, (-tW).astype(np.int32)[:, None])
    exact_c = (np.ldexp(cv, tW.astype(np.int32)[:, None]) == c).all(axis=1)
    Vf = np.concatenate([V.reshape(B, -1), cv], axis=1)
    _, sV = _odd(Vf)
    nzV = Vf != 0
    eV = np.where(nzV, sV, _BIG).min(axis=1)
    topV = _top(Vf).max(axis=1)
    eV = np.where(eV == _BIG, 0, eV)
    bitsV = np.where(topV > -_BIG, topV - eV + 1, 1)
    PV = -(-bitsV // _DIGIT)
    PW = -(-(np.maximum(topW, tW) - eW + 1) // _DIGIT)
    good = exact_c & (PV <= _MAX_DIGITS) & (PW <= _MAX_DIGITS) & (Lw <= _MAX_LIMBS)
    return Lw, PV, PW, eV, eW, tW, cv, good


def _fast_batch(
    V: np.ndarray, A: np.ndarray, b: np.ndarray, cv: np.ndarray, eV: np.ndarray, eW: np.ndarray, tW: np.ndarray,
    Lw: int, PV: int, PW: int,
) -> tuple[list[str], np.ndarray]:  # fmt: skip
    """Digests and widths (−1: needs search) of a stack of float64 networks whose entries need at most PV
    (V, and c·2^(−t_W)) and PW ((A, b, 2^(t_W))) digits on the grids 2^(e_V), 2^(e_W), and ŵ at most Lw limbs."""
    B, n, m = A.shape
    k = V.shape[1]
    Vt = V.transpose(0, 2, 1)  # B × n × k
    a_nz = A != 0
    has_a = a_nz.any(axis=2)
    hyper = has_a & (Vt != 0).any(axis=2)
    const = ~has_a & (b > 0)
    piv = a_nz.argmax(axis=2)
    lam = np.take_along_axis(A, piv[..., None], axis=2)[..., 0]
    neg = hyper & (lam < 0)
    # ---- primitive vectors ŵ and the classes
    hb, hi = np.nonzero(hyper)
    R = hb.shape[0]
    Wr = np.concatenate([A[hb, hi], b[hb, hi][:, None]], axis=1)  # R × (m+1)
    o, s = _odd(Wr)
    nz = o != 0
    low = np.where(nz, s, _BIG).min(axis=1, initial=_BIG)
    d = np.where(nz, s - low[:, None], 0)
    ao = np.abs(o)
    g = _row_gcd(ao) if R else np.ones(0, dtype=np.int64)
    mag = _shift_limbs(ao // g[:, None], d, Lw)  # R × (m+1) × Lw
    sneg = ((o < 0) ^ (lam[hb, hi] < 0)[:, None]) & nz
    keys = mag.view(">u8").astype(np.uint64).reshape(R, (m + 1) * Lw)
    keys = np.concatenate([keys, sneg.astype(np.uint64)], axis=1)
    order = _row_order(hb, keys)
    hb, hi, keys, mag, sneg = hb[order], hi[order], keys[order], mag[order], sneg[order]
    if R:
        new = np.concatenate([[True], (hb[1:] != hb[:-1]) | (keys[1:] != keys[:-1]).any(axis=1)])
    else:
        new = np.zeros(0, dtype=bool)
    cls = np.cumsum(new) - 1
    first = np.nonzero(new)[0]
    C = first.shape[0]
    cls_net = hb[first]
    # ---- digits: V with c as the last neuron (B × PV × k × (n+1)), (A, b) with 2^(t_W) (B × (n+1) × PW × (m+1))
    Vc = np.concatenate([V, cv[:, :, None]], axis=2)
    Wc = np.concatenate(
        [np.concatenate([A, b[:, :, None]], axis=2), np.zeros((B, 1, m + 1))], axis=1
    )
    Wc[:, n, m] = np.ldexp(1.0, tW.astype(np.int32))
    DV = _digits(Vc, eV, PV)  # B × PV × k × (n+1)
    DW = _digits(Wc, eW, PW).transpose(0, 2, 1, 3)  # B × (n+1) × PW × (m+1)
    J = PV + PW + 2  # |sums| < (n+1)·2^(16(PV+PW)) ≤ 2^(16(J−1)), n < 2¹⁶: the top digit stays free
    base = eV + eW
    # κ_û = Σ |λ_i| v_i per class: digit products summed over the class's rows
    lam_d = np.abs(DW[hb, hi, :, piv[hb, hi]])  # R × PW
    v_d = DV[hb, :, :, hi]  # R × PV × k
    T = lam_d[:, :, None, None] * v_d[:, None, :, :]  # R × PW × PV × k
    Tk = np.add.reduceat(T, first, axis=0) if C else np.zeros((0, PW, PV, k))
    Sk = np.zeros((C, k, J))
    for p in range(PW):
        for q in range(PV):
            Sk[:, :, p + q] += Tk[:, p, q]
    # M and e: Σ over the negative and constant neurons (and c) of v·(a, b), one matrix product of digits
    sel = np.concatenate([neg | (const & (Vt != 0).any(axis=2)), np.ones((B, 1), dtype=bool)], axis=1)
    Vs = (DV * sel[:, None, None, :]).reshape(B, PV * k, n + 1)
    prod = np.matmul(Vs, DW.reshape(B, n + 1, PW * (m + 1))).reshape(B, PV, k, PW, m + 1)
    Sa = np.zeros((B, k, m + 1, J))
    for p in range(PW):
        for q in range(PV):
            Sa[:, :, :, p + q] += prod[:, q, :, p, :]
    tk, pk, nk = _split(Sk, np.repeat(base[cls_net], k))
    ta, pa, na = _split(Sa, np.repeat(base, k * (m + 1)))
    # ---- the kink classes (κ ≠ 0), widths, byte layouts
    kept = (pk.reshape(C, k * pk.shape[1]) != 0).any(axis=1)
    N = np.bincount(cls_net[kept], minlength=B)
    lam_neg = lam[hb, hi] < 0
    both = (np.bincount(cls, weights=lam_neg, minlength=C) > 0) & (np.bincount(cls, weights=~lam_neg, minlength=C) > 0)
    width = N.astype(np.int64)
    width[np.unique(cls_net[both])] = -1
    kc = np.nonzero(kept)[0]
    kstart = np.concatenate([[0], np.cumsum(N)])
    mag_c = mag[first[kc]].view(np.uint8).reshape(kc.shape[0], m + 1, 8 * Lw)
    sg_c = sneg[first[kc]]
    tk_c = tk.reshape(C, k)[kc]
    pk_c = pk.reshape(C, k, pk.shape[1])[kc]
    nk_c = nk.reshape(C, k)[kc]
    ta, pa, na = ta.reshape(B, k, m + 1), pa.reshape(B, k, m + 1, pa.shape[1]), na.reshape(B, k, m + 1)
    tM, pM, nM = ta[:, :, :m].reshape(B, k * m), pa[:, :, :m].reshape(B, k * m, pa.shape[3]), na[:, :, :m].reshape(B, k * m)
    te, pe, ne = ta[:, :, m], pa[:, :, m], na[:, :, m]
    wid = np.ones((B, 8), dtype=np.int64)
    wid[:, 0] = N
    if kc.size:
        full = np.nonzero(N)[0]
        for col, per_class in ((1, byte_widths(mag_c)), (2, _tbytes(tk_c)), (3, byte_widths(pk_c))):
            wid[full, col] = np.maximum(1, np.maximum.reduceat(per_class.max(axis=1), kstart[full]))
    wid[:, 4] = np.maximum(1, _tbytes(tM).max(axis=1, initial=0))
    wid[:, 5] = np.maximum(1, byte_widths(pM).max(axis=1, initial=0))
    wid[:, 6] = np.maximum(1, _tbytes(te).max(axis=1, initial=0))
    wid[:, 7] = np.maximum(1, byte_widths(pe).max(axis=1, initial=0))
    layouts, inv = np.unique(wid, axis=0, return_inverse=True)
    digests: list[str] = [""] * B
    sha = hashlib.sha256
    for gi, lay in enumerate(layouts.tolist()):
        nets = np.nonzero(inv.reshape(-1) == gi)[0]
        G = nets.shape[0]
        Ng, ww, wkt, wkp, wMt, wMp, wet, wep = lay
        rows = (kstart[nets][:, None] + np.arange(Ng)[None, :]).reshape(-1)
        head = np.broadcast_to(np.frombuffer(digest_header(m, k, Ng), dtype=np.uint8), (G, 37))
        pieces = [
            head,
            int_block_rows(mag_c[rows].reshape(G, Ng * (m + 1), 8 * Lw), sg_c[rows].reshape(G, Ng * (m + 1)), ww),
            dyadic_block_rows(
                tk_c[rows].reshape(G, Ng * k), pk_c[rows].reshape(G, Ng * k, pk_c.shape[2]), nk_c[rows].reshape(G, Ng * k),
                wkt, wkp,
            ),
            dyadic_block_rows(tM[nets], pM[nets], nM[nets], wMt, wMp),
            dyadic_block_rows(te[nets], pe[nets], ne[nets], wet, wep),
        ]  # fmt: skip
        mat = np.ascontiguousarray(np.concatenate(pieces, axis=1))
        for j, i in enumerate(nets.tolist()):
            digests[i] = sha(mat[j]).hexdigest()
    return digests, width


def _tbytes(t: np.ndarray) -> np.ndarray:
    """Bytes of |t| (int64, any shape), 0 for 0."""
    return byte_widths(np.abs(t).astype("<u8").view(np.uint8).reshape(t.shape + (8,)))


def _row_order(hb: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The order of the rows by (network, row key lexicographically): a sort on the first key column,
    completed by the full lexicographic sort for the networks where two rows agree on it."""
    R, ncol = keys.shape
    if R == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((keys[:, 0], hb))
    hs, k0 = hb[order], keys[order, 0]
    tie = (hs[1:] == hs[:-1]) & (k0[1:] == k0[:-1])
    if ncol == 1 or not tie.any():
        return order
    tied = np.zeros(int(hb.max()) + 1, dtype=bool)
    tied[hs[1:][tie]] = True
    sub = np.nonzero(tied[hb])[0]
    sub = sub[np.lexsort([keys[sub, j] for j in range(ncol - 1, -1, -1)] + [hb[sub]])]
    rest = order[~tied[hs]]
    both = np.concatenate([rest, sub])
    return both[np.argsort(hb[both], kind="stable")]


# ----------------------------------------------------------------------------------------------------------
# the stack


def _as_stack(x: Any, name: str, ndim: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != ndim:
        raise InvalidNetworkError(f"{name} must have {ndim} dimensions (a leading batch axis), got shape {arr.shape}")
    return arr


def _float64(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x as float64 and, per network, whether that is exact and finite (floats up to float64, integers up to
    2⁵³)."""
    B = x.shape[0]
    if x.dtype.kind == "f" and x.dtype.itemsize <= 8:
        with np.errstate(over="ignore", invalid="ignore"):
            y = x.astype(np.float64)
        return y, np.isfinite(y.reshape(B, -1)).all(axis=1)
    if x.dtype.kind in "iu" and x.dtype.itemsize <= 8:
        y = x.astype(np.float64)
        return y, (np.abs(y.reshape(B, -1)) <= 2.0**53).all(axis=1)
    return np.zeros(x.shape), np.zeros(B, dtype=bool)


def stack_digests(V: Any, A: Any, b: Any, c: Any) -> StackDigests:
    """Digests of the networks θ_i = (V[i], A[i], b[i], c[i]) of a stack (V: B×k×n, A: B×n×m, b: B×n, c: B×k).

    Networks with float (or integer) entries are done vectorized; the others one by one with
    :func:`network_digest`.  An invalid network (NaN, infinity) gets ``digest None`` and its error message."""
    V = _as_stack(V, "V", 3)
    A = _as_stack(A, "A", 3)
    b = _as_stack(b, "b", 2)
    c = _as_stack(c, "c", 2)
    B, n, m = A.shape
    k = V.shape[1]
    if V.shape != (B, k, n) or b.shape != (B, n) or c.shape != (B, k):
        raise InvalidNetworkError(
            f"inconsistent stack shapes: V {V.shape}, A {A.shape}, b {b.shape}, c {c.shape} "
            "(expected B×k×n, B×n×m, B×n, B×k)"
        )
    digest: list[str | None] = [None] * B
    error: list[str | None] = [None] * B
    width = np.full(B, -1, dtype=np.int64)
    fast = np.zeros(B, dtype=bool)
    if B and m > 0 and k > 0 and n < 1 << 16:
        conv = [_float64(x) for x in (V, A, b, c)]
        good = conv[0][1] & conv[1][1] & conv[2][1] & conv[3][1]
        V64, A64, b64, c64 = (x for x, _ in conv)
        idx = np.nonzero(good)[0]
        if idx.size:
            Lw, PV, PW, eV, eW, tW, cv, ok = _profile(V64[idx], A64[idx], b64[idx], c64[idx])
            idx, Lw, PV, PW, eV, eW, tW, cv = idx[ok], Lw[ok], PV[ok], PW[ok], eV[ok], eW[ok], tW[ok], cv[ok]
            prof = np.stack([Lw, PV, PW], axis=1)
            kinds, inv = np.unique(prof, axis=0, return_inverse=True) if idx.size else (np.zeros((0, 3)), idx)
            for j, (lw, pv, pw) in enumerate(kinds.tolist()):
                sel = np.nonzero(inv.reshape(-1) == j)[0]
                lw, pv, pw = max(int(lw), 1), int(pv), int(pw)
                size = (n + 1) * ((m + 1) * (pw + 4 * lw + 4) + k * pv * (pw + 2)) + 2 * k * (m + 1) * pv * pw
                per = max(1, _MAX_ENTRIES // size)
                for s0 in range(0, sel.shape[0], per):
                    part = sel[s0 : s0 + per]
                    nets = idx[part]
                    d, w = _fast_batch(
                        V64[nets], A64[nets], b64[nets], cv[part], eV[part], eW[part], tW[part], lw, pv, pw
                    )
                    for t, i in enumerate(nets.tolist()):
                        digest[i] = d[t]
                        width[i] = w[t]
                        fast[i] = True
    for i in np.nonzero(~fast)[0].tolist():
        try:
            net = Network(V[i], A[i], b[i], c[i])
            digest[i] = network_digest(net)
        except InvalidNetworkError as exc:
            error[i] = str(exc)
    return StackDigests(digest, width, fast, error)
