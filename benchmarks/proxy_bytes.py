"""The bytes the proxy forwards, as one digest: run it on two trees to show a change kept them.

Usage (from the repository root; ``PYTHONPATH`` names the tree under test)::

    PYTHONPATH=src python -m benchmarks.proxy_bytes [--per-source 3] > bytes.txt

For each source below and each of the four APIs, the longest ``--per-source`` trajectories of
``shared/data/trajectories`` are turned into that API's request bodies, call by call (the history
so far, a breakpoint on the newest message), and each body goes through the proxy's own path in
order, twice (the second time is a re-sent history: the caches that reuse earlier work answer),
with a fresh originals folder at a fixed path per (source, API). Prints a sha256 over the
forwarded bodies per (source, API) and one over all of them; ``diff`` two runs' outputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from tokenlean.proxy._rewrite import Prepared, default_rewriter, prepare
from tokenlean.raw import Api
from tokenlean.raw.bodies import body, call_points, mark_newest
from tokenlean.replay._formats import load_trajectory

HERE = Path(__file__).parent
SHARED = Path(os.environ.get("TOKENLEAN_SHARED", HERE.parent.parent / "shared"))
TRAJECTORIES = SHARED / "data" / "trajectories"
SOURCES = (
    "openagents_claude_code",
    "entire_claude_code",
    "miniswe_deepseek",
    "codex_cli_rollouts",
    "sweagent",
    "tau2_retail_gpt41",
)
APIS: tuple[Api, ...] = ("anthropic", "openai_chat", "openai_responses", "gemini")
ORIGINALS = Path("/tmp/tokenlean-proxy-bytes-originals")


def forwarded(api: Api, raw: bytes, rewriter: Any) -> bytes:
    """What the proxy forwards for ``raw``: through the event loop's lane where this tree has
    one (``begin``), else ``prepare``."""
    try:
        from tokenlean.proxy._rewrite import begin
    except ImportError:  # a tree from before the lanes
        return prepare(rewriter, api, raw).content
    done = begin(rewriter, api, raw, encoding=None, limit=2**30)
    return (done if isinstance(done, Prepared) else done(lambda: False)).content


def digest(source: str, api: Api, per_source: int) -> tuple[str, int, int]:
    """(sha256 over the forwarded bodies, bodies, bodies the rewrite changed)."""
    shutil.rmtree(ORIGINALS, ignore_errors=True)
    rewriter = default_rewriter(ORIGINALS)
    paths = sorted((TRAJECTORIES / source).glob("*.json"), key=lambda p: p.stat().st_size)
    total, bodies, changed = hashlib.sha256(), 0, 0
    for path in paths[-per_source:]:
        messages = load_trajectory(path).messages
        for k in call_points(messages):
            raw = json.dumps(mark_newest(api, body(api, messages[:k], model="claude-x"))).encode()
            for _ in range(2):
                content = forwarded(api, raw, rewriter)
                total.update(hashlib.sha256(content).digest())
                bodies, changed = bodies + 1, changed + (content != raw)
    return total.hexdigest(), bodies, changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-source", type=int, default=3)
    args = parser.parse_args()
    if not TRAJECTORIES.is_dir():
        print(f"needs {TRAJECTORIES}", file=sys.stderr)
        return 2
    everything = hashlib.sha256()
    for source in SOURCES:
        for api in APIS:
            sha, bodies, changed = digest(source, api, args.per_source)
            everything.update(sha.encode())
            print(f"{source:24s} {api:17s} {bodies:5d} bodies {changed:5d} rewritten {sha[:16]}")
    print("all", everything.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
