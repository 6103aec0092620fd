"""Request bodies sent compressed (``content-encoding``): decoded to be read and rewritten, and
encoded again the same way when the rewrite changed them.

gzip and deflate are decoded with the standard library, zstd when ``zstandard`` is installed;
any other coding (br, stacked codings) cannot be read here, and the body goes upstream as the
client sent it. Decoding is bounded: a body that inflates past the size the proxy accepts is not
read either (a small compressed body can hold gigabytes).
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["Encoder", "Undecodable", "decode"]

#: Encodes a rewritten body the way the client's was encoded.
Encoder = Callable[[bytes], bytes]


class Undecodable(ValueError):
    """A body this proxy cannot decode; the message says why (logged, and counted by reason)."""


def _identity(data: bytes) -> bytes:
    return data


def _inflate(data: bytes, limit: int, wbits: int) -> bytes:
    """``data`` inflated (gzip members one after another, as gzip allows), at most ``limit``."""
    out = bytearray()
    while True:
        inflater = zlib.decompressobj(wbits)
        out += inflater.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise Undecodable(f"decoded body over {limit:,} bytes")
        if not inflater.eof:
            raise EOFError("cut short")
        data = inflater.unused_data
        if wbits != 31 or not data:
            return bytes(out)


def _gzip(data: bytes, limit: int) -> tuple[bytes, Encoder]:
    # mtime 0 (what zlib writes): the same body always encodes to the same bytes.
    return _inflate(data, limit, 31), lambda body: _deflate(body, 31)


def _deflate(body: bytes, wbits: int) -> bytes:
    deflater = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return deflater.compress(body) + deflater.flush()


def _zlib(data: bytes, limit: int) -> tuple[bytes, Encoder]:
    """HTTP's deflate is zlib-wrapped; some clients send raw deflate, which is answered alike."""
    try:
        return _inflate(data, limit, 15), lambda body: _deflate(body, 15)
    except zlib.error:
        return _inflate(data, limit, -15), lambda body: _deflate(body, -15)


def _zstd(data: bytes, limit: int) -> tuple[bytes, Encoder]:
    zstandard: Any = _optional("zstandard")
    if zstandard is None:
        raise Undecodable("content-encoding zstd (install zstandard to read it)")
    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        while chunk := reader.read(1 << 20):
            out += chunk
            if len(out) > limit:
                raise Undecodable(f"decoded body over {limit:,} bytes")
    compressor = zstandard.ZstdCompressor()
    return bytes(out), lambda body: bytes(compressor.compress(body))


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_DECODERS: dict[str, Callable[[bytes, int], tuple[bytes, Encoder]]] = {
    "gzip": _gzip,
    "x-gzip": _gzip,
    "deflate": _zlib,
    "zstd": _zstd,
}


def decode(header: str | None, data: bytes, limit: int) -> tuple[bytes, Encoder]:
    """The body under its ``content-encoding`` (``header``), and how to encode a new one the
    same way. Raises :class:`Undecodable` when it cannot be read within ``limit`` bytes."""
    codings = [c.strip().lower() for c in (header or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return data, _identity
    decoder = _DECODERS.get(codings[0]) if len(codings) == 1 else None
    if decoder is None:
        raise Undecodable(f"content-encoding {', '.join(codings)} (no decoder here)")
    try:
        return decoder(data, limit)
    except Undecodable:
        raise
    except Exception as exc:  # zlib.error, zstandard.ZstdError: the body goes upstream as sent
        raise Undecodable(f"content-encoding {codings[0]} unreadable ({exc})") from None
