"""tokenlean's shortening applied to raw provider request bodies (for proxies and SDK wrappers).

::

    from tokenlean.raw import RawSettings, rewrite_request

    result = rewrite_request("anthropic", body, settings=RawSettings())
    send(result.body if result is not None else body)

:func:`rewrite_request` shortens the tool results and the long inputs of past tool calls in a
Messages API (``"anthropic"``), Chat Completions (``"openai_chat"``), Responses
(``"openai_responses"``) or Gemini ``generateContent`` / ``streamGenerateContent``
(``"gemini"``, the same body) body, the way the LangChain middleware does at first sight. It is
stateless: each message is rewritten from the messages before it and the settings alone, so a
client that re-sends its raw history every turn gets the same bytes upstream every turn and
the provider's prompt cache keeps hitting; any number of processes agree. Originals are written
to ``originals_dir`` and every omission marker names the file and line range to read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenlean._caches import BoundedLru, content_key
from tokenlean._identity import ByIdentity
from tokenlean.history import Keeping, rewrite_history
from tokenlean.raw import _anthropic as anthropic
from tokenlean.raw import _gemini as gemini
from tokenlean.raw import _openai_chat as openai_chat
from tokenlean.raw import _openai_responses as openai_responses
from tokenlean.raw._reading import frozen_bodies
from tokenlean.raw._view import FROZEN, RawView, Write, apply, strip_cache_control
from tokenlean.settings import RawSettings, Retrieval
from tokenlean.store import RETRIEVAL_TOOL
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter
from tokenlean.transcript import Edit

__all__ = [
    "CALL_APIS",
    "Api",
    "RawSettings",
    "Retrieval",
    "RewriteResult",
    "frozen_bodies",
    "install",
    "list_key",
    "patch_arguments",
    "rewrite_call",
    "rewrite_kwargs",
    "rewrite_request",
    "strip_cache_control",
    "wrap_client",
]

logger = logging.getLogger(__name__)

Api = Literal["anthropic", "openai_chat", "openai_responses", "gemini"]
_READERS: dict[str, Callable[[Mapping[str, Any]], RawView | None]] = {
    "anthropic": anthropic.read,
    "openai_chat": openai_chat.read,
    "openai_responses": openai_responses.read,
    "gemini": gemini.read,
}


@dataclass(frozen=True)
class RewriteResult:
    """A rewritten body and what it saved.

    Tokens are estimated over the whole request (messages, system prompt, instructions, tools),
    before and after; the counts are of the tool results and tool calls shortened in it (the
    same ones again on every request that re-sends them).
    """

    body: dict[str, Any]
    tokens_before: int
    tokens_after: int
    results_shortened: int
    inputs_shortened: int


def rewrite_request(
    api: Api, body: Mapping[str, Any], *, settings: RawSettings
) -> RewriteResult | None:
    """``body`` with its tool results and past tool inputs shortened; ``None`` when nothing
    changed. Never mutates ``body``; never raises on a body it cannot read (that is ``None``
    too, and so is any failure inside the rewrite, which is logged)."""
    reader = _READERS.get(api)
    if reader is None:
        raise ValueError(f"api must be one of {sorted(_READERS)}, got {api!r}")
    if not isinstance(settings, RawSettings):
        raise ValueError(f"settings must be a RawSettings, got {settings!r}")
    if not isinstance(body, Mapping):
        return None
    served = settings.retrieval != "mcp" or _lists_retrieval(body.get("tools"))
    kept = Keeping(settings.planner, settings.store, None, unoffered=settings.unserved)
    failure = ("tokenlean could not rewrite a %s request; sent unchanged", api)
    done = rewrite_history(
        _Body(reader), body, kept, logger=logger, failure=failure, offered=served
    )
    if done is None:
        return None  # the body goes upstream as it came
    extra = _other_tokens(body, settings.counter)
    written = {id(e) for e in done.written}
    unwritten = sum(e.edit.tokens_saved for e in done.plan.edits if id(e) not in written)
    return RewriteResult(
        body=dict(done.history),
        tokens_before=done.plan.tokens_before + extra,
        tokens_after=done.plan.tokens_after + unwritten + extra,
        results_shortened=sum(1 for e in done.written if e.edit.new_content is not None),
        inputs_shortened=sum(len(e.edit.tool_args) for e in done.written),
    )


@dataclass(frozen=True, slots=True)
class _Body:
    """A provider's request body as a :class:`~tokenlean.history.HistoryAdapter`."""

    reader: Callable[[Mapping[str, Any]], RawView | None]

    def read(self, body: Mapping[str, Any]) -> RawView | None:
        return self.reader(body)

    def writable(self, edit: Edit, view: RawView, body: Mapping[str, Any]) -> bool:
        if edit.new_content is not None:
            return edit.index in view.results
        return all((edit.index, call_id) in view.calls for call_id in edit.tool_args)

    def apply(
        self, body: Mapping[str, Any], view: RawView, edits: Sequence[Edit]
    ) -> dict[str, Any]:
        return apply(body, view, _writes(edits))


def _lists_retrieval(tools: object) -> bool:
    """Whether a request's tool list holds a tool reading originals back: ``read_original``,
    however a client names an MCP server's tool (``mcp__tokenlean__read_original``), in any
    provider's shape (a name, a function's name, Gemini's function declarations)."""
    if not isinstance(tools, list):
        return False
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        names = [tool.get("name"), function.get("name") if isinstance(function, Mapping) else None]
        for key in ("functionDeclarations", "function_declarations"):
            declared = tool.get(key)
            if isinstance(declared, list):
                names += [d.get("name") for d in declared if isinstance(d, Mapping)]
        if any(isinstance(n, str) and n.endswith(RETRIEVAL_TOOL) for n in names):
            return True
    return False


def _writes(edits: Sequence[Edit]) -> list[Write]:
    out: list[Write] = []
    for edit in edits:
        if isinstance(edit.new_content, str):
            out.append(Write(edit.index, text=edit.new_content))
        out += [Write(edit.index, call_id=k, args=v) for k, v in edit.tool_args.items()]
    return out


_OTHER_KEYS = ("system", "instructions", "systemInstruction", "system_instruction", "tools")


#: The estimate of what a frozen body sends besides the messages, kept by the last of those
#: values (``tools`` when there are any): the proxy's scanner gives a re-sent body's long
#: ``system`` and ``tools`` as the very objects of the last time, so they are not serialised
#: and counted again on every request (about half a millisecond for Claude Code's tools).
_OTHER: ByIdentity[tuple[tuple[str, ...], tuple[Any, ...], TokenCounter | None, int]] = ByIdentity(
    max_entries=256, max_bytes=32 * 2**20
)


#: The same estimate for other bodies (they may be changed in place), by the values' content.
_OTHER_BY_CONTENT: BoundedLru[bytes, tuple[TokenCounter | None, int]] = BoundedLru(
    max_entries=256, max_bytes=32 * 2**20
)


def _other_tokens(body: Mapping[str, Any], counter: TokenCounter | None) -> int:
    """Estimated tokens of what is sent besides the messages (system, instructions, tools)."""
    parts = {key: body[key] for key in _OTHER_KEYS if key in body}
    if not parts:
        return 0
    if FROZEN.get():
        return _frozen_other_tokens(parts, counter)
    key = content_key(parts)
    found = None if key is None else _OTHER_BY_CONTENT.get(key)
    if found is not None and found[0] is counter:
        return found[1]
    _, tokens = _counted(parts, counter)
    if key is not None:
        _OTHER_BY_CONTENT.put(key, (counter, tokens), 256 + len(key))
    return tokens


def _frozen_other_tokens(parts: dict[str, Any], counter: TokenCounter | None) -> int:
    """:func:`_other_tokens` of a frozen body's values, kept by the very objects."""
    keys, values = tuple(parts), tuple(parts.values())
    kept = _OTHER.get(values[-1])
    if kept is not None and kept[0] == keys and kept[2] is counter and _same(kept[1], values):
        return kept[3]
    text, tokens = _counted(parts, counter)
    # charged for the values it keeps alive, about three times their JSON
    _OTHER.put(values[-1], (keys, values, counter, tokens), 256 + 3 * len(text))
    return tokens


def _counted(parts: dict[str, Any], counter: TokenCounter | None) -> tuple[str, int]:
    """The JSON text of ``parts`` and its estimated tokens."""
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return text, (counter or DEFAULT_COUNTER).count(text)


def _same(kept: tuple[Any, ...], values: tuple[Any, ...]) -> bool:
    """The very objects, or equal strings (a short one is a new object on every request)."""
    return all(a is b or (type(a) is str and a == b) for a, b in zip(kept, values, strict=True))


# These build on RawSettings and rewrite_request above, so they are imported once both exist.
from tokenlean.raw._gateway import CALL_APIS, list_key, rewrite_call  # noqa: E402
from tokenlean.raw._genai import wrap_client  # noqa: E402
from tokenlean.raw._openai_responses import patch_arguments  # noqa: E402
from tokenlean.raw._sdk import install, rewrite_kwargs  # noqa: E402
