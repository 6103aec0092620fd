"""The answers the proxy gives itself (refusals, limits, an unreachable upstream)."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse

__all__ = ["error_response"]


def error_response(
    status: int, kind: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """An error shaped so both SDKs read its message (``error.message``)."""
    body = {"type": "error", "error": {"type": kind, "message": message, "code": kind}}
    return JSONResponse(body, status_code=status, headers=headers)
