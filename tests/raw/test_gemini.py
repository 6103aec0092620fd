"""The Gemini adapter: what it rewrites, all it leaves alone, calls without ids, and no drift."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests.raw.test_history import original_path
from tokenlean.raw import RawSettings, RewriteResult, gemini, rewrite_request
from tokenlean.raw._view import Write, apply
from tokenlean.raw.bodies import body, call_points
from tokenlean.replay._formats import Trajectory
from tokenlean.transcript import Message, ToolCall

from .bodies import LONG, SCRIPT, gemini_body
from .conftest import sample_trajectories

NEEDLE = "ERROR disk quota exceeded on /var/data"
RESULT = ("contents", 2, "parts", 0, "functionResponse", "response", "output")
INPUT = ("contents", 1, "parts", 4, "functionCall", "args")
RUNS = sample_trajectories(per_source=2)
needs_shared = pytest.mark.skipif(not RUNS, reason="needs ../shared/data/trajectories")


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _blank(value: dict[str, Any], paths: list[tuple[Any, ...]]) -> dict[str, Any]:
    out = copy.deepcopy(value)
    for path in paths:
        _at(out, path[:-1])[path[-1]] = None
    return out


def _rewrite(request: dict[str, Any], settings: RawSettings) -> dict[str, Any]:
    result = rewrite_request("gemini", request, settings=settings)
    assert result is not None
    return result.body


def _model(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    return {"role": "model", "parts": parts + [{"functionCall": call} for call in calls]}


def _results(*responses: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": r} for r in responses]}


def _ask() -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": "Why does the nightly job fail?"}]}


def test_rewrites_the_long_result_and_input_and_nothing_else(settings: RawSettings) -> None:
    request = gemini_body()
    before = copy.deepcopy(request)
    result = rewrite_request("gemini", request, settings=settings)
    assert result is not None and request == before  # the input is never mutated
    shortened = _at(result.body, RESULT)
    assert len(shortened) < len(LONG) / 4 and NEEDLE in shortened
    assert f"full output: {original_path(settings.originals_dir, LONG)}" in shortened
    command = _at(result.body, INPUT)["command"]
    assert len(command) < len(SCRIPT) / 2 and "full input: " in command
    # everything else is byte-identical, in the same order (keys the rewrite never adds)
    assert json.dumps(_blank(result.body, [RESULT, INPUT])) == json.dumps(
        _blank(request, [RESULT, INPUT])
    )
    assert (result.results_shortened, result.inputs_shortened) == (1, 1)
    assert result.tokens_after < result.tokens_before


def test_untouched_parts_are_the_same_objects(settings: RawSettings) -> None:
    request = gemini_body()
    sent = _rewrite(request, settings)
    for key in request:
        if key != "contents":
            assert sent[key] is request[key]  # systemInstruction, tools, configs, cachedContent
    old, new = request["contents"], sent["contents"]
    assert [new[i] is old[i] for i in range(5)] == [True, False, False, True, True]
    for j in range(4):  # the thought and its signature, text, code and its result
        assert new[1]["parts"][j] is old[1]["parts"][j]
    call = new[1]["parts"][4]
    assert call["thoughtSignature"] == old[1]["parts"][4]["thoughtSignature"]
    assert new[2]["parts"][0]["functionResponse"]["willContinue"] is False
    assert new[2]["parts"][1] is old[2]["parts"][1]
    # the result holding an image of its own is left whole, like any result with an image
    assert new[4] is old[4]


def test_the_view_reads_what_the_model_reads() -> None:
    view = gemini.read(gemini_body())
    assert view is not None
    assert [m.role for m in view.messages] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
    ]
    turn = view.messages[1]
    assert turn.text == "Running the job."  # the thought is not what was said
    assert [(c.name, c.id) for c in turn.tool_calls] == [("run_shell_command", "#1")]
    assert view.messages[2].tool_call_id == "#1"
    assert view.messages[2].name == "run_shell_command"
    assert view.messages[5].tool_call_id == "read-1" and not view.messages[5].is_text_only
    assert 5 not in view.results and 2 in view.results
    same = apply(gemini_body(), view, [])
    assert same == gemini_body()


def test_calls_without_ids_are_matched_by_name_and_order(settings: RawSettings) -> None:
    log_a, log_b = LONG, LONG.replace("worker", "node")
    request = {
        "contents": [
            _ask(),
            _model(
                {"name": "run", "args": {"command": SCRIPT}},
                {"name": "grep", "args": {"pattern": "x"}},
                {"name": "run", "args": {"command": SCRIPT + "\n# again"}},
            ),
            _results(
                {"name": "grep", "response": {"result": "a.py:1: x"}},
                {"name": "run", "response": {"output": log_a}},
                {"name": "run", "response": {"error": log_b}},
            ),
        ]
    }
    view = gemini.read(request)
    assert view is not None
    ids = [m.tool_call_id for m in view.messages if m.role == "tool"]
    assert ids == ["#2", "#1", "#3"]
    assert view.messages[-1].status == "error"
    sent = _rewrite(request, settings)
    results = [p["functionResponse"] for p in sent["contents"][2]["parts"]]
    assert results[0] is request["contents"][2]["parts"][0]["functionResponse"]
    assert NEEDLE in results[1]["response"]["output"] and len(results[1]["response"]) == 1
    assert NEEDLE in results[2]["response"]["error"] and len(results[2]["response"]) == 1
    calls = [p["functionCall"] for p in sent["contents"][1]["parts"]]
    assert all(len(c["args"]["command"]) < len(SCRIPT) / 2 for c in (calls[0], calls[2]))
    assert all("id" not in c for c in calls + results)  # the view's ids are never written


def test_ids_match_whatever_the_order(settings: RawSettings) -> None:
    request = {
        "contents": [
            _ask(),
            _model(
                {"id": "a", "name": "run", "args": {"command": SCRIPT}},
                {"id": "b", "name": "run", "args": {"command": "ls"}},
            ),
            _results(
                {"id": "b", "name": "run", "response": {"output": "a.txt"}},
                {"id": "a", "name": "run", "response": {"output": LONG}},
            ),
        ]
    }
    view = gemini.read(request)
    assert view is not None
    assert [m.tool_call_id for m in view.messages[2:]] == ["b", "a"]
    sent = _rewrite(request, settings)
    assert NEEDLE in sent["contents"][2]["parts"][1]["functionResponse"]["response"]["output"]
    assert sent["contents"][2]["parts"][1]["functionResponse"]["id"] == "a"


def test_unanswered_calls_keep_their_inputs(settings: RawSettings) -> None:
    request = {
        "contents": [
            _ask(),
            _model({"name": "run", "args": {"command": SCRIPT}}),
            _results({"name": "run", "response": {"output": LONG}}),
            _model({"name": "run", "args": {"command": SCRIPT}}),
        ]
    }
    sent = _rewrite(request, settings)
    assert sent["contents"][3] is request["contents"][3]
    assert len(sent["contents"][1]["parts"][0]["functionCall"]["args"]["command"]) < len(SCRIPT)


def test_a_repeated_result_names_the_earlier_call_by_its_number(settings: RawSettings) -> None:
    shown = "\n".join(f"test_case_{i} FAILED at line {i * 7}" for i in range(12))  # kept whole
    request = {
        "contents": [
            _ask(),
            _model({"name": "run", "args": {"command": "make test"}}),
            _results({"name": "run", "response": {"output": shown}}),
            _model({"name": "run", "args": {"command": "make test"}}),
            _results({"name": "run", "response": {"output": shown}}),
        ]
    }
    sent = _rewrite(request, settings)
    text = sent["contents"][4]["parts"][0]["functionResponse"]["response"]["output"]
    assert text == "[Same output as the earlier `run` call #1, word for word; not repeated.]"


def test_an_orphan_response_is_still_shortened(settings: RawSettings) -> None:
    request = {"contents": [_ask(), _results({"name": "run", "response": {"output": LONG}})]}
    sent = _rewrite(request, settings)
    text = sent["contents"][1]["parts"][0]["functionResponse"]["response"]["output"]
    assert NEEDLE in text and len(text) < len(LONG) / 4


def test_a_response_that_is_not_one_string_is_shortened_as_json(settings: RawSettings) -> None:
    rows = [{"id": i, "name": f"item {i}", "note": "x" * 30} for i in range(60)]
    response = {"items": rows, "total": 60}
    request = {
        "contents": [
            _ask(),
            _model({"name": "list", "args": {}}),
            _results({"name": "list", "response": response, "scheduling": "WHEN_IDLE"}),
        ]
    }
    sent = _rewrite(request, settings)
    part = sent["contents"][2]["parts"][0]["functionResponse"]
    assert part["scheduling"] == "WHEN_IDLE" and part["name"] == "list"
    assert part["response"]["total"] == 60 and len(part["response"]["items"]) < 60
    assert "similar items omitted" in json.dumps(part["response"])


def test_a_json_response_cut_to_plain_text_is_sent_as_its_output() -> None:
    response = {"status": "done", "rows": [1, 2, 3]}
    request = {"contents": [_ask(), _results({"name": "list", "response": response, "id": "x"})]}
    view = gemini.read(request)
    assert view is not None and view.messages[1].text == json.dumps(response)
    sent = apply(request, view, [Write(1, text="[... 3 rows omitted ...]")])
    part = sent["contents"][1]["parts"][0]["functionResponse"]
    assert part == {"name": "list", "response": {"output": "[... 3 rows omitted ...]"}, "id": "x"}
    kept = apply(request, view, [Write(1, text='{"status": "done"}')])
    assert kept["contents"][1]["parts"][0]["functionResponse"]["response"] == {"status": "done"}


def test_snake_case_keys_are_read_and_kept(settings: RawSettings) -> None:
    request = {
        "system_instruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            _ask(),
            {"role": "model", "parts": [{"function_call": {"name": "run", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"function_response": {"name": "run", "response": {"result": LONG}}}],
            },
        ],
    }
    sent = _rewrite(request, settings)
    assert NEEDLE in sent["contents"][2]["parts"][0]["function_response"]["response"]["result"]
    assert sent["system_instruction"] is request["system_instruction"]


def test_a_streaming_request_is_rewritten_to_the_same_bytes(settings: RawSettings) -> None:
    # streamGenerateContent sends the very body generateContent does (streaming is in the URL)
    first = json.dumps(_rewrite(gemini_body(), settings))
    settings.planner.forget()  # a cold process too
    assert json.dumps(_rewrite(gemini_body(), settings)) == first


UNREADABLE: list[Any] = [
    {"contents": "hello"},
    {"contents": [None, 3, {"role": "user"}, {"role": "tool", "parts": [{"text": LONG}]}]},
    {
        "contents": [
            {
                "role": "system",
                "parts": [{"functionResponse": {"name": "f", "response": {"output": LONG}}}],
            }
        ]
    },
    {"contents": [_results({"response": {"output": LONG}}), _results({"name": "f"})]},
    {"contents": [_results({"name": "f", "response": {"output": LONG, "at": float("nan")}})]},
    {"contents": [_results({"name": "f", "response": {"output": LONG, "raw": b"bytes"}})]},
    {"contents": [_results({"name": "f", "response": "a bare string " + LONG})]},
    {"contents": [{"role": "model", "parts": [{"functionCall": {"args": {"command": SCRIPT}}}]}]},
    {"contents": [{"role": "user", "parts": [{"unknownPart": {"text": LONG}}, {"text": "hi"}]}]},
]


@pytest.mark.parametrize("request_body", UNREADABLE)
def test_what_the_view_cannot_read_passes_through(request_body: Any, settings: RawSettings) -> None:
    assert rewrite_request("gemini", request_body, settings=settings) is None


@pytest.mark.parametrize("role", [["user"], {"name": "user"}, 7])
def test_a_content_whose_role_is_not_a_string_passes_through_without_a_traceback(
    role: Any, settings: RawSettings, caplog: pytest.LogCaptureFixture
) -> None:
    """A role the reader cannot use (a list or an object is not even hashable) used to raise
    inside the reader: the whole request went unchanged with a traceback in the log."""
    request = gemini_body()
    odd = {"role": role, "parts": [{"text": "a content of a role no API defines"}]}
    request["contents"].insert(0, odd)
    with caplog.at_level(logging.DEBUG, logger="tokenlean"):
        sent = _rewrite(request, settings)
    assert sent["contents"][0] is odd
    assert NEEDLE in _at(sent, _shifted(RESULT)) and len(_at(sent, _shifted(RESULT))) < len(LONG)
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


def _shifted(path: tuple[Any, ...]) -> tuple[Any, ...]:
    return (path[0], path[1] + 1, *path[2:])


def test_testing_bodies_round_trip() -> None:
    call = ToolCall("c1", "bash", {"command": "ls"})
    messages = [
        Message(role="system", content="You are an agent."),
        Message(role="user", content="go"),
        Message(role="assistant", content="Listing.", tool_calls=(call,)),
        Message(role="tool", content="a.txt", tool_call_id="c1"),
        Message(role="user", content="and now?"),
        Message(role="assistant", content=""),
    ]
    request = body("gemini", messages)
    assert request["systemInstruction"] == {"parts": [{"text": "You are an agent."}]}
    assert [c["role"] for c in request["contents"]] == ["user", "model", "user", "model"]
    assert request["contents"][2]["parts"] == [
        {"functionResponse": {"name": "bash", "response": {"output": "a.txt"}}},
        {"text": "and now?"},
    ]
    view = gemini.read(request)
    assert view is not None
    assert [(m.role, m.text) for m in view.messages] == [(m.role, m.text) for m in messages[1:]]
    assert call_points(view.messages) == [1, 4]


def _history(run: Trajectory, settings: RawSettings) -> list[list[str]]:
    """Each rewritten request's contents, as JSON."""
    out: list[list[str]] = []
    for k in call_points(run.messages):
        request = body("gemini", run.messages[:k])
        result = rewrite_request("gemini", request, settings=settings)
        sent = result.body if result is not None else request
        out.append([json.dumps(content) for content in sent["contents"]])
    return out


@needs_shared
@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id[:50])
def test_zero_drift_on_real_runs(run: Trajectory, tmp_path: Path) -> None:
    settings = RawSettings(originals_dir=tmp_path)
    requests = _history(run, settings)
    for k in range(1, len(requests)):
        previous = requests[k - 1]
        assert requests[k][: len(previous)] == previous, f"request {k} rewrote what {k - 1} sent"
    settings.planner.forget()  # a cold process sends the same bytes
    assert _history(run, settings)[-1] == requests[-1]


PART = st.one_of(
    st.fixed_dictionaries({"text": st.text(max_size=10) | st.just(LONG)}),
    st.fixed_dictionaries({"thought": st.just(True), "text": st.just(LONG)}),
    st.fixed_dictionaries({"inlineData": st.just({"mimeType": "image/png", "data": "iVBOR"})}),
    st.fixed_dictionaries({"executableCode": st.just({"code": LONG})}),
    st.fixed_dictionaries(
        {
            "functionCall": st.fixed_dictionaries(
                {"name": st.sampled_from(["run", "read", ""])},
                optional={
                    "id": st.sampled_from(["a", "b", 3]),
                    "args": st.just({"command": SCRIPT}) | st.none() | st.integers(),
                },
            )
        },
        optional={"thoughtSignature": st.just("c2ln")},
    ),
    st.fixed_dictionaries(
        {
            "functionResponse": st.fixed_dictionaries(
                {"name": st.sampled_from(["run", "read", None])},
                optional={
                    "id": st.sampled_from(["a", "b", None]),
                    "response": st.sampled_from(
                        [{"output": LONG}, {"error": LONG}, {"a": 1, "b": LONG}, "x", None]
                    ),
                    "parts": st.just([{"inlineData": {"data": "x"}}]) | st.just([]),
                    "willContinue": st.booleans(),
                },
            )
        }
    ),
    st.dictionaries(st.sampled_from(["mystery", "text", "fileData"]), st.integers(), max_size=2),
    st.none() | st.integers(),
)
CONTENT = st.fixed_dictionaries(
    {"parts": st.lists(PART, max_size=4) | st.none()},
    optional={"role": st.sampled_from(["user", "model", "function", "system", None])},
)
_EDITABLE = ("functionCall", "functionResponse")


@hsettings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(contents=st.lists(CONTENT | st.none(), max_size=6))
def test_random_bodies_never_raise_and_keep_what_they_do_not_edit(
    contents: list[Any], tmp_path: Path
) -> None:
    request = {"contents": contents, "tools": [{"functionDeclarations": []}]}
    frozen = copy.deepcopy(request)
    result = rewrite_request("gemini", request, settings=RawSettings(originals_dir=tmp_path))
    assert result is None or isinstance(result, RewriteResult)
    assert request == frozen
    if result is None:
        return
    assert result.body["tools"] is request["tools"]
    sent = result.body["contents"]
    assert len(sent) == len(contents)
    for old, new in zip(contents, sent, strict=True):
        if new is old:
            continue
        assert len(new["parts"]) == len(old["parts"]) and new.keys() == old.keys()
        for a, b in zip(old["parts"], new["parts"], strict=True):
            edited = isinstance(a, dict) and any(key in a for key in _EDITABLE)
            assert b is a or (edited and b.keys() == a.keys())
