"""The load bench's run: the team talks, every socket closes at once, each
conversation is asked once more; what was stored against what was emitted."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from typing import Any

from bench.load.clients import Socket, converse, open_after, probe_busy
from bench.load.site import Site, answer_text, process_figures

NORMAL_CLOSE = 1000
# After the close: how long the answers still running (and waiting) may take.
DRAIN_SECONDS = 120.0
# A stored queue wait at least this long means the answer waited in line.
WAITED_MS = 500.0


# The last line of a traceback in Daphne's log: the exception and its message.
EXCEPTION_LINE = re.compile(r"^((?:[\w.]+\.)?\w*(?:Error|Exception)\b.{0,80})", re.M)


async def drained(site: Site, within: float) -> int:
    """Wait until no answer is streaming; how many still are at the deadline."""
    deadline = time.monotonic() + within
    while True:
        streaming = sum(1 for m in site.stored() if m["status"] == "streaming")
        if not streaming or time.monotonic() > deadline:
            return streaming
        await asyncio.sleep(1)


async def run(
    site: Site, seconds: float, tokens: int, open_over: float, users: int
) -> dict[str, Any]:
    team = site.setup_team(users)
    sockets = [
        (Socket(user=n, conversation=c), cookie)
        for n, (cookie, conversations) in team.items()
        for c in conversations
    ]
    before = process_figures(site.daphne.pid)
    began = time.monotonic()
    # Opened over `open_over` seconds, like a team's tabs (not one SYN burst).
    step = open_over / max(len(sockets), 1)
    await asyncio.gather(
        *(
            open_after(site, s, cookie, i * step)
            for i, (s, cookie) in enumerate(sockets)
        )
    )
    closing = asyncio.Event()
    talks = [asyncio.create_task(converse(s, closing)) for s, _ in sockets if s.opened]
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - began)))
    closing.set()
    open_now = [s.ws for s, _ in sockets if s.opened]
    await asyncio.gather(*(ws.close() for ws in open_now), return_exceptions=True)
    await asyncio.gather(*talks)
    left_streaming = await drained(site, DRAIN_SECONDS)
    probes = await asyncio.gather(
        *(probe_busy(site, cookie, s.conversation) for s, cookie in sockets)
    )
    await drained(site, 30)  # the probes' answers were stopped
    after = process_figures(site.daphne.pid)
    return summarize(
        site,
        [s for s, _ in sockets],
        probes,
        left_streaming,
        before,
        after,
        answer_text(tokens),
    )


def summarize(
    site: Site,
    sockets: list[Socket],
    probes: list[str],
    left_streaming: int,
    before: dict[str, float],
    after: dict[str, float],
    emitted: str,
) -> dict[str, Any]:
    stored = {m["id"]: m for m in site.stored()}
    answers = [a for s in sockets for a in s.answers.values()]
    bad_closes = Counter(
        s.close_code for s in sockets if s.opened and s.close_code != NORMAL_CLOSE
    )
    started = [stored[a.message_id] for a in answers if a.message_id in stored]
    # Stored as emitted: finished, with the simulator's whole text.
    not_as_emitted = [
        m for m in started if m["status"] != "done" or m["content"] != emitted
    ]
    # What a socket that read an answer to its end got: the stored text.
    seen_to_end = [a for a in answers if a.final is not None]
    received_differs = [
        a
        for a in seen_to_end
        if a.message_id not in stored
        or a.received != stored[a.message_id]["content"]
        or a.final != stored[a.message_id]["content"]
    ]
    waited = [
        a
        for a in answers
        if (stored.get(a.message_id, {}).get("queue_wait_ms") or 0) >= WAITED_MS
    ]
    log = site.log.read_text(errors="replace")
    return {
        "sockets": len(sockets),
        "opened": sum(s.opened for s in sockets),
        "refused": dict(Counter(s.refused for s in sockets if s.refused)),
        "closed_with_error": sum(bad_closes.values()),
        "error_codes": {str(k): v for k, v in bad_closes.items()},
        "closed_by_server_early": sum(s.closed_early for s in sockets if s.opened),
        "error_frames": dict(sum((s.errors for s in sockets), Counter())),
        "answers_started": len(answers),
        "answers_stored": len(started),
        "stored_not_as_emitted": len(not_as_emitted),
        "stored_statuses": dict(Counter(m["status"] for m in started)),
        "read_to_end": len(seen_to_end),
        "received_differs_from_stored": len(received_differs),
        "left_streaming_after_close": left_streaming,
        "busy_afterwards": sum(p == "busy" for p in probes),
        "probe_replies": dict(Counter(probes)),
        "waited_in_line": len(waited),
        "waited_and_shown_queued": sum(a.queued for a in waited),
        "queued_frames_answers": sum(a.queued for a in answers),
        # Those whose socket stayed open until the answer's end: an answer asked
        # just before every socket closed may have lost its socket before its
        # place in line was decided.
        "waited_read_to_end": sum(a.final is not None for a in waited),
        "waited_read_to_end_queued": sum(
            a.queued for a in waited if a.final is not None
        ),
        "server_tracebacks": len(re.findall(r"^Traceback", log, re.MULTILINE)),
        "server_errors": dict(Counter(EXCEPTION_LINE.findall(log)).most_common(5)),
        "rss_mib_before": before["rss_mib"],
        "rss_mib_after": after["rss_mib"],
        "fds_before": before["fds"],
        "fds_after": after["fds"],
    }
