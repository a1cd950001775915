"""What `bench.load` found, as a dict (bench/results/load.json) and a table:
sockets opened and closed, answers stored as emitted and received as stored,
waits in line, the server's tracebacks, memory and open files."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.load import Site, Socket

NORMAL_CLOSE = 1000
# A stored queue wait at least this long means the answer waited in line.
WAITED_MS = 500.0
# The last line of a traceback in Daphne's log: the exception and its message.
EXCEPTION_LINE = re.compile(r"^((?:[\w.]+\.)?\w*(?:Error|Exception)\b.{0,80})", re.M)


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


ROWS = [
    ("sockets opened", "{opened} of {sockets}", "refused: {refused}"),
    (
        "closed with an error code",
        "{closed_with_error}",
        "codes: {error_codes}; closed by the server before the end: "
        "{closed_by_server_early}",
    ),
    ("error frames", "{error_frames}", ""),
    ("answers started / stored", "{answers_started} / {answers_stored}", ""),
    (
        "stored not as emitted",
        "{stored_not_as_emitted}",
        "statuses: {stored_statuses}",
    ),
    (
        "received differs from stored",
        "{received_differs_from_stored}",
        "of {read_to_end} answers read to their end",
    ),
    ("left streaming after close", "{left_streaming_after_close}", ""),
    ("busy afterwards", "{busy_afterwards}", "a new question's reply: {probe_replies}"),
    (
        "waited in line / shown queued",
        "{waited_in_line} / {waited_and_shown_queued}",
        f"stored queue wait >= {WAITED_MS:g} ms; answers with a queued frame: "
        "{queued_frames_answers}",
    ),
    (
        "  of them read to the end / queued",
        "{waited_read_to_end} / {waited_read_to_end_queued}",
        "the socket open until the answer ended",
    ),
    ("server tracebacks", "{server_tracebacks}", "in Daphne's log"),
    ("Daphne RSS MiB", "{rss_mib_before:.1f} -> {rss_mib_after:.1f}", ""),
    ("Daphne open fds", "{fds_before} -> {fds_after}", ""),
]


def print_table(result: dict[str, Any]) -> None:
    width = max(len(label) for label, _, _ in ROWS)
    for label, value, note in ROWS:
        cells = [label.ljust(width), value.format(**result).rjust(14)]
        if note:
            cells.append(note.format(**result))
        print("  ".join(cells))
