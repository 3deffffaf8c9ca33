"""Finding the hidden "flip" symmetries of a one-hidden-layer ReLU network (docs/math/hidden-symmetries.md,
docs/math/fibres.md).

A *flip set* of a network ``x -> V relu(A x + b) + c`` (``V`` is k×n, ``A`` is n×m) is a nonempty
``T ⊆ {0..n-1}`` with ``Σ_{i∈T} v_i a_iᵀ = 0`` (a k×m matrix).  With the integer matrix ``X`` whose
row ``i`` is ``vec(v_i a_iᵀ)`` (times one common positive scale, see :func:`flip_matrix`), flip
sets are the nonempty subsets of rows summing to zero: a multi-dimensional subset-sum problem.

:func:`find_flip_sets` decides it in stages:

a. zero rows (``v_i = 0`` or ``a_i = 0``) are flip sets on their own;
b. a rank modulo a prime: if the nonzero rows are independent there is no other flip set (this is
   the typical case ``n <= k·m``).  Otherwise only rows in the support of the left nullspace
   matter; that support splits into independent blocks (components of the matroid), and flip
   sets are unions of per-block flip sets;
c. small blocks are enumerated exactly (over the nullspace when its dimension is small, by
   meet-in-the-middle when the block is small);
d. large blocks whose rows live in few coordinates (float networks with small ``k·m``) are
   searched with a generalized-birthday (Wagner k-tree) algorithm on the exact integers;
e. everything runs under a time budget; what is not decided is reported in ``undecided``.

Every reported set is verified with exact integer arithmetic.
"""

from relusym._fibre.flipsearch._exact import FlipFactors, flip_factors, flip_matrix, is_flip_set
from relusym._fibre.flipsearch._search import FlipSearch, find_flip_sets, network_flip_sets

__all__ = [
    "FlipFactors",
    "FlipSearch",
    "find_flip_sets",
    "flip_factors",
    "flip_matrix",
    "is_flip_set",
    "network_flip_sets",
]
