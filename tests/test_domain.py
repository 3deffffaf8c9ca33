"""Equality on a bounded domain, against independent oracles (plain Fractions, no relusym code in the oracles).

* m = 1: f = ρ1 − ρ2 is piecewise linear on [lo, hi] with breakpoints B; f ≡ 0 on the box iff it vanishes at
  the ends and at every breakpoint inside.
* m = 2, 3: f is affine on every cell of the arrangement of the neurons' hyperplanes and the domain's facets;
  each cell is the convex hull of its vertices, so f ≡ 0 on the domain iff it vanishes at every vertex of that
  arrangement inside the domain (plus a rational grid, as a second check).
"""

from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relusym
from relusym import Box, Network, Polytope, Symmetry, distance, equivalent, normal_form
from relusym.cli import main
from relusym.errors import InvalidNetworkError

from oracles import eval_oracle
from strategies import int_parameters, random_int_net

# ----------------------------------------------------------------------------------------------------------
# oracles


def _solve(M: list[list[F]], r: list[F]) -> list[F] | None:
    """The unique solution of M x = r (square), or None when M is singular (Fraction elimination)."""
    n = len(M)
    T = [list(row) + [ri] for row, ri in zip(M, r, strict=True)]
    for c in range(n):
        piv = next((i for i in range(c, n) if T[i][c] != 0), None)
        if piv is None:
            return None
        T[c], T[piv] = T[piv], T[c]
        for i in range(n):
            if i != c and T[i][c] != 0:
                f = T[i][c] / T[c][c]
                T[i] = [x - f * y for x, y in zip(T[i], T[c], strict=True)]
    return [T[i][n] / T[i][i] for i in range(n)]


def box_ineqs(lo: list[F], hi: list[F]) -> tuple[list[list[F]], list[F]]:
    m = len(lo)
    G, h = [], []
    for j in range(m):
        e = [F(int(i == j)) for i in range(m)]
        G.append(e)
        h.append(hi[j])
        G.append([-x for x in e])
        h.append(-lo[j])
    return G, h


def vertices(nets: list[tuple], G: list[list[F]], h: list[F]) -> list[tuple[F, ...]]:
    """Every vertex of the arrangement of the neurons' hyperplanes and the facets G x = h, inside G x ≤ h."""
    m = len(G[0])
    planes = [(list(map(F, row)), F(hi)) for row, hi in zip(G, h, strict=True)]
    for _V, A, b, _c in nets:
        for i in range(len(b)):
            a = [F(x) for x in A[i]]
            if any(a):
                planes.append((a, -F(b[i])))
    out = set()
    for combo in itertools.combinations(planes, m):
        x = _solve([p[0] for p in combo], [p[1] for p in combo])
        if x is None:
            continue
        if all(sum((gi * xi for gi, xi in zip(row, x, strict=True)), F(0)) <= hi for row, hi in zip(G, h, strict=True)):
            out.add(tuple(x))
    return sorted(out)


def oracle_equal(net1: tuple, net2: tuple, G: list[list[F]], h: list[F], grid: list[tuple[F, ...]] = ()) -> bool:
    pts = vertices([net1, net2], G, h) + list(grid)
    return all(eval_oracle(*net1, x) == eval_oracle(*net2, x) for x in pts)


def oracle_m1(net1: tuple, net2: tuple, lo: F, hi: F) -> bool:
    pts = {lo, hi}
    for _V, A, b, _c in (net1, net2):
        for i in range(len(b)):
            if F(A[i][0]) != 0:
                t = -F(b[i]) / F(A[i][0])
                if lo < t < hi:
                    pts.add(t)
    return all(eval_oracle(*net1, [x]) == eval_oracle(*net2, [x]) for x in pts)


def grid(lo: list[F], hi: list[F], steps: int) -> list[tuple[F, ...]]:
    axes = [[lo[j] + (hi[j] - lo[j]) * F(t, steps) for t in range(steps + 1)] for j in range(len(lo))]
    return list(itertools.product(*axes))


def net_of(t: tuple, m: int | None = None) -> Network:
    V, A, b, c = t
    return Network(V, A, b, c, m=len(A[0]) if A else m)


def check_verdict(t1: tuple, t2: tuple, domain, expected: bool, inside, m: int | None = None) -> None:
    """The verdict equals the oracle's; a counterexample lies inside the domain and is confirmed by the oracle."""
    v = equivalent(net_of(t1, m), net_of(t2, m), domain=domain)
    assert bool(v) == expected
    if not expected:
        ce = v.counterexample
        assert ce is not None and inside(ce.x)
        assert eval_oracle(*t1, ce.x) != eval_oracle(*t2, ce.x)
        assert eval_oracle(*t1, ce.x) == ce.y1 and eval_oracle(*t2, ce.x) == ce.y2
    else:
        assert v.counterexample is None


def in_box(lo, hi):
    return lambda x: all(a < xi < b for a, xi, b in zip(lo, x, hi, strict=True))


# ----------------------------------------------------------------------------------------------------------
# planted modifications that keep the function on the box (and change it on ℝ^m)


def _range(a: list[F], b: F, lo: list[F], hi: list[F]) -> tuple[F, F]:
    mn = b + sum((aj * (l if aj > 0 else u) for aj, l, u in zip(a, lo, hi, strict=True)), F(0))
    mx = b + sum((aj * (u if aj > 0 else l) for aj, l, u in zip(a, lo, hi, strict=True)), F(0))
    return mn, mx


def add_neuron(t: tuple, v: list, a: list, b) -> tuple:
    V, A, bb, c = t
    return ([row + [vi] for row, vi in zip(V, v, strict=True)], A + [a], bb + [b], list(c))


def plant_inactive(rng: random.Random, t: tuple, lo: list[F], hi: list[F], touch: bool) -> tuple:
    """Add a neuron that is zero on the whole box (touching it at a corner when ``touch``)."""
    m, k = len(lo), len(t[3])
    a = [F(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in range(m)]
    _, mx = _range(a, F(0), lo, hi)
    b = -mx - (0 if touch else F(rng.randint(1, 5), rng.randint(1, 4)))
    return add_neuron(t, [F(rng.randint(-3, 3) or 1) for _ in range(k)], a, b)


def plant_active_pair(rng: random.Random, t: tuple, lo: list[F], hi: list[F]) -> tuple:
    """Add v·σ(a·x + b1) − v·σ(a·x + b2), both active on the box: the constant v(b1 − b2), taken out of c."""
    m, k = len(lo), len(t[3])
    a = [F(rng.randint(-3, 3)) for _ in range(m)]
    mn, _ = _range(a, F(0), lo, hi)
    b1 = -mn + F(rng.randint(0, 4), 2)
    b2 = -mn + F(rng.randint(0, 4), 3)
    v = [F(rng.randint(-3, 3)) for _ in range(k)]
    t = add_neuron(add_neuron(t, v, a, b1), [-x for x in v], a, b2)
    V, A, b, c = t
    return V, A, b, [ci - vi * (b1 - b2) for ci, vi in zip(c, v, strict=True)]


def plant_moved_kink(rng: random.Random, t: tuple, lo: list[F], hi: list[F]) -> tuple[tuple, tuple]:
    """(θ1, θ2) = θ plus v·σ(a·x + b) with two offsets b, b' that keep the hyperplane off the box (active on it),
    the difference compensated in c: equal on the box, not on ℝ^m."""
    m, k = len(lo), len(t[3])
    a = [F(rng.choice([-2, -1, 1, 2])) for _ in range(m)]
    mn, _ = _range(a, F(0), lo, hi)
    b, b2 = -mn + F(rng.randint(0, 3)), -mn + F(rng.randint(4, 9), 2)
    v = [F(rng.choice([-2, -1, 1, 3])) for _ in range(k)]
    t1 = add_neuron(t, v, a, b)
    V, A, bb, c = add_neuron(t, v, a, b2)
    return t1, (V, A, bb, [ci + vi * (b - b2) for ci, vi in zip(c, v, strict=True)])


def random_box(rng: random.Random, m: int) -> tuple[list[F], list[F]]:
    lo = [F(rng.randint(-4, 2), rng.randint(1, 3)) for _ in range(m)]
    hi = [x + F(rng.randint(1, 6), rng.randint(1, 2)) for x in lo]
    return lo, hi


def random_pair(rng: random.Random, m: int, lo: list[F], hi: list[F]) -> tuple[tuple, tuple]:
    t = random_int_net(rng, m, rng.randint(0, 3), rng.randint(1, 2))
    kind = rng.randrange(6)
    if kind == 0:
        return t, random_int_net(rng, m, rng.randint(0, 3), len(t[3]))
    if kind == 1:
        return t, plant_inactive(rng, t, lo, hi, touch=rng.random() < 0.5)
    if kind == 2:
        return t, plant_active_pair(rng, t, lo, hi)
    if kind == 3:
        return plant_moved_kink(rng, t, lo, hi)
    if kind == 4:  # a planted modification, then one entry nudged (usually breaks equality)
        t2 = plant_inactive(rng, t, lo, hi, touch=False)
        V, A, b, c = t2
        b = list(b)
        b[-1] = b[-1] + F(rng.choice([1, 3, 7]), 2)
        return t, (V, A, b, c)
    V, A, b, c = t
    return t, (V, A, b, [x + F(rng.choice([0, 1]), 5) for x in c])


# ----------------------------------------------------------------------------------------------------------
# random pairs against the oracles


def test_m1_random_pairs_match_the_breakpoint_oracle() -> None:
    rng = random.Random(11)
    seen = {True: 0, False: 0}
    for _ in range(300):
        lo, hi = random_box(rng, 1)
        t1, t2 = random_pair(rng, 1, lo, hi)
        expected = oracle_m1(t1, t2, lo[0], hi[0])
        seen[expected] += 1
        check_verdict(t1, t2, Box(lo[0], hi[0]), expected, in_box(lo, hi), 1)
    assert seen[True] > 50 and seen[False] > 50


@pytest.mark.parametrize("m", [2, 3])
def test_random_pairs_match_the_vertex_oracle(m: int) -> None:
    rng = random.Random(100 + m)
    seen = {True: 0, False: 0}
    for _ in range(60 if m == 2 else 30):
        lo, hi = random_box(rng, m)
        t1, t2 = random_pair(rng, m, lo, hi)
        G, h = box_ineqs(lo, hi)
        expected = oracle_equal(t1, t2, G, h, grid(lo, hi, 3))
        seen[expected] += 1
        check_verdict(t1, t2, (lo, hi), expected, in_box(lo, hi), m)
    assert seen[True] > 5 and seen[False] > 5


def test_polytope_pairs_match_the_vertex_oracle() -> None:
    rng = random.Random(7)
    # a triangle and a quadrilateral in the plane, a simplex in ℝ^3
    shapes = [
        ([[-1, 0], [0, -1], [1, 1]], [0, 0, 2]),
        ([[1, 2], [-1, 1], [0, -1], [2, -1]], [4, 2, 1, 3]),
        ([[-1, 0, 0], [0, -1, 0], [0, 0, -1], [1, 1, 1]], [0, 0, 0, 1]),
    ]
    seen = {True: 0, False: 0}
    for G0, h0 in shapes:
        G = [[F(x) for x in row] for row in G0]
        h = [F(x) for x in h0]
        P = Polytope(G, h)
        m = len(G[0])
        # a box inside which the planted modifications are made keeps them valid on the polytope too
        lo = [min(x[j] for x in vertices([], G, h)) for j in range(m)]
        hi = [max(x[j] for x in vertices([], G, h)) for j in range(m)]
        for _ in range(25):
            t1, t2 = random_pair(rng, m, lo, hi)
            expected = oracle_equal(t1, t2, G, h)
            seen[expected] += 1

            def inside(x, G=G, h=h):
                return all(
                    sum((g * xi for g, xi in zip(row, x, strict=True)), F(0)) < hh for row, hh in zip(G, h, strict=True)
                )

            check_verdict(t1, t2, P, expected, inside, m)
    assert seen[True] > 5 and seen[False] > 5


# ----------------------------------------------------------------------------------------------------------
# planted pairs, spelled out


def test_neuron_inactive_on_the_box() -> None:
    base = ([[1, -2]], [[1], [2]], [0, -1], [0])
    extra = add_neuron(base, [5], [1], -3)  # fires only for x > 3
    check_verdict(base, extra, Box(-2, 3), True, None)
    assert not equivalent(net_of(base), net_of(extra))
    check_verdict(base, extra, Box(-2, "3.001"), False, in_box([F(-2)], [F(3001, 1000)]))


def test_two_active_neurons_with_constant_difference() -> None:
    # σ(x + 5) − σ(x + 3) = 2 for x ≥ −3; compensated in c
    t1 = ([[1]], [[1]], [0], [0])
    t2 = ([[1, 1, -1]], [[1], [1], [1]], [0, 5, 3], [-2])
    check_verdict(t1, t2, Box(-3, 4), True, None)
    check_verdict(t1, t2, Box(-4, 4), False, in_box([F(-4)], [F(4)]))
    assert not equivalent(net_of(t1), net_of(t2))
    # the same in ℝ^3 on a polytope
    t1 = ([[1]], [[1, 1, 0]], [0], [0])
    t2 = ([[1, 1, -1]], [[1, 1, 0], [1, -1, 2], [1, -1, 2]], [0, 5, 3], [-2])
    P = Polytope([[-1, 0, 0], [0, 1, 0], [0, 0, -1], [1, 1, 1]], [0, 0, 0, 1])  # x ≥ 0, y ≤ 0, z ≥ 0, x+y+z ≤ 1
    assert bool(equivalent(net_of(t1), net_of(t2), domain=P))


def test_kink_moved_from_inside_to_outside() -> None:
    t1 = ([[1, 1]], [[1, 1], [1, -1]], [0, F(1, 2)], [0])  # kinks x + y = 0 and x − y = −1/2
    t2 = ([[1, 1]], [[1, 1], [1, -1]], [0, 3], [F(-5, 2)])  # the second kink moved to x − y = −3
    lo, hi = [F(-1), F(-1)], [F(1), F(1)]
    check_verdict(t1, t2, (lo, hi), False, in_box(lo, hi))  # x − y = −1/2 crosses the box
    lo2 = [F(0), F(0)]
    hi2 = [F(1), F(1, 4)]  # x − y ≥ −1/4 here: both active, difference constant compensated in c
    check_verdict(t1, t2, (lo2, hi2), True, None)


def test_thin_slab_inside_the_box() -> None:
    eps = F(1, 1000)
    slab = ([[1, 1]], [[1], [-1]], [eps, eps], [-eps])  # σ(x + ε) + σ(ε − x) − ε
    absx = ([[1, 1]], [[1], [-1]], [0, 0], [0])  # |x|
    check_verdict(slab, absx, Box(-1, 1), False, in_box([F(-1)], [F(1)]))
    v = equivalent(net_of(slab), net_of(absx), domain=Box(-1, 1))
    assert abs(v.counterexample.x[0]) < eps
    check_verdict(slab, absx, Box(2 * eps, 1), True, None)
    check_verdict(slab, absx, Box(-1, -eps), True, None)
    # the same slab in ℝ^2, along x − 2y
    slab2 = ([[1, 1]], [[1, -2], [-1, 2]], [eps, eps], [-eps])
    abs2 = ([[1, 1]], [[1, -2], [-1, 2]], [0, 0], [0])
    lo, hi = [F(-1), F(-1)], [F(1), F(1)]
    check_verdict(slab2, abs2, (lo, hi), False, in_box(lo, hi))
    x = equivalent(net_of(slab2), net_of(abs2), domain=(lo, hi)).counterexample.x
    assert abs(x[0] - 2 * x[1]) < eps


def test_float_networks_one_ulp_and_far_kink() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    m, n = 5, 12
    A = rng.standard_normal((n, m)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    V = rng.standard_normal((2, n)).astype(np.float32)
    net = Network(V, A, b)
    A2 = A.copy()
    A2[3, 1] = np.nextafter(A2[3, 1], np.float32(np.inf))
    box = Box(0, 1)
    # does neuron 3 cross the box?  decide independently in Fractions
    a = [F(float(x)) for x in A[3]]
    mn, mx = _range(a, F(float(b[3])), [F(0)] * m, [F(1)] * m)
    v = equivalent(net, Network(V, A2, b), domain=box)
    if mn < 0 < mx:
        assert not v
        x = v.counterexample.x
        assert all(0 < xi < 1 for xi in x)

        def exact(Vx, Ax, bx):
            return (
                [[F(float(y)) for y in r] for r in Vx.tolist()],
                [[F(float(y)) for y in r] for r in Ax.tolist()],
                [F(float(y)) for y in bx.tolist()],
                [F(0), F(0)],
            )

        assert eval_oracle(*exact(V, A, b), x) != eval_oracle(*exact(V, A2, b), x)
    # a far kink: neuron 0 pushed off the box (always active) and compensated exactly in c
    b3 = b.copy()
    b3[0] = np.float32(100.0)
    b4 = b.copy()
    b4[0] = np.float32(200.0)
    c4 = [F(float(V[r, 0])) * (F(100) - F(200)) for r in range(2)]
    assert bool(equivalent(Network(V, A, b3), Network(V, A, b4, c4), domain=box))
    assert not equivalent(Network(V, A, b3), Network(V, A, b4, c4))


# ----------------------------------------------------------------------------------------------------------
# properties


@st.composite
def boxes(draw, m: int):
    lo = [F(draw(st.integers(-6, 4)), draw(st.integers(1, 3))) for _ in range(m)]
    hi = [x + F(draw(st.integers(1, 8)), draw(st.integers(1, 3))) for x in lo]
    return lo, hi


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_equal_on_R_m_implies_equal_on_every_domain(data) -> None:
    t = data.draw(int_parameters(data.draw(st.integers(1, 3))))
    net = net_of(t, len(t[1][0]) if t[1] else 1)
    h = Symmetry.random(net.n, data.draw(st.integers(0, 2**32)))
    other = h @ net
    lo, hi = data.draw(boxes(net.m))
    assert bool(equivalent(net, other, domain=(lo, hi)))
    if net.n:
        flipped = relusym.flip(net, [0])
        if equivalent(net, flipped):
            assert bool(equivalent(net, flipped, domain=(lo, hi)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_notions_agree_on_a_domain_every_hyperplane_crosses(data) -> None:
    m = data.draw(st.integers(1, 3))
    t1, t2 = data.draw(int_parameters(m)), data.draw(int_parameters(m))
    if data.draw(st.booleans()):
        t2 = (t1[0], t1[1], t1[2], [c + data.draw(st.integers(0, 1)) for c in t1[3]])
    # a box that meets every hyperplane a·x + b = 0: half-width R with R·‖a‖₁ > |b|
    R = F(1)
    for _V, A, b, _c in (t1, t2):
        for i in range(len(b)):
            n1 = sum(abs(F(x)) for x in A[i])
            if n1:
                R = max(R, abs(F(b[i])) / n1 + 1)
    box = Box(-R, R)
    n1, n2 = net_of(t1, m), net_of(t2, m)
    if n1.k == n2.k:
        assert bool(equivalent(n1, n2, domain=box)) == bool(equivalent(n1, n2))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_domain_normal_form_is_invariant(data) -> None:
    m = data.draw(st.integers(1, 3))
    t = data.draw(int_parameters(m))
    net = net_of(t, m)
    lo, hi = data.draw(boxes(net.m))
    nf = normal_form(net, domain=(lo, hi))
    h = Symmetry.random(net.n, data.draw(st.integers(0, 2**32)))
    nf2 = normal_form(h @ net, domain=(lo, hi))
    assert nf == nf2 and nf.digest() == nf2.digest() and hash(nf) == hash(nf2)
    # symmetries only on the domain: an added neuron zero there, an active pair with constant difference
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for t2 in (plant_inactive(rng, t, lo, hi, touch=True), plant_active_pair(rng, t, lo, hi)):
        nf3 = normal_form(net_of(t2, m), domain=(lo, hi))
        assert nf3 == nf and nf3.digest() == nf.digest()
    # and the normal form on the domain decides equality there
    t4 = data.draw(int_parameters(net.m))
    if len(t4[3]) == len(t[3]):
        G, hh = box_ineqs(lo, hi)
        assert (normal_form(net_of(t4, m), domain=(lo, hi)) == nf) == oracle_equal(t, t4, G, hh)


def test_domain_normal_form_contents() -> None:
    # σ(x) + σ(x − 5) on [0, 1]: the kink at 0 is on the boundary (affine there), the one at 5 outside
    net = Network([[1, 1]], [[1], [1]], [0, -5])
    nf = normal_form(net, domain=(0, 1))
    assert nf.K == () and nf.M == ((F(1),),) and nf.e == (F(0),)
    nf2 = normal_form(net, domain=(-1, 1))
    assert [u for u, _ in nf2.K] == [(F(1), F(0))] and nf2.M == ((F(0),),)
    d = nf.to_dict()
    assert d["domain"] == {"type": "box", "lo": ["0"], "hi": ["1"]}
    assert nf.digest() != normal_form(net).digest()
    back = type(nf).from_dict(json.loads(json.dumps(d)))
    assert back == nf and back.digest() == nf.digest()
    assert normal_form(net, domain=Box([0], [1])) == nf
    assert normal_form(net, domain=(0, 1)) != normal_form(net, domain=(0, 2))


# ----------------------------------------------------------------------------------------------------------
# the certificate, the domain objects, bad input


def test_certificate_lists_what_was_checked() -> None:
    t1 = ([[1, 1, 1]], [[1], [1], [-1]], [0, -5, -7], [0])  # crossing at 0; zero on [-1, 1]; zero
    t2 = ([[1, 2]], [[1], [1]], [0, 3], [-6])  # crossing at 0; affine on [-1, 1]: 2(x + 3) − 6 = 2x
    v = equivalent(net_of(t1), net_of(t2), domain=(-1, 1))
    assert not v  # σ(x) against σ(x) + 2x
    c = v.certificate
    assert c.crossing == ((0,), (0,)) and c.zero == ((1, 2), ()) and c.affine == ((), (1,))
    assert c.affine_differs and c.differing_kinks == 0
    d = v.to_dict()
    json.dumps(d)
    assert d["certificate"]["zero"] == [[1, 2], []]


def test_polytope_checks_and_box_checks() -> None:
    with pytest.raises(InvalidNetworkError, match="empty interior"):
        Polytope([[1, 0], [-1, 0]], [0, 0])  # x = 0
    with pytest.raises(InvalidNetworkError, match="empty interior"):
        Polytope([[1], [-1]], [0, -1])  # x ≤ 0 and x ≥ 1
    with pytest.raises(InvalidNetworkError, match="b_ineq"):
        Polytope([[1], [-1]], [0])
    P = Polytope([[1, 1]], [1])  # a half-plane: unbounded is allowed
    assert P.contains(P.interior, strict=True)
    with pytest.raises(InvalidNetworkError, match="empty interior"):
        Box([0, 1], [1, 1])
    with pytest.raises(InvalidNetworkError, match="coordinates"):
        equivalent(Network([[1]], [[1, 1]], [0]), Network([[1]], [[1, 1]], [0]), domain=Box([0, 0, 0], [1, 1, 1]))
    with pytest.raises(InvalidNetworkError, match="domain must be"):
        equivalent(Network([[1]], [[1]], [0]), Network([[1]], [[1]], [0]), domain="0:1")
    assert Box("0.1", "1/3").resolve(2).hi == (F(1, 3), F(1, 3))
    # an unbounded polytope: σ(x) and x agree on x ≥ 0
    assert bool(
        equivalent(Network([[1]], [[1]], [0]), Network([[1, -1]], [[1], [-1]], [0, 0]), domain=Polytope([[-1]], [0]))
    )
    assert not equivalent(
        Network([[1]], [[1]], [0]), Network([[1, -1]], [[1], [-1]], [0, 0]), domain=Polytope([[1]], [0])
    )


def test_certificate_false_is_cheap() -> None:
    t1 = ([[1]], [[1]], [0], [0])
    t2 = ([[2]], [[1]], [0], [0])
    v = equivalent(net_of(t1), net_of(t2), domain=(-1, 1), certificate=False)
    assert not v and v.counterexample is None


# ----------------------------------------------------------------------------------------------------------
# ε-distance on a box


def test_distance_m1_is_exact() -> None:
    rng = random.Random(5)
    for _ in range(40):
        lo, hi = random_box(rng, 1)
        t1, t2 = random_pair(rng, 1, lo, hi)
        d = distance(net_of(t1, 1), net_of(t2, 1), domain=(lo, hi))
        assert d.kind == "exact" and d.lower == d.upper
        # independent: the max of |f| over breakpoints and ends
        pts = {lo[0], hi[0]} | {
            -F(b[i]) / F(A[i][0])
            for _V, A, b, _c in (t1, t2)
            for i in range(len(b))
            if F(A[i][0]) and lo[0] < -F(b[i]) / F(A[i][0]) < hi[0]
        }
        best = max(
            max(abs(p - q) for p, q in zip(eval_oracle(*t1, [x]), eval_oracle(*t2, [x]), strict=True)) for x in pts
        )
        assert d.lower == best


@pytest.mark.parametrize("seed", range(6))
def test_distance_bounds_are_sound(seed: int) -> None:
    rng = random.Random(seed)
    m = 2
    lo, hi = random_box(rng, m)
    t1, t2 = random_pair(rng, m, lo, hi)
    d = distance(net_of(t1, m), net_of(t2, m), domain=(lo, hi), budget=2.0)
    assert d.kind in ("exact", "milp", "bounds")
    assert all(a <= x <= b for a, x, b in zip(lo, d.point, hi, strict=True))
    attained = max(abs(p - q) for p, q in zip(eval_oracle(*t1, d.point), eval_oracle(*t2, d.point), strict=True))
    assert attained == d.lower
    G, h = box_ineqs(lo, hi)
    pts = grid(lo, hi, 24) + vertices([t1, t2], G, h)
    sampled = max(max(abs(p - q) for p, q in zip(eval_oracle(*t1, x), eval_oracle(*t2, x), strict=True)) for x in pts)
    # the vertices decide the maximum of a piecewise linear function: sampled is the true maximum
    assert d.lower <= sampled <= d.upper
    if d.kind in ("exact", "milp"):
        assert d.lower == sampled
    assert d.within(d.upper) is True
    if d.lower > 0:
        assert d.within(d.lower / 2) is False


def test_distance_needs_a_box() -> None:
    n = Network([[1]], [[1, 0]], [0])
    with pytest.raises(InvalidNetworkError, match="Box"):
        distance(n, n, domain=Polytope([[1, 0], [0, 1], [-1, -1]], [1, 1, 1]))
    with pytest.raises(InvalidNetworkError, match="norm"):
        distance(n, n, domain=(0, 1), norm="l2")


# ----------------------------------------------------------------------------------------------------------
# command line


def test_cli_box(tmp_path, capsys) -> None:
    p1, p2 = tmp_path / "a.json", tmp_path / "b.json"
    relusym.save(Network([[1, 1]], [[1], [1]], [0, -5]), p1)
    relusym.save(Network([[1]], [[1]], [0]), p2)
    assert main(["equiv", str(p1), str(p2), "--box", "0:1"]) == 0
    assert "EQUIVALENT" in capsys.readouterr().out
    assert main(["equiv", str(p1), str(p2), "--box", "0:6", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "domain" and F(out["counterexample"]["x"][0]) > 5
    bf = tmp_path / "box.json"
    bf.write_text(json.dumps({"lo": ["-1/2"], "hi": [4.5]}))
    assert main(["equiv", str(p1), str(p2), "--box", str(bf)]) == 0
    capsys.readouterr()
    assert main(["equiv", str(p1), str(p2), "--box", "1:0"]) == 2
    assert "empty interior" in capsys.readouterr().err
    assert main(["equiv", str(p1), str(p2), "--box", "nonsense"]) == 2
    capsys.readouterr()
    # on [0, 1] the two networks agree, so |f1 - f2| <= 0.1 there: the verifiers' question answered "yes"
    assert main(["equiv", str(p1), str(p2), "--box", "0:1", "--atol", "0.1"]) == 0
    assert capsys.readouterr().out.startswith("YES")
    assert main(["equiv", str(p1), str(p2)]) == 1


def test_both_restrictions_give_one_normal_form(monkeypatch) -> None:
    """Affine neurons summed exactly or given mirrors: the same normal form on D, the same verdicts."""
    import relusym._bounded.restriction as dm

    rng = random.Random(21)
    for _ in range(40):
        m = rng.randint(1, 3)
        lo, hi = random_box(rng, m)
        t1, t2 = random_pair(rng, m, lo, hi)
        n1, n2 = net_of(t1, m), net_of(t2, m)
        direct = (normal_form(n1, domain=(lo, hi)), normal_form(n2, domain=(lo, hi)))
        v_direct = bool(equivalent(n1, n2, domain=(lo, hi)))
        monkeypatch.setattr(dm, "_DIRECT_AFFINE", -1)
        mirrored = (normal_form(n1, domain=(lo, hi)), normal_form(n2, domain=(lo, hi)))
        v_mirror = bool(equivalent(n1, n2, domain=(lo, hi)))
        monkeypatch.undo()
        assert v_direct == v_mirror
        for a, b in zip(direct, mirrored, strict=True):
            assert a == b and b == a and a.digest() == b.digest() and (a.K, a.M, a.e) == (b.K, b.M, b.e)
        assert (direct[0] == mirrored[1]) == v_direct


@pytest.mark.slow
def test_polytope_status_with_highs_matches_the_exact_simplex(monkeypatch) -> None:
    """On a larger polytope HiGHS proposes crossing points (checked exactly); the kinds equal the simplex's."""
    import numpy as np

    import relusym._bounded.domain as dm

    rng = random.Random(8)
    m = 3
    # 30 random tangent half-spaces of the ball of radius 2: a bounded polytope around the origin
    G, h = [], []
    for _ in range(30):
        d = [F(rng.randint(-9, 9)) for _ in range(m)]
        if not any(d):
            continue
        G.append(d)
        h.append(2 * sum(abs(x) for x in d))
    P = Polytope(G, h)
    A = np.array([[F(rng.randint(-4, 4)) for _ in range(m)] for _ in range(40)], dtype=object)
    b = np.array([F(rng.randint(-150, 150), 2) for _ in range(40)], dtype=object)
    fast = P.status(A, b)
    monkeypatch.setattr(dm, "_EXACT_LP_SIZE", 10**9)
    slow = P.status(A, b)
    assert fast.tolist() == slow.tolist()
    assert {0, 1, 2} <= set(slow.tolist())
    # and the kinds are right: a crossing row takes both signs at vertices of P, the others one sign
    verts = vertices([], [list(r) for r in G], list(h))
    for i in range(40):
        vals = [sum((A[i][j] * v[j] for j in range(m)), b[i]) for v in verts]
        kind = 2 if min(vals) < 0 < max(vals) else (1 if min(vals) >= 0 else 0)
        assert kind == slow[i]


def test_polytope_random_interior_points_are_interior() -> None:
    # one random fraction per point keeps it on the segment from the interior point to the boundary (one fraction
    # per coordinate left the polytope about 2% of the time, and the points serve as witnesses)
    import random

    from relusym import Polytope

    A, b = [[1, 1], [-1, 0], [0, -1], [3, -1]], [1, 0, 0, 2]
    P = Polytope(A, b)
    rng = random.Random(0)
    for _ in range(3000):
        x = P.random_interior(rng)
        assert all(sum(a * xi for a, xi in zip(row, x, strict=True)) < bi for row, bi in zip(A, b, strict=True))
