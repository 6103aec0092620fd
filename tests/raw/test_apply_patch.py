"""The Responses API's built-in ``apply_patch``: an ``apply_patch_call`` carries its diff in
``operation.diff``, and once the call has run the diff is cut as a custom tool's input is (head,
tail, a marker naming the original), every other field of the item and of its operation kept.
A deletion (no diff) and anything malformed pass through as the same objects. The real Agents
SDK's ``ApplyPatchTool`` drives it in ``tests/recipes/test_openai_agents.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tokenlean.raw import RawSettings, openai_responses, rewrite_request

from .bodies import LONG

DIFF = "\n".join(
    f"+def handler_{i}(request):\n+    return compute_value_{i}(request.payload)" for i in range(60)
)


def _body(operation: Any, output: Any = "Done", **call: Any) -> dict[str, Any]:
    item = {
        "type": "apply_patch_call",
        "id": "ap_1",
        "call_id": "call_1",
        "status": "completed",
        "operation": operation,
        **call,
    }
    result = {"type": "apply_patch_call_output", "call_id": "call_1", "status": "completed"}
    if output is not None:
        result["output"] = output
    return {"model": "gpt-5.1", "input": [{"role": "user", "content": "Add it."}, item, result]}


@pytest.mark.parametrize("kind", ["create_file", "update_file"])
def test_a_diff_that_has_run_is_cut_and_every_other_field_stays(
    kind: str, settings: RawSettings
) -> None:
    operation = {"type": kind, "path": "app/handlers.py", "diff": DIFF, "move_to": "app/h.py"}
    body = _body(operation, caller={"type": "direct"})
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is not None and result.inputs_shortened == 1
    item, before = result.body["input"][1], body["input"][1]
    assert {k: v for k, v in item.items() if k != "operation"} == {
        k: v for k, v in before.items() if k != "operation"
    }
    assert {k: v for k, v in item["operation"].items() if k != "diff"} == {
        k: v for k, v in operation.items() if k != "diff"
    }
    diff = item["operation"]["diff"]
    assert len(diff) < len(DIFF) / 3
    assert diff.startswith("+def handler_0(request):") and diff.endswith(
        "compute_value_59(request.payload)"
    )
    assert str(settings.originals_dir) in diff  # the marker names the file that holds it all
    kept = list(settings.originals_dir.iterdir())
    assert any(DIFF in path.read_text(encoding="utf-8") for path in kept)
    assert body["input"][1]["operation"]["diff"] == DIFF  # the caller's body is not touched


def test_the_view_names_the_call_apply_patch_with_its_diff_and_file() -> None:
    view = openai_responses.read(_body({"type": "update_file", "path": "a.py", "diff": "+x"}))
    assert view is not None
    turn, output = view.messages[1], view.messages[2]
    assert [(c.name, c.args) for c in turn.tool_calls] == [
        ("apply_patch", {"input": "+x", "path": "a.py"})
    ]
    assert (output.tool_call_id, output.content) == ("call_1", "Done")


def test_a_long_patch_output_is_shortened_as_a_result(settings: RawSettings) -> None:
    body = _body({"type": "update_file", "path": "a.py", "diff": "+x"}, output=LONG)
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is not None and result.results_shortened == 1
    item = result.body["input"][2]
    assert len(item["output"]) < len(LONG) / 3
    assert {k: v for k, v in item.items() if k != "output"} == {
        k: v for k, v in body["input"][2].items() if k != "output"
    }


@pytest.mark.parametrize(
    "operation",
    [
        {"type": "delete_file", "path": "app/old.py"},  # nothing to cut
        {"type": "update_file", "path": "a.py", "diff": {"lines": [DIFF]}},  # not a string
        {"type": "update_file", "path": "a.py"},
        "update_file",
        None,
    ],
)
def test_what_has_no_diff_to_cut_passes_through(operation: Any, settings: RawSettings) -> None:
    body = _body(operation, output=None)
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is None or result.body["input"][1] is body["input"][1]


def test_a_call_without_an_id_passes_through(settings: RawSettings) -> None:
    body = _body({"type": "create_file", "path": "a.py", "diff": DIFF}, call_id=None)
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is None or result.body["input"][1] is body["input"][1]
