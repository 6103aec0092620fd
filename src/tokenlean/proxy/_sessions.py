"""Grouping requests into sessions, and estimating what a request costs with a cached prefix.

A session is one conversation as the client runs it. The key, first that applies:

1. an ``x-tokenlean-session`` header (set it when you embed the proxy and know better);
2. what the client itself says: Anthropic ``metadata.user_id`` (Claude Code puts its session id
   there), OpenAI ``prompt_cache_key`` or ``user`` (Gemini bodies carry neither);
3. a hash of the first user message: agents re-send their whole history, so it stays the same
   for every request of one conversation.

Keys are shown hashed with a secret salt (an HMAC), so account ids in ``metadata.user_id`` never
reach a log, and a label cannot be used to confirm a guessed first message; nor can a name
(``GET /tokenlean/stats`` with ``x-tokenlean-session``, which needs no token): a label made from
content is hashed apart from every name's.

The cost estimate follows the replay engine's rule: a request's cached tokens are those of the
longest run of leading blocks (tools and system first, then each message) identical to an earlier
request's in the same session. Clients move ``cache_control`` to the newest message each time,
so it is left out of the comparison. Several recent requests are kept because a client such as
Claude Code interleaves side requests (titles, sub-agents) with the main conversation.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from typing import Any, get_args

from tokenlean._caches import Openings
from tokenlean._identity import ByIdentity, branch, same_objects
from tokenlean.proxy._scan import ScannedBody, rewritten_body
from tokenlean.raw import Api, list_key, strip_cache_control
from tokenlean.tokens import DEFAULT_COUNTER

__all__ = [
    "BLOCK_TEXTS_MAX_BYTES",
    "LISTS_MAX_BYTES",
    "MAX_LISTS",
    "RECENT_PROMPTS",
    "Block",
    "BlockCounter",
    "PrefixHistory",
    "labels_named",
    "prompt_blocks",
    "session_key",
]

#: Values that cost no prompt tokens as text (opaque signatures, base64 payloads).
_OPAQUE_KEYS = frozenset({"signature", "data", "encrypted_content", "image_url", "file_data"})
RECENT_PROMPTS = 8
#: Where the label of a session named by no one comes from. Its label is made apart from the
#: labels of names (:func:`labels_named`): a client that names a session sees its statistics
#: without the token, and naming a guessed first message must not confirm it.
_FROM_CONTENT = "first user message"

Block = tuple[str, int]  # (fingerprint, estimated tokens)
#: The message texts whose blocks are kept by identity: most are held by the scanner's recent
#: lists anyway, so this keeps little alive that is not already.
BLOCK_TEXTS_MAX_BYTES = 64 * 2**20


def session_key(
    api: Api, headers: Mapping[str, str], body: Mapping[str, Any], *, salt: bytes
) -> tuple[str, str]:
    """A short stable label for the session a request belongs to, and where it came from."""
    explicit = headers.get("x-tokenlean-session")
    if explicit:
        return _short(api, explicit, salt), "header"
    if api == "anthropic":
        metadata = body.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("user_id"), str):
            return _short(api, metadata["user_id"], salt), "metadata.user_id"
    else:
        for field in ("prompt_cache_key", "user"):
            if isinstance(body.get(field), str) and body[field]:
                return _short(api, body[field], salt), field
    first = _canonical(_first_user_message(api, body))
    return _short(f"{api} {_FROM_CONTENT}", first, salt), _FROM_CONTENT


def labels_named(name: str, *, salt: bytes) -> frozenset[str]:
    """The labels a session named ``name`` has in any API (by ``x-tokenlean-session``, or the
    client's own id: ``metadata.user_id``, ``prompt_cache_key``, ``user``)."""
    return frozenset(_short(api, name, salt) for api in get_args(Api))


def _first_user_message(api: Api, body: Mapping[str, Any]) -> Any:
    items = body.get(list_key(api))
    if isinstance(items, str):
        return items
    content = "parts" if api == "gemini" else "content"
    for item in items if isinstance(items, list) else ():
        if isinstance(item, Mapping) and item.get("role") == "user":
            return item.get(content)
    return None


def _short(api: str, text: str, salt: bytes) -> str:
    """Sessions of different APIs never share a cache, so the API is part of the key; a label
    made from content has its own (``"{api} first user message"``), which no name reaches."""
    data = f"{api}\n{text}".encode("utf-8", "surrogatepass")
    return hmac.new(salt, data, hashlib.sha256).hexdigest()[:12]


def _canonical(value: Any) -> str:
    return json.dumps(strip_cache_control(value), sort_keys=True, separators=(",", ":"))


def _leaves(value: Any, out: list[str]) -> list[str]:
    """The text a value puts in the prompt: keys and strings, opaque payloads left out."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            out.append(str(k))
            if k not in _OPAQUE_KEYS:
                _leaves(v, out)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out)
    elif value is not None:
        out.append(str(value))
    return out


def _text_tokens(value: Any) -> int:
    """Estimated tokens of the text in a JSON value, counted in one pass."""
    return DEFAULT_COUNTER.count(" ".join(_leaves(value, [])))


_HEAD_KEYS = ("model", "tools", "system", "instructions")
#: Gemini names the model in the URL; its system prompt and tool settings lead the prompt.
_GEMINI_HEAD_KEYS = ("tools", "toolConfig", "systemInstruction", "system_instruction")


def prompt_blocks(api: Api, body: ScannedBody) -> list[tuple[Any, str]]:
    """The body as cache-ordered blocks, each (value, the client's JSON text of it): model,
    tools and system first, then each message."""
    keys = _GEMINI_HEAD_KEYS if api == "gemini" else _HEAD_KEYS
    head = {k: body.values.get(k) for k in keys}
    head_text = "\n".join(body.texts.get(k, "null") for k in keys)
    items = body.items
    if not items and isinstance(body.values.get(list_key(api)), str):  # a bare string input
        items = [(body.values[list_key(api)], body.texts[list_key(api)])]
    return [(head, head_text), *items]


@dataclass(frozen=True, slots=True)
class _Counted:
    """A message list's texts (the objects), the blocks counted for them, and the bytes its
    first ``k + 1`` texts take (``sizes[k]``)."""

    texts: list[str]
    blocks: list[Block]
    sizes: list[int]


#: Message lists kept by the counter, received and sent each, charged their texts (most often
#: shared with the scanner's memo) and 32 bytes a message (list slots, a size).
MAX_LISTS = 1024
LISTS_MAX_BYTES = 64 * 2**20


def _shared_with(texts: list[str]) -> Callable[[_Counted], int]:
    """How many leading texts a counted list shares with ``texts`` (the same objects)."""
    return lambda counted: same_objects(counted.texts, texts)


def _lists() -> Openings[_Counted]:
    store: ByIdentity[tuple[tuple[_Counted, int], ...]]
    store = ByIdentity(max_entries=MAX_LISTS, max_bytes=LISTS_MAX_BYTES)
    return Openings(store, lambda counted: len(counted.texts))


class BlockCounter:
    """Fingerprints and token estimates of blocks, memoised by the block's text: a long history
    is counted once, and seen again costs a hash of its text per request.

    The fingerprint itself is taken from a canonical form without ``cache_control``, so a
    message keeps its fingerprint when the breakpoint moves off it and whatever the JSON
    formatting of the client (or of the rewrite).
    """

    def __init__(self, capacity: int = 100_000) -> None:
        # By the text object first: a re-sent message's text is the very string the scanner
        # kept (and a shortened one the one the splice wrote), so most blocks cost no hash.
        self._by_text: ByIdentity[Block] = ByIdentity(
            max_entries=capacity, max_bytes=BLOCK_TEXTS_MAX_BYTES
        )
        self._memo: OrderedDict[bytes, Block] = OrderedDict()
        # The last message lists counted, received and sent, by their second text object (where
        # a team's agents that open alike part: branch), several lists under one.
        self._received: Openings[_Counted] = _lists()
        self._sent: Openings[_Counted] = _lists()
        self._capacity = capacity
        self._lock = threading.Lock()

    def blocks(self, api: Api, body: ScannedBody) -> list[Block]:
        return self._blocks(prompt_blocks(api, body), self._received)

    def rewritten(
        self, api: Api, received: ScannedBody, blocks: Sequence[Block], sent: Mapping[str, Any]
    ) -> list[Block]:
        """The blocks of ``sent``, the rewrite of ``received`` (whose ``blocks`` are known): a
        block the rewrite left as it was is the received one, no parse and no hash needed."""
        new = prompt_blocks(api, rewritten_body(received, sent, list_key(api)))
        return self._blocks(new, self._sent)

    def _blocks(self, pairs: list[tuple[Any, str]], lists: Openings[_Counted]) -> list[Block]:
        """The blocks of ``pairs`` (the head's, then each message's). The messages a recent
        list of ``lists`` opened with the same text objects (a history re-sent: its texts are
        the very strings the scanner kept, or the splice wrote) take that list's blocks in one
        step, found by C-level identity comparisons; the others are looked up one by one."""
        head, items = pairs[0], pairs[1:]
        texts = list(map(itemgetter(1), items))
        kept, same = lists.find(branch(texts), _shared_with(texts)) if texts else (None, 0)
        blocks = [self._block(*head), *(kept.blocks[:same] if kept is not None else ())]
        blocks += [self._block(value, text) for value, text in items[same:]]
        if texts:  # charged its texts too: the scanner's memo may drop them first
            sizes = kept.sizes[:same] if kept is not None else []
            new = map(sys.getsizeof, texts[same:])
            sizes += accumulate(new, initial=sizes[-1] if sizes else 0)
            sizes.pop(same)  # the initial value
            counted = _Counted(texts, blocks[1:], sizes)
            lists.put(branch(texts), counted, sizes[-1] + 32 * len(texts), kept, same)
        return blocks

    def _block(self, value: Any, text: str) -> Block:
        block = self._by_text.get(text)
        if block is None:
            block = self._hashed(value, text)
            self._by_text.put(text, block, 64 + len(text))
        return block

    def _hashed(self, value: Any, text: str) -> Block:
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            block = self._memo.get(key)
            if block is not None:
                self._memo.move_to_end(key)
                return block
        value = strip_cache_control(value)  # a breakpoint is neither content nor tokens
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"))
        fingerprint = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
        block = (fingerprint, _text_tokens(value))
        with self._lock:
            self._memo[key] = block
            if len(self._memo) > self._capacity:
                self._memo.popitem(last=False)
        return block


class PrefixHistory:
    """The last few prompts of one session, to estimate how much of the next one is cached."""

    def __init__(self) -> None:
        self._recent: deque[Sequence[Block]] = deque(maxlen=RECENT_PROMPTS)

    def cached_tokens(self, blocks: Sequence[Block]) -> int:
        """The tokens of the longest run of leading blocks shared with a recent prompt."""
        shared = max((_common_prefix(blocks, earlier) for earlier in self._recent), default=0)
        return sum(tokens for _, tokens in blocks[:shared])

    def add(self, blocks: Sequence[Block]) -> None:
        self._recent.append(blocks)

    @property
    def size(self) -> int:
        """Bytes of the prompts kept (their lists: the blocks are shared with the counter's
        memo and with the other prompts of the session)."""
        return sum(sys.getsizeof(blocks) for blocks in self._recent)


def _common_prefix(blocks: Sequence[Block], earlier: Sequence[Block]) -> int:
    """How many leading blocks two prompts share, found by halving with C-level list
    comparisons (a block is its fingerprint and tokens: equal fingerprints, equal blocks)."""
    low, high = 0, min(len(blocks), len(earlier))
    while low < high:
        middle = (low + high + 1) // 2
        if blocks[low:middle] == earlier[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low
