"""Shortening the long inputs of tool calls that have already run (framework-free).

Agents write whole scripts into tool-call arguments (``python -c "..."``, ``cat > f.py <<EOF``)
and every later call re-sends them. Once the call has run, the model rarely needs the middle of
its own script again: the head shows what it was, the tail how it ended, and the output what it
did. :func:`shorten_arguments` keeps the first and last lines of each long string argument and
marks the cut with how to read the original back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenlean.tokens import EstimateCounter, TokenCounter

_COUNTER = EstimateCounter()
DEFAULT_MIN_TOKENS = 300
DEFAULT_HEAD_LINES = 12
DEFAULT_TAIL_LINES = 6


@dataclass(frozen=True, slots=True)
class ArgumentPolicy:
    """Which arguments to cut and how much of them to keep.

    A string argument is cut when it has more than ``min_tokens`` tokens and more than
    ``head_lines + tail_lines + 2`` lines; the first ``head_lines`` and last ``tail_lines`` lines
    stay, with one marker line between them.
    """

    min_tokens: int = DEFAULT_MIN_TOKENS
    head_lines: int = DEFAULT_HEAD_LINES
    tail_lines: int = DEFAULT_TAIL_LINES

    def __post_init__(self) -> None:
        for name in ("min_tokens", "head_lines", "tail_lines"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")


@dataclass(frozen=True, slots=True)
class CutArgument:
    """One argument that was cut: its key, original text and what it costs before/after."""

    key: str
    handle: str
    original: str
    tokens_before: int
    tokens_after: int


def argument_handle(call_id: str, key: str, text: str) -> str:
    """A short deterministic handle for one argument's original."""
    digest = hashlib.sha256(f"{call_id}\n{key}\n{text}".encode("utf-8", "surrogatepass"))
    return "i" + digest.hexdigest()[:6]


def marker(omitted: int, handle: str, tool: str | None) -> str:
    """The line that stands for the ``omitted`` middle lines (names ``tool`` when there is one)."""
    how = f'{tool}("{handle}")' if tool else f'kept as "{handle}"'
    return f"[... {omitted} lines of this input omitted after the call ran; {how} shows them ...]"


def shorten_arguments(
    call_id: str,
    args: Mapping[str, Any],
    *,
    policy: ArgumentPolicy,
    retrieval_tool: str | None = None,
    counter: TokenCounter = _COUNTER,
) -> tuple[dict[str, Any], list[CutArgument]]:
    """``args`` with long string values cut to head and tail lines, and what was cut.

    Non-string values and short strings are returned as they are; the input is never mutated.
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
        handle = argument_handle(call_id, key, value)
        omitted = len(lines) - keep
        tail = lines[len(lines) - policy.tail_lines :] if policy.tail_lines else []
        text = "\n".join(
            [*lines[: policy.head_lines], marker(omitted, handle, retrieval_tool), *tail]
        )
        after = counter.count(text)
        if after >= before:
            continue
        out[key] = text
        cuts.append(CutArgument(key, handle, value, before, after))
    return out, cuts
