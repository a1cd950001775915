"""The settings of the tools a model calls mid-answer (chat.tools, the turn
of several steps in chat.live.engine.turn) and of MCP servers
(chat.tools.mcp; docs/tools.md), read by chatsite/settings.py, with their
environment overrides."""

from __future__ import annotations

from chatsite.env import env_int

TOOLS_MAX_ROUNDS = env_int("TOOLS_MAX_ROUNDS", 8, minimum=1)
TOOL_CALL_TIMEOUT = env_int("TOOL_CALL_TIMEOUT", 60, minimum=1)
TOOL_RESULT_MAX_CHARS = env_int("TOOL_RESULT_MAX_CHARS", 20000, minimum=200)
# A turn's model slot goes back to the line once its tools have run this many
# ms (chat.live.engine.turn.slots): a quicker tool keeps it, and the next
# model call goes out without a trip to the database (python -m bench.tools).
TOOL_SLOT_GRACE_MS = env_int("TOOL_SLOT_GRACE_MS", 200, minimum=0)

# An MCP server's tool list is asked again after this many seconds.
MCP_TOOLS_TTL = env_int("MCP_TOOLS_TTL", 60, minimum=0)
# The most an MCP server may send for one message (a tool's result before it
# is cut to TOOL_RESULT_MAX_CHARS): a bigger one fails the call unread.
MCP_MESSAGE_MAX_BYTES = env_int("MCP_MESSAGE_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)
# A message over this many bytes is parsed and cut in a worker process
# (chat.work), within these seconds and this memory (chat.tools.mcp.messages).
MCP_LARGE_MESSAGE_BYTES = env_int(
    "MCP_LARGE_MESSAGE_BYTES", 1024 * 1024, minimum=64 * 1024
)
MCP_PARSE_SECONDS = env_int("MCP_PARSE_SECONDS", 30, minimum=1)
MCP_PARSE_MEMORY = env_int(
    "MCP_PARSE_MEMORY", 1024 * 1024 * 1024, minimum=64 * 1024 * 1024
)
# Initialised Streamable HTTP sessions kept by a site process (by server and
# credential), and how long one is kept unused (chat.tools.mcp.pool).
MCP_HTTP_POOL_SIZE = env_int("MCP_HTTP_POOL_SIZE", 16, minimum=0)
MCP_HTTP_IDLE_SECONDS = env_int("MCP_HTTP_IDLE_SECONDS", 120, minimum=1)
