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
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from tokenlean.raw import RawSettings, rewrite_call

__all__ = ["TokenleanCallback", "callback"]

log = logging.getLogger("tokenlean.proxy")


class TokenleanCallback(CustomLogger):
    """A LiteLLM callback whose pre-call hook applies tokenlean's rewrite (module docstring)."""

    def __init__(self, *, settings: RawSettings | None = None) -> None:
        super().__init__()
        self.settings = settings if settings is not None else RawSettings()

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """The call's data with its messages rewritten, or None to leave it as it is."""
        try:
            # Off the event loop: a long history takes milliseconds to plan, and the gateway
            # serves every other call on that loop meanwhile.
            return await asyncio.to_thread(rewrite_call, call_type, data, self.settings)
        except Exception as exc:  # never fail the call: LiteLLM would answer it with an error
            log.warning("tokenlean: LiteLLM pre-call rewrite failed, sent unchanged: %r", exc)
            return None


#: The instance a LiteLLM config names (``callbacks: tokenlean.proxy.litellm.callback``).
callback = TokenleanCallback()
