"""The layer order of docs/architecture.md, enforced: every import goes down (or sideways within a layer), the
import graph has no cycle, every module is placed in a layer, ``import relusym`` loads no heavy dependency, and
``relusym.__all__`` is exactly the documented API table."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import relusym

ROOT = Path(relusym.__file__).parent
DOCS = Path(__file__).resolve().parents[1] / "docs"

# bottom to top: a module's layer is its folder (the top-level modules are named one by one); a module may import
# modules of its own layer or of layers below, never above.  docs/architecture.md draws the same picture.
LAYERS: list[tuple[str, set[str]]] = [
    ("foundations", {"errors", "_base"}),
    ("exact arithmetic", {"_exact"}),
    ("one-hidden-layer core", {"_core"}),
    ("decisions beyond the core", {"_tolerance", "_bounded"}),
    ("fibre", {"_fibre"}),
    ("deep networks", {"_deep"}),
    ("formats", {"io"}),
    ("applications", {"_identify", "_zoo", "_plots", "census", "plot", "report", "zoo"}),
    ("front ends", {"", "_api", "_cli", "_cli_deep", "cli", "__main__"}),
]

HEAVY = (
    "torch",
    "onnx",
    "onnxruntime",
    "keras",
    "jax",
    "flax",
    "matplotlib",
    "dask",
    "pyarrow",
    "tqdm",
    "h5py",
    "sklearn",
    "safetensors",
    "numba",
    "llvmlite",
    "flint",  # required, but imported on first use (only the exact linear algebra needs it)
    "threadpoolctl",  # required, but imported on first use (the digest of a large network, the process pools)
)


def _modules() -> dict[str, Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Internal imports of each module, module level and inside functions alike."""
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        pkg = [x for x in pkg if x]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                    mod = ".".join(base + ([node.module] if node.module else []))
                elif node.module and (node.module == "relusym" or node.module.startswith("relusym.")):
                    mod = node.module[len("relusym") :].lstrip(".")
                else:
                    continue
                targets = [f"{mod}.{a.name}".lstrip(".") for a in node.names] + [mod]
            elif isinstance(node, ast.Import):
                targets = [a.name[len("relusym") :].lstrip(".") for a in node.names if a.name.startswith("relusym")]
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name:
                    out.add(t)
        edges[name] = out
    # keep the most specific target of each from-import: "from . import _linalg" names _linalg, not the package
    for name in edges:
        specific = {t for t in edges[name] if t}
        if specific and "" in edges[name] and name not in ("cli", "__main__"):
            edges[name] = specific
    return edges


def _layer_of() -> dict[str, int]:
    """Each module's layer, from its folder: ``_exact.numbers`` is in the layer of ``_exact``.  A ``__main__``
    is an entry point (``python -m relusym.census`` runs the command line's ``relusym census``), so it is a front
    end wherever it lives."""
    tops = {m: i for i, (_, ms) in enumerate(LAYERS) for m in ms}
    out = {}
    for mod in _modules():
        top = mod.split(".")[0]
        if mod.split(".")[-1] == "__main__":
            out[mod] = tops["__main__"]
        elif top in tops:
            out[mod] = tops[top]
    return out


def test_every_layer_folder_is_a_package_of_modules() -> None:
    """Top-level files are the public modules and the front door; everything internal lives in a layer folder."""
    private_files = sorted(
        p.name for p in ROOT.glob("_*.py") if p.name not in ("__init__.py", "__main__.py", "_api.py", "_cli_deep.py")
    )
    assert not private_files, f"internal modules outside a layer folder: {private_files}"
    named = {m for _, ms in LAYERS for m in ms}
    stale = sorted(m for m in named if m and not (ROOT / m).is_dir() and not (ROOT / f"{m}.py").exists())
    assert not stale, f"layers name folders or modules that do not exist: {stale}"


def test_every_module_is_placed_in_a_layer() -> None:
    placed = _layer_of()
    missing = sorted(set(_modules()) - set(placed))
    assert not missing, f"modules not placed in a layer of docs/architecture.md: {missing}"


def test_imports_go_down_the_layers() -> None:
    placed = _layer_of()
    bad = []
    for mod, targets in _imports(_modules()).items():
        for t in targets:
            if placed.get(t, -1) > placed.get(mod, 99):
                bad.append(f"{mod or 'relusym'} ({LAYERS[placed[mod]][0]}) imports {t} ({LAYERS[placed[t]][0]})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_import_graph_has_no_cycle() -> None:
    edges = _imports(_modules())
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                cycle = stack[stack.index(v) :] + [v]
                raise AssertionError("import cycle: " + " -> ".join(x or "relusym" for x in cycle))
            if v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(edges):
        if u not in state:
            visit(u)


def test_import_relusym_loads_no_heavy_dependency() -> None:
    code = f"import sys, relusym; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [], f"import relusym loads {out}"


def test_all_matches_the_documented_api_table() -> None:
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)`", text, flags=re.M))
    assert documented == set(relusym.__all__), (
        f"in docs/api.md only: {sorted(documented - set(relusym.__all__))}; "
        f"in relusym.__all__ only: {sorted(set(relusym.__all__) - documented)}"
    )
    for name in relusym.__all__:
        assert getattr(relusym, name) is not None


def test_no_private_name_is_imported_across_modules() -> None:
    """A helper that another module needs has a public name inside its (internal) module."""
    bad = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("relusym")):
                bad += [
                    f"{name or 'relusym'}: from {'.' * node.level}{node.module or ''} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__") and not _is_module(node, a.name)
                ]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def _is_module(node: ast.ImportFrom, name: str) -> bool:
    """``from . import _linalg`` imports a module (allowed), not a private helper."""
    base = (node.module or "").replace("relusym", "").strip(".").replace(".", "/")
    return (ROOT / base / f"{name}.py").exists() or (ROOT / base / name / "__init__.py").exists()


def test_internal_modules_define_accurate_all() -> None:
    """Every module lists its public names in __all__, and each listed name exists."""
    for name in sorted(_modules()):
        if name in ("", "__main__", "cli"):
            continue
        mod = importlib.import_module(f"relusym.{name}")
        names = getattr(mod, "__all__", None)
        assert names is not None, f"relusym.{name} has no __all__"
        for n in names:
            assert hasattr(mod, n), f"relusym.{name}.__all__ lists {n!r}, which it does not define"


def test_dir_lists_every_public_name_and_the_package_is_typed() -> None:
    code = "import relusym; print(' '.join(n for n in relusym.__all__ if n not in dir(relusym)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [], f"dir(relusym) misses {out} before their first use"
    assert (ROOT / "py.typed").is_file(), "users' type checkers see relusym's types only with a py.typed marker"


# Modules over MAX_LINES lines: each is being split along its ideas by the session that owns it (issue 20), and its
# line goes when it is.  A new entry needs an argument here, not just a number.
MAX_LINES = 600
OVER_SIZE: dict[str, str] = {}


def test_no_module_over_the_size_limit() -> None:
    """One idea per file: no module over MAX_LINES lines, outside the argued list OVER_SIZE (which must not go
    stale: a listed module that is back under the limit is taken off)."""
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in ROOT.rglob("*.py")
    }
    over = sorted(f"{name} ({n} lines)" for name, n in sizes.items() if n > MAX_LINES and name not in OVER_SIZE)
    assert not over, f"modules over {MAX_LINES} lines (split them along their ideas): {over}"
    stale = sorted(name for name in OVER_SIZE if sizes.get(name, 0) <= MAX_LINES)
    assert not stale, f"OVER_SIZE lists modules that no longer exceed {MAX_LINES} lines: {stale}"


def _module_all(path: Path) -> list[str] | None:
    """The names a module's ``__all__`` lists, read from its source (None when it has none)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            return [str(x) for x in ast.literal_eval(node.value)]
    return None


def _resolve_from(name: str, path: Path, node: ast.ImportFrom) -> str | None:
    """The module (relative to relusym, "" for the package) that ``node`` in module ``name`` imports from."""
    if node.level:
        pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        pkg = [x for x in pkg if x]
        base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
        return ".".join(base + ([node.module] if node.module else []))
    if node.module and (node.module == "relusym" or node.module.startswith("relusym.")):
        return node.module[len("relusym") :].lstrip(".")
    return None


def _lying_imports(files: dict[str, Path]) -> list[str]:
    """Each ``from relusym.X import n`` (in ``files``) where n is not a submodule of X and X's __all__ omits n."""
    mods = _modules()
    bad = []
    for name, path in sorted(files.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve_from(name, path, node)
            if target is None or target not in mods:
                continue
            listed = _module_all(mods[target])
            for a in node.names:
                if f"{target}.{a.name}".lstrip(".") in mods or a.name == "*":
                    continue  # a submodule, not a name
                if listed is None or a.name not in listed:
                    bad.append(f"{name or 'relusym'} imports {a.name} from relusym.{target or ''}".rstrip("."))
    return bad


def test_all_is_the_truth() -> None:
    """A name that another module imports from a relusym module is listed in that module's __all__ (its public
    surface, which the private-name rule and the reference docs rely on).  The package itself counts its lazily
    exported names."""
    bad = _lying_imports(_modules())
    assert not bad, "names imported from a module whose __all__ omits them:\n" + "\n".join(bad)


def test_all_truth_check_can_fail(tmp_path: Path) -> None:
    """The check above sees an unlisted import (so its silence means something)."""
    mods = _modules()
    numbers = _module_all(mods["_exact.numbers"]) or []
    defined = {
        n.name
        for n in ast.parse(mods["_exact.numbers"].read_text(encoding="utf-8")).body
        if isinstance(n, ast.FunctionDef)
    }
    private = sorted(defined - set(numbers))
    assert private, "relusym._exact.numbers has no unlisted function to test with"
    probe = tmp_path / "probe.py"
    probe.write_text(f"from relusym._exact.numbers import {private[0]}, to_fraction\n", encoding="utf-8")
    assert _lying_imports({"_probe.probe": probe}) == [f"_probe.probe imports {private[0]} from relusym._exact.numbers"]


def test_every_error_has_the_one_root() -> None:
    """Every exception relusym raises on purpose is a RelusymError (catch one class to catch them all); the
    warnings are not errors and stay warnings."""
    import relusym.errors as errors

    assert relusym.RelusymError is errors.RelusymError
    assert "RelusymError" in errors.__all__ and "RelusymError" in dir(relusym)
    classes = [getattr(errors, n) for n in errors.__all__]
    assert all(isinstance(c, type) for c in classes)
    for cls in classes:
        if issubclass(cls, Warning):
            continue
        assert issubclass(cls, errors.RelusymError), f"{cls.__name__} is not a RelusymError"
        assert issubclass(cls, Exception)
    # the promises the existing classes made stay true
    assert issubclass(errors.InvalidNetworkError, ValueError)
    assert issubclass(errors.UnsupportedModelError, ValueError)
    assert issubclass(errors.BudgetExceededError, RuntimeError)
    assert issubclass(errors.OutputError, OSError)
    # every public exception class defined anywhere in relusym's sources descends from it (or is a warning);
    # private ones (``_Inexact``) are control flow that never leaves its module
    stray = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                mod = importlib.import_module(f"relusym.{name}".rstrip("."))
                cls = getattr(mod, node.name, None)
                if (
                    isinstance(cls, type)
                    and issubclass(cls, BaseException)
                    and not issubclass(cls, (errors.RelusymError, Warning))
                    and f"{name}.{node.name}" not in OUTSIDE_THE_ROOT
                ):
                    stray.append(f"relusym.{name}.{node.name}")
    assert not stray, f"exception classes outside the RelusymError root: {stray}"


# Exception classes outside the root, each argued: a user never sees these.
OUTSIDE_THE_ROOT = {
    "_deep.line.LineBudget": "control flow: raised and caught inside relusym (_deep.decide, _plots.deep)",
}
