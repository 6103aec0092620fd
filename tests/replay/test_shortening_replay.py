"""Cache safety on every real trajectory: first-sight shortening never changes a sent byte."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from tests.data import TRAJECTORIES, needs_shared, shared_params, trajectory_paths
from tokenlean.langchain import ToolOutputShorteningMiddleware
from tokenlean.langchain._adapter import to_view
from tokenlean.replay._engine import measure_replay, replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.shorten import shorten
from tokenlean.shorten._output_settings import OutputShorteningSettings
from tokenlean.shorten._wrapped import readable
from tokenlean.tokens import DEFAULT_COUNTER, EstimateCounter
from tokenlean.transcript import Message, mark_of


def _mark(message: Any) -> Any:
    """The mark output shortening left on a LangChain message (``None`` when it left none)."""
    return mark_of(to_view([message])[0], "output_shortening")


MEASURER = PromptMeasurer(EstimateCounter())
MIN_TOKENS = OutputShorteningSettings().min_tokens
SHORTENED: dict[str, int] = {}
#: Whether a run has a tool output past the size its content kind is kept whole at (one that
#: ``shorten`` at the defaults, on its own, would change).
LONG: dict[str, bool] = {}


@pytest.mark.parametrize("path", shared_params(trajectory_paths()), ids=lambda p: p.stem[:60])
def test_no_call_changes_bytes_already_sent(path: Path) -> None:
    trajectory = load_trajectory(path)
    # read_original listed from the first call (as under a coding agent's long system prompt),
    # so results are cut for size wherever they would be: nothing already sent ever changes
    result = replay(trajectory, [ToolOutputShorteningMiddleware(offer_tool="always")])
    metrics = measure_replay(trajectory, result, MEASURER, strategy="shorten")
    assert metrics.prefix_breaks == 0, metrics.break_positions
    marked = [
        m for m in result.final_messages if isinstance(m, ToolMessage) and _mark(m) is not None
    ]
    SHORTENED[trajectory.id] = len(marked)
    assert not metrics.prefix_breaks or marked, "the tool list changed with nothing kept"
    LONG[trajectory.id] = any(
        m.role == "tool" and DEFAULT_COUNTER.count(m.text) > MIN_TOKENS and shorten(m.text).changed
        for m in trajectory.messages
    )
    for message in marked:  # each shortened result went out shortened from its first call on
        firsts = [c for c in result.calls if any(m.id == message.id for m in c.messages)]
        sent = next(m for m in firsts[0].messages if m.id == message.id)
        assert sent.content == message.content
    originals = {m.tool_call_id: m.text for m in trajectory.messages if m.role == "tool"}
    assert _pointed_back_but_never_shown(to_view(result.final_messages), originals) == []


@needs_shared
def test_shortening_happened_on_most_trajectories() -> None:
    """Shortening happens on most runs of the coding agents; the other sources differ.

    Coding agents read files, grep code and run test suites: outputs long enough to shorten on
    most runs. QA, shopping and customer-service agents (HotpotQA, WebShop, tau2) mostly see
    short, dense observations (search results, product pages, JSON records of a few hundred
    tokens) where there is little worth cutting and a cut that does not pay for itself must
    not be made (issue 11): many of their runs rightly have nothing shortened. Research and
    browser agents (GAIA, WorkArena) do see long documents and pages, but how those are cut is
    their own content kind (issue 11, point 3), so no share is pinned for them here either.
    Nor for the OpenAgents Claude Code sessions: their long outputs are mostly directives the
    agent fetched by id, kept whole as documents it asked for (a third of its runs have nothing
    else long), nor for the Codex sessions, cut into episodes at each user prompt (21 of their
    30 runs have something shortened).
    """
    if len(SHORTENED) < len(trajectory_paths()):
        pytest.skip("run with the per-trajectory replays")
    index = (json.loads(line) for line in (TRAJECTORIES / "index.jsonl").open(encoding="utf-8"))
    source_of = {row["id"]: row["file"].split("/")[0] for row in index}
    by_source: dict[str, list[int]] = {}
    for run, shortened in SHORTENED.items():
        by_source.setdefault(source_of[run], []).append(shortened)
    for source in ("miniswe_deepseek", "sweagent", "entire_claude_code", "entire_opencode_pi"):
        runs = by_source[source]
        assert sum(1 for n in runs if n) >= 0.8 * len(runs), (source, runs)


@needs_shared
def test_shortening_happened_on_most_trajectories_with_long_outputs() -> None:
    """Not vacuous: most runs with an output past every keep-whole size were shortened (runs
    of short observations, e.g. search or customer-service agents, rightly pass whole)."""
    if len(SHORTENED) < len(trajectory_paths()):
        pytest.skip("run with the per-trajectory replays")
    long_runs = [run for run, long in LONG.items() if long]
    assert len(long_runs) >= 10
    assert sum(1 for run in long_runs if SHORTENED[run]) >= 0.8 * len(long_runs)
    assert sum(1 for n in SHORTENED.values() if n) >= len(SHORTENED) / 3


#: An "already shown" marker and the lines of the original it stands for: from its hint
#: (``read_original("<handle>", "a-b")``, quotes escaped inside JSON) or, once the text has
#: named the handle, from its own ``(a-b)``.
_SHOWN = re.compile(
    r"already shown earlier omitted"
    r'(?:; \w+\(\\?"[^"\\]+\\?", \\?"(\d+)(?:-(\d+))?\\?"\)| \((\d+)(?:-(\d+))?\))'
)
#: What precedes a line's own text in a numbered view or a grep hit (``12→``, ``12\t``,
#: ``12:``, ``path:12:``, ``path-12-``); its text alone is what was shown before.
_NUMBERED = re.compile(r"^(?:\S*?[:-]\d+[:-]|\s*\d+(?:→|\t|:|-|\s{1,3}))")
#: Lines no marker needs to have shown: too short to look for, or a traceback's caret lines
#: (cut from every traceback as filler, so a run of shown frames may enclose one).
_UNCHECKED = re.compile(r"^[\s^~]*$|^.{0,3}$")


def _pointed_back_but_never_shown(
    messages: Sequence[Message], originals: dict[str | None, str]
) -> list[tuple[str | None, int, str]]:
    """The lines that "already shown earlier" markers stand for and that no message before
    the marker's holds (the result's own kept lines count too), as (call id, line, text)."""
    missing: list[tuple[str | None, int, str]] = []
    earlier: list[str] = []
    for message in messages:
        texts = [
            *_strings(message.text),
            *(t for c in message.tool_calls for t in _strings(c.args)),
        ]
        matches = list(_SHOWN.finditer(message.text)) if message.role == "tool" else []
        if matches and message.tool_call_id in originals:
            lines = readable(originals[message.tool_call_id]).split("\n")
            shown = "\n".join([*earlier, *texts])
            for match in matches:
                first = int(match[1] or match[3])
                for number in range(first, int(match[2] or match[4] or first) + 1):
                    key = _NUMBERED.sub("", lines[number - 1].rstrip("\r"), count=1).strip()
                    if not _UNCHECKED.match(key) and key not in shown:
                        missing.append((message.tool_call_id, number, key))
        earlier += texts
    return missing


def _strings(value: Any) -> list[str]:
    """A text as sent and as read (an envelope's body; a JSON document's strings), or every
    string in a tool call's arguments."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in _strings(v)]
    if isinstance(value, list):
        return [t for v in value for t in _strings(v)]
    if not isinstance(value, str):
        return [str(value)]
    texts = [value, readable(value)]
    if value.lstrip()[:1] in ("{", "["):
        with contextlib.suppress(ValueError):  # not JSON after all
            texts += _strings(json.loads(value))
    return texts
