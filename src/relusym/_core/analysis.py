"""One exact analysis of a network, computed once and handed down (see docs/architecture.md).

Everything the fibre, its strata, genericity, the flip sets and the minimal width know of a network θ is derived
from a few exact objects: its hyperplane classes (with λ_i, the neuron types, the kinks κ_û and negative kinks
s_û), its normal form, the normal form as exact rationals (:class:`KinkData`), the orientations of the neurons
on each class, and the integer mantissas of V and A (the input of the flip matrix).  An :class:`Analysis` holds
them for one network, each computed on first use and then kept; a public entry point such as
:func:`relusym.fiber` builds one and passes it to every step, which therefore never re-derives them from the raw
arrays.  The analysis of another network (a witness point, a pruned or a reduced network) is a different
Analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from relusym._core.classes import HyperplaneClasses, hyperplane_classes
from relusym._core.network import Network, NeuronType
from relusym._core.normal_form import NormalForm, normal_form
from relusym._exact import linalg as linalg
from relusym._exact.mantissas import integer_matrix
from relusym._exact.numbers import fractions_of

__all__ = ["Analysis", "KinkData", "Vec", "Mat"]


Vec = tuple[Fraction, ...]


Mat = tuple[Vec, ...]


@dataclass(frozen=True)
class KinkData:
    """NF(f) as exact rationals, classes in the order of ``NormalForm.K`` (sorted by û): α̂_j, β̂_j, κ_j, M,
    e."""

    m: int
    k: int
    alpha: tuple[Vec, ...]
    beta: Vec
    kappa: tuple[Vec, ...]
    M: Mat
    e: Vec

    @property
    def N(self) -> int:
        """The number of kink classes |U*|."""
        return len(self.alpha)

    @classmethod
    def of(cls, x: Network | NormalForm) -> KinkData:
        nf = normal_form(x) if isinstance(x, Network) else x
        m = nf.m
        alpha = tuple(tuple(u[:m]) for u, _ in nf.K)
        beta = tuple(u[m] for u, _ in nf.K)
        kappa = tuple(tuple(kap) for _, kap in nf.K)
        return cls(m, nf.k, alpha, beta, kappa, tuple(tuple(r) for r in nf.M), tuple(nf.e))

    def hyperplane(self, j: int) -> Vec:
        return (*self.alpha[j], self.beta[j])

    def R(self, S: Iterable[int]) -> list[list[Fraction]]:
        """R_S = M + Σ_{j ∈ S} κ_j α̂_jᵀ (k×m)."""
        R = [list(row) for row in self.M]
        for j in S:
            kap, al = self.kappa[j], self.alpha[j]
            for r in range(self.k):
                if kap[r]:
                    for col in range(self.m):
                        if al[col]:
                            R[r][col] += kap[r] * al[col]
        return R

    def rank_P(self, P: Sequence[int]) -> int:
        return linalg.rank([self.alpha[u] for u in P]) if P else 0

    def rho(self, S: Iterable[int], P: Sequence[int]) -> int:
        """ϱ(S, P): the rank of R_S modulo the row space of A_P (docs/math/strata.md)."""
        R = self.R(S)
        AP = [list(self.alpha[u]) for u in P]
        return linalg.rank(R + AP) - (linalg.rank(AP) if AP else 0)


@dataclass(frozen=True, eq=False)
class Analysis:
    """The exact analysis of one network θ, each part computed once, on first use (see docs/architecture.md).

    ``classes``: the hyperplane classes of θ (:class:`~relusym._core.classes.HyperplaneClasses`: the exact
    view, λ_i, neuron types, class labels and hashes, representatives, κ and the negative kinks);
    ``normal_form``: NF(θ) over them; ``kinks``: NF(θ) as exact rationals (:class:`KinkData`);
    ``orientations``: the positively and negatively oriented neurons on each class; ``nf_index``: each kink
    class's index in NF order; ``mixed``: whether some class carries both orientations; ``fractions``: V, A and
    b as exact Fractions; ``V_integers`` and ``A_integers``: V and A as Python integers over one positive
    scale each (the exact flip matrix is their outer product, row by row).
    """

    net: Network

    @cached_property
    def classes(self) -> HyperplaneClasses:
        return hyperplane_classes(self.net)

    @cached_property
    def normal_form(self) -> NormalForm:
        return NormalForm(self.classes)

    @cached_property
    def kinks(self) -> KinkData:
        return KinkData.of(self.normal_form)

    @cached_property
    def orientations(self) -> tuple[np.ndarray, np.ndarray]:
        """For each class: the number of positively and of negatively oriented neurons on it."""
        hc = self.classes
        hyper = hc.neuron_type == NeuronType.HYPERPLANE
        lab = hc.label[hyper]
        neg = np.asarray(hc.lam[hyper] < 0, dtype=bool)
        N_all = hc.N_all
        n_neg = np.bincount(lab[neg], minlength=N_all) if N_all else np.zeros(0, dtype=np.int64)
        n_pos = np.bincount(lab[~neg], minlength=N_all) if N_all else np.zeros(0, dtype=np.int64)
        return n_pos, n_neg

    @cached_property
    def nf_index(self) -> dict[int, int]:
        """Each kink class of ``classes`` (its index there) mapped to its index in NF order (sorted by exact û,
        the order of ``NormalForm.K``)."""
        return {int(j): i for i, j in enumerate(self.normal_form.kink_order.tolist())}

    @cached_property
    def mixed(self) -> bool:
        """True when some hyperplane class carries neurons of both orientations.  When none does, θ's own
        configuration has R_S = 0 and cost 0, so w(f) = N without any search."""
        n_pos, n_neg = self.orientations
        return bool(((n_pos > 0) & (n_neg > 0)).any())

    @property
    def N(self) -> int:
        """The number of kink classes |U*|."""
        return int(self.classes.kink_mask.sum())

    @cached_property
    def fractions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """V, A and b as object arrays of exact Fractions."""
        return fractions_of(self.net.V), fractions_of(self.net.A), fractions_of(self.net.b)

    @cached_property
    def V_integers(self) -> np.ndarray:
        """V as Python integers times one positive scale (dropped: it changes no flip set and no rank)."""
        return integer_matrix(self.net.V)[0]

    @cached_property
    def A_integers(self) -> np.ndarray:
        """A as Python integers times one positive scale (dropped, as for ``V_integers``)."""
        return integer_matrix(self.net.A)[0]
