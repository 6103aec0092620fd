"""The command on an install without an extra: it names the extra to install, never a traceback."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap

import pytest

import tokenlean
from tokenlean.cli import EXTRA_OF_MODULE, main

# Runs the command in a fresh interpreter where the named top-level packages cannot be imported,
# as on an install without the extra that provides them.
_BLOCKED_RUN = textwrap.dedent(
    """
    import sys
    from importlib.abc import MetaPathFinder

    BLOCKED = set(sys.argv[1].split(","))

    class Blocker(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    from tokenlean.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


def run_without(blocked: list[str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN, ",".join(blocked), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_replay_without_langchain_names_the_replay_extra() -> None:
    done = run_without(["langchain", "langchain_core", "langgraph"], "replay", "--list")
    assert done.returncode == 2, done.stderr
    assert "pip install 'tokenlean[replay]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_proxy_without_starlette_names_the_proxy_extra() -> None:
    done = run_without(["starlette", "uvicorn"], "proxy", "--port", "0")
    assert done.returncode == 2, done.stderr
    assert "pip install 'tokenlean[proxy]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_shorten_needs_no_extra() -> None:
    blocked = sorted(EXTRA_OF_MODULE)
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN, ",".join(blocked), "shorten", "--stats"],
        input="line\n" * 5,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "line\n" * 5


def test_a_missing_module_no_extra_provides_is_a_bug_and_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tokenlean.cli._shorten as shorten_cli

    def broken(_: object) -> int:
        raise ModuleNotFoundError("No module named 'not_a_dependency'", name="not_a_dependency")

    monkeypatch.setattr(shorten_cli, "run", broken)
    with pytest.raises(ModuleNotFoundError, match="not_a_dependency"):
        main(["shorten", "-"])


def test_version_has_one_source(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"tokenlean {tokenlean.__version__}"
    # The installed metadata is read from the same place (pyproject's dynamic version).
    assert importlib.metadata.version("tokenlean") == tokenlean.__version__
