"""Exact rationals as decimal text, vectorized: the integer parts of binary floats and the ``"p/q"`` spelling of
many rationals at once, in numpy, without one Python object per entry.

A finite binary float x is exactly ``mant · 2^exp`` with ``mant`` an odd integer (or 0) of at most 53 bits
(:func:`relusym._exact.mantissas.float_parts`).  A quotient of two such floats is ``num / den · 2^d`` with ``num`` and
``den`` odd and coprime (:func:`quotient_parts`); that triple is a canonical exact representation (equal values ⇔ equal
triples), and the reduced fraction is ``(num · 2^max(d, 0)) / (den · 2^max(−d, 0))``.

:func:`render_cells` writes a grid of such rationals as the bytes ``"p/q"`` (or ``"p"`` when q = 1), the same
spelling as :func:`relusym._exact.numbers.fraction_str`, with fixed text between cells, as one buffer: each cell is
laid out in a fixed-width byte row (digits right-aligned, unused bytes 0), and the zero bytes are then dropped.
Entries whose numerator or denominator does not fit in 62 bits are reported so that callers render those rows
with Python integers instead (exactness never depends on the fast path).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relusym._exact.mantissas import float_parts

__all__ = ["n_digits", "float_parts", "quotient_parts", "bit_length", "render_cells", "fits", "PAIR_DIGITS", "Segment"]

# the two ASCII digits of 0..99, as one little-endian uint16 each
PAIR_DIGITS = np.array([ord(f"{i:02d}"[0]) | (ord(f"{i:02d}"[1]) << 8) for i in range(100)], dtype=np.uint16)
_POW10 = np.array([10**t for t in range(19)], dtype=np.int64)
_LIMIT_BITS = 62


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of |x| for int64 entries below 2^53 (exact through float64)."""
    return np.asarray(np.frexp(np.abs(x).astype(np.float64))[1].astype(np.int64))


def _small_primes(limit: int) -> np.ndarray:
    sieve = np.ones(limit + 1, dtype=bool)
    sieve[:2] = False
    for p in range(2, int(limit**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = False
    return np.nonzero(sieve)[0][1:]  # odd primes


_PRIMES_4096 = _small_primes(4096).astype(np.float64)


def _factor_odd_24(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prime factorizations of odd integers below 2^24 (float64 column): (primes, exponents), each R × S and
    padded with (1, 0).  Trial division by the odd primes below 4096 leaves 1 or one prime cofactor."""
    R = d.shape[0]
    rem = d.astype(np.float64).copy()
    P = _PRIMES_4096
    q = rem[:, None] / P[None, :]
    hit = q == np.floor(q)
    rows, cols = np.nonzero(hit)
    fac: list[list[tuple[float, int]]] = [[] for _ in range(R)]
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        p = P[c]
        e = 0
        while rem[r] % p == 0:
            rem[r] /= p
            e += 1
        fac[r].append((p, e))
    for r in np.nonzero(rem > 1)[0].tolist():
        fac[r].append((rem[r], 1))
    S = max((len(f) for f in fac), default=0)
    primes = np.ones((R, S))
    expos = np.zeros((R, S), dtype=np.int64)
    for r, f in enumerate(fac):
        for t, (p, e) in enumerate(f):
            primes[r, t] = p
            expos[r, t] = e
    return primes, expos


def quotient_parts(
    mx: np.ndarray, ex: np.ndarray, ml: np.ndarray, el: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The canonical (num, den, d) of (mx · 2^ex) / (ml · 2^el) for odd mantissas (ml ≠ 0, an R × 1 column
    against R × C entries): num and den odd and coprime, den > 0, and (0, 1, 0) for a zero numerator.

    When every mantissa is below 2^24 (float16/float32 data) the common factor is found from the prime
    factorization of each row's ml (trial division up to 4096 suffices below 2^24), testing divisibility
    in float64, where quotients of integers below 2^24 are exact or visibly fractional; otherwise np.gcd."""
    aml = np.abs(ml)
    d = np.where(mx != 0, ex - el, 0)
    if mx.size and int(np.abs(mx).max()) < 1 << 24 and int(aml.max()) < 1 << 24:
        primes, expos = _factor_odd_24(aml[:, 0])
        num = np.abs(mx).astype(np.float64)
        den = np.broadcast_to(aml.astype(np.float64), mx.shape).copy()
        for t in range(primes.shape[1]):
            p = primes[:, t : t + 1]
            q = num / p
            rows, cols = np.nonzero((q == np.floor(q)) & (expos[:, t : t + 1] > 0))  # entries divisible by p
            if rows.size == 0:
                continue
            pv, ev = p[rows, 0], expos[rows, t]
            nv, dv = num[rows, cols], den[rows, cols]
            for j in range(int(ev.max())):  # the multiplicity, on the few entries it concerns
                qv = nv / pv
                can = (qv == np.floor(qv)) & (ev > j)
                nv = np.where(can, qv, nv)
                dv = np.where(can, dv / pv, dv)
            num[rows, cols] = nv
            den[rows, cols] = dv
        sgn = np.sign(mx) * np.sign(ml)
        numi = num.astype(np.int64) * sgn
        deni = np.where(mx != 0, den.astype(np.int64), 1)
        return numi, deni, d
    g = np.gcd(mx, aml)
    g = np.where(g == 0, 1, g)
    num = (mx // g) * np.sign(ml)
    den = np.broadcast_to(aml, g.shape) // g
    den = np.where(mx != 0, den, 1)
    return num, den, d


_LOG10_2 = 0.30102999566398120


def n_digits(x: np.ndarray) -> np.ndarray:
    """Number of decimal digits of nonnegative int64 entries (1 for 0): from the bit length, corrected once."""
    bits = np.frexp(x.astype(np.float64))[1]
    nd = (np.maximum(bits - 1, 0) * _LOG10_2).astype(np.int64) + 1
    return np.asarray(nd + ((nd < 19) & (x >= _POW10[np.minimum(nd, 18)])))


def _digits(x: np.ndarray, width: int) -> np.ndarray:
    """Right-aligned ASCII digits of the nonnegative int64 x (even ``width``), leading zeros as 0 bytes.

    Groups of eight digits are split off in int64; inside a group (below 10^8 < 2^53) the pairs of digits come
    from float64 quotients by 100, exact there (floor(g/100) of a correctly rounded quotient of integers below
    2^53 is the integer quotient), and a table of the 100 two-digit pairs."""
    pairs: list[np.ndarray] = []  # least significant pair first
    y = x
    while len(pairs) < width // 2:
        if len(pairs) % 4 == 0:
            hi = y // 100_000_000
            g = (y - hi * 100_000_000).astype(np.float64)
            y = hi
        q = np.floor(g / 100.0)
        pairs.append(PAIR_DIGITS[(g - 100.0 * q).astype(np.intp)])
        g = q
    out = np.stack(pairs[::-1], axis=-1).view(np.uint8)
    keep = np.arange(width) >= (width - n_digits(x))[..., None]
    np.multiply(out, keep, out=out)
    return out


def _even_width(x: np.ndarray) -> int:
    if x.size == 0:
        return 2
    nd = len(str(int(x.max())))
    return nd + (nd & 1)


Segment = bytes | tuple[np.ndarray, np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, None, np.ndarray]
_POW2_ROWS: dict[int, np.ndarray] = {}


def _pow2_digits(q: np.ndarray, width: int) -> np.ndarray:
    """Right-aligned ASCII digits of 2^q (leading bytes 0), from a cached table."""
    qmax = int(q.max(initial=0))
    key = width
    tab = _POW2_ROWS.get(key)
    if tab is None or tab.shape[0] <= qmax:
        rows = max(qmax + 1, 64 if tab is None else 2 * tab.shape[0])
        tab = np.zeros((rows, width), dtype=np.uint8)
        for t in range(rows):
            txt = str(1 << t).encode()
            if len(txt) <= width:
                tab[t, width - len(txt) :] = np.frombuffer(txt, dtype=np.uint8)
        _POW2_ROWS[key] = tab
    return np.asarray(tab[q])


def _pow2_width(q: np.ndarray) -> int:
    qmax = int(q.max(initial=0))
    nd = len(str(1 << qmax))
    return nd + (nd & 1)


def render_cells(segments: list[Segment], rows: int, first: bytes | None = None) -> tuple[bytes, np.ndarray]:
    """Render ``rows`` rows of text, each the concatenation of the ``segments``: fixed bytes, or a block
    (neg, num, den) of R × c rationals ``(−1)^neg · num / den`` (0 ≤ num < 2^62, 1 ≤ den < 2^62), or
    (neg, num, None, q) for ``(−1)^neg · num / 2^q`` (any q ≥ 0; the digits of 2^q come from a table), written as
    ``"x_0","x_1",…`` (the spelling of fraction_str, commas between the entries of a block).  ``first``, when
    given, replaces the first segment (fixed bytes) in row 0.  Returns the bytes and each row's byte length."""
    R = rows
    if R == 0:
        return b"", np.zeros(0, dtype=np.int64)
    widths = []
    layout: list[tuple[int, Any]] = []  # (number of cells, segment)
    for seg in segments:
        if isinstance(seg, bytes):
            widths.append(len(seg))
            layout.append((1, seg))
        else:
            neg, num, den = seg[0], seg[1], seg[2]
            q: np.ndarray | None = seg[3] if den is None else None  # type: ignore[misc]
            wn = _even_width(num)
            has_den: np.ndarray = np.asarray(den != 1) if q is None else np.asarray(q != 0)
            if not has_den.any():
                wd = 0
            elif q is None:
                wd = _even_width(np.where(has_den, np.asarray(den), 0))
            else:
                wd = _pow2_width(q)
            widths.append(5 + wn + wd)
            layout.append((num.shape[1], (neg, num, den, q, has_den, wn, wd)))
    if first is not None:
        widths.append(len(first))
    width = max(widths + [1])
    ncols = sum(c for c, _ in layout)
    T = np.zeros((R, ncols, width), dtype=np.uint8)
    col = 0
    for c, seg in layout:
        if isinstance(seg, bytes):
            if seg:
                T[:, col, : len(seg)] = np.frombuffer(seg, dtype=np.uint8)
        elif c:
            neg, num, den, q, has_den, wn, wd = seg
            E = T[:, col : col + c]
            E[:, 1:, 0] = ord(",")
            E[:, :, 1] = ord('"')
            E[:, :, 2] = np.where(neg, ord("-"), 0)
            E[:, :, 3 : 3 + wn] = _digits(num, wn)
            if wd:
                E[:, :, 3 + wn] = np.where(has_den, ord("/"), 0)
                dd = _digits(den, wd) if q is None else _pow2_digits(q, wd)
                dd[~has_den] = 0
                E[:, :, 4 + wn : 4 + wn + wd] = dd
            E[:, :, 4 + wn + wd] = ord('"')
        col += c
    if first is not None:
        T[0, 0, :] = 0
        if first:
            T[0, 0, : len(first)] = np.frombuffer(first, dtype=np.uint8)
    mask = T != 0
    lengths = mask.reshape(R, -1).sum(axis=1)
    return T[mask].tobytes(), lengths


def fits(bits: np.ndarray) -> np.ndarray:
    """Entries whose rendered integer has at most 62 bits."""
    return bits <= _LIMIT_BITS
