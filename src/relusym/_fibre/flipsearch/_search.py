"""The flip-set search (docs/math/hidden-symmetries.md, docs/math/fibres.md): rank modulo p, independent blocks,
per-block search.

:func:`find_flip_sets` splits off the zero rows, certifies full row rank modulo a prime or splits
the support of the left nullspace into independent blocks (certified over Q), searches each block
(nullspace enumeration, meet in the middle, or the generalized-birthday search) under a time
budget, and combines the per-block results into a :class:`FlipSearch`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import flint
import numpy as np

from relusym._base.deadline import Deadline
from relusym._base.rng import RNGLike, as_generator
from relusym._exact import linalg as linalg
from relusym._exact import modular as modular
from relusym._fibre.flipsearch._enumerate import BlockResult, enumerate_nullspace, mitm
from relusym._fibre.flipsearch._exact import (
    FLIP_PRIME,
    FlipFactors,
    IntMatrix,
    combos_zero,
    flip_factors,
    python_combo_zero,
    wrap,
)
from relusym._fibre.flipsearch._ktree import ktree_search, log2_count_estimate
from relusym._fibre.flipsearch._limbs import pack

__all__ = ["FlipSearch", "components", "find_flip_sets", "network_flip_sets"]

# ============================================================================================
# the result
# ============================================================================================


@dataclass(frozen=True)
class FlipSearch:
    """Result of :func:`find_flip_sets`.

    * ``sets``: flip sets (sorted tuples of row indices), each verified exactly;
    * ``complete``: True iff ``sets`` is provably the list of *all* nonempty flip sets;
    * ``count``: the exact number of nonempty flip sets whenever it was determined (also when the
      listing was truncated at ``max_sets``), else None;
    * ``count_lower_bound``: a proven lower bound of that number;
    * ``count_estimate``: a heuristic estimate (local central limit theorem) when the count is
      unknown, else None (``count_estimate_log2`` is its base-2 logarithm);
    * ``certificate``: how the answer was obtained; ``undecided``: what was not decided;
    * ``zero_rows``: the rows that are zero (each a trivial flip set, and any union of a flip set
      with zero rows is again one); ``blocks``: the independent blocks of the remaining search
      (flip sets are unions of per-block flip sets and zero rows); ``rank``: the rank modulo a
      prime of the nonzero rows (a lower bound of their rank over Q).
    """

    sets: list[tuple[int, ...]]
    complete: bool
    count: int | None
    count_lower_bound: int
    count_estimate: float | None
    certificate: str
    undecided: str | None
    n: int = 0
    zero_rows: tuple[int, ...] = ()
    blocks: tuple[tuple[int, ...], ...] = ()
    rank: int | None = None
    count_estimate_log2: float | None = None

    @property
    def decided(self) -> bool:
        """True when the family of flip sets is determined (``count`` is exact)."""
        return self.count is not None

    def to_dict(self) -> dict[str, Any]:
        est = self.count_estimate
        return {
            "sets": [list(t) for t in self.sets],
            "complete": self.complete,
            "count": self.count,
            "count_lower_bound": self.count_lower_bound,
            "count_estimate": None if est is None or not math.isfinite(est) else est,
            "count_estimate_log2": self.count_estimate_log2,
            "certificate": self.certificate,
            "undecided": self.undecided,
            "n": self.n,
            "zero_rows": list(self.zero_rows),
            "blocks": [list(b) for b in self.blocks],
            "rank": self.rank,
        }


def _unions(parts: list[list[tuple[int, ...]]], limit: int) -> list[tuple[int, ...]]:
    """Up to ``limit`` nonempty unions taking at most one set from each part, fewest parts first."""
    out: list[tuple[int, ...]] = []
    nparts = len(parts)
    for r in range(1, nparts + 1):
        for chosen in itertools.combinations(range(nparts), r):
            for pick in itertools.product(*(parts[c] for c in chosen)):
                out.append(tuple(sorted(itertools.chain.from_iterable(pick))))
                if len(out) >= limit:
                    return out
    return out


# ============================================================================================
# main entry point
# ============================================================================================


def _coef(lu: linalg.LUModP) -> np.ndarray:
    """Coefficients expressing each non-pivot row through the pivot rows (mod p), in [0, p)."""
    a = lu.lu
    rk = lu.rank
    w = a.shape[0] - rk
    if w == 0 or rk == 0:
        return np.zeros((w, rk), dtype=np.int64)
    f = modular.Field(lu.p)
    cols = list(lu.pivot_cols)
    coef = f.solve_lower_right(a[:rk][:, cols], a[rk:][:, cols])
    return np.asarray(np.mod(-coef, lu.p).astype(np.int64))  # null vector: e_j + Σ coef[j, t] e_{perm[t]}


@dataclass
class _Block:
    pos: np.ndarray  # positions among the nonzero rows, sorted
    free: np.ndarray  # positions (within pos) of the non-pivot rows
    dep: np.ndarray  # positions (within pos) of the pivot rows
    coef: np.ndarray  # (len(free), len(dep)) null basis coefficients mod p
    p: int = FLIP_PRIME


def components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Connected components of the undirected graph on ``n`` nodes with edges ``src[e] -- dst[e]``:
    each node labelled by the smallest node of its component.

    Minimum-label propagation along the edges with pointer jumping, in numpy (the block split of a
    float network's flip matrix needs no sparse-graph library, whose import alone costs a good part
    of a second).  At the fixed point the two ends of every edge carry one label, and every label is
    a node of its own component, so the labels are exactly the components.
    """
    lab = np.arange(n, dtype=np.int64)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if len(src) == 0:
        return lab
    while True:
        low = np.minimum(lab[src], lab[dst])
        new = lab.copy()
        np.minimum.at(new, src, low)
        np.minimum.at(new, dst, low)
        while True:  # pointer jumping: new[new[i]] lies in the component of i too
            hop = new[new]
            if np.array_equal(hop, new):
                break
            new = hop
        if np.array_equal(new, lab):
            return lab
        lab = new


def _blocks_from_lu(lu: linalg.LUModP, coef: np.ndarray) -> list[_Block]:
    n1 = lu.lu.shape[0]
    rk = lu.rank
    perm = lu.perm
    w = n1 - rk
    if w == 0:
        return []
    qi, ti = np.nonzero(coef)
    src = perm[rk + qi]
    dst = perm[ti]
    in_support = np.zeros(n1, dtype=bool)
    in_support[perm[rk:]] = True
    in_support[dst] = True
    labels = components(n1, src, dst)
    nonpiv_row = {int(perm[rk + q]): q for q in range(w)}
    piv_col = {int(perm[t]): t for t in range(rk)}
    groups: dict[int, list[int]] = {}
    for i in np.flatnonzero(in_support):
        groups.setdefault(int(labels[i]), []).append(int(i))
    blocks: list[_Block] = []
    for members in groups.values():
        pos = np.array(sorted(members), dtype=np.int64)
        free = np.array([k for k, i in enumerate(pos) if int(i) in nonpiv_row], dtype=np.int64)
        dep = np.array([k for k, i in enumerate(pos) if int(i) in piv_col], dtype=np.int64)
        qrows = [nonpiv_row[int(pos[k])] for k in free]
        tcols = [piv_col[int(pos[k])] for k in dep]
        blocks.append(_Block(pos, free, dep, coef[np.ix_(qrows, tcols)], lu.p))
    blocks.sort(key=lambda b: (len(b.pos), int(b.pos[0])))
    return blocks


def _certify_block(M: IntMatrix, gidx: np.ndarray, w: int, deadline: Deadline) -> tuple[bool, np.ndarray | None, str]:
    """Exactly certify that the left nullspace over Q of X[gidx, :] has dimension ``w``.

    Returns (certified, columns C with rank_Q X[gidx, C] = len(gidx) - w, note).  When certified,
    a subset of the block sums to zero on the columns C iff it sums to zero on all columns.
    """
    s = len(gidx)
    d = M.shape[1]
    r = s - w
    R = M.residues(FLIP_PRIME, gidx)
    lu = linalg.lu_mod_p(R, FLIP_PRIME)
    if lu.rank != r:
        return False, None, "rank mismatch"
    cols = np.array(lu.pivot_cols, dtype=np.int64)
    if r == d:
        return True, cols, "all columns independent"
    if r > 250 or (r > 20 and deadline.expired()):
        return False, cols, "block too large for an exact nullspace"
    ex = M.exact(gidx, cols)
    mat = flint.fmpz_mat([[int(ex[i, j]) for i in range(s)] for j in range(r)]) if r else None
    if mat is None:
        basis = np.eye(s, dtype=object)
    else:
        nsp, nullity = mat.nullspace()
        if int(nullity) != w:
            return False, cols, "nullity mismatch"
        tl = nsp.tolist()
        basis = np.array([[int(tl[i][k]) for i in range(s)] for k in range(w)], dtype=object)
        # make each vector primitive to keep the coefficients small
        for k in range(w):
            g = 0
            for x in basis[k]:
                g = math.gcd(g, int(x))
            if g > 1:
                basis[k] = np.array([int(x) // g for x in basis[k]], dtype=object)
    big = max((abs(int(x)) for x in basis.flat), default=0)
    if big * s < 2**30:
        ok = combos_zero(M, gidx, basis.astype(np.int64))
    else:
        ok = np.array([python_combo_zero(M, gidx, basis[k]) for k in range(w)], dtype=bool)
    if not ok.all():
        return False, cols, "exact null vectors do not annihilate all columns"
    return True, cols, "exact nullspace verified"


def find_flip_sets(
    X: Any,
    *,
    max_sets: int = 10_000,
    budget: float = 10.0,
    rng: RNGLike = 0x5EED,
    mitm_max: int = 40,
    enum_max: int = 22,
) -> FlipSearch:
    """Find the flip sets of an integer matrix: nonempty ``T`` with ``Σ_{i∈T} X[i] = 0``.

    ``X``: rows of ints, an int/object numpy array (e.g. :func:`flip_matrix`), or a
    :class:`FlipFactors` (:func:`flip_factors`).  ``max_sets`` caps the listed sets (counting
    may still be exact), ``budget`` bounds the search (a few fixed-cost steps such as
    the rank computation are not interruptible), ``rng`` seeds the randomized searches (the rule of
    :mod:`relusym._base.rng`; the default is a fixed seed, so results are reproducible; None draws fresh
    entropy), ``mitm_max`` / ``enum_max`` are the largest
    block size for meet-in-the-middle and the largest nullspace dimension for enumeration.
    """
    deadline = Deadline(max(0.0, budget))
    gen = as_generator(rng)
    M = wrap(X)
    n, d = M.shape
    zmask = M.zero_mask()
    zero_rows = tuple(int(i) for i in np.flatnonzero(zmask))
    nonzero = np.flatnonzero(~zmask)
    n1 = len(nonzero)
    out = _Outcome(n, zero_rows, max_sets)
    if n1 == 0:
        cert = "no nonzero rows" + (": every nonempty set of (zero) rows is a flip set" if n else "")
        return out.finish(cert, [], 0, None)

    # ---- b. rank modulo p: full row rank certifies that no flip set uses a nonzero row ----
    # A rank deficiency modulo p that is not one over Q (probability ~1e-6) only enlarges the
    # candidate support; every candidate is verified exactly, and blocks are certified over Q.
    if isinstance(M, FlipFactors):
        lu = modular.lu_field(M.field_residues(FLIP_PRIME, nonzero), FLIP_PRIME, n1 <= d)
    else:
        lu = linalg.lu_mod_p(M.residues(FLIP_PRIME, nonzero), FLIP_PRIME, stop_at_full_rank=n1 <= d)
    if lu.rank == n1:
        cert = f"full row rank modulo {FLIP_PRIME}: the {n1} nonzero rows are linearly independent"
        if zero_rows:
            cert += "; flip sets are the nonempty sets of zero rows"
        return out.finish(cert, [], n1, None)
    coef = _coef(lu)
    notes: list[str] = []
    blocks, certified, colsets = _certified_blocks(M, nonzero, _blocks_from_lu(lu, coef), deadline, notes)

    # ---- c/d. per-block search ----
    methods: set[str] = set()
    log2_total: float | None = 0.0
    for blk, cert_ok, cols in zip(blocks, certified, colsets, strict=True):
        gidx = nonzero[blk.pos]
        res, method = _search_block(
            M, gidx, blk, cert_ok, cols, max_sets, deadline, gen, mitm_max, enum_max, out.undecided
        )
        if method is not None:
            methods.add(method)
        out.add(res)
        if log2_total is None:
            continue
        if res.count is not None:
            log2_total += math.log2(res.count + 1)
        elif res.log2_estimate is not None:
            log2_total += max(res.log2_estimate, math.log2(len(res.sets) + 1))
        else:
            log2_total = None
    cert_parts = [f"rank {lu.rank} of {n1} nonzero rows modulo p", f"{len(blocks)} independent block(s)"]
    cert_parts += sorted(methods)
    cert_parts += notes
    return out.finish("; ".join(cert_parts), [nonzero[b.pos] for b in blocks], lu.rank, log2_total)


class _Outcome:
    """What :func:`find_flip_sets` collects, block by block, and the :class:`FlipSearch` it makes of it: the flip
    sets are the nonempty unions of one set per block, any set of zero rows added."""

    def __init__(self, n: int, zero_rows: tuple[int, ...], max_sets: int) -> None:
        self.n, self.zero_rows, self.max_sets = n, zero_rows, max_sets
        self.parts: list[list[tuple[int, ...]]] = []
        self.counts: list[int | None] = []
        self.complete_parts: list[bool] = []
        self.undecided: list[str] = []

    def add(self, res: BlockResult) -> None:
        self.parts.append(res.sets)
        self.counts.append(res.count)
        self.complete_parts.append(res.complete)

    def finish(
        self, certificate: str, blocks: list[np.ndarray], rank: int | None, log2_est: float | None
    ) -> FlipSearch:
        zero_factor = 1 << len(self.zero_rows)
        exact = all(c is not None for c in self.counts)
        all_parts = self.parts + [[(z,)] for z in self.zero_rows]
        count: int | None = None
        if exact:
            prod = 1
            for c in self.counts:
                assert c is not None
                prod *= c + 1
            count = prod * zero_factor - 1
        lb_prod = 1
        for part, c in zip(self.parts, self.counts, strict=True):
            lb_prod *= (c if c is not None else len(part)) + 1
        lower = lb_prod * zero_factor - 1
        listing = _unions([p for p in all_parts if p], self.max_sets)
        complete = exact and all(self.complete_parts) and count is not None and len(listing) == count
        if complete:
            listing.sort(key=lambda t: (len(t), t))
        und = list(self.undecided)
        if count is not None and not complete:
            und.append(f"{count} flip sets exist; listing truncated at max_sets={self.max_sets}")
        est: float | None = None
        est_log2: float | None = None
        if count is None and log2_est is not None:
            est_log2 = log2_est + len(self.zero_rows)
            est = 2.0**est_log2 if est_log2 < 1000 else math.inf
        return FlipSearch(
            sets=listing,
            complete=complete,
            count=count,
            count_lower_bound=max(lower, len(listing)),
            count_estimate=est,
            certificate=certificate,
            undecided="; ".join(und) if und else None,
            n=self.n,
            zero_rows=self.zero_rows,
            blocks=tuple(tuple(int(i) for i in b) for b in blocks),
            rank=rank,
            count_estimate_log2=est_log2,
        )


def _certified_blocks(
    M: IntMatrix, nonzero: np.ndarray, blocks: list[_Block], deadline: Deadline, notes: list[str]
) -> tuple[list[_Block], list[bool], list[np.ndarray | None]]:
    """The blocks of the decomposition modulo p, each certified over Q (with the columns that certify it); when
    some block is not, the decomposition is not proven over Q and the union is searched as one block."""
    certified: list[bool] = []
    colsets: list[np.ndarray | None] = []
    for blk in blocks:
        ok, cols, _ = _certify_block(M, nonzero[blk.pos], len(blk.free), deadline)
        certified.append(ok)
        colsets.append(cols)
    if len(blocks) <= 1 or all(certified):
        return blocks, certified, colsets
    allpos = np.sort(np.concatenate([b.pos for b in blocks]))
    notes.append("block decomposition modulo p not certified over Q; searched as one block")
    w_all = sum(len(b.free) for b in blocks)
    merged_free = np.searchsorted(allpos, np.concatenate([b.pos[b.free] for b in blocks]))
    merged_dep = np.searchsorted(allpos, np.concatenate([b.pos[b.dep] for b in blocks]))
    cmat = np.zeros((w_all, len(merged_dep)), dtype=np.int64)
    r0 = c0 = 0
    for b in blocks:
        cmat[r0 : r0 + len(b.free), c0 : c0 + len(b.dep)] = b.coef
        r0 += len(b.free)
        c0 += len(b.dep)
    order_f = np.argsort(merged_free)
    order_d = np.argsort(merged_dep)
    merged = _Block(allpos, merged_free[order_f], merged_dep[order_d], cmat[np.ix_(order_f, order_d)], blocks[0].p)
    ok, cols, _ = _certify_block(M, nonzero[allpos], w_all, deadline)
    return [merged], [ok], [cols]


def _search_block(
    M: IntMatrix,
    gidx: np.ndarray,
    blk: _Block,
    cert_ok: bool,
    cols: np.ndarray | None,
    max_sets: int,
    deadline: Deadline,
    gen: np.random.Generator,
    mitm_max: int,
    enum_max: int,
    undecided: list[str],
) -> tuple[BlockResult, str | None]:
    """The flip sets of one block: nullspace enumeration or meet in the middle when small enough, else the
    randomized generalized birthday search (method ``k-tree``; what it leaves open goes to ``undecided``); and
    the method to name in the certificate (None: no search ran)."""
    d = M.shape[1]
    s = len(gidx)
    w = len(blk.free)
    res: BlockResult | None = None
    if w <= enum_max and (w <= 12 or s >= 2 * w or s > mitm_max):
        res = enumerate_nullspace(M, gidx, blk.free, blk.dep, blk.coef, blk.p, max_sets, deadline)
    if res is None and s <= mitm_max and (s <= 24 or not deadline.expired()):
        use_cols = cols if cols is not None else np.arange(d)
        ex = M.exact(gidx, use_cols)
        res = mitm(M, gidx, pack(ex), cert_ok or len(use_cols) == d, max_sets, deadline)
    if res is None and w <= enum_max and not deadline.expired():
        res = enumerate_nullspace(M, gidx, blk.free, blk.dep, blk.coef, blk.p, max_sets, deadline)
    if res is not None:
        if res.note:
            undecided.append(res.note)
        return res, res.method
    # large block: randomized search
    use_cols = cols if cols is not None else np.arange(d)
    found: list[tuple[int, ...]] = []
    info = ""
    est: float | None = None
    searched = len(use_cols) <= 16
    if searched:
        ex = M.exact(gidx, use_cols)
        est = log2_count_estimate(ex, deadline)
        found, info = ktree_search(M, gidx, ex, max_sets, deadline, gen)
    msg = f"block of {s} rows (nullspace dimension {w}): 2^{s} subsets not enumerated"
    msg += f"; {len(found)} flip set(s) found by random search" + (f" ({info})" if info else "")
    undecided.append(msg)
    res = BlockResult(sets=found, count=None, complete=False, method="k-tree", log2_estimate=est)
    return res, "generalized birthday search" if searched else None


def network_flip_sets(V: Any, A: Any, **kwargs: Any) -> FlipSearch:
    """:func:`find_flip_sets` of the network with output weights ``V`` (k×n) and input weights
    ``A`` (n×m), without materialising the n × k·m matrix."""
    return find_flip_sets(flip_factors(V, A), **kwargs)
