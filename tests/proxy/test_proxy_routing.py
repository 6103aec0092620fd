"""Where a request goes: Google credentials only ever to Google's upstream, and no path climbs
out of a gateway's prefix (issue 45, item 6). Real sockets, one fake provider per vendor."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tokenlean.testing.upstream import FakeUpstream, Recorded, Reply

from .proxy_support import ProxyFactory

SECRET = "AIza-never-elsewhere"


@pytest.fixture
def google() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", f"/v1/models?key={SECRET}", {}),
        ("GET", f"/v1/files?pageSize=10&key={SECRET}", {}),
        ("POST", f"/upload/v1beta/files?key={SECRET}", {}),
        ("POST", "/upload/v1beta/files", {"x-goog-api-key": SECRET}),
        ("GET", "/v1/models", {"x-goog-api-key": SECRET, "anthropic-version": "2023-06-01"}),
    ],
)
def test_google_credentials_go_only_to_googles_upstream(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    google: FakeUpstream,
    method: str,
    path: str,
    headers: dict[str, str],
) -> None:
    """A ``?key=`` on a path both providers have used to go to the OpenAI upstream."""
    proxy = make_proxy(
        upstream=None,
        openai_upstream=upstream.url,
        anthropic_upstream=upstream.url,
        gemini_upstream=google.url,
    )
    httpx.request(method, proxy.url + path, headers=headers, content=b"{}", timeout=10)
    assert [r.path for r in google.requests] == [path.split("?")[0]]
    assert upstream.requests == []


def test_an_openai_request_still_goes_to_openai(
    make_proxy: ProxyFactory, upstream: FakeUpstream, google: FakeUpstream
) -> None:
    proxy = make_proxy(upstream=None, openai_upstream=upstream.url, gemini_upstream=google.url)
    httpx.get(proxy.url + "/v1/models?monkey=1", timeout=10)
    assert [r.path for r in upstream.requests] == ["/v1/models"] and google.requests == []


@pytest.mark.parametrize(
    "path",
    [
        "/../admin",
        "/v1/../../admin",
        "/%2e%2e/admin",
        "/v1/%2E%2E/%2e%2e/admin",
        "/.%2e/admin",
        "/..%2fadmin",
        "/..%5cadmin",
        "/v1/./../../admin",
        "/%252e%252e/admin",
    ],
)
def test_a_path_never_climbs_out_of_the_gateway_prefix(
    make_proxy: ProxyFactory, upstream: FakeUpstream, path: str
) -> None:
    """A base URL with a path prefix (a gateway) used to be climbed out of with ``/../``."""
    proxy = make_proxy(upstream=upstream.url + "/gateway/openai")
    address = urlsplit(proxy.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=10)
    try:  # http.client sends the path as written (httpx would resolve the dots itself)
        connection.request("GET", path)
        status = connection.getresponse().status
    finally:
        connection.close()
    assert status == 400
    assert upstream.requests == []


def test_paths_with_dots_inside_names_are_forwarded(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    proxy = make_proxy(upstream=upstream.url + "/gateway/openai")
    httpx.get(proxy.url + "/v1/files/file-1..2/.well-known..x", timeout=10)
    assert [r.path for r in upstream.requests] == [
        "/gateway/openai/v1/files/file-1..2/.well-known..x"
    ]


def test_a_cookie_the_upstream_sets_never_reaches_another_client(
    make_proxy: ProxyFactory,
) -> None:
    """The proxy's own HTTP client kept a ``Set-Cookie`` of the upstream (a load balancer's, a
    session's) and sent it on every later request of every client. It keeps none: the upstream
    gets a client's own headers, and ``Connection: keep-alive`` as it always did."""

    def script(request: Recorded) -> Reply:
        return Reply(200, b"{}", (("content-type", "application/json"), ("set-cookie", "lb=1")))

    with FakeUpstream(script=script) as fake:
        proxy = make_proxy(upstream=fake.url)
        for client in ("one", "two"):
            reply = httpx.get(proxy.url + "/v1/models", headers={"x-api-key": client}, timeout=10)
            assert reply.headers["set-cookie"] == "lb=1"  # the client's to keep, or not
    assert [r.header("cookie") for r in fake.requests] == [None, None]
    assert [name for name, _ in fake.requests[1].headers] == [
        "host",
        "connection",
        "accept",
        "accept-encoding",
        "user-agent",
        "x-api-key",
    ]
