"""Originals on Redis, against a real ``redis-server`` the tests start (tests/redis_server.py):
the store protocol, content addressing under a prefix, the TTL set again on use, the size cap,
the password kept out of sight, and an unreachable server failing open."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.data import LOG
from tests.redis_server import RoundTrips, client, free_port, monitored, redis_server
from tokenlean import _redis_calls, redis_store
from tokenlean._retention import GRACE_MAX_SHARE
from tokenlean.cli import main
from tokenlean.history import keeping
from tokenlean.proxy import ProxySettings
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.redis_store import RedisOriginalStore
from tokenlean.store import Original, OriginalStore, StoreUnavailable, make_handle

pytest.importorskip("redis", reason="the redis package is missing: pip install 'tokenlean[redis]'")

HOUR = 3600.0
SECRET = "s3cret-Pa55word-xyz"


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path / "redis") as running:
        yield running


def _original(text: str, **more: Any) -> Original:
    return Original(make_handle("o", text), text, **more)


def _age(url: str, store: RedisOriginalStore, original: Original, seconds: float) -> None:
    """Mark ``original`` last used ``seconds`` ago (as the folder tests set an mtime)."""
    redis = client(url)
    now = float(redis.time()[0])
    redis.zadd(store.prefix + "used", {original.handle: now - seconds})


def test_puts_and_gets_under_the_prefix_by_content(url: str):
    store = RedisOriginalStore(url, prefix="team-a:")
    original = _original(LOG, tool="bash", tool_call_id="c1")
    store.put("", original)
    assert isinstance(store, OriginalStore)
    assert store.get("", original.handle) == original
    assert RedisOriginalStore(url, prefix="team-a:").get("", original.handle) == original
    assert RedisOriginalStore(url).get("", original.handle) is None  # another prefix
    assert store.get("thread-2", original.handle) is None  # another scope
    assert store.get("", "../etc/passwd") is None  # not a handle's shape: never looked up
    keys = {k.decode() for k in client(url).keys("*")}
    assert all(k.startswith("team-a:") for k in keys)
    assert f"team-a:o:{original.handle}" in keys


def test_the_same_text_from_two_processes_is_one_key_counted_once(url: str):
    first, second = RedisOriginalStore(url), RedisOriginalStore(url)
    first.put("", _original(LOG))
    second.put("", _original(LOG))
    redis = client(url)
    assert int(redis.get(first.prefix + "bytes")) == len(LOG.encode())
    assert redis.zcard(first.prefix + "used") == 1


async def test_async_twins(url: str):
    store = RedisOriginalStore(url)
    original = _original("one\ntwo")
    await store.aput("s", original)
    assert await store.aget("s", original.handle) == original


def test_a_read_sets_the_ttl_again_to_the_writers_age_limit(url: str):
    writer = RedisOriginalStore(url, max_age=HOUR)
    original = _original(LOG)
    writer.put("", original)
    redis, key = client(url), writer.key("", original.handle)
    assert HOUR - 5 < redis.ttl(key) <= HOUR
    redis.expire(key, 30)
    reader = RedisOriginalStore(url)  # tokenlean mcp: the default (7 days) limit
    assert reader.get("", original.handle) == original
    assert HOUR - 5 < redis.ttl(key) <= HOUR  # the writer's limit, not the reader's


def test_a_put_from_another_process_sets_the_ttl_again(url: str):
    original = _original(LOG)
    RedisOriginalStore(url, max_age=HOUR).put("", original)
    redis, key = client(url), RedisOriginalStore(url).key("", original.handle)
    redis.expire(key, 30)
    RedisOriginalStore(url, max_age=HOUR).put("", original)  # a second proxy, same history
    assert HOUR - 5 < redis.ttl(key) <= HOUR


def test_past_the_cap_the_least_recently_used_go_first(url: str):
    store = RedisOriginalStore(url, max_bytes=1000)
    old = [_original(f"{i}\n" + "x" * 300) for i in range(3)]
    for age, original in zip((3 * HOUR, 2 * HOUR, HOUR), old, strict=True):
        store.put("", original)
        _age(url, store, original, age)
    fresh = _original("new\n" + "y" * 300)
    RedisOriginalStore(url, max_bytes=1000).put("", fresh)  # over the cap: a sweep
    assert store.get("", old[0].handle) is None and store.evicted("", old[0].handle)
    assert [store.get("", o.handle) for o in old[1:]] == old[1:]
    assert store.get("", fresh.handle) == fresh
    assert int(client(url).get(store.prefix + "bytes")) <= 1000
    RedisOriginalStore(url).put("", old[0])  # written again: no longer "evicted"
    assert not store.evicted("", old[0].handle)


def test_what_was_used_within_the_grace_stays_over_the_cap(url: str):
    store = RedisOriginalStore(url, max_bytes=700)  # 906 bytes: over the cap, within the grace
    recent = [_original(f"{i}\n" + "x" * 300) for i in range(3)]
    for original in recent:
        store.put("", original)
    assert store.prune().files == 0  # a live conversation may point at every one
    assert [store.get("", o.handle) for o in recent] == recent


@pytest.mark.parametrize("batch", [False, True], ids=["one by one", "in one batch"])
def test_a_flood_of_new_originals_is_capped_even_inside_the_grace(url: str, batch: bool):
    """As in the folder: the grace protects what live conversations point at, not a flood of
    new bodies (before, nothing used in the last ten minutes was ever deleted: 40 KB here).
    A request's originals put in one batch are swept after it, to the same bound."""
    cap = 10_000
    store = RedisOriginalStore(url, max_bytes=cap)
    originals = [_original(f"{i:04d}\n" + "x" * 995) for i in range(40)]  # 1,000 bytes each
    if batch:
        store.put_many("", originals)
    else:
        for original in originals:
            store.put("", original)  # each one used just now, as the proxy writes them

    assert int(client(url).get(store.prefix + "bytes")) <= cap * (1 + GRACE_MAX_SHARE)
    kept = [i for i, o in enumerate(originals) if store.get("", o.handle) is not None]
    assert kept == list(range(40 - len(kept), 40))  # the newest stay: they are what markers name
    assert all(store.evicted("", originals[i].handle) for i in range(40 - len(kept)))


def _flood(url: str, cap: int) -> None:
    """Another process writes 40 new originals of 1,000 bytes to a store capped at ``cap``."""
    RedisOriginalStore(url, max_bytes=cap).put_many(
        "", [_original(f"{i:04d}\n" + "y" * 995) for i in range(40)]
    )


def test_an_original_a_flood_deleted_is_put_again_by_the_process_that_skips_it(url: str):
    """A process skips what it put in the last minute. Past the hard cap a flood deletes even
    what was used just now, and the skipping process put it again only a minute later (the
    folder store writes it at the next request). It now reads the server's count of such
    sweeps at most a second later, and then puts everything again."""
    cap = 10_000
    proxy = RedisOriginalStore(url, max_bytes=cap)
    live = _original("live\n" + "x" * 995)
    proxy.put_many("", [live])
    _flood(url, cap)
    assert proxy.get("", live.handle) is None and proxy.evicted("", live.handle)
    time.sleep(redis_store.FLOODS_READ_EVERY)
    proxy.put_many("", [live])
    assert proxy.get("", live.handle) == live


def test_a_process_whose_own_flood_deleted_an_original_puts_it_again_at_once(url: str):
    """The sweep after a request of 40 new originals deletes ``live``: the same process
    reads the count again at its next request, however soon."""
    store = RedisOriginalStore(url, max_bytes=10_000)
    live = _original("live\n" + "x" * 995)
    store.put_many("", [live])
    store.put_many("", [_original(f"{i:04d}\n" + "y" * 995) for i in range(40)])
    assert store.get("", live.handle) is None
    store.put_many("", [live])
    assert store.get("", live.handle) == live


def test_what_was_skipped_is_put_again_in_the_request_that_learns_of_a_flood(url: str):
    """A request with new originals reads the flood count in the round trip it makes anyway;
    when it moved, the originals of that request that were skipped are sent too."""
    cap = 10_000
    proxy = RedisOriginalStore(url, max_bytes=cap)
    live = _original("live\n" + "x" * 995)
    proxy.put_many("", [live])
    _flood(url, cap)
    time.sleep(redis_store.FLOODS_READ_EVERY)
    new = _original("new\n" + "z" * 995)
    with monitored(url) as commands:
        proxy.put_many("", [live, new])
    assert [proxy.get("", o.handle) for o in (live, new)] == [live, new]
    asked = [line for line in commands if '"GET"' in line and "lua]" not in line]
    assert [line.split()[-1] for line in asked] == [f'"{proxy.prefix}floods"']  # once, by the store


def test_nothing_new_to_put_reads_the_flood_count_at_most_once_a_second(url: str):
    with RoundTrips(url) as trips:
        store = RedisOriginalStore(trips.url)
        originals = [_original(f"{i}\n" + LOG) for i in range(5)]
        store.put_many("", originals)
        start = trips.count
        store.put_many("", originals)
        assert trips.count == start  # all put just now, the count read just now
        time.sleep(redis_store.FLOODS_READ_EVERY)
        store.put_many("", originals)
        assert trips.count == start + 1  # the count, unmoved: nothing else sent
        store.put_many("", originals)
        assert trips.count == start + 1


def test_an_unreachable_server_does_not_fail_a_request_with_nothing_new(tmp_path: Path):
    """Reading the flood count is no write: when it fails, what was put lately is still
    skipped, as before, and the request is not failed for it."""
    with redis_server(tmp_path / "redis") as url:
        store = RedisOriginalStore(url)
        original = _original("kept\n" + LOG)
        store.put_many("", [original])
    time.sleep(redis_store.FLOODS_READ_EVERY)  # the server has stopped
    store.put_many("", [original])
    assert not store.reachable
    with pytest.raises(StoreUnavailable):
        store.put_many("", [_original("new\n" + LOG)])


def test_a_put_right_after_a_prune_does_not_sweep_again(url: str):
    """A prune is a sweep: the next one a writer owes is due from then (the first write
    after a prune swept again)."""
    store = RedisOriginalStore(url)
    store.prune()
    with monitored(url) as commands:
        store.put("", _original("first\n" + LOG))
    assert [line for line in commands if '"EXPIRE"' in line]  # the put ran
    assert not [line for line in commands if '"ZRANGE"' in line]


def test_a_put_over_the_cap_reads_a_page_of_the_use_order_not_a_thousand(url: str):
    """Over the cap but within the grace, every put sweeps, and the sweep stops at the first
    entry: it reads a page of the use order, not the 1,000 entries a sweep may go through
    (which made each such put cost five times a plain one)."""
    store = RedisOriginalStore(url, max_bytes=10_000)
    for i in range(12):  # 12,000 bytes, all used just now: over the cap, within the grace
        store.put("", _original(f"{i:04d}\n" + "x" * 995))
    with monitored(url) as commands:
        store.put("", _original("0012\n" + "y" * 995))
    ranges = [line.split('"')[5:8:2] for line in commands if '"ZRANGE"' in line]
    assert ranges, "the put over the cap swept"
    assert sum(int(stop) - int(start) + 1 for start, stop in ranges) <= 16
    assert int(client(url).get(store.prefix + "bytes")) == 13 * 1000  # nothing deleted


def test_a_sweep_of_many_goes_page_by_page_and_misses_none(url: str):
    """Pages of the use order: a dry run counts each entry once, a sweep deletes every one
    (a deleted page leaves the set, so the next page starts where it started)."""
    store = RedisOriginalStore(url, max_age=HOUR)
    stale = [_original(f"stale {i}\n" + LOG) for i in range(40)]
    for original in stale:
        store.put("", original)
        _age(url, store, original, 2 * HOUR)
    live = _original("live\n" + LOG)
    store.put("", live)
    assert (store.prune(dry_run=True).files, store.prune(dry_run=True).kept_files) == (40, 1)
    done = store.prune()
    assert (done.files, done.kept_files) == (40, 1)
    assert all(store.get("", o.handle) is None for o in stale)
    assert store.get("", live.handle) == live


def test_prune_deletes_past_the_age_limit_and_dry_run_only_counts(url: str):
    store = RedisOriginalStore(url, max_age=HOUR)
    stale, live = _original("stale\n" + LOG), _original("live\n" + LOG)
    store.put("", stale)
    store.put("", live)
    _age(url, store, stale, 2 * HOUR)
    dry = store.prune(dry_run=True)
    assert (dry.files, dry.kept_files) == (1, 1)
    assert store.get("", stale.handle) == stale  # counted, not deleted
    _age(url, store, stale, 2 * HOUR)  # the read above marked it used
    done = store.prune()
    assert (done.files, done.bytes, done.kept_files) == (1, len(stale.text.encode()), 1)
    assert store.get("", stale.handle) is None and store.evicted("", stale.handle)
    assert store.get("", live.handle) == live


def test_the_password_comes_from_the_environment_and_is_never_shown(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
):
    with redis_server(tmp_path / "redis", password=SECRET) as url:
        monkeypatch.setenv("TOKENLEAN_REDIS_PASSWORD", SECRET)
        store = RedisOriginalStore(url)
        original = _original(LOG)
        store.put("", original)
        assert store.get("", original.handle) == original
        with_secret = url.replace("redis://", f"redis://:{SECRET}@")
        monkeypatch.delenv("TOKENLEAN_REDIS_PASSWORD")
        in_url = RedisOriginalStore(with_secret)
        assert in_url.get("", original.handle) == original
        settings = RawSettings(originals_url=with_secret, retrieval="mcp")
        proxy_settings = ProxySettings(originals_url=with_secret)
        assert main(["originals", "prune", "--originals", with_secret, "--dry-run"]) == 0
        printed = capsys.readouterr().out
        wrong = RedisOriginalStore(url.replace("redis://", f"redis://:{SECRET}-typo@"))
        with caplog.at_level(logging.WARNING), pytest.raises(StoreUnavailable) as raised:
            wrong.put("", original)
    shown = [repr(in_url), str(in_url), in_url.url, repr(settings), repr(wrong), str(raised.value)]
    shown += [repr(proxy_settings), printed]
    shown += [r.getMessage() for r in caplog.records]
    assert "cannot be reached" in caplog.text
    assert not [s for s in shown if SECRET in s]
    assert "redis://:***@127.0.0.1" in repr(in_url)
    assert printed.startswith("would remove 0 originals (0 bytes) from redis://:***@127.0.0.1")
    assert "1 kept" in printed


def test_rediss_with_the_password_from_the_environment_never_shown(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
):
    """A server that speaks only TLS, its certificate signed by a CA made here (named in the
    URL's ``ssl_ca_certs``), its password only in the environment."""
    with redis_server(tmp_path / "redis", password=SECRET, tls=True) as url:
        monkeypatch.setenv("TOKENLEAN_REDIS_PASSWORD", SECRET)
        original = _original(LOG)
        with caplog.at_level(logging.DEBUG):
            store = RedisOriginalStore(url)
            store.put("", original)
            assert store.get("", original.handle) == original
            assert client(url, SECRET).keys(store.prefix + "*")  # written over TLS
            in_url = RedisOriginalStore(url.replace("rediss://", f"rediss://:{SECRET}@"))
            assert in_url.get("", original.handle) == original
            settings = RawSettings(originals_url=url, retrieval="mcp")
            assert main(["originals", "prune", "--originals", url, "--dry-run"]) == 0
            # The system's CAs do not trust this server: the handshake fails, and says so.
            untrusted = RedisOriginalStore(url.split("?")[0])
            with pytest.raises(StoreUnavailable) as raised:
                untrusted.put("", original)
        printed = capsys.readouterr()
    assert printed.out.startswith("would remove 0 originals (0 bytes) from rediss://127.0.0.1")
    assert "certificate verify failed" in caplog.text
    shown = [repr(store), str(store), repr(in_url), repr(settings), str(raised.value)]
    shown += [printed.out, printed.err, *(r.getMessage() for r in caplog.records)]
    assert not [s for s in shown if SECRET in s]


def test_an_unreachable_server_fails_open_and_is_logged_once(caplog: pytest.LogCaptureFixture):
    store = RedisOriginalStore(f"redis://127.0.0.1:{free_port()}/0")
    original = _original(LOG)
    with caplog.at_level(logging.WARNING, logger="tokenlean.store"):
        with pytest.raises(StoreUnavailable):
            store.put("", original)
        with pytest.raises(StoreUnavailable):
            store.put("", original)
        assert store.get("", original.handle) is None
        assert not store.evicted("", original.handle)
    assert not store.reachable
    assert len([r for r in caplog.records if "cannot be reached" in r.getMessage()]) == 1


def test_the_server_back_is_used_again_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(_redis_calls, "RETRY_AFTER", 0.0)  # try again at once
    port = free_port()
    store = RedisOriginalStore(f"redis://127.0.0.1:{port}/0")
    original = _original(LOG)
    with pytest.raises(StoreUnavailable):
        store.put("", original)
    with redis_server(tmp_path / "redis", port=port), caplog.at_level(logging.WARNING):
        store.put("", original)
        assert store.get("", original.handle) == original
    assert store.reachable
    assert "is reachable again" in caplog.text


def _body(*, served: bool) -> dict[str, Any]:
    script = "\n".join(f"echo step {i}" for i in range(300))
    call = {"id": "c1", "type": "function"}
    call["function"] = {"name": "bash", "arguments": f'{{"script": "{script}"}}'}  # type: ignore[assignment]  # a JSON object in a string
    tools = [{"type": "function", "function": {"name": "mcp__tokenlean__read_original"}}]
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "run the tests"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": LOG},
            {"role": "user", "content": "fix it"},
        ],
        **({"tools": tools} if served else {}),
    }


def test_a_request_goes_as_it_came_when_the_server_is_unreachable(
    caplog: pytest.LogCaptureFixture,
):
    settings = RawSettings(originals_url=f"redis://127.0.0.1:{free_port()}/0", retrieval="mcp")
    with caplog.at_level(logging.WARNING):
        assert rewrite_request("openai_chat", _body(served=True), settings=settings) is None
    assert "cannot be reached" in caplog.text


def test_markers_name_only_originals_the_server_keeps(url: str):
    settings = RawSettings(originals_url=url, retrieval="mcp")
    done = rewrite_request("openai_chat", _body(served=True), settings=settings)
    assert done is not None and done.results_shortened == 1
    shortened = done.body["messages"][2]["content"]
    handle = make_handle("o", LOG)
    assert f'read_original("{handle}"' in shortened
    assert settings.store.get("", handle) == Original(handle, LOG)


def _results(count: int) -> dict[str, Any]:
    """A request whose history holds ``count`` long tool results, each its own."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "run the tests"}]
    for i in range(count):
        call = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": '{"script": "pytest"}'}  # type: ignore[assignment]  # a JSON object in a string
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{LOG}\nrun {i}"})
    tools = [{"type": "function", "function": {"name": "mcp__tokenlean__read_original"}}]
    return {
        "model": "m",
        "messages": [*messages, {"role": "user", "content": "go on"}],
        "tools": tools,
    }


def test_a_history_is_put_in_one_round_trip_by_a_process_that_did_not_put_it(url: str):
    """Each request puts every original of its history. A process that did not put them in
    the last minute (another worker or proxy, a restart, or the same a minute later) asks the
    server about all of them in one round trip, and writes the ones it lacks in one more: it
    had been a round trip each (30 here), which a server across a network makes slow."""
    first = RawSettings(originals_url=url, retrieval="mcp")
    done = rewrite_request("openai_chat", _results(30), settings=first)
    assert done is not None and done.results_shortened == 30
    with RoundTrips(url) as trips:
        again = RawSettings(originals_url=trips.url, retrieval="mcp")
        again.store.put("", _original("a first write, which sweeps: not what is counted"))
        start = trips.count
        assert rewrite_request("openai_chat", _results(30), settings=again) is not None
        assert trips.count - start == 1  # all 30 known: marked used
        start = trips.count
        assert rewrite_request("openai_chat", _results(40), settings=again) is not None
        assert trips.count - start == 2  # 10 new: asked about, then written
    for i in range(40):
        handle = make_handle("o", f"{LOG}\nrun {i}")
        assert first.store.get("", handle) == Original(handle, f"{LOG}\nrun {i}")


def test_a_server_that_lost_the_scripts_is_given_them_again(url: str):
    store = RedisOriginalStore(url)
    store.put("", _original("first\n" + LOG))
    client(url).script_flush()  # a restarted server, or one another client flushed
    more = [_original(f"{i}\n" + LOG) for i in range(3)]
    store.put_many("", more)
    assert [store.get("", o.handle) for o in more] == more


def test_settings_take_a_url_only_with_a_way_back(tmp_path: Path, url: str):
    with pytest.raises(ValueError, match='need retrieval="mcp"'):
        RawSettings(originals_url=url)
    with pytest.raises(ValueError, match="not both"):
        RawSettings(originals_url=url, originals_dir=tmp_path, retrieval="mcp")
    with pytest.raises(ValueError, match="redis:// or rediss://") as raised:
        RawSettings(originals_url=f"http://:{SECRET}@host/0", retrieval="mcp")
    assert SECRET not in str(raised.value)
    settings = RawSettings(originals_url=url, retrieval="mcp")
    assert keeping(settings, None, "tool").tool_store is settings.store  # shared, not memory
    with pytest.raises(ValueError, match='read_back="file" needs a FolderOriginalStore'):
        keeping(settings, None, "file")


def test_the_proxy_command_refuses_file_markers_for_a_redis_store(
    capsys: pytest.CaptureFixture[str],
):
    command = ["proxy", "--originals", f"redis://:{SECRET}@127.0.0.1:1/0", "--retrieval", "file"]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert 'originals on Redis need retrieval="mcp"' in err and SECRET not in err


def test_tokenlean_mcp_says_when_the_server_cannot_be_reached():
    pytest.importorskip("mcp", reason="the mcp package is missing: pip install 'tokenlean[mcp]'")
    from tokenlean.mcp import read_original

    store = RedisOriginalStore(f"redis://127.0.0.1:{free_port()}/0")
    answer = read_original(store, make_handle("o", LOG))
    assert answer.startswith(f"The originals store {store.url} cannot be reached now")


# -- the framework adapters' store settings -----------------------------------------------------


def test_a_langchain_agent_keeps_originals_on_redis_and_another_worker_reads_them(url: str):
    """LangChain's shortener with ``store=RedisOriginalStore(url)``: the original of a result it
    shortened is read back through ``read_original`` by another middleware instance on another
    store object (another worker), in the same thread."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from tests.langchain._agents import coding_agent
    from tokenlean.langchain import ToolOutputShorteningMiddleware

    @tool
    def run_tests(target: str) -> str:
        """Run the test suite."""
        return LOG

    def middleware() -> ToolOutputShorteningMiddleware:
        return ToolOutputShorteningMiddleware(store=RedisOriginalStore(url))

    config: Any = {"configurable": {"thread_id": "t-redis"}}
    call = {"name": "run_tests", "args": {"target": "all"}, "id": "c1"}
    agent, model = coding_agent(
        [AIMessage(content="", tool_calls=[call]), AIMessage(content="done")],
        tools=[run_tests],
        middleware=[middleware()],
    )
    agent.invoke({"messages": [HumanMessage("run them")]}, config)
    sent = next(m for m in model.calls[1].messages if isinstance(m, ToolMessage))
    assert sent.content != LOG
    handle = str(sent.content).split('read_original("', 1)[1].split('"', 1)[0]
    read = {"name": "read_original", "args": {"handle": handle}, "id": "r1"}
    other, other_model = coding_agent(
        [AIMessage(content="", tool_calls=[read]), AIMessage(content="done")],
        tools=[run_tests],
        middleware=[middleware()],
    )
    other.invoke({"messages": [HumanMessage("read it back")]}, config)
    back = [m for m in other_model.calls[1].messages if isinstance(m, ToolMessage)][-1]
    assert back.name == "read_original"
    assert LOG.split("\n")[-1] in str(back.content) and "No original" not in str(back.content)


def _turn_trips(url: str, results: int, *, run_async: bool) -> int:
    """Round trips a LangChain agent's run makes to the store when its first turn calls a tool
    ``results`` times at once, each result long enough to shorten."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from tests.langchain._agents import coding_agent
    from tokenlean.langchain import ToolOutputShorteningMiddleware

    @tool
    def run_tests(target: str) -> str:
        """Run the test suite."""
        return f"{LOG}\n{target}"

    calls = [
        {"name": "run_tests", "args": {"target": f"t{i}"}, "id": f"c{i}"} for i in range(results)
    ]
    with RoundTrips(url) as trips:
        store = RedisOriginalStore(trips.url)
        store.put("", _original(f"the first write of {results}: it sweeps, and is not counted"))
        agent, _ = coding_agent(
            [AIMessage(content="", tool_calls=calls), AIMessage(content="done")],
            tools=[run_tests],
            middleware=[ToolOutputShorteningMiddleware(store=store)],
        )
        start = trips.count
        request = {"messages": [HumanMessage("run them")]}
        config: Any = {"configurable": {"thread_id": f"t-{results}"}}
        if run_async:
            asyncio.run(agent.ainvoke(request, config))
        else:
            agent.invoke(request, config)
        return trips.count - start


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_a_langchain_turn_of_parallel_results_keeps_them_in_one_batch(url: str, run_async: bool):
    """LangChain's shortener keeps a turn's originals with ``put_many``: five results shortened
    at once cost the round trips one does (they had cost a round trip or two each)."""
    one, five = (_turn_trips(url, n, run_async=run_async) for n in (1, 5))
    assert five == one, (one, five)
