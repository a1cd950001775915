"""Server-sent events, decoded incrementally from a byte stream.

OpenAI-compatible servers stream `data: <json>` events separated by blank lines.
`SSEDecoder.feed` takes the bytes of each network read and returns the `data`
of every event those bytes complete, so a line or a UTF-8 character split across
reads is fine (lines are decoded only once complete). Lines end with `\\n` or
`\\r\\n`; comment lines (`: ping`) and the `event:`, `id:` and `retry:` fields
are ignored; several `data:` lines of one event are joined with `\\n`.
"""

from __future__ import annotations

from chat.upstream.events import UpstreamError
from chat.upstream.lines import complete_lines

# The same bound as for Ollama's lines: beyond this a server is misbehaving.
MAX_EVENT_BYTES = 64 * 1024 * 1024


class SSEDecoder:
    __slots__ = ("_buffer", "_data", "_size", "_max")

    def __init__(self, max_event: int = MAX_EVENT_BYTES) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []
        self._size = 0
        self._max = max_event

    def feed(self, data: bytes) -> list[str]:
        """Return the data of the events that `data` completes; keep the rest.

        Raises `UpstreamError("malformed")` if an event grows past `max_event`.
        """
        lines = complete_lines(self._buffer, data)
        events: list[str] = []
        for line in lines:
            self._line(line, events)
        self._check_size(self._size + len(self._buffer))
        return events

    def close(self) -> list[str]:
        """Return the data of a last event the stream ended without a blank line."""
        events: list[str] = []
        if self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._line(line, events)
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[str]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            if self._data:
                events.append("\n".join(self._data))
                self._data.clear()
                self._size = 0
            return
        field, colon, value = line.partition(b":")
        if field != b"data":
            return  # a comment (": ping"), event:, id:, retry: or an unknown field
        if colon and value.startswith(b" "):
            value = value[1:]
        self._data.append(value.decode("utf-8", "replace"))
        self._size += len(value)

    def _check_size(self, size: int) -> None:
        if size > self._max:
            limit = self._max // (1024 * 1024)
            detail = f"The model server sent an event longer than {limit} MiB."
            raise UpstreamError("malformed", detail)
