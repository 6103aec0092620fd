"""Every ```python block of README.md and docs/*.md runs as written, offline; every `tokenlean`
command line in a shell block parses; every relative link resolves.

The conventions the pages follow (so that a reader can copy any one block and run it):

- a ```python block is self-contained: its imports, its model, its tools; each runs in a fresh
  namespace. Where an example needs a model it uses a scripted one (``tokenlean.testing``,
  ``tokenlean.testing.agentscope``, pydantic-ai's ``FunctionModel``) or a provider SDK client;
- a block runs in a temporary folder, with ``XDG_CACHE_HOME`` there (the originals folder) and
  the provider SDKs pointed at a fake provider on 127.0.0.1 (``ANTHROPIC_BASE_URL``,
  ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``, each with a dummy key): the environment a
  user's shell gives the same code, with no network. Any connection beyond loopback fails;
- what cannot run offline (an API key, a real CLI, a config file) is a ```sh, ```text, ```toml
  or ```yaml block, not ```python;
- a block whose optional package is not installed is skipped, the reason naming the package.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.data import ROOT
from tokenlean.testing.upstream import FakeUpstream

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_SHELL = {"sh", "bash", "shell", "console"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(*langs: str) -> list[Block]:
    found: list[Block] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if match[1] in langs:
                line = text.count("\n", 0, match.start()) + 1
                found.append(Block(page, line, match[1], match[2]))
    return found


PYTHON = _blocks("python")
SHELL = _blocks(*_SHELL)


# --- the environment a block runs in ----------------------------------------------------------

_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", ""}


def _host(address: Any) -> str | None:
    return address[0] if isinstance(address, tuple) and address else None


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No name lookups and no connections beyond loopback."""
    lookup = socket.getaddrinfo
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host or "")
        if name not in _LOOPBACK:
            raise OSError(f"docs examples run offline: no lookup of {name!r}")
        return lookup(host, *args, **kwargs)

    def guard(address: Any) -> None:
        host = _host(address)
        if host is not None and host not in _LOOPBACK:
            raise OSError(f"docs examples run offline: no connection to {host!r}")

    def guarded_connect(self: socket.socket, address: Any) -> None:
        guard(address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        guard(address)
        return connect_ex(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeUpstream]:
    """A fake provider on 127.0.0.1 answering every API with a canned reply."""
    with FakeUpstream() as upstream:
        yield upstream


@pytest.fixture
def environment(
    provider: FakeUpstream, offline: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.url)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{provider.url}/v1")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", provider.url)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(key, "test-key")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else it fetches prices at import
    for key in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "TOKENLEAN_PROXY_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    yield
    if "tokenlean.litellm" in sys.modules:  # a block that enabled it leaves LiteLLM as it was
        sys.modules["tokenlean.litellm"].disable()


# --- skipping what an install lacks -----------------------------------------------------------


def _imported(code: str) -> list[str]:
    """The modules a block imports, in order (absolute imports only)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # a parent package is missing
        return True


def _skip_if_lacking(code: str) -> None:
    for module in _imported(code):
        if not module.startswith("tokenlean") and _absent(module):
            pytest.skip(f"needs {module.split('.')[0]!r} (not installed)")


def _missing_package(exc: BaseException) -> str | None:
    """The optional package whose absence caused ``exc`` (a tokenlean module that imports it
    re-raises with its install line), or None when it is a real error."""
    seen: BaseException | None = exc
    while seen is not None:
        name = getattr(seen, "name", None) if isinstance(seen, ImportError) else None
        if name and not name.startswith("tokenlean"):
            return str(name).split(".")[0]
        seen = seen.__cause__ or seen.__context__
    return None


# --- the tests --------------------------------------------------------------------------------


def test_the_pages_have_examples() -> None:
    assert PYTHON, "no ```python block found"
    assert {b.page.name for b in PYTHON} >= {"README.md"}


@pytest.mark.usefixtures("environment")
@pytest.mark.parametrize("block", PYTHON, ids=[b.name for b in PYTHON])
def test_python_block_runs(block: Block) -> None:
    _skip_if_lacking(block.code)
    padded = "\n" * block.line + block.code  # tracebacks give the page's own line numbers
    try:
        exec(compile(padded, str(block.page), "exec"), {"__name__": "__docs__"})
    except ImportError as exc:
        package = _missing_package(exc)
        if package is None:
            raise
        pytest.skip(f"needs {package!r} (not installed)")


def _commands(code: str) -> Iterator[str]:
    """Each `tokenlean ...` command of a shell block, without comments, pipes or `&&` chains."""
    joined = code.replace("\\\n", " ")
    for line in joined.splitlines():
        for part in re.split(r"&&|\|\||;|\|", line.split(" #")[0]):
            words = part.strip()
            if words.startswith("tokenlean "):
                yield words


def _shell_commands() -> list[tuple[str, str]]:
    return [(b.name, c) for b in SHELL for c in _commands(b.code)]


@pytest.mark.parametrize(("where", "command"), _shell_commands())
def test_shell_command_parses(where: str, command: str) -> None:
    """Every `tokenlean` command a page shows is one the CLI takes (subcommand and flags)."""
    from tokenlean.cli import build_parser

    args = shlex.split(command.split(" > ")[0])[1:]  # without a redirection
    try:
        build_parser().parse_args(args)
    except SystemExit as exc:
        assert exc.code == 0, f"{where}: `{command}` is not a valid tokenlean command"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_relative_links_resolve() -> None:
    broken = []
    for page in PAGES:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
