"""Grouping requests into sessions, and estimating what a request costs with a cached prefix.

A session is one conversation as the client runs it. The key, first that applies:

1. an ``x-tokenlean-session`` header (set it when you embed the proxy and know better);
2. what the client itself says: Anthropic ``metadata.user_id`` (Claude Code puts its session id
   there), OpenAI ``prompt_cache_key`` or ``user``;
3. a hash of the first user message: agents re-send their whole history, so it stays the same
   for every request of one conversation.

Keys are shown hashed, so account ids in ``metadata.user_id`` never reach a log.

The cost estimate follows the replay engine's rule: a request's cached tokens are those of the
longest run of leading blocks (tools and system first, then each message) identical to an earlier
request's in the same session. Clients move ``cache_control`` to the newest message each time,
so it is left out of the comparison. Several recent requests are kept because a client such as
Claude Code interleaves side requests (titles, sub-agents) with the main conversation.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from typing import Any

from tokenlean.proxy.routing import Api
from tokenlean.tokens import EstimateCounter

#: Values that cost no prompt tokens as text (opaque signatures, base64 payloads).
_OPAQUE_KEYS = frozenset({"signature", "data", "encrypted_content", "image_url", "file_data"})
_COUNTER = EstimateCounter()
RECENT_PROMPTS = 8

Block = tuple[str, int]  # (fingerprint, estimated tokens)


def session_key(api: Api, headers: Mapping[str, str], body: Mapping[str, Any]) -> tuple[str, str]:
    """A short stable label for the session a request belongs to, and where it came from."""
    explicit = headers.get("x-tokenlean-session")
    if explicit:
        return _short(api, explicit), "header"
    if api == "anthropic":
        metadata = body.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("user_id"), str):
            return _short(api, metadata["user_id"]), "metadata.user_id"
    else:
        for field in ("prompt_cache_key", "user"):
            if isinstance(body.get(field), str) and body[field]:
                return _short(api, body[field]), field
    return _short(api, _canonical(_first_user_message(api, body))), "first user message"


def _first_user_message(api: Api, body: Mapping[str, Any]) -> Any:
    items = body.get("input") if api == "openai_responses" else body.get("messages")
    if isinstance(items, str):
        return items
    for item in items if isinstance(items, list) else ():
        if isinstance(item, Mapping) and item.get("role") == "user":
            return item.get("content")
    return None


def _short(api: Api, text: str) -> str:
    """Sessions of different APIs never share a cache, so the API is part of the key."""
    data = f"{api}\n{text}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:12]


def _strip_cache_control(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_strip_cache_control(value), sort_keys=True, separators=(",", ":"))


def _text_tokens(value: Any) -> int:
    """Estimated tokens of the text in a JSON value: keys and strings, opaque payloads aside."""
    if isinstance(value, str):
        return _COUNTER.count(value)
    if isinstance(value, Mapping):
        return sum(
            _COUNTER.count(str(k)) + (0 if k in _OPAQUE_KEYS else _text_tokens(v))
            for k, v in value.items()
        )
    if isinstance(value, list):
        return sum(_text_tokens(v) for v in value)
    return 0 if value is None else 1


def prompt_blocks(api: Api, body: Mapping[str, Any]) -> list[Any]:
    """The body as cache-ordered blocks: model, tools and system first, then each message."""
    head = {k: body.get(k) for k in ("model", "tools", "system", "instructions")}
    items = body.get("input") if api == "openai_responses" else body.get("messages")
    if isinstance(items, str):
        items = [items]
    return [head, *(items if isinstance(items, list) else [])]


class BlockCounter:
    """Fingerprints and token estimates of blocks, memoised: a long history is counted once."""

    def __init__(self, capacity: int = 100_000) -> None:
        self._memo: OrderedDict[str, int] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def blocks(self, api: Api, body: Mapping[str, Any]) -> list[Block]:
        return [self._block(b) for b in prompt_blocks(api, body)]

    def _block(self, block: Any) -> Block:
        text = _canonical(block)
        fingerprint = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            tokens = self._memo.get(fingerprint)
            if tokens is not None:
                self._memo.move_to_end(fingerprint)
                return fingerprint, tokens
        tokens = _text_tokens(block)
        with self._lock:
            self._memo[fingerprint] = tokens
            if len(self._memo) > self._capacity:
                self._memo.popitem(last=False)
        return fingerprint, tokens


class PrefixHistory:
    """The last few prompts of one session, to estimate how much of the next one is cached."""

    def __init__(self) -> None:
        self._recent: deque[Sequence[Block]] = deque(maxlen=RECENT_PROMPTS)

    def cached_tokens(self, blocks: Sequence[Block]) -> int:
        best = 0
        for earlier in self._recent:
            same = 0
            for (a, tokens), (b, _) in zip(blocks, earlier, strict=False):
                if a != b:
                    break
                same += tokens
            best = max(best, same)
        return best

    def add(self, blocks: Sequence[Block]) -> None:
        self._recent.append(blocks)
