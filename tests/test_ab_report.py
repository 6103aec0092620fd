"""The A/B report's statistics against textbook values, and how it reads logs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest

from tokenlean._interval import mean_interval, needed_per_arm, t_quantile, welch_interval
from tokenlean.ab import ab_report, read_sessions, report_lines

#: Student's t, 0.975 quantile, from the printed tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 8: 2.306, 10: 2.228, 30: 2.042,
           100: 1.984}  # fmt: skip


@pytest.mark.parametrize(("df", "expected"), sorted(T_TABLE.items()))
def test_t_quantile_matches_the_table(df: int, expected: float):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=0.004)


def test_mean_interval_is_the_textbook_t_interval():
    values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]  # mean 5, sample variance 32/7
    interval = mean_interval(values)
    half = T_TABLE.get(7, 2.365) * math.sqrt(32 / 7 / 8)
    assert (interval.estimate, interval.low, interval.high) == pytest.approx(
        (5.0, 5.0 - half, 5.0 + half), abs=0.005
    )


def test_welch_interval_with_equal_spreads_has_pooled_degrees_of_freedom():
    # Equal sizes and variances: Welch's degrees of freedom are 2(n - 1) = 8, its standard
    # error sqrt(2.5/5 + 2.5/5) = 1, so the interval is 2 +- t(0.975, 8) = 2 +- 2.306.
    interval = welch_interval([1, 2, 3, 4, 5], [3, 4, 5, 6, 7])
    assert (interval.estimate, interval.low, interval.high) == pytest.approx(
        (2.0, 2.0 - 2.306, 2.0 + 2.306), abs=0.002
    )


def test_needed_per_arm_is_the_classic_sample_size():
    # A difference of half a standard deviation, 5% two-sided, 80% power: 63 per group with
    # the normal approximation (1.959964 + 0.841621)^2 * 2 / 0.25 = 62.8.
    assert needed_per_arm(1.0, 1.0, 0.5) == 63
    z = NormalDist().inv_cdf
    assert needed_per_arm(3.0, 4.0, 1.0) == math.ceil((z(0.975) + z(0.8)) ** 2 * 25)


def _line(session: str, arm: str, cost: float, part: str = "p-1", **more: Any) -> str:
    fields = {"v": 1, "session": session, "arm": arm, "part": part, "requests": 2, "cost": cost,
              "cost_usd": cost / 1e6, "tool_results": 4, "tool_errors": 1, **more}  # fmt: skip
    return json.dumps(fields) + "\n"


def test_parts_are_summed_a_repeated_line_counted_once_and_a_session_in_both_arms_left_out(
    tmp_path: Path,
):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(_line("s1", "control", 10, "p-1") + _line("s2", "tokenlean", 5) + "not json\n")
    b.write_text(_line("s1", "control", 30, "q-1") + _line("s1", "control", 10, "p-1")
                 + _line("s3", "control", 1) + _line("s3", "tokenlean", 1, "q-2"))  # fmt: skip
    read = read_sessions([a, b])
    assert (read.lines, read.repeated, read.unreadable, read.in_both_arms) == (7, 1, 1, 1)
    costs = {s.key: (s.arm, s.sums["cost"], s.sums["requests"]) for s in read.sessions}
    assert costs == {"s1": ("control", 40.0, 4.0), "s2": ("tokenlean", 5.0, 2.0)}


def test_few_sessions_say_how_many_more_are_needed(tmp_path: Path):
    log = tmp_path / "ab.jsonl"
    control, treated = [100.0, 140.0, 60.0, 120.0], [90.0, 130.0, 50.0, 110.0]
    lines = [_line(f"c{i}", "control", c) for i, c in enumerate(control)]
    lines += [_line(f"t{i}", "tokenlean", c) for i, c in enumerate(treated)]
    log.write_text("".join(lines))
    report = ab_report([log])
    # Two-sided 5%, 80% power, a difference of 10% of the control's mean (10.5).
    z = NormalDist().inv_cdf
    # Each list's squared deviations from its mean: 25 + 1225 + 2025 + 225 = 3500, over n - 1.
    variance = 3500 / 3
    needed = math.ceil((z(0.975) + z(0.8)) ** 2 * 2 * variance / 10.5**2)
    assert report.needed == needed
    text = "\n".join(report_lines(report))
    assert (
        f"not enough sessions yet: about {needed - 4} more per arm to tell a 10% difference" in text
    )
    assert report.unit == "$" and "$0.0001" in text
    assert report.arms["control"].tool_error_rate == 0.25


def test_one_session_per_arm_is_too_few_for_an_interval(tmp_path: Path):
    log = tmp_path / "ab.jsonl"
    log.write_text(_line("c", "control", 10) + _line("t", "tokenlean", 5))
    report = ab_report([log])
    assert report.difference is None
    assert report.sentence.startswith("not enough sessions yet: an interval needs at least 2")
