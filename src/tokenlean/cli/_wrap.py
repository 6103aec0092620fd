"""``tokenlean wrap claude|codex|gemini [ARGS...]``: run a coding agent through the tokenlean
proxy.

Starts the proxy on a free local port, runs the agent pointed at it (Claude Code:
``ANTHROPIC_BASE_URL``; Codex: ``OPENAI_BASE_URL`` and ``-c openai_base_url=...``, tested with
an API key, not with a ChatGPT login; gemini-cli: ``GOOGLE_GEMINI_BASE_URL``, with
``GEMINI_API_KEY`` and ``"security": {"auth": {"selectedType": "gemini-api-key"}}`` in its
settings), stops the proxy when the agent exits, prints what was saved, and exits with the
agent's exit code. Options for tokenlean go before the agent's name; everything after it goes
to the agent.

The proxy takes only requests that carry its token (--token, $TOKENLEAN_PROXY_TOKEN, or one made
for the run): the agent's base URL carries it as a prefix (``http://127.0.0.1:PORT/t/TOKEN``),
so no other local program can use the agent's proxy or read its statistics.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tokenlean.cli._command import add_command
from tokenlean.cli._proxy import add_proxy_options, build_app, print_summary

__all__ = [
    "AGENTS",
    "GEMINI_AUTH_EXIT",
    "GEMINI_AUTH_HINT",
    "INSTALL_HINTS",
    "add_subcommand",
    "agent_args",
    "agent_env",
    "run",
    "run_agent",
]

#: How each agent finds its API: the variable to set and the path suffix it expects.
AGENTS: Mapping[str, tuple[str, str]] = {
    "claude": ("ANTHROPIC_BASE_URL", ""),
    "codex": ("OPENAI_BASE_URL", "/v1"),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", ""),
}
INSTALL_HINTS: Mapping[str, str] = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
}
#: gemini-cli's exit code when it has no usable authentication (``FATAL_AUTHENTICATION_ERROR``).
GEMINI_AUTH_EXIT = 41
# With GOOGLE_GEMINI_BASE_URL set and no auth type in its settings, gemini-cli 0.61 picks the
# "gateway" type and then rejects it ("Invalid auth method selected."). tokenlean does not
# write the user's settings; it says what to write.
GEMINI_AUTH_HINT = (
    "tokenlean wrap: gemini exited 41 (authentication). Through the proxy gemini-cli needs an "
    "API key: export GEMINI_API_KEY=... and put "
    '{"security": {"auth": {"selectedType": "gemini-api-key"}}} in ~/.gemini/settings.json '
    "($GEMINI_CLI_HOME/.gemini/settings.json if you set GEMINI_CLI_HOME); "
    "a Google login does not go through the proxy"
)


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    summary = (
        "run Claude Code, Codex or gemini-cli through the tokenlean proxy and print the savings"
    )
    p = add_command(sub, "wrap", __doc__, summary)
    add_proxy_options(p)
    p.add_argument("--log", type=Path, metavar="FILE", help="append a line per request to FILE")
    p.add_argument("agent", choices=sorted(AGENTS), help="the agent to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the agent")
    p.set_defaults(func=run)


def agent_args(agent: str, proxy_url: str) -> list[str]:
    """Arguments that point the agent at the proxy where its environment alone does not: Codex
    0.171 ignores ``OPENAI_BASE_URL`` and reads ``openai_base_url`` from its configuration."""
    if agent == "codex":
        return ["-c", f'openai_base_url="{proxy_url}/v1"']
    return []


def agent_env(agent: str, proxy_url: str, base: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment: its base URL at the proxy, and the proxy exempt from any
    HTTP(S)_PROXY the user has set (a corporate proxy cannot reach 127.0.0.1)."""
    variable, suffix = AGENTS[agent]
    env = dict(base)
    env[variable] = proxy_url + suffix
    exempt = [h for h in env.get("NO_PROXY", "").split(",") if h]
    env["NO_PROXY"] = ",".join([*exempt, "127.0.0.1", "localhost"])
    return env


def _log_to(path: Path) -> None:
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("tokenlean.proxy")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def run_agent(command: Sequence[str], env: Mapping[str, str]) -> int:
    """Run the agent in the foreground. Ctrl-C belongs to the agent (Claude Code uses it to
    interrupt a turn), so tokenlean ignores it until the agent exits."""
    child = subprocess.Popen(list(command), env=dict(env))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code  # killed by signal N: the shell's 128 + N


def run(args: argparse.Namespace) -> int:
    executable = shutil.which(args.agent)
    if executable is None:
        hint = INSTALL_HINTS[args.agent]
        print(f"tokenlean wrap: {args.agent} not found on PATH (install: {hint})", file=sys.stderr)
        return 127
    token = args.token or secrets.token_urlsafe(32)
    app = build_app(argparse.Namespace(**{**vars(args), "token": token}), "wrap")
    if app is None:
        return 2
    from tokenlean.proxy import BackgroundProxy

    if args.log:
        _log_to(args.log)
    with BackgroundProxy(app) as proxy:
        # Any client takes a base URL, not all take headers. Codex gets it on its command line,
        # which other local users can list: the token still keeps out web pages and guesses,
        # and the proxy holds no key of its own to spend.
        url = f"{proxy.url}/t/{token}"
        command = [executable, *agent_args(args.agent, url), *args.args]
        code = run_agent(command, agent_env(args.agent, url, os.environ))
    print_summary(app)
    if args.agent == "gemini" and code == GEMINI_AUTH_EXIT:
        print(GEMINI_AUTH_HINT, file=sys.stderr)
    return code
