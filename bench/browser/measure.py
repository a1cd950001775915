"""The browser bench's measurements: one scenario in its pages into one row."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from bench.browser.answers import chinese_answer, plain_answer, rich_answer
from bench.browser.cpu import CpuMeter, lower_priority
from bench.browser.page import (
    MEASURE_MAIN_THREAD,
    MEASURE_TOKENS,
    open_page,
    send,
    wait_done,
)
from bench.browser.scenarios import (
    LONG_HISTORY,
    LONG_TOKENS,
    LONG_TPS,
    TTFT_MODEL_MS,
    Scenario,
)
from bench.browser.site import Site
from bench.common import (
    percentile,
)


def entry_for(log: list[dict[str, Any]], text: str) -> dict[str, Any]:
    return next(
        e
        for e in log
        if not e["load_only"] and e["body"]["messages"][-1]["content"] == text
    )


def token_latencies(
    stamps: list[list[float]], entry: dict[str, Any], stride: int = 1
) -> list[float]:
    """Per marker token (marker i is token i * stride): stamped in the page
    minus sent by the simulator, in ms."""
    sent = entry["times"]
    return [
        (at - sent[int(i) * stride] * 1000)
        for i, at in stamps
        if i * stride < len(sent)
    ]


async def measure_streams(
    browser: Any,
    site: Site,
    scenario: Scenario,
    browser_nice: int = 0,
    floor: bool = False,
) -> dict:
    site.configure(
        tps=scenario.tps,
        answer_text=chinese_answer(scenario.tokens)
        if scenario.chinese
        else plain_answer(scenario.tokens, scenario.per_paragraph),
        ttft_ms=0,
    )
    conversations: list[int | None] = (
        [None] * scenario.tabs if floor else list(site.new_conversations(scenario.tabs))
    )
    pages = [await open_page(browser, site, pk, MEASURE_TOKENS) for pk in conversations]
    visibility = [await p.evaluate("document.visibilityState") for p in pages]
    texts = [f"go {scenario.name} tab {i}" for i in range(len(pages))]
    for page, text in zip(pages, texts, strict=True):
        await page.fill("#composer-input", text)
    cpu = CpuMeter(site, floor)
    if browser_nice:
        lower_priority(cpu.groups["browser"], browser_nice)
    await asyncio.gather(*(p.press("#composer-input", "Enter") for p in pages))
    await asyncio.gather(*(wait_done(p) for p in pages))
    used = cpu.used()
    log = site.sim_log()
    latencies: list[float] = []
    arrivals: list[float] = []
    in_page: list[float] = []  # a token's message event -> its word in the DOM
    seen = 0
    for page, text in zip(pages, texts, strict=True):
        bench = await page.evaluate("window.__bench")
        entry = entry_for(log, text)
        latencies += token_latencies(bench["visible"], entry, scenario.stride)
        arrivals += token_latencies(bench["arrived"], entry, scenario.stride)
        arrived = dict(bench["arrived"])
        in_page += [at - arrived[i] for i, at in bench["visible"] if i in arrived]
        seen += len(bench["visible"])
        await page.context.close()
    name = f"{scenario.name} [floor]" if floor else scenario.name
    row: dict[str, Any] = {"scenario": name, "tokens": seen}
    for q, label in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"), (1.0, "max")):
        row[f"{label}_ms"] = percentile(latencies, q)
    # The part of it before the page: the server and the network.
    row["socket_p50_ms"] = percentile(arrivals, 0.5)
    row["socket_p99_ms"] = percentile(arrivals, 0.99)
    # The page's own part.
    row["page_p50_ms"] = percentile(in_page, 0.5)
    row["page_p99_ms"] = percentile(in_page, 0.99)
    tokens = max(seen * scenario.stride, 1)
    row.update({k: v / tokens * 1000 for k, v in used.items()})
    row["complete"] = seen == scenario.tabs * scenario.tokens // scenario.stride
    row["all_visible"] = all(v == "visible" for v in visibility)
    return row


async def measure_ttft(
    browser: Any,
    site: Site,
    samples: int,
    floor: bool = False,
    name: str = "Enter -> first token",
) -> dict:
    """Enter -> first token in the DOM, minus the model's own time to first token
    (the simulator's request arrival -> first token written)."""
    site.configure(tps=200, answer_text=plain_answer(5), ttft_ms=TTFT_MODEL_MS)
    conversation = None if floor else site.new_conversations(1)[0]
    page = await open_page(browser, site, conversation, MEASURE_TOKENS)
    added: list[float] = []
    to_model: list[float] = []  # Enter -> the model server has the request
    to_dom: list[float] = []  # the model wrote its first token -> in the DOM
    for n in range(samples):
        await page.evaluate("window.__benchReset()")
        await send(page, f"ttft {n}")
        await wait_done(page, n + 1)
        bench = await page.evaluate("window.__bench")
        entry = entry_for(site.sim_log(), f"ttft {n}")
        model_ms = (entry["times"][0] - entry["started"]) * 1000
        first_ms = bench["visible"][0][1] - bench["enterAt"]
        added.append(first_ms - model_ms)
        to_model.append(entry["started"] * 1000 - bench["enterAt"])
        to_dom.append(bench["visible"][0][1] - entry["times"][0] * 1000)
    await page.context.close()
    return {
        "scenario": f"{name} [floor]" if floor else name,
        "tokens": samples,
        "ttft_added_p50_ms": statistics.median(added),
        "ttft_added_max_ms": max(added),
        "enter_to_model_request_p50_ms": percentile(to_model, 0.5),
        "enter_to_model_request_p95_ms": percentile(to_model, 0.95),
        "first_token_to_dom_p50_ms": statistics.median(to_dom),
        "complete": len(added) == samples,
    }


async def measure_long_answer(browser: Any, site: Site) -> dict:
    text = rich_answer(LONG_TOKENS)
    site.configure(tps=LONG_TPS, answer_text=text, ttft_ms=0)
    (conversation,) = site.new_conversations(1, history=LONG_HISTORY)
    page = await open_page(browser, site, conversation, MEASURE_MAIN_THREAD)
    await page.wait_for_timeout(1000)  # the page settles after loading
    await page.evaluate("window.__main.recording = true")
    # The page shows the newest page of the history (CONVERSATION_PAGE_SIZE), not
    # all of it: the answer is done when one more answer than it loaded with is.
    shown = await page.locator("article.assistant").count()
    started = time.monotonic()
    await send(page, "a long one")
    await page.wait_for_function(
        "n => { const all = document.querySelectorAll('article.assistant');"
        " return all.length > n"
        " && all[all.length - 1].dataset.status !== 'streaming'; }",
        arg=shown,
        timeout=300_000,
    )
    streamed_s = time.monotonic() - started
    await page.wait_for_timeout(500)  # the last frames and idle highlighting
    main = await page.evaluate("window.__main")
    tasks = main["longtasks"]
    during = [duration for _, duration, recording in tasks if recording]
    at_load = [duration for _, duration, recording in tasks if not recording]
    tokens = len(entry_for(site.sim_log(), "a long one")["times"])
    await page.context.close()
    return {
        "scenario": "20k-token answer, 200 messages",
        "tokens": tokens,
        "longest_task_ms": max(during, default=0.0),
        "long_tasks": len(during),
        "load_longest_task_ms": max(at_load, default=0.0),
        "frame_p99_ms": percentile(main["frames"], 0.99),
        "frame_max_ms": max(main["frames"], default=0.0),
        "handler_max_ms": max(main["handlers"], default=0.0),
        "frame_gap_max_ms": max(main["gaps"], default=0.0),
        "seconds": streamed_s,
        "slow_frames": main["loaf"][:5],
        "complete": tokens >= LONG_TOKENS,
    }
