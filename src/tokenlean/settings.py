"""The settings every way in that re-sends a whole history shares: the raw provider bodies
(behind the proxy and the SDK wrappers), pydantic-ai's history processor and AgentScope's
middleware. Framework-free: they build the one :class:`~tokenlean.pipeline.Planner` and the
folder of originals, and adapters only take them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from tokenlean._retention import check_limits
from tokenlean.pipeline import Planner, PlannerSettings
from tokenlean.readback import FileReadBack, ServedReadBack
from tokenlean.redis_store import RedisOriginalStore, check_url
from tokenlean.shorten import (
    RECOMMENDED_INPUTS,
    InputShorteningSettings,
    OfferTool,
    OutputShorteningSettings,
    ShortenSettings,
)
from tokenlean.store import (
    ORIGINALS_MAX_AGE,
    ORIGINALS_MAX_BYTES,
    FolderOriginalStore,
    default_originals_dir,
)
from tokenlean.tokens import TokenCounter

__all__ = ["RawSettings", "Retrieval"]

#: How markers tell the agent to read an original back: ``"file"``, the file and lines (the
#: agent opens it: it runs where the folder is); ``"mcp"``, ``read_original`` and a handle (the
#: agent reads the folder, or the Redis server, through ``tokenlean mcp``, from any machine that
#: can run it).
Retrieval = Literal["file", "mcp"]
_OUTPUTS = OutputShorteningSettings()  # the output shortener's defaults, in their one place


@dataclass(frozen=True, kw_only=True)
class RawSettings:
    """How a re-sent history is shortened (:func:`tokenlean.raw.rewrite_request`, pydantic-ai,
    AgentScope); the defaults are the recommended middleware's.

    Args:
        originals_dir: where originals are written (default ``$XDG_CACHE_HOME/tokenlean/
            originals`` or ``~/.cache/tokenlean/originals``); markers name files in it.
        originals_url: keep originals on a Redis (or Valkey) server instead, ``redis://HOST:
            PORT/DB`` or ``rediss://...`` (:class:`~tokenlean.redis_store.RedisOriginalStore`;
            the password from the URL or ``$TOKENLEAN_REDIS_PASSWORD``); there is no file for a
            marker to name, so it needs ``retrieval="mcp"``.
        originals_max_bytes: the folder's (or server's) size cap; the least recently used
            originals go first (:class:`~tokenlean.store.FolderOriginalStore`, default 1 GiB).
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
        offer_tool: where a way in lists a ``read_original`` tool (pydantic-ai, AgentScope),
            ``"when_it_pays"``: from a run's first call when the tool's schema is at most
            ``start_share`` of that call's prompt, else never (:class:`~tokenlean.history.
            Offer`); ``"always"``: from every run's first call.
        start_share: the share of the first prompt under which the schema is negligible.
    """

    originals_dir: Path | None = None
    originals_url: str | None = field(default=None, repr=False)  # it may hold a password
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
    offer_tool: OfferTool = _OUTPUTS.offer_tool
    start_share: float = _OUTPUTS.start_share
    store: FolderOriginalStore | RedisOriginalStore = field(init=False, repr=False, compare=False)
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
        check_limits(self.originals_max_bytes, self.originals_max_age, prefix="originals_")
        # Built once: it counts the bytes written between sweeps.
        object.__setattr__(self, "store", self._store())
        # The planner (and its memo of histories already planned) belongs to these settings.
        object.__setattr__(self, "planner", Planner(self.policy()))
        object.__setattr__(self, "unserved", Planner(replace(self.policy(), read_back=None)))

    def _store(self) -> FolderOriginalStore | RedisOriginalStore:
        directory, limits = self.originals_dir, (self.originals_max_bytes, self.originals_max_age)
        if directory is not None and not isinstance(directory, (str, Path)):
            raise ValueError(f"originals_dir must be a path, got {directory!r}")
        if self.originals_url is not None:
            if directory is not None:
                raise ValueError("give originals_dir or originals_url, not both")
            if self.retrieval != "mcp":  # a marker naming a file would name none that exists
                raise ValueError(
                    'originals on Redis need retrieval="mcp": there is no file for a marker to '
                    "name, and `tokenlean mcp --originals redis://...` serves read_original"
                )
            url = check_url(self.originals_url)
            return RedisOriginalStore(url, max_bytes=limits[0], max_age=limits[1])
        # Resolved once: the path is part of every marker, so it must not move mid-session.
        resolved = Path(directory).expanduser() if directory is not None else None
        folder = (resolved or default_originals_dir()).absolute()
        object.__setattr__(self, "originals_dir", folder)
        return FolderOriginalStore(folder, max_bytes=limits[0], max_age=limits[1])

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
            offer_tool=self.offer_tool,
            start_share=self.start_share,
            orphans=True,  # a provider API can keep the calls server-side
        )
        inputs = replace(self.inputs, never=self.inputs.never | frozenset(self.never_inputs))
        read_back: FileReadBack | ServedReadBack | None = None
        if not self.keep_originals:
            read_back = None
        elif isinstance(self.store, FolderOriginalStore) and self.retrieval == "file":
            read_back = FileReadBack(self.store)
        else:  # "mcp" (a Redis store has no other way back: see _store)
            read_back = ServedReadBack(self.store)
        return PlannerSettings(
            outputs=outputs,
            inputs=inputs if self.shorten_inputs else None,
            read_back=read_back,
            counter=self.counter,
        )
