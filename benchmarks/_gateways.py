"""The processes :mod:`benchmarks.proxy_load` compares, each on 127.0.0.1 in front of one fake
upstream: ``tokenlean proxy``, a LiteLLM proxy with tokenlean's callback, and a LiteLLM proxy
forwarding only (those two need the LiteLLM proxy's own environment, ``make
.venv-litellm/.installed``, or ``$TOKENLEAN_LITELLM`` naming its ``litellm`` command).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks.proxy_latency import HEADERS, UPSTREAM_SERVER, _free_port, _wait_until_up

ROOT = Path(__file__).resolve().parent.parent
LITELLM = Path(os.environ.get("TOKENLEAN_LITELLM") or ROOT / ".venv-litellm" / "bin" / "litellm")
STARTUP = 240.0  # LiteLLM imports a lot: a minute or more on a busy two-core machine


@dataclass
class Target:
    """Where requests go, with what headers, and the processes whose CPU they cost."""

    label: str
    url: str
    headers: dict[str, str] = field(default_factory=lambda: dict(HEADERS))
    pid: int | None = None  # the serving process (its threads and children are counted)
    missing: str | None = None  # why this target is not measured


def tree_cpu(pid: int | None) -> float:
    """User plus system CPU seconds of ``pid`` and its live descendants (Linux ``/proc``)."""
    if pid is None:
        return 0.0
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    tree, grew = {pid}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(times.get(p, 0.0) for p in tree)


@contextmanager
def _process(command: list[str], **kwargs: object) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(command, text=True, **kwargs)  # type: ignore[call-overload]  # kwargs pass through
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def _tokenlean(stack: ExitStack, upstream: str) -> Target:
    port = _free_port()
    token = secrets.token_urlsafe(32)  # so that GET /tokenlean/stats gives the whole account
    command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port)]
    # A folder of its own for the originals, as LiteLLM's gets (its XDG_CACHE_HOME): the user's
    # default folder would fill, and the first sweep of what earlier runs left would be timed.
    originals = stack.enter_context(tempfile.TemporaryDirectory(prefix="tokenlean-originals-"))
    command += ["--upstream", upstream, "--quiet", "--originals", originals]
    env = {**os.environ, "TOKENLEAN_PROXY_TOKEN": token}
    proxy = stack.enter_context(_process(command, stderr=subprocess.DEVNULL, env=env))
    url = f"http://127.0.0.1:{port}/t/{token}"
    _wait_until_up(url)
    return Target("tokenlean proxy", url, pid=proxy.pid)


def _config(upstream: str, key: str, callback: bool) -> str:
    callbacks = "litellm_settings:\n  callbacks: tokenlean.proxy.litellm.callback\n"
    return (
        "model_list:\n"
        "  - model_name: claude-bench\n"
        "    litellm_params:\n"
        "      model: anthropic/claude-bench\n"
        f"      api_base: {upstream}\n"
        "      api_key: sk-upstream\n"
        f"{callbacks if callback else ''}"
        f"general_settings:\n  master_key: {key}\n"
    )


def _litellm(stack: ExitStack, upstream: str, callback: bool) -> Target:
    label = "LiteLLM + tokenlean" if callback else "LiteLLM only"
    if not LITELLM.exists():
        why = f"no LiteLLM proxy at {LITELLM} (make .venv-litellm/.installed)"
        return Target(label, "", missing=why)
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    key = "sk-" + secrets.token_urlsafe(32)
    (folder / "config.yaml").write_text(_config(upstream, key, callback))
    port = _free_port()
    command = [str(LITELLM), "--config", str(folder / "config.yaml"), "--port", str(port)]
    command += ["--host", "127.0.0.1"]
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    log = (folder / "litellm.log").open("w")
    process = stack.enter_context(_process(command, env=env, stdout=log, stderr=log))
    url = f"http://127.0.0.1:{port}"
    if not _up(url, process):
        why = "LiteLLM did not start: " + (folder / "litellm.log").read_text()[-300:]
        return Target(label, "", missing=why)
    headers = {**HEADERS, "x-api-key": key, "authorization": f"Bearer {key}"}
    return Target(label, url, headers, pid=process.pid)


def _up(url: str, process: subprocess.Popen[str]) -> bool:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url + "/health/liveliness", timeout=5).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    return False


@contextmanager
def targets(litellm: bool = True) -> Iterator[list[Target]]:
    """Direct, then each gateway, all in front of one fake upstream."""
    with ExitStack() as stack:
        command = [sys.executable, "-c", UPSTREAM_SERVER]
        up = stack.enter_context(_process(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        assert up.stdout is not None
        upstream = up.stdout.readline().strip()
        found = [Target("direct", upstream), _tokenlean(stack, upstream)]
        if litellm:
            found += [_litellm(stack, upstream, True), _litellm(stack, upstream, False)]
        yield found
