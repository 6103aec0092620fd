"""End to end with the real Codex CLI: ``codex exec`` through the proxy to a scripted fake OpenAI
Responses model that has Codex run one shell command with a long output, then answers.

Each test runs once per build present (:mod:`tests.proxy.agent_clis`): the pinned one and the
current release; a build not installed is skipped, saying how to install it::

    npm install --prefix ~/codex @openai/codex@0.171.0
    export TOKENLEAN_CODEX=~/codex/node_modules/.bin/codex     # or put `codex` on PATH
    npm install --prefix ~/codex-current @openai/codex@latest
    export TOKENLEAN_CODEX_CURRENT=~/codex-current/node_modules/.bin/codex

Codex 0.171 ignores ``OPENAI_BASE_URL``; ``tokenlean wrap`` passes ``-c openai_base_url=...``.
It first tries a WebSocket to ``/v1/responses`` (the proxy refuses it), retries five times, then
falls back to a streamed ``POST /v1/responses``: a run takes some seconds longer than it should.

What Codex 0.171 ``exec`` sends (recorded by this test): no ``tools`` field and no
``instructions``. Its tools are declared inside ``input``, whose first item is
``{"type": "additional_tools", "role": "developer", "tools": [...]}``: namespaces (``functions``,
``clock``, ``collaboration``) whose tools are a ``custom`` tool ``exec`` (JavaScript, a Lark
grammar; nested tools such as ``tools.exec_command({cmd})`` run shell commands), ``wait`` and
others. Developer and user messages follow, and a ``configuration_update`` item
(``{"reasoning": {"effort": ...}}``) ends it. The model runs a command by answering with a
``custom_tool_call`` to ``exec``; its result comes back as a ``custom_tool_call_output`` whose
``output`` is a list of ``input_text`` parts (``Script completed\\nWall time ...\\nOutput:``, then
what the script passed to ``text()``), after the call item, with every earlier item re-sent.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tokenlean.cli import main
from tokenlean.cli._wrap import agent_args
from tokenlean.proxy import BackgroundProxy, ProxySettings, create_app
from tokenlean.testing.upstream import (
    FakeUpstream,
    Recorded,
    Reply,
    json_reply,
    response_item_events,
    response_object,
    sse_reply,
)

from .agent_clis import cli_params
from .proxy_support import recording_rewriter

CODEXES = cli_params("codex", "TOKENLEAN_CODEX", "@openai/codex")
#: About 17 KB of passing tests and the one failure the model needs, last (under the 10,000
#: tokens Codex's ``exec_command`` keeps by default, so all of it reaches the model).
NEEDLE = "FAILED tests/test_x.py::test_y - AssertionError: 3 != 4"
LONG_COMMAND = (
    'for i in $(seq 1 300); do echo "PASSED tests/test_mod$i.py::test_case_$i in 0.01s"; done; '
    f"echo '{NEEDLE}'"
)
SCRIPT = (
    f"const r = await tools.exec_command({{cmd: {json.dumps(LONG_COMMAND)}}});\ntext(r.output);\n"
)
FINAL = "test_y fails: 3 != 4."
PROMPT = "Run the tests and tell me which one fails."


def _items(body: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    return [i for i in body["input"] if isinstance(i, Mapping) and i.get("type") == kind]


def _tool_names(tools: list[Mapping[str, Any]]) -> set[str]:
    """The tools declared, namespaces opened (``functions`` holds ``exec``)."""
    names = {str(t.get("name")) for t in tools if t.get("type") != "namespace"}
    nested = [_tool_names(t.get("tools", [])) for t in tools if t.get("type") == "namespace"]
    return names.union(*nested)


def _declared(body: Mapping[str, Any]) -> set[str]:
    listed = [t for i in _items(body, "additional_tools") for t in i.get("tools", [])]
    return _tool_names([*listed, *body.get("tools", [])])


def _output_text(item: Mapping[str, Any]) -> str:
    output = item["output"]
    return output if isinstance(output, str) else "".join(p.get("text", "") for p in output)


def scripted_model(request: Recorded) -> Reply:
    """One ``exec`` call running the long command, then the answer."""
    if request.method != "POST" or not request.path.endswith("/responses"):
        return json_reply({"error": {"message": f"not served: {request.path}"}}, 404)
    body = request.json()
    if _items(body, "custom_tool_call_output"):
        items = response_object(FINAL)["output"]
    elif "exec" not in _declared(body):  # a Codex that declares its tools otherwise: say so
        items = response_object(f"no exec tool among {sorted(_declared(body))}")["output"]
    else:
        call = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "exec"}
        items = [{**call, "input": SCRIPT, "status": "completed"}]
    response_id = f"resp_{len(body['input'])}"  # one id per answer
    return sse_reply(response_item_events(items, response_id=response_id))


def codex_env(home: Path) -> dict[str, str]:
    (home / ".codex").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
    env.update(HOME=str(home), CODEX_HOME=str(home / ".codex"), OPENAI_API_KEY="sk-dummy")
    return env


@dataclass
class Session:
    run: subprocess.CompletedProcess[str]
    client_bodies: list[dict[str, Any]]  # as Codex sent them to the proxy
    upstream: list[Recorded]  # as the proxy forwarded them
    originals: Path

    def pairs(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(client body, upstream body) of each ``POST /v1/responses``, in order."""
        sent = [r.json() for r in self.upstream if r.method == "POST"]
        return list(zip(self.client_bodies, sent, strict=True))


def through_proxy(codex: str, root: Path) -> Session:
    """Run ``codex exec`` pointed at a proxy in front of the scripted model, recording what it
    sent the proxy and what the proxy forwarded."""
    (root / "work").mkdir()
    recording, client_bodies = recording_rewriter(root / "originals")

    with FakeUpstream(script=scripted_model) as upstream:
        app = create_app(ProxySettings(upstream=upstream.url), rewriter=recording)
        with BackgroundProxy(app) as proxy:
            command = [codex, *agent_args("codex", proxy.url), "exec"]
            run = subprocess.run(
                [*command, "--skip-git-repo-check", PROMPT],
                cwd=root / "work",
                env=codex_env(root / "home"),
                capture_output=True,
                text=True,
                timeout=300,
            )
    return Session(run, client_bodies, list(upstream.requests), root / "originals")


@pytest.fixture(scope="module", params=CODEXES)
def codex(request: pytest.FixtureRequest) -> str:
    """The Codex executable: the pinned build, then the current release."""
    path: str = request.param
    return path


@pytest.fixture(scope="module")
def session(codex: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    yield through_proxy(codex, tmp_path_factory.mktemp("codex"))


def _result(body: Mapping[str, Any]) -> str:
    (item,) = _items(body, "custom_tool_call_output")
    return _output_text(item)


def test_codex_runs_the_command_through_the_proxy(session: Session):
    assert session.run.returncode == 0, session.run.stderr[-2000:]
    assert FINAL in session.run.stdout
    assert [r.path for r in session.upstream if r.method == "POST"] == ["/v1/responses"] * 2
    client, _ = session.pairs()[1]
    ran = _result(client)  # Codex really ran it: the whole output, as Codex sent it
    assert NEEDLE in ran
    assert "PASSED tests/test_mod150.py::test_case_150" in ran


def test_what_codex_sends(session: Session):
    for client, _ in session.pairs():
        assert client["stream"] is True
        assert "tools" not in client
        assert client["input"][0]["type"] == "additional_tools"
        assert "exec" in _declared(client)
        assert _items(client, "configuration_update")
    client, _ = session.pairs()[1]
    (call,) = _items(client, "custom_tool_call")
    assert (call["name"], call["input"]) == ("exec", SCRIPT)
    (result,) = _items(client, "custom_tool_call_output")
    assert result["call_id"] == call["call_id"]
    assert all(part["type"] == "input_text" for part in result["output"])


def test_the_long_output_is_shortened_keeping_the_error_line(session: Session):
    client, sent = session.pairs()[1]
    original, shortened = _result(client), _result(sent)
    assert len(original) > 15_000
    assert len(shortened) < len(original) / 2
    assert NEEDLE in shortened
    assert "omitted" in shortened
    assert str(session.originals) in shortened  # the marker names where the original is


def test_everything_but_the_tool_output_reaches_the_model_unchanged(session: Session):
    for client, sent in session.pairs():
        assert {k: v for k, v in client.items() if k != "input"} == {
            k: v for k, v in sent.items() if k != "input"
        }
        assert len(client["input"]) == len(sent["input"])
        for before, after in zip(client["input"], sent["input"], strict=True):
            if before.get("type") != "custom_tool_call_output":
                assert before == after


def test_earlier_items_are_sent_again_unchanged(session: Session):
    """What the model was sent before it is sent again as it was wherever Codex kept it (all of
    it, in 0.171); an item Codex itself changed reaches the model as Codex sent it."""
    for (client_before, before), (client_after, after) in itertools.pairwise(session.pairs()):
        for i, kept in enumerate(client_before["input"]):
            if client_after["input"][i] == kept:
                assert after["input"][i] == before["input"][i], i
            else:
                assert after["input"][i] == client_after["input"][i], i


def test_tokenlean_wrap_codex(
    codex: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
):
    """The same run through ``tokenlean wrap codex exec ...``, as a user starts it."""
    for key in [k for k in os.environ if k.startswith(("OPENAI_", "CODEX_"))]:
        monkeypatch.delenv(key)
    for key, value in codex_env(tmp_path / "home").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{Path(codex).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    with FakeUpstream(script=scripted_model) as upstream:
        tokenlean = ["wrap", "--upstream", upstream.url, "--originals", str(tmp_path / "o")]
        code = main([*tokenlean, "codex", "exec", "--skip-git-repo-check", PROMPT])
    captured = capfd.readouterr()
    assert code == 0, captured.err[-2000:]
    assert FINAL in captured.out
    assert "tokenlean: 2 requests in 1 session," in captured.err
