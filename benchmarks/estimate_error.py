"""Measure the dependency-free token estimate against exact o200k_base counts on shared/data.

Usage: python benchmarks/estimate_error.py [--shared ../shared]
Prints, per content kind, the mean absolute percentage error of chars/4 and of EstimateCounter.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from tokenlean.tokens import EstimateCounter, TiktokenCounter


def samples(shared: Path) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = defaultdict(list)
    outputs = shared / "data" / "tool_outputs"
    for sub in sorted(p for p in outputs.iterdir() if p.is_dir()):
        for path in sorted(sub.iterdir()):
            kinds[sub.name].append(path.read_text(encoding="utf-8", errors="replace"))
    for path in sorted((shared / "data" / "trajectories").glob("*/*.json")):
        for message in json.loads(path.read_text())["messages"]:
            text = message.get("content") or ""
            if len(text) < 200:
                continue
            kind = "trajectory_tool_output" if message["role"] == "tool" else "trajectory_prose"
            kinds[kind].append(text)
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=Path(__file__).parents[2] / "shared")
    args = parser.parse_args()
    exact = TiktokenCounter("o200k_base", vocab_path=args.shared / "tokenizers")
    estimate = EstimateCounter()
    print("| kind | samples | chars/4 MAPE | estimate MAPE | estimate total bias |")
    print("|---|---:|---:|---:|---:|")
    for kind, texts in samples(args.shared).items():
        e4 = es = 0.0
        tot_exact = tot_est = 0
        for text in texts:
            n = exact.count(text)
            e4 += abs(len(text) / 4 - n) / n
            m = estimate.count(text)
            es += abs(m - n) / n
            tot_exact += n
            tot_est += m
        k = len(texts)
        print(
            f"| {kind} | {k} | {100 * e4 / k:.1f}% | {100 * es / k:.1f}% | "
            f"{100 * (tot_est - tot_exact) / tot_exact:+.1f}% |"
        )


if __name__ == "__main__":
    main()
