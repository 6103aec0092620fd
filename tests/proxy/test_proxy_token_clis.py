"""The proxy's token as the README tells Claude Code and Codex to send it: a header each CLI adds
from its own configuration (``tokenlean wrap`` uses the base URL prefix, tested with the wrap
tests of each CLI).

Skipped unless the CLIs are installed (``TOKENLEAN_CLAUDE`` / ``TOKENLEAN_CODEX`` or on PATH, as
in ``test_proxy_claude_code.py`` and ``test_proxy_codex.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tokenlean.proxy import BackgroundProxy, ProxySettings, create_app
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import TOKEN


def _cli(variable: str, name: str) -> str | None:
    found = os.environ.get(variable) or shutil.which(name)
    return found if found and Path(found).exists() else None


CLAUDE = _cli("TOKENLEAN_CLAUDE", "claude")
CODEX = _cli("TOKENLEAN_CODEX", "codex")
CODEX_CONFIG = """model_provider = "tokenlean"
[model_providers.tokenlean]
name = "tokenlean"
base_url = "{url}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
env_http_headers = {{ "x-tokenlean-token" = "TOKENLEAN_PROXY_TOKEN" }}
"""


@pytest.fixture
def tokened() -> Iterator[tuple[FakeUpstream, BackgroundProxy]]:
    with FakeUpstream() as upstream:
        app = create_app(ProxySettings(upstream=upstream.url, token=TOKEN), rewriter=None)
        with BackgroundProxy(app) as proxy:
            yield upstream, proxy


def _clean_env(home: Path, *prefixes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return {**env, "HOME": str(home)}


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code not installed")
def test_claude_code_sends_the_token_as_a_custom_header(
    tokened: tuple[FakeUpstream, BackgroundProxy], tmp_path: Path
):
    upstream, proxy = tokened
    env = _clean_env(tmp_path, "ANTHROPIC_", "CLAUDE")
    env.update(
        ANTHROPIC_BASE_URL=proxy.url,
        ANTHROPIC_CUSTOM_HEADERS=f"x-tokenlean-token: {TOKEN}",
        ANTHROPIC_API_KEY="sk-ant-dummy",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    assert CLAUDE is not None
    run = _run([CLAUDE, "-p", "hello"], tmp_path, env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Hello from the fake upstream" in run.stdout
    posts = [r for r in upstream.requests if r.method == "POST"]
    assert posts and all(r.path == "/v1/messages" for r in posts)
    assert all(r.header("x-tokenlean-token") is None for r in upstream.requests)


@pytest.mark.skipif(CODEX is None, reason="Codex not installed")
def test_codex_sends_the_token_from_its_provider_config(
    tokened: tuple[FakeUpstream, BackgroundProxy], tmp_path: Path
):
    upstream, proxy = tokened
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=proxy.url))
    env = _clean_env(tmp_path, "OPENAI_", "CODEX_")
    env.update(
        CODEX_HOME=str(tmp_path / ".codex"), OPENAI_API_KEY="sk-dummy", TOKENLEAN_PROXY_TOKEN=TOKEN
    )
    assert CODEX is not None
    run = _run([CODEX, "exec", "--skip-git-repo-check", "hello"], tmp_path, env)
    assert run.returncode == 0, run.stderr[-2000:]
    posts = [r for r in upstream.requests if r.method == "POST"]
    assert posts and all(r.path == "/v1/responses" for r in posts)  # past the token check
    assert all(r.header("x-tokenlean-token") is None for r in upstream.requests)
