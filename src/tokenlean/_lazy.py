"""Names a package imports only when first asked for (so importing it stays light: an extra's
framework is loaded by the first name that needs it)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, tuple[str, str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name of ``where`` is imported
    from its module (``name -> (submodule, attribute)``) on first use, then kept."""

    def get(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = where[name]
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        vars(sys.modules[package])[name] = value  # later lookups skip this function
        return value

    def names() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return get, names
