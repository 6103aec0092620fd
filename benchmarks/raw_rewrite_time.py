"""What ``rewrite_request`` costs per request on a long history (CPU time in this process).

Usage (from the repository root)::

    python -m benchmarks.raw_rewrite_time [--tokens 200000] [--repeat 20]

Builds an Anthropic Messages conversation of about ``--tokens`` tokens from the coding runs in
``../shared/data/trajectories`` and times three cases: a *cold* process rewriting the whole
history (every long result shortened once), the *next turn* (the history plus one new tool
result, as a client sends it each turn; the memo resumes from the previous request), and the
*same request again* (a retry; the breakpoint moved). The bodies are read as an SDK user's or
the LiteLLM plug-in's are (not frozen: their objects may change), so a message is known again by
its content only; *cold* forgets that too. Prints p50 and p99 in milliseconds of
CPU time (``time.process_time``: the rewrite is single-threaded, and CPU time does not carry
the load of other work on a shared machine).
The proxy's added latency end to end is measured by the proxy's own benchmark.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tokenlean import _checkpoints
from tokenlean import raw as _raw
from tokenlean.raw import RawSettings, _reading, rewrite_request
from tokenlean.raw.bodies import body, call_points, mark_newest
from tokenlean.replay._formats import load_trajectory
from tokenlean.shorten._text import estimate_tokens
from tokenlean.transcript import Message

HERE = Path(__file__).parent
RUNS = HERE.parent.parent / "shared" / "data" / "trajectories" / "miniswe_deepseek"


def conversation(tokens: int) -> list[Message]:
    """Real coding runs, one after another, until the history reaches ``tokens``."""
    paths = sorted(RUNS.glob("*.json"), key=lambda p: -p.stat().st_size)
    messages: list[Message] = [Message(role="system", content="You are a coding agent.")]
    total = 0
    for path in paths:
        for message in load_trajectory(path).messages:
            if message.role != "system":
                messages.append(message)
                total += estimate_tokens(message.text)
        if total >= tokens:
            break
    return messages


def _times(run: Callable[[], float], repeat: int) -> str:
    samples = sorted(run() for _ in range(repeat))
    p99 = samples[min(len(samples) - 1, round(0.99 * (len(samples) - 1)))]
    return f"p50 {statistics.median(samples) * 1000:7.1f} ms   p99 {p99 * 1000:7.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    if not RUNS.is_dir():
        print(f"needs {RUNS}", file=sys.stderr)
        return 1
    messages = conversation(args.tokens)
    points = call_points(messages)
    last = mark_newest("anthropic", body("anthropic", messages[: points[-1]]))
    before = mark_newest("anthropic", body("anthropic", messages[: points[-2]]))
    settings = RawSettings(originals_dir=Path(tempfile.mkdtemp(prefix="tokenlean-originals-")))

    def timed(request: dict[str, object], *, prepare: Callable[[], object]) -> Callable[[], float]:
        def run() -> float:
            prepare()
            started = time.process_time()
            rewrite_request("anthropic", request, settings=settings)
            return time.process_time() - started

        return run

    size = sum(estimate_tokens(m.text) for m in messages[: points[-1]])
    print(f"history: {points[-1]} messages, ~{size:,} tokens (estimate)")

    def cold() -> None:  # what a new process knows: nothing planned, read or hashed
        settings.planner.forget()
        for memo in (_reading._CONTENTS, _checkpoints._CHAINS, _raw._OTHER_BY_CONTENT):
            memo.clear()

    print("cold (new process)  ", _times(timed(last, prepare=cold), max(3, args.repeat // 4)))

    def after_previous() -> None:
        settings.planner.forget()
        rewrite_request("anthropic", before, settings=settings)

    print("next turn           ", _times(timed(last, prepare=after_previous), args.repeat))
    print("same request again  ", _times(timed(last, prepare=lambda: None), args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
