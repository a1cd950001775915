"""A turn with tools: what the engine adds between a tool's result and the
next model call, and per token of every step the turn streams.

The simulator (the OpenAI-compatible side with a tool parser, as vLLM: a
call's arguments stream a token at a time) is scripted to call a tool three
times in one turn, one call a reply (`tool_script`, docs/tools.md "The demo
model's tools"). Two sources run the call: `stamp`, registered inside the
Daphne process, answers at once (the engine alone); `bench__echo` is the
`echo` of our MCP server (tests/tools/mcp/tool_server.py) over stdio (the
realistic path). Either way the result's text ends with the wall-clock time
it was in the engine's hands (`serve`), and the simulator logs when each
request arrived: the next request's arrival minus that stamp is the gap.

Per token, each round's thinking, the call's opening and its arguments, and
the answer's content are timed from the simulator's send stamp to the frame
on the socket, against the same requests read from the simulator directly
(each of the turn's requests sent again as chatsite sent it): the added
latency, as the relay bench measures it (bench/relay/). A turn with the
tools switched off on the same site is the plain reference.

`serve` starts the site with the sources, `site` sets it up, `turns` asks and
times one turn, `report` makes the rows and prints them; `python -m
bench.tools` runs it.
"""
