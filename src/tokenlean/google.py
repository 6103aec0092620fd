"""``tokenlean.google.wrap(client)``: a google-genai client that shortens what it re-sends.

::

    from google import genai
    import tokenlean.google

    client = tokenlean.google.wrap(genai.Client())
    client.models.generate_content(model=..., contents=history, config=config)
    await client.aio.models.generate_content_stream(model=..., contents=history)

``models.generate_content`` and ``models.generate_content_stream``, and the same under
``client.aio`` (and so ``client.chats`` and automatic function calling, which call them), send
their body rewritten with :func:`tokenlean.raw.rewrite_request` (``"gemini"``): long
``functionResponse`` results are shortened as at first sight and the long ``args`` of calls
that have run are cut, the same way on every request, so the prompt cache keeps hitting. The
hook sits where the SDK has turned typed ``Content``/``Part`` objects into the JSON it sends,
so typed objects, dicts and strings are all seen as the wire sees them. Thought parts and
their signatures, inline and file data, ``systemInstruction``, ``tools`` and ``cachedContent``
are never touched.

The wrapped client is a copy, an instance of (a subclass of) the client's class, sharing the
original's connections and credentials; the original is left as it was. Closing either closes
the connections of both (as closing ``client.aio`` closes ``client``'s); when the copy is
collected it leaves them to the original. Works with ``genai.Client`` (Gemini API or Vertex AI)
and with ``client.aio``. A failure inside the rewrite is logged (``tokenlean.raw``) and the
request is sent as given.
"""

from __future__ import annotations

from typing import TypeVar

from tokenlean import checks
from tokenlean._extras import sdk
from tokenlean.raw import RawSettings

__all__ = ["wrap"]

ClientT = TypeVar("ClientT")


def wrap(client: ClientT, *, settings: RawSettings | None = None) -> ClientT:
    """A copy of ``client`` whose generation requests are shortened (see the module docstring)."""
    genai_client = sdk("google.genai.client", extra="google", name="google-genai")
    from tokenlean.raw import wrap_client

    kinds = (genai_client.Client, genai_client.AsyncClient)
    checks.instance(client, "client", kinds, "a google-genai Client")
    result: ClientT = wrap_client(client, settings or RawSettings())
    return result
