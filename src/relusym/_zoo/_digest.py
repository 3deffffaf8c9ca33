"""Normal-form digests of many equal-shape networks at once, without Python work per neuron or per number.

The digest (scheme ``relusym.nf/2``, defined in relusym/_core/digest.py and docs/zoo.md) hashes integer blocks built
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
  integers in base 2¹⁶, from which the 2-adic split (t, p, 1) follows by counting trailing zeros.  The kink of
  a class of one neuron (the usual case) is a single product |o_λ o_v|·2^(s_λ + s_v) of two odd mantissas,
  already split.
* **bytes.**  Every block of the batch is one padded uint8 matrix whose rows begin with each network's bytes
  (:class:`relusym._zoo._bytes.Ragged`); one compress gives the byte strings end to end, one SHA-256 each.

With numba installed (the extra ``relusym[fast]``), every float stack goes first through the compiled kernel
(:mod:`relusym._zoo._digest_jit`): it takes the networks whose every neuron is a kink class of its own and
leaves the others to the numpy path below (all of them with ``RELUSYM_NO_JIT=1``).

Float32 stacks (float16 and float64 ones holding float32 values too) go first, a block of several batches at a
time, through the dense path (:mod:`relusym._zoo._digest_dense`: every neuron its own class, integer mantissas
read once, one sort per network, exact sums in 32-bit words, the bytes of a block in few matrices); the networks
it refuses (ties, dead or constant neurons, wide spreads, subnormals) go on to the path described here.
Networks are grouped by the number of digits their entries need, so a single extreme exponent does not slow
its neighbours down.  Outside the vectorized path (exact rationals, integers beyond 2⁵³, spreads of more than
320 bits, NaN or infinity) a network takes the single-network path :func:`network_digest`; the tests compare
both with the definition on thousands of networks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from relusym._core.digest import byte_widths
from relusym._core.network import Network
from relusym._core.normal_form import normal_form
from relusym._zoo._bytes import Ragged, headers
from relusym._zoo._digest_dense import dense_digests, float_limbs, workspace
from relusym._zoo._digest_jit import jit_digests
from relusym._zoo._ints import (
    BIG,
    DIGIT,
    MASK,
    digits,
    odd_parts,
    row_gcd,
    shift_limbs,
    split_digits,
    top_bit,
    u64_bytes,
)
from relusym.errors import InvalidNetworkError

__all__ = ["StackDigests", "stack_digests", "network_digest"]

_MAX_DIGITS = 20  # digits per entry (320 bits: every float32 network fits); more: the single-network path
_MAX_LIMBS = 5  # 64-bit limbs per entry of ŵ (320 bits)
_MAX_ENTRIES = 1 << 20  # entries of the largest temporary of one batch
_DENSE_BLOCKS = 2  # batches per block of float32 networks (the dense path's unit of work)


@dataclass(frozen=True)
class StackDigests:
    """Digests of a stack of networks.

    ``digest[i]`` is ``normal_form(θ_i).digest()`` (None when θ_i is invalid, with the reason in ``error[i]``);
    ``width[i]`` the minimal width when it follows without search (no hyperplane class carries neurons of both
    orientations: then it is the number of kink classes), else −1; ``fast[i]`` whether the vectorized path
    computed it; ``class_a[i]`` whether θ_i satisfies genericity's conditions G-a and G-b (every neuron has
    a ≠ 0 and v ≠ 0, no two rows (a_i, b_i) proportional: as many hyperplane classes as neurons), known for the
    networks of the vectorized path (False elsewhere: ask :func:`relusym._fibre.genericity.generic_conditions`)."""

    digest: list[str | None]
    width: np.ndarray
    fast: np.ndarray
    error: list[str | None]
    class_a: np.ndarray | None = None


def network_digest(net: Network) -> str:
    """The single-network path: ``normal_form(net).digest()`` (scheme relusym.nf/2)."""
    return normal_form(net).digest()


# ----------------------------------------------------------------------------------------------------------
# the vectorized path


@dataclass
class _Parts:
    """The entries of a batch as odd integers times powers of two (W = (A | b), V, c) and per network the
    digits they need."""

    oW: np.ndarray
    sW: np.ndarray
    oV: np.ndarray
    sV: np.ndarray
    oc: np.ndarray
    sc: np.ndarray
    Lw: np.ndarray
    PV: np.ndarray
    PW: np.ndarray
    eV: np.ndarray
    eW: np.ndarray
    tW: np.ndarray

    def take(self, sel: np.ndarray) -> _Parts:
        return _Parts(*(getattr(self, f)[sel] for f in self.__dataclass_fields__))


def _parts(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[_Parts, np.ndarray]:
    """The odd parts of every entry, the grids 2^(e_V), 2^(e_W), the exponent t_W of the constant neuron that
    carries c (b = 2^(t_W), v = c·2^(−t_W), so both stay inside the ranges of W and V) and the digit counts;
    and per network whether it fits the vectorized path."""
    B = A.shape[0]
    W = np.concatenate([A, b[:, :, None]], axis=2)  # B × n × (m+1)
    oW, sW = odd_parts(W)
    oV, sV = odd_parts(V)
    oc, sc = odd_parts(c)
    sV, sc = sV.astype(np.int64), sc.astype(np.int64)
    sW = sW.astype(np.int64)  # float32 sentinels 2²⁹ stay far above every exponent
    topW = top_bit(np.abs(W).reshape(B, -1).max(axis=1, initial=0.0))
    tW = np.where(topW > -BIG, topW, 0)
    eW = np.minimum(sW.reshape(B, -1).min(axis=1, initial=BIG), tW)
    topc = top_bit(np.abs(c).max(axis=1, initial=0.0))
    topV = np.maximum(
        top_bit(np.abs(V).reshape(B, -1).max(axis=1, initial=0.0)), np.where(topc > -BIG, topc - tW, -BIG)
    )
    eV = np.minimum(sV.reshape(B, -1).min(axis=1, initial=BIG), (sc - tW[:, None]).min(axis=1, initial=BIG))
    eV = np.where(topV > -BIG, eV, 0)
    bitsV = np.where(topV > -BIG, topV - eV + 1, 1)
    bitsW = tW - eW + 1
    PV = -(-bitsV // DIGIT)
    PW = -(-bitsW // DIGIT)
    Lw = -(-bitsW // 64)
    good = (PV <= _MAX_DIGITS) & (PW <= _MAX_DIGITS) & (Lw <= _MAX_LIMBS)
    return _Parts(oW, sW, oV, sV, oc, sc, Lw, PV, PW, eV, eW, tW), good


def _fast_batch(
    V: np.ndarray, A: np.ndarray, b: np.ndarray, pt: _Parts, Lw: int, PV: int, PW: int
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Digests, widths (−1: needs search) and class A (G-a and G-b hold) of a stack of float networks whose
    entries need at most PV (V, and c·2^(−t_W)) and PW ((A, b, 2^(t_W))) digits on the grids 2^(e_V), 2^(e_W),
    and ŵ at most Lw limbs."""
    B, n, m = A.shape
    k = V.shape[1]
    Vt = V.transpose(0, 2, 1)  # B × n × k
    a_nz = A != 0
    has_a = a_nz.any(axis=2)
    has_v = (Vt != 0).any(axis=2)
    hyper = has_a & has_v
    piv = a_nz.argmax(axis=2)
    lam = np.take_along_axis(A, piv[..., None], axis=2)[..., 0]
    neg = hyper & (lam < 0)
    # ---- primitive vectors ŵ and the classes
    if hyper.all():  # every neuron a hyperplane (dense networks): views, no gathers
        hb, hi = np.repeat(np.arange(B), n), np.tile(np.arange(n), B)
        o, s = pt.oW.reshape(B * n, m + 1), pt.sW.reshape(B * n, m + 1)
    else:
        hb, hi = np.nonzero(hyper)
        o, s = pt.oW[hb, hi], pt.sW[hb, hi]  # R × (m+1)
    R = hb.shape[0]
    nz = o != 0
    low = s.min(axis=1, initial=BIG)
    d = (s - low[:, None]) * nz
    ao = np.abs(o)
    if R:
        g = row_gcd(ao)
        big = np.nonzero(g > 1)[0]
        if big.size:
            ao[big] //= g[big, None]
    mag = shift_limbs(ao, d, Lw)  # R × (m+1) × Lw
    lam_neg = lam[hb, hi] < 0
    sneg = ((o < 0) ^ lam_neg[:, None]) & nz
    order, lead = _row_order(hb, mag, sneg)
    hb, hi, lam_neg = hb[order], hi[order], lam_neg[order]
    if R:
        diff = lead[1:] != lead[:-1]  # different networks or first limbs: different classes
        cand = np.nonzero(~diff)[0]
        if cand.size:
            r0, r1 = order[cand], order[cand + 1]
            diff[cand] = (mag[r1] != mag[r0]).any(axis=(1, 2)) | (sneg[r1] != sneg[r0]).any(axis=1)
        new = np.concatenate([[True], diff])
    else:
        new = np.zeros(0, dtype=bool)
    cls = np.cumsum(new) - 1
    first = np.nonzero(new)[0]
    C = first.shape[0]
    cls_net = hb[first]
    J = PV + PW + 2  # |sums| < (n+1)·2^(16(PV+PW)) ≤ 2^(16(J−1)), n < 2¹⁶: the top digit stays free
    base = pt.eV + pt.eW
    # κ_û = Σ |λ_i| v_i per class.  A class of one neuron (the usual case) when the odd parts are below 2³¹
    # (float32 entries): |λ_i| v_i = |o_λ o_v|·2^(s_λ + s_v) with o_λ o_v odd, its own 2-adic split
    count = np.diff(np.append(first, R))
    one = (count == 1) if pt.oW.dtype == np.int32 else np.zeros(C, dtype=bool)
    tk = np.zeros((C, k), dtype=np.int64)
    nk = np.zeros((C, k), dtype=bool)
    wk = np.zeros((C, k), dtype=np.int64)
    pk = np.zeros((C, k, max(8, 2 * J)), dtype=np.uint8)
    if one.any():
        r1 = first[one]
        h1, i1 = hb[r1], hi[r1]
        p1 = piv[h1, i1]
        ov, sv = pt.oV[h1, :, i1].astype(np.int64), pt.sV[h1, :, i1]
        prod1 = np.abs(pt.oW[h1, i1, p1].astype(np.int64))[:, None] * ov
        nz1 = prod1 != 0
        tk[one] = (pt.sW[h1, i1, p1][:, None] + sv) * nz1
        nk[one] = prod1 < 0
        mag1 = np.abs(prod1).astype("<u8")
        wk[one] = u64_bytes(mag1)
        pk[one, :, :8] = mag1.view(np.uint8).reshape(r1.shape[0], k, 8)
    many = np.nonzero(~one)[0]
    if many.size:  # digit products summed over the class's rows
        rows_m = np.nonzero(~one[cls])[0]
        hm, im = hb[rows_m], hi[rows_m]
        pm_ = piv[hm, im]
        lam_d = digits(pt.oW[hm, im, pm_], pt.sW[hm, im, pm_] - pt.eW[hm], PW, 1)
        lam_d *= (1.0 - 2.0 * lam_neg[rows_m])[:, None]
        v_d = digits(pt.oV[hm, :, im], pt.sV[hm, :, im] - pt.eV[hm][:, None], PV, 1)  # R' × PV × k
        T = lam_d[:, :, None, None] * v_d[:, None, :, :]  # R' × PW × PV × k
        starts = np.searchsorted(rows_m, first[many])
        Tk = np.add.reduceat(T, starts, axis=0)
        Sk = np.zeros((J, many.size, k))
        for p in range(PW):
            for q in range(PV):
                Sk[p + q] += Tk[:, p, q]
        tm, pm, nm, wm = split_digits(Sk.reshape(J, many.size * k), np.repeat(base[cls_net[many]], k))
        tk[many], nk[many], wk[many] = tm.reshape(-1, k), nm.reshape(-1, k), wm.reshape(-1, k)
        pk[many, :, : 2 * J] = pm.reshape(-1, k, 2 * J)
    # M and e: Σ over the negative and constant neurons (and c) of v·(a, b), one matrix product of limbs
    sel = neg | (~has_a & has_v & (b > 0))
    ta, pa, na, wa = _affine(V, A, b, pt, sel)
    # ---- the kink classes (κ ≠ 0), widths, byte layouts
    kept = (wk > 0).any(axis=1)
    N = np.bincount(cls_net[kept], minlength=B)
    n_neg = np.add.reduceat(lam_neg.astype(np.int64), first) if C else np.zeros(0, dtype=np.int64)
    both = (n_neg > 0) & (n_neg < np.diff(np.append(first, R)))
    width = N.astype(np.int64)
    width[cls_net[both]] = -1
    kc = np.nonzero(kept)[0]
    kstart = np.concatenate([[0], np.cumsum(N)])
    Kc = kc.shape[0]
    ta, pa, na, wa = (
        ta.reshape(B, k, m + 1),
        pa.reshape(B, k, m + 1, pa.shape[1]),
        na.reshape(B, k, m + 1),
        wa.reshape(B, k, m + 1),
    )
    # per class → per network, padded to the largest N of the batch (the padding is masked out below)
    Nmax = int(N.max(initial=0))
    rows_c = order[first[kc]]
    if Kc == B * Nmax:  # every network has Nmax classes: the per-class arrays are already in network order
        mag_p = mag[rows_c].view(np.uint8).reshape(B, Nmax, m + 1, 8 * Lw)
        sg_p, tk_p, pk_p = (
            sneg[rows_c].reshape(B, Nmax, m + 1),
            tk[kc].reshape(B, Nmax, k),
            pk[kc].reshape(B, Nmax, k, pk.shape[2]),
        )
        nk_p, wk_p = nk[kc].reshape(B, Nmax, k), wk[kc].reshape(B, Nmax, k)
    else:
        net_c, slot_c = cls_net[kc], np.arange(Kc) - kstart[cls_net[kc]]
        mag_p = np.zeros((B, Nmax, m + 1, 8 * Lw), dtype=np.uint8)
        mag_p[net_c, slot_c] = mag[rows_c].view(np.uint8).reshape(Kc, m + 1, 8 * Lw)
        sg_p = np.zeros((B, Nmax, m + 1), dtype=bool)
        sg_p[net_c, slot_c] = sneg[rows_c]
        tk_p = np.zeros((B, Nmax, k), dtype=np.int64)
        tk_p[net_c, slot_c] = tk[kc]
        pk_p = np.zeros((B, Nmax, k, pk.shape[2]), dtype=np.uint8)
        pk_p[net_c, slot_c] = pk[kc]
        nk_p = np.zeros((B, Nmax, k), dtype=bool)
        nk_p[net_c, slot_c] = nk[kc]
        wk_p = np.zeros((B, Nmax, k), dtype=np.int64)
        wk_p[net_c, slot_c] = wk[kc]
    out = Ragged(B)
    out.fixed(headers(m, k, N))
    if Lw == 1:
        wmag = u64_bytes(mag_p.view("<u8").reshape(B, -1).max(axis=1, initial=0))
    else:
        wmag = byte_widths(mag_p).reshape(B, -1).max(axis=1, initial=0)
    out.block(mag_p.reshape(B, Nmax * (m + 1), 8 * Lw), sg_p.reshape(B, -1), N * (m + 1), wmag)
    out.dyadic(tk_p.reshape(B, Nmax * k), pk_p.reshape(B, Nmax * k, pk.shape[2]), nk_p.reshape(B, Nmax * k),
               wk_p.reshape(B, Nmax * k), N * k)  # fmt: skip
    out.dyadic(ta[:, :, :m].reshape(B, k * m), pa[:, :, :m].reshape(B, k * m, pa.shape[3]),
               na[:, :, :m].reshape(B, k * m), wa[:, :, :m].reshape(B, k * m), None)  # fmt: skip
    out.dyadic(ta[:, :, m], pa[:, :, m], na[:, :, m], wa[:, :, m], None)
    class_a = hyper.all(axis=1) & (np.bincount(cls_net, minlength=B) == n)
    return out.digests(), width, class_a


def _scaled(x: np.ndarray, e: np.ndarray, out: np.ndarray) -> None:
    """out = x · 2^(−e) in float64, one exponent per network (axis 0), exactly (integers below 2^320 here)."""
    shape = (-1,) + (1,) * (x.ndim - 1)
    if int(np.abs(e).max(initial=0)) <= 1000:
        np.multiply(x, np.ldexp(1.0, -e).reshape(shape), out=out)
    else:
        out[...] = np.ldexp(x.astype(np.float64), -e.reshape(shape))


def _affine(
    V: np.ndarray, A: np.ndarray, b: np.ndarray, pt: _Parts, sel: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 2-adic splits (t, bytes of |p|, p < 0, bytes used) of M and e (B·k·(m+1) entries, M's columns then
    e's last): Σ over the neurons in ``sel`` (and c, as a constant neuron (0, 2^(t_W)) with output weights
    c·2^(−t_W)) of v·(a, b).  The selected neurons are gathered first (the others never enter the product);
    (a, b) over 2^(e_W) is cut into limbs of 24 bits, v over 2^(e_V) into limbs of xb bits with
    xb + 24 + bitlen(neurons) ≤ 52 (every limb at most 2^bits in magnitude), so every dot product of limbs is
    an exact float64 integer (one batched BLAS product); the limb products are added into base-2¹⁶ digits at
    their offsets."""
    B, n, m = A.shape
    k = V.shape[1]
    nsel = sel.sum(axis=1)
    S = int(nsel.max(initial=0))
    X = np.empty((B, k, S + 1))
    Y = np.zeros((B, S + 1, m + 1))
    if S:
        if S < n:
            idx = np.argsort(~sel, axis=1, kind="stable")[:, :S]
            live = np.arange(S) < nsel[:, None]
            As = np.take_along_axis(A, idx[:, :, None], axis=1)
            bs = np.take_along_axis(b, idx, axis=1) * live
            Vs = np.take_along_axis(V, idx[:, None, :], axis=2) * live[:, None, :]
        else:
            As, bs, Vs = A, b, V * sel[:, None, :]
        _scaled(As, pt.eW, Y[:, :S, :m])
        _scaled(bs, pt.eW, Y[:, :S, m])
        _scaled(Vs, pt.eV, X[:, :, :S])
    Y[:, S, m] = np.ldexp(1.0, pt.tW - pt.eW)
    X[:, :, S] = np.ldexp(pt.oc.astype(np.float64), pt.sc - pt.tW[:, None] - pt.eV[:, None])
    h = (S + 1).bit_length()
    yb = 24
    xb = 52 - yb - h
    Ly = max(1, -(-int(np.frexp(np.abs(Y).max(initial=0.0))[1]) // yb))
    Lx = max(1, -(-int(np.frexp(np.abs(X).max(initial=0.0))[1]) // xb))
    XL = float_limbs(X, Lx, xb).reshape(B, Lx * k, S + 1)
    YL = float_limbs(Y.transpose(0, 2, 1), Ly, yb).reshape(B, Ly * (m + 1), S + 1).transpose(0, 2, 1)
    prod = np.matmul(XL, YL).reshape(B, Lx, k, Ly, m + 1)
    J = (xb * (Lx - 1) + yb * (Ly - 1)) // DIGIT + 5  # the last limb product's top digit, one free above
    D = np.zeros((J, B, k, m + 1), dtype=np.int64)
    for lx in range(Lx):
        for ly in range(Ly):
            a = prod[:, lx, :, ly, :].astype(np.int64)
            q, r = divmod(xb * lx + yb * ly, DIGIT)
            for j in range(3):
                D[q + j] += ((a >> (DIGIT * j)) & MASK) << r
            D[q + 3] += (a >> (3 * DIGIT)) << r
    return split_digits(D.reshape(J, -1), np.repeat(pt.eV + pt.eW, k * (m + 1)))


def _row_order(hb: np.ndarray, mag: np.ndarray, sneg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order of the rows by (network, row key), and per sorted row a key that differs between rows of
    different networks or different first limbs.  The row key compares the little-endian bytes of the
    magnitudes, entry after entry (so 64-bit limbs compare byte-swapped), then the signs.  One sort on the
    network and the leading 47 bits of the first limb, completed by the full lexicographic sort for the
    networks where two rows agree on those (hb < 2¹⁶)."""
    R = hb.shape[0]
    if R == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    k0 = mag[:, 0, 0].byteswap()
    key = (hb.astype(np.uint64) << np.uint64(47)) | (k0 >> np.uint64(17))
    order = np.argsort(key)
    ks = key[order]
    tie = ks[1:] == ks[:-1]
    if not tie.any():
        return order, ks
    hs = hb[order]
    keys = np.concatenate([mag.reshape(R, -1).byteswap(), sneg.astype(np.uint64)], axis=1)
    tied = np.zeros(int(hb.max()) + 1, dtype=bool)
    tied[hs[1:][tie]] = True
    sub = np.nonzero(tied[hb])[0]
    sub = sub[np.lexsort([keys[sub, j] for j in range(keys.shape[1] - 1, -1, -1)] + [hb[sub]])]
    rest = order[~tied[hs]]
    both = np.concatenate([rest, sub])
    order = both[np.argsort(hb[both], kind="stable")]
    return order, (hb[order].astype(np.uint64) << np.uint64(47)) | (k0[order] >> np.uint64(17))


# ----------------------------------------------------------------------------------------------------------
# the stack


def _as_stack(x: Any, name: str, ndim: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != ndim:
        raise InvalidNetworkError(f"{name} must have {ndim} dimensions (a leading batch axis), got shape {arr.shape}")
    return arr


def _floats(x: np.ndarray, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """x in ``dtype`` (float32 for float16/float32 stacks, else float64) and, per network, whether that is
    exact and finite (floats, integers up to 2⁵³)."""
    B = x.shape[0]
    if x.dtype.kind == "f" and x.dtype.itemsize <= 8:
        with np.errstate(over="ignore", invalid="ignore"):
            y = x.astype(dtype, copy=False)
        return y, np.isfinite(y.reshape(B, -1)).all(axis=1)
    if x.dtype.kind in "iu" and x.dtype.itemsize <= 8:
        y = x.astype(np.float64)
        return y, (np.abs(y.reshape(B, -1)) <= 2.0**53).all(axis=1)
    return np.zeros(x.shape, dtype=dtype), np.zeros(B, dtype=bool)


def _general(
    Vb: np.ndarray,
    Ab: np.ndarray,
    bb: np.ndarray,
    cb: np.ndarray,
    nets: np.ndarray,
    digest: list[str | None],
    width: np.ndarray,
    class_a: np.ndarray,
    fast: np.ndarray,
) -> None:
    """The general vectorized path on a batch of finite float networks (ids ``nets`` in the stack): digests,
    widths and class A written at those ids for the networks whose digit counts it takes."""
    pt, ok = _parts(Vb, Ab, bb, cb)
    sub = np.nonzero(ok)[0]
    if not sub.size:
        return
    # networks of ordinary spreads (ŵ in one limb, at most 4 digits) in one batch at the largest digit
    # counts among them; the others by their own counts, so that one extreme exponent costs only its own
    common = (pt.Lw[sub] <= 1) & (pt.PV[sub] <= 4) & (pt.PW[sub] <= 4)
    prof = np.stack([pt.Lw[sub], pt.PV[sub], pt.PW[sub]], axis=1) * ~common[:, None]
    kinds, inv = np.unique(prof, axis=0, return_inverse=True)
    for j, (lw, pv, pw) in enumerate(kinds.tolist()):
        part = sub[inv.reshape(-1) == j]
        if pv == 0:
            lw, pv, pw = 1, int(pt.PV[part].max()), int(pt.PW[part].max())
        if part.shape[0] == Vb.shape[0]:  # the whole batch: no copies
            d, w, ca = _fast_batch(Vb, Ab, bb, pt, max(int(lw), 1), int(pv), int(pw))
        else:
            d, w, ca = _fast_batch(Vb[part], Ab[part], bb[part], pt.take(part), max(int(lw), 1), int(pv), int(pw))
        ids = nets[part]
        _put(digest, ids, d)
        width[ids], class_a[ids], fast[ids] = w, ca, True


def _put(digest: list[str | None], ids: np.ndarray, values: list[str] | list[str | None]) -> None:
    """digest[ids[t]] = values[t] for every t: one slice assignment when the ids are consecutive."""
    if ids.size and int(ids[-1]) - int(ids[0]) == ids.size - 1 and bool((np.diff(ids) == 1).all()):
        digest[int(ids[0]) : int(ids[-1]) + 1] = values
        return
    for t, i in enumerate(ids.tolist()):
        digest[i] = values[t]


def stack_digests(V: Any, A: Any, b: Any, c: Any) -> StackDigests:
    """Digests of the networks θ_i = (V[i], A[i], b[i], c[i]) of a stack (V: B×k×n, A: B×n×m, b: B×n, c: B×k).

    Float networks go first through the compiled kernel when numba is installed (:mod:`relusym._zoo._digest_jit`;
    every neuron a class of its own), the others (and all of them without numba, or with ``RELUSYM_NO_JIT=1``)
    through the numpy path: networks with float (or integer) entries vectorized, the others one by one with
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
    jit = jit_digests(V, A, b, c) if B and m > 0 and k > 0 and 0 < n < 1 << 24 else None
    if jit is None:
        return _numpy_digests(V, A, b, c)
    done, dd = jit
    if done.all():
        every: list[str | None] = list(dd)
        return StackDigests(every, np.full(B, n, dtype=np.int64), done, [None] * B, done.copy())
    rest = np.nonzero(~done)[0]
    sub = _numpy_digests(V[rest], A[rest], b[rest], c[rest])
    digest: list[str | None] = [None] * B
    _put(digest, np.nonzero(done)[0], dd)
    _put(digest, rest, sub.digest)
    error: list[str | None] = [None] * B
    _put(error, rest, sub.error)
    width = np.full(B, n, dtype=np.int64)
    width[rest] = sub.width
    fast = done.copy()
    fast[rest] = sub.fast
    class_a = done.copy()
    if sub.class_a is not None:
        class_a[rest] = sub.class_a
    return StackDigests(digest, width, fast, error, class_a)


def _numpy_digests(V: np.ndarray, A: np.ndarray, b: np.ndarray, c: np.ndarray) -> StackDigests:
    """:func:`stack_digests` by numpy alone (the path without the compiled kernel, and the kernel's fallback)."""
    B, n, m = A.shape
    k = V.shape[1]
    digest: list[str | None] = [None] * B
    error: list[str | None] = [None] * B
    width = np.full(B, -1, dtype=np.int64)
    class_a = np.zeros(B, dtype=bool)
    fast = np.zeros(B, dtype=bool)
    if B and m > 0 and k > 0 and n < 1 << 16:
        small = all(x.dtype.kind == "f" and x.dtype.itemsize <= 4 for x in (V, A, b, c))
        conv = [_floats(x, np.float32 if small else np.float64) for x in (V, A, b, c)]
        good = conv[0][1] & conv[1][1] & conv[2][1] & conv[3][1]
        V64, A64, b64, c64 = (x for x, _ in conv)
        idx = np.nonzero(good)[0]
        per = min(1 << 16, max(1, _MAX_ENTRIES // ((n + 1) * (m + 1 + k) * 8)))  # network ids below 2¹⁶
        every = bool(good.all())
        blk = per * _DENSE_BLOCKS if small else per  # the dense path pools its temporaries: larger blocks pay
        with workspace():  # the dense path's temporaries reused from block to block
            for s0 in range(0, idx.shape[0], blk):
                nets = idx[s0 : s0 + blk]
                at: Any = slice(s0, s0 + nets.shape[0]) if every else nets  # views when every network is finite
                Vb, Ab, bb, cb = V64[at], A64[at], b64[at], c64[at]
                if Vb.dtype == np.float64:  # float64 arrays holding float32 values take the 32-bit path
                    with np.errstate(over="ignore"):
                        b32 = [x.astype(np.float32) for x in (Vb, Ab, bb, cb)]
                    if all(np.array_equal(x, y) for x, y in zip(b32, (Vb, Ab, bb, cb), strict=True)):
                        Vb, Ab, bb, cb = b32
                if Vb.dtype == np.float32 and n:  # the dense networks first, the others by the general path
                    dense, dd = dense_digests(Vb, Ab, bb, cb)
                    ids = nets[dense]
                    _put(digest, ids, dd)
                    width[ids], class_a[ids], fast[ids] = n, True, True
                    if dense.all():
                        continue
                    if dense.any():
                        keep = np.nonzero(~dense)[0]
                        Vb, Ab, bb, cb, nets = Vb[keep], Ab[keep], bb[keep], cb[keep], nets[keep]
                for r0 in range(0, nets.shape[0], per):  # the general path in batches of its own size
                    r: Any = slice(r0, r0 + per)
                    _general(Vb[r], Ab[r], bb[r], cb[r], nets[r], digest, width, class_a, fast)
    for i in np.nonzero(~fast)[0].tolist():
        try:
            net = Network(V[i], A[i], b[i], c[i])
            digest[i] = network_digest(net)
        except InvalidNetworkError as exc:
            error[i] = str(exc)
    return StackDigests(digest, width, fast, error, class_a)
