"""The fail-open guard: log the traceback, pass the request through, never swallow a stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from tokenlean._failopen import fail_open

logger = logging.getLogger("tokenlean.tests.failopen")


def _guarded(
    error: BaseException | None,
    *args: object,
    level: int = logging.ERROR,
    on_error: Callable[[], object] | None = None,
) -> str:
    with fail_open(logger, "could not %s; sent unchanged", *args, level=level, on_error=on_error):
        if error is not None:
            raise error
        return "edited"
    return "unchanged"


async def _fails(error: BaseException) -> None:
    await asyncio.sleep(0)
    raise error


async def _aguarded(error: BaseException | None) -> str:
    with fail_open(logger, "async step failed"):
        await (_fails(error) if error is not None else asyncio.sleep(60))
        return "edited"
    return "unchanged"


def test_no_error_runs_the_block_and_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        assert _guarded(None, "rewrite") == "edited"
    assert caplog.records == []


def test_an_exception_returns_the_fallback_and_logs_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger=logger.name):
        assert _guarded(ValueError("boom"), "rewrite") == "unchanged"
    (record,) = caplog.records
    assert record.name == logger.name and record.levelno == logging.ERROR
    assert record.msg == "could not %s; sent unchanged" and record.args == ("rewrite",)
    assert record.getMessage() == "could not rewrite; sent unchanged"
    assert record.exc_info is not None and repr(record.exc_info[1]) == "ValueError('boom')"
    assert "Traceback" in caplog.text and "ValueError: boom" in caplog.text
    assert record.funcName == "_guarded"  # the caller, as its own except block would log


def test_a_level_and_an_on_error_hook(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []
    with caplog.at_level(logging.WARNING, logger=logger.name):
        result = _guarded(
            KeyError("k"), "count", level=logging.WARNING, on_error=lambda: seen.append("x")
        )
    assert result == "unchanged" and seen == ["x"]
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and record.exc_info is not None


def test_failed_tells_whether_the_block_failed() -> None:
    with fail_open(logger, "ok") as guard:
        pass
    assert not guard.failed
    with fail_open(logger, "broken") as guard:
        raise RuntimeError("x")
    assert guard.failed


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), SystemExit(1), GeneratorExit()])
def test_a_base_exception_propagates(stop: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []
    with pytest.raises(type(stop)):
        _guarded(stop, "stop", on_error=lambda: seen.append("x"))
    assert caplog.records == [] and seen == []


async def test_the_async_path_falls_back_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger=logger.name):
        assert await _aguarded(OSError("down")) == "unchanged"
    (record,) = caplog.records
    assert record.getMessage() == "async step failed" and record.exc_info is not None
    assert "OSError: down" in caplog.text and record.funcName == "_aguarded"


async def test_the_async_path_lets_cancellation_through(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(asyncio.CancelledError):
        await _aguarded(asyncio.CancelledError())
    task = asyncio.create_task(_aguarded(None))
    await asyncio.sleep(0)  # the task now waits inside the guarded block
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert caplog.records == []
