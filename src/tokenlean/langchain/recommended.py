"""The recommended middleware stack: one call that does the right thing for a provider.

::

    agent = create_agent(model, tools, middleware=recommended_middleware("anthropic"))

What it returns, in order, and why each piece is there. What the stack and each piece save, at
what reference recall, source by source, is in ``benchmarks/results.md`` (a replay of the real
trajectories in ``shared/data`` against no middleware, rerun by ``make bench``); this docstring
quotes no figure, so that it cannot go stale.

1. :class:`ToolOutputShorteningMiddleware` with ``inputs`` — on each call, one plan of the new
   turn (:func:`tokenlean.pipeline.plan_turn`, as behind the proxy): first the long inputs of
   the calls that have run (scripts written into ``python -c`` or heredocs) are cut to their
   head and tail (inputs over ``INPUT_MIN_TOKENS`` keep ``INPUT_HEAD_LINES`` and
   ``INPUT_TAIL_LINES`` lines: a little more than the smallest cut that kept recall in the
   tuning runs, ``benchmarks/tune_recommended.py``), then each long tool result is shortened
   before the model first sees it (errors, tracebacks and lines related to the call survive),
   seeing those inputs as cut, so it never points at input lines the model will no longer see.
   What it changes was never sent, so the prompt cache keeps hitting; its one ``read_original``
   tool returns either kind of original.
2. :class:`ContextEditorMiddleware`, only when the model's ``context_window`` is given: a
   safety net that clears old results once a request passes ``SAFETY_NET_SHARE`` of the window
   (plain mode: there the run must shrink or fail). Not by default: replayed on agents' own long
   sessions, clearing at any trigger they pass cost references the agent went back to, and
   after first-sight shortening it saved nothing on the dev runs.
3. :class:`LoopGuardMiddleware`, only with ``loop_guard=True`` — nudges, then forces an answer,
   then ends a run stuck in a loop; ``benchmarks/loops.md`` measures how often it fires on
   resolved runs and on looping ones. Not by default: the stack's promise is a bill never above
   no middleware's, and a guard can only prove its cost, never its saving. Its messages are new
   tokens on every later call, while what ending a loop saves depends on a model obeying, which
   a replay of recorded turns cannot show; on the short question-answering runs it fires on
   (prompts under OpenAI's minimum cacheable size) those tokens put the stack above no
   middleware (``benchmarks/price_tables.md``). Turn it on for agents that loop.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware

from tokenlean import checks
from tokenlean.context_editor import SAFETY_NET_SHARE, ContextEditorSettings
from tokenlean.cost import CachePricing, PricingName, resolve_pricing
from tokenlean.langchain.context_editor import ContextEditorMiddleware
from tokenlean.langchain.loop_guard import LoopGuardMiddleware
from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware
from tokenlean.langchain.retrieval import shared_choice
from tokenlean.langchain.store import StoreChoice
from tokenlean.shorten import RECOMMENDED_INPUTS
from tokenlean.store import OriginalStore

__all__ = [
    "EDITOR_WINDOW_SHARE",
    "INPUT_HEAD_LINES",
    "INPUT_MIN_TOKENS",
    "INPUT_TAIL_LINES",
    "recommended_middleware",
]

Provider = PricingName  # the names of the pricing presets, under the name this module gave them

INPUT_MIN_TOKENS = RECOMMENDED_INPUTS.min_tokens
INPUT_HEAD_LINES = RECOMMENDED_INPUTS.head_lines
INPUT_TAIL_LINES = RECOMMENDED_INPUTS.tail_lines
EDITOR_WINDOW_SHARE = SAFETY_NET_SHARE


def recommended_middleware(
    provider: Provider | CachePricing = "anthropic",
    *,
    store: OriginalStore | StoreChoice | None = None,
    context_window: int | None = None,
    loop_guard: bool = False,
) -> list[AgentMiddleware[Any, Any, Any]]:
    """The middleware list to pass as ``create_agent(..., middleware=...)``.

    Args:
        provider: whose prompt-cache pricing to plan for: ``"anthropic"`` (cache reads at 0.1,
            writes at 1.25), ``"openai"`` (reads at 0.1 past 1,024 tokens), ``"none"``, or a
            :class:`~tokenlean.cost.CachePricing` of your own.
        store: where originals are kept for ``read_original`` (default: the agent's own store,
            ``create_agent(..., store=...)``, when it has one, else this process's memory,
            shared by every shortener given no store).
        context_window: the model's context window in tokens; when given, a context editor
            clears old results past ``EDITOR_WINDOW_SHARE`` of it (a safety net for runs
            that would outgrow it; an agent that compacts on its own needs none).
        loop_guard: add the loop guard (off by default: see the module's docstring).
    """
    pricing = resolve_pricing(provider, name="provider")
    checks.flag(loop_guard, "loop_guard")
    stores = StoreChoice.of(store) if store is not None else shared_choice()
    stack: list[AgentMiddleware[Any, Any, Any]] = [
        ToolOutputShorteningMiddleware(store=stores, pricing=pricing, inputs=RECOMMENDED_INPUTS)
    ]
    if context_window is not None:
        editor = ContextEditorSettings.safety_net(context_window, pricing)
        stack.append(
            ContextEditorMiddleware(
                trigger_tokens=editor.trigger_tokens, mode=editor.mode, pricing=editor.pricing
            )
        )
    if loop_guard:
        stack.append(LoopGuardMiddleware())
    return stack
