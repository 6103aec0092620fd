"""A scripted agent under a coding agent's long system prompt, for tests of shortening.

A marker names ``read_original`` only in a request that lists it, and a thread is offered the
tool from its first call when the tool's schema is a negligible share of that prompt (as under
the system prompt and tool list a coding agent sends). Tests of what a shortening keeps use
such a prompt; tests of when the tool joins use short ones on purpose.
"""

from __future__ import annotations

from typing import Any

from tokenlean.testing import scripted_agent

#: A system prompt as long as a coding agent's: the tool's schema is a negligible share of it.
LONG_SYSTEM = "You are a careful coding agent; read before you edit. " * 1500


def coding_agent(*args: Any, **kwargs: Any) -> Any:
    """:func:`~tokenlean.testing.scripted_agent` with :data:`LONG_SYSTEM` unless given one."""
    kwargs.setdefault("system_prompt", LONG_SYSTEM)
    return scripted_agent(*args, **kwargs)
