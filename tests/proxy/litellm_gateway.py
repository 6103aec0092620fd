"""A real LiteLLM proxy on 127.0.0.1, in front of the fake provider, for the tests of the
LiteLLM plug-in.

LiteLLM is heavy and pins older rich and websockets, so it lives in its own environment: ``make
.venv-litellm/.installed`` (what ``.ci/run`` does), then ``TOKENLEAN_LITELLM=.venv-litellm/bin/
litellm``; a ``litellm`` on the test environment's own path is used too.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest

from tokenlean.testing.upstream import FakeUpstream, Recorded

from .proxy_support import free_port

LITELLM = os.environ.get("TOKENLEAN_LITELLM") or shutil.which(
    "litellm", path=str(Path(sys.executable).parent)
)
#: Marks a test module that needs the LiteLLM proxy.
NEEDS_LITELLM = pytest.mark.skipif(
    LITELLM is None or not Path(LITELLM).exists(),
    reason="the LiteLLM proxy is not installed (make .venv-litellm/.installed, then "
    "TOKENLEAN_LITELLM=.venv-litellm/bin/litellm)",
)
STARTUP = 180.0  # LiteLLM imports a lot: tens of seconds on a busy two-core machine


@dataclass
class Gateway:
    """A running LiteLLM proxy, the fake provider behind it and where its originals go."""

    url: str
    key: str
    upstream: FakeUpstream
    cache: Path
    log: Path

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=self.key, max_retries=0)

    def chats(self) -> list[Recorded]:
        return [r for r in self.upstream.requests if r.path == "/v1/chat/completions"]


def _config(upstream: FakeUpstream, key: str, callback: str, models: Iterable[str]) -> str:
    deployments = "".join(
        f"  - model_name: {model}\n"
        "    litellm_params:\n"
        f"      model: openai/{model}\n"
        f"      api_base: {upstream.url}/v1\n"
        "      api_key: sk-upstream\n"
        for model in models
    )
    return (
        f"model_list:\n{deployments}"
        f"litellm_settings:\n  callbacks: {callback}\n"
        f"general_settings:\n  master_key: {key}\n"
    )


def start_gateway(
    folder: Path,
    upstream: FakeUpstream,
    callback: str,
    *,
    files: Mapping[str, str] = {},
    models: Iterable[str] = ("gpt-test",),
) -> tuple[subprocess.Popen[bytes], Gateway]:
    """A LiteLLM proxy serving ``models`` (each an OpenAI model of the fake provider) with
    ``callback``; ``files`` are written beside its config (LiteLLM imports a callback module
    named in the config from there)."""
    folder.mkdir()
    key = "sk-" + secrets.token_urlsafe(32)
    config = folder / "config.yaml"
    config.write_text(_config(upstream, key, callback, models))
    for name, text in files.items():
        (folder / name).write_text(text)
    port = free_port()
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    command = [str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    log = folder / "litellm.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    return process, Gateway(f"http://127.0.0.1:{port}", key, upstream, folder / "cache", log)


def wait_until_up(process: subprocess.Popen[bytes], gateway: Gateway) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(gateway.url + "/health/liveliness", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    text = gateway.log.read_text(errors="replace")[-3000:]
    raise AssertionError(f"LiteLLM did not start:\n{text}")
