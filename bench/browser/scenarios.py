"""What the browser bench measures: its scenarios and their sizes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Scenario:
    name: str
    tabs: int
    tps: float
    tokens: int
    per_paragraph: int = 40  # words; as many as `tokens`: one long paragraph
    chinese: bool = False  # one paragraph of Chinese characters (`chinese_answer`)
    # Also measured on the bare relay (bench/floor.py). Not at 1,000 tok/s: the
    # floor's page keeps the whole answer in one text node, whose layout every
    # frame then outgrows the frame at that rate, so it is no floor there.
    floor: bool = True

    @property
    def stride(self) -> int:
        """Tokens per marker word `w<i>`."""
        return 2 if self.chinese else 1


SCENARIOS = [
    Scenario("1 tab @ 80 tok/s", tabs=1, tps=80, tokens=400),
    # Chinese answers often come as one long paragraph: a token's cost must not
    # grow with the paragraph it lands in. 600 measured words each (1,200
    # characters of Chinese): their p99 is compared with the floor's, and with
    # 200 (the 2nd-worst word) one late frame of either side's browser decided
    # the ratio.
    Scenario("1 tab @ 80 tok/s, one paragraph", 1, 80, 600, per_paragraph=600),
    Scenario("1 tab @ 80 tok/s, one Chinese paragraph", 1, 80, 1200, chinese=True),
    Scenario("1 tab @ 400 tok/s", tabs=1, tps=400, tokens=2000),
    Scenario("1 tab @ 1000 tok/s", tabs=1, tps=1000, tokens=3000, floor=False),
    Scenario("10 tabs @ 80 tok/s", tabs=10, tps=80, tokens=400),
]
# Enough questions for the p95 of Enter -> model request to be one: of 15, the
# interpolated p95 lies 30% of the way from the 2nd-worst sample to the worst,
# so one stall in 15 questions (7%, past the 95th percentile) failed it alone.
# Of 40, it is two samples from the top.
TTFT_SAMPLES = 40
COLD_START = "cold start: Enter -> first token"
TTFT_MODEL_MS = 100.0
LONG_TOKENS = 20_000
LONG_TPS = 1000.0
LONG_HISTORY = 200
