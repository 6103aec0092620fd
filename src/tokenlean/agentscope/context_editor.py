"""Clear old tool results from what an AgentScope model is sent, in cache-friendly batches.

Only the request changes (``on_model_call`` passes the model a copy of the messages): the
agent's memory keeps every result, and ``read_original`` reads a cleared one back from there by
the call id its placeholder names. Which results are cleared, and the exact placeholder each is
sent as, lives in ``agent.state.middle_context`` under the middleware's key, so it survives
whatever the agent's state survives (an interrupt, a saved session) and every later call sends
the same bytes for them. The decisions are the framework-free core's
(:func:`tokenlean.context_editor.plan_clearing`, which documents the cache-aware model), on the
same settings as the LangChain middleware (:class:`~tokenlean.context_editor.ContextEditorSettings`,
where every default lives).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentscope.message import Msg
from agentscope.middleware import MiddlewareBase

from tokenlean import checks
from tokenlean._failopen import fail_open
from tokenlean.agentscope import _view
from tokenlean.context_editor import (
    Clearing,
    ContextEdit,
    ContextEditorSettings,
    RequestView,
    clearing_edits,
    plan_clearing,
)
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter, memoized

if TYPE_CHECKING:
    from agentscope.agent import Agent

__all__ = ["ContextEditorMiddleware"]

logger = logging.getLogger("tokenlean.agentscope")


class ContextEditorMiddleware(MiddlewareBase):
    """Replace all but the newest tool results by a short placeholder once the request is large
    (see :class:`tokenlean.langchain.ContextEditorMiddleware` for the rule, which is the same).

    Args:
        settings: trigger, batch, exclusions, placeholder, mode and pricing (defaults:
            :class:`~tokenlean.context_editor.ContextEditorSettings`'s).
        counter: token counter for the trigger and the savings (default: the fast estimate).
        on_edit: called with a :class:`~tokenlean.context_editor.ContextEdit` each time the
            cleared set grows.
    """

    def __init__(
        self,
        settings: ContextEditorSettings | None = None,
        *,
        counter: TokenCounter | None = None,
        on_edit: Callable[[ContextEdit], object] | None = None,
    ) -> None:
        if settings is not None:
            wanted = "a ContextEditorSettings"
            checks.instance(settings, "settings", ContextEditorSettings, wanted)
        if on_edit is not None:
            checks.function(on_edit, "on_edit")
        self.settings = settings or ContextEditorSettings()
        self.counter = memoized(counter if counter is not None else DEFAULT_COUNTER)
        self.on_edit = on_edit

    async def on_model_call(
        self,
        agent: Agent,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Any],
    ) -> Any:
        messages = input_kwargs.get("messages")
        with fail_open(logger, "context editor failed; sending the request unchanged"):
            key = await self.get_middleware_key()
            edited = self._edit(agent.state.middle_context, key, messages, input_kwargs)
            if edited is not None:
                return await next_handler(messages=edited)
        return await next_handler()

    def _edit(
        self,
        state: dict[str, Any],
        key: str,
        messages: object,
        input_kwargs: Mapping[str, Any],
    ) -> list[Msg] | None:
        """The messages to send (``None``: as they are), recording a grown cleared set."""
        if not isinstance(messages, list) or not messages:
            return None
        view = _view.read(messages)
        tools = [t for t in input_kwargs.get("tools") or () if isinstance(t, Mapping)]
        previous = Clearing.read_all(state.get(key))
        plan = plan_clearing(
            RequestView(view.messages, None, tuple(tools)),
            config=self.settings,
            previous=previous,
            counter=self.counter,
        )
        if plan.edit is not None:
            state[key] = {k: v.to_record() for k, v in plan.cleared.items()}
            self._report(plan.edit)
        edits = clearing_edits(view.messages, plan.cleared)
        if not edits:
            return None
        sent = list(messages)
        _view.apply(sent, view, edits, marks=False)
        return sent

    def _report(self, edit: ContextEdit) -> None:
        if self.on_edit is None:
            return
        with fail_open(logger, "context editor on_edit callback failed"):
            self.on_edit(edit)
