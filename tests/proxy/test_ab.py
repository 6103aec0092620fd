"""``tokenlean proxy --ab SHARE``: 40 sessions over a real proxy in front of the fake provider.

Control sessions reach the upstream byte for byte, tokenlean ones rewritten; every request of a
session stays in its arm, in two proxy processes sharing the salt; ``/metrics`` shows both arms;
the session log has one line per session, and ``tokenlean ab report`` reads it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from tokenlean.cli import main
from tokenlean.proxy import default_rewriter
from tokenlean.testing.upstream import FakeUpstream, Recorded, Reply, anthropic_message, json_reply

from .proxy_support import PASSING_LOG, ProxyFactory, free_port

SALT = "fleet-salt-0123456789"
SESSIONS = 40
TURNS = 3
GENEROUS = 60.0


def _usage_script(request: Recorded) -> Reply:
    """Answers as Anthropic would, reporting a prompt of about a token per four bytes."""
    usage = {"input_tokens": len(request.body) // 4, "output_tokens": 7}
    return json_reply(anthropic_message("ok", usage=usage))


def _bodies(session: int) -> list[bytes]:
    """The requests of one session: each turn re-sends the history and adds a long test log."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"session {session}: run it"}]
    bodies = []
    for turn in range(TURNS):
        call_id = f"call_{session}_{turn}"
        call = {"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": "pytest"}}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": PASSING_LOG}
        if turn == TURNS - 1 and session % 4 == 0:
            result["is_error"] = True
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
        body = {"model": "claude-test", "max_tokens": 8, "messages": messages}
        bodies.append(json.dumps(body).encode())
    return bodies


def _send_all(url: str, sessions: range) -> dict[bytes, int]:
    """Sends every session's turns, interleaved; the session of each body sent."""
    sent: dict[bytes, int] = {}
    with httpx.Client(timeout=GENEROUS) as client:
        for turn in range(TURNS):
            for session in sessions:
                body = _bodies(session)[turn]
                sent[body] = session
                reply = client.post(url + "/v1/messages", content=body)
                assert reply.status_code == 200
    return sent


def _session_of(recorded: Recorded) -> int:
    first = recorded.json()["messages"][0]["content"]
    return int(first.split()[1].rstrip(":"))


def _arms_seen(upstream: FakeUpstream, sent: dict[bytes, int]) -> dict[int, set[str]]:
    """Per session, the arms its requests were seen in at the upstream."""
    seen: dict[int, set[str]] = defaultdict(set)
    for r in upstream.requests:
        session = _session_of(r)
        if r.body in sent:
            assert sent[r.body] == session
            seen[session].add("control")
        else:
            assert len(r.body) < min(len(b) for b, s in sent.items() if s == session)
            seen[session].add("tokenlean")
    return seen


def _log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def fake() -> Any:
    with FakeUpstream(script=_usage_script) as upstream:
        yield upstream


def test_ab_half_splits_sessions_into_two_stable_arms(
    fake: FakeUpstream, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from tokenlean.proxy import BackgroundProxy, ProxySettings, create_app

    log = tmp_path / "ab.jsonl"
    settings = ProxySettings(upstream=fake.url, session_salt=SALT, ab_share=0.5, ab_log=log)
    proxy = BackgroundProxy(create_app(settings, rewriter=default_rewriter(tmp_path))).start()
    try:
        sent = _send_all(proxy.url, range(SESSIONS))
        assert len(fake.requests) == SESSIONS * TURNS
        metrics = httpx.get(proxy.url + "/metrics", timeout=GENEROUS).text
    finally:
        proxy.stop()  # the open sessions are finished and logged

    seen = _arms_seen(fake, sent)
    assert all(len(arms) == 1 for arms in seen.values())  # each session in one arm
    arm_of = {s: next(iter(arms)) for s, arms in seen.items()}
    counts = {arm: sum(1 for a in arm_of.values() if a == arm) for arm in ("control", "tokenlean")}
    assert counts["control"] > 0 and counts["tokenlean"] > 0
    for arm, n in counts.items():
        assert f'tokenlean_ab_sessions_total{{arm="{arm}"}} {n}' in metrics
        assert f'tokenlean_ab_requests_total{{arm="{arm}"}} {n * TURNS}' in metrics

    lines = _log_lines(log)
    assert len(lines) == SESSIONS and len({line["session"] for line in lines}) == SESSIONS
    assert sorted(line["arm"] for line in lines) == sorted(arm_of.values())
    assert {line["ended"] for line in lines} == {"shutdown"}
    assert all(line["requests"] == TURNS and line["output_tokens"] == 7 * TURNS for line in lines)
    assert sum(line["tool_errors"] for line in lines) == SESSIONS // 4

    assert main(["ab", "report", str(log)]) == 0
    out = capsys.readouterr().out
    assert f"{SESSIONS} sessions" in out
    assert "control " in out and "tokenlean " in out
    assert "difference (tokenlean - control):" in out and "95% interval" in out
    assert "the tokenlean arm costs" in out and "less per session" in out


def _start_cli(url: str, port: int, log: Path, originals: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port), "-q"]
    command += ["--upstream", url, "--originals", str(originals), "--ab", "0.5"]
    command += ["--ab-log", str(log), "--salt", SALT]
    return subprocess.Popen(command, stderr=subprocess.PIPE, text=True)


def _wait_up(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + GENEROUS
    while True:
        try:
            httpx.get(url + "/metrics", timeout=GENEROUS)
            return
        except httpx.TransportError:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.1)


def test_two_proxy_processes_with_one_salt_agree_and_the_report_reads_both_logs(
    fake: FakeUpstream, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """Each session's turns go alternately to one proxy process and the other."""
    ports, logs = [free_port(), free_port()], [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    processes = [_start_cli(fake.url, p, log, tmp_path) for p, log in zip(ports, logs, strict=True)]
    try:
        for port, process in zip(ports, processes, strict=True):
            _wait_up(f"http://127.0.0.1:{port}", process)
        sent: dict[bytes, int] = {}
        for turn in range(TURNS):
            for session in range(SESSIONS // 2):
                body = _bodies(session)[turn]
                sent[body] = session
                url = f"http://127.0.0.1:{ports[(session + turn) % 2]}/v1/messages"
                assert httpx.post(url, content=body, timeout=GENEROUS).status_code == 200
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        for process in processes:
            process.communicate(timeout=GENEROUS)
    assert all(p.returncode == 0 for p in processes)
    seen = _arms_seen(fake, sent)
    assert all(len(arms) == 1 for arms in seen.values())  # whichever process forwarded it
    lines = [line for log in logs for line in _log_lines(log)]
    assert len(lines) == 2 * (SESSIONS // 2)  # one part per session in each process
    assert main(["ab", "report", *map(str, logs), str(logs[0])]) == 0  # a log given twice
    out = capsys.readouterr().out
    assert (
        f"{SESSIONS // 2} sessions from {3 * SESSIONS // 2} lines ({SESSIONS // 2} read twice"
        in out
    )
    assert "difference (tokenlean - control):" in out


def test_ab_share_is_checked():
    from tokenlean.proxy import ProxySettings

    with pytest.raises(ValueError, match="ab_share"):
        ProxySettings(ab_share=1.5)


def test_ab_off_keeps_metrics_without_arms(make_proxy: ProxyFactory):
    proxy = make_proxy()
    assert "tokenlean_ab_" not in httpx.get(proxy.url + "/metrics", timeout=GENEROUS).text
