"""The SVG line chart's geometry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chat.ops.charts import HEIGHT, MARGIN, WIDTH, axis_top, line_chart

START = datetime(2026, 1, 1, tzinfo=UTC)
END = START + timedelta(hours=10)
LEFT, RIGHT = MARGIN[0], WIDTH - MARGIN[1]
TOP, BOTTOM = MARGIN[2], HEIGHT - MARGIN[3]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 1),
        (0.3, 1),
        (1, 1),
        (1.5, 2),
        (38.5, 50),
        (100, 100),
        (101, 200),
        (7e3, 1e4),
    ],
)
def test_axis_top_is_a_round_number_at_or_above_the_largest(value, expected):
    assert axis_top(value) == expected


def test_points_are_placed_by_time_and_value():
    points = [
        (START, 0.0),
        (START + timedelta(hours=5), 25.0),
        (START + timedelta(hours=7), None),  # no figure that hour: left out
        (END, 50.0),
    ]
    chart = line_chart("Rate", "tok/s", points, start=START, end=END, hourly=True)
    assert [(d.x, d.y) for d in chart.dots] == [
        (LEFT, BOTTOM),
        (pytest.approx((LEFT + RIGHT) / 2), pytest.approx((TOP + BOTTOM) / 2)),
        (RIGHT, TOP),
    ]
    assert chart.polyline.count(",") == 3
    assert chart.dots[1].label == "01 Jan 05:00: 25.0 tok/s"
    assert [t.label for t in chart.y_ticks] == ["0", "12.5", "25", "37.5", "50"]
    assert [t.label for t in chart.x_ticks] == [
        "01 Jan 00:00",
        "01 Jan 05:00",
        "01 Jan 10:00",
    ]


def test_daily_labels_and_an_empty_chart():
    chart = line_chart("Rate", "ms", [], start=START, end=END, hourly=False)
    assert chart.dots == [] and chart.polyline == ""
    assert chart.x_ticks[0].label == "01 Jan"
    assert chart.y_ticks[-1].label == "1"
