"""The indented JSON writer gives exactly what ``json.dumps(..., indent=...)`` gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenlean.shorten._indented import dumps_indented

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.sampled_from(["", "é中😀", '"\\\n\t\x00\x1f\u2028', "\udcff"])
)
_KEYS = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(_KEYS, inner, max_size=5)
    ),
    max_leaves=40,
)
_INDENTS = st.sampled_from([1, 2, 4, "\t", "  ", ""])


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, _INDENTS)
def test_it_writes_what_json_dumps_writes(value: Any, indent: int | str) -> None:
    assert dumps_indented(value, indent) == json.dumps(value, ensure_ascii=False, indent=indent)


def test_deep_records_and_other_types_are_left_to_json() -> None:
    deep: Any = "leaf"
    for _ in range(150):
        deep = {"a": [deep]}
    assert dumps_indented(deep, 2) == json.dumps(deep, ensure_ascii=False, indent=2)
    with pytest.raises(TypeError):
        dumps_indented({"a": {1, 2}}, 2)
    with pytest.raises(TypeError):
        dumps_indented({(1, 2): 3}, 2)
