"""Which builds of an agent CLI the end-to-end tests run: the pinned one and the current release.

``.ci/run`` installs both from npm into separate prefixes and names them in the environment:
``TOKENLEAN_CLAUDE`` (the pinned build; ``claude`` on ``PATH`` when unset) and
``TOKENLEAN_CLAUDE_CURRENT`` (the current release), likewise ``TOKENLEAN_CODEX`` and
``TOKENLEAN_CODEX_CURRENT``. A test parametrised over :func:`cli_params` runs once per build
present and skips the others, naming what is missing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

__all__ = ["cli_params", "pinned"]


def _param(label: str, path: str | None, missing: str) -> Any:
    if path is None or not Path(path).exists():
        return pytest.param(None, id=label, marks=pytest.mark.skip(reason=missing))
    return pytest.param(path, id=label)


def pinned(command: str, variable: str) -> str | None:
    """The pinned build: ``$variable``, else ``command`` on PATH (None when neither is set)."""
    return os.environ.get(variable) or shutil.which(command)


def cli_params(command: str, variable: str, package: str) -> list[Any]:
    """The pinned build (``$variable``, else ``command`` on PATH; ``.ci/run`` pins the version)
    and the current release (``${variable}_CURRENT``), as ``pytest.param`` with ids ``pinned``
    and ``current``."""
    build = pinned(command, variable)
    current = os.environ.get(f"{variable}_CURRENT")
    how = "npm install --prefix DIR {}@{}, then {}=DIR/node_modules/.bin/" + command
    missing = f"{package} not installed ({how.format(package, 'PINNED', variable)})"
    params = [_param("pinned", build, missing)]
    if current and build and Path(current).resolve() == Path(build).resolve():
        same = f"{variable}_CURRENT is the pinned build: the current release is the pinned one"
        return [*params, _param("current", None, same)]
    install = how.format(package, "latest", f"{variable}_CURRENT")
    missing = f"current {package} not installed ({install})"
    return [*params, _param("current", current, missing)]
