"""Exact token counts on tiktoken, from a vocabulary file on this machine: the counter never
downloads. It loads the file from a path you give, from ``$TOKENLEAN_TIKTOKEN_DIR``, or from
tiktoken's own cache, and otherwise raises :class:`VocabularyNotFoundError` at once, so an
offline machine never hangs on it."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tokenlean import checks
from tokenlean._estimate import chunks

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "TIKTOKEN_CACHE_KEYS",
    "EncodingName",
    "TiktokenCounter",
    "VocabularyNotFoundError",
    "find_vocabulary",
    "load_encoding",
]

EncodingName = Literal["o200k_base", "cl100k_base"]


class VocabularyNotFoundError(FileNotFoundError):
    """The tiktoken vocabulary is not on this machine and tokenlean will not download it."""


@dataclass(frozen=True, slots=True)
class _Spec:
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECS: dict[str, _Spec] = {
    "o200k_base": _Spec(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": _Spec(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}
#: tiktoken caches a downloaded vocabulary under the sha1 of its source address.
TIKTOKEN_CACHE_KEYS = {
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
}
_ENCODINGS: dict[tuple[str, str], tiktoken.Encoding] = {}


def find_vocabulary(
    encoding: EncodingName, vocab_path: str | os.PathLike[str] | None = None
) -> Path:
    """Where the vocabulary file for ``encoding`` is; raises if it is nowhere local."""
    candidates: list[Path] = []
    if vocab_path is not None:
        path = Path(vocab_path)
        candidates.append(path / f"{encoding}.tiktoken" if path.is_dir() else path)
    if env_dir := os.environ.get("TOKENLEAN_TIKTOKEN_DIR"):
        candidates.append(Path(env_dir) / f"{encoding}.tiktoken")
    if cache := _tiktoken_cache():
        candidates.append(cache / TIKTOKEN_CACHE_KEYS[encoding])
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates) or "nothing"
    raise VocabularyNotFoundError(
        f"no local vocabulary for {encoding} (tried {tried}); pass vocab_path= or set "
        "TOKENLEAN_TIKTOKEN_DIR to a folder holding "
        f"{encoding}.tiktoken. tokenlean never downloads it."
    )


def _tiktoken_cache() -> Path | None:
    """Where tiktoken keeps what it downloaded, by its own rule (``None``: caching is off)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = str(Path(tempfile.gettempdir()) / "data-gym-cache")
    return Path(folder) if folder else None


def load_encoding(
    encoding: EncodingName = "o200k_base", vocab_path: str | os.PathLike[str] | None = None
) -> tiktoken.Encoding:
    """Build a tiktoken encoding from a local vocabulary file (checked against its sha256)."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    checks.one_of(encoding, "encoding", sorted(_SPECS))
    path = find_vocabulary(encoding, vocab_path)
    key = (encoding, str(path.resolve()))
    if key not in _ENCODINGS:
        spec = _SPECS[encoding]
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != spec.sha256:
            raise ValueError(f"{path} is not the {encoding} vocabulary (sha256 mismatch)")
        ranks = load_tiktoken_bpe(str(path), expected_hash=spec.sha256)
        _ENCODINGS[key] = tiktoken.Encoding(
            name=encoding,
            pat_str=spec.pat_str,
            mergeable_ranks=ranks,
            special_tokens=dict(spec.special_tokens),
        )
    return _ENCODINGS[key]


#: Where an exact count may be split: after a newline or before a space, with a letter or digit
#: after it (and, for the space, before it). Neither o200k's nor cl100k's pre-tokenizer puts
#: such a position inside a piece, so the pieces' counts add up to the whole text's count.
_TOKEN_CUT = re.compile(r"\n(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?= [A-Za-z])")


class TiktokenCounter:
    """Exact counts with a tiktoken encoding loaded from a local file (see :func:`load_encoding`).

    Special-token text inside the input is counted as ordinary text, never rejected. Long texts
    are encoded in pieces cut where no token can span (:data:`_TOKEN_CUT`), so memory stays
    bounded: one list of token ids for a whole 50 MB text would take about 500 MB.
    """

    def __init__(
        self,
        encoding: EncodingName = "o200k_base",
        *,
        vocab_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if vocab_path is not None and not isinstance(vocab_path, (str, os.PathLike)):
            raise checks.ArgumentTypeError(
                f"vocab_path must be a path (str or os.PathLike) to a .tiktoken file or its "
                f"folder, got {checks.described(vocab_path)}"
            )
        self.encoding_name = encoding
        self._encoding = load_encoding(encoding, vocab_path)

    def count(self, text: str) -> int:
        if not text:
            return 0
        encode = self._encoding.encode_ordinary
        return sum(len(encode(piece)) for piece in chunks(text, _TOKEN_CUT))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding_name!r})"
