"""Optional dependencies: a wrapper imports its SDK through :func:`sdk`, which names the extra
that installs it when it is missing (``tokenlean.anthropic.wrap`` is no use without it)."""

from __future__ import annotations

import sys
from types import ModuleType

__all__ = ["sdk"]


def sdk(module: str, *, extra: str, name: str) -> ModuleType:
    """``module`` imported (through ``__import__``, as an ``import`` statement does), or an
    ``ImportError`` saying ``tokenlean.EXTRA.wrap`` needs the ``name`` SDK and how to install it."""
    try:
        __import__(module)
    except ImportError:
        raise ImportError(
            f"tokenlean.{extra}.wrap needs the {name} SDK: pip install 'tokenlean[{extra}]'"
        ) from None
    return sys.modules[module]
