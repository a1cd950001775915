"""An export's JSON read a value at a time, within budgets, never whole.

A file is a list (or a document holding a list) of conversations: ijson gives
its parse events, and `Values` builds one conversation at a time from them,
refusing one nested deeper than `Limits.depth`, with more than
`Limits.item_values` values, or over `Limits.item_bytes` (a huge single
string is refused while ijson reads it, by `Counted`). So what a file costs is
its largest conversation, not its size: a 70 kB ZIP that unpacked to 70 MB of
`[[],[],...]` once took 1.78 GB as Python objects (issue 40).

A ZIP's entry is checked from the archive's directory before it is inflated
(its size and its ratio to its packed size), and again while it is: the bytes
that come out are counted against both, whatever the directory says."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

import ijson  # type: ignore[import-untyped]

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Limits:
    unpacked: int  # bytes of JSON read, in all (TRANSFER_IMPORT_MAX_BYTES)
    # A ZIP's entry may unpack to this many times the archive's size: exports
    # pack 5-20 times, a bomb about 1,000 times (deflate's most).
    ratio: int = 100
    ratio_floor: int = 8 * 1024 * 1024  # a small archive may unpack to this
    item_bytes: int = 32 * 1024 * 1024  # one conversation's JSON
    item_values: int = 1_000_000  # values (objects, lists, strings...) in one
    depth: int = 64  # exports nest about 10 deep


class TooLarge(Exception):
    """More bytes than a budget allows. `what` says which: "unpacked" (the
    whole file), "ratio" (a ZIP's entry against its archive) or "item" (one
    conversation)."""

    def __init__(self, what: str, name: str = "") -> None:
        super().__init__(what)
        self.what, self.name = what, name  # name: a ZIP entry's


class TooDeep(Exception):
    pass


class TooManyValues(Exception):
    pass


class Counted:
    """A binary stream's bytes as ijson reads them, counted against the
    budgets, its UTF-8 BOM left out and its lone surrogate escapes mended
    (`Surrogates`)."""

    def __init__(self, raw: IO[bytes], limit: int, ratio_limit: int | None) -> None:
        self.raw, self.limit, self.ratio_limit = raw, limit, ratio_limit
        self.item_limit: int | None = None
        self.read_bytes = 0
        self.mark = 0  # where the current item began
        self.at_end = False
        self.blank = True  # nothing but white space so far
        self.surrogates = Surrogates()
        self._first = True

    def start_item(self, limit: int) -> None:
        self.mark, self.item_limit = self.read_bytes, limit

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson asks once, for the type
            return b""
        while True:
            data = self.raw.read(size if size > 0 else 64 * 1024)
            if self._first:
                self._first = False
                data = data.removeprefix(_BOM)
            self._count(len(data))
            if not data:
                self.at_end = True
            elif self.blank and data.strip():
                self.blank = False
            mended = self.surrogates.mend(data, end=not data)
            if mended or not data:  # b"" only at the end: ijson stops there
                return mended

    def _count(self, size: int) -> None:
        self.read_bytes += size
        if self.read_bytes > self.limit:
            raise TooLarge("unpacked")
        if self.ratio_limit is not None and self.read_bytes > self.ratio_limit:
            raise TooLarge("ratio")
        if self.item_limit is not None and self.read_bytes - self.mark > (
            self.item_limit + 64 * 1024  # what ijson reads ahead
        ):
            raise TooLarge("item")


class Surrogates:
    """JSON's `\\ud800` escapes that are not half of a pair, replaced by
    `\\ufffd` (and counted) before ijson sees them: its C parser turns a lone
    high one into "?" and fails on a lone low one, where Python's json kept
    them for `Summary.text` to replace and count (chat/transfer/incoming.py).
    Every escape is a token (a backslash and what it escapes, or a surrogate
    escape with its pair), read from a token's start, so `\\\\ud800` (a
    backslash, then "ud800") is left alone; a token that may go on in the
    next read waits for it."""

    _TOKEN = re.compile(
        rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
        rb"|u[dD][c-fC-F][0-9a-fA-F]{2}|.)",
        re.DOTALL,
    )
    _MAYBE = re.compile(rb"\\u[dD][89a-fA-F]")
    _LONGEST = 12  # a pair: \ud83d\ude00

    def __init__(self) -> None:
        self.carry = b""
        self.replaced = 0

    def mend(self, data: bytes, *, end: bool) -> bytes:
        buffer = self.carry + data
        keep = 0 if end else self._LONGEST
        if not self._MAYBE.search(buffer):
            # No surrogate here: pass it on up to the last few bytes (a token
            # begun there is read whole next time), not splitting a run of
            # backslashes.
            cut = max(len(buffer) - keep, 0)
            while not end and cut > 0 and buffer[cut - 1 : cut] == b"\\":
                cut -= 1
            self.carry = buffer[cut:]
            return buffer[:cut]
        out, done = [], 0
        for token in self._TOKEN.finditer(buffer):
            if not end and token.end() > len(buffer) - keep:
                break
            out.append(buffer[done : token.start()])
            text = token.group()
            if len(text) == 6 and text[1:2] == b"u":  # a lone surrogate
                self.replaced += 1
                text = b"\\ufffd"
            out.append(text)
            done = token.end()
        else:
            rest = buffer[done:]
            # A backslash at the very end is a token whose second byte is
            # still to come.
            cut = len(rest) - 1 if rest.endswith(b"\\") and not end else len(rest)
            out.append(rest[:cut])
            done += cut
        self.carry = buffer[done:]
        return b"".join(out)


@contextmanager
def opened(path: str, limits: Limits, names: tuple[str, ...]) -> Iterator[Any]:
    """The JSON of the export at `path`, counted: the file itself, or in a
    ZIP the first entry named one of `names` (in any folder). Raises
    zipfile.BadZipFile, KeyError (no such entry) or TooLarge."""
    with open(path, "rb") as file:
        start = file.read(4)
        file.seek(0)
        if start not in _ZIP_MAGIC:
            yield "", Counted(file, limits.unpacked, None)
            return
        size = file.seek(0, 2)
        file.seek(0)
        with zipfile.ZipFile(file) as archive:
            found = {i.filename.rsplit("/", 1)[-1]: i for i in archive.infolist()}
            info = next((found[n] for n in names if n in found), None)
            if info is None:
                raise KeyError(names)
            # The directory first: a bomb says what it is before a byte is
            # inflated (unless its directory lies: then the count below).
            ratio_limit = max(limits.ratio * size, limits.ratio_floor)
            if info.file_size > limits.unpacked:
                raise TooLarge("unpacked", info.filename)
            if info.file_size > max(
                limits.ratio * info.compress_size, limits.ratio_floor
            ) or (info.file_size > ratio_limit):
                raise TooLarge("ratio", info.filename)
            with archive.open(info) as entry:
                yield info.filename, Counted(entry, limits.unpacked, ratio_limit)


class Values:
    """The values of a JSON text, one top-level value or one item of a list
    at a time, built from ijson's events within `Limits`."""

    def __init__(self, source: Counted, limits: Limits) -> None:
        self.source, self.limits = source, limits
        self.events = iter(
            ijson.basic_parse(source, use_float=True, multiple_values=True)
        )
        self.count = 0  # values in the current item

    def next(self) -> tuple[str, Any] | None:
        """The next event, or None at the end of the text."""
        return next(self.events, None)

    def start_item(self) -> None:
        """What comes next counts as one item (one conversation)."""
        self.source.start_item(self.limits.item_bytes)
        self.count = 0

    def build(
        self, first: tuple[str, Any], *, depth: int = 0, item: bool = True
    ) -> Any:
        """The value that begins with the event `first`, `depth` levels down
        already: a new item of the file, or (`item` false) more of the
        current one."""
        if item:
            self.start_item()
        event, value = first
        self.count += 1
        if event not in ("start_map", "start_array"):
            return value
        root: Any = {} if event == "start_map" else []
        stack: list[Any] = [root]
        keys: list[str | None] = [None]
        count = self.count
        limit_depth, limit_values = self.limits.depth, self.limits.item_values
        if depth + 1 > limit_depth:
            raise TooDeep
        for event, value in self.events:
            if event == "map_key":
                keys[-1] = value
                continue
            if event in ("end_map", "end_array"):
                stack.pop()
                keys.pop()
                if not stack:
                    self.count = count
                    return root
                continue
            count += 1
            if count > limit_values:
                raise TooManyValues
            if event == "start_map" or event == "start_array":
                child: Any = {} if event == "start_map" else []
                if depth + len(stack) + 1 > limit_depth:
                    raise TooDeep
            else:
                child = value
            parent = stack[-1]
            if isinstance(parent, list):
                parent.append(child)
            else:
                parent[keys[-1]] = child
            if event == "start_map" or event == "start_array":
                stack.append(child)
                keys.append(None)
        return root  # cut off: ijson raises before this

    def items(self, *, depth: int = 1) -> Iterator[Any]:
        """The items of the list whose start_array was just read, one at a
        time."""
        while (event := self.next()) is not None and event[0] != "end_array":
            yield self.build(event, depth=depth)

    def map_keys(self) -> Iterator[str]:
        """The keys of the object whose start_map was just read; the caller
        reads each one's value before asking for the next."""
        while (event := self.next()) is not None and event[0] == "map_key":
            yield event[1]
