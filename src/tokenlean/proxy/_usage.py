"""The tokens of the model's answer, read from the upstream's own usage figures as the answer
passes through the proxy (never held back, never changed), for the whole bill.

Where each API reports them:

- Anthropic messages: ``usage.output_tokens``; streamed, ``message_start`` carries the usage so
  far and ``message_delta`` the final count (cumulative);
- OpenAI chat completions: ``usage.completion_tokens``; streamed, only in a last chunk the
  client asked for (``stream_options.include_usage``). Without it the output is *unknown*: the
  proxy does not ask on the client's behalf, as a chunk without choices breaks clients that did
  not expect one, and it does not guess from the streamed text either;
- OpenAI responses: ``usage.output_tokens``; streamed, in the ``response.completed`` event (or
  ``.incomplete``, ``.failed``);
- Gemini: ``usageMetadata.candidatesTokenCount`` plus ``thoughtsTokenCount``; every streamed
  chunk carries the usage so far.

The provider's count of the prompt, of its part read from the cache and (Anthropic) of its part
written to the cache are kept too when reported.

What runs beside the stream is small and bounded, because it runs on the event loop between two
chunks: undoing a gzip / deflate / zstd ``content-encoding`` in pieces, finding line ends, and a
substring test. A streamed answer keeps only its first and its latest event that name a usage
(each at most :data:`MAX_KEPT` bytes), a JSON answer at most :data:`MAX_KEPT` bytes; the JSON is
parsed after the answer, on the statistics thread. Whatever goes wrong (another coding, an answer
too long, garbage) means only that this answer's output is unknown.
"""

from __future__ import annotations

import importlib
import json
import logging
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tokenlean.raw import Api

__all__ = ["MAX_DECODED", "MAX_KEPT", "AnswerReader", "Usage", "answer_reader", "litellm_usage"]

log = logging.getLogger("tokenlean.proxy")

#: The most bytes of one event, or of a JSON answer, kept to be parsed: a ``response.completed``
#: event repeats the whole response, which for a long answer runs to megabytes.
MAX_KEPT = 8 * 1024 * 1024
#: The most decoded bytes read from one answer; past it (a compression bomb, a runaway stream)
#: the reader stops and the output is unknown.
MAX_DECODED = 256 * 1024 * 1024
#: Decoded bytes produced per step, so that a small compressed chunk never inflates at once.
_PIECE = 256 * 1024


@dataclass(frozen=True, slots=True)
class Usage:
    """What the upstream reported for one answer: its output tokens and, when it said, the
    prompt's tokens (cached and written parts included), the part read from the cache and the
    part written to it (Anthropic's ``cache_creation_input_tokens``; the others bill no write)."""

    output_tokens: int
    input_tokens: int | None = None
    cached_tokens: int | None = None
    written_tokens: int | None = None


Decoder = Callable[[bytes], Iterator[bytes]]
Fields = tuple[int | None, int | None, int | None, int | None]  # output, input, cached, written


def _inflater(wbits: int) -> Decoder:
    inflater = zlib.decompressobj(wbits)

    def decode(data: bytes) -> Iterator[bytes]:
        yield inflater.decompress(data, _PIECE)
        while inflater.unconsumed_tail:
            yield inflater.decompress(inflater.unconsumed_tail, _PIECE)

    return decode


def _zstd() -> Decoder | None:
    try:
        zstandard: Any = importlib.import_module("zstandard")
    except ImportError:
        return None
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    return lambda data: iter((decompressor.decompress(data),))


def _decoder(coding: str | None) -> Decoder | None:
    """How to undo the answer's ``content-encoding``; None when it cannot be undone here."""
    coding = (coding or "identity").strip().lower()
    if coding == "identity":
        return lambda data: iter((data,))
    if coding in ("gzip", "x-gzip", "deflate"):
        return _inflater(32 + zlib.MAX_WBITS)  # 32: a gzip or a zlib header, whichever it is
    return _zstd() if coding == "zstd" else None


class AnswerReader:
    """Reads one answer as it passes; :meth:`feed` on the event loop, :meth:`usage` after."""

    def __init__(self, api: Api, decoder: Decoder, *, streamed: bool) -> None:
        self._api = api
        self._decoder = decoder
        self._streamed = streamed
        self._marker = b'"usageMetadata"' if api == "gemini" else b'"usage"'
        self._partial = bytearray()  # the line being received, or the whole JSON answer
        self._skipping = False  # the current line outgrew MAX_KEPT: dropped up to its end
        self._kept: list[bytes] = []  # the first and the latest event naming a usage
        self._decoded = 0
        self._failed = False

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of the answer (as sent on the wire); never raises."""
        if self._failed:
            return
        try:
            for piece in self._decoder(chunk):
                self._decoded += len(piece)
                if self._decoded > MAX_DECODED:
                    raise ValueError(f"answer over {MAX_DECODED:,} decoded bytes")
                self._take(piece)
        except Exception as exc:  # reading is a bystander: the answer goes on regardless
            log.debug("tokenlean proxy: output of an answer unknown: %r", exc)
            self._failed = True
            self._partial.clear()
            self._kept.clear()

    def _take(self, piece: bytes) -> None:
        if self._streamed:
            self._take_lines(piece)
            return
        if len(self._partial) + len(piece) > MAX_KEPT:
            raise ValueError(f"JSON answer over {MAX_KEPT:,} bytes")
        self._partial += piece

    def _take_lines(self, piece: bytes) -> None:
        last = piece.rfind(b"\n")
        if last < 0:
            self._append(piece)
            return
        # Whole lines, searched at C speed: only the few that name a usage are looked at.
        lines = piece[: last + 1] if self._skipping else bytes(self._partial) + piece[: last + 1]
        if self._skipping:  # the line that outgrew MAX_KEPT ends here: dropped
            lines = lines[lines.find(b"\n") + 1 :]
            self._skipping = False
        self._partial.clear()
        self._append(piece[last + 1 :])
        # A key's closing quote is never escaped, so the marker matches no text in a string:
        # only the first line naming a usage (if none is kept yet) and the latest one matter.
        first = lines.find(self._marker)
        if first < 0:
            return
        kept_first = not self._kept and self._keep(_line_at(lines, first))
        last = lines.rfind(self._marker)
        if not (kept_first and last == first):
            self._keep(_line_at(lines, last))

    def _append(self, part: bytes) -> None:
        if self._skipping:
            return
        self._partial += part
        if len(self._partial) > MAX_KEPT:
            self._partial.clear()
            self._skipping = True

    def _keep(self, line: bytes) -> bool:
        """Keep an event's line: the first stays (Anthropic's input counts come first), the
        latest replaces the rest; False when it is no event's data or too long."""
        if not line.startswith(b"data:") or len(line) > MAX_KEPT:
            return False
        self._kept[min(len(self._kept), 1) :] = [line]
        return True

    def usage(self) -> Usage | None:
        """The usage the answer reported; None when unknown. Never raises."""
        if self._failed:
            return None
        try:
            return _usage(self._api, self._objects())
        except Exception as exc:  # garbage usage: unknown, like none
            log.debug("tokenlean proxy: unreadable usage in an answer: %r", exc)
            return None

    def _objects(self) -> list[Any]:
        if self._streamed:
            return [json.loads(line[5:]) for line in self._kept]
        value = json.loads(self._partial)
        return value if isinstance(value, list) else [value]  # Gemini streams to a JSON array


def _line_at(lines: bytes, position: int) -> bytes:
    start = lines.rfind(b"\n", 0, position) + 1
    return lines[start : lines.find(b"\n", position)]


def answer_reader(api: Api, status: int, headers: Mapping[str, str]) -> AnswerReader | None:
    """A reader for this answer, or None when it cannot carry a usage to read (an error, a
    content type or coding not read here)."""
    if status >= 400:
        return None
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    streamed = kind == "text/event-stream"
    if not streamed and not kind.endswith("json"):
        return None
    decoder = _decoder(headers.get("content-encoding"))
    return None if decoder is None else AnswerReader(api, decoder, streamed=streamed)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _at(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _anthropic(obj: Any) -> Fields:
    usage = _at(obj, "usage") or _at(obj, "message", "usage")  # message_start: under message
    plain = _count(_at(usage, "input_tokens"))
    read = _count(_at(usage, "cache_read_input_tokens")) or 0
    written = _count(_at(usage, "cache_creation_input_tokens")) or 0
    prompt = None if plain is None else plain + read + written
    known = plain is not None
    return (
        _count(_at(usage, "output_tokens")),
        prompt,
        read if known else None,
        written if known else None,
    )


def _openai_chat(obj: Any) -> Fields:
    usage = _at(obj, "usage")
    cached = _count(_at(usage, "prompt_tokens_details", "cached_tokens"))
    return (
        _count(_at(usage, "completion_tokens")),
        _count(_at(usage, "prompt_tokens")),
        cached,
        None,
    )


def _openai_responses(obj: Any) -> Fields:
    usage = _at(obj, "usage") or _at(obj, "response", "usage")  # events: under response
    cached = _count(_at(usage, "input_tokens_details", "cached_tokens"))
    return _count(_at(usage, "output_tokens")), _count(_at(usage, "input_tokens")), cached, None


def _gemini(obj: Any) -> Fields:
    usage = _at(obj, "usageMetadata")
    answer = _count(_at(usage, "candidatesTokenCount"))
    thoughts = _count(_at(usage, "thoughtsTokenCount")) or 0
    output = None if answer is None else answer + thoughts
    prompt = _count(_at(usage, "promptTokenCount"))
    return output, prompt, _count(_at(usage, "cachedContentTokenCount")), None


def litellm_usage(found: Any) -> Usage | None:
    """The usage LiteLLM reports for a call (the usage object of its logging payload): OpenAI's
    counts, the prompt's including its cached and written parts, and the parts read from and
    written to the cache, under OpenAI's or Anthropic's names."""
    prompt, output = _count(_at(found, "prompt_tokens")), _count(_at(found, "completion_tokens"))
    if prompt is None or output is None:
        return None
    read = _count(_at(found, "prompt_tokens_details", "cached_tokens")) or _count(
        _at(found, "cache_read_input_tokens")
    )
    written = _count(_at(found, "cache_creation_input_tokens"))
    return Usage(output, prompt, read or 0, written or 0)


_FIELDS: Mapping[Api, Callable[[Any], Fields]] = {
    "anthropic": _anthropic,
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "gemini": _gemini,
}


def _usage(api: Api, objects: Iterable[Any]) -> Usage | None:
    """The usage of an answer's objects in order, a later figure replacing an earlier one (the
    streamed counts are cumulative)."""
    found: list[int | None] = [None, None, None, None]
    for obj in objects:
        found = [b if b is not None else a for a, b in zip(found, _FIELDS[api](obj), strict=True)]
    output, prompt, cached, written = found
    return None if output is None else Usage(output, prompt, cached, written)
