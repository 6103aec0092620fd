"""What ``test_litellm_sdk.py`` runs inside the LiteLLM SDK's environment (``.venv-litellm-sdk``):
mini-swe-agent, or plain LiteLLM SDK calls, against the fake provider the test serves; what it
saw goes to a JSON file for the test to check.

``python driver.py agent|sdk SPEC.json``. The standard library, LiteLLM, mini-swe-agent and
tokenlean only (that environment has no pytest). Name lookups beyond loopback fail, and are
counted: the test asserts there were none.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
from pathlib import Path
from typing import Any

_LOOPBACK = {"127.0.0.1", "::1", "localhost", ""}
looked_up: list[str] = []


def _offline() -> None:
    lookup = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host or "")
        if name not in _LOOPBACK:
            looked_up.append(name)
            raise OSError(f"the LiteLLM SDK test runs offline: no lookup of {name!r}")
        return lookup(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def run_agent(url: str, workdir: str) -> dict[str, Any]:
    """One mini-swe-agent run on ``workdir``, set up as its hello-world example sets it up."""
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.config import get_config_from_spec
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel

    model = LitellmModel(
        model_name="openai/gpt-test",
        model_kwargs={"api_base": f"{url}/v1", "api_key": "sk-test", "drop_params": True},
        cost_tracking="ignore_errors",  # the fake model has no price
    )
    agent = DefaultAgent(
        model, LocalEnvironment(cwd=workdir), **get_config_from_spec("default")["agent"]
    )
    return dict(agent.run("Find out why the nightly batch failed; build.log has the log."))


def agent(spec: dict[str, Any]) -> dict[str, Any]:
    import tokenlean.litellm

    plain = run_agent(spec["plain_url"], spec["workdir"])
    with tokenlean.litellm.enabled() as settings:  # the proxy's folder, under XDG_CACHE_HOME
        lean = run_agent(spec["lean_url"], spec["workdir"])
    return {"plain": plain, "lean": lean, "originals_dir": str(settings.originals_dir)}


def sdk(spec: dict[str, Any]) -> dict[str, Any]:
    """Each call carries its name in an ``x-case`` header, for the test to find its body."""
    import litellm

    import tokenlean.litellm

    history, url = spec["history"], spec["url"]
    records = _Records()
    logging.getLogger("tokenlean").addHandler(records)
    own = {"completion": litellm.completion, "acompletion": litellm.acompletion}
    common = {"api_base": f"{url}/v1", "api_key": "sk-test", "tools": spec["tools"]}

    def ask(case: str, messages: Any = history, *, stream: bool = False) -> str:
        call = {**common, "extra_headers": {"x-case": case}, "stream": stream}
        if case == "positional":  # completion(model, messages, ...)
            reply = litellm.completion("openai/gpt-test", messages, **call)
        else:
            reply = litellm.completion(model="openai/gpt-test", messages=messages, **call)
        if stream:
            return "".join(c.choices[0].delta.content or "" for c in reply)
        return str(reply.choices[0].message.content)

    async def ask_async(case: str, *, stream: bool = False) -> str:
        call = {**common, "extra_headers": {"x-case": case}, "stream": stream}
        reply = await litellm.acompletion(model="openai/gpt-test", messages=history, **call)
        if stream:
            return "".join([c.choices[0].delta.content or "" async for c in reply])
        return str(reply.choices[0].message.content)

    async def both_async() -> list[str]:
        return [await ask_async("async"), await ask_async("async-stream", stream=True)]

    answers: dict[str, str] = {}
    settings = tokenlean.litellm.enable(originals_dir=spec["originals"])
    tokenlean.litellm.enable(originals_dir=spec["originals"])  # a second time: wraps nothing
    wrapped_once = all(getattr(litellm, n).__wrapped__ is f for n, f in own.items())
    answers["sync"] = ask("sync")
    answers["positional"] = ask("positional")
    answers["stream"] = ask("stream", stream=True)
    answers["async"], answers["async-stream"] = asyncio.run(both_async())
    answers["unknown"] = ask("unknown", spec["unknown"])
    tokenlean.litellm.enable(originals_dir=spec["not_a_folder"])  # every rewrite fails inside
    answers["failing"] = ask("failing")
    tokenlean.litellm.disable()
    restored = all(getattr(litellm, n) is f for n, f in own.items())
    answers["disabled"] = ask("disabled")
    answers["unknown-disabled"] = ask("unknown-disabled", spec["unknown"])
    with tokenlean.litellm.enabled(originals_dir=spec["originals"]):
        answers["context"] = ask("context")
    return {
        "answers": answers,
        "originals_dir": str(settings.originals_dir),
        "wrapped_once": wrapped_once,
        "restored": restored,
        "restored_after_with": all(getattr(litellm, n) is f for n, f in own.items()),
        "warnings": records.lines,
    }


def main() -> None:
    _offline()
    scenario, spec_path = sys.argv[1], Path(sys.argv[2])
    spec = json.loads(spec_path.read_text())
    result = {"agent": agent, "sdk": sdk}[scenario](spec)
    Path(spec["out"]).write_text(json.dumps({**result, "looked_up": looked_up}))


if __name__ == "__main__":
    main()
