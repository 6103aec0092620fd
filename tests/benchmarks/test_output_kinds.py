"""benchmarks.output_kinds sorts a call into the kind of output it gives."""

from __future__ import annotations

import pytest
from benchmarks.output_kinds import kind


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("Read", {"file_path": "src/app.py"}, "whole-file read"),
        ("Read", {"file_path": "src/app.py", "offset": 120, "limit": 80}, "ranged read"),
        ("bash", {"command": "cat -n src/app.py"}, "whole-file read"),
        ("bash", {"command": "sed -n '40,90p' src/app.py"}, "ranged read"),
        ("Grep", {"pattern": "def handle", "output_mode": "content"}, "search"),
        ("bash", {"command": "grep -rn -A3 'def handle' src"}, "search"),
        ("bash", {"command": "python -m pytest tests/test_app.py -x"}, "run"),
        ("bash", {"command": "ls -la"}, "other"),
    ],
)
def test_kind(name: str, args: dict[str, object], expected: str) -> None:
    assert kind(name, args) == expected
