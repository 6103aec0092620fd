"""A shell command split into its parts: statements, the stages of each pipeline, their words.

Agents print several things in one command (``sed -n '1,80p' a.rs && rg -n x src; git
status``), joined by ``;``, ``&&``, ``||`` or newlines, in ``for`` loops, through ``find -exec``
or ``xargs``. :func:`statements` splits such a command the way a shell would, quote-aware, with
heredoc bodies set aside (they are a script's text, not commands); :mod:`._parts` says what
each part prints. One pass over at most :data:`MAX_CHARS` characters, each looked at a bounded
number of times, so splitting stays linear whatever the command holds; a longer or unbalanced
command has no parts (the caller then judges it as it did before).
"""

from __future__ import annotations

__all__ = ["MAX_CHARS", "statements"]

#: Longer commands are not split (a heredoc of a long script is still well under this).
MAX_CHARS = 20_000
Stage = list[str]
Statement = list[Stage]
_BLANKS = " \t\r"
_OPERATORS = "<>&"


class _Splitter:
    """The state of one pass: the statements so far, the word being read, pending heredocs."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[Statement] = [[[]]]
        self.word: list[str] | None = None
        self.heredocs: list[tuple[str, bool]] = []
        self.delimiter: bool | None = None  # the next word ends a heredoc (strip tabs?)

    def end_word(self) -> None:
        if self.word is None:
            return
        word, self.word = "".join(self.word), None
        if self.delimiter is not None:
            self.heredocs.append((word, self.delimiter))
            self.delimiter = None
        self.out[-1][-1].append(word)

    def add(self, chars: str) -> None:
        if self.word is None:
            self.word = []
        self.word.append(chars)

    def end_stage(self) -> None:
        self.end_word()
        self.out[-1].append([])

    def end_statement(self) -> None:
        self.end_word()
        if self.out[-1] != [[]]:
            self.out.append([[]])

    def result(self) -> list[Statement]:
        self.end_word()
        return [[stage for stage in s if stage] for s in self.out if any(s)]


def statements(command: str) -> list[Statement] | None:
    """The statements of ``command``, each a pipeline's stages, each stage its words (quotes
    removed; redirections kept as words starting with ``<`` or ``>``, a heredoc's body left
    out); ``None`` when it is longer than :data:`MAX_CHARS` or a quote is left open."""
    if not isinstance(command, str) or len(command) > MAX_CHARS:
        return None
    split = _Splitter(command)
    at, end = 0, len(command)
    while at < end:
        at = _step(split, command, at)
        if at < 0:
            return None
    return split.result()


def _step(split: _Splitter, text: str, at: int) -> int:
    """Read what starts at ``at``; the position after it (-1: a quote left open)."""
    char = text[at]
    if char in _BLANKS:
        split.end_word()
        return at + 1
    if char == "\n":
        return _newline(split, text, at)
    if char in "'\"`":
        return _quoted(split, text, at)
    if char == "\\":
        if text[at + 1 : at + 2] != "\n":  # a backslash-newline joins two lines
            split.add(text[at + 1 : at + 2])
        return at + 2
    if char == "#" and split.word is None:  # a comment, to the end of its line
        newline = text.find("\n", at)
        return len(text) if newline < 0 else newline
    if char == "$" and text[at + 1 : at + 2] == "(":
        return _substitution(split, text, at)
    if char in ";&|()":
        return _separator(split, text, at)
    if char in _OPERATORS:
        return _redirection(split, text, at)
    split.add(char)
    return at + 1


def _newline(split: _Splitter, text: str, at: int) -> int:
    """A newline ends a statement (not a pipeline waiting for its next stage), and is where the
    bodies of the heredocs opened on its line start."""
    if split.out[-1][-1] or split.word is not None:
        split.end_statement()
    at += 1
    for delimiter, strip_tabs in split.heredocs:
        at = _after_heredoc(text, at, delimiter, strip_tabs)
    split.heredocs.clear()
    return at


def _after_heredoc(text: str, at: int, delimiter: str, strip_tabs: bool) -> int:
    """The position after the line that ends a heredoc starting at ``at`` (the text's end when
    no line does)."""
    while at < len(text):
        newline = text.find("\n", at)
        stop = len(text) if newline < 0 else newline
        line = text[at:stop]
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            return stop
        at = stop + 1
    return len(text)


def _quoted(split: _Splitter, text: str, at: int) -> int:
    """A quoted string's content joins the word; ``"..."`` reads backslash escapes."""
    quote = text[at]
    if quote != '"':
        close = text.find(quote, at + 1)
        if close < 0:
            return -1
        split.add(text[at + 1 : close])
        return close + 1
    chars: list[str] = []
    at += 1
    while at < len(text) and text[at] != '"':
        if text[at] == "\\" and text[at + 1 : at + 2] in ('"', "\\", "$", "`"):
            at += 1
        chars.append(text[at])
        at += 1
    if at >= len(text):
        return -1
    split.add("".join(chars))
    return at + 1


def _substitution(split: _Splitter, text: str, at: int) -> int:
    """``$(...)``, taken whole into the word: what it runs fills in a word of this command."""
    depth, start, at = 0, at, at + 1
    while at < len(text):
        char = text[at]
        if char == "'":
            close = text.find("'", at + 1)
            at = len(text) if close < 0 else close
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                split.add(text[start : at + 1])
                return at + 1
        at += 1
    return -1


def _separator(split: _Splitter, text: str, at: int) -> int:
    """``;``, ``&&``, ``||``, ``&`` and parentheses end a statement; ``|`` a stage."""
    char, pair = text[at], text[at : at + 2]
    if pair == "&>":
        return _redirection(split, text, at)
    if char == "|" and pair not in ("||",):
        split.end_stage()
        return at + (2 if pair == "|&" else 1)
    split.end_statement()
    return at + (2 if pair in ("&&", "||", ";;") else 1)


def _redirection(split: _Splitter, text: str, at: int) -> int:
    """A redirection becomes one word (``2>&1``, ``>>``, ``<<``), its target the next word; a
    heredoc's delimiter is noted, its body skipped at the end of the line."""
    fd = "".join(split.word) if split.word is not None else ""
    if not fd.isdigit():
        split.end_word()
        fd = ""
    else:
        split.word = None
    stop = at
    while stop < len(text) and stop - at < 3 and text[stop] in _OPERATORS:
        stop += 1
    operator = text[at:stop]
    if operator.endswith("&") and text[stop : stop + 1].isdigit():  # 2>&1
        operator, stop = operator + text[stop], stop + 1
    elif operator == "<<" and text[stop : stop + 1] == "-":
        operator, stop = operator + "-", stop + 1
    split.out[-1][-1].append(fd + operator)
    if operator in ("<<", "<<-"):
        split.delimiter = operator == "<<-"
    return stop
