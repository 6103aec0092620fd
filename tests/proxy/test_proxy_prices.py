"""The proxy prices each request by the model it names (the genai-prices catalogue), through
the real SDKs against the fake upstream; a model the catalogue does not know is priced at its
API's preset, said once."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tokenlean.prices import model_pricing
from tokenlean.proxy import BackgroundProxy
from tokenlean.raw.bodies import body
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import ProxyFactory, wait_for
from .test_proxy_output import ANSWER, OUTPUT, TRANSCRIPT, answers_with_usage

pytest.importorskip("genai_prices", reason="needs genai-prices (the prices extra)")


@pytest.fixture
def with_usage() -> Any:
    with FakeUpstream(script=answers_with_usage) as upstream:
        yield upstream


def _sessions(proxy: BackgroundProxy, requests: int) -> dict[str, Any]:
    book = proxy.app.state.stats
    assert wait_for(lambda: book.snapshot()["total"]["requests"] == requests)
    sessions: dict[str, Any] = book.snapshot()["sessions"]
    return sessions


def _chat(url: str, model: str, session: str) -> None:
    headers = {"x-tokenlean-session": session}
    client = openai.OpenAI(
        base_url=url + "/v1", api_key="sk-test", max_retries=0, default_headers=headers
    )
    reply = client.chat.completions.create(**body("openai_chat", TRANSCRIPT, model=model))
    assert reply.choices[0].message.content == ANSWER


def _messages(url: str, model: str, session: str) -> None:
    headers = {"x-tokenlean-session": session}
    client = anthropic.Anthropic(
        base_url=url, api_key="sk-ant", max_retries=0, default_headers=headers
    )
    reply = client.messages.create(**body("anthropic", TRANSCRIPT, model=model))
    assert reply.content[0].type == "text"


def _output_price(session: dict[str, Any]) -> float:
    return float((session["whole_bill_in"] - session["billed_in"]) / session["output_tokens"])


def test_each_request_is_priced_by_the_model_it_names(
    make_proxy: ProxyFactory,
    with_usage: FakeUpstream,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy = make_proxy("default", upstream=with_usage.url, originals_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="tokenlean.prices"):
        _chat(proxy.url, "gpt-5", "known")
        _messages(proxy.url, "claude-opus-4-1", "claude")
        _chat(proxy.url, "gpt-unknown-to-the-catalogue", "unknown")
        _chat(proxy.url, "gpt-unknown-to-the-catalogue", "unknown")
        sessions = _sessions(proxy, 4)
    by_pricing = {s["pricing"]: s for s in sessions.values()}
    assert set(by_pricing) == {"gpt-5", "claude-opus-4-1", "openai"}
    # the whole bill's output price is the model's own, from the catalogue (GPT-5: not 4x)
    for name in ("gpt-5", "claude-opus-4-1"):
        assert _output_price(by_pricing[name]) == pytest.approx(model_pricing(name).output, 1e-3)
    assert _output_price(by_pricing["openai"]) == pytest.approx(4.0, 1e-3)
    assert by_pricing["openai"]["output_tokens"] == 2 * OUTPUT
    said = [r.getMessage() for r in caplog.records if "gpt-unknown-to-the-catalogue" in r.message]
    assert said == [
        "tokenlean: unknown model gpt-unknown-to-the-catalogue: priced at the openai preset "
        "(Unable to find model with model_ref='gpt-unknown-to-the-catalogue' in openai)"
    ]


def test_pricing_by_model_can_be_turned_off(
    make_proxy: ProxyFactory, with_usage: FakeUpstream, tmp_path: Path
) -> None:
    proxy = make_proxy(
        "default", upstream=with_usage.url, originals_dir=tmp_path, price_by_model=False
    )
    _chat(proxy.url, "gpt-5", "off")
    (session,) = _sessions(proxy, 1).values()
    assert session["pricing"] == "openai"
    assert _output_price(session) == pytest.approx(4.0, 1e-3)


@pytest.mark.parametrize("by_model", [True, False])
def test_the_app_loads_the_prices_before_its_first_request(tmp_path: Path, by_model: bool) -> None:
    """In a fresh interpreter: the import of the catalogue's prices (a tenth of a second) is
    paid as the app is made, not by the first request priced and the requests beside it."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tokenlean.proxy import ProxySettings, create_app\n"
        f"settings = ProxySettings(originals_dir=Path(sys.argv[1]), price_by_model={by_model})\n"
        "create_app(settings)\n"
        "print('genai_prices.data' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [str(by_model)]
