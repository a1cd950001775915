"""Where an upload is read. Text is read here (decoding UTF-8 costs little);
JSON, PDF, DOCX and pictures in a worker process (`chat.work`), under a time
and memory budget, taking turns with other users' files, and killed when the
request is abandoned: their parsers' cost is not their size (a 13 kB PDF can
keep a CPU busy for a minute, a 190 kB PNG decode to 200 MB).

A picture's pixels are counted from its header first, here: one user's
pictures waiting or being read at once may not add up to more than their
budget (`PixelBudget`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePosixPath

from asgiref.sync import sync_to_async
from django.utils.translation import gettext as _

from chat import work
from chat.files import document_text, images
from chat.files.refusals import Refused
from chat.files.uploads import (
    IMAGE_EXTENSIONS,
    Limits,
    Prepared,
    clean_name,
    mebibytes,
    prepare,
)

# Read in a worker: what a parser builds from a few bytes may be huge.
PARSED_EXTENSIONS = {*document_text.PARSED, ".json", *IMAGE_EXTENSIONS}


class PixelBudget:
    """The pixels of each owner's pictures waiting or being read in this
    process. Per process, not per event loop (plain numbers any loop may
    count): this module is its one owner (`pixels`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    @contextmanager
    def reserved(
        self, owner: str, count: int, budget: int, name: str
    ) -> Iterator[None]:
        """Hold `count` pixels for `owner` while the picture is read; refused
        (429: try again later) past `budget`, unless it is their only one."""
        with self._lock:
            held = self._held.get(owner, 0)
            if held and held + count > budget:
                raise Refused(
                    _(
                        "%(name)s must wait: your other pictures being read have "
                        "too many pixels together. Try again when they are done."
                    )
                    % {"name": name},
                    429,
                )
            self._held[owner] = held + count
        try:
            yield
        finally:
            with self._lock:
                left = self._held[owner] - count
                if left:
                    self._held[owner] = left
                else:
                    del self._held[owner]

    def held(self, owner: str) -> int:
        with self._lock:
            return self._held.get(owner, 0)


pixels = PixelBudget()


async def read(
    raw_name: str,
    data: bytes,
    limits: Limits,
    *,
    owner: str,
    budget: work.Budget,
    owner_pixels: int,
) -> Prepared:
    """`prepare` the upload where it belongs; raise `Refused` with the reason
    (also when it spent its budget)."""
    name = clean_name(raw_name)
    extension = PurePosixPath(name).suffix.lower()
    if extension not in PARSED_EXTENSIONS or not data or len(data) > limits.max_bytes:
        return await sync_to_async(prepare, thread_sensitive=False)(
            raw_name, data, limits
        )
    if extension not in IMAGE_EXTENSIONS:
        return await _in_worker(name, raw_name, data, limits, owner, budget)
    count = await sync_to_async(images.pixels, thread_sensitive=False)(
        name, data, IMAGE_EXTENSIONS[extension], limits.max_pixels
    )
    with pixels.reserved(owner, count, owner_pixels, name):
        return await _in_worker(name, raw_name, data, limits, owner, budget)


async def _in_worker(
    name: str,
    raw_name: str,
    data: bytes,
    limits: Limits,
    owner: str,
    budget: work.Budget,
) -> Prepared:
    try:
        return await work.run(
            prepare, raw_name, data, limits, owner=owner, budget=budget
        )
    except work.TimedOut:
        raise Refused(
            _("%(name)s took too long to read: it was stopped after %(seconds)s s.")
            % {"name": name, "seconds": f"{budget.seconds:.3g}"}
        ) from None
    except work.OutOfMemory:
        raise Refused(
            _("%(name)s is too large to read: it needed more than %(size)s of memory.")
            % {"name": name, "size": mebibytes(budget.memory_bytes)}
        ) from None
