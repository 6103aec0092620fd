"""The shape of the source the house style promises: no package reaches into another package's
private modules, and no function runs over 60 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tokenlean"
MAX_LINES = 60


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(SRC.rglob("*.py"))]


def _package(path: Path) -> str | None:
    """The top-level package of ``tokenlean`` a module belongs to (None: a core module)."""
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else None


def _private_owner(module: str) -> str | None:
    """The package whose private module ``module`` names (``tokenlean.<pkg>._x``), if any."""
    parts = module.split(".")
    for i, part in enumerate(parts[2:], start=2):
        if part.startswith("_") and not part.startswith("__"):
            return parts[1] if i > 1 else None
    return None


def test_no_package_imports_another_packages_private_module() -> None:
    reaching = [
        f"{path.relative_to(SRC)} imports {node.module}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("tokenlean.")
        and (owner := _private_owner(node.module or "")) is not None
        and owner != _package(path)
    ]
    assert reaching == []


def test_no_function_runs_over_60_lines() -> None:
    long = [
        f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_LINES
    ]
    assert long == []
