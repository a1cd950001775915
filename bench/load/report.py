"""The load bench's table."""

from __future__ import annotations

from typing import Any

from bench.load.run import WAITED_MS

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
