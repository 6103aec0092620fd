"""The replay's chart: billed input (Anthropic-style, relative to no middleware) against
reference recall, one point per strategy, as a self-contained SVG."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from tokenlean.replay._metrics import relative
from tokenlean.replay._runner import ReplayReport
from tokenlean.replay._strategies import BASELINE

__all__ = ["chart_svg"]


def chart_svg(report: ReplayReport, *, width: int = 760, height: int = 440) -> str:
    """Billed input (Anthropic-style, x baseline) against reference recall, one dot a strategy.

    Dots are numbered; the legend gives each number's strategy and its two values, so entries
    that land on the same spot stay readable.
    """
    base = report.pooled.get(BASELINE) or next(iter(report.pooled.values()))
    points = sorted(
        (
            (relative(row, base)["billed_anthropic"], -row.recall, name)
            for name, row in report.pooled.items()
            if not _all_failed(report, name)
        ),
    )
    left, right, top, bottom = 64, 330, 20, 50
    xs = [p[0] for p in points] + [1.0]
    ys = [-p[1] for p in points] + [1.0]
    plot = _Plot(
        left, top, width - left - right, height - top - bottom,
        min(xs) - 0.04, max(xs) + 0.04, min(ys) - 0.01, 1.004,
    )  # fmt: skip
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left + plot.pw / 2}" y="{height - 12}" text-anchor="middle">'
        "billed input, Anthropic-style (x no middleware; lower is cheaper)</text>",
        f'<text transform="translate(16 {top + plot.ph / 2}) rotate(-90)" text-anchor="middle">'
        "reference recall</text>",
        *_grid(plot),
        *_dots(plot, points),
        "</svg>",
    ]
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class _Plot:
    """The plot area (its top left corner, width and height, in pixels) and the ranges of
    values its axes span."""

    left: int
    top: int
    pw: int
    ph: int
    x0: float
    x1: float
    y0: float
    y1: float

    def sx(self, v: float) -> float:
        return self.left + (v - self.x0) / (self.x1 - self.x0) * self.pw

    def sy(self, v: float) -> float:
        return self.top + (self.y1 - v) / (self.y1 - self.y0) * self.ph


def _grid(plot: _Plot) -> list[str]:
    """The grid lines and tick labels of both axes, and the plot area's frame."""
    left, top, pw, ph = plot.left, plot.top, plot.pw, plot.ph
    parts = []
    for tick in _ticks(plot.x0, plot.x1):
        x = plot.sx(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#eee"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{tick:.2f}</text>'
        )
    for tick in _ticks(plot.y0, plot.y1):
        y = plot.sy(tick)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#eee"/>'
        )
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.3f}</text>')
    parts.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>'
    )
    return parts


def _dots(plot: _Plot, points: list[tuple[float, float, str]]) -> list[str]:
    """A numbered dot per strategy (``points``: billed, minus recall, name), and the legend."""
    parts = []
    for i, (x, neg_recall, name) in enumerate(points, start=1):
        color = "#444" if name == BASELINE else _PALETTE[(i - 1) % len(_PALETTE)]
        cx, cy = plot.sx(x), plot.sy(-neg_recall)
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{color}" opacity="0.85"/>')
        dy = -7 if i % 2 else 15
        parts.append(
            f'<text x="{cx + 6:.1f}" y="{cy + dy:.1f}" fill="{color}" font-size="10">{i}</text>'
        )
        parts.append(
            f'<text x="{plot.left + plot.pw + 14}" y="{plot.top + 12 + 17 * (i - 1)}" '
            f'fill="{color}">{i}. {html.escape(name)} ({x:.3f}, {-neg_recall:.3f})</text>'
        )
    return parts


_PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
    "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
)  # fmt: skip


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (multiples of 1, 2, 2.5 or 5 times a power of ten) inside [lo, hi]."""
    raw = (hi - lo) / n
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step)
    return [k * step for k in range(first, math.floor(hi / step) + 1)]


def _all_failed(report: ReplayReport, name: str) -> bool:
    runs = [r for r in report.runs if r.strategy == name]
    return bool(runs) and all(r.error for r in runs)
