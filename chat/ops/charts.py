"""Line charts drawn by the server as SVG: coordinates computed here, the markup
in `templates/admin/chat/_line_chart.html`. No JavaScript is involved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

WIDTH = 640
HEIGHT = 200
# Room for the axis labels: left, right, top, bottom.
MARGIN = (56, 12, 12, 28)
Y_TICKS = 4


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    label: str  # what a tooltip (the SVG <title>) says


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class LineChart:
    title: str
    unit: str
    dots: list[Dot]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def polyline(self) -> str:
        return " ".join(f"{dot.x:.1f},{dot.y:.1f}" for dot in self.dots)

    @property
    def left(self) -> int:
        return MARGIN[0]

    @property
    def right(self) -> int:
        return self.width - MARGIN[1]

    @property
    def top(self) -> int:
        return MARGIN[2]

    @property
    def bottom(self) -> int:
        return self.height - MARGIN[3]


def line_chart(
    title: str,
    unit: str,
    points: Sequence[tuple[datetime, float | None]],
    *,
    start: datetime,
    end: datetime,
    hourly: bool,
) -> LineChart:
    """Plot `points` (time, value; None values are left out) over [start, end],
    the y axis from 0 to a round number above the largest value."""
    left, right = MARGIN[0], WIDTH - MARGIN[1]
    top, bottom = MARGIN[2], HEIGHT - MARGIN[3]
    values = [(at, value) for at, value in points if value is not None]
    y_max = axis_top(max((value for _, value in values), default=0.0))
    span = max((end - start).total_seconds(), 1.0)

    def x_of(at: datetime) -> float:
        share = (at - start).total_seconds() / span
        return left + (right - left) * min(max(share, 0.0), 1.0)

    def y_of(value: float) -> float:
        return bottom - (bottom - top) * value / y_max

    time_format = "%d %b %H:%M" if hourly else "%d %b"
    dots = [
        Dot(x_of(at), y_of(value), f"{at:{time_format}}: {value:,.1f} {unit}")
        for at, value in values
    ]
    y_ticks = [
        Tick(y_of(y_max * i / Y_TICKS), f"{y_max * i / Y_TICKS:,.4g}")
        for i in range(Y_TICKS + 1)
    ]
    x_ticks = [
        Tick(x_of(at), f"{at:{time_format}}")
        for at in (start, start + (end - start) / 2, end)
    ]
    return LineChart(title, unit, dots, y_ticks, x_ticks)


def axis_top(value: float) -> float:
    """1, 2 or 5 times a power of ten, at least `value` (1 for nothing to plot)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** len(str(int(value)))  # a power of ten above the value
    power /= 10
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power
