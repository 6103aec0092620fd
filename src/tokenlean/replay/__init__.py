"""Replay recorded agent trajectories through middleware and measure what it saves.

Needs the ``replay`` extra (LangChain, LangGraph and tiktoken). The names below are imported on
first use, so ``tokenlean`` (and its command line) loads without that extra until a replay runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenlean._lazy import lazy_names

if TYPE_CHECKING:
    from tokenlean.replay._bundled import bundled_paths
    from tokenlean.replay._formats import (
        Trajectory,
        TrajectoryFormatError,
        load_trajectories,
        load_trajectory,
        message_sequence_problem,
        parse_trajectory,
        session_name,
    )
    from tokenlean.replay._raw import CallPrompt
    from tokenlean.replay._report import (
        by_source_section,
        markdown_table,
        source_table,
        summary_lines,
        text_table,
        write_chart,
        write_json,
    )
    from tokenlean.replay._runner import ReplayReport, run_replay, stderr_progress
    from tokenlean.replay._script import Segment, arg_types, split_segments
    from tokenlean.replay._scripted import RecordedCall, ScriptedChatModel
    from tokenlean.replay._strategies import (
        BASELINE,
        Strategy,
        all_strategies,
        default_names,
        load_plugins,
        register,
        register_way_in,
    )
    from tokenlean.replay._strategies import get as get_strategy

#: Each public name -> the module that holds it (and its name there, where that differs).
_WHERE: dict[str, tuple[str, str]] = {
    **{n: ("_bundled", n) for n in ("bundled_paths",)},
    **{
        n: ("_formats", n)
        for n in (
            "Trajectory",
            "TrajectoryFormatError",
            "load_trajectories",
            "load_trajectory",
            "message_sequence_problem",
            "parse_trajectory",
            "session_name",
        )
    },
    **{
        n: ("_report", n)
        for n in (
            "by_source_section",
            "markdown_table",
            "source_table",
            "summary_lines",
            "text_table",
            "write_chart",
            "write_json",
        )
    },
    "CallPrompt": ("_raw", "CallPrompt"),
    **{n: ("_runner", n) for n in ("ReplayReport", "run_replay", "stderr_progress")},
    **{n: ("_script", n) for n in ("Segment", "arg_types", "split_segments")},
    **{n: ("_scripted", n) for n in ("RecordedCall", "ScriptedChatModel")},
    **{
        n: ("_strategies", n)
        for n in (
            "BASELINE",
            "Strategy",
            "all_strategies",
            "default_names",
            "load_plugins",
            "register",
            "register_way_in",
            "register_way_in",
        )
    },
    "get_strategy": ("_strategies", "get"),
}

__all__ = [
    "BASELINE",
    "CallPrompt",
    "RecordedCall",
    "ReplayReport",
    "ScriptedChatModel",
    "Segment",
    "Strategy",
    "Trajectory",
    "TrajectoryFormatError",
    "all_strategies",
    "arg_types",
    "bundled_paths",
    "by_source_section",
    "default_names",
    "get_strategy",
    "load_plugins",
    "load_trajectories",
    "load_trajectory",
    "markdown_table",
    "message_sequence_problem",
    "parse_trajectory",
    "register",
    "register_way_in",
    "run_replay",
    "session_name",
    "source_table",
    "split_segments",
    "stderr_progress",
    "summary_lines",
    "text_table",
    "write_chart",
    "write_json",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
