"""Replay recorded agent trajectories through middleware and measure what it saves.

Needs the ``replay`` extra (LangChain, LangGraph and tiktoken). The names below are imported on
first use, so ``tokenlean`` (and its command line) loads without that extra until a replay runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenlean._lazy import lazy_names

if TYPE_CHECKING:
    from tokenlean.replay._bill import AgentBill, Session, agent_bill, session_of
    from tokenlean.replay._bundled import bundled_paths
    from tokenlean.replay._choice import default_strategies
    from tokenlean.replay._formats import (
        Trajectory,
        TrajectoryFormatError,
        load_trajectories,
        load_trajectory,
        message_sequence_problem,
        parse_trajectory,
        session_name,
    )
    from tokenlean.replay._parts import FIXED, CallParts, billed_parts, part_of, split_billed
    from tokenlean.replay._png import png_problem
    from tokenlean.replay._progress import EtaProgress
    from tokenlean.replay._raw import CallPrompt
    from tokenlean.replay._report import (
        by_source_section,
        markdown_table,
        source_table,
        summary_lines,
        text_table,
        to_json,
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
    from tokenlean.replay._verdict import WIDTH, agent_report, money_lines, verdict
    from tokenlean.replay._where import none_parts, parts_by_trajectory

#: Each module and the public names it holds.
_HELD: dict[str, tuple[str, ...]] = {
    "_bill": ("AgentBill", "Session", "agent_bill", "session_of"),
    "_bundled": ("bundled_paths",),
    "_choice": ("default_strategies",),
    "_formats": (
        "Trajectory",
        "TrajectoryFormatError",
        "load_trajectories",
        "load_trajectory",
        "message_sequence_problem",
        "parse_trajectory",
        "session_name",
    ),
    "_parts": ("FIXED", "CallParts", "billed_parts", "part_of", "split_billed"),
    "_png": ("png_problem",),
    "_progress": ("EtaProgress",),
    "_raw": ("CallPrompt",),
    "_report": (
        "by_source_section",
        "markdown_table",
        "source_table",
        "summary_lines",
        "text_table",
        "to_json",
        "write_chart",
        "write_json",
    ),
    "_runner": ("ReplayReport", "run_replay", "stderr_progress"),
    "_script": ("Segment", "arg_types", "split_segments"),
    "_scripted": ("RecordedCall", "ScriptedChatModel"),
    "_strategies": (
        "BASELINE",
        "Strategy",
        "all_strategies",
        "default_names",
        "load_plugins",
        "register",
        "register_way_in",
    ),
    "_verdict": ("WIDTH", "agent_report", "money_lines", "verdict"),
    "_where": ("none_parts", "parts_by_trajectory"),
}
#: Each public name -> the module that holds it (and its name there, where that differs).
_WHERE: dict[str, tuple[str, str]] = {
    **{name: (module, name) for module, names in _HELD.items() for name in names},
    "get_strategy": ("_strategies", "get"),
}

__all__ = [
    "BASELINE",
    "FIXED",
    "WIDTH",
    "AgentBill",
    "CallParts",
    "CallPrompt",
    "EtaProgress",
    "RecordedCall",
    "ReplayReport",
    "ScriptedChatModel",
    "Segment",
    "Session",
    "Strategy",
    "Trajectory",
    "TrajectoryFormatError",
    "agent_bill",
    "agent_report",
    "all_strategies",
    "arg_types",
    "billed_parts",
    "bundled_paths",
    "by_source_section",
    "default_names",
    "default_strategies",
    "get_strategy",
    "load_plugins",
    "load_trajectories",
    "load_trajectory",
    "markdown_table",
    "message_sequence_problem",
    "money_lines",
    "none_parts",
    "parse_trajectory",
    "part_of",
    "parts_by_trajectory",
    "png_problem",
    "register",
    "register_way_in",
    "run_replay",
    "session_name",
    "session_of",
    "source_table",
    "split_billed",
    "split_segments",
    "stderr_progress",
    "summary_lines",
    "text_table",
    "to_json",
    "verdict",
    "write_chart",
    "write_json",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
