"""The floor of the browser benchmark: a bare WebSocket relay.

No database, no Django, no rendering: a page with a text box; Enter sends the
text over a WebSocket; the relay asks the model server (Ollama's ``/api/chat``,
streamed) and writes one WebSocket message per line it reads; the page appends
each piece to a text node the moment it arrives. What chatsite adds on top of
this (storing, admission, markdown, the frame scheduler) is the difference
between its rows and the floor's in one run of ``bench/browser/``.

The page speaks the same frames as chatsite (``{"type": "content", "delta"}``)
and has the same landmarks (``#composer-input``, ``#messages``,
``article.assistant .answer``, ``data-status``, ``#chat[data-connected]``), so the
benchmark's page-side instruments measure both alike.

Run: ``python -m bench.floor --port P --upstream http://127.0.0.1:S --model M``.
"""

from __future__ import annotations

import argparse
import json
import socket

from aiohttp import ClientSession, ClientTimeout, TCPConnector, WSMsgType, web

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>floor</title></head>
<body><main id="chat">
<section id="messages"></section>
<textarea id="composer-input"></textarea>
</main><script src="/floor.js"></script></body></html>
"""

SCRIPT = """
const chat = document.getElementById("chat");
const messages = document.getElementById("messages");
const input = document.getElementById("composer-input");
const socket = new WebSocket(`ws://${location.host}/ws`);
let article = null;
let text = null;
socket.addEventListener("open", () => { chat.dataset.connected = "1"; });
socket.addEventListener("message", (event) => {
  const frame = JSON.parse(event.data);
  if (frame.type === "content") text.appendData(frame.delta);
  else if (frame.type === "done") article.dataset.status = "done";
});
input.addEventListener("keydown", (event) => {
  if (event.key !== "Enter") return;
  event.preventDefault();
  article = document.createElement("article");
  article.className = "assistant";
  article.dataset.status = "streaming";
  const answer = document.createElement("div");
  answer.className = "answer";
  text = document.createTextNode("");
  answer.append(text);
  article.append(answer);
  messages.append(article);
  socket.send(JSON.stringify({ text: input.value }));
  input.value = "";
});
"""


def make_app(upstream: str, model: str) -> web.Application:
    async def page(_: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def script(_: web.Request) -> web.Response:
        return web.Response(text=SCRIPT, content_type="application/javascript")

    async def relay(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        http: ClientSession = request.app["http"]
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                break
            body = {
                "model": model,
                "stream": True,
                "messages": [{"role": "user", "content": message.json()["text"]}],
            }
            async with http.post(f"{upstream}/api/chat", json=body) as response:
                async for line in response.content:
                    chunk = json.loads(line)
                    delta = chunk.get("message", {}).get("content", "")
                    if delta:
                        await ws.send_str(
                            json.dumps({"type": "content", "delta": delta})
                        )
            await ws.send_str('{"type": "done"}')
        return ws

    async def session(app: web.Application):  # type: ignore[no-untyped-def]
        async with ClientSession(
            connector=TCPConnector(limit=0), timeout=ClientTimeout(total=None)
        ) as http:
            app["http"] = http
            yield

    app = web.Application()
    app.cleanup_ctx.append(session)
    app.add_routes(
        [web.get("/", page), web.get("/floor.js", script), web.get("/ws", relay)]
    )
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    web.run_app(
        make_app(args.upstream.rstrip("/"), args.model),
        host="127.0.0.1",
        port=args.port,
        print=None,
    )


if __name__ == "__main__":
    main()
