"""``import relusym`` loads the value type and the errors only; every other public name arrives on first use,
the same object and wrapped as before (issue 23 item 5)."""

from __future__ import annotations

import subprocess
import sys

import relusym


def _run(code: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_import_loads_only_the_front_door() -> None:
    code = "import sys, relusym; print(' '.join(sorted(m for m in sys.modules if m.startswith('relusym'))))"
    loaded = set(_run(code))
    heavy = {"relusym._api", "relusym._bounded.domain", "relusym._core.normal_form", "relusym._fibre.fiber",
             "relusym._core.equivalence", "relusym._deep.mlp", "relusym._core.group"}  # fmt: skip
    assert "relusym._core.network" in loaded
    assert not loaded & heavy, sorted(loaded & heavy)


def test_every_public_name_resolves_on_first_use() -> None:
    code = (
        "import relusym, sys; bad = [n for n in relusym.__all__ if getattr(relusym, n) is None]; "
        "from relusym import Box, equivalent, MLP, fiber; print(len(bad), equivalent.__name__, Box.__name__)"
    )
    assert _run(code) == ["0", "equivalent", "Box"]


def test_lazy_names_are_the_modules_objects_and_take_anything() -> None:
    from relusym._bounded.domain import Box
    from relusym._core.normal_form import NormalForm

    assert relusym.Box is Box and relusym.NormalForm is NormalForm
    net = relusym.Network([[1, 2]], [[1], [-1]], [0, 1])
    assert callable(relusym.equivalent.__wrapped__)  # type: ignore[attr-defined]  (wrapped to take anything)
    v = relusym.equivalent(net, relusym.prune(net))
    assert bool(v)
