"""The google-genai hook: a client copy whose API client rewrites ``generateContent`` bodies.

google-genai turns typed ``Content``/``Part`` objects (or dicts, or strings) into the request
dict inside its API client (``BaseApiClient.request``, ``request_streamed``, ``async_request``,
``async_request_streamed``: ``http_method, path, request_dict, http_options``). Hooking there
sees exactly the JSON that goes on the wire, in its camelCase keys, whatever the caller passed,
including the repeated requests of automatic function calling and of ``client.chats``.

:func:`wrap_client` makes a shallow copy of the client (and of ``client.aio`` and every resource
module) whose ``_api_client`` is a :class:`RewritingApiClient` in front of the original one: the
same connections, credentials and options; only bodies sent to a path ending in
``:generateContent`` or ``:streamGenerateContent`` are rewritten, with
:func:`tokenlean.raw.rewrite_request` (``"gemini"``). The user's client is not touched.
"""

from __future__ import annotations

import logging
from typing import Any

from tokenlean._failopen import fail_open
from tokenlean.raw import RawSettings, rewrite_request

__all__ = ["RewritingApiClient", "is_generate_path", "rewrite_body", "wrap_client"]

logger = logging.getLogger("tokenlean.raw")

_GENERATE = (":generateContent", ":streamGenerateContent")


def is_generate_path(path: object) -> bool:
    """Whether ``path`` (``models/m:streamGenerateContent?alt=sse``) asks for a generation."""
    return isinstance(path, str) and path.split("?", 1)[0].rstrip("/").endswith(_GENERATE)


def rewrite_body(path: str, body: dict[str, Any], settings: RawSettings) -> dict[str, Any]:
    """``body`` with its tool results and past tool inputs shortened when ``path`` generates;
    ``body`` itself otherwise, when nothing changed, or on any failure (which is logged)."""
    if not is_generate_path(path):
        return body
    with fail_open(
        logger, "tokenlean could not rewrite a %s request; sent unchanged", "gemini"
    ) as guard:
        result = rewrite_request("gemini", body, settings=settings)
    if guard.failed or result is None:
        return body
    logger.debug(
        "tokenlean: gemini request %d -> %d tokens (%d results, %d inputs shortened)",
        result.tokens_before,
        result.tokens_after,
        result.results_shortened,
        result.inputs_shortened,
    )
    return result.body


class RewritingApiClient:
    """Stands in for a google-genai ``BaseApiClient``: generation requests have their body
    rewritten, every other attribute and call is the original's."""

    def __init__(self, target: Any, settings: RawSettings) -> None:
        self._tokenlean_target = target
        self._tokenlean_settings = settings

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenlean_target, name)

    def _body(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return rewrite_body(path, body, self._tokenlean_settings)

    def request(
        self, http_method: str, path: str, request_dict: dict[str, Any], http_options: Any = None
    ) -> Any:
        body = self._body(path, request_dict)
        return self._tokenlean_target.request(http_method, path, body, http_options)

    def request_streamed(
        self, http_method: str, path: str, request_dict: dict[str, Any], http_options: Any = None
    ) -> Any:
        body = self._body(path, request_dict)
        return self._tokenlean_target.request_streamed(http_method, path, body, http_options)

    async def async_request(
        self, http_method: str, path: str, request_dict: dict[str, Any], http_options: Any = None
    ) -> Any:
        body = self._body(path, request_dict)
        return await self._tokenlean_target.async_request(http_method, path, body, http_options)

    async def async_request_streamed(
        self, http_method: str, path: str, request_dict: dict[str, Any], http_options: Any = None
    ) -> Any:
        body = self._body(path, request_dict)
        target = self._tokenlean_target
        return await target.async_request_streamed(http_method, path, body, http_options)


def wrap_client(client: Any, settings: RawSettings) -> Any:
    """A copy of ``client`` (a ``genai.Client`` or its ``.aio``) sending rewritten bodies."""
    real = client._api_client
    rewriting = RewritingApiClient(real, settings)
    cls = type(client)
    if callable(getattr(cls, "__del__", None)):
        # genai.Client closes its API client when it is collected. The copy shares that API
        # client, so it must not close it when *it* goes while the original may live on; it
        # holds the original instead, which closes the connections when it goes in turn.
        cls = _not_closing_when_collected(cls)
    wrapped = _rebind(client, real, rewriting, cls)
    if cls is not type(client):
        wrapped._tokenlean_wrapped = client
    return wrapped


def _rebind(obj: Any, real: Any, rewriting: RewritingApiClient, cls: type[Any]) -> Any:
    """A shallow copy of ``obj`` (made an instance of ``cls``) with every reference to ``real``
    (its own and its resource modules', one level down) replaced by ``rewriting``."""
    out = object.__new__(cls)
    for name, value in vars(obj).items():
        if value is real:
            value = rewriting
        elif getattr(value, "_api_client", None) is real:
            value = _rebind(value, real, rewriting, type(value))
        vars(out)[name] = value
    return out


_NOT_CLOSING: dict[type[Any], type[Any]] = {}


def _not_closing_when_collected(cls: type[Any]) -> type[Any]:
    """A subclass of ``cls`` (one per class) whose instances do not close when collected."""
    made = _NOT_CLOSING.get(cls)
    if made is not None:
        return made

    def keep_open(self: Any) -> None:  # the original closes them (see wrap_client)
        return

    names = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
    made = _NOT_CLOSING[cls] = type(cls.__name__, (cls,), {"__del__": keep_open, **names})
    return made
