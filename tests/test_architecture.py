"""The package's layering, enforced: every import points down, modules stay small.

Layers (README "Layout"): kernels (0) -> conventions, protocol, _validation, _parallel (1) -> objectives,
metrics (2) -> per-booster adapters lightgbm, xgboost, catboost (3) -> gp, datasets, bench, explain (4).
``data`` holds files only (0). Within a layer, packages do not import each other (except in layer 4,
which composes everything), so each lower layer can be read without the ones beside it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stochrank"

LAYERS: dict[str, float] = {
    "data": 0,
    "kernels": 0,
    # layer 1, itself ordered: checks and the threading guard, then conventions, then the call protocol
    "_validation": 1.0,
    "_openmp": 0.9,
    "_parallel": 1.0,
    "conventions": 1.1,
    "protocol": 1.2,
    "objectives": 2,
    "metrics": 2,
    "lightgbm": 3,
    "xgboost": 3,
    "catboost": 3,
    "dask": 3,
    "gp": 4,
    "datasets": 4,
    "bench": 4,
    "explain": 4,
}
# Modules allowed past ~400 lines, and why.
LONG_MODULES: dict[str, str] = {}
MAX_LINES = 400


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _part(path: Path) -> str:
    """The top-level part of the package a file belongs to ('' for stochrank/__init__.py)."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py") if rel.parts[0] != "__init__.py" else ""


def _stochrank_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level part) of every import of another part of stochrank, at module level or inside
    functions (a lazy import is still a dependency)."""
    tree = ast.parse(path.read_text(), str(path))
    rel = path.relative_to(PACKAGE).with_suffix("")
    here = list(rel.parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                target = base + (node.module.split(".") if node.module else [])
                if not target:  # "from . import x" at the top level
                    target = [alias.name for alias in node.names][:1]
            elif node.module and node.module.split(".")[0] == "stochrank":
                target = node.module.split(".")[1:] or [alias.name for alias in node.names][:1]
            else:
                continue
            found.append((node.lineno, target[0]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "stochrank" and len(parts) > 1:
                    found.append((node.lineno, parts[1]))
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    source = _part(path)
    if source == "":  # stochrank/__init__.py: the public face re-exports from every layer
        return
    assert source in LAYERS, f"{source!r} has no layer: add it to LAYERS (and the README's layout)"
    for line, target in _stochrank_imports(path):
        if target == source:
            continue
        assert target in LAYERS, f"{path.name}:{line} imports unknown part {target!r}"
        assert LAYERS[target] < LAYERS[source] or (LAYERS[target] == LAYERS[source] == 4), (
            f"{path.relative_to(PACKAGE)}:{line} imports stochrank.{target} (layer {LAYERS[target]}) from "
            f"layer {LAYERS[source]}: imports must point down"
        )


def test_kernels_import_nothing_but_numpy_and_numba() -> None:
    for path in (PACKAGE / "kernels").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module.split(".")[0]]
            for name in names:
                assert name in {"numpy", "numba", "llvmlite", "__future__", "typing", "math"}, (
                    f"{path.name} imports {name}"
                )


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    name = str(path.relative_to(PACKAGE))
    lines = len(path.read_text().splitlines())
    if name in LONG_MODULES:
        return
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it, or argue for it in LONG_MODULES"
