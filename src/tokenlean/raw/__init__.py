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
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tokenlean._failopen import fail_open
from tokenlean._retention import check_limits
from tokenlean.pipeline import HistoryEdit, Planner, PlannerSettings
from tokenlean.raw import _anthropic as anthropic
from tokenlean.raw import _gemini as gemini
from tokenlean.raw import _openai_chat as openai_chat
from tokenlean.raw import _openai_responses as openai_responses
from tokenlean.raw._view import RawView, Write, apply, strip_cache_control
from tokenlean.readback import FileReadBack, ServedReadBack
from tokenlean.shorten._firstsight import OutputShorteningSettings
from tokenlean.shorten._inputs import RECOMMENDED_INPUTS, InputShorteningSettings
from tokenlean.shorten._options import ShortenSettings
from tokenlean.store import (
    ORIGINALS_MAX_AGE,
    ORIGINALS_MAX_BYTES,
    RETRIEVAL_TOOL,
    FolderOriginalStore,
    default_originals_dir,
)
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = [
    "Api",
    "RawSettings",
    "Retrieval",
    "RewriteResult",
    "rewrite_request",
    "strip_cache_control",
]

logger = logging.getLogger(__name__)

Api = Literal["anthropic", "openai_chat", "openai_responses", "gemini"]
#: How markers tell the agent to read an original back: ``"file"``, the file and lines (the
#: agent opens it: it runs where the folder is); ``"mcp"``, ``read_original`` and a handle (the
#: agent reads the folder through ``tokenlean mcp``, from any machine that can run it).
Retrieval = Literal["file", "mcp"]
_OUTPUTS = OutputShorteningSettings()  # the output shortener's defaults, in their one place

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


@dataclass(frozen=True, kw_only=True)
class RawSettings:
    """How :func:`rewrite_request` shortens; the defaults are the recommended middleware's.

    Args:
        originals_dir: where originals are written (default ``$XDG_CACHE_HOME/tokenlean/
            originals`` or ``~/.cache/tokenlean/originals``); markers name files in it.
        originals_max_bytes: the folder's size cap; the least recently used originals go
            first (:class:`~tokenlean.store.FolderOriginalStore`, default 1 GiB).
        originals_max_age: originals unused this many seconds are deleted (default 7 days).
        keep_originals: write originals; without them nothing could be read back, so only a
            result that repeats an earlier one word for word is cut (to a pointer to it).
        retrieval: what markers name to read an original back (:data:`Retrieval`).
        min_tokens: tool results of at most this many tokens are left alone.
        options: every shortening setting (:class:`~tokenlean.shorten.ShortenSettings`).
        dedupe: point to lines the model was already shown instead of repeating them.
        min_saving: skip a shortening that saves less than this share of a result's tokens.
        only: shorten only these tools' results (``None``: every tool's).
        never: never shorten these tools' results.
        shorten_inputs: cut the long string inputs of calls that have run.
        inputs: which inputs to cut and how much to keep (head and tail lines).
        never_inputs: never cut these tools' inputs.
        counter: token counter for thresholds (default: a fast estimate).
    """

    originals_dir: Path | None = None
    originals_max_bytes: int = ORIGINALS_MAX_BYTES
    originals_max_age: float = ORIGINALS_MAX_AGE
    keep_originals: bool = True
    retrieval: Retrieval = "file"
    min_tokens: int = _OUTPUTS.min_tokens
    options: ShortenSettings = _OUTPUTS.options
    dedupe: bool = _OUTPUTS.dedupe
    min_saving: float = _OUTPUTS.min_saving
    only: Collection[str] | None = _OUTPUTS.only
    never: Collection[str] = _OUTPUTS.never
    shorten_inputs: bool = True
    inputs: InputShorteningSettings = RECOMMENDED_INPUTS
    never_inputs: Collection[str] = frozenset()
    counter: TokenCounter | None = _OUTPUTS.counter
    store: FolderOriginalStore = field(init=False, repr=False, compare=False)
    planner: Planner = field(init=False, repr=False, compare=False)
    #: The planner of requests that name no way back: with ``retrieval="mcp"``, a body whose
    #: tool list holds no ``read_original`` (the MCP server is not set up for that agent).
    unserved: Planner = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("keep_originals", "dedupe", "shorten_inputs"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.retrieval not in ("file", "mcp"):
            raise ValueError(f"retrieval must be 'file' or 'mcp', got {self.retrieval!r}")
        if isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, int):
            raise ValueError(f"min_tokens must be a non-negative int, got {self.min_tokens!r}")
        if self.min_tokens < 0:
            raise ValueError(f"min_tokens must be a non-negative int, got {self.min_tokens!r}")
        if not isinstance(self.min_saving, (int, float)) or not 0.0 <= self.min_saving < 1.0:
            raise ValueError(f"min_saving must be in [0, 1), got {self.min_saving!r}")
        if not isinstance(self.options, ShortenSettings):
            raise ValueError(f"options must be a ShortenSettings, got {self.options!r}")
        if not isinstance(self.inputs, InputShorteningSettings):
            raise ValueError(f"inputs must be an InputShorteningSettings, got {self.inputs!r}")
        if self.counter is not None and not isinstance(self.counter, TokenCounter):
            raise ValueError(f"counter must have a count(text) method, got {self.counter!r}")
        for name in ("only", "never", "never_inputs"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ValueError(f"{name} takes a collection of tool names, not a string")
            if value is not None:
                object.__setattr__(self, name, frozenset(value))
        directory = self.originals_dir
        if directory is not None and not isinstance(directory, (str, Path)):
            raise ValueError(f"originals_dir must be a path, got {directory!r}")
        # Resolved once: the path is part of every marker, so it must not move mid-session.
        resolved = Path(directory).expanduser() if directory is not None else None
        folder = (resolved or default_originals_dir()).absolute()
        object.__setattr__(self, "originals_dir", folder)
        check_limits(self.originals_max_bytes, self.originals_max_age, prefix="originals_")
        # Built once: it counts the bytes written between sweeps of the folder.
        store = FolderOriginalStore(
            folder,
            max_bytes=self.originals_max_bytes,
            max_age=self.originals_max_age,
        )
        object.__setattr__(self, "store", store)
        # The planner (and its memo of histories already planned) belongs to these settings.
        object.__setattr__(self, "planner", Planner(self.policy()))
        object.__setattr__(self, "unserved", Planner(replace(self.policy(), read_back=None)))

    def policy(self) -> PlannerSettings:
        """The core's view of these settings."""
        only = self.only
        outputs = OutputShorteningSettings(
            min_tokens=self.min_tokens,
            options=self.options,
            only=frozenset(only) if only is not None else None,
            never=frozenset(self.never),
            dedupe=self.dedupe,
            min_saving=float(self.min_saving),
            counter=self.counter,
            orphans=True,  # a provider API can keep the calls server-side
        )
        inputs = replace(self.inputs, never=self.inputs.never | frozenset(self.never_inputs))
        kind = ServedReadBack if self.retrieval == "mcp" else FileReadBack
        read_back = kind(self.store) if self.keep_originals else None
        return PlannerSettings(
            outputs=outputs,
            inputs=inputs if self.shorten_inputs else None,
            read_back=read_back,
            counter=self.counter,
        )


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
    with fail_open(logger, "tokenlean could not rewrite a %s request; sent unchanged", api):
        return _rewrite(reader, body, settings)
    return None  # the body goes upstream as it came


def _rewrite(
    reader: Callable[[Mapping[str, Any]], RawView | None],
    body: Mapping[str, Any],
    settings: RawSettings,
) -> RewriteResult | None:
    view = reader(body)
    if view is None:
        return None
    served = settings.retrieval != "mcp" or _lists_retrieval(body.get("tools"))
    plan = (settings.planner if served else settings.unserved).plan(view.messages)
    # Adapters give a slot to exactly what the core may edit; this guards that promise.
    edits = [e for e in plan.edits if _writable(e, view)]
    if not edits:
        return None
    store = settings.store
    for edit in edits:  # before the body points at them (a failure sends it unchanged)
        for original in edit.originals:
            store.put("", original)
    new_body = apply(body, view, _writes(edits))
    extra = _other_tokens(body, settings.counter)
    written = {id(e) for e in edits}
    unwritten = sum(e.edit.tokens_saved for e in plan.edits if id(e) not in written)
    return RewriteResult(
        body=new_body,
        tokens_before=plan.tokens_before + extra,
        tokens_after=plan.tokens_after + unwritten + extra,
        results_shortened=sum(1 for e in edits if e.edit.new_content is not None),
        inputs_shortened=sum(len(e.edit.tool_args) for e in edits),
    )


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


def _writable(planned: HistoryEdit, view: RawView) -> bool:
    edit = planned.edit
    if edit.new_content is not None:
        return edit.index in view.results
    return all((edit.index, call_id) in view.calls for call_id in edit.tool_args)


def _writes(edits: list[HistoryEdit]) -> list[Write]:
    out: list[Write] = []
    for edit in (planned.edit for planned in edits):
        if isinstance(edit.new_content, str):
            out.append(Write(edit.index, text=edit.new_content))
        out += [Write(edit.index, call_id=k, args=v) for k, v in edit.tool_args.items()]
    return out


_OTHER_KEYS = ("system", "instructions", "systemInstruction", "system_instruction", "tools")


def _other_tokens(body: Mapping[str, Any], counter: TokenCounter | None) -> int:
    """Estimated tokens of what is sent besides the messages (system, instructions, tools)."""
    parts = {key: body[key] for key in _OTHER_KEYS if key in body}
    if not parts:
        return 0
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return (counter or DEFAULT_COUNTER).count(text)
