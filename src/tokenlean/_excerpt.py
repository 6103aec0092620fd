"""The part of an original an agent asks for: a line range, or the lines holding a pattern."""

from __future__ import annotations

from tokenlean import checks

__all__ = ["MAX_EXCERPT_CHARS", "excerpt", "parse_lines"]

#: Excerpts longer than this are cut, with a note to ask for less.
MAX_EXCERPT_CHARS = 24_000


def parse_lines(spec: str, total: int) -> tuple[int, int]:
    """``"120-160"``, ``"120"``, ``"120-"`` or ``"-40"`` as a 1-based inclusive range."""
    text = spec.strip().replace(" ", "")
    head, sep, tail = text.partition("-")
    try:
        first = int(head) if head else 1
        last = (int(tail) if tail else total) if sep else first
    except ValueError:
        raise ValueError(f"lines must look like '120-160' or '120', got {spec!r}") from None
    if first < 1 or last < first:
        raise ValueError(
            f"lines must be a range like '120-160' with 1 <= start <= end, got {spec!r}"
        )
    return first, min(last, total)


def excerpt(
    text: str,
    *,
    lines: str | None = None,
    pattern: str | None = None,
    context: int = 0,
    max_chars: int = MAX_EXCERPT_CHARS,
) -> str:
    """The part of ``text`` asked for: a line range, the lines containing ``pattern``
    (case-insensitive, plain text, with ``context`` lines around), or all of it; numbered."""
    checks.text(text, "text")
    if lines is not None:
        checks.text(lines, "lines")
    if pattern is not None:
        checks.text(pattern, "pattern")
    checks.integer(context, "context", at_least=0)
    checks.integer(max_chars, "max_chars", at_least=1)
    items = text.split("\n")
    first, last = parse_lines(lines, len(items)) if lines else (1, len(items))
    if first > len(items):
        return f"[no such lines: the original has {len(items)} lines]"
    wanted = range(first - 1, last)
    if pattern:
        needle = pattern.lower()
        hits = [i for i in wanted if needle in items[i].lower()]
        if not hits:
            return f"[no line contains {pattern!r}]"
        keep = sorted(
            {
                j
                for i in hits
                for j in range(max(first - 1, i - context), min(last, i + context + 1))
            }
        )
    else:
        keep = list(wanted)
    return _numbered(items, keep, max_chars)


def _numbered(items: list[str], keep: list[int], max_chars: int) -> str:
    out: list[str] = []
    size, previous = 0, None
    for i in keep:
        if previous is not None and i != previous + 1:
            out.append("--")
        line = f"{i + 1}: {items[i]}"
        if size + len(line) > max_chars:
            out.append(f"[... cut at line {i + 1}: ask for a narrower range or a pattern ...]")
            break
        out.append(line)
        size += len(line) + 1
        previous = i
    return "\n".join(out)
