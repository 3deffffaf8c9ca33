"""Independent exact oracles and generators for deep ReLU networks (no relusym code inside the oracles).

* ``forward``: the network at a rational point, by the definition, in Fractions.
* ``PWL``: a continuous piecewise-linear function of one variable held as its breakpoints, its values there and
  its two end slopes; ``network_pwl`` composes it layer by layer for m = 1 (ReLU adds the zero crossings of every
  piece, sums take the union of breakpoints).  Two such functions are equal iff their values agree at the union
  of breakpoints and their end slopes agree.
* ``agree_on_line``: the same on a rational line x0 + t·d of ℝ^m.
* ``output_gap`` and ``true_max_gap_1d``: max_i |f1_i − f2_i| at a point, and its exact maximum over an interval
  for m = 1 (a PWL function's maximum over an interval is at an end or a breakpoint); ``perturbed``: a copy with
  every weight moved by a small multiple of ``scale``.
* planted equal copies of a deep network (per-layer permutation and scales, duplicates split, dead / constant /
  output-less units added, hidden flips); the random networks themselves come from ``strategies.py``.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from dataclasses import dataclass
from fractions import Fraction

Layers = list[tuple[list[list[Fraction]], list[Fraction]]]  # (W rows, b) per affine layer


def layers_of(net) -> Layers:
    """An MLP's layers as Fractions (floats at their exact binary value)."""
    out: Layers = []
    for W, b in zip(net.weights, net.biases, strict=True):
        out.append(([[Fraction(v) for v in row] for row in W.tolist()], [Fraction(v) for v in b.tolist()]))
    return out


def forward(layers: Layers, x) -> tuple[Fraction, ...]:
    h = [Fraction(v) for v in x]
    for i, (W, b) in enumerate(layers):
        z = [sum((w * v for w, v in zip(row, h, strict=True)), Fraction(0)) + bi for row, bi in zip(W, b, strict=True)]
        h = z if i == len(layers) - 1 else [max(v, Fraction(0)) for v in z]
    return tuple(h)


@dataclass
class PWL:
    """f(t): breakpoints xs (sorted), values ys there, slopes left of xs[0] and right of xs[-1]; with no
    breakpoint, f(t) = ys0 + right·t (xs empty, ys = [f(0)])."""

    xs: list[Fraction]
    ys: list[Fraction]
    left: Fraction
    right: Fraction

    @staticmethod
    def affine(a: Fraction, c: Fraction) -> PWL:
        return PWL([], [c], a, a)

    def __call__(self, t: Fraction) -> Fraction:
        if not self.xs:
            return self.ys[0] + self.right * t
        if t <= self.xs[0]:
            return self.ys[0] + self.left * (t - self.xs[0])
        if t >= self.xs[-1]:
            return self.ys[-1] + self.right * (t - self.xs[-1])
        i = bisect_left(self.xs, t)
        if self.xs[i] == t:
            return self.ys[i]
        x0, x1, y0, y1 = self.xs[i - 1], self.xs[i], self.ys[i - 1], self.ys[i]
        return y0 + (y1 - y0) * (t - x0) / (x1 - x0)

    def on(self, xs: list[Fraction]) -> PWL:
        """The same function with breakpoints ``xs`` (a superset of its own)."""
        if not xs:
            return self
        slope_l = self.left
        slope_r = self.right
        return PWL(xs, [self(x) for x in xs], slope_l, slope_r)

    def relu(self) -> PWL:
        pts = set(self.xs)
        if not self.xs:
            if self.right != 0:
                pts.add(-self.ys[0] / self.right)
        else:
            for (x0, y0), (x1, y1) in zip(
                zip(self.xs, self.ys, strict=True), zip(self.xs[1:], self.ys[1:], strict=True), strict=False
            ):
                if (y0 < 0 < y1) or (y1 < 0 < y0):
                    pts.add(x0 + (x1 - x0) * y0 / (y0 - y1))
            if self.left != 0:
                r = self.xs[0] - self.ys[0] / self.left
                if r < self.xs[0]:
                    pts.add(r)
            if self.right != 0:
                r = self.xs[-1] - self.ys[-1] / self.right
                if r > self.xs[-1]:
                    pts.add(r)
        xs = sorted(pts)
        if not xs:  # affine without a zero: positive or negative everywhere, or zero
            return self if self.ys[0] > 0 else PWL([], [Fraction(0)], Fraction(0), Fraction(0))
        ys = [max(self(x), Fraction(0)) for x in xs]
        far_l = self(xs[0] - 1)
        far_r = self(xs[-1] + 1)
        return PWL(xs, ys, self.left if far_l > 0 else Fraction(0), self.right if far_r > 0 else Fraction(0))


def combine(terms: list[tuple[Fraction, PWL]], c: Fraction) -> PWL:
    xs = sorted({x for _, f in terms for x in f.xs})
    if not xs:
        a = sum((w * f.right for w, f in terms), Fraction(0))
        c0 = sum((w * f.ys[0] for w, f in terms), Fraction(0)) + c
        return PWL.affine(a, c0)
    ys = [sum((w * f(x) for w, f in terms), Fraction(0)) + c for x in xs]
    left = sum((w * f.left for w, f in terms), Fraction(0))
    right = sum((w * f.right for w, f in terms), Fraction(0))
    return PWL(xs, ys, left, right)


def network_pwl(layers: Layers) -> list[PWL]:
    """The outputs of a one-input network as PWL functions."""
    h = [PWL.affine(Fraction(1), Fraction(0))]
    for i, (W, b) in enumerate(layers):
        z = [combine(list(zip(row, h, strict=True)), bi) for row, bi in zip(W, b, strict=True)]
        h = z if i == len(layers) - 1 else [f.relu() for f in z]
    return h


def pwl_equal(f: PWL, g: PWL) -> bool:
    xs = sorted(set(f.xs) | set(g.xs)) or [Fraction(0)]
    return all(f(x) == g(x) for x in xs) and f.left == g.left and f.right == g.right


def on_line(layers: Layers, x0, d) -> Layers:
    W, b = layers[0]
    W1 = [[sum((w * di for w, di in zip(row, d, strict=True)), Fraction(0))] for row in W]
    b1 = [sum((w * xi for w, xi in zip(row, x0, strict=True)), Fraction(0)) + bi for row, bi in zip(W, b, strict=True)]
    return [(W1, b1)] + layers[1:]


def agree_1d(la: Layers, lb: Layers) -> bool:
    return all(pwl_equal(f, g) for f, g in zip(network_pwl(la), network_pwl(lb), strict=True))


def agree_on_lines(la: Layers, lb: Layers, m: int, rng: random.Random, count: int = 6) -> bool:
    for _ in range(count):
        x0 = [Fraction(rng.randint(-9, 9), rng.randint(1, 4)) for _ in range(m)]
        d = [Fraction(rng.randint(-9, 9), rng.randint(1, 4)) for _ in range(m)]
        if not any(d):
            continue
        if not agree_1d(on_line(la, x0, d), on_line(lb, x0, d)):
            return False
    return True


# ----------------------------------------------------------------------------------------------------------
# generators


def permute_scale(layers: Layers, rng: random.Random, scales=(Fraction(1, 4), Fraction(1, 2), 1, 2, 3, 4)) -> Layers:
    """A random per-layer permutation and positive rescaling (same function)."""
    out = [([list(r) for r in W], list(b)) for W, b in layers]
    for ell in range(len(out) - 1):
        W, b = out[ell]
        Wn, bn = out[ell + 1]
        n = len(W)
        d = [Fraction(rng.choice(scales)) for _ in range(n)]
        perm = list(range(n))
        rng.shuffle(perm)
        W2 = [[v * d[perm[s]] for v in W[perm[s]]] for s in range(n)]
        b2 = [b[perm[s]] * d[perm[s]] for s in range(n)]
        Wn2 = [[row[perm[s]] / d[perm[s]] for s in range(n)] for row in Wn]
        out[ell] = (W2, b2)
        out[ell + 1] = (Wn2, bn)
    return out


def add_junk(layers: Layers, rng: random.Random) -> Layers:
    """Same function, wider: a split duplicate, a constant unit, a dead-on-the-orthant unit (layers ≥ 2) and an
    output-less unit in each hidden layer."""
    out = [([list(r) for r in W], list(b)) for W, b in layers]
    for ell in range(len(out) - 1):
        W, b = out[ell]
        Wn, bn = out[ell + 1]
        n_in = len(W[0]) if W else (len(layers[0][0][0]) if ell == 0 else len(out[ell - 1][0]))
        if W:
            # split unit 0 into t·unit and (1-t)-weighted copy: rows t0·r, t1·r with columns c/2t0, c/2t1
            t0, t1 = Fraction(rng.choice((1, 2, 3))), Fraction(1, rng.choice((1, 2, 3)))
            r, beta, c = W[0], b[0], [row[0] for row in Wn]
            W[0], b[0] = [v * t0 for v in r], beta * t0
            W.append([v * t1 for v in r])
            b.append(beta * t1)
            for row, ci in zip(Wn, c, strict=True):
                row[0] = ci / (2 * t0)
                row.append(ci / (2 * t1))
        # a constant unit: zero row, bias β, column k; folding adds k·σ(β) to bn: compensate in bn
        beta = Fraction(rng.randint(-2, 3))
        W.append([Fraction(0)] * n_in)
        b.append(beta)
        for i, row in enumerate(Wn):
            k = Fraction(rng.randint(-2, 2))
            row.append(k)
            bn[i] -= k * max(beta, Fraction(0))
        if ell >= 1:
            W.append([Fraction(-rng.randint(0, 3)) for _ in range(n_in)])
            b.append(Fraction(-rng.randint(0, 2)))
            for row in Wn:
                row.append(Fraction(rng.randint(-3, 3)))
        W.append([Fraction(rng.randint(-3, 3)) for _ in range(n_in)])
        b.append(Fraction(rng.randint(-3, 3)))
        for row in Wn:
            row.append(Fraction(0))
    return out


def add_flip_pair(layers: Layers, rng: random.Random, ell: int) -> tuple[Layers, Layers]:
    """(θ, θ') with θ' the flip of a planted pair of units of hidden layer ``ell`` (0-based): units u, v with
    w_v = −w_u/λ and c_v = λ·c_u satisfy c_u w_uᵀ + c_v w_vᵀ = 0, so flipping both keeps the function."""
    base = [([list(r) for r in W], list(b)) for W, b in layers]
    W, b = base[ell]
    Wn, bn = base[ell + 1]
    n_in = len(W[0])
    wu = [Fraction(rng.randint(-3, 3)) for _ in range(n_in)]
    if not any(wu):
        wu[0] = Fraction(1)
    lam = Fraction(rng.choice((1, 2, 3)), rng.choice((1, 2)))
    bu, bv = Fraction(rng.randint(-3, 3)), Fraction(rng.randint(-3, 3))
    W += [wu, [-v / lam for v in wu]]
    b += [bu, bv]
    for row in Wn:
        cu = Fraction(rng.randint(-3, 3)) or Fraction(1)
        row += [cu, lam * cu]
    flipped = [([list(r) for r in W2], list(b2)) for W2, b2 in base]
    Wf, bf = flipped[ell]
    Wnf, bnf = flipped[ell + 1]
    u, v = len(Wf) - 2, len(Wf) - 1
    for i, row in enumerate(Wnf):
        bnf[i] += row[u] * bf[u] + row[v] * bf[v]
    for j in (u, v):
        Wf[j] = [-x for x in Wf[j]]
        bf[j] = -bf[j]
    return base, flipped


def float_exact(layers: Layers) -> bool:
    """Every entry is a float64 value (so the layers can be given as float arrays without rounding)."""
    return all(Fraction(float(v)) == v for W, b in layers for row in W + [b] for v in row)


def to_mlp(layers: Layers, *, floats: bool = False):
    """The layers as a relusym.MLP (Fractions, or float64 arrays when ``floats``: then every entry must be exact)."""
    import numpy as np

    from relusym import MLP

    if floats:
        Ws = [np.array([[float(v) for v in r] for r in W], dtype=np.float64) for W, _ in layers]
        bs = [np.array([float(v) for v in b], dtype=np.float64) for _, b in layers]
        assert float_exact(layers)
        return MLP(Ws, bs)
    return MLP([W for W, _ in layers], [b for _, b in layers])


def perturbed(layers: Layers, rng: random.Random, scale: Fraction) -> Layers:
    """A copy of ``layers`` with every weight and bias moved by scale · k, k uniform in −3 … 3."""
    return [
        ([[w + scale * rng.randint(-3, 3) for w in row] for row in W], [v + scale * rng.randint(-3, 3) for v in b])
        for W, b in layers
    ]


def output_gap(la: Layers, lb: Layers, x) -> Fraction:
    """max_i |f1_i(x) − f2_i(x)| at the rational point x, by the definition."""
    return max(abs(p - q) for p, q in zip(forward(la, x), forward(lb, x), strict=True))


def true_max_gap_1d(la: Layers, lb: Layers, lo: Fraction, hi: Fraction) -> Fraction:
    """For m = 1: the exact maximum of max_i |f1_i − f2_i| over [lo, hi] (at an end or a breakpoint of a
    difference)."""
    best = Fraction(0)
    for f, g in zip(network_pwl(la), network_pwl(lb), strict=True):
        d = combine([(Fraction(1), f), (Fraction(-1), g)], Fraction(0))
        for x in [lo, hi, *(t for t in d.xs if lo <= t <= hi)]:
            best = max(best, abs(d(x)))
    return best


def arrangement_vertices(net, box) -> list[tuple[Fraction, ...]]:
    """Every vertex of the arrangement of the first layer's lines and the box's sides inside the box (m = 2): with
    a fine grid, the points where a small network's exact oracles look for the extremes of its first layer."""
    lines = [(Fraction(w[0]), Fraction(w[1]), Fraction(b)) for w, b in zip(net.weights[0], net.biases[0], strict=True)]
    for t in range(2):
        for v in (box.lo[t], box.hi[t]):
            lines.append((Fraction(int(t == 0)), Fraction(int(t == 1)), -v))
    out = []
    for i, (a1, b1, c1) in enumerate(lines):
        for a2, b2, c2 in lines[i + 1 :]:
            det = a1 * b2 - a2 * b1
            if det:
                x = ((-c1) * b2 - (-c2) * b1) / det
                y = (a1 * (-c2) - a2 * (-c1)) / det
                if box.contains((x, y)):
                    out.append((x, y))
    return out


def third_layer_dead_net():
    """A planted 2-4-4-2-1 MLP whose third-layer unit 0 is (σ(p) + 2) − (σ(p) + 2) − σ(q)/2 − ε with p = x + y/2
    (two copies) and q = y − x/3, ε = 1/64: ≤ −ε everywhere, equal to −ε where q ≤ 0.  The two copies of σ(p) are
    relaxed independently, so neither interval arithmetic nor one triangle LP sees it; unit 1 of that layer and
    unit 3 of the first cross."""
    from relusym._deep.mlp import MLP

    eps = Fraction(1, 64)
    W1 = [[1, Fraction(1, 2)], [1, Fraction(1, 2)], [Fraction(-1, 3), 1], [1, -1]]
    b1 = [0, 0, 0, Fraction(1, 5)]
    W2 = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1], [0, 0, 1, 0]]
    b2 = [2, 2, Fraction(-1, 10), 0]
    W3 = [[1, -1, 0, Fraction(-1, 2)], [0, 0, 1, 0]]
    return MLP([W1, W2, W3, [[1, 1]]], [b1, b2, [-eps, Fraction(-1, 20)], [0]])
