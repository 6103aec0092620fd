"""``headroom-ai``'s message compression as a replay strategy, run offline.

Load with ``tokenlean replay --plugin benchmarks.peers_headroom`` from the repository root, with
``headroom-ai`` installed (``benchmarks/requirements-peers.txt``). Headroom is a proxy-style
library: :func:`headroom.compress` rewrites the whole message list before each request. We call it
the way its docs tell library users to: on every model call, passing the previous request's
message count as ``frozen_message_count`` so it leaves the cached prefix alone.

Offline (``HEADROOM_OFFLINE=1``, set here) its ML text compressor cannot load its model, so what
runs is its rule-based routing and JSON crushing. Tokens are counted by headroom with tiktoken;
``TIKTOKEN_CACHE_DIR`` is pointed at a folder of the local vocabularies so it never tries the
network.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from tokenlean.replay._strategies import register
from tokenlean.tokens import TIKTOKEN_CACHE_KEYS


def _offline_tiktoken_cache() -> None:
    vocab_dir = os.environ.get("TOKENLEAN_TIKTOKEN_DIR")
    if not vocab_dir or os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    cache = Path(tempfile.gettempdir()) / "tokenlean-tiktoken-cache"
    cache.mkdir(exist_ok=True)
    for name, key in TIKTOKEN_CACHE_KEYS.items():
        source, target = Path(vocab_dir) / f"{name}.tiktoken", cache / key
        if source.is_file() and not target.is_file():
            target.write_bytes(source.read_bytes())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def _headroom(model: str = "gpt-4o") -> list[Any]:
    os.environ.setdefault("HEADROOM_OFFLINE", "1")
    _offline_tiktoken_cache()
    from headroom import compress
    from headroom.compress import CompressConfig
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages

    class HeadroomCompress(AgentMiddleware):  # type: ignore[type-arg]
        """Runs ``headroom.compress`` over each request (request-only, like its proxy)."""

        def __init__(self) -> None:
            self.frozen = 0

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            messages = convert_to_openai_messages(list(request.messages))
            config = CompressConfig(frozen_message_count=self.frozen)
            result = compress(messages, model=model, config=config)
            self.frozen = len(messages)
            return handler(request.override(messages=convert_to_messages(result.messages)))

    return [HeadroomCompress()]


register("headroom", _headroom, "headroom-ai 0.42 compress() per request, offline", default=False)
