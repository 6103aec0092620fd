"""What keeping originals on Redis costs: a put under the cap, over it within the grace, and past
the hard cap (a flood, where each put deletes the least recently used); and a re-sent history's
originals, put again a minute later.

Usage (from the repository root; needs ``redis-server`` and ``pip install 'tokenlean[redis]'``)::

    python -m benchmarks.redis_puts [--puts 1500] [--cap-kb 500] [--rounds 3] [--history 200]

Each round starts a ``redis-server`` of its own on 127.0.0.1 (no persistence, a temporary
folder) and puts ``--puts`` distinct originals of 1,000 bytes, one after the other, as a proxy
puts a history's new outputs, into a store capped at ``--cap-kb`` KB. Every put is timed on the
wall clock (it is a round trip or two) and counted in the band the store's total was in before
it: the first ``cap`` puts are under the cap, the next half cap over it but within the grace
(every one used just now: each put sweeps, and the sweep keeps them all), the rest past the
hard cap. Prints the median and 99th percentile of each band, in microseconds, per round.

Then, in each round, a request whose history holds ``--history`` long tool results, each its
own, is rewritten as the proxy rewrites it (``tokenlean.raw.rewrite_request`` with the store on
that server), and again 20 times. Each time, the store first forgets which originals it put
lately: as it does a minute later (or as another worker that planned the history does), it
asks the server about every original of the history. Prints the median milliseconds of wall
time of those requests, and of the same requests while the store remembers them (no round
trip at all).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tokenlean._retention import hard_cap
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.redis_store import RedisOriginalStore
from tokenlean.store import Original, make_handle

SIZE = 1000  # bytes per original
BANDS = ("under the cap", "over the cap, within the grace", "past the hard cap")


@contextmanager
def redis_server() -> Iterator[str]:
    """A ``redis-server`` on a free port of 127.0.0.1; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    with tempfile.TemporaryDirectory(prefix="tokenlean-redis-") as folder:
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", folder]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        try:
            _wait(port)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            process.wait(30)


def _wait(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def band_of(total: int, cap: int) -> str:
    """The band a put falls in when the store held ``total`` bytes before it."""
    if total < cap:
        return BANDS[0]
    return BANDS[1] if total < hard_cap(cap) else BANDS[2]


def put_times(url: str, *, puts: int, cap: int) -> dict[str, list[float]]:
    """The seconds of each of ``puts`` distinct puts of :data:`SIZE` bytes, by band."""
    store = RedisOriginalStore(url, max_bytes=cap)
    out: dict[str, list[float]] = {band: [] for band in BANDS}
    for i in range(puts):
        text = f"{i:09d}\n".ljust(SIZE, "x")
        original = Original(make_handle("o", text), text)
        start = time.perf_counter()
        store.put("", original)
        out[band_of(i * SIZE, cap)].append(time.perf_counter() - start)
    return out


def history(results: int) -> dict[str, Any]:
    """An OpenAI chat request whose history holds ``results`` long tool results, each its own."""
    log = "\n".join(f"tests/test_{i}.py::test_case PASSED" for i in range(300))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "run the tests"}]
    for i in range(results):
        arguments = '{"command": "pytest"}'
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": arguments},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{log}\nrun {i}"})
    messages.append({"role": "user", "content": "go on"})
    tools = [{"type": "function", "function": {"name": "mcp__tokenlean__read_original"}}]
    return {"model": "m", "messages": messages, "tools": tools}


def resent_ms(url: str, results: int, repeat: int = 20) -> tuple[float, float]:
    """The median milliseconds of a re-sent history's request, its originals asked about again
    (as a minute later), and remembered."""
    settings = RawSettings(originals_url=url, retrieval="mcp")
    body = history(results)
    rewrite_request("openai_chat", body, settings=settings)  # planned, and its originals put
    store: Any = settings.store
    times: dict[bool, list[float]] = {True: [], False: []}
    for again in [True, False] * repeat:
        if again:
            store._lately.forget()  # what a minute does to what it remembers putting
        start = time.perf_counter()
        rewrite_request("openai_chat", body, settings=settings)
        times[again].append(1000 * (time.perf_counter() - start))
    return statistics.median(times[True]), statistics.median(times[False])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--puts", type=int, default=1500)
    parser.add_argument("--cap-kb", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--history", type=int, default=200)
    args = parser.parse_args()
    resent: list[tuple[float, float]] = []
    print("| round | band | puts | median us | p99 us |")
    print("|---:|---|---:|---:|---:|")
    for round_ in range(1, args.rounds + 1):
        with redis_server() as url:
            times = put_times(url, puts=args.puts, cap=args.cap_kb * SIZE)
            resent.append(resent_ms(url, args.history))
        for band, seconds in times.items():
            if seconds:
                p99 = sorted(seconds)[int(0.99 * (len(seconds) - 1))]
                median = statistics.median(seconds)
                print(
                    f"| {round_} | {band} | {len(seconds)} | {1e6 * median:.0f} | {1e6 * p99:.0f} |"
                )
    print()
    print(f"A re-sent history of {args.history} tool results, median ms a request:")
    print("| round | its originals asked about again | remembered |")
    print("|---:|---:|---:|")
    for round_, (again, remembered) in enumerate(resent, 1):
        print(f"| {round_} | {again:.1f} | {remembered:.1f} |")


if __name__ == "__main__":
    main()
