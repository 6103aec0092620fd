"""Memory the proxy keeps while bodies carrying images flood it (resident memory of this
process).

Run from the repository root::

    python -m benchmarks.proxy_memory [--bodies 3000] [--image-kb 400] [--every 1000]

Each body is a new conversation of three messages: a user message and a tool result that each
show the same screenshot (a distinct random PNG-sized base64 string per body, ``--image-kb`` KB),
and the call between them. Each goes through what the proxy does with a request, in this
process: the body is read and rewritten (``prepare``, as frozen bodies) and its blocks counted
for the statistics. Prints the resident memory every ``--every`` bodies (after a garbage
collection): it levels off where the proxy's memos are full, if each is charged for what it
keeps alive, and grows with every body if one is not.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from tokenlean.proxy._rewrite import default_rewriter, prepare
from tokenlean.proxy._sessions import BlockCounter


def resident_mb() -> float:
    """This process's resident memory (Linux ``/proc``; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except OSError:
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def body(n: int, image_bytes: int) -> bytes:
    """The ``n``-th conversation's request: a screenshot shown twice, a call between."""
    data = base64.b64encode(os.urandom(image_bytes * 3 // 4)).decode()
    picture = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": data},
    }
    call = {"type": "tool_use", "id": f"shot_{n}", "name": "Screenshot", "input": {}}
    result = {"type": "tool_result", "tool_use_id": f"shot_{n}", "content": [picture]}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": f"what is on screen {n}?"}, picture]},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    return json.dumps({"model": "claude-bench", "max_tokens": 1024, "messages": messages}).encode()


def flood(bodies: int, image_kb: int, every: int) -> list[tuple[int, float]]:
    """(bodies so far, resident MB) every ``every`` bodies."""
    with tempfile.TemporaryDirectory() as originals:
        rewriter = default_rewriter(Path(originals))
        counter = BlockCounter()
        out = []
        for n in range(bodies):
            prepared = prepare(rewriter, "anthropic", body(n, image_kb * 1024))
            if prepared.body is not None:
                counter.blocks("anthropic", prepared.body)
            del prepared
            if (n + 1) % every == 0:
                gc.collect()
                out.append((n + 1, resident_mb()))
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bodies", type=int, default=3000)
    parser.add_argument("--image-kb", type=int, default=400, help="each screenshot's base64 size")
    parser.add_argument("--every", type=int, default=1000, help="bodies between two readings")
    args = parser.parse_args()
    print(f"start: {resident_mb():.0f} MB resident")
    for n, mb in flood(args.bodies, args.image_kb, args.every):
        read = n * args.image_kb / 1024
        print(f"{n:,} bodies ({read:,.0f} MB of screenshots read): {mb:.0f} MB resident")
    return 0


if __name__ == "__main__":
    sys.exit(main())
