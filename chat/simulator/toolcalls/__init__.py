"""The simulator's tool calling, in both dialects and Qwen3's inline form.

When a reply calls tools (`choosing`), in this order:

1. Never when the request offers no tools, or says `tool_choice: "none"`.
2. The script, when the config has one (`tool_script`): the calls of the
   N-th reply since the last user message are the script's N-th round (a
   list of `{"name", "arguments", "id"?}`; `arguments` an object, or JSON
   text written as given, so it may be malformed; the name need not be
   offered). After the last round the model answers, unless `tool_loop`
   repeats that round forever.
3. `tool_choice` naming a function (OpenAI side): that function, every reply.
4. The rule: in the first reply after the question, every offered tool the
   last user message names as a whole word (case aside), in the order it
   names them: the tool's full name, or for a name joining a server's and a
   tool's (`everything__echo`) the tool's own (`echo`). "Use get_weather for
   Paris", "search the web... with web__search". Several named, several calls
   in one reply.
5. `tool_choice: "required"`: the named tools, else the first offered, every
   reply.

A call's arguments come from the tool's JSON Schema (`arguments`): its
required properties (or its first, when none is required), numbers from the
question in order, a URL from it, a place named after "in", an enum value it
names, a default, else the question without its mention of the tool.

A reply with calls thinks first (when thinking is on: a sentence naming the
calls, or `thinking_text`), writes no content, then the calls, paced like
text at `tps`:

- Ollama (`/api/chat`, a model with the "tools" capability, else 400 as
  Ollama): each call whole in one chunk, `message.tool_calls: [{"id":
  "call_…", "function": {"index", "name", "arguments": {...}}}]`, sent when
  the model has written its last token; `done_reason` "stop". A call whose
  arguments are not a JSON object goes out as content (the inline text), as
  Ollama's parser passes on what it cannot read.
- OpenAI-compatible, `tool_format` "parser" (vLLM with a tool parser):
  `delta.tool_calls` opening with `{"index", "id": "chatcmpl-tool-…",
  "type": "function", "function": {"name", "arguments": ""}}`, then the
  arguments' JSON a token at a time; `finish_reason` "tool_calls"; not
  streamed, `message.tool_calls` with the arguments as JSON text.
- OpenAI-compatible, `tool_format` "tags" (a server without a parser; a
  request's `sim_tool_format` overrides the config): the content holds
  `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>` a token at a
  time; `finish_reason` "stop".

The reply after the results (tool messages after the last reply's calls:
Ollama's `tool_name`/`content`, OpenAI's `tool_call_id`/`content`) quotes
each result (up to `QUOTE_CHARS`) and calls nothing, unless scripted or
forced by `tool_choice`. Past calls and results in the history are checked
as each server checks them (`dialects`).
"""
