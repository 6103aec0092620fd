"""Every tunable of :func:`tokenlean.shorten.shorten`, with its default, in one place."""

from __future__ import annotations

from dataclasses import dataclass, fields

from tokenlean import checks

__all__ = ["DEFAULT_OPTIONS", "ShortenSettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShortenSettings:
    """How hard to shorten and what to protect.

    Budgets are in tokens as estimated from characters (about 3.7 characters per token on code
    and logs, indentation nearly free), so deciding what fits never needs a tokenizer.
    """

    max_tokens: int = 150
    """Aim for at most this many tokens (errors, summaries and query matches may exceed it)."""
    code_max_tokens: int = 450
    """The budget for source code and file views (the reader asked for them, so cut less)."""
    code_keep_percent: int = 50
    """Source code keeps at least this share (in percent) of its tokens, whatever the budget."""
    head_lines: int = 4
    """Lines at the top kept before other ordinary lines (commands echo, headers)."""
    tail_lines: int = 8
    """Lines at the bottom kept before other ordinary lines (summaries, exit status)."""
    context_lines: int = 1
    """Lines kept around each error or query match in logs."""
    code_context_lines: int = 2
    """Lines kept around each query match in source code."""
    similar_run: int = 3
    """Runs of at least this many similar lines collapse to their first and last line."""
    seen_run: int = 3
    """Runs with at least this many lines already shown earlier collapse to one marker."""
    seen_min_chars: int = 8
    """Shorter lines never count as already shown (too common to mean anything)."""
    long_line_chars: int = 1200
    """Longer lines are cut in the middle, keeping the head, the tail and any matches."""
    max_query_terms: int = 24
    """At most this many terms are taken from the query."""
    json_max_items: int = 6
    """JSON arrays longer than this may be crushed; shorter ones always stay whole."""
    json_keep_head: int = 2
    """Items kept from the start of a crushed array (the last item is kept too)."""
    json_max_string: int = 400
    """Longer JSON strings are cut when the record is still over budget (headings of markdown
    kept); first only strings over four times this long are."""
    json_keep_tokens: int = 600
    """JSON records up to this many tokens stay whole: an API's record is its identifiers and
    values, and the agent quotes them next."""
    text_keep_tokens: int = 1000
    """Plain text and documents up to this many tokens stay whole (a search result, a lookup, a
    product page, an issue's description: short dense observations)."""
    listing_keep_tokens: int = 3000
    """Listings (paths one per line, ``ls -l``, ``git status --short``, ``Get-ChildItem``) up to
    this many tokens stay whole: an agent opens next what they name. At 1,000 the Codex sessions
    lost paths they went on to read (recall 0.976 there, 0.999 at 3,000)."""
    text_keep_percent: int = 50
    """Longer documents keep at least this share (in percent) of their tokens: headings, table
    rows and sentences matching the query first."""
    view_keep_tokens: int = 12000
    """File views with line numbers (``grep -n``, a Read tool's range, SWE-agent's ``open``), a
    stretch of a file asked for and a whole document read, up to this many tokens stay whole:
    the agent asked for exactly these lines and edits them next. Longer views keep at least
    this many, around what the query names first. A whole source file read is
    ``file_keep_tokens`` (the tuning is in ``benchmarks/loso.md``)."""
    file_keep_tokens: int = 12000
    """A whole source file read with line numbers, no range asked (Claude Code's and OpenCode's
    ``Read`` of a path alone, ``cat -n f``), up to this many tokens stays whole; a longer one keeps
    its outline (with whole signatures, imports and re-exports) and what the query names, at
    least ``code_keep_percent`` of itself, each gap a line range the agent's own read tool can
    fetch. The agent asked for the file and often edits it next, copying lines from its bodies
    into the old and new strings of an edit: a read it asked for is kept whole as far as a view
    is. At 2,000 (tuned on pooled bills) agents none of the dev data holds lost recall (Claude
    Code with opus-5/sonnet-5 0.978 -> 0.929, OpenHands 0.989 -> 0.950); on the dev sources
    recall still rises from 6,000 to 12,000 on both Claude Code sources
    (``benchmarks/loso_files.md``)."""
    page_lines: int = 100
    """A stretch of source code asked for by at least this many lines without line numbers
    (``sed -n '1,200p' f``, ``head -n 300 f``: reading a file through, a page at a time) is kept
    as a whole source file is (its outline and what the call names); shorter stretches
    (``sed -n '120,160p' f``) stay whole, as asked. Documents stay whole at any length. Picked
    with each source held out in turn, and it held on each (``benchmarks/loso_reads.md``)."""
    view_context_lines: int = 20
    """Lines kept on each side of a query match in a long file view, and on each side of the
    focus of a window the tool chose (SWE-agent's ``open f 1474`` shows a hundred lines around
    the line named; its ``edit 12:14`` echoes a hundred around the text written): the rest of
    such a window goes, each gap a line range. On SWE-agent, the one dev source with such
    windows, 20 is the fewest that loses no reference (recall 0.967 at 10, 0.962 at 5), and
    the recommended stack bills 0.801 of no middleware there instead of 0.836
    (``benchmarks/loso_focus.md``: the other sources cannot tell the candidates apart)."""
    listing_keep_lines: int = 400
    """Listings of distinct paths (``find``, ``ls -R``) up to this many lines never collapse
    similar names (``L004.py`` and ``L005.py`` are different files)."""
    script_max_tokens: int = 300
    """The budget for the output of a script the agent wrote and ran (``python reproduce.py``):
    it is the agent's result, so its value lines (``Expected``/``Actual``/``Result``, flags) go
    first."""
    window_above_chars: int = 2_000_000
    """Longer texts are first cut to windows (their first and last lines, and the lines around
    their first and last error lines and query matches) so the cost stays bounded; every
    stretch between windows is one marker."""
    window_errors: int = 40
    """Error lines a cut text keeps windows around, from each end."""

    def __post_init__(self) -> None:
        for f in fields(self):
            floor = _FLOORS.get(f.name, 0 if f.name in _MAY_BE_ZERO else 1)
            ceiling = 100 if f.name in _PERCENTS else None
            checks.integer(getattr(self, f.name), f.name, at_least=floor, at_most=ceiling)


#: Settings with a floor above 1: fewer similar lines are no run, a shorter line no long one.
_FLOORS = {"similar_run": 3, "long_line_chars": 200}
_PERCENTS = frozenset({"code_keep_percent", "text_keep_percent"})
_MAY_BE_ZERO = frozenset(
    {
        "code_keep_percent",
        "head_lines",
        "tail_lines",
        "context_lines",
        "code_context_lines",
        "json_keep_head",
        "json_keep_tokens",
        "text_keep_tokens",
        "listing_keep_tokens",
        "text_keep_percent",
        "view_keep_tokens",
        "file_keep_tokens",
        "view_context_lines",
        "listing_keep_lines",
    }
)

DEFAULT_OPTIONS = ShortenSettings()
