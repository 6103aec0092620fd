"""The planner every way in calls: inputs before outputs, read-backs, and a memo that is a cache."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenlean.cost import ANTHROPIC, OPENAI, OPENAI_PAID_WRITES, CachePricing, floor_pays
from tokenlean.pipeline import Planner, PlannerSettings, plan_turn
from tokenlean.readback import (
    TOOL_READ_BACK,
    FileReadBack,
    ToolReadBack,
    name_handle,
    point_to_file,
)
from tokenlean.shorten import InputShorteningSettings, OutputShorteningSettings
from tokenlean.store import FolderOriginalStore, Original, make_handle
from tokenlean.tokens import DEFAULT_COUNTER, message_tokens
from tokenlean.transcript import Message, ToolCall

SCRIPT = "\n".join(
    f"print('step {i}: partial sums for shard {i} of the nightly job')" for i in range(60)
)
LOG = "\n".join(
    [
        *(f"PASSED tests/test_mod_{i}.py::test_case_{i}" for i in range(300)),
        "FAILED tests/test_x.py",
    ]
)
INPUTS = InputShorteningSettings(min_tokens=50, head_lines=4, tail_lines=2)
OUTPUTS = OutputShorteningSettings(min_tokens=50)


def _turn(result: str = LOG) -> list[Message]:
    call = ToolCall("c1", "bash", {"command": SCRIPT})
    return [
        Message(role="user", content="Why does the nightly job fail?"),
        Message(role="assistant", content="Running it.", tool_calls=(call,), id="a1"),
        Message(role="tool", content=result, tool_call_id="c1", name="bash", id="t1"),
    ]


def test_a_turn_cuts_its_inputs_then_shortens_its_results() -> None:
    plan = plan_turn(_turn(), inputs=INPUTS, outputs=OUTPUTS, read_back=TOOL_READ_BACK)
    (cut,) = plan.inputs.edits
    command = cut.tool_args["c1"]["command"]
    assert command.count("\n") == INPUTS.head_lines + INPUTS.tail_lines  # one marker between
    assert 'read_original("i' in command
    (shortened,) = plan.outputs.edits
    assert "FAILED tests/test_x.py" in str(shortened.new_content)
    assert shortened.index == 2 and cut.index == 1


def test_the_output_shortener_sees_the_inputs_as_cut() -> None:
    """A result that echoes the script repeats lines the model will no longer see once the
    input is cut: they are not pointed to as already shown."""
    echoed = SCRIPT + "\n" + LOG
    with_inputs = plan_turn(_turn(echoed), inputs=INPUTS, outputs=OUTPUTS, read_back=TOOL_READ_BACK)
    without = plan_turn(_turn(echoed), outputs=OUTPUTS, read_back=TOOL_READ_BACK)
    middle = "print('step 30: partial sums for shard 30 of the nightly job')"
    assert middle not in str(without.outputs.edits[0].new_content)  # pointed to as shown
    assert middle in str(with_inputs.outputs.edits[0].new_content)  # no longer shown: kept


@pytest.mark.parametrize("read_back", [None, ToolReadBack(None)])
def test_nothing_is_cut_where_the_agent_has_no_way_back(read_back: ToolReadBack | None) -> None:
    """No tool to name (nothing kept, or only a handle): neither the input nor the result is
    cut, since no marker could say how to get the rest."""
    plan = plan_turn(_turn(), inputs=INPUTS, outputs=OUTPUTS, read_back=read_back)
    assert plan.inputs.edits == () and plan.outputs.edits == ()


@pytest.mark.parametrize("read_back", [None, ToolReadBack(None)])
def test_with_no_way_back_only_what_the_prompt_still_shows_is_left_out(
    read_back: ToolReadBack | None,
) -> None:
    """A second log repeating most lines of the first (but not all of it): the lines the model
    was shown are pointed to, and the markers name no tool, no handle and no file; nothing is
    cut for size, so the new lines all stay."""
    rerun = LOG.replace("FAILED tests/test_x.py", "FAILED tests/test_y.py")
    call = ToolCall("c2", "bash", {"command": "pytest -q"})
    window = [
        *_turn(),
        Message(role="assistant", content="Again.", tool_calls=(call,), id="a2"),
        Message(role="tool", content=rerun, tool_call_id="c2", name="bash", id="t2"),
    ]
    shown = plan_turn(window[:3], outputs=OUTPUTS, read_back=read_back)
    assert shown.outputs.edits == ()  # nothing shown before: the first log goes whole
    (edit,) = plan_turn(window, outputs=OUTPUTS, read_back=read_back).outputs.edits
    text = str(edit.new_content)
    assert "lines already shown earlier omitted ...]" in text and "FAILED tests/test_y.py" in text
    assert "read_original" not in text and '"o' not in text and "lines 1-" not in text
    assert len(text) < len(rerun) // 4


def test_a_tool_read_back_names_handles_and_changes_nothing_else() -> None:
    read_back = ToolReadBack("fetch_original")
    plan = plan_turn(_turn(), outputs=OUTPUTS, read_back=read_back)
    (original,) = plan.outputs.originals
    assert original.handle == make_handle("o", "c1", LOG)
    assert read_back.keep(original, "any") is original
    assert 'fetch_original("' in str(plan.outputs.edits[0].new_content)


def test_a_file_read_back_points_to_a_file_named_by_content(tmp_path: Path) -> None:
    read_back = FileReadBack(FolderOriginalStore(tmp_path))
    plan = plan_turn(_turn(), inputs=INPUTS, outputs=OUTPUTS, read_back=read_back)
    text = str(plan.outputs.edits[0].new_content)
    path = tmp_path / f"{make_handle('o', LOG)}.txt"
    assert f"full output: {path}" in text and "read_original" not in text
    command = plan.inputs.edits[0].tool_args["c1"]["command"]
    assert f"full input: {tmp_path / make_handle('o', SCRIPT)}.txt lines 5-58" in command
    kept = read_back.keep(plan.outputs.originals[0], LOG)
    assert kept == Original(make_handle("o", LOG), LOG)


def test_point_to_file_names_the_file_once() -> None:
    text = 'a; read_original("o1", "2-3") b; read_original("o1", "7") c; read_original("o2")'
    assert point_to_file(text, "o1", "/f.txt") == (
        'a; full output: /f.txt lines 2-3 b; full output line 7 c; read_original("o2")'
    )


def _one_handle_hints(text: str, handle: str, served: str) -> str:
    """What ``name_handle`` did with a pattern compiled for each handle (the reference)."""
    hint = re.compile(
        rf'read_original\((\\?)"{re.escape(handle)}\1"(?:, \1"(\d+)(?:-(\d+))?\1")?\)'
    )
    return hint.sub(lambda m: m[0].replace(handle, served), text)


_HANDLES = st.sampled_from(["o1", "o22", "i1", 'w"x', "a b", "o"])
_HINTS = st.builds(
    lambda q, handle, lines, end: f'read_original({q}"{handle}{q}"{lines}{end}',
    st.sampled_from(["", "\\"]),
    _HANDLES,
    st.sampled_from(["", ', "3"', ', "3-17"', ', \\"2-5\\"', ", 3"]),
    st.sampled_from([")", "", " )"]),
)


@given(
    pieces=st.lists(
        st.one_of(_HINTS, _HANDLES, st.sampled_from(["x", '"', "\\", ")"])), max_size=12
    ),
    handle=_HANDLES,
)
def test_hints_are_found_for_one_handle_as_a_pattern_per_handle_found_them(
    pieces: list[str], handle: str
) -> None:
    text = "".join(pieces)
    assert name_handle(text, handle, "o9") == _one_handle_hints(text, handle, "o9")


@pytest.mark.parametrize("read_back", ["file", "none"])
def test_a_plans_token_counts_are_those_of_the_history_before_and_after_it(
    tmp_path: Path, read_back: str
) -> None:
    """The counts a plan reuses from the shortener equal counting every message again."""
    history: list[Message] = []
    for n in range(3):  # three turns: each cuts its input and shortens its (distinct) log
        for m in _turn(LOG + f"\nrun {n}"):
            history.append(replace(m, id=f"{m.id}-{n}" if m.id else None))
        history[-1] = replace(history[-1], tool_call_id=f"c{n}")
        history[-2] = replace(
            history[-2], tool_calls=(ToolCall(f"c{n}", "bash", {"command": SCRIPT}),)
        )
    store = FileReadBack(FolderOriginalStore(tmp_path)) if read_back == "file" else None
    settings = PlannerSettings(outputs=OUTPUTS, inputs=INPUTS, read_back=store, counter=None)
    plan = Planner(settings).plan(history)
    assert plan.edits  # something was cut
    after = list(history)
    for h in plan.edits:
        edit, message = h.edit, after[h.edit.index]
        if edit.tool_args:
            calls = tuple(
                ToolCall(c.id, c.name, edit.tool_args.get(c.id, c.args)) for c in message.tool_calls
            )
            after[edit.index] = replace(message, tool_calls=calls)
        else:
            after[edit.index] = replace(message, content=edit.new_content)
    assert plan.tokens_before == sum(message_tokens(m, DEFAULT_COUNTER) for m in history)
    assert plan.tokens_after == sum(message_tokens(m, DEFAULT_COUNTER) for m in after)


def test_a_cold_planner_plans_what_a_warm_one_did(tmp_path: Path) -> None:
    settings = PlannerSettings(
        outputs=OUTPUTS,
        inputs=INPUTS,
        read_back=FileReadBack(FolderOriginalStore(tmp_path)),
        counter=None,
    )
    history = [*_turn(), Message(role="assistant", content="The x test fails.", id="a2")]
    warm, cold = Planner(settings), Planner(settings)
    warm.plan(history[:3])
    assert warm.plan(history) == cold.plan(history)
    warm.forget()
    assert warm.plan(history) == cold.plan(history)


# -- the minimum cacheable prompt -------------------------------------------------------------
# A prompt under the provider's minimum is cached by nobody: a cut that takes one under it costs
# the next call its cache hit (tapeagents_gaia billed 1.006 of none at OpenAI's paid writes).


def _log(lines: int) -> str:
    return "\n".join(
        [*(f"PASSED tests/test_mod_{i}.py::test_case_{i}" for i in range(lines)), "FAILED t.py"]
    )


def _short_turn(lines: int) -> list[Message]:
    call = ToolCall("c1", "bash", {"command": "pytest"})
    return [
        Message(role="user", content="Why does it fail?"),
        Message(role="assistant", content="Running it.", tool_calls=(call,), id="a1"),
        Message(role="tool", content=_log(lines), tool_call_id="c1", name="bash", id="t1"),
    ]


def _priced(pricing: CachePricing) -> OutputShorteningSettings:
    return OutputShorteningSettings(min_tokens=50, pricing=pricing)


def test_a_cut_that_may_take_the_prompt_under_the_minimum_is_made_only_when_it_pays() -> None:
    small, large = _short_turn(80), _short_turn(160)  # about 1,400 and 2,700 tokens
    under_openai = plan_turn(small, outputs=_priced(OPENAI), read_back=TOOL_READ_BACK)
    assert not under_openai.outputs.edits  # ~1,300 saved, ~100 left: not worth the next hit
    assert plan_turn(small, outputs=_priced(ANTHROPIC), read_back=TOOL_READ_BACK).outputs.edits
    ahead = plan_turn(small, outputs=_priced(OPENAI), read_back=TOOL_READ_BACK, before=1024)
    assert ahead.outputs.edits  # the prompt stays over the minimum whatever the cut
    assert plan_turn(large, outputs=_priced(OPENAI), read_back=TOOL_READ_BACK).outputs.edits


def test_floor_pays_weighs_the_worst_prompt_under_the_minimum() -> None:
    assert floor_pays(ANTHROPIC, saved=10, after=0)  # no minimum
    assert floor_pays(OPENAI, saved=10, after=1024)  # stays cacheable
    need = 1024 * (1 - 0.1 + 1.0 - 0.1) / (1.0 + 0.1)
    assert floor_pays(OPENAI, saved=int(need) + 1, after=0)
    assert not floor_pays(OPENAI, saved=int(need) - 1, after=0)
    paid = 1024 * (1 - 0.1 + 1.25 - 0.1) / (1.25 + 0.1)  # the uncut prompt pays its write too
    assert floor_pays(OPENAI_PAID_WRITES, saved=int(paid) + 1, after=0)
    assert not floor_pays(OPENAI_PAID_WRITES, saved=int(paid) - 1, after=0)


def test_the_planner_counts_the_history_ahead_of_each_turn(tmp_path: Path) -> None:
    settings = PlannerSettings(
        outputs=_priced(OPENAI),
        inputs=None,
        read_back=FileReadBack(FolderOriginalStore(tmp_path)),
        counter=None,
    )
    brief = Message(role="user", content="The task, in full: " + "keep every line. " * 400)
    alone, behind = (
        _short_turn(80),
        [brief, Message(role="assistant", content="ok"), *_short_turn(80)],
    )
    assert not Planner(settings).plan(alone).edits
    assert Planner(settings).plan(behind).edits
    warm = Planner(settings)  # resumed from a checkpoint, the history ahead is still counted
    warm.plan(behind[:3])
    assert warm.plan(behind).edits == Planner(settings).plan(behind).edits
