"""What the SDK wrappers share: a client copy whose request methods rewrite their body first.

:func:`install` replaces resources on a *copy* of the client (``client.copy()`` is public in
both SDKs) with :class:`Rewriting` stand-ins, so the wrapped client stays an instance of its
class and everything else is the SDK's own. ``create``, ``stream`` and ``parse`` rewrite the
body argument with :func:`tokenlean.raw.rewrite_request` before the SDK sees it; sync and async
alike, since the rewrite happens when the method is called. ``copy``/``with_options`` return
wrapped clients too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from tokenlean._failopen import fail_open
from tokenlean.raw import Api, RawSettings, rewrite_request

__all__ = ["METHODS", "Namespace", "Rewriting", "install", "plain_json", "rewrite_kwargs"]

logger = logging.getLogger("tokenlean.raw")

#: Request methods whose body is rewritten (the SDKs' plain, streaming and parsing calls).
METHODS = frozenset({"create", "stream", "parse"})
_RESPONSE_VIEWS = frozenset({"with_raw_response", "with_streaming_response"})


class Rewriting:
    """A resource whose request methods rewrite ``key`` (the message list) as ``api`` bodies."""

    def __init__(self, target: Any, api: Api, key: str, settings: RawSettings) -> None:
        self._target = target
        self._api: Api = api
        self._key = key
        self._settings = settings

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name in METHODS and callable(value):
            return self._rewriting(value)
        if name in _RESPONSE_VIEWS:
            return Rewriting(value, self._api, self._key, self._settings)
        return value

    def _rewriting(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **rewrite_kwargs(self._api, self._key, kwargs, self._settings))

        call.__doc__ = method.__doc__
        return call


class Namespace:
    """A resource group (``client.chat``, ``client.beta``) with some members replaced."""

    def __init__(self, target: Any, overrides: Mapping[str, Any]) -> None:
        self._target = target
        self._overrides = dict(overrides)

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._target, name)


def install(
    client: Any, paths: Sequence[tuple[str, ...]], api: Api, key: str, settings: RawSettings
) -> Any:
    """A copy of ``client`` with the resource at each path rewriting its requests."""
    return _patch(client.copy(), paths, api, key, settings)


def _patch(
    new: Any, paths: Sequence[tuple[str, ...]], api: Api, key: str, settings: RawSettings
) -> Any:
    for path in paths:
        child = getattr(new, path[0], None)
        if child is not None:
            replaced = _wrap_at(child, path[1:], lambda r: Rewriting(r, api, key, settings))
            setattr(new, path[0], replaced)
    original_copy = new.copy

    def copy(*args: Any, **kwargs: Any) -> Any:
        return _patch(original_copy(*args, **kwargs), paths, api, key, settings)

    new.copy = copy  # instance attributes shadow the class's methods
    new.with_options = copy
    return new


def _wrap_at(obj: Any, path: tuple[str, ...], make: Callable[[Any], Any]) -> Any:
    if not path:
        return make(obj)
    child = getattr(obj, path[0], None)
    if child is None:
        return obj
    return Namespace(obj, {path[0]: _wrap_at(child, path[1:], make)})


def rewrite_kwargs(
    api: Api, key: str, kwargs: dict[str, Any], settings: RawSettings
) -> dict[str, Any]:
    """``kwargs`` with the message list at ``key`` rewritten; unchanged on any failure.

    SDK models in the list (an agent often appends the previous response's content as is) are
    dumped the way the SDKs send them, so the list reaches the SDK as plain JSON data every
    time and the bytes it sends stay stable from request to request.
    """
    value = kwargs.get(key)
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        return kwargs
    items = value if isinstance(value, list) else list(value)  # an iterator reads only once
    out = {**kwargs, key: items}
    with fail_open(
        logger, "tokenlean could not rewrite a %s request; sent unchanged", api
    ) as guard:
        plain = plain_json(items)
        out[key] = plain
        result = rewrite_request(api, {key: plain}, settings=settings)
    if guard.failed:  # never break the agent: send what the caller gave
        return out
    if result is not None:
        out[key] = result.body[key]
        logger.debug(
            "tokenlean: %s request %d -> %d tokens (%d results, %d inputs shortened)",
            api,
            result.tokens_before,
            result.tokens_after,
            result.results_shortened,
            result.inputs_shortened,
        )
    return out


def plain_json(value: Any) -> Any:
    """``value`` with SDK models dumped as the SDKs send them and other sequences as lists;
    the same object when there is nothing to convert inside it."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        exclude = getattr(value, "__api_exclude__", None)
        return dump(exclude_unset=True, mode="json", by_alias=True, exclude=exclude)
    if isinstance(value, Mapping):
        items = {k: plain_json(v) for k, v in value.items()}
        same = type(value) is dict and all(items[k] is v for k, v in value.items())
        return value if same else items
    if isinstance(value, (list, tuple, Iterator)):
        seq = list(value)
        converted = [plain_json(v) for v in seq]
        same = type(value) is list and all(a is b for a, b in zip(converted, seq, strict=True))
        return value if same else converted
    return value  # anything else is left for the SDK to send as it would have
