"""``tokenlean.anthropic.wrap(client)``: an Anthropic client that shortens what it re-sends.

::

    import anthropic
    import tokenlean.anthropic

    client = tokenlean.anthropic.wrap(anthropic.Anthropic())
    client.messages.create(model=..., max_tokens=..., messages=history, tools=tools)

``messages.create``, ``messages.stream`` and ``messages.parse`` (and the same under
``client.beta``) rewrite ``messages`` with :func:`tokenlean.raw.rewrite_request` before the SDK
sends them: tool results are shortened as at first sight and the long inputs of calls that have
run are cut, the same way on every request, so the prompt cache keeps hitting. Works with
``Anthropic`` and ``AsyncAnthropic`` (and the Bedrock and Vertex clients); the wrapped client is
a copy of the same class, and everything else is the SDK's own. A failure inside the rewrite is
logged and the request is sent as given.
"""

from __future__ import annotations

from typing import TypeVar

from tokenlean import checks
from tokenlean._extras import sdk
from tokenlean.raw import RawSettings, install

__all__ = ["wrap"]

ClientT = TypeVar("ClientT")

_PATHS = (("messages",), ("beta", "messages"))


def wrap(client: ClientT, *, settings: RawSettings | None = None) -> ClientT:
    """A copy of ``client`` whose message requests are shortened (see the module docstring)."""
    sdk("anthropic", extra="anthropic", name="Anthropic")
    checks.provides(client, "client", ("messages.create", "copy"), "an Anthropic SDK client")
    result: ClientT = install(client, _PATHS, "anthropic", "messages", settings or RawSettings())
    return result
