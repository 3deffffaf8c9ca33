"""One exact analysis per network, computed once (docs/architecture.md): the public entry points compute the
hyperplane classes, the kink data and the integer mantissas of each network they meet at most once, and exactly
once for the network they are given; and the parts of the analysis agree with independent exact computations."""

from __future__ import annotations

import importlib
import pkgutil
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction as F
from typing import Any

import numpy as np
import pytest

import relusym
import relusym._core.normal_form as nf_module
import relusym._exact.mantissas as numbers_module
from relusym import Network, equivalent, fiber, flip, minimal_width, normal_form, prune
from relusym._core.analysis import Analysis, KinkData
from relusym._core.classes import hyperplane_classes
from relusym._fibre.flips import flip_sets
from relusym.io import load

from strategies import float32_network, repeated_hyperplane_network

EXAMPLES = [f"E{i}" for i in range(1, 17)]


def _relusym_modules() -> list[Any]:
    mods = []
    for info in pkgutil.walk_packages(relusym.__path__, "relusym."):
        if info.name.split(".")[-1] in ("__main__",):
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError:  # pragma: no cover - an optional format module
            continue
    return mods


class Calls:
    """Who computed what: hyperplane classes and kink data per network, integer mantissas per array."""

    def __init__(self) -> None:
        self.classes: Counter[int] = Counter()
        self.kinks: Counter[int] = Counter()
        self.integers: list[np.ndarray] = []
        self.parts: Counter[tuple[str, int]] = Counter()  # (part of an Analysis, network)
        self.keep: list[Any] = []  # keeps the networks alive, so that their ids stay unique

    def integer_calls(self, arr: np.ndarray) -> int:
        return sum(1 for x in self.integers if np.may_share_memory(x, arr))


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    calls = Calls()
    hc_orig, im_orig, of_orig = hyperplane_classes, numbers_module.integer_matrix, KinkData.of.__func__

    def hc(net: Network, **kw: Any) -> Any:
        calls.classes[id(net)] += 1
        calls.keep.append(net)
        return hc_orig(net, **kw)

    def im(arr: np.ndarray) -> Any:
        calls.integers.append(arr)
        return im_orig(arr)

    def of(cls: type[KinkData], x: Any) -> KinkData:
        net = x if isinstance(x, Network) else x.classes.net
        calls.kinks[id(net)] += 1
        calls.keep.append(net)
        return of_orig(cls, x)

    for mod in _relusym_modules():
        if getattr(mod, "hyperplane_classes", None) is hc_orig:
            monkeypatch.setattr(mod, "hyperplane_classes", hc)
        if getattr(mod, "integer_matrix", None) is im_orig:
            monkeypatch.setattr(mod, "integer_matrix", im)
    monkeypatch.setattr(KinkData, "of", classmethod(of))
    for part in PARTS:
        prop = Analysis.__dict__[part]
        monkeypatch.setattr(prop, "func", _counted(prop.func, part, calls))
    yield calls


PARTS = (
    "classes",
    "normal_form",
    "kinks",
    "orientations",
    "nf_index",
    "mixed",
    "fractions",
    "V_integers",
    "A_integers",
)


def _counted(func: Callable[[Analysis], Any], part: str, calls: Calls) -> Callable[[Analysis], Any]:
    def wrapper(an: Analysis) -> Any:
        calls.parts[(part, id(an.net))] += 1
        calls.keep.append(an.net)
        return func(an)

    return wrapper


def _float32_not_class_a() -> Network:
    """A float32 network outside class A: a duplicate on an oriented hyperplane, an opposite pair, a null
    neuron (v = 0, a ≠ 0) and a constant one."""
    rng = np.random.default_rng(5)
    f32 = np.float32
    V = rng.standard_normal((1, 7)).astype(f32)
    A = rng.standard_normal((7, 2)).astype(f32)
    b = rng.standard_normal(7).astype(f32)
    A[1], b[1] = 2 * A[0], 2 * b[0]  # same oriented hyperplane as neuron 0
    A[2], b[2] = -A[3], -b[3]  # opposite orientations on one hyperplane
    V[0, 4] = 0  # v = 0 with a ≠ 0
    A[5], b[5] = 0, 1.5  # a constant neuron
    return Network(V, A, b, np.array([0.25], dtype=f32))


def _cases(spec: dict[str, Any]) -> list[tuple[str, Network]]:
    out = [(name, load(spec["networks"][name]["network"])) for name in EXAMPLES]
    out.append(("float32 3-8-2", float32_network(np.random.default_rng(0), 3, 8, 2, fan_in=False)))
    out.append(("float32 outside class A", _float32_not_class_a()))
    return out


ENTRY_POINTS: dict[str, tuple[Callable[[Network], Any], bool]] = {
    # name: (call, whether it needs the hyperplane classes of its input)
    "fiber": (lambda x: fiber(x, progress=False), True),
    "prune": (lambda x: prune(x, progress=False), True),
    "prune canonical": (lambda x: prune(x, canonical=True, progress=False), True),
    "minimal_width": (lambda x: minimal_width(x, progress=False), True),
    "normal_form": (lambda x: normal_form(x), True),
    "flip_sets": (lambda x: flip_sets(x), False),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_each_entry_point_analyses_each_network_once(entry: str, spec: dict[str, Any], monkeypatch) -> None:
    call, needs_classes = ENTRY_POINTS[entry]
    for name, net in _cases(spec):
        with counting(monkeypatch) as calls:
            call(net)
        assert calls.classes[id(net)] == (1 if needs_classes else 0), (entry, name, calls.classes[id(net)])
        assert max(calls.classes.values(), default=0) <= 1, (entry, name, "a network's classes computed twice")
        assert max(calls.kinks.values(), default=0) <= 1, (entry, name, "a network's kink data computed twice")
        assert calls.integer_calls(net.V) <= 1 and calls.integer_calls(net.A) <= 1, (entry, name)
        assert max(calls.parts.values(), default=0) <= 1, (entry, name, calls.parts.most_common(1))
        monkeypatch.undo()


def test_fiber_of_e9_computes_its_analysis_once(spec: dict[str, Any], monkeypatch) -> None:
    """The worked example of the issue: E9 (outside class A, with strata and witnesses)."""
    e9 = load(spec["networks"]["E9"]["network"])
    with counting(monkeypatch) as calls:
        fb = fiber(e9, progress=False)
        for seed in range(5):  # sampling reuses θ's analysis
            fb.sample(seed)
    assert calls.classes[id(e9)] == 1
    assert calls.kinks[id(e9)] == 1
    assert calls.integer_calls(e9.V) == calls.integer_calls(e9.A) == 1  # the flip-set check, once each
    assert max(calls.parts.values()) == 1  # every part of every analysis computed once
    assert {part for part, net in calls.parts if net == id(e9)} >= {"classes", "kinks", "orientations", "nf_index"}
    assert len(fb.strata) > 1 and all(s.witness is not None for s in fb.strata)
    # every witness point is a network of its own, analysed once
    for s in fb.strata:
        assert calls.classes[id(s.witness)] <= 1


def test_equivalent_analyses_each_side_once(spec: dict[str, Any], monkeypatch) -> None:
    for name, net in _cases(spec):
        others = [flip(net, [0]) if net.n else net, net.to_fractions()]
        for other in others:
            with counting(monkeypatch) as calls:
                equivalent(net, other)
            assert calls.classes[id(net)] <= 1 and calls.classes[id(other)] <= 1, name
            monkeypatch.undo()


# ----------------------------------------------------------------------------------------------------------
# the parts of the analysis, against independent exact computations


def _rows_q(net: Network) -> tuple[list[list[F]], list[list[F]], list[F]]:
    V = [[F(x) for x in row] for row in net.to_fractions().V.tolist()]
    A = [[F(x) for x in row] for row in net.to_fractions().A.tolist()]
    b = [F(x) for x in net.to_fractions().b.tolist()]
    return V, A, b


def _u(a: list[F], b: F) -> tuple[F, ...]:
    lam = next(x for x in a if x)
    return tuple(x / lam for x in [*a, b])


def test_orientations_nf_index_and_row_label_agree_with_exact_brute_force() -> None:
    r = random.Random(11)
    for _ in range(300):
        net = repeated_hyperplane_network(r)
        an = Analysis(net)
        hc = an.classes
        V, A, b = _rows_q(net)
        n, k = net.n, net.k
        # row_label: the same label iff a_i, a_j ≠ 0 and (a_i, b_i) ∥ (a_j, b_j), whatever v is
        for i in range(n):
            assert (hc.row_label[i] == -1) == (not any(A[i]))
            for j in range(n):
                if any(A[i]) and any(A[j]):
                    assert (hc.row_label[i] == hc.row_label[j]) == (_u(A[i], b[i]) == _u(A[j], b[j]))
        # label: the classes of the neurons with a ≠ 0 and v ≠ 0, by exact û; orientations: their λ signs
        live = [i for i in range(n) if any(A[i]) and any(V[r_][i] for r_ in range(k))]
        assert all((hc.label[i] >= 0) == (i in live) for i in range(n))
        assert all((hc.label[i] == hc.label[j]) == (_u(A[i], b[i]) == _u(A[j], b[j])) for i in live for j in live)
        n_pos, n_neg = an.orientations
        for j in range(hc.N_all):
            lam = [next(x for x in A[i] if x) for i in live if hc.label[i] == j]
            assert int(n_pos[j]) == sum(1 for x in lam if x > 0)
            assert int(n_neg[j]) == sum(1 for x in lam if x < 0)
        assert an.mixed == any(int(p) and int(q) for p, q in zip(n_pos, n_neg, strict=True))
        # nf_index: the kink classes in the exact lexicographic order of û, which is the order of NF(θ).K
        kinks = [j for j in range(hc.N_all) if hc.kink_mask[j]]
        exact = sorted(kinks, key=hc.u_exact)
        assert an.nf_index == {j: t for t, j in enumerate(exact)}
        assert [u for u, _ in an.normal_form.K] == [hc.u_exact(j) for j in exact]
        assert an.kinks == KinkData.of(net)
        # the integer mantissas: V and A up to one positive scale each
        for ints, q in ((an.V_integers, V), (an.A_integers, A)):
            flat_i = [int(x) for x in np.asarray(ints).ravel().tolist()]
            flat_q = [x for row in q for x in row]
            assert len(flat_i) == len(flat_q)
            if any(flat_q):
                t = next(s_ for s_, x in enumerate(flat_q) if x)
                scale = flat_q[t] / flat_i[t]
                assert scale > 0 and all(x * scale == y for x, y in zip(flat_i, flat_q, strict=True))
            else:
                assert not any(flat_i)


def test_analysis_parts_are_computed_once_and_kept() -> None:
    net = Network([[1, 1, 1]], [[1], [-1], [1]], [0, 0, -1])  # E9
    an = Analysis(net)
    assert an.classes is an.classes and an.normal_form is an.normal_form and an.kinks is an.kinks
    assert an.normal_form.classes is an.classes
    assert an.orientations is an.orientations and an.nf_index is an.nf_index
    assert an.V_integers is an.V_integers and an.fractions is an.fractions
    fb = fiber(net, progress=False)
    assert fb._of_net.net is net and fb._of_net.classes.net is net


# ----------------------------------------------------------------------------------------------------------
# the float path when only c is exact (what flip returns for float networks)


def test_exact_offset_keeps_the_float_path_and_stays_exact() -> None:
    rng = np.random.default_rng(3)
    f32 = np.float32
    for trial in range(20):
        m, n, k = int(rng.integers(1, 4)), int(rng.integers(3, 8)), int(rng.integers(1, 3))
        V = rng.standard_normal((k, n)).astype(f32)
        A = rng.standard_normal((n, m)).astype(f32)
        b = rng.standard_normal(n).astype(f32)
        V[:, 1] = -V[:, 0]
        A[1] = A[0]  # flipping {0, 1} preserves the function
        if trial % 3 == 0:
            A[2], b[2] = 0, abs(b[2]) + 1  # a constant neuron: its b v joins the constant term
        c = [F(1, 3) + r_ for r_ in range(k)]  # no float holds 1/3: c is kept exact
        net = Network(V, A, b, c, m=m)
        assert net.c.dtype == object and net.A.dtype == np.float32
        hc = hyperplane_classes(net)
        assert hc.A.dtype != object and hc.b.dtype != object  # the float path
        exact = net.to_fractions()
        he = hyperplane_classes(exact)
        assert he.A.dtype == object
        assert hc.const == he.const
        assert normal_form(net) == normal_form(exact)
        assert normal_form(net).K == normal_form(exact).K and normal_form(net).e == normal_form(exact).e
        assert normal_form(net).digest() == normal_form(exact).digest()
        # the offset of the flip itself: c + b_0 v_0 + b_1 v_1, exact
        fl = flip(Network(V, A, b, np.zeros(k, dtype=f32), m=m), [0, 1])
        assert fl.A.dtype == np.float32
        assert hyperplane_classes(fl).A.dtype != object
        assert normal_form(fl) == normal_form(fl.to_fractions())
        v = equivalent(net, flip(net, [0, 1]))
        assert v and v.flip_set == (0, 1)
        # a changed offset is seen: e differs by exactly the change
        other = Network(V, A, b, [x + F(1, 7) for x in c], m=m)
        assert normal_form(other) != normal_form(net)
        assert [y - x for x, y in zip(normal_form(net).e, normal_form(other).e, strict=True)] == [F(1, 7)] * k


def test_kink_data_has_one_home() -> None:
    """One class KinkData in the whole source tree (wherever it lives), and the normal form does not carry it."""
    import ast
    from pathlib import Path

    import relusym

    homes = [
        str(p.relative_to(Path(relusym.__file__).parent))
        for p in Path(relusym.__file__).parent.rglob("*.py")
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == "KinkData"
    ]
    assert len(homes) == 1, homes
    assert KinkData.__module__ == "relusym." + homes[0][: -len(".py")].replace("/", ".")  # the one imported
    assert not hasattr(nf_module, "KinkData")
