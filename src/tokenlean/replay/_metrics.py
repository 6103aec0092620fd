"""The numbers a replay is judged by (see DESIGN.md, "The numbers it is judged by").

A prompt is a list of *blocks*: the tool schemas, then each message in its canonical form. Per
call: tokens sent; cached tokens = tokens of the longest run of leading blocks byte-identical to
the previous call's; billed input under each pricing preset; whether the previous prompt was a
prefix of this one (else a *prefix break*, at the first differing message); and which learned
references were still visible. The *whole bill* adds the output: the tokens of the recorded
turn that answered the call, at the pricing's output price (:func:`whole_bill`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tokenlean.cost import ANTHROPIC, OPENAI, CachePricing
from tokenlean.replay._refs import extract_refs, message_refs
from tokenlean.tokens import TokenCounter, message_tokens
from tokenlean.transcript import Message, canonical

__all__ = [
    "CallMeter",
    "CallMetrics",
    "Prompt",
    "PromptMeasurer",
    "RunMetrics",
    "measure_calls",
    "pool",
    "relative",
    "whole_bill",
]


@dataclass(frozen=True, slots=True)
class Prompt:
    """One call's prompt as blocks, with the tokens and references of each block."""

    blocks: tuple[str, ...]
    tokens: tuple[int, ...]
    refs: frozenset[str]

    @property
    def total(self) -> int:
        return sum(self.tokens)


class PromptMeasurer:
    """Turns prompts into :class:`Prompt` objects, measuring each distinct block only once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._tokens: dict[str, int] = {}
        self._refs: dict[str, frozenset[str]] = {}

    def measure(self, tool_schemas: str, messages: Sequence[Message]) -> Prompt:
        blocks = [tool_schemas]
        tokens = [self._schema_tokens(tool_schemas)]
        refs: set[str] = set()
        for message in messages:
            block = canonical(message)
            if block not in self._tokens:
                self._tokens[block] = message_tokens(message, self.counter)
                self._refs[block] = message_refs(message)
            blocks.append(block)
            tokens.append(self._tokens[block])
            refs |= self._refs[block]
        return Prompt(tuple(blocks), tuple(tokens), frozenset(refs))

    def outputs(self, messages: Sequence[Message]) -> list[int]:
        """The tokens of each assistant turn of a trajectory, in order (its text and its calls'
        arguments: what the model wrote, which the whole bill prices as output)."""
        return [message_tokens(m, self.counter) for m in messages if m.role == "assistant"]

    def _schema_tokens(self, text: str) -> int:
        if text not in self._tokens:
            self._tokens[text] = self.counter.count(text) if text != "[]" else 0
            self._refs[text] = extract_refs(text)
        return self._tokens[text]


@dataclass(frozen=True, slots=True)
class CallMetrics:
    """One model call's measurements."""

    prompt_tokens: int
    cached_tokens: int
    billed_anthropic: float
    billed_openai: float
    break_at: int | None  # index of the first changed message when this call broke the prefix
    refs_total: int
    refs_retained: int
    output_tokens: int = 0  # of the reply (the recorded turn), the same whatever the strategy


class CallMeter:
    """Measures a run's calls one at a time, as they come: it keeps only the previous prompt,
    which the next call's cache-prefix comparison needs (a run's prompts all held at once grow
    with the square of its length)."""

    def __init__(self) -> None:
        self._previous: Prompt | None = None

    def add(
        self, prompt: Prompt, refs: frozenset[str] = frozenset(), output: int = 0
    ) -> CallMetrics:
        """The next call's figures: ``refs`` are the learned references of its reply, ``output``
        the reply's tokens."""
        previous, self._previous = self._previous, prompt
        same = _common_prefix(previous.blocks, prompt.blocks) if previous else 0
        cached = sum(prompt.tokens[:same])
        broke = previous is not None and same < len(previous.blocks)
        return CallMetrics(
            prompt_tokens=prompt.total,
            cached_tokens=cached,
            billed_anthropic=ANTHROPIC.billed(prompt.total, cached),
            billed_openai=OPENAI.billed(prompt.total, cached),
            break_at=(same - 1) if broke else None,  # block 0 is the tool schemas
            refs_total=len(refs),
            refs_retained=len(refs & prompt.refs),
            output_tokens=output,
        )


def measure_calls(
    prompts: Sequence[Prompt],
    turn_refs: Sequence[frozenset[str]],
    outputs: Sequence[int] = (),
) -> list[CallMetrics]:
    """Per-call metrics; ``turn_refs[i]`` holds the learned references of call ``i``'s reply
    and ``outputs[i]`` its tokens (none given: 0, and the whole bill is the input bill)."""
    meter = CallMeter()
    return [
        meter.add(
            prompt,
            turn_refs[i] if i < len(turn_refs) else frozenset(),
            outputs[i] if i < len(outputs) else 0,
        )
        for i, prompt in enumerate(prompts)
    ]


def _common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        n += 1
    return n


@dataclass
class RunMetrics:
    """Totals for one strategy on one trajectory (or pooled over many)."""

    strategy: str
    trajectory: str
    source: str = ""  # the trajectory's source name (see Trajectory.source_name)
    calls: int = 0
    tokens_sent: int = 0
    billed_anthropic: float = 0.0
    billed_openai: float = 0.0
    prefix_breaks: int = 0
    break_positions: list[tuple[int, int]] = field(default_factory=list)  # (call, message)
    refs_total: int = 0
    refs_retained: int = 0
    output_tokens: int = 0
    middleware_seconds: float = 0.0
    wall_seconds: float = 0.0
    extra_calls: int = 0
    error: str | None = None
    # (prompt, cached, output) tokens of each call, in order: what prices the run under any
    # pricing after the fact (billed_under), a model's tiers and minimums included
    call_tokens: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.refs_retained / self.refs_total if self.refs_total else 1.0

    @property
    def middleware_ms_per_call(self) -> float:
        return 1000 * self.middleware_seconds / self.calls if self.calls else 0.0

    def add_calls(self, calls: Iterable[CallMetrics]) -> None:
        for index, call in enumerate(calls, start=self.calls):
            self.calls += 1
            self.tokens_sent += call.prompt_tokens
            _add(self, call, _CALL_SUMS)
            self.call_tokens.append((call.prompt_tokens, call.cached_tokens, call.output_tokens))
            if call.break_at is not None:
                self.prefix_breaks += 1
                self.break_positions.append((index, call.break_at))

    def billed_under(self, pricing: CachePricing) -> float:
        """The billed input of every call under ``pricing`` (tiers by each call's prompt)."""
        return sum(pricing.billed(prompt, cached) for prompt, cached, _ in self.call_tokens)

    def whole_under(self, pricing: CachePricing) -> float:
        """The billed input plus each call's output at ``pricing``'s price for its prompt."""
        output = sum(pricing.for_prompt(p).output * out for p, _, out in self.call_tokens)
        return self.billed_under(pricing) + output

    def to_dict(self) -> dict[str, object]:
        return {
            "strategy": self.strategy,
            "trajectory": self.trajectory,
            "source": self.source,
            "calls": self.calls,
            "tokens_sent": self.tokens_sent,
            "billed_anthropic": round(self.billed_anthropic, 2),
            "billed_openai": round(self.billed_openai, 2),
            "prefix_breaks": self.prefix_breaks,
            "break_positions": [list(p) for p in self.break_positions],
            "refs_total": self.refs_total,
            "refs_retained": self.refs_retained,
            "output_tokens": self.output_tokens,
            "recall": round(self.recall, 5),
            "middleware_ms_per_call": round(self.middleware_ms_per_call, 4),
            "middleware_seconds": self.middleware_seconds,  # unrounded: a read-back pools as saved
            "wall_seconds": round(self.wall_seconds, 4),
            "extra_calls": self.extra_calls,
            "error": self.error,
        }


def pool(strategy: str, runs: Iterable[RunMetrics], *, source: str = "") -> RunMetrics:
    """Sum runs of one strategy into one row (recall and ms/call are pooled ratios).

    ``source`` labels a row pooled over one source's runs (the caller picks the runs).
    """
    total = RunMetrics(strategy=strategy, trajectory="(all)", source=source)
    for run in runs:
        if not run.error:
            _add(total, run, _RUN_SUMS)
    return total


#: The figures of a call that its run sums (under the same names).
_CALL_SUMS = ("billed_anthropic", "billed_openai", "refs_total", "refs_retained", "output_tokens")
#: The figures of a run that a pooled row sums.
_RUN_SUMS = (
    "calls", "tokens_sent", *_CALL_SUMS, "prefix_breaks",
    "middleware_seconds", "wall_seconds", "extra_calls", "call_tokens",
)  # fmt: skip


def _add(total: RunMetrics, part: CallMetrics | RunMetrics, names: Sequence[str]) -> None:
    """Add ``part``'s figures ``names`` to ``total``'s."""
    for name in names:
        setattr(total, name, getattr(total, name) + getattr(part, name))


def whole_bill(row: RunMetrics, pricing: CachePricing, output_price: float | None = None) -> float:
    """What ``row`` costs in all under ``pricing`` (the Anthropic or OpenAI preset: the input
    bill of that style) plus its output tokens at ``output_price`` (default the pricing's)."""
    billed = row.billed_openai if pricing.name == OPENAI.name else row.billed_anthropic
    price = pricing.output if output_price is None else output_price
    return billed + price * row.output_tokens


def relative(
    row: RunMetrics, baseline: RunMetrics, *, output_price: float | None = None
) -> Mapping[str, float]:
    """Ratios of a row's cost figures to the baseline's from the same run (``output_price``
    replaces both presets' output price in the whole bill)."""

    def ratio(a: float, b: float) -> float:
        return a / b if b else 1.0

    def whole(pricing: CachePricing) -> float:
        return ratio(
            whole_bill(row, pricing, output_price), whole_bill(baseline, pricing, output_price)
        )

    return {
        "tokens_sent": ratio(row.tokens_sent, baseline.tokens_sent),
        "billed_anthropic": ratio(row.billed_anthropic, baseline.billed_anthropic),
        "billed_openai": ratio(row.billed_openai, baseline.billed_openai),
        "whole_anthropic": whole(ANTHROPIC),
        "whole_openai": whole(OPENAI),
    }
