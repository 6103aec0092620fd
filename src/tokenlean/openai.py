"""``tokenlean.openai.wrap(client)``: an OpenAI client that shortens what it re-sends.

::

    import openai
    import tokenlean.openai

    client = tokenlean.openai.wrap(openai.OpenAI())
    client.chat.completions.create(model=..., messages=history, tools=tools)
    client.responses.create(model=..., input=items, tools=tools)

``chat.completions`` (``create``, ``stream``, ``parse``) rewrite ``messages`` as Chat
Completions bodies and ``responses`` (``create``, ``stream``, ``parse``) rewrite ``input`` as
Responses bodies, with :func:`tokenlean.raw.rewrite_request`, before the SDK sends them: tool
results are shortened as at first sight and the long inputs of calls that have run are cut, the
same way on every request, so the prompt cache keeps hitting. Works with ``OpenAI``,
``AsyncOpenAI`` and the Azure clients; the wrapped client is a copy of the same class, and
everything else is the SDK's own. A failure inside the rewrite is logged and the request is sent
as given.
"""

from __future__ import annotations

from typing import TypeVar

from tokenlean import checks
from tokenlean._extras import sdk
from tokenlean.raw import RawSettings, install

__all__ = ["wrap"]

ClientT = TypeVar("ClientT")

_CHAT = (("chat", "completions"), ("beta", "chat", "completions"))
_RESPONSES = (("responses",),)


def wrap(client: ClientT, *, settings: RawSettings | None = None) -> ClientT:
    """A copy of ``client`` whose chat and responses requests are shortened (module docstring)."""
    sdk("openai", extra="openai", name="OpenAI")
    methods = ("chat.completions.create", "copy")
    checks.provides(client, "client", methods, "an OpenAI SDK client")
    settings = settings or RawSettings()
    wrapped = install(client, _CHAT, "openai_chat", "messages", settings)
    result: ClientT = install(wrapped, _RESPONSES, "openai_responses", "input", settings)
    return result
