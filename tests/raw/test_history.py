"""The stateless history plan: markers that point into files, memoised work, the policy's knobs."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.data import TOOL_OUTPUTS, shared_params
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.raw.bodies import body as build_body
from tokenlean.raw.bodies import call_points
from tokenlean.readback import point_to_file
from tokenlean.shorten import _firstsight as firstsight
from tokenlean.store import FolderOriginalStore, default_originals_dir, make_handle
from tokenlean.tokens import DEFAULT_COUNTER
from tokenlean.transcript import Message, ToolCall

from .bodies import SCRIPT
from .conftest import long_log, sample_trajectories


def original_path(directory: Path, text: str) -> Path:
    """Where the raw rewrite keeps ``text`` (a file named by its content)."""
    return FolderOriginalStore(directory).path(make_handle("o", text))


MARKER = re.compile(
    r"^\s*\[\.\.\. (\d+) .*omitted; full output:? ?(\S*) lines (\d+)-(\d+) \.\.\.\]$"
)


def _conversation(result: str, *, args: dict[str, Any] | None = None) -> list[Message]:
    call = ToolCall("call_1", "bash", args or {"command": "run-job --verbose"})
    return [
        Message(role="system", content="You are an agent."),
        Message(role="user", content="Why does the nightly job fail?"),
        Message(role="assistant", content="Running the job.", tool_calls=(call,)),
        Message(role="tool", content=result, tool_call_id="call_1"),
    ]


def _shortened(result: str, settings: RawSettings) -> str:
    request = build_body("anthropic", _conversation(result))
    out = rewrite_request("anthropic", request, settings=settings)
    assert out is not None
    text: str = out.body["messages"][-1]["content"][0]["content"]
    return text


def _outputs() -> list[Path]:
    found = sorted(TOOL_OUTPUTS.glob("*/*.txt"))  # test logs and compiler output
    large = [p for p in found if p.stat().st_size > 8000]  # long enough to be worth shortening
    return large[::3][:10]


def _check_markers(text: str, original: str) -> int:
    """Every line marker names a file holding the original, and its range is what it stands for."""
    lines, source = text.split("\n"), original.split("\n")
    named = re.search(r"full output: (\S+?)[ \]]", text)
    assert named is not None and Path(named[1]).read_text(encoding="utf-8") == original
    assert text.count(named[1]) == 1  # the file is named once, later markers give lines
    checked = 0
    for k, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        count, first, last = int(match[1]), int(match[3]), int(match[4])
        assert match[2] in ("", named[1])
        assert last - first + 1 == count
        if k > 0 and first > 1 and not MARKER.match(lines[k - 1]):
            assert lines[k - 1].strip() in source[first - 2]  # the kept line before the gap
        if k + 1 < len(lines) and last < len(source) and not MARKER.match(lines[k + 1]):
            assert lines[k + 1].strip() in source[last]  # and the kept line after it
        checked += 1
    return checked


def test_markers_name_the_file_and_the_lines_they_stand_for(settings: RawSettings) -> None:
    original = long_log()
    text = _shortened(original, settings)
    assert "ERROR disk quota exceeded on /var/data" in text
    assert _check_markers(text, original) >= 1


@pytest.mark.parametrize("path", shared_params(_outputs()), ids=lambda p: p.stem[:40])
def test_markers_on_real_tool_outputs(path: Path, settings: RawSettings) -> None:
    original = path.read_text(encoding="utf-8")
    text = _shortened(original, settings)
    assert len(text) < len(original) and "read_original" not in text
    _check_markers(text, original)


def test_hints_inside_json_strings_keep_the_json_valid(tmp_path: Path) -> None:
    rows = [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "note": "x" * 30} for i in range(60)]
    original = json.dumps({"items": rows, "total": 60}, indent=1)
    folder = tmp_path / 'odd "dir"'
    text = _shortened(original, RawSettings(originals_dir=folder))
    assert "similar items omitted" in text and "read_original" not in text
    assert json.loads(text)["total"] == 60
    assert f"full output: {folder}" in json.dumps(json.loads(text), ensure_ascii=False).replace(
        '\\"', '"'
    )


def test_point_to_file() -> None:
    text = (
        'a [... 3 lines omitted; read_original("o1a2b3", "6-8") ...]\n'
        'b [... 1 line omitted; read_original("o1a2b3", "9") ...]\n'
        '"... 2 similar items omitted (indices 1-2); read_original(\\"o1a2b3\\") ..."\n'
        'read_original("o999999")'
    )
    assert point_to_file(text, "o1a2b3", "/c/f.txt") == (
        "a [... 3 lines omitted; full output: /c/f.txt lines 6-8 ...]\n"
        "b [... 1 line omitted; full output line 9 ...]\n"
        '"... 2 similar items omitted (indices 1-2); full output ..."\n'
        'read_original("o999999")'
    )


def test_inputs_marker_names_the_file_and_line_range(settings: RawSettings) -> None:
    messages = _conversation("done", args={"command": SCRIPT})
    out = rewrite_request("anthropic", build_body("anthropic", messages), settings=settings)
    assert out is not None
    command = out.body["messages"][1]["content"][1]["input"]["command"]
    lines, source = command.split("\n"), SCRIPT.split("\n")
    head, tail = settings.inputs.head_lines, settings.inputs.tail_lines
    assert lines[:head] == source[:head] and lines[-tail:] == source[-tail:]
    omitted = len(source) - head - tail
    path = original_path(settings.originals_dir, SCRIPT)  # type: ignore[arg-type]
    assert lines[head] == (
        f"[... {omitted} lines of this input omitted after the call ran; "
        f"full input: {path} lines {head + 1}-{head + omitted} ...]"
    )
    assert path.read_text(encoding="utf-8") == SCRIPT


def test_unanswered_calls_keep_their_inputs(settings: RawSettings) -> None:
    messages = _conversation("done", args={"command": SCRIPT})[:-1]  # no result yet
    assert (
        rewrite_request("anthropic", build_body("anthropic", messages), settings=settings) is None
    )


def test_originals_are_private_and_written_whole(settings: RawSettings) -> None:
    original = long_log()
    _shortened(original, settings)
    directory = settings.originals_dir
    assert directory is not None
    files = sorted(directory.iterdir())
    assert [f.name for f in files] == [original_path(directory, original).name]  # no temp left
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600


def test_without_originals_nothing_is_cut(tmp_path: Path) -> None:
    """Nothing kept, no way back: no marker could say how to get the rest, so the result and
    the input go as they came (only an exact repeat of an earlier result is pointed to)."""
    settings = RawSettings(originals_dir=tmp_path / "o", keep_originals=False)
    messages = _conversation(long_log(), args={"command": SCRIPT})
    assert (
        rewrite_request("anthropic", build_body("anthropic", messages), settings=settings) is None
    )
    assert not (tmp_path / "o").exists()


def test_unwritable_originals_send_the_body_unchanged(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    settings = RawSettings(originals_dir=blocker / "originals")
    request = build_body("anthropic", _conversation(long_log()))
    assert rewrite_request("anthropic", request, settings=settings) is None


def test_tool_filters(tmp_path: Path) -> None:
    messages = _conversation(long_log(), args={"command": SCRIPT})
    request = build_body("anthropic", messages)
    for kwargs, expected in [
        ({"never": ["bash"]}, (0, 1)),
        ({"only": ["grep"]}, (0, 1)),
        ({"only": ["bash"], "never_inputs": ["bash"]}, (1, 0)),
        ({"shorten_inputs": False}, (1, 0)),
    ]:
        settings = RawSettings(originals_dir=tmp_path, **kwargs)  # type: ignore[arg-type]
        out = rewrite_request("anthropic", request, settings=settings)
        assert out is not None and (out.results_shortened, out.inputs_shortened) == expected


def test_a_result_whose_call_is_not_in_the_body_is_still_shortened(settings: RawSettings) -> None:
    # Responses with previous_response_id: the calls live on the server, only outputs are sent
    request = {"input": [{"type": "function_call_output", "call_id": "c", "output": long_log()}]}
    out = rewrite_request("openai_responses", request, settings=settings)
    assert out is not None and out.results_shortened == 1


def test_exact_counter(o200k: Any, tmp_path: Path) -> None:
    settings = RawSettings(originals_dir=tmp_path, counter=o200k)
    request = build_body("anthropic", _conversation(long_log()))
    out = rewrite_request("anthropic", request, settings=settings)
    assert out is not None and out.tokens_after < out.tokens_before
    assert out.tokens_before == pytest.approx(o200k.count(json.dumps(request)), rel=0.2)


def test_default_originals_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_originals_dir() == tmp_path / "tokenlean" / "originals"
    assert RawSettings().originals_dir == tmp_path / "tokenlean" / "originals"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert default_originals_dir() == Path.home() / ".cache" / "tokenlean" / "originals"
    assert RawSettings(originals_dir="~/x").originals_dir == Path.home() / "x"  # type: ignore[arg-type]


def _repeat_pointers(body: dict[str, Any]) -> set[str]:
    """Ids of the calls whose results ``body`` sends as pointers to an identical earlier one."""
    out: set[str] = set()
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") != "tool_result":
                continue
            content = block["content"]
            text = content if isinstance(content, str) else (content or [{}])[0].get("text", "")
            if text.startswith("[Same output as the earlier"):
                out.add(block["tool_use_id"])
    return out


def _sampled() -> list[Any]:
    runs = sample_trajectories(per_source=1, min_calls=6)
    return runs or [pytest.param(None, marks=pytest.mark.skip(reason="needs ../shared"))]


@pytest.mark.parametrize("trajectory", _sampled(), ids=lambda t: getattr(t, "id", "none")[:50])
def test_each_request_only_shortens_what_is_new(
    trajectory: Any, settings: RawSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = firstsight.shorten

    def counting(text: str, **kwargs: Any) -> Any:
        calls.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(firstsight, "shorten", counting)
    points = call_points(trajectory.messages)
    warm: list[Any] = []
    for k in points:
        request = build_body("anthropic", trajectory.messages[:k])
        warm.append(rewrite_request("anthropic", request, settings=settings))
    sent = trajectory.messages[: points[-1]]
    long = [
        m for m in sent if m.role == "tool" and DEFAULT_COUNTER.count(m.text) > settings.min_tokens
    ]
    repeats = _repeat_pointers(warm[-1].body if warm[-1] else build_body("anthropic", sent))
    long = [m for m in long if m.tool_call_id not in repeats]  # a repeat needs no shortening
    assert len(calls) == len(long)  # each long result was shortened once, not once per request
    settings.planner.forget()
    calls.clear()
    last = build_body("anthropic", trajectory.messages[: points[-1]])
    cold = rewrite_request("anthropic", last, settings=settings)
    assert (cold.body if cold else None) == (warm[-1].body if warm[-1] else None)


def test_a_resent_history_rebuilds_no_message(
    settings: RawSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client re-sends its whole history every turn: once planned, none of it is planned or
    copied again (only the new part is), so a long history costs reading, not shortening."""
    from tokenlean import _history_plan, _turn_plan

    messages = [
        *_conversation(long_log(), args={"command": "run-job"}),
        Message(role="assistant", content="", tool_calls=(ToolCall("call_2", "bash", {}),)),
        Message(role="tool", content=long_log(), tool_call_id="call_2"),
    ]
    first = rewrite_request("anthropic", build_body("anthropic", messages[:4]), settings=settings)
    copies: list[Message] = []
    real = _history_plan.replace

    def counting(value: Any, **changes: Any) -> Any:
        if isinstance(value, Message):
            copies.append(value)
        return real(value, **changes)

    for planning in (_history_plan, _turn_plan):  # every copy the planning makes
        monkeypatch.setattr(planning, "replace", counting)
    again = rewrite_request("anthropic", build_body("anthropic", messages[:4]), settings=settings)
    assert copies == []
    assert first is not None and again is not None and again.body == first.body
    rewrite_request("anthropic", build_body("anthropic", messages), settings=settings)
    assert {m.tool_call_id for m in copies if m.role == "tool"} == {"call_2"}  # the new result only


def test_a_repeated_result_points_to_the_first_the_same_way_warm_or_cold(
    settings: RawSettings,
) -> None:
    status = "\n".join(f"replica {i}: healthy, lag {i * 3} ms, last sync 12:0{i}" for i in range(5))
    call_2 = ToolCall("call_2", "bash", {"command": "run-job --verbose"})
    messages = [
        *_conversation(status),
        Message(role="assistant", content="Again.", tool_calls=(call_2,)),
        Message(role="tool", content=status, tool_call_id="call_2"),
        Message(role="assistant", content="Same status."),
    ]
    warm = [
        rewrite_request("anthropic", build_body("anthropic", messages[:k]), settings=settings)
        for k in (4, 6, 7)
    ]
    assert warm[0] is None  # the first copy is short: sent whole
    last = warm[-1]
    assert last is not None
    results = [b for m in last.body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    texts = [
        r["content"] if isinstance(r["content"], str) else r["content"][0]["text"] for r in results
    ]
    pointer = "[Same output as the earlier `bash` call call_1, word for word; not repeated.]"
    assert texts == [status, pointer]
    settings.planner.forget()
    cold = rewrite_request("anthropic", build_body("anthropic", messages), settings=settings)
    assert cold is not None and cold.body == last.body


# -- outputs wrapped in JSON ------------------------------------------------------------------

ENVELOPE_TEXT = long_log(300)
CODEX_OLD = json.dumps(
    {
        "output": ENVELOPE_TEXT.replace("\n", "\r\n"),
        "metadata": {"exit_code": 0, "duration_seconds": 0.4},
    }
)
CODEX_NEW = "Script completed\nWall time 0.4 seconds\nOutput:\n\n" + json.dumps(
    {"chunk_id": "a1", "wall_time_seconds": 0.4, "exit_code": 0, "output": ENVELOPE_TEXT},
    separators=(",", ":"),
)
MCP = json.dumps({"content": [{"type": "text", "text": ENVELOPE_TEXT}], "isError": False})


def _responses_with(output: str) -> dict[str, Any]:
    arguments = json.dumps({"command": ["bash", "-lc", "./run-batch"]})
    call = {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": arguments}
    return {
        "model": "gpt-5-codex",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Why did the batch fail?"}],
            },
            call,
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ],
    }


def _anthropic_with(output: str) -> dict[str, Any]:
    return build_body("anthropic", _conversation(output))


@pytest.mark.parametrize(
    "output", [CODEX_OLD, CODEX_NEW, MCP], ids=["codex-old", "codex-new", "mcp"]
)
@pytest.mark.parametrize("api", ["openai_responses", "anthropic"])
def test_an_envelope_is_shortened_inside_and_its_file_holds_the_lines_its_markers_name(
    api: str, output: str, tmp_path: Path
) -> None:
    settings = RawSettings(originals_dir=tmp_path)
    request = _responses_with(output) if api == "openai_responses" else _anthropic_with(output)
    out = rewrite_request(api, request, settings=settings)  # type: ignore[arg-type]
    assert out is not None and out.results_shortened == 1
    sent = _result_text(api, out.body)
    header = output[: output.index("{")]
    assert sent.startswith(header)  # the header as it was
    wrapped, before = json.loads(sent[len(header) :]), json.loads(output[len(header) :])
    body_key = "content" if "content" in before else "output"
    assert {k: v for k, v in wrapped.items() if k != body_key} == {
        k: v for k, v in before.items() if k != body_key
    }
    inner = wrapped["output"] if body_key == "output" else wrapped["content"][0]["text"]
    assert "ERROR disk quota exceeded on /var/data" in inner
    # the marker names a file and lines; those lines of that file are the lines left out
    match = re.search(r"full output: (\S+) lines (\d+)-(\d+)", inner)
    assert match is not None, inner[:400]
    kept = Path(match[1]).read_text(encoding="utf-8").split("\n")
    first, last = int(match[2]), int(match[3])
    offset = header.count("\n")
    assert kept[first - 1 : last] == ENVELOPE_TEXT.split("\n")[first - 1 - offset : last - offset]
    # sent again, the history is rewritten to the same bytes (nothing already sent changes)
    again = rewrite_request(api, request, settings=settings)  # type: ignore[arg-type]
    assert again is not None and _result_text(api, again.body) == sent


def _result_text(api: str, body: dict[str, Any]) -> str:
    if api == "openai_responses":
        return str(body["input"][-1]["output"])
    for message in reversed(body["messages"]):
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_result":
                content = block["content"]
                return content if isinstance(content, str) else content[0]["text"]
    raise AssertionError("no tool result")
