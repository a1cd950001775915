"""Complete lines out of a byte stream, for the line-based wire formats."""

from __future__ import annotations


def complete_lines(buffer: bytearray, data: bytes) -> list[bytes]:
    """Return the `\\n`-terminated lines `data` completes (without the `\\n`);
    keep the unfinished rest in `buffer`.

    Lines are split as bytes, so a UTF-8 character split across reads is whole
    by the time its line is decoded.
    """
    lines = data.split(b"\n")
    if len(lines) == 1:
        buffer += data
        return []
    if buffer:
        buffer += lines[0]
        lines[0] = bytes(buffer)
        buffer.clear()
    tail = lines.pop()
    if tail:
        buffer += tail
    return lines
