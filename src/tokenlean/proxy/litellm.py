"""tokenlean inside a LiteLLM proxy: the team's gateway serves and scales, tokenlean shortens.

In the LiteLLM proxy's ``config.yaml``::

    litellm_settings:
      callbacks: tokenlean.proxy.litellm.callback

Before each chat call (``/chat/completions`` to any provider, ``/v1/messages``,
``/v1/responses``) the callback rewrites the call's messages exactly as ``tokenlean proxy``
rewrites a request body (:mod:`tokenlean.proxy._gateway`): tool results shortened at first
sight, long inputs of calls that have run cut, the same bytes for the same history on every
call and in every worker, so the provider's prompt cache keeps hitting. Originals go to the
default folder (``$XDG_CACHE_HOME/tokenlean/originals``); for other settings, make your own
instance in a module of yours (``handler = TokenleanCallback(settings=RawSettings(...))``) and
name that in ``callbacks``. Any failure is logged and the call goes on unchanged. Needs the
``litellm`` extra: ``pip install 'tokenlean[litellm]'``.

A/B arms, as ``tokenlean proxy --ab SHARE``: with ``ab`` (or ``$TOKENLEAN_AB`` for the instance
above) that share of sessions go on exactly as the client sent them (control), the others are
rewritten; a session's arm is a hash of its label keyed by ``salt`` (``$TOKENLEAN_PROXY_SALT``),
the same in every worker and in a tokenlean proxy given the same salt. Each arm's figures are
kept in the proxy's own book (:mod:`tokenlean.proxy._arms`), from the usage LiteLLM reports for
each answer (its standard logging payload, given to the success and failure hooks): each call
priced by the model LiteLLM sent it to (an alias names no price; a model the genai-prices
catalogue does not know at its provider's preset, said once). A session idle ``ab_idle``
seconds (``$TOKENLEAN_AB_IDLE``), or open when the process exits, is one JSON line appended to
``ab_log`` (``$TOKENLEAN_AB_LOG``; for the instance above, by default
``$XDG_CACHE_HOME/tokenlean/ab-sessions.jsonl``), which ``tokenlean ab report`` reads beside
the proxies' logs.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from tokenlean import checks
from tokenlean.prices import pricing_for
from tokenlean.proxy._ab import Arm, NewestTurn, arm_of, newest_turn
from tokenlean.proxy._arms import ArmBook, priced_request
from tokenlean.proxy._sessions import session_key
from tokenlean.proxy._settings import AB_IDLE, MAX_SESSIONS
from tokenlean.proxy._usage import Usage, litellm_usage
from tokenlean.raw import CALL_APIS, Api, RawSettings, rewrite_call
from tokenlean.store import default_originals_dir

__all__ = [
    "AB_ENV",
    "AB_IDLE_ENV",
    "AB_LOG_ENV",
    "SALT_ENV",
    "TokenleanCallback",
    "callback",
]

AB_ENV = "TOKENLEAN_AB"
AB_LOG_ENV = "TOKENLEAN_AB_LOG"
AB_IDLE_ENV = "TOKENLEAN_AB_IDLE"
SALT_ENV = "TOKENLEAN_PROXY_SALT"
#: Calls rewritten (or not) and not yet answered: at most this many are remembered, the oldest
#: forgotten first (an answer LiteLLM never logs must not grow the table for good).
MAX_PENDING = 10_000
#: LiteLLM's provider names, as the price catalogue knows them (others: told by the model name).
_PROVIDERS: Mapping[str, str] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "text-completion-openai": "openai",
    "gemini": "google",
    "vertex_ai": "google",
}

log = logging.getLogger("tokenlean.proxy")


@dataclass(frozen=True, slots=True)
class _Call:
    """A call the pre-call hook saw: its session, what its newest turn holds, when it came."""

    label: str
    api: Api
    turn: NewestTurn
    started: float


class TokenleanCallback(CustomLogger):
    """A LiteLLM callback whose pre-call hook applies tokenlean's rewrite (module docstring)."""

    def __init__(
        self,
        *,
        settings: RawSettings | None = None,
        ab: float | None = None,
        salt: str = "",
        ab_log: str | Path | None = None,
        ab_idle: float = AB_IDLE,
    ) -> None:
        super().__init__()
        self.settings = settings if settings is not None else RawSettings()
        self.ab = None if ab is None else checks.number(ab, "ab", at_least=0, at_most=1)
        if ab is not None and not salt:
            raise ValueError(f"ab needs a salt every worker shares (salt=, or ${SALT_ENV})")
        checks.number(ab_idle, "ab_idle", above=0, wanted="a positive number of seconds")
        self._salt = salt.encode()
        path = None if ab_log is None else Path(ab_log)
        self.book = None if self.ab is None else _book(self.ab, path, ab_idle)
        self._calls: OrderedDict[str, _Call] = OrderedDict()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if self.book is not None:
            _start_sweeping(self.book, min(ab_idle, 60.0), self._stop)
            atexit.register(self.close)  # the sessions still open are logged as the worker ends

    def arm(self, call_type: Any, data: dict[str, Any]) -> Arm:
        """The arm of the session this call belongs to (``tokenlean`` without an A/B test)."""
        api = _api(call_type)
        if self.ab is None or api is None:
            return "tokenlean"
        return arm_of(self._label(api, data), self.ab)

    def _label(self, api: Api, data: Mapping[str, Any]) -> str:
        return session_key(api, {}, data, salt=self._salt)[0]

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """The call's data with its messages rewritten, or None to leave it as it is."""
        try:
            if self._arm_of_call(call_type, data) == "control":
                return None
            # Off the event loop: a long history takes milliseconds to plan, and the gateway
            # serves every other call on that loop meanwhile.
            return await asyncio.to_thread(rewrite_call, call_type, data, self.settings)
        except Exception as exc:  # never fail the call: LiteLLM would answer it with an error
            log.warning("tokenlean: LiteLLM pre-call rewrite failed, sent unchanged: %r", exc)
            return None

    def _arm_of_call(self, call_type: Any, data: Mapping[str, Any]) -> Arm:
        """The call's arm; in an A/B test, the call is remembered for its answer's figures."""
        api = _api(call_type)
        if self.book is None or api is None:
            return "tokenlean"
        label = self._label(api, data)
        call_id = data.get("litellm_call_id")
        if isinstance(call_id, str):
            with self._lock:
                self._calls[call_id] = _Call(label, api, newest_turn(api, data), time.monotonic())
                while len(self._calls) > MAX_PENDING:
                    self._calls.popitem(last=False)
        return self.book.arm(label)

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end: Any) -> None:
        self._answered(kwargs, failed=False)

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end: Any) -> None:
        self._answered(kwargs, failed=True)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if self.book is not None:  # off the event loop: a price looked up, a session written
            await asyncio.to_thread(self._answered, kwargs, failed=False)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if self.book is not None:
            await asyncio.to_thread(self._answered, kwargs, failed=True)

    def _answered(self, kwargs: Any, *, failed: bool) -> None:
        """Count one answered call in its arm's book (a call the pre-call hook saw)."""
        try:
            payload = _payload(kwargs)
            call = self._take(kwargs.get("litellm_call_id") or payload.get("litellm_call_id"))
            if call is None or self.book is None:
                return
            model, provider = _model(payload, kwargs)
            pricing = pricing_for(model, provider=_PROVIDERS.get(provider))
            usage = None if failed else _usage(payload)
            status = _status(kwargs.get("exception")) if failed else 200
            seconds = time.monotonic() - call.started
            one = priced_request(usage, pricing, status, call.turn, seconds)
            self.book.observe(call.label, call.api, model, one)
        except Exception as exc:  # the figures are tokenlean's own trouble: the call went on
            log.warning("tokenlean: LiteLLM A/B figures not counted: %r", exc)

    def _take(self, call_id: Any) -> _Call | None:
        if not isinstance(call_id, str):
            return None
        with self._lock:
            return self._calls.pop(call_id, None)

    def close(self) -> None:
        """Stop sweeping and log every session still open (done when the process exits)."""
        self._stop.set()
        atexit.unregister(self.close)
        if self.book is not None:
            self.book.close()


def _api(call_type: Any) -> Api | None:
    name = str(call_type.value if isinstance(call_type, Enum) else call_type)
    return CALL_APIS.get(name)


def _model(payload: Mapping[str, Any], kwargs: Mapping[str, Any]) -> tuple[str, str]:
    """The model a call went to, without LiteLLM's ``provider/`` prefix, and its provider."""
    model = str(payload.get("model") or kwargs.get("model") or "")
    provider = str(payload.get("custom_llm_provider") or "")
    return model.removeprefix(f"{provider}/") if provider else model, provider


def _book(share: float, path: Path | None, idle: float) -> ArmBook:
    return ArmBook(share, path, idle=idle, max_sessions=MAX_SESSIONS)


def _start_sweeping(book: ArmBook, every: float, stop: threading.Event) -> None:
    """Finish the sessions idle long enough even while no call comes (as the proxy's ticks)."""

    def sweep() -> None:
        while not stop.wait(every):
            try:
                book.sweep()
            except Exception as exc:  # a log that cannot be written stops nothing
                log.warning("tokenlean: LiteLLM A/B sessions not swept: %r", exc)

    threading.Thread(target=sweep, name="tokenlean-ab-sweep", daemon=True).start()


def _payload(kwargs: Any) -> Mapping[str, Any]:
    """LiteLLM's standard logging payload of a call (its documented, provider-neutral view)."""
    payload = kwargs.get("standard_logging_object") if isinstance(kwargs, Mapping) else None
    return payload if isinstance(payload, Mapping) else {}


def _usage(payload: Mapping[str, Any]) -> Usage | None:
    """The answer's usage, from the usage object of LiteLLM's payload."""
    metadata = payload.get("metadata")
    return litellm_usage(metadata.get("usage_object") if isinstance(metadata, Mapping) else None)


def _status(exception: Any) -> int:
    """The HTTP status of a failed call (500 when the error names none)."""
    status = getattr(exception, "status_code", None)
    return status if isinstance(status, int) and status >= 400 else 500


def _from_environment() -> TokenleanCallback:
    share = os.environ.get(AB_ENV)
    if not share:
        return TokenleanCallback(salt=os.environ.get(SALT_ENV, ""))
    log_path = os.environ.get(AB_LOG_ENV) or default_originals_dir().parent / "ab-sessions.jsonl"
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    idle = float(os.environ.get(AB_IDLE_ENV) or AB_IDLE)
    salt = os.environ.get(SALT_ENV, "")
    return TokenleanCallback(ab=float(share), salt=salt, ab_log=log_path, ab_idle=idle)


#: The instance a LiteLLM config names (``callbacks: tokenlean.proxy.litellm.callback``).
callback = _from_environment()
