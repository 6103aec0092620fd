"""What a gateway plug-in does to one call: its request data rewritten as the proxy would.

A gateway such as the LiteLLM proxy parses the client's request itself and hands its plug-ins
the call's *data*: the body the client sent (``messages`` and ``tools`` in the Chat Completions
shape for ``/chat/completions``, whatever provider serves the model; the Messages shape for
``/v1/messages``; ``input`` for ``/v1/responses``) mixed with the gateway's own keys (metadata,
logging objects). :func:`rewrite_call` picks the API from the gateway's name for the call,
rewrites the message list with :func:`tokenlean.raw.rewrite_request` (through the SDK wrappers'
``rewrite_kwargs``: the same plan, the same bytes for the same history, message models dumped to
plain JSON) and gives back new data with only that list replaced. Framework-free, so the
adapters (the LiteLLM proxy plug-in, :mod:`tokenlean.litellm`) stay a few lines each.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import Enum
from typing import Any

from tokenlean.raw import Api, RawSettings
from tokenlean.raw._sdk import rewrite_kwargs

__all__ = ["CALL_APIS", "list_key", "rewrite_call"]

log = logging.getLogger("tokenlean.proxy")

#: The calls whose data is rewritten, by the name LiteLLM gives them (sync and async alike);
#: every other call (embeddings, images, audio, pass-through) goes on untouched.
CALL_APIS: Mapping[str, Api] = {
    "completion": "openai_chat",
    "acompletion": "openai_chat",
    "anthropic_messages": "anthropic",
    "aanthropic_messages": "anthropic",
    "responses": "openai_responses",
    "aresponses": "openai_responses",
}


def list_key(api: Api) -> str:
    """The body's list of conversation items."""
    if api == "gemini":
        return "contents"
    return "input" if api == "openai_responses" else "messages"


def rewrite_call(
    call_type: object, data: Mapping[str, Any], settings: RawSettings
) -> dict[str, Any] | None:
    """New data for the call, with its message list rewritten; None when nothing changed, when
    the call is not a chat call, or on any failure (logged): the call then goes on as it came.
    Never mutates ``data``."""
    api = CALL_APIS.get(str(call_type.value if isinstance(call_type, Enum) else call_type))
    if api is None or not isinstance(data, Mapping):
        return None
    key = list_key(api)
    try:
        out = rewrite_kwargs(api, key, dict(data), settings)
    except Exception as exc:  # rewrite_kwargs fails open itself; this guards the translation
        log.warning("tokenlean: could not rewrite a %s call, sent unchanged: %r", call_type, exc)
        return None
    return out if out.get(key) is not data.get(key) else None
