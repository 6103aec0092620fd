"""A window a file tool chose around what the call named (SWE-agent's ``open f 150``, the echo
of an edit) keeps ``view_context_lines`` on each side of it; anything it cannot place stays."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenlean import ShortenSettings, shorten
from tokenlean.shorten import Retrieval

HINT = Retrieval("o1a2b3", "read_original")
TOTAL = 400
CONTEXT = ShortenSettings().view_context_lines


def _code(n: int) -> str:
    """Line ``n`` of a module: each line its own, none repeated."""
    return f"    total_{n} = ledger.post(account_{n % 7}, amount={n * 13}, memo='entry {n}')"


def _window(first: int, last: int, *, selected: range = range(0)) -> str:
    """SWE-agent's editor window over lines ``first``-``last`` of a 400-line file."""
    out = ["[File: /repo/src/ledger.py (400 lines total)]", f"({first - 1} more lines above)"]
    for n in range(first, last + 1):
        if n == selected.start:
            out.append("<<<<< START CURSOR >>>>>")
        out.append(f"{n}:{_code(n)}")
        if selected and n == selected.stop - 1:
            out.append("<<<<< END CURSOR >>>>>")
    out += [f"({TOTAL - last} more lines below)", "(Open file: /repo/src/ledger.py)", "bash-$"]
    return "\n".join(out)


def _numbers(text: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"^(\d+):", text, re.MULTILINE)]


@pytest.mark.parametrize(
    "query",
    [
        {"command": "open src/ledger.py 150"},
        {"command": "goto 150"},
        {"path": "src/ledger.py", "line_number": 150},
    ],
)
def test_a_window_opened_at_a_line_keeps_the_lines_around_it(query: dict[str, Any]) -> None:
    text = _window(100, 199)
    report = shorten(text, query=query, retrieval=HINT)
    assert _numbers(report.text) == list(range(150 - CONTEXT, 150 + CONTEXT + 1))
    out = report.text.split("\n")
    assert out[:2] == text.split("\n")[:2] and out[-3:] == text.split("\n")[-3:]
    # each gap says which lines of the original to read back
    assert out[2] == '[... 30 lines omitted; read_original("o1a2b3", "3-32") ...]'
    assert out[-4] == "[... 29 lines omitted (74-102) ...]"


@pytest.mark.parametrize(
    "query",
    [
        {"command": "open src/ledger.py"},  # the top of the file: the agent asked for no line
        {"command": "open src/ledger.py 350"},  # a line the window does not show
        {"command": "scroll_down"},
        {"path": "src/ledger.py", "line_number": 150, "limit": 40},  # a range of its own
    ],
)
def test_a_window_not_placed_by_a_line_in_it_stays_whole(query: dict[str, Any]) -> None:
    text = _window(100, 199)
    assert shorten(text, query=query, retrieval=HINT).text == text


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ({"command": f"edit 150:151\n{_code(150)}\n{_code(151)}\nend_of_edit"}, 150),
        ({"command": f"insert 150\n{_code(150)}\n{_code(151)}\nend_of_edit"}, 150),
        ({"command": f"edit\n{_code(150)}\n{_code(151)}\nend_of_edit"}, 150),  # at the cursors
        ({"search": "amount=0", "replace": f"{_code(150)}\n{_code(151)}"}, 150),
        ({"path": "src/ledger.py", "old_str": "amount=0", "new_str": _code(151)}, 151),
    ],
)
def test_an_edit_echo_keeps_the_lines_around_what_it_wrote(
    query: dict[str, Any], first: int
) -> None:
    text = _window(100, 199)
    report = shorten(text, query=query, retrieval=HINT)
    assert _numbers(report.text) == list(range(first - CONTEXT, 151 + CONTEXT + 1))


def test_an_edit_echo_showing_none_of_its_text_stays_whole() -> None:
    # the edit failed before it landed, or its lines are too short to place (``else:``)
    text = _window(100, 199)
    for query in ({"command": "edit 150:150\n    else:\nend_of_edit"}, {"replace": "print(x)"}):
        assert shorten(text, query=query, retrieval=HINT).text == text


def test_the_lines_a_viewer_selected_stay_with_those_around_them() -> None:
    # SWE-agent's cursors: its next ``edit`` replaces the selected lines
    text = _window(100, 299, selected=range(110, 113))
    report = shorten(text, query={"command": "open src/ledger.py 250"}, retrieval=HINT)
    assert _numbers(report.text) == [*range(100, 113 + CONTEXT), *range(230, 271)]
    assert "<<<<< START CURSOR >>>>>" in report.text and "<<<<< END CURSOR >>>>>" in report.text


def test_a_snippet_no_wider_than_the_context_stays_whole() -> None:
    # an editor's usual echo: a few lines on each side of the edit
    text = "\n".join(f"{n:>6}\t{_code(n)}" for n in range(146, 156))
    query = {"file_path": "src/ledger.py", "old_string": "x", "new_string": _code(150)}
    assert shorten(text, query=query, retrieval=HINT).text == text


_KEYS = ["command", "path", "line_number", "line", "replace", "new_str", "text", "search"]
_VALUES = st.one_of(
    st.text(max_size=120),
    st.sampled_from(["open src/ledger.py 150", "goto 7", "edit 3:4\n" + _code(150), "150"]),
    st.integers(-5, 500),
    st.integers(10**20, 10**30),
    st.booleans(),
    st.none(),
)


@given(
    args=st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=4),
    first=st.integers(1, 300),
    size=st.integers(1, 150),
)
def test_any_call_on_any_window_keeps_its_unnumbered_lines(
    args: dict[str, Any], first: int, size: int
) -> None:
    text = _window(first, first + size - 1)
    report = shorten(text, query=args, retrieval=HINT)
    assert len(report.text) <= len(text)
    out = report.text.split("\n")
    assert all(line in out for line in text.split("\n") if not re.match(r"\d+:", line))
