"""The type (S, P, t) of a point of a fibre, and the exact dimension of the tangent space of the realization
equations at it (the check of every dimension formula of :mod:`relusym._fibre.strata`).
"""

from __future__ import annotations

from fractions import Fraction

from relusym._core.analysis import Analysis
from relusym._exact import linalg as linalg

__all__ = ["point_type", "tangent_dimension"]


# ----------------------------------------------------------------------------------------------------------
# the type of a point, and the exact tangent dimension of its piece
def point_type(an: Analysis) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The combinatorial type (S, P, t) of a point θ' of a fibre (see docs/math/strata.md): S the kink classes
    carried only by negatively oriented neurons, P the kink classes carried by neurons of both orientations, t
    the number of classes with cancelled kink (κ = 0) carrying neurons of both orientations.  Classes are
    indices in NF order; null and constant neurons and single-orientation cancelled classes do not count."""
    hc = an.classes
    n_pos, n_neg = an.orientations
    order = an.nf_index
    S: list[int] = []
    P: list[int] = []
    t = 0
    for j in range(hc.N_all):
        pos, neg = int(n_pos[j]), int(n_neg[j])
        if j in order:
            if pos and neg:
                P.append(order[j])
            elif neg:
                S.append(order[j])
        elif pos and neg:
            t += 1
    return tuple(sorted(S)), tuple(sorted(P)), t


def tangent_dimension(an: Analysis) -> int:
    """dim Ω − rank over ℚ of the Jacobian, at θ, of the equations of θ's *piece* of its fibre: the points with
    the same role for every neuron (v = 0; a = 0; or on the same hyperplane class with the same orientation)
    and the same normal form.  The equations: v_i = 0 or a_i = 0 for null and constant neurons; w_i ∥ û_j
    for a neuron on kink class j and w_i ∥ w_{i₀} on a class with cancelled kink; one kink sum per class;
    Σ_neg v_i a_iᵀ = M; c + Σ_const b_i v_i + Σ_neg b_i v_i = e.  This bounds the local dimension of the
    piece at θ from above, with equality at its smooth points (see docs/math/strata.md)."""
    eq = _TangentEquations(an)
    eq.roles()
    eq.class_equations()
    eq.output_equations()
    return eq.nv - (linalg.rank(eq.rows) if eq.rows else 0)


class _TangentEquations:
    """The rows of the Jacobian of :func:`tangent_dimension`, over the coordinates θ = (V, A, b, c)."""

    def __init__(self, an: Analysis) -> None:
        self.an = an
        self.m, self.n, self.k = m, n, k = an.net.shape
        self.V, self.A, self.b = an.fractions
        self.nv = k * n + n * m + n + k
        self.rows: list[list[Fraction]] = []
        self.kinds: list[str] = []
        self.sign: dict[int, int] = {}

    def iV(self, r: int, i: int) -> int:
        return r * self.n + i

    def iW(self, i: int, col: int) -> int:  # col = m is the bias
        k, n, m = self.k, self.n, self.m
        return k * n + i * m + col if col < m else k * n + n * m + i

    def iC(self, r: int) -> int:
        return self.k * self.n + self.n * self.m + self.n + r

    def w(self, i: int, col: int) -> Fraction:
        return Fraction(self.A[i, col] if col < self.m else self.b[i])

    def new(self) -> list[Fraction]:
        row = [Fraction(0)] * self.nv
        self.rows.append(row)
        return row

    def roles(self) -> None:
        """Each neuron's role (null, constant or on a hyperplane), with v = 0 or a = 0 for the first two."""
        V, A, b = self.V, self.A, self.b
        for i in range(self.n):
            if not any(V[r, i] for r in range(self.k)):
                self.kinds.append("null")
                for r in range(self.k):
                    self.new()[self.iV(r, i)] = Fraction(1)
            elif not any(A[i, c] for c in range(self.m)):
                self.kinds.append("const" if b[i] > 0 else "null")
                for c in range(self.m):
                    self.new()[self.iW(i, c)] = Fraction(1)
            else:
                self.kinds.append("hyper")

    def class_equations(self) -> None:
        """Per hyperplane class: the neurons stay on it (parallel to û, or to each other where the kink cancels),
        and the kink sum."""
        kd, hc, A = self.an.kinks, self.an.classes, self.A
        uhat = {tuple(u): j for j, u in enumerate(kd.hyperplane(j) for j in range(kd.N))}
        members: dict[int, list[int]] = {}
        for i in range(self.n):
            if self.kinds[i] == "hyper":
                members.setdefault(int(hc.label[i]), []).append(i)
        for lab, mem in members.items():
            p = next(c for c in range(self.m) if A[mem[0], c] != 0)
            u = hc.u_exact(lab)
            for i in mem:
                self.sign[i] = 1 if A[i, p] > 0 else -1
            if u in uhat:
                self.fixed_hyperplane(mem, p, u)
            else:
                self.common_hyperplane(mem, p)
            # the kink sums are linear in (v, w[p]); only their gradients matter
            for r in range(self.k):  # Σ_i σ_i w_i[p] v_i = κ
                row = self.new()
                for i in mem:
                    row[self.iW(i, p)] += self.sign[i] * self.V[r, i]
                    row[self.iV(r, i)] += self.sign[i] * self.w(i, p)

    def fixed_hyperplane(self, mem: list[int], p: int, u: tuple[Fraction, ...]) -> None:
        """w_i ∥ û (fixed): w_i[col] − w_i[p]·û[col] = 0."""
        for i in mem:
            for col in range(self.m + 1):
                if col != p:
                    row = self.new()
                    row[self.iW(i, col)] += 1
                    row[self.iW(i, p)] -= u[col]

    def common_hyperplane(self, mem: list[int], p: int) -> None:
        """w_i ∥ w_i0: w_i[col]·w_i0[p] − w_i0[col]·w_i[p] = 0."""
        i0, w, iW = mem[0], self.w, self.iW
        for i in mem[1:]:
            for col in range(self.m + 1):
                if col != p:
                    row = self.new()
                    row[iW(i, col)] += w(i0, p)
                    row[iW(i0, p)] += w(i, col)
                    row[iW(i0, col)] -= w(i, p)
                    row[iW(i, p)] -= w(i0, col)

    def output_equations(self) -> None:
        """Σ_neg v_i a_iᵀ = M and c + Σ_const b_i v_i + Σ_neg b_i v_i = e."""
        V, A, b, m = self.V, self.A, self.b, self.m
        neg = [i for i in range(self.n) if self.kinds[i] == "hyper" and self.sign[i] < 0]
        for r in range(self.k):
            for col in range(m):  # Σ_neg v_i a_iᵀ = M
                row = self.new()
                for i in neg:
                    row[self.iV(r, i)] += A[i, col]
                    row[self.iW(i, col)] += V[r, i]
            row = self.new()  # c + Σ_const b_i v_i + Σ_neg b_i v_i = e
            row[self.iC(r)] += 1
            for i in range(self.n):
                if self.kinds[i] == "const" or i in neg:
                    row[self.iV(r, i)] += b[i]
                    row[self.iW(i, m)] += V[r, i]
