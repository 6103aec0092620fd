"""A Redis URL: whether a location is one, how it is shown (never with its password), where
the password comes from, and the client it connects (the ``redis`` package, imported only here
and only when a Redis store is made)."""

from __future__ import annotations

import functools
import importlib
import os
from typing import Any, TypeGuard
from urllib.parse import urlsplit

__all__ = [
    "PASSWORD_ENV",
    "SCHEMES",
    "check_url",
    "connect",
    "hide_password",
    "is_redis_url",
    "redacted",
    "redis_module",
]

SCHEMES = ("redis", "rediss")
#: Where the password is read from when the URL has none (the second is redis-cli's own).
PASSWORD_ENV = ("TOKENLEAN_REDIS_PASSWORD", "REDISCLI_AUTH")
#: How long a call may wait to connect, and for an answer (seconds): an unreachable server
#: must not hold a request up for long.
CONNECT_TIMEOUT = 2.0
ANSWER_TIMEOUT = 5.0


def is_redis_url(location: object) -> TypeGuard[str]:
    """Whether ``location`` is a ``redis://`` or ``rediss://`` URL (not a folder)."""
    return isinstance(location, str) and location.partition("://")[0].lower() in SCHEMES


def check_url(url: object, name: str = "originals_url") -> str:
    """``url`` if it is a Redis URL with a host; else ``ValueError`` (never repeating it: it
    may hold a password)."""
    if not is_redis_url(url):
        raise ValueError(f"{name} must be a redis:// or rediss:// URL")
    if not urlsplit(url).hostname:
        raise ValueError(f"{name} must name a host, as in redis://HOST:PORT/DB")
    return url


def redacted(url: str) -> str:
    """The URL as it can be shown: its password (if any) replaced, its query left out."""
    parts = urlsplit(url)
    user = parts.username or ""
    secret = ":***" if parts.password else ""
    at = "@" if user or secret else ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{secret}{at}{parts.hostname}{port}{parts.path}"


def _password(url: str) -> str | None:
    """The password from the environment, when the URL has none of its own."""
    if urlsplit(url).password:
        return None
    return next((os.environ[n] for n in PASSWORD_ENV if os.environ.get(n)), None)


def hide_password(text: str, url: str) -> str:
    """``text`` (an error's message) with the password ``url`` connects with replaced."""
    secret = urlsplit(url).password or _password(url)
    return text.replace(secret, "***") if secret else text


@functools.cache  # asked on every call to the server: three imports cost a put several us
def redis_module() -> Any:
    """The ``redis`` package, or an ImportError naming the extra."""
    try:
        module = importlib.import_module("redis")
        importlib.import_module("redis.retry")
        importlib.import_module("redis.backoff")
    except ImportError:
        raise ImportError(
            "originals on Redis need the redis package: pip install 'tokenlean[redis]'"
        ) from None
    return module


def connect(url: str) -> Any:
    """A client of ``url`` (connecting at its first command) that fails at once rather than
    retrying: the store decides when to try again."""
    redis = redis_module()
    return redis.from_url(
        url,
        password=_password(url),
        socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=ANSWER_TIMEOUT,
        encoding_errors="replace",  # as the folder store writes a lone surrogate
        retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
    )
