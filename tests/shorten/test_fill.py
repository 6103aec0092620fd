"""The fill stops once nothing more can fit, and keeps exactly what asking every line kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean.shorten import _lines as lines_module
from tokenlean.shorten._lines import _choose
from tokenlean.shorten._selection import MUST, PROSE, Selection
from tokenlean.shorten._text import _costs

_CASES = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 120) | st.integers(0, 3), min_size=n, max_size=n),
        st.lists(st.integers(MUST, PROSE), min_size=n, max_size=n),
        st.lists(st.integers(0, n), min_size=n, max_size=n),
        st.sets(st.integers(0, n - 1)),
        st.dictionaries(st.integers(0, n - 2), st.booleans()) if n > 1 else st.just({}),
        st.floats(0, 60),
    )
)


@settings(max_examples=400)
@given(_CASES)
def test_stopping_when_full_keeps_what_the_whole_walk_kept(case: tuple) -> None:  # type: ignore[type-arg]  # hypothesis' tuple
    widths, tiers, ranks, forced, tied, budget = case
    ties = {i: i + 1 for i, on in tied.items() if on}
    selection = Selection(tiers, ranks, dict.fromkeys(forced, "budget"), ties)
    costs = _costs(widths)
    fast = _choose(costs, selection, budget, 4.5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines_module._Fill, "full", lambda self: False)
        slow = _choose(costs, selection, budget, 4.5)
    assert fast == slow
