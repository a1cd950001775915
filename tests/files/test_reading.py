"""Where an upload is read (chat.files.reading): the hostile files of issue 40
in real worker processes, refused within their budget, the process that asked
(this one) growing by megabytes, not gigabytes; a user's pictures held to
their pixel budget; the abandoned read killed."""

from __future__ import annotations

import asyncio
import time

import pytest

from chat import work
from chat.files import reading
from chat.files.refusals import Refused
from chat.files.uploads import Limits, Prepared
from tests.files import samples
from tests.support.waiting import until
from tests.work.watching import MB, gone, peak_growth, worker_of

LIMITS = Limits(max_bytes=20 * MB, max_pixels=50_000_000, image_max_side=1568)
BUDGET = work.Budget(seconds=3, memory_bytes=768 * MB)
ROOMY = work.Budget(seconds=120, memory_bytes=768 * MB)  # for a loaded machine
PIXELS = 150_000_000


async def read(name: str, data: bytes, owner: str = "alice", **changed):
    limits = changed.pop("limits", LIMITS)
    options = {"owner": owner, "budget": BUDGET, "owner_pixels": PIXELS, **changed}
    return await reading.read(name, data, limits, **options)


async def test_a_pdf_whose_pages_share_one_content_stream_is_stopped_in_time():
    data = samples.shared_stream_pdf(pages=60, operators=5_000)
    assert len(data) < 20_000
    started = time.monotonic()
    with peak_growth() as growth, pytest.raises(Refused) as refused:
        await read("report.pdf", data)
    assert time.monotonic() - started < BUDGET.seconds + 10  # a fork and a kill
    assert "took too long to read" in refused.value.message
    assert refused.value.message.startswith("report.pdf")
    assert growth.bytes < 100 * MB


async def test_a_docx_bomb_is_refused_and_costs_the_asker_nothing():
    data = samples.docx_bomb()
    assert len(data) < 300_000
    budget = work.Budget(seconds=30, memory_bytes=256 * MB)
    with peak_growth() as growth, pytest.raises(Refused) as refused:
        await read("cv.docx", data, budget=budget)
    message = refused.value.message
    assert "too large to read" in message or "took too long" in message
    assert growth.bytes < 100 * MB


async def test_four_49_megapixel_pngs_at_once_take_their_turns_and_pixel_budget():
    data = samples.big_png(7000)
    assert len(data) < 200_000
    with peak_growth() as growth:
        results = await asyncio.gather(
            *(read(f"p{n}.png", data, budget=ROOMY) for n in range(4)),
            return_exceptions=True,
        )
    read_ = [r for r in results if isinstance(r, Prepared)]
    refused = [r for r in results if isinstance(r, Refused)]
    # 3 x 49 MP fit in 150 MP; the fourth is asked to wait.
    assert len(read_) == 3 and len(refused) == 1, results
    assert refused[0].status == 429 and "must wait" in refused[0].message
    assert all(r.kind == "image" and r.content_type == "image/png" for r in read_)
    assert growth.bytes < 300 * MB
    assert reading.pixels.held("alice") == 0


async def test_another_users_picture_is_read_while_one_users_pdfs_wait():
    slow = samples.shared_stream_pdf(pages=60, operators=5_000)
    pdfs = [asyncio.create_task(read(f"r{n}.pdf", slow)) for n in range(7)]
    try:
        await until(lambda: worker_of("alice"), "alice's first PDF is being read")
        started = time.monotonic()
        prepared = await read("small.png", samples.png(), owner="bob")
        waited = time.monotonic() - started
        assert prepared.kind == "image"
        assert not any(task.done() for task in pdfs[1:])
        assert waited < BUDGET.seconds  # not behind alice's queue
    finally:
        for task in pdfs:
            task.cancel()
        await asyncio.gather(*pdfs, return_exceptions=True)


async def test_an_abandoned_read_kills_its_worker():
    slow = samples.shared_stream_pdf(pages=60, operators=5_000)
    reading = asyncio.create_task(read("r.pdf", slow, budget=ROOMY))
    pid = await until(lambda: worker_of("alice"), "the PDF is being read")
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    await until(lambda: gone(pid), "the worker reading it is killed")


async def test_only_the_first_pages_and_characters_of_a_document_are_read():
    data = samples.shared_stream_pdf(pages=5, operators=3)
    limits = Limits(
        max_bytes=20 * MB, max_pixels=50_000_000, image_max_side=1568, pdf_max_pages=2
    )
    prepared = await read("r.pdf", data, limits=limits)
    assert prepared.text == "x x x\n\nx x x"
    assert prepared.note == "only its first 2 pages were read"
    limits = Limits(
        max_bytes=20 * MB, max_pixels=50_000_000, image_max_side=1568, text_max_chars=5
    )
    prepared = await read("notes.txt", b"abcdefgh", limits=limits)
    assert (prepared.text, prepared.note) == (
        "abcde",
        "only its first 5 characters were read",
    )


async def test_a_refusal_from_the_worker_keeps_its_status():
    with pytest.raises(Refused) as refused:
        await read("fake.pdf", b"not a pdf at all")
    assert refused.value.status == 415
