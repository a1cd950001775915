"""MCP tool calls: what a big result costs the caller's event loop, and what
a call over Streamable HTTP costs with and without the pool of sessions.

`python -m bench.mcp [--calls 40]` (run by `make bench`). In this process,
with the site's settings (no database: a call needs none): our own MCP server
(tests/tools/mcp/tool_server.py, run as a command) over Streamable HTTP and
over stdio, called through `chat.tools.mcp` as a turn calls it.

1. **Stall.** A coroutine ticks every millisecond on the calling loop while a
   tool returns a 50 MB result; the table gives the longest gap between two
   ticks and the call's time. Each transport twice in the same run: with the
   message parsed on the MCP thread (`MCP_LARGE_MESSAGE_BYTES` above the
   message: what every message had before, the reference) and parsed and cut
   in a worker process (`chat.work`, the default for messages over 1 MiB).
2. **Per call.** `--calls` calls of `add` over Streamable HTTP, one at a time:
   p50, p90 and max, with a session opened per call (`MCP_HTTP_POOL_SIZE` 0,
   the reference) and with pooled sessions.

Nothing is asserted; budgets are printed as pass/fail. Writes
bench/results/tools.json.

The package: `measure` (the ticker and the calls), `__main__` (the command,
the table)."""
