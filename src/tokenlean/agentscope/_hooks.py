"""The types of AgentScope's middleware hooks (``on_reply``, ``on_reasoning``), named once."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

__all__ = ["Events", "Handler", "Kwargs"]

#: What a hook yields: the events of the step it wraps.
Events = AsyncGenerator[Any, None]
#: The next middleware, or the step itself.
Handler = Callable[..., Events]
#: The keyword arguments the step is called with.
Kwargs = dict[str, Any]
