"""An identity check for work on the shortening core: a digest of every output it gives.

Run from the repository root::

    python benchmarks/shorten_identity.py --write digests.json   # at the starting commit
    python benchmarks/shorten_identity.py --check digests.json   # after each change

It shortens every file in ``shared/data/tool_outputs`` at the defaults, and every tool result
of every run in ``shared/data/trajectories`` three ways: alone, with its call's arguments as the
query and the note of the turn that made the call as context, and as
:func:`~tokenlean.shorten.plan_first_sight` sends it at the defaults (the lines shown earlier
as ``seen``, earlier shortenings applied). Each output's digest covers its text, kind, token
counts and omissions; ``--check`` prints how many outputs it compared and which differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from tokenlean import shorten
from tokenlean.replay import load_trajectory
from tokenlean.shorten import OutputShorteningSettings, ShortenReport, plan_first_sight
from tokenlean.transcript import Message

ROOT = Path(__file__).resolve().parents[1]


def digest(report: ShortenReport) -> str:
    parts = (report.text, report.kind, report.tokens_before, report.tokens_after, report.omissions)
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def file_outputs(shared: Path) -> Iterator[tuple[str, str]]:
    folder = shared / "data" / "tool_outputs"
    for path in sorted(p for p in folder.glob("*/*") if p.is_file() and p.name != "index.json"):
        text = path.read_text(encoding="utf-8", errors="replace")
        yield f"file:{path.parent.name}/{path.name}", digest(shorten(text))


def run_outputs(path: Path, name: str) -> Iterator[tuple[str, str]]:
    messages = list(load_trajectory(path).messages)
    calls: dict[str, tuple[object, str | None]] = {}
    for i, message in enumerate(messages):
        for call in message.tool_calls:
            calls[call.id] = (call.args, message.text or None)
        if message.role == "tool" and message.text:
            args, note = calls.get(message.tool_call_id or "", (None, None))
            yield f"{name}:{i}:plain", digest(shorten(message.text))
            report = shorten(message.text, query=args, context=note)  # type: ignore[arg-type]
            yield f"{name}:{i}:query", digest(report)
    yield from first_sight(messages, name)


def first_sight(messages: list[Message], name: str) -> Iterator[tuple[str, str]]:
    """Every turn's plan as a middleware makes it, its edits applied before the next turn."""
    policy, log = OutputShorteningSettings(), None
    for end in range(1, len(messages) + 1):
        closes_turn = end == len(messages) or messages[end].role != "tool"
        if messages[end - 1].role != "tool" or not closes_turn:
            continue
        plan = plan_first_sight(messages[:end], policy, log=log)
        log = plan.log
        for edit, report in zip(plan.edits, plan.reports, strict=True):
            messages[edit.index] = replace(messages[edit.index], content=edit.new_content)
            yield f"{name}:{edit.index}:first_sight", digest(report)


def all_outputs(shared: Path) -> dict[str, str]:
    out = dict(file_outputs(shared))
    for path in sorted((shared / "data" / "trajectories").glob("*/*.json")):
        out.update(run_outputs(path, f"{path.parent.name}/{path.stem}"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path)
    group.add_argument("--check", type=Path)
    args = parser.parse_args()
    outputs = all_outputs(args.shared)
    if args.write:
        args.write.write_text(json.dumps(outputs, indent=0, sort_keys=True))
        print(f"wrote {len(outputs)} digests to {args.write}")
        return
    expected = json.loads(args.check.read_text())
    differ = sorted(
        k for k in expected.keys() | outputs.keys() if expected.get(k) != outputs.get(k)
    )
    print(f"outputs compared: {len(expected)}; differences: {len(differ)}")
    for key in differ[:20]:
        print(f"  {key}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
