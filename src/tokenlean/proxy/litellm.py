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
the same in every worker and in a tokenlean proxy given the same salt. LiteLLM's own spend logs
and metrics then compare the arms by the session (its ``user`` or first message).
"""

from __future__ import annotations

import asyncio
import logging
import os
from enum import Enum
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from tokenlean import checks
from tokenlean.proxy._ab import Arm, arm_of
from tokenlean.proxy._sessions import session_key
from tokenlean.raw import CALL_APIS, RawSettings, rewrite_call

__all__ = ["AB_ENV", "SALT_ENV", "TokenleanCallback", "callback"]

AB_ENV = "TOKENLEAN_AB"
SALT_ENV = "TOKENLEAN_PROXY_SALT"

log = logging.getLogger("tokenlean.proxy")


class TokenleanCallback(CustomLogger):
    """A LiteLLM callback whose pre-call hook applies tokenlean's rewrite (module docstring)."""

    def __init__(
        self, *, settings: RawSettings | None = None, ab: float | None = None, salt: str = ""
    ) -> None:
        super().__init__()
        self.settings = settings if settings is not None else RawSettings()
        self.ab = None if ab is None else checks.number(ab, "ab", at_least=0, at_most=1)
        if ab is not None and not salt:
            raise ValueError(f"ab needs a salt every worker shares (salt=, or ${SALT_ENV})")
        self._salt = salt.encode()

    def arm(self, call_type: Any, data: dict[str, Any]) -> Arm:
        """The arm of the session this call belongs to (``tokenlean`` without an A/B test)."""
        name = str(call_type.value if isinstance(call_type, Enum) else call_type)
        api = CALL_APIS.get(name)
        if self.ab is None or api is None:
            return "tokenlean"
        label, _ = session_key(api, {}, data, salt=self._salt)
        return arm_of(label, self.ab)

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """The call's data with its messages rewritten, or None to leave it as it is."""
        try:
            if self.arm(call_type, data) == "control":
                return None
            # Off the event loop: a long history takes milliseconds to plan, and the gateway
            # serves every other call on that loop meanwhile.
            return await asyncio.to_thread(rewrite_call, call_type, data, self.settings)
        except Exception as exc:  # never fail the call: LiteLLM would answer it with an error
            log.warning("tokenlean: LiteLLM pre-call rewrite failed, sent unchanged: %r", exc)
            return None


def _from_environment() -> TokenleanCallback:
    share = os.environ.get(AB_ENV)
    return TokenleanCallback(ab=float(share) if share else None, salt=os.environ.get(SALT_ENV, ""))


#: The instance a LiteLLM config names (``callbacks: tokenlean.proxy.litellm.callback``).
callback = _from_environment()
