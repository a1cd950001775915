"""Browser latency: from the model server writing a token to that token in the DOM.

Headless Chromium (Playwright) opens real conversation pages of a Daphne serving
chatsite, with the bundled simulator as the model server. The simulator stamps
each token's send time (``record_times``, wall clock, right after the write); a
MutationObserver installed by this benchmark (``page.add_init_script``, not part
of the product) stamps when each token's word first appears in the page's DOM.
Answers are made of distinct words ``w0 w1 …`` in paragraphs, one simulator
token each, so token *i* is the word ``w{i}``. Both stamps are wall-clock
(the page's ``performance.timeOrigin + now()``, calibrated against
``Date.now()``), on the same machine.

Scenarios: one tab at 80, 400 and 1,000 tok/s; 10 tabs streaming 80 tok/s each at
once, each in its own browser context (its own window: background tabs of one
window get no animation frames); Enter pressed -> first token visible, minus the
model's own time to first token, also for the first question a fresh server
process is asked (cold start); and the main thread's longest task while a
20,000-token markdown answer streams into a conversation of 200 messages.

Every stream scenario up to 400 tok/s, and Enter -> first token, is measured
again in the same run on the floor: a bare WebSocket relay to the same simulator
(``bench/floor.py``), and each row prints its p99 as a multiple of the floor's.

With 10 tabs on a 2-core machine the browser itself needs ~1.9 ms of CPU per
token (renderers ~1.35, the software-compositing GPU process ~0.27, the rest
the main and utility processes; the page's own JavaScript ~0.4 of it): about
1.5 cores at 800 tok/s. The latency then grows before the page sees the frame
(``sock99`` ≈ ``p99``), so the figure follows the machine's load more than the
page; the table prints the load average with it. ``--only``,
``--chromium-arg`` and ``--browser-nice`` compare one scenario under changes.

Run alone: ``python -m bench.browser [--quick]``; from code: ``run()`` or
``await run_browser_bench()``, which return one dict per scenario.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    SHELL_SIGN_IN,
    deployed,
    free_port,
    manage,
    percentile,
    spawn,
    wait_until_up,
)

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Every tab is a window of its own and in view; never throttle its frames.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]
MODEL = "llama-demo:3b"  # the simulator's model without thinking


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

# The budgets of docs/latency.md, in ms.
BUDGETS: dict[str, dict[str, float]] = {
    "1 tab @ 80 tok/s": {"p99_ms": 10},
    "1 tab @ 80 tok/s, one paragraph": {"p99_ms": 10},
    "1 tab @ 80 tok/s, one Chinese paragraph": {"p99_ms": 10},
    "1 tab @ 400 tok/s": {"p99_ms": 30},
    "10 tabs @ 80 tok/s": {"p99_ms": 300},
    # Rule 8's goal: Enter -> the model server has the request, and the first
    # token in the DOM minus the model's own delay.
    "Enter -> first token": {
        "ttft_added_p50_ms": 10,
        "enter_to_model_request_p50_ms": 5,
        "enter_to_model_request_p95_ms": 15,
    },
    "20k-token answer, 200 messages": {"longest_task_ms": 50},
}


# A token's cost must not grow with the paragraph it lands in: on one long
# paragraph the page stays within this many times the bare relay's p99
# (``bench/floor.py``) measured in the same run.
FLOOR_RATIO_BUDGETS: dict[str, float] = {
    "1 tab @ 80 tok/s, one paragraph": 1.5,
    "1 tab @ 80 tok/s, one Chinese paragraph": 1.5,
}


# ---------------------------------------------------------------- the page side

# Installed in every page before its scripts run. Records when each token's word
# w<i> first appears in an answer, when Enter was pressed, and the clock offset.
MEASURE_TOKENS = r"""
(() => {
  const bench = (window.__bench = { visible: [], enterAt: null, offset: 0 });
  let max = -1;
  window.__benchReset = () => {
    bench.visible = [];
    bench.arrived = [];
    bench.enterAt = null;
    max = arrivedMax = -1;
  };
  const wall = () => performance.timeOrigin + performance.now();
  const samples = [];
  for (let k = 0; k < 15; k++) {
    const tick = Date.now();
    while (Date.now() === tick);
    samples.push(Date.now() - wall());
  }
  samples.sort((a, b) => a - b);
  bench.offset = samples[7];
  const word = /\bw(\d+)\b/g;
  const scan = (text, at) => {
    let high = max;
    word.lastIndex = 0;
    for (let m; (m = word.exec(text)); ) high = Math.max(high, Number(m[1]));
    for (let i = max + 1; i <= high; i++) bench.visible.push([i, at]);
    max = high;
  };
  const inAnswer = (node) => {
    const element = node.nodeType === 1 ? node : node.parentElement;
    return element && element.closest("article.assistant .answer");
  };
  const observer = new MutationObserver((records) => {
    const at = wall() + bench.offset;
    for (const record of records) {
      if (!inAnswer(record.target)) continue;
      if (record.type === "characterData") scan(record.target.data, at);
      else for (const node of record.addedNodes) scan(node.textContent, at);
    }
  });
  document.addEventListener("DOMContentLoaded", () => {
    observer.observe(document.getElementById("messages"), {
      subtree: true, childList: true, characterData: true,
    });
  });
  // When each token reached the page (before any of the page's own handling).
  bench.arrived = [];
  let arrivedMax = -1;
  const add = WebSocket.prototype.addEventListener;
  WebSocket.prototype.addEventListener = function (type, listener, options) {
    if (type === "message") {
      add.call(this, type, (event) => {
        const at = wall() + bench.offset;
        const frame = JSON.parse(event.data);
        if (frame.type !== "content") return;
        word.lastIndex = 0;
        let high = arrivedMax;
        for (let m; (m = word.exec(frame.delta)); ) high = Math.max(high, Number(m[1]));
        for (let i = arrivedMax + 1; i <= high; i++) bench.arrived.push([i, at]);
        arrivedMax = high;
      });
    }
    return add.call(this, type, listener, options);
  };
  window.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || bench.enterAt !== null) return;
    bench.enterAt = wall() + bench.offset;
  }, true);
})();
"""

# Main-thread cost while an answer streams: long tasks (> 50 ms), and the time
# spent in each animation-frame callback and each WebSocket message handler.
MEASURE_MAIN_THREAD = r"""
(() => {
  const main = (window.__main = {
    longtasks: [], frames: [], handlers: [], gaps: [], recording: false,
  });
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      main.longtasks.push([entry.startTime, entry.duration, main.recording]);
    }
  }).observe({ type: "longtask", buffered: true });
  // What ran in frames over 50 ms (Long Animation Frames, Chromium 123+).
  main.loaf = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (!main.recording) continue;
      main.loaf.push({
        duration: entry.duration,
        blocking: entry.blockingDuration,
        render: entry.renderStart
          ? entry.startTime + entry.duration - entry.renderStart : 0,
        scripts: entry.scripts.map((s) => [s.invoker, s.duration]),
      });
    }
  }).observe({ type: "long-animation-frame", buffered: false });
  const raf = window.requestAnimationFrame.bind(window);
  let last = null;
  window.requestAnimationFrame = (callback) => raf((time) => {
    const start = performance.now();
    callback(time);
    if (!main.recording) return;
    main.frames.push(performance.now() - start);
    if (last !== null) main.gaps.push(time - last);
    last = time;
  });
  const add = WebSocket.prototype.addEventListener;
  WebSocket.prototype.addEventListener = function (type, listener, options) {
    if (type !== "message") return add.call(this, type, listener, options);
    return add.call(this, type, (event) => {
      const start = performance.now();
      listener(event);
      if (main.recording) main.handlers.push(performance.now() - start);
    }, options);
  };
})();
"""


# ---------------------------------------------------------------- texts


def plain_answer(tokens: int, per_paragraph: int = 40) -> str:
    """``w0 w1 …`` in paragraphs: token i is the word ``w{i}``."""
    return "".join(
        ("\n\n" if i and i % per_paragraph == 0 else " " if i else "") + f"w{i}"
        for i in range(tokens)
    )


CHINESE = "流式输出的每个字都应该立刻显示在页面上不要等待也不要合并"


def chinese_answer(tokens: int) -> str:
    """One paragraph without spaces, as Chinese is written: ``w0流w1式…``, a
    character between markers, each its own token (the simulator splits CJK
    text a character at a time): marker i is token 2i."""
    return "".join(f"w{i}{CHINESE[i % len(CHINESE)]}" for i in range(tokens // 2))


_WORDS = [
    "the", "stream", "socket", "token", "model", "answer", "frame", "browser",
    "server", "latency", "buffer", "render", "block", "markdown", "code", "table",
    "list", "value", "thread", "queue", "event", "loop", "write", "read",
    "request", "response", "client", "worker", "budget", "measure", "simple",
    "fast", "small", "large",
]  # fmt: skip


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    if rng.random() < 0.3:
        words[rng.randrange(n)] = f"**{rng.choice(_WORDS)}**"
    if rng.random() < 0.3:
        words[rng.randrange(n)] = f"`{rng.choice(_WORDS)}()`"
    return " ".join(words).capitalize() + "."


def _section(rng: random.Random, index: int) -> str:
    parts = [f"## Part {index}: {rng.choice(_WORDS)} and {rng.choice(_WORDS)}"]
    parts.append(" ".join(_sentence(rng, rng.randint(8, 16)) for _ in range(3)))
    parts.append("\n".join(f"- {_sentence(rng, rng.randint(4, 9))}" for _ in range(4)))
    if index % 2:
        lines = [f"def {rng.choice(_WORDS)}_{index}(value):"]
        lines += [
            f"    {rng.choice(_WORDS)} = value + {k}  # {rng.choice(_WORDS)}"
            for k in range(rng.randint(6, 14))
        ]
        lines.append("    return value")
        parts.append("```python\n" + "\n".join(lines) + "\n```")
    if index % 3 == 0:
        rows = [
            f"| {rng.choice(_WORDS)} | {rng.randint(1, 999)} | {rng.choice(_WORDS)} |"
            for _ in range(4)
        ]
        parts.append("| name | value | note |\n|---|---|---|\n" + "\n".join(rows))
    if index % 4 == 0:
        parts.append(
            f"The cost is $O(n \\log n)$ and $\\sum_{{i=1}}^{{{index}}} i$ in all."
        )
    parts.append("\n".join(f"{k}. {_sentence(rng, 6)}" for k in range(1, 4)))
    return "\n\n".join(parts)


def rich_answer(tokens: int, seed: int = 1) -> str:
    """A long markdown answer (headings, lists, code, tables, math) of about
    ``tokens`` simulator tokens (one per whitespace-separated word)."""
    rng = random.Random(seed)
    sections: list[str] = []
    count = 0
    while count < tokens:
        sections.append(_section(rng, len(sections) + 1))
        count += len(sections[-1].split())
    return "\n\n".join(sections)


def history_messages(conversation_id: int, count: int) -> list[Any]:
    """``count`` finished messages (questions and markdown answers)."""
    from chat.models import Message

    out = []
    for i in range(count):
        if i % 2 == 0:
            out.append(
                Message(
                    conversation_id=conversation_id,
                    role="user",
                    content=f"Question {i // 2}: how does the {_WORDS[i % 30]} work?",
                )
            )
        else:
            out.append(
                Message(
                    conversation_id=conversation_id,
                    role="assistant",
                    status="done",
                    model_tag=MODEL,
                    content=rich_answer(350, seed=i),
                )
            )
    return out


# ---------------------------------------------------------------- the site


class Site:
    """A simulator, one Daphne process on a throwaway SQLite database, and the
    floor: a bare relay to the same simulator (``bench/floor.py``)."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="chatsite-browser-bench-")
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.tmp.name}/bench.sqlite3",
            # Its pages' files are collected first (`start`), as on a host.
            **deployed(),
            "DJANGO_SETTINGS_MODULE": "chatsite.settings",
        }
        self.env.pop("REDIS_URL", None)
        self.sim_port, self.web_port = free_port(), free_port()
        self.floor_port = free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.session_key = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def floor_url(self) -> str:
        return f"http://127.0.0.1:{self.floor_port}"

    @property
    def sim_url(self) -> str:
        return f"http://127.0.0.1:{self.sim_port}"

    def start(self) -> None:
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("collectstatic", "--noinput", "-v", "0")
        self.processes += [
            spawn(self.env, "manage.py", "simulate_ollama", "--port",
                  str(self.sim_port), "--record-times", "--think-tokens", "0",
                  "--ttft-ms", "0"),
            spawn(self.env, "-m", "chatsite.serve", "-b", "127.0.0.1", "-p",
                  str(self.web_port)),
            spawn(self.env, "-m", "bench.floor", "--port", str(self.floor_port),
                  "--upstream", self.sim_url, "--model", MODEL),
        ]  # fmt: skip
        wait_until_up(f"{self.sim_url}/api/version")
        wait_until_up(f"{self.url}/login/")
        wait_until_up(self.floor_url)
        self.session_key = self.shell(
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "from chat.models import ModelProfile, SiteDefaults;"
            "u = User.objects.create_user('bench', password='x');"
            # One user streams every answer: no per-user limit.
            "SiteDefaults(generations_per_user=0).save();"
            f"ModelProfile.objects.create(tag={MODEL!r}, base_url={self.sim_url!r});"
            "print(signed_in(u))"
        )

    def pids(self) -> set[int]:
        return {p.pid for p in self.processes}

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(10)
        self.tmp.cleanup()

    def manage(self, *args: str) -> str:
        return manage(self.env, *args).strip()

    def shell(self, script: str) -> str:
        return self.manage("shell", "-v", "0", "-c", script)

    def new_conversations(self, count: int, history: int = 0) -> list[int]:
        script = (
            "from django.contrib.auth.models import User;"
            "from chat.models import Conversation, Message, ModelProfile;"
            "from bench.browser import history_messages;"
            "u = User.objects.get(username='bench'); p = ModelProfile.objects.get();"
            f"new = [Conversation.objects.create(owner=u, model_profile=p, "
            f"title=f'bench {{i}}') for i in range({count})];"
            f"[Message.objects.bulk_create(history_messages(c.pk, {history})) "
            "for c in new];"
            "print(' '.join(str(c.pk) for c in new))"
        )
        return [int(pk) for pk in self.shell(script).split()]

    def configure(self, **changes: Any) -> None:
        httpx.post(f"{self.sim_url}/_sim/reset").raise_for_status()
        httpx.post(f"{self.sim_url}/_sim/config", json=changes).raise_for_status()

    def sim_log(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.sim_url}/_sim/log").json()["requests"])


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes (Linux /proc)."""
    total = 0
    for pid in pids:
        try:
            fields = _stat(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> list[int]:
    """This process's children, grandchildren, ... (the browser's processes)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents.setdefault(int(_stat(int(entry.name))[1]), []).append(
                    int(entry.name)
                )
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    out, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def chromium_kind(pid: int) -> str:
    """A Chromium process's ``--type`` (renderer, gpu-process, ...); "main" for the
    browser process. Chromium rewrites its command line, so split on spaces."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return "gone"
    kind = next((w[7:] for w in words if w.startswith(b"--type=")), b"main")
    return kind.decode()


def lower_priority(pids: list[int], nice: int) -> None:
    """Renice every thread of these processes (Linux niceness is per thread), so
    that the server's processes win the CPU when the browser would starve them."""
    for pid in pids:
        try:
            threads = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
        for tid in threads:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            except OSError:
                continue  # the thread ended meanwhile


class CpuMeter:
    """CPU seconds used by Daphne, the simulator and the browser over a span (the
    browser's also by process kind: renderers, the GPU process that composites
    in software here, the main process)."""

    def __init__(self, site: Site, floor: bool = False) -> None:
        browser = [pid for pid in descendants(os.getpid()) if pid not in site.pids()]
        self.groups = {
            # The server's column: Daphne, or the bare relay in the floor's rows.
            "daphne": [site.processes[2 if floor else 1].pid],
            "simulator": [site.processes[0].pid],
            "browser": browser,
            "renderers": [p for p in browser if chromium_kind(p) == "renderer"],
            "gpu": [p for p in browser if chromium_kind(p) == "gpu-process"],
        }
        self.before = {k: cpu_seconds(v) for k, v in self.groups.items()}

    def used(self) -> dict[str, float]:
        return {
            f"cpu_{k}_s": cpu_seconds(v) - self.before[k]
            for k, v in self.groups.items()
        }


# ---------------------------------------------------------------- browser side


async def open_page(
    browser: Any, site: Site, conversation_id: int | None, *scripts: str
):
    """A conversation's page, or the floor's page for ``None``."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    await context.add_cookies(
        [{"name": "sessionid", "value": site.session_key, "url": site.url}]
    )
    page = await context.new_page()
    for script in scripts:
        await page.add_init_script(script)
    if conversation_id is None:
        await page.goto(site.floor_url)
    else:
        await page.goto(f"{site.url}/c/{conversation_id}/")
    await page.wait_for_selector('#chat[data-connected="1"]')
    return page


async def send(page: Any, text: str) -> None:
    await page.fill("#composer-input", text)
    await page.press("#composer-input", "Enter")


async def wait_done(page: Any, count: int = 1) -> None:
    await page.wait_for_function(
        "n => document.querySelectorAll("
        "'article.assistant:not([data-status=\"streaming\"])').length >= n",
        arg=count,
        timeout=300_000,
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


async def run_browser_bench(
    scenarios: list[Scenario] | None = None,
    *,
    ttft_samples: int = TTFT_SAMPLES,
    long_answer: bool = True,
    chromium_args: list[str] | None = None,
    browser_nice: int = 0,
) -> list[dict[str, Any]]:
    """Start a site and Chromium, run the scenarios, return one row each."""
    from playwright.async_api import async_playwright

    site = Site()
    site.start()
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=CHROMIUM_ARGS if chromium_args is None else chromium_args,
                headless=True,
            )
            try:
                rows = []
                if ttft_samples:
                    # The first question a fresh server process is asked: it
                    # pays for what is loaded or connected on first use.
                    for floor in (False, True):
                        rows.append(
                            await measure_ttft(browser, site, 1, floor, COLD_START)
                        )
                # Warm-up: the first answer of a process pays for imports, and
                # the browser's first Chinese characters for finding a font
                # that has them (about 20 ms of the page's first two tokens,
                # charged to whichever side came first).
                for chinese in (False, True):
                    for floor in (False, True):
                        await measure_streams(
                            browser,
                            site,
                            Scenario("warm-up", 1, 0, 20, chinese=chinese),
                            floor=floor,
                        )
                for s in SCENARIOS if scenarios is None else scenarios:
                    for floor in (False, True) if s.floor else (False,):
                        rows.append(
                            await measure_streams(browser, site, s, browser_nice, floor)
                        )
                if ttft_samples:
                    for floor in (False, True):
                        rows.append(
                            await measure_ttft(browser, site, ttft_samples, floor)
                        )
                if long_answer:
                    rows.append(await measure_long_answer(browser, site))
                return against_floor(rows)
            finally:
                await browser.close()
    finally:
        site.stop()


def against_floor(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with a floor row beside it gets its ratio to the floor's."""
    by_name = {r["scenario"]: r for r in rows}
    for row in rows:
        floor = by_name.get(f"{row['scenario']} [floor]")
        if floor is None:
            continue
        for key in ("p99_ms", "ttft_added_p50_ms"):
            if key in row:
                row[f"x_floor_{key[:-3]}"] = row[key] / max(floor[key], 0.1)
    return rows


def run(**options: Any) -> list[dict[str, Any]]:
    return asyncio.run(run_browser_bench(**options))


# ---------------------------------------------------------------- report


def verdict(row: dict[str, Any]) -> str:
    budgets = BUDGETS.get(row["scenario"], {})
    failed = [f"{k}>{v:g}" for k, v in budgets.items() if row[k] > v]
    ratio = FLOOR_RATIO_BUDGETS.get(row["scenario"])
    if ratio is not None and row["x_floor_p99"] > ratio:
        failed.append(f"p99 > {ratio:g} x the floor's")
    if not row["complete"]:
        failed.append("tokens missing")
    if row.get("all_visible") is False:
        failed.append("a page was not visible")
    return "FAIL " + ", ".join(failed) if failed else "ok"


def fmt(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def print_table(rows: list[dict[str, Any]]) -> None:
    streams = [r for r in rows if "p50_ms" in r]
    width = max((len(r["scenario"]) for r in streams), default=8)
    print("Model server wrote the token -> token in the page's DOM (ms)")
    print(
        f"{'scenario':<{width}} {'tokens':>6} {'p50':>6} {'p95':>6} {'p99':>6}"
        f" {'max':>6} {'sock50':>6} {'sock99':>6} {'page50':>6} {'page99':>6}"
        f" {'p99/floor':>9}"
    )
    for r in streams:
        ratio = f"{r['x_floor_p99']:.2f}" if "x_floor_p99" in r else ""
        print(
            f"{r['scenario']:<{width}} {r['tokens']:>6} {r['p50_ms']:>6.1f} "
            f"{r['p95_ms']:>6.1f} {r['p99_ms']:>6.1f} {r['max_ms']:>6.1f} "
            f"{r['socket_p50_ms']:>6.1f} {r['socket_p99_ms']:>6.1f} "
            f"{r['page_p50_ms']:>6.1f} {r['page_p99_ms']:>6.1f} {ratio:>9}"
            f"  {verdict(r)}"
        )
    print("sock50/99: the same, to the socket's message event (server + network)")
    print("page50/99: the socket's message event -> the word in the DOM (the page)")
    print("[floor]: a bare relay (bench/floor.py) to the same simulator, same run")
    print(
        "CPU seconds per 1,000 tokens (server / simulator / browser, all processes"
        " [of which renderers, GPU process]); the floor's server is the bare relay:"
    )
    for r in streams:
        print(
            f"  {r['scenario']:<{width}} {r['cpu_daphne_s']:.3f} / "
            f"{r['cpu_simulator_s']:.3f} / {r['cpu_browser_s']:.3f} "
            f"[{r['cpu_renderers_s']:.3f}, {r['cpu_gpu_s']:.3f}]"
        )
    print(
        f"load average at the end: {os.getloadavg()[0]:.1f} (the machine's cores: "
        f"{os.cpu_count()})"
    )
    for r in rows:
        if r in streams:
            continue
        figures = ", ".join(
            f"{k}={fmt(v)}"
            for k, v in r.items()
            if k not in {"scenario", "complete", "tokens", "slow_frames"}
        )
        print(f"{r['scenario']}: tokens={r['tokens']}, {figures}  {verdict(r)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="single-tab streams and TTFT only"
    )
    parser.add_argument(
        "--only",
        metavar="TEXT",
        help="just the stream scenarios whose name holds TEXT (e.g. '10 tabs')",
    )
    parser.add_argument(
        "--chromium-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="an extra Chromium flag (repeatable), to compare their cost",
    )
    parser.add_argument(
        "--browser-nice",
        type=int,
        default=0,
        metavar="N",
        help="renice the browser (1-19) while streams are measured, so that the"
        " server it shares the cores with is not starved of CPU",
    )
    parser.add_argument(
        "--ttft-only", action="store_true", help="only Enter -> first token"
    )
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not (args.quick and s.tabs > 1)]
    if args.only:
        chosen = [s for s in SCENARIOS if args.only in s.name]
    if args.ttft_only:
        chosen = []
    rows = run(
        scenarios=chosen,
        long_answer=not (args.quick or args.only or args.ttft_only),
        ttft_samples=0 if args.only else TTFT_SAMPLES,
        chromium_args=CHROMIUM_ARGS + args.chromium_arg,
        browser_nice=args.browser_nice,
    )
    print_table(rows)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "browser.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
