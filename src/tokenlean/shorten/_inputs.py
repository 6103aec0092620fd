"""Shortening the long inputs of tool calls that have already run (framework-free).

Agents write whole scripts into tool-call arguments (``python -c "..."``, ``cat > f.py <<EOF``)
and every later call re-sends them. Once the call has run, the model rarely needs the middle of
its own script again: the head shows what it was, the tail how it ended, and the output what it
did. :func:`shorten_arguments` keeps the first and last lines of each long string argument and
marks the cut with how to read the original back. :func:`plan_inputs` is the core of
:class:`~tokenlean.langchain.ToolInputShorteningMiddleware` and of the raw API adapters: it cuts
the inputs of the newest assistant turn once its calls have results, before the turn is first
sent back, so the model only ever sees the short form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenlean import checks
from tokenlean.readback import NO_TOOL_READ_BACK, TOOL_READ_BACK, ReadBack, ToolReadBack
from tokenlean.shorten._firstsight import last_assistant
from tokenlean.shorten._output_settings import tool_names
from tokenlean.store import Original, make_handle
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter
from tokenlean.transcript import Edit, Message, mark, mark_of

__all__ = [
    "CAPABILITY",
    "RECOMMENDED_INPUTS",
    "CutArgument",
    "InputPlan",
    "InputShorteningSettings",
    "argument_handle",
    "marker",
    "plan_inputs",
    "shorten_arguments",
]

#: The name under which input shortening marks the turns it rewrote.
CAPABILITY = "input_shortening"


@dataclass(frozen=True, slots=True, kw_only=True)
class InputShorteningSettings:
    """Which arguments to cut and how much of them to keep; every default lives here.

    A string argument is cut when it has more than ``min_tokens`` tokens and more than
    ``head_lines + tail_lines + 2`` lines; the first ``head_lines`` and last ``tail_lines`` lines
    stay, with one marker line between them. ``never`` names tools whose inputs are never cut.
    """

    min_tokens: int = 300
    head_lines: int = 12
    tail_lines: int = 6
    never: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name in ("min_tokens", "head_lines", "tail_lines"):
            checks.integer(getattr(self, name), name, at_least=0, wanted="a non-negative int")
        object.__setattr__(self, "never", tool_names("never", self.never))


@dataclass(frozen=True, slots=True)
class CutArgument:
    """One argument that was cut: its key, original text and what it costs before/after."""

    key: str
    handle: str
    original: str
    tokens_before: int
    tokens_after: int


#: The inputs policy of the recommended stack (and of the raw API rewrite): in the tuning runs
#: (``benchmarks/tune_recommended.py``) cutting at 150 tokens to 6+3 lines kept the same recall
#: as 300 tokens to 12+6 lines and billed less; this keeps a little more than that floor.
RECOMMENDED_INPUTS = InputShorteningSettings(min_tokens=200, head_lines=8, tail_lines=4)


def argument_handle(call_id: str, key: str, text: str) -> str:
    """The deterministic handle of one argument's original."""
    return make_handle("i", call_id, key, text)


def marker(omitted: int, handle: str, tool: str | None) -> str:
    """The line that stands for the ``omitted`` middle lines (names ``tool`` when there is one)."""
    return ToolReadBack(tool).input_marker(omitted, 0, handle, "")


def shorten_arguments(
    call_id: str,
    args: Mapping[str, Any],
    *,
    policy: InputShorteningSettings,
    read_back: ReadBack = NO_TOOL_READ_BACK,
    counter: TokenCounter = DEFAULT_COUNTER,
) -> tuple[dict[str, Any], list[CutArgument]]:
    """``args`` with long string values cut to head and tail lines, and what was cut.

    The marker says how to read the cut lines back (``read_back``). Non-string values and
    short strings are returned as they are; the input is never mutated.
    """
    out = dict(args)
    cuts: list[CutArgument] = []
    for key, value in args.items():
        if not isinstance(value, str):
            continue
        lines = value.split("\n")
        keep = policy.head_lines + policy.tail_lines
        if len(lines) <= keep + 2:
            continue
        before = counter.count(value)
        if before <= policy.min_tokens:
            continue
        handle = read_back.handle("i", value, call_id, key)
        omitted = len(lines) - keep
        tail = lines[len(lines) - policy.tail_lines :] if policy.tail_lines else []
        head = lines[: policy.head_lines]
        where = (omitted, policy.head_lines + 1, handle, value)
        after = counter.count(
            "\n".join([*head, read_back.input_marker(*where, final=False), *tail])
        )
        if after >= before:
            continue
        out[key] = "\n".join([*head, read_back.input_marker(*where), *tail])
        cuts.append(CutArgument(key, handle, value, before, after))
    return out, cuts


@dataclass(frozen=True, slots=True)
class InputPlan:
    """The edit of the newest turn (if any), the originals it replaces, and what was cut."""

    edits: tuple[Edit, ...] = ()
    originals: tuple[Original, ...] = ()
    cuts: tuple[CutArgument, ...] = ()
    calls: int = 0


def plan_inputs(
    window: Sequence[Message],
    policy: InputShorteningSettings,
    *,
    offset: int = 0,
    read_back: ReadBack = TOOL_READ_BACK,
) -> InputPlan:
    """Cut the long inputs of the newest assistant turn's calls that have results.

    ``window`` is the end of the transcript (from position ``offset`` on) holding that turn. A
    turn already cut, without calls, or whose call ids repeat (results could not be told
    apart) is left alone. Markers say how to read the originals back (``read_back``).
    """
    index = last_assistant(window)
    if index < 0:
        return InputPlan()
    turn = window[index]
    ids = [call.id for call in turn.tool_calls]
    if not ids or len(set(ids)) < len(ids) or mark_of(turn, CAPABILITY) is not None:
        return InputPlan()
    answered = {m.tool_call_id for m in window[index + 1 :] if m.role == "tool"}
    new_args: dict[str, dict[str, Any]] = {}
    originals: list[Original] = []
    cuts: list[CutArgument] = []
    for call in turn.tool_calls:
        if call.name in policy.never or call.id not in answered:
            continue
        args, cut = shorten_arguments(call.id, call.args, policy=policy, read_back=read_back)
        if cut:
            new_args[call.id] = args
            originals += [Original(c.handle, c.original, call.name, call.id) for c in cut]
            cuts += cut
    if not cuts:
        return InputPlan()
    before, after = sum(c.tokens_before for c in cuts), sum(c.tokens_after for c in cuts)
    entry = {"handles": [c.handle for c in cuts], "tokens_before": before, "tokens_after": after}
    edit = Edit(
        index=offset + index,
        message_id=turn.id,
        new_content=None,
        reason=f"cut {len(cuts)} long tool inputs after their calls ran",
        tokens_before=before,
        tokens_after=after,
        tool_args=new_args,
        metadata=mark(CAPABILITY, entry),
    )
    return InputPlan((edit,), tuple(originals), tuple(cuts), len(new_args))
