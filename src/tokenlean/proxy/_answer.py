"""The upstream's answer passed back to the client: status, headers and body byte for byte as
they arrive (JSON, server-sent events, errors), and the upstream request dropped as soon as the
client goes away.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import httpx
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from tokenlean.proxy._client import watching
from tokenlean.proxy._routing import mask_key, response_headers
from tokenlean.proxy._usage import AnswerReader

__all__ = ["OnDone", "UpstreamResponse"]

log = logging.getLogger("tokenlean.proxy")

#: Called with the upstream's status once its answer is over, however it ended.
OnDone = Callable[[int], None]


class UpstreamResponse(Response):
    """Passes the upstream response on as it arrives; closes it whatever happens to the client."""

    def __init__(
        self, upstream: httpx.Response, on_done: OnDone, reader: AnswerReader | None = None
    ) -> None:
        self.upstream = upstream
        self.on_done = on_done
        self.reader = reader  # reads the answer's usage, each chunk after the client has it
        self.status_code = upstream.status_code
        self.raw_headers = response_headers(upstream.headers.raw)
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            with watching(receive):
                await self._pump(send)
        finally:
            with anyio.CancelScope(shield=True):
                await self.upstream.aclose()
            self.on_done(self.status_code)

    async def _pump(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        try:
            async for chunk in self.upstream.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if self.reader is not None:
                    self.reader.feed(chunk)
        except httpx.HTTPError as exc:
            # Ending normally would hand the client a truncated body as if it were whole; leaving
            # the response incomplete makes the server drop the connection, which the client sees.
            log.warning("tokenlean proxy: upstream failed mid-response: %s", mask_key(repr(exc)))
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})
