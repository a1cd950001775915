"""Expensive input: one user's stream and small upload while four other users
send the inputs that cost a server most.

`python -m bench.expensive_input [--sqlite] [--seconds 20]` (run by `make
bench`). One Daphne process with production settings on PostgreSQL and Redis
(started like the test suite's, `bench.processes`), or on the SQLite default
with `--sqlite`, and the simulator. The user `bench` streams an answer at 80
tok/s over the conversation's WebSocket and attaches a 12-byte text file once
a second: first alone (the reference), then for `--seconds` while four other
users, each in a loop of one request at a time, send

1. a 50 MB multipart body to `/`, signed out and without a CSRF token;
2. a 50 MB multipart body to the attachment route, signed in;
3. a ~70 kB ZIP of a valid-looking chatsite export whose one answer inflates
   to ~72 MB (deflate's best ratio is about 1,000:1) to the import route;
4. a ~12 kB PDF whose 60 pages share one content stream of 10,000 text
   operators (about 0.3 CPU-seconds per page in pypdf) as an attachment.

Each attack request is given up after `REQUEST_TIMEOUT` s (the server may go
on with it, as it would for a real attacker who leaves), and the attackers run
in a process of their own, so their sending costs the stream's client nothing.

The table: the stream's latency per token (arrival minus the simulator's send
stamp) under attack against the reference, as added p50/p99/max; the 12-byte
upload's time to answer; the serving process's resident memory growth (the
peak, VmHWM after a reset through /proc/<pid>/clear_refs, and VmRSS sampled,
from the memory before the attacks); and each attack's outcomes (status codes,
or how the connection ended) and time to answer. Budgets are printed as
pass/fail, never asserted. Writes bench/results/expensive_input.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import math
import multiprocessing
import os
import secrets
import signal
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import websockets
from websockets.exceptions import ConnectionClosed

from bench.common import (
    StreamResult,
    answer_text,
    percentile,
    token_ends,
)
from bench.procfs import cpu_seconds, descendants, rss_mib
from bench.relay import gc_paused, read_answer
from bench.site import Site

TPS = 80.0
REFERENCE_SECONDS = 8.0
ATTACK_SECONDS = 20.0
UPLOAD_EVERY = 1.0  # seconds between the streaming user's small uploads
SMALL_FILE = b"hello world\n"  # 12 bytes
REQUEST_TIMEOUT = 10.0  # an attack request, given up after
# Once the stream has ended: how long the attack requests in flight may still
# take (the bench's end).
STOP_GRACE = 3.0
SMALL_UPLOAD_TIMEOUT = 20.0
# After the stream's own length: how long it may still take to arrive.
STREAM_GRACE = 30.0
LEAD = 1.0  # seconds the attacks run before the stream is asked
SAMPLE_EVERY = 0.1  # the serving process's memory, sampled
# The bench kills the serving process past this resident memory: the machine
# may be shared, and one import has taken gigabytes.
RSS_GUARD_MIB = 6144
PIECE = 256 * 1024  # bytes written at a time

BIG_BODY = 50_000_000
BOMB_UNPACKED = 72_000_000
# chat/transfer/export.py: DOCUMENT_NAME (not imported: that needs Django).
EXPORT_NAME = "chatsite-conversations.json"
IMPORT_PATH = "/account/import/"  # chat/web/transfer_urls.py
ATTACHMENTS_PATH = "/attachments/"  # chat/web/urls.py
PDF_PAGES = 60
PDF_OPERATORS = 10_000

BUDGETS = {"added_p99_ms": 100.0, "upload_max_s": 1.0, "rss_growth_mib": 300.0}


# ---------------------------------------------------------------- the inputs


@dataclass
class Body:
    content_type: str
    pieces: list[bytes]  # sent one after another (50 MB is not copied)

    @property
    def length(self) -> int:
        return sum(map(len, self.pieces))

    def chunks(self) -> Iterator[memoryview]:
        for piece in self.pieces:
            view = memoryview(piece)
            for start in range(0, len(view), PIECE):
                yield view[start : start + PIECE]


def multipart(name: str, content_type: str, data: bytes) -> Body:
    """A form with one file, `file`, as a browser sends it."""
    boundary = "----bench" + secrets.token_hex(12)
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{name}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    )
    return Body(
        f"multipart/form-data; boundary={boundary}",
        [head.encode(), data, f"\r\n--{boundary}--\r\n".encode()],
    )


def export_bomb(unpacked: int = BOMB_UNPACKED) -> bytes:
    """A ZIP of a chatsite export (chat/transfer/export_format.py) whose answer is
    `unpacked` bytes of "ha ": written while deflated, never whole in memory.
    A repeat of at most 3 bytes is what deflate packs best (about 1,026:1)."""
    from chat.transfer.export_format import FORMAT, VERSION, FiguresDoc

    moment = "2025-01-01T12:00:00+00:00"
    figures: dict[str, Any] = dict.fromkeys(FiguresDoc.__annotations__)
    figures |= {"done_reason": "stop", "replaced_chars": 0}

    def message(number: int, role: str, content: str) -> dict[str, Any]:
        return {
            "number": number,
            "parent": number - 1 or None,
            "role": role,
            "content": content,
            "thinking": "",
            "status": "done",
            "error_code": "",
            "error_detail": "",
            "client_id": "",
            "model_tag": "llama-demo:3b",
            "thinking_enabled": None,
            "source": "chat",
            "written_by_asker": False,
            "replaced": False,
            "shown_at": moment,
            "created_at": moment,
            "updated_at": moment,
            "figures": figures,
        }

    marker = "\x00answer\x00"
    document = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": moment,
        "owner": "someone",
        "folders": [],
        "conversations": [
            {
                "key": "chatsite:" + secrets.token_hex(16),
                "imported_from": None,
                "title": "Laughter",
                "created_at": moment,
                "updated_at": moment,
                "pinned_at": None,
                "archived_at": None,
                "folder": None,
                "settings": {
                    "model": None,
                    "thinking": "default",
                    "system_prompt": "",
                    "history_policy": "",
                    "history_last_n": None,
                    "temperature": None,
                },
                "messages": [
                    message(1, "user", "Laugh."),
                    message(2, "assistant", marker),
                ],
                "notices": [],
            }
        ],
    }
    before, after = json.dumps(document).encode().split(json.dumps(marker).encode())
    block = b"ha " * 100_000
    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open(EXPORT_NAME, "w", force_zip64=True) as entry,
    ):
        entry.write(before + b'"')
        for _ in range(unpacked // len(block)):
            entry.write(block)
        entry.write(b'"' + after)
    return out.getvalue()


def shared_stream_pdf(pages: int = PDF_PAGES, operators: int = PDF_OPERATORS) -> bytes:
    """A PDF whose pages all draw one content stream (an indirect object
    written once, deflated), full of text operators: small on disk, and read
    again for each page by a text extractor."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    lines = [b"BT /F1 9 Tf 20 780 Td"]
    lines += [b"(w%d lorem ipsum) Tj 0 -1 Td" % (i % 61) for i in range(operators)]
    lines.append(b"ET")
    stream = DecodedStreamObject()
    stream.set_data(b"\n".join(lines))
    contents = writer._add_object(stream.flate_encode(level=9))
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    resources = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
    )
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = contents
        page[NameObject("/Resources")] = resources
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@dataclass
class Attack:
    label: str
    path: str
    signed_in: bool  # with the attacker's session and a CSRF token
    body: Body = field(repr=False)
    xhr: bool = False  # as the page's script sends it (the import's partial answer)


def attacks() -> list[Attack]:
    """The four attacks, one per attacker, built here (in the attackers'
    process: the 50 MB is never pickled)."""
    big = os.urandom(BIG_BODY)
    bomb = export_bomb()
    pdf = shared_stream_pdf()
    return [
        Attack(
            f"{BIG_BODY / 1e6:g} MB multipart, POST /, signed out, no CSRF token",
            "/",
            False,
            multipart("big.bin", "application/octet-stream", big),
        ),
        Attack(
            f"{BIG_BODY / 1e6:g} MB multipart, POST {ATTACHMENTS_PATH}",
            ATTACHMENTS_PATH,
            True,
            multipart("big.txt", "text/plain", big),
        ),
        Attack(
            f"{len(bomb) / 1e3:.0f} kB ZIP import bomb ({BOMB_UNPACKED / 1e6:g} MB "
            f"unpacked), POST {IMPORT_PATH}",
            IMPORT_PATH,
            True,
            multipart("export.zip", "application/zip", bomb),
            xhr=True,
        ),
        Attack(
            f"{len(pdf) / 1e3:.0f} kB PDF, {PDF_PAGES} pages sharing one stream, "
            f"POST {ATTACHMENTS_PATH}",
            ATTACHMENTS_PATH,
            True,
            multipart("report.pdf", "application/pdf", pdf),
        ),
    ]


# ---------------------------------------------------------------- the client


@dataclass
class Outcome:
    answer: str  # the status code, or how it ended without one
    seconds: float  # to the status line (or to the end)
    sent: int  # body bytes written before the answer or the end


async def post(
    port: int, path: str, body: Body, headers: dict[str, str], give_up: float
) -> Outcome:
    """POST `body`, reading while writing: an answer the server gives before
    the body is all sent (an early 413) ends the sending. HTTP/1.1 by hand:
    a client library writes the whole body before it looks for an answer."""
    began = time.monotonic()
    sent = [0]
    writer: asyncio.StreamWriter | None = None
    answer: asyncio.Task[bytes] | None = None
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Content-Type: {body.content_type}",
        f"Content-Length: {body.length}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    try:
        async with asyncio.timeout(give_up):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            answer = asyncio.create_task(reader.readline())
            with contextlib.suppress(ConnectionError):
                await _send(writer, body, answer, sent)
            status_line = await answer
    except TimeoutError:
        return Outcome("no answer (gave up)", time.monotonic() - began, sent[0])
    except ConnectionRefusedError:
        return Outcome("connection refused", time.monotonic() - began, sent[0])
    except OSError as error:
        ended = f"closed ({type(error).__name__})"
        return Outcome(ended, time.monotonic() - began, sent[0])
    finally:
        if answer is not None:
            answer.cancel()
        if writer is not None:
            writer.transport.abort()
    seconds = time.monotonic() - began
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return Outcome("closed without an answer", seconds, sent[0])
    return Outcome(parts[1].decode(), seconds, sent[0])


async def _send(
    writer: asyncio.StreamWriter,
    body: Body,
    answer: asyncio.Task[bytes],
    sent: list[int],
) -> None:
    """Write `body` (counted in `sent[0]`) until it is all written or `answer`
    has come: a server that answers and stops reading leaves a write waiting."""
    for chunk in body.chunks():
        writer.write(chunk)
        drained = asyncio.ensure_future(writer.drain())
        await asyncio.wait({drained, answer}, return_when=asyncio.FIRST_COMPLETED)
        if not drained.done():
            drained.cancel()
            return
        drained.result()  # a ConnectionError if the server closed it
        sent[0] += len(chunk)
        if answer.done():
            return


def request_headers(cookie: str | None, xhr: bool = False) -> dict[str, str]:
    """A signed-in user's (`cookie`) with a CSRF token, as the page's script
    sends them; none for a stranger."""
    if cookie is None:
        return {}
    token = secrets.token_hex(16)  # 32 characters: a CSRF secret Django takes
    headers = {"Cookie": f"{cookie}; csrftoken={token}", "X-CSRFToken": token}
    if xhr:
        headers["X-Requested-With"] = "XMLHttpRequest"
    return headers


async def keep_posting(
    port: int,
    path: str,
    body: Body,
    headers: dict[str, str],
    outcomes: list[Outcome],
    stopping: asyncio.Event,
    give_up: float,
    every: float = 0.0,
) -> None:
    """One request at a time, one every `every` s at most, each outcome onto
    `outcomes`, until `stopping`; cancelled, the request in flight counts as
    unanswered."""
    while not stopping.is_set():
        began = time.monotonic()
        try:
            outcome = await post(port, path, body, headers, give_up)
        except asyncio.CancelledError:
            seconds = time.monotonic() - began
            outcomes.append(Outcome("no answer when the bench ended", seconds, 0))
            raise
        outcomes.append(outcome)
        # Not a hot loop on a server gone away.
        pause = every if outcome.answer.isdigit() else max(every, 0.5)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                stopping.wait(), max(0.0, pause - (time.monotonic() - began))
            )


async def wind_down(loops: list[asyncio.Task[None]], stopping: asyncio.Event) -> None:
    """Stop the loops of `keep_posting`: their requests in flight get
    STOP_GRACE s, then are cancelled."""
    stopping.set()
    _, late = await asyncio.wait(loops, timeout=STOP_GRACE)
    for loop in late:
        loop.cancel()
    await asyncio.gather(*loops, return_exceptions=True)


def attackers(
    port: int, cookies: list[str], ready: Any, stop: Any, results: Any, bound: float
) -> None:
    """The attackers' process: every attack in a loop of its own until `stop`
    is set (or `bound` seconds); the requests then in flight get STOP_GRACE s
    more. Their outcomes, with each attack's label, go onto `results`."""

    async def run() -> list[tuple[str, list[Outcome]]]:
        chosen = attacks()
        found: list[list[Outcome]] = [[] for _ in chosen]
        stopping = asyncio.Event()
        loops = [
            asyncio.create_task(
                keep_posting(
                    port,
                    attack.path,
                    attack.body,
                    request_headers(cookie if attack.signed_in else None, attack.xhr),
                    outcomes,
                    stopping,
                    REQUEST_TIMEOUT,
                )
            )
            for attack, cookie, outcomes in zip(chosen, cookies, found, strict=True)
        ]
        ready.set()
        await asyncio.to_thread(stop.wait, bound)
        await wind_down(loops, stopping)
        return [(a.label, outcomes) for a, outcomes in zip(chosen, found, strict=True)]

    found = asyncio.run(run())
    results.put([(label, [asdict(o) for o in outcomes]) for label, outcomes in found])


# ---------------------------------------------------------------- one phase


@dataclass
class Phase:
    stream: StreamResult
    tokens: int  # asked for
    # Per token asked, in ms: its arrival (or the phase's end, if it never
    # came) minus the simulator's send stamp (or, for a token the simulator
    # never sent, when a model at TPS would have sent it).
    latencies_ms: list[float]
    ended: str  # how the answer ended: "done", an error frame's code, ...
    uploads: list[Outcome]

    @property
    def received(self) -> int:
        return len(self.stream.arrivals)

    @property
    def first_token_ms(self) -> float:
        first = self.stream.first_token
        return (first - self.stream.started) * 1000 if first else math.nan


def token_latencies(
    result: StreamResult, log: list[dict[str, Any]], tokens: int, ended: float
) -> list[float]:
    """Phase.latencies_ms of `result`, from the simulator's `log`; `ended`:
    when the phase stopped waiting for tokens."""
    entry = next(
        (e for e in log if e["body"]["messages"][-1]["content"] == result.key), {}
    )
    stamps = entry.get("times", [])
    out = []
    for i in range(tokens):
        sent = stamps[i] if i < len(stamps) else result.started + i / TPS
        if i < len(result.arrivals):
            out.append((result.arrivals[i] - sent) * 1000)
        else:  # at least this late (a token not yet due when it ended: lost)
            out.append(max(0.0, ended - sent) * 1000)
    return out


async def stream_and_upload(
    site: Site,
    conversation: int,
    seconds: float,
    attackers: Attackers | None = None,
) -> Phase:
    """One answer of `seconds` at TPS over the conversation's socket, and the
    small uploads beside it until it ends. The socket is opened first, as the
    page's is when the conversation is shown; then the attackers (if any) are
    started; then the question is asked. The attackers stop when it ends."""
    tokens = int(seconds * TPS)
    site.configure(
        tps=TPS, answer_tokens=tokens, answer_text=answer_text(tokens), ttft_ms=0
    )
    result = StreamResult(key=f"bench conversation {conversation}")
    url = f"ws://127.0.0.1:{site.web_port}/ws/conversations/{conversation}/"
    headers = {"Cookie": site.cookie, "Origin": site.web_url}
    ended = "no answer by the deadline"
    uploads: list[Outcome] = []
    async with websockets.connect(
        url, additional_headers=headers, max_size=None, close_timeout=1
    ) as ws:
        if attackers is not None:
            await attackers.start()
        stopping = asyncio.Event()
        small = multipart("note.txt", "text/plain", SMALL_FILE)
        uploading = asyncio.create_task(
            keep_posting(
                site.web_port,
                ATTACHMENTS_PATH,
                small,
                request_headers(site.cookie),
                uploads,
                stopping,
                SMALL_UPLOAD_TIMEOUT,
                every=UPLOAD_EVERY,
            )
        )
        with gc_paused():
            result.started = time.time()
            try:
                async with asyncio.timeout(seconds + STREAM_GRACE):
                    question = {"type": "send", "content": result.key, "client_id": "b"}
                    await ws.send(json.dumps(question))
                    end = await read_answer(ws, result, token_ends(tokens))
                    ended = "done" if end["type"] == "done" else end.get("code", "?")
            except TimeoutError:
                pass
            except ConnectionClosed:
                ended = f"socket closed by the server ({ws.close_code})"
            finished = time.time()
            if attackers is not None:
                attackers.stop()
            await wind_down([uploading], stopping)
    found = token_latencies(result, site.sim_log(), tokens, finished)
    return Phase(result, tokens, found, ended, uploads)


class Attackers:
    """The attackers' process (`attackers`), started and stopped from here."""

    def __init__(self, port: int, cookies: list[str], bound: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.ready, self.stopped = context.Event(), context.Event()
        self.results = context.Queue()
        self.process = context.Process(
            target=attackers,
            args=(port, cookies, self.ready, self.stopped, self.results, bound),
        )

    async def start(self) -> None:
        """Once they have begun (and LEAD s more, so their requests are in
        flight)."""
        self.process.start()
        if not await asyncio.to_thread(self.ready.wait, 120):
            raise RuntimeError("the attackers never got ready")
        await asyncio.sleep(LEAD)

    def stop(self) -> None:
        self.stopped.set()

    async def outcomes(self) -> list[tuple[str, list[dict[str, Any]]]]:
        self.stop()
        found = await asyncio.to_thread(self.results.get, True, STOP_GRACE + 30)
        return list(found)

    def end(self) -> None:
        self.stop()
        if self.process.pid is not None:
            self.process.join(STOP_GRACE + 30)
            if self.process.is_alive():
                self.process.kill()


# ---------------------------------------------------------------- the memory


class Memory:
    """The serving process's resident memory while a phase runs: sampled, and
    its peak (VmHWM) after a reset. Kills the process past RSS_GUARD_MIB."""

    def __init__(self, pid: int, guard_mib: float) -> None:
        self.pid = pid
        self.guard_mib = guard_mib
        self.before = rss_mib(pid)
        self.sampled_peak = self.before
        self.workers_peak = 0.0  # its child processes together (worker pools)
        self.killed = False
        # Writing 5 resets VmHWM to the present VmRSS (proc(5)).
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            self.reset = True
        except OSError:
            self.reset = False

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            now = rss_mib(self.pid)
            self.sampled_peak = max(self.sampled_peak, now)
            workers = sum(rss_mib(child) for child in descendants(self.pid))
            self.workers_peak = max(self.workers_peak, workers)
            if now > self.guard_mib and not self.killed:
                self.killed = True
                os.kill(self.pid, signal.SIGKILL)

    async def watch(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_EVERY)

    def figures(self) -> dict[str, Any]:
        self.sample()
        peak = self.sampled_peak
        with contextlib.suppress(OSError):
            if self.reset:
                peak = max(peak, rss_mib(self.pid, "VmHWM"))
        try:
            after = rss_mib(self.pid)
        except OSError:
            after = float("nan")
        return {
            "rss_before_mib": self.before,
            "rss_peak_mib": peak,
            "rss_after_mib": after,
            "rss_growth_mib": peak - self.before,
            "workers_peak_mib": self.workers_peak,
            "killed_by_guard": self.killed,
        }


# ---------------------------------------------------------------- the run


async def run(site: Site, seconds: float, guard_mib: float) -> dict[str, Any]:
    began = time.monotonic()
    cookies = site.sign_in([f"attacker{n}" for n in range(1, 5)])
    warm_up, alone, under_attack = site.new_conversations(3)
    # Untimed: the first answer and upload of a process pay for imports.
    await stream_and_upload(site, warm_up, 0.5)
    reference = await stream_and_upload(site, alone, REFERENCE_SECONDS)
    attack_began = time.monotonic()

    serving = site.server_pids[0]
    attackers = Attackers(site.web_port, cookies, seconds + STREAM_GRACE)
    memory = Memory(serving, guard_mib)
    cpu_before = cpu_seconds(serving)
    watched = asyncio.Event()
    watching = asyncio.create_task(memory.watch(watched))
    try:
        attacked = await stream_and_upload(site, under_attack, seconds, attackers)
        found = await attackers.outcomes()
    finally:
        watched.set()
        await watching
        attackers.end()
    try:
        cpu = cpu_seconds(serving) - cpu_before
    except OSError:
        cpu = math.nan
    result = summarize(reference, attacked, memory.figures(), found, cpu)
    # On a shared machine the figures follow its load: said beside them.
    result["load_average"] = os.getloadavg()[0]
    result["reference_s"] = attack_began - began
    result["attack_s"] = time.monotonic() - attack_began
    return result


def stream_row(reference: Phase, attacked: Phase) -> dict[str, Any]:
    row: dict[str, Any] = {
        "reference_tokens": reference.tokens,
        "reference_received": reference.received,
        "attacked_tokens": attacked.tokens,
        "attacked_received": attacked.received,
        "reference_ended": reference.ended,
        "attacked_ended": attacked.ended,
        "reference_first_token_ms": reference.first_token_ms,
        "attacked_first_token_ms": attacked.first_token_ms,
    }
    for q, label in ((0.5, "p50"), (0.99, "p99"), (1.0, "max")):
        ref = percentile(reference.latencies_ms, q)
        att = percentile(attacked.latencies_ms, q)
        row[f"reference_{label}_ms"] = ref
        row[f"attacked_{label}_ms"] = att
        row[f"added_{label}_ms"] = att - ref
    return row


def upload_row(phase: Phase) -> dict[str, Any]:
    times = [o.seconds for o in phase.uploads]
    return {
        "count": len(times),
        "answers": dict(Counter(o.answer for o in phase.uploads)),
        "p50_s": percentile(times, 0.5),
        "max_s": percentile(times, 1.0),
    }


def summarize(
    reference: Phase,
    attacked: Phase,
    memory: dict[str, Any],
    found: list[tuple[str, list[dict[str, Any]]]],
    cpu: float,
) -> dict[str, Any]:
    rows = []
    for label, outcomes in found:
        answered = [o["seconds"] for o in outcomes if o["answer"].isdigit()]
        rows.append(
            {
                "attack": label,
                "requests": len(outcomes),
                "answers": dict(Counter(o["answer"] for o in outcomes)),
                "answer_p50_s": percentile(answered, 0.5),
                "answer_max_s": percentile(answered, 1.0),
                "sent_mb": sum(o["sent"] for o in outcomes) / 1e6,
            }
        )
    return {
        "stream": stream_row(reference, attacked),
        "upload_reference": upload_row(reference),
        "upload_attacked": upload_row(attacked),
        "memory": memory,
        "server_cpu_s": cpu,
        "attacks": rows,
    }


def verdict(value: float, budget: float) -> str:
    return "ok" if value <= budget else "FAIL"


def print_table(result: dict[str, Any], seconds: float, database: str) -> None:
    s, m = result["stream"], result["memory"]
    ref_up, att_up = result["upload_reference"], result["upload_attacked"]
    print(
        f"Expensive input: one Daphne process ({database}, production settings). "
        f"The user bench streams at {TPS:g} tok/s and attaches {len(SMALL_FILE)} "
        f"bytes every {UPLOAD_EVERY:g} s, alone ({REFERENCE_SECONDS:g} s, the "
        f"reference), then for {seconds:g} s while 4 other users attack "
        f"(load average {result['load_average']:.1f})."
    )
    # Tokens that never came count to the phase's end: the figures are then
    # lower bounds.
    at_least = "" if s["attacked_received"] == s["attacked_tokens"] else ">="
    print(f"{'':<38}{'reference':>11}{'attacked':>11}{'added':>10}  budget")
    for label in ("p50", "p99", "max"):
        budget = ""
        if label == "p99":
            budget = f"added <= {BUDGETS['added_p99_ms']:g} ms: " + verdict(
                s["added_p99_ms"], BUDGETS["added_p99_ms"]
            )
        print(
            f"{'stream latency per token ' + label + ' (ms)':<38}"
            f"{s[f'reference_{label}_ms']:>11.1f}"
            f"{at_least + format(s[f'attacked_{label}_ms'], '.1f'):>11}"
            f"{at_least + format(s[f'added_{label}_ms'], '.1f'):>10}  {budget}"
        )
    print(
        f"{'stream first token (ms)':<38}{s['reference_first_token_ms']:>11.1f}"
        f"{_number(s['attacked_first_token_ms'], 11, '.1f')}"
    )
    lost = "" if not at_least else "  FAIL (tokens missing)"
    print(
        f"{'stream tokens received':<38}"
        f"{_of(s['reference_received'], s['reference_tokens']):>11}"
        f"{_of(s['attacked_received'], s['attacked_tokens']):>11}{'':>10}{lost}"
    )
    print(f"  ended: alone {s['reference_ended']}; attacked {s['attacked_ended']}")
    print(
        f"{'12-byte upload p50 (s)':<38}{ref_up['p50_s']:>11.3f}"
        f"{att_up['p50_s']:>11.3f}"
    )
    print(
        f"{'12-byte upload max (s)':<38}{ref_up['max_s']:>11.3f}"
        f"{att_up['max_s']:>11.3f}{'':>10}  <= {BUDGETS['upload_max_s']:g} s: "
        + verdict(att_up["max_s"], BUDGETS["upload_max_s"])
    )
    print(
        f"  answers: alone {_counts(ref_up['answers'])}; attacked "
        f"{_counts(att_up['answers'])}"
    )
    memory = verdict(m["rss_growth_mib"], BUDGETS["rss_growth_mib"])
    if m["killed_by_guard"]:
        memory = "FAIL (killed by the bench's guard)"
    print(
        f"{'serving process RSS (MiB)':<38}{m['rss_before_mib']:>11.0f}"
        f"{m['rss_peak_mib']:>11.0f}{m['rss_growth_mib']:>+10.0f}  growth <= "
        f"{BUDGETS['rss_growth_mib']:g} MiB: {memory}"
    )
    print(
        f"  peak; after the attacks {_number(m['rss_after_mib'], 0, '.0f')} MiB; "
        "its child "
        f"processes' peak {m['workers_peak_mib']:.0f} MiB; its CPU during the "
        f"attacks {result['server_cpu_s']:.1f} s"
    )
    print(f"{'attack':<70}{'sent':>5}{'MB':>7}{'p50 s':>7}{'max s':>7}  answers")
    for row in result["attacks"]:
        print(
            f"{row['attack']:<70}{row['requests']:>5}{row['sent_mb']:>7.1f}"
            f"{_number(row['answer_p50_s'], 7, '.2f')}"
            f"{_number(row['answer_max_s'], 7, '.2f')}  "
            f"{_counts(row['answers'])}"
        )
    print(
        f"(p50/max s: time to the status line of the answered requests; an attack "
        f"request is given up after {REQUEST_TIMEOUT:g} s, the server may go on "
        "with it)"
    )


def _of(part: int, whole: int) -> str:
    return f"{part}/{whole}"


def _number(value: float, width: int, spec: str) -> str:
    """`value` right-aligned in `width`; "-" when there is none (NaN)."""
    return f"{'-' if math.isnan(value) else format(value, spec):>{width}}"


def _counts(answers: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(answers.items())) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=ATTACK_SECONDS,
        help=f"the stream under attack, in seconds (default {ATTACK_SECONDS:g})",
    )
    parser.add_argument(
        "--sqlite",
        action="store_true",
        help="the SQLite default, no Redis (default: PostgreSQL and Redis)",
    )
    parser.add_argument(
        "--rss-guard",
        type=float,
        default=RSS_GUARD_MIB,
        metavar="MIB",
        help="kill the serving process past this resident memory "
        f"(default {RSS_GUARD_MIB})",
    )
    args = parser.parse_args()
    began = time.monotonic()
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    with contextlib.ExitStack() as stack:
        if args.sqlite:
            site, database = Site(), "SQLite"
        else:
            from bench.processes import SharedSite, postgres_and_redis

            urls = stack.enter_context(postgres_and_redis("bench.expensive_input"))
            site, database = SharedSite(1, *urls), "PostgreSQL + Redis"
        # The uploads go to a folder of the run's own.
        site.env["CHATSITE_MEDIA_ROOT"] = str(Path(site.tmp.name) / "media")
        site.start()
        stack.callback(site.stop)
        started = time.monotonic() - began
        if isinstance(log := getattr(site, "log", None), Path):
            # runsite's log, for a look at what the server said (before stop).
            copy = out / "expensive_input-daphne.log"
            stack.callback(lambda: copy.write_bytes(log.read_bytes()))
        result = asyncio.run(run(site, args.seconds, args.rss_guard))
    print_table(result, args.seconds, database)
    print(
        f"(the whole run took {time.monotonic() - began:.0f} s: {started:.0f} to "
        f"start the site, {result['reference_s']:.0f} alone, "
        f"{result['attack_s']:.0f} under attack)"
    )
    result |= {"seconds": args.seconds, "database": database}
    (out / "expensive_input.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
