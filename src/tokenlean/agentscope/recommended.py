"""The recommended AgentScope middleware: one call that does the right thing for a provider.

::

    agent = Agent(..., middlewares=recommended_middleware("anthropic"))

The same stack as :func:`tokenlean.langchain.recommended_middleware`, whose docstring says why
each piece is there, on the same core settings:

1. :class:`ToolOutputShorteningMiddleware` with ``inputs=True``: the long inputs of calls that
   have run are cut, then each long result is shortened before the model first sees it; the
   ``read_original`` tool joins the toolkit before the first call where its schema is a
   negligible share of that prompt (:class:`~tokenlean.history.Offer`).
2. :class:`ContextEditorMiddleware`, only given the model's ``context_window``: the safety net
   of :meth:`~tokenlean.context_editor.ContextEditorSettings.safety_net`.
3. :class:`LoopGuardMiddleware`, only with ``loop_guard=True`` (why not by default: the
   LangChain module's docstring).

A budget is not part of it: only the user knows what a reply may cost
(:class:`ReplyBudgetControlMiddleware`).
"""

from __future__ import annotations

from agentscope.middleware import MiddlewareBase

from tokenlean import checks
from tokenlean.agentscope.context_editor import ContextEditorMiddleware
from tokenlean.agentscope.loop_guard import LoopGuardMiddleware
from tokenlean.agentscope.shortening import ToolOutputShorteningMiddleware
from tokenlean.context_editor import ContextEditorSettings
from tokenlean.cost import CachePricing, PricingName, resolve_pricing
from tokenlean.store import OriginalStore

__all__ = ["recommended_middleware"]


def recommended_middleware(
    provider: PricingName | CachePricing = "anthropic",
    *,
    store: OriginalStore | None = None,
    context_window: int | None = None,
    loop_guard: bool = False,
) -> list[MiddlewareBase]:
    """The list to pass as ``Agent(..., middlewares=...)``.

    Args:
        provider: whose prompt-cache pricing the editor plans for: ``"anthropic"``,
            ``"openai"``, ``"none"`` or a :class:`~tokenlean.cost.CachePricing`.
        store: where originals are kept for ``read_original`` (default: a new in-memory
            store; a :class:`~tokenlean.store.FolderOriginalStore` keeps them across restarts).
        context_window: the model's context window in tokens; when given, a context editor
            clears old results past :data:`~tokenlean.context_editor.SAFETY_NET_SHARE` of it.
        loop_guard: add the loop guard (off by default).
    """
    pricing = resolve_pricing(provider, name="provider")
    checks.flag(loop_guard, "loop_guard")
    stack: list[MiddlewareBase] = [ToolOutputShorteningMiddleware(inputs=True, store=store)]
    if context_window is not None:
        editor = ContextEditorSettings.safety_net(context_window, pricing)
        stack.append(ContextEditorMiddleware(editor))
    if loop_guard:
        stack.append(LoopGuardMiddleware())
    return stack
