"""``tokenlean.litellm.enable()``: every LiteLLM SDK call shortens what it re-sends, in-process.

::

    import litellm
    import tokenlean.litellm

    tokenlean.litellm.enable()  # or: with tokenlean.litellm.enabled(): ...
    litellm.completion(model=..., messages=history, tools=tools)

Agents built on the LiteLLM SDK (mini-swe-agent, SWE-agent, OpenHands, Aider, CrewAI,
smolagents, DSPy) call ``litellm.completion`` or ``litellm.acompletion``. :func:`enable` puts
functions in their place on the ``litellm`` module that rewrite ``messages`` the way the LiteLLM
proxy plug-in does (:func:`tokenlean.raw.rewrite_call`, the proxy's Chat Completions
rewrite) and then call LiteLLM's own: tool results shortened at first sight, the long inputs of
calls that have run cut, the same bytes for the same history on every call (so the provider's
prompt cache keeps hitting), sync, async and streamed alike, whatever provider serves the model.

Originals go to a folder (``originals_dir``; by default the proxy's, ``$XDG_CACHE_HOME/
tokenlean/originals``) and each marker names a file there and the lines to read: a way back an
agent whose only tool is bash has (``sed -n '120,160p' FILE``), so the agent must run where the
folder is (a sandbox needs it mounted at the same path). Any failure is logged and the call goes
on unchanged. :func:`disable` puts LiteLLM's functions back. Only calls through the module are
seen: a name bound by ``from litellm import completion`` keeps LiteLLM's function. Needs the
``litellm-sdk`` extra: ``pip install 'tokenlean[litellm-sdk]'``.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from tokenlean._failopen import fail_open
from tokenlean.raw import RawSettings, rewrite_call

__all__ = ["disable", "enable", "enabled"]

log = logging.getLogger("tokenlean.litellm")

#: The functions replaced; each one's name is the call type the gateway translation knows.
_NAMES = ("completion", "acompletion")

_lock = threading.Lock()
#: The settings calls are rewritten with; None while disabled (a wrapper someone kept a
#: reference to then passes its calls on untouched).
_settings: RawSettings | None = None
#: Per name, LiteLLM's own function and the wrapper that stands in for it.
_patched: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def enable(
    *, originals_dir: str | Path | None = None, settings: RawSettings | None = None
) -> RawSettings:
    """Rewrite the messages of every ``litellm.completion`` and ``litellm.acompletion`` call.

    Enabling again only changes the settings: the functions are wrapped once.

    Args:
        originals_dir: where originals are written and markers point (default: the proxy's
            folder, ``$XDG_CACHE_HOME/tokenlean/originals``); the agent's tools must read it.
        settings: every other setting (:class:`~tokenlean.raw.RawSettings`, whose
            ``originals_dir`` is then the folder).

    Returns:
        The settings calls are rewritten with (``originals_dir`` resolved).

    Raises:
        ImportError: the LiteLLM SDK is not installed.
        ValueError: both ``originals_dir`` and ``settings`` are given.
    """
    global _settings
    if originals_dir is not None and settings is not None:
        raise ValueError("give originals_dir or settings (with its originals_dir), not both")
    folder = Path(originals_dir) if originals_dir is not None else None
    chosen = settings if settings is not None else RawSettings(originals_dir=folder)
    module = _litellm()
    with _lock:
        for name in _NAMES:
            current = getattr(module, name)
            if name not in _patched or current is not _patched[name][1]:
                _patched[name] = (current, _wrap(name, current))
                setattr(module, name, _patched[name][1])
        _settings = chosen
    return chosen


def disable() -> None:
    """Put LiteLLM's own functions back (nothing to do when not enabled)."""
    global _settings
    with _lock:
        _settings = None
        module = sys.modules.get("litellm")
        for name, (original, wrapper) in _patched.items():
            if module is not None and getattr(module, name, None) is wrapper:
                setattr(module, name, original)
            else:  # someone wrapped ours since: theirs stays, and ours now passes calls on
                log.warning("tokenlean: litellm.%s was replaced after enable(); left as is", name)
        _patched.clear()


@contextmanager
def enabled(
    *, originals_dir: str | Path | None = None, settings: RawSettings | None = None
) -> Iterator[RawSettings]:
    """:func:`enable` for the ``with`` block, which gets the settings; afterwards, as before
    it (still enabled, with the settings it had, when it was)."""
    before = _settings
    chosen = enable(originals_dir=originals_dir, settings=settings)
    try:
        yield chosen
    finally:
        if before is None:
            disable()
        else:
            enable(settings=before)


def _litellm() -> ModuleType:
    try:
        return importlib.import_module("litellm")
    except ImportError as exc:
        raise ImportError(
            "tokenlean.litellm needs the LiteLLM SDK: pip install 'tokenlean[litellm-sdk]'",
            name=exc.name,
        ) from exc


def _wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in for ``original`` that rewrites the call's arguments first."""
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def rewriting_async(*args: Any, **kwargs: Any) -> Any:
            # Off the event loop, as the proxy plug-in does: a long history takes milliseconds
            # to plan, and an async agent's other calls go on meanwhile.
            args, kwargs = await asyncio.to_thread(_rewrite, name, args, kwargs)
            return await original(*args, **kwargs)

        return rewriting_async

    @functools.wraps(original)
    def rewriting(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = _rewrite(name, args, kwargs)
        return original(*args, **kwargs)

    return rewriting


def _rewrite(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with ``messages`` rewritten; as they came when nothing changed,
    while disabled, or on any failure (logged)."""
    settings = _settings
    if settings is None:
        return args, kwargs
    with fail_open(log, "tokenlean could not rewrite a litellm.%s call; sent unchanged", name):
        positional = len(args) > 1  # completion(model, messages, ...)
        data = {**kwargs, "messages": args[1]} if positional else kwargs
        out = rewrite_call(name, data, settings)
        if out is None:
            return args, kwargs
        if positional:
            return (args[0], out.pop("messages"), *args[2:]), out
        return args, out
    return args, kwargs
