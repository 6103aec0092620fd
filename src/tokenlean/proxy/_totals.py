"""The proxy's sums and how they read: the log line per request, the JSON of
``GET /tokenlean/stats`` and the summary printed when it stops.

Two bills, each in units of one uncached input token (multiply by the model's input price for
money). *Billed input*: the prompt's tokens priced with the provider's cache (see
:mod:`tokenlean.proxy._stats`), without the rewrite ("in") and with it ("sent"). *Whole bill*:
billed input plus the answer's output tokens at the provider's output price
(:attr:`tokenlean.cost.CachePricing.output`). The output is what the upstream reported
(:mod:`tokenlean.proxy._usage`), the same with or without the rewrite (the answer is the one
the model gave), so it is added to both sides. The whole bill sums only the requests whose
answer reported its output; the others are counted as ``output_unknown``, and their input is in
the billed input only: adding it without its output would overstate the saving.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from tokenlean._counts import count
from tokenlean.proxy._usage import Usage

__all__ = ["RequestRecord", "Sums", "Totals", "log_line", "summary_lines"]


@dataclass(slots=True)
class Sums:
    """Figures that add up field by field (a subclass's fields)."""

    def add(self, other: Sums) -> None:  # of the same class
        names: tuple[str, ...] = self.__slots__  # the subclass's fields
        for name in names:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(slots=True)
class Totals(Sums):
    """Sums over requests; one per session and one overall."""

    requests: int = 0
    rewritten: int = 0
    rewrite_failures: int = 0
    upstream_errors: int = 0
    tokens_in: int = 0
    tokens_sent: int = 0
    billed_in: float = 0.0
    billed_sent: float = 0.0
    results_shortened: int = 0
    inputs_shortened: int = 0
    rewrite_seconds: float = 0.0
    count_seconds: float = 0.0  # CPU time spent on these statistics, after each answer
    output_tokens: int = 0  # as the upstream reported them
    output_unknown: int = 0  # requests whose answer reported no output tokens
    whole_bill_in: float = 0.0  # over the requests whose output is known
    whole_bill_sent: float = 0.0
    upstream_input_tokens: int = 0  # the upstream's own count of the prompts it got, when given
    upstream_cached_tokens: int = 0  # ... and of their part it read from its cache

    def answered(self, usage: Usage | None, output_price: float) -> None:
        """Count the answer into the whole bill of this one request's totals (its billed input
        already set); an answer that reported no usage is only counted as unknown."""
        if usage is None:
            self.output_unknown += 1
            return
        self.output_tokens += usage.output_tokens
        self.whole_bill_in += self.billed_in + output_price * usage.output_tokens
        self.whole_bill_sent += self.billed_sent + output_price * usage.output_tokens
        self.upstream_input_tokens += usage.input_tokens or 0
        self.upstream_cached_tokens += usage.cached_tokens or 0

    @property
    def billed_saved(self) -> float:
        return self.billed_in - self.billed_sent

    @property
    def whole_bill_saved(self) -> float:
        return self.whole_bill_in - self.whole_bill_sent

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("billed_in", "billed_sent", "whole_bill_in", "whole_bill_sent"):
            data[name] = round(data[name], 1)
        data["billed_saved"] = round(self.billed_saved, 1)
        data["billed_saved_ratio"] = round(_ratio(self.billed_saved, self.billed_in), 4)
        data["whole_bill_saved"] = round(self.whole_bill_saved, 1)
        data["whole_bill_saved_ratio"] = round(_ratio(self.whole_bill_saved, self.whole_bill_in), 4)
        data["rewrite_seconds"] = round(self.rewrite_seconds, 3)
        data["count_seconds"] = round(self.count_seconds, 3)
        return data


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One forwarded request whose body the proxy parsed, as the log line reports it."""

    session: str
    status: int
    totals: Totals


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def log_line(method: str, path: str, record: RequestRecord) -> str:
    t = record.totals
    saved = _ratio(t.tokens_in - t.tokens_sent, t.tokens_in)
    shortened = f", {t.results_shortened} results + {t.inputs_shortened} inputs shortened"
    return (
        f"{method} {path} {record.status} session {record.session}: "
        f"~{t.tokens_in:,} tokens in, ~{t.tokens_sent:,} sent ({saved:.1%} fewer), "
        f"billed input saved ~{t.billed_saved:,.0f} token-equivalents"
        f"{shortened if t.rewritten else ''}, rewrite {t.rewrite_seconds * 1000:.0f} ms; "
        f"{_whole_bill(t)}"
    )


def _whole_bill(t: Totals) -> str:
    if t.output_unknown:
        return "output unknown (the answer reported none)"
    ratio = _ratio(t.whole_bill_saved, t.whole_bill_in)
    return (
        f"output {t.output_tokens:,} tokens, whole bill ~{t.whole_bill_in:,.0f} -> "
        f"~{t.whole_bill_sent:,.0f} token-equivalents (-{ratio:.1%})"
    )


def summary_lines(snapshot: Mapping[str, Any]) -> list[str]:
    """The savings report printed when the proxy stops."""
    t = snapshot["total"]
    if not t["requests"]:
        return ["tokenlean: no requests went through the proxy"]
    sessions = len(snapshot["sessions"]) + snapshot.get("sessions_dropped", 0)
    return [
        f"tokenlean: {count(t['requests'], 'request')} in {count(sessions, 'session')}, "
        f"{t['rewritten']} rewritten ({t['results_shortened']} tool results and "
        f"{t['inputs_shortened']} tool inputs shortened)",
        f"tokenlean: ~{t['tokens_in']:,} prompt tokens in, ~{t['tokens_sent']:,} sent; "
        f"billed input ~{t['billed_in']:,.0f} -> ~{t['billed_sent']:,.0f} token-equivalents "
        f"(-{t['billed_saved_ratio']:.1%}, estimated with cache pricing)",
        _whole_bill_summary(t),
    ]


def _whole_bill_summary(t: Mapping[str, Any]) -> str:
    known = t["requests"] - t["output_unknown"]
    if not known:
        return "tokenlean: no answer reported its output tokens: no whole bill"
    return (
        f"tokenlean: {t['output_tokens']:,} output tokens in {known} answers "
        f"({t['output_unknown']} reported none); whole bill ~{t['whole_bill_in']:,.0f} -> "
        f"~{t['whole_bill_sent']:,.0f} token-equivalents (-{t['whole_bill_saved_ratio']:.1%}, "
        "output at each provider's price, over the answers with output)"
    )
