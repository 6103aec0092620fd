"""The traces ``tokenlean replay`` reads: the files named or found in folders (the bundled samples
when none are named), each session's context windows, and what reading them skipped or
repaired, said on standard error."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tokenlean.replay import (
    Trajectory,
    TrajectoryFormatError,
    load_trajectories,
    message_sequence_problem,
)

__all__ = ["NOT_A_TRACE", "load_traces"]

NOT_A_TRACE = "not a trajectory, nor a Claude Code, Codex, gemini-cli or OpenCode session"


def _collect(paths: Sequence[Path]) -> list[tuple[Path, bool]]:
    """The trace files to read, each with whether it was named (a file found in a folder may be
    some other log or setting, as gemini-cli keeps beside its sessions: it is skipped when it is
    no trace, a named one is an error)."""
    from tokenlean.replay import bundled_paths

    if not paths:
        return [(p, True) for p in bundled_paths()]
    files: list[tuple[Path, bool]] = []
    for path in paths:
        if path.is_dir():
            found = (p for p in path.rglob("*.json") if p.name != "index.json")
            files.extend((p, False) for p in sorted(found))
            files.extend((p, False) for p in sorted(path.rglob("*.jsonl")))
        else:
            files.append((path, True))
    return files


def load_traces(paths: Sequence[Path]) -> list[Trajectory]:
    """Read every trace (a compacted session: each context window); agent sessions that cannot
    be replayed are skipped with the reason. A named file that is no trace is an error when it
    is the only path named; among several (``native/*`` names a README too) it is skipped,
    saying why."""
    trajectories = []
    for path, named in _collect(paths):
        try:
            loaded = load_trajectories(path)
        except TrajectoryFormatError as exc:
            if named and len(paths) == 1:
                raise
            why = f"{exc.position}: {exc.problem}" if named else NOT_A_TRACE
            print(f"tokenlean: skipped {path}: {why}", file=sys.stderr)
            continue
        for trajectory in loaded:
            if "native_format" in trajectory.meta:
                where = _window_name(path, trajectory.meta)
                problem = message_sequence_problem(trajectory.messages)
                if problem:
                    print(f"tokenlean: skipped {path.parent / where}: {problem}", file=sys.stderr)
                    continue
                _note(path, trajectory.meta)
            trajectories.append(trajectory)
    return trajectories


def _window_name(path: Path, meta: Mapping[str, Any]) -> str:
    return f"{path.name}#w{meta['window']}" if "window" in meta else path.name


def _note(path: Path, meta: Mapping[str, Any]) -> None:
    """Say what reading a session left out or repaired, when it matters to the figures: what the
    file holds once, with its first context window, and each window's repairs."""
    notes = _file_notes(meta) if meta.get("window", 1) == 1 else []
    if notes:
        print(f"tokenlean: {path.name}: {'; '.join(notes)}", file=sys.stderr)
    repairs = [f"{k.replace('_', ' ')}: {n}" for k, n in meta.get("repaired", {}).items()]
    if repairs:
        print(f"tokenlean: {_window_name(path, meta)}: {'; '.join(repairs)}", file=sys.stderr)


def _file_notes(meta: Mapping[str, Any]) -> list[str]:
    """What a session file held that is not replayed as a part of it, or is read apart."""
    notes = []
    skipped = meta.get("skipped", {})
    if sidechain := skipped.get("sidechain", 0):
        notes.append(f"{sidechain} sub-agent (sidechain) lines skipped")
    if subagent := meta.get("subagent"):
        agent = f" {subagent}" if isinstance(subagent, str) else ""
        notes.append(f"a sub-agent's transcript (agent{agent}), replayed as its own session")
    unknown = {k.split(":", 1)[1]: n for k, n in skipped.items() if k.startswith("unknown_type:")}
    if unknown:
        kinds = ", ".join(f"{kind!r} x{n}" for kind, n in sorted(unknown.items()))
        notes.append(f"{sum(unknown.values())} line(s) of a type not known skipped: {kinds}")
    if bad := meta.get("bad_lines", []):
        shown = ", ".join(f"line {n} ({problem})" for n, problem in bad[:3])
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        notes.append(f"{len(bad)} line(s) that are not JSON skipped: {shown}{more}")
    if "windows" in meta:
        notes.append(f"compacted: {meta['windows']} context windows, each replayed")
    return notes
