"""Drive a running Open WebUI 0.12.4 through its HTTP + Socket.IO API the way its
web frontend does, to create sample conversations and export them.

Run with the Open WebUI venv's Python (it has httpx and python-socketio):
    ~/owui-venv/bin/python drive_owui.py http://127.0.0.1:8089 http://127.0.0.1:11500 OUTDIR

The request bodies mirror src/lib/components/chat/Chat.svelte (submitPrompt,
sendMessage, sendMessageSocket, regenerateResponse), Messages.svelte (editMessage),
Sidebar/ChatItem.svelte (rename), Settings/DataControls.svelte (Export All Chats),
Navbar/Menu.svelte (single-chat "Export chat (.json)") and admin/Settings/Database.svelte
(admin "Export All Chats (All Users)") from the 0.12.4 frontend source maps.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import httpx
import socketio

BASE, SIM, OUT = sys.argv[1], sys.argv[2], Path(sys.argv[3])
OUT.mkdir(parents=True, exist_ok=True)

ADMIN = {"name": "Ada Admin", "email": "ada@example.com", "password": "sample-password-123"}
CHAT_MODEL = "llama-demo:3b"
THINK_MODEL = "qwen3-demo:8b"


class Client:
    def __init__(self) -> None:
        self.http = httpx.AsyncClient(base_url=BASE, timeout=60)
        self.sio = socketio.AsyncClient(reconnection=False)
        self.token = ""
        self.user: dict = {}
        self.models: dict[str, dict] = {}
        self.events: list[dict] = []
        self.inactive: dict[str, asyncio.Event] = {}

    def h(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    async def signup(self) -> None:
        r = await self.http.post("/api/v1/auths/signup", json=ADMIN)
        if r.status_code != 200:  # already signed up on an earlier run
            r = await self.http.post(
                "/api/v1/auths/signin",
                json={"email": ADMIN["email"], "password": ADMIN["password"]},
            )
        r.raise_for_status()
        data = r.json()
        self.token = data["token"]
        self.user = data
        print("user", data["id"], data["role"])

    async def load_models(self) -> None:
        r = await self.http.get("/api/models", headers=self.h())
        r.raise_for_status()
        self.models = {m["id"]: m for m in r.json()["data"]}
        print("models", list(self.models))

    async def connect_socket(self) -> None:
        @self.sio.on("events")
        async def on_event(data):  # noqa: ANN001
            self.events.append(data)
            inner = (data or {}).get("data") or {}
            if inner.get("type") == "chat:active" and not (inner.get("data") or {}).get("active"):
                ev = self.inactive.setdefault(data.get("chat_id"), asyncio.Event())
                ev.set()

        await self.sio.connect(
            BASE,
            socketio_path="/ws/socket.io",
            transports=["websocket"],
            auth={"token": self.token},
        )
        await self.sio.emit("user-join", {"auth": {"token": self.token}})
        await asyncio.sleep(0.5)
        print("socket sid", self.sio.get_sid("/"))

    # --- chats -------------------------------------------------------------

    async def get_chat(self, chat_id: str) -> dict:
        r = await self.http.get(f"/api/v1/chats/{chat_id}", headers=self.h())
        r.raise_for_status()
        return r.json()

    def prompt_variables(self) -> dict:
        now = datetime.now(timezone.utc)
        return {
            "{{USER_NAME}}": self.user["name"],
            "{{USER_EMAIL}}": self.user["email"],
            "{{USER_LOCATION}}": "Unknown",
            "{{CURRENT_DATETIME}}": now.strftime("%Y-%m-%d %H:%M:%S"),
            "{{CURRENT_DATE}}": now.strftime("%Y-%m-%d"),
            "{{CURRENT_TIME}}": now.strftime("%I:%M:%S %p"),
            "{{CURRENT_WEEKDAY}}": now.strftime("%A"),
            "{{CURRENT_TIMEZONE}}": "UTC",
            "{{USER_LANGUAGE}}": "en-US",
        }

    async def send(
        self,
        chat_id: str | None,
        model: str,
        user_message: dict,
        *,
        first_turn: bool,
    ) -> tuple[str, str]:
        """sendMessage + sendMessageSocket: POST /api/chat/completions.

        ``user_message`` is the user message as the frontend holds it (new, or an
        existing one when regenerating). Returns (chat_id, assistant_message_id)
        once the generation and its background tasks are over.
        """
        assistant_id = str(uuid.uuid4())
        body = {
            "stream": True,
            "model": model,
            "params": {"model_controls": {}},
            "tool_ids": [],
            "tool_servers": [],
            "features": {
                "voice": False,
                "image_generation": False,
                "code_interpreter": False,
                "web_search": False,
            },
            "variables": self.prompt_variables(),
            "model_item": self.models[model],
            "session_id": self.sio.get_sid("/"),
            "id": assistant_id,
            "message_ids": [{"model_id": model, "message_id": assistant_id, "modelIdx": 0}],
            "parent_id": user_message.get("parentId"),
            "user_message": user_message,
            "background_tasks": (
                {"title_generation": True, "tags_generation": True, "follow_up_generation": True}
                if first_turn
                else {"follow_up_generation": True}
            ),
        }
        if chat_id:
            body["chat_id"] = chat_id
        r = await self.http.post("/api/chat/completions", json=body, headers=self.h())
        r.raise_for_status()
        res = r.json()
        cid = res["chat_id"]
        ev = self.inactive.setdefault(cid, asyncio.Event())
        # wait for the generation (and title/tags/follow-ups) to finish
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                await asyncio.wait_for(ev.wait(), timeout=2)
            except asyncio.TimeoutError:
                pass
            chat = await self.get_chat(cid)
            msg = chat["chat"]["history"]["messages"].get(assistant_id)
            if ev.is_set() and msg and msg.get("done"):
                break
        else:
            raise RuntimeError(f"no completion for {assistant_id}")
        ev.clear()
        await asyncio.sleep(1.0)  # let late background updates land
        print("  completion", cid, assistant_id, "->", res)
        return cid, assistant_id

    def new_user_message(self, parent_id: str | None, content: str, models: list[str]) -> dict:
        """submitPrompt / editMessage(submit=True): the user message object."""
        return {
            "id": str(uuid.uuid4()),
            "parentId": parent_id,
            "childrenIds": [],
            "role": "user",
            "user": {"id": self.user["id"], "name": self.user["name"]},
            "user_id": self.user["id"],
            "content": content,
            "timestamp": int(time.time()),
            "models": models,
        }

    async def turn(self, chat_id, model, parent_id, content, *, first_turn=False):
        um = self.new_user_message(parent_id, content, [model])
        cid, aid = await self.send(chat_id, model, um, first_turn=first_turn)
        return cid, um["id"], aid

    async def regenerate(self, chat_id: str, model: str, user_message_id: str) -> str:
        chat = await self.get_chat(chat_id)
        um = chat["chat"]["history"]["messages"][user_message_id]
        _, aid = await self.send(chat_id, model, um, first_turn=False)
        return aid

    async def save_chat(self, chat_id: str, patch: dict) -> dict:
        """updateChatById: POST /api/v1/chats/{id} with {chat: patch}."""
        r = await self.http.post(f"/api/v1/chats/{chat_id}", json={"chat": patch}, headers=self.h())
        r.raise_for_status()
        return r.json()

    async def sim_config(self, changes: dict) -> None:
        async with httpx.AsyncClient() as c:
            r = await c.post(f"{SIM}/_sim/config", json=changes)
            r.raise_for_status()


async def main() -> None:
    c = Client()
    await c.signup()
    await c.load_models()
    await c.connect_socket()
    ids: dict[str, str] = {}

    # (a) simple 2-turn English conversation
    cid, u1, a1 = await c.turn(None, CHAT_MODEL, None, "What is the capital of France?", first_turn=True)
    await c.turn(cid, CHAT_MODEL, a1, "And roughly how many people live there?")
    ids["english"] = cid

    # (b) Chinese conversation (simulator answers with fixed Chinese text)
    await c.sim_config({"answer_text": "巴黎是法国的首都，也是法国最大的城市。 它位于塞纳河畔，以埃菲尔铁塔和卢浮宫闻名。"})
    cid, u1, a1 = await c.turn(None, CHAT_MODEL, None, "法国的首都是哪里？", first_turn=True)
    await c.sim_config({"answer_text": "巴黎市区人口约两百一十万， 大巴黎地区超过一千二百万人。 😊"})
    await c.turn(cid, CHAT_MODEL, a1, "那里大概有多少人口？")
    await c.sim_config({"answer_text": None})
    ids["chinese"] = cid

    # (c) tree: regenerated answer (2 assistant siblings) + edited question (2 user siblings)
    cid, q1, a1a = await c.turn(None, CHAT_MODEL, None, "Explain what a binary tree is.", first_turn=True)
    a1b = await c.regenerate(cid, CHAT_MODEL, q1)  # regenerateResponse: sibling of a1a
    _, q2, a2 = await c.turn(cid, CHAT_MODEL, a1b, "Give me an example.")
    # editMessage(q2, submit=True): a new user message with q2's parent, i.e. a branch
    _, q2b, a2b = await c.turn(cid, CHAT_MODEL, a1b, "Give me an example in Python, please.")
    ids["branches"] = cid
    print("  tree ids", dict(q1=q1, a1a=a1a, a1b=a1b, q2=q2, a2=a2, q2b=q2b, a2b=a2b))

    # (d) thinking model
    cid, _, _ = await c.turn(None, THINK_MODEL, None, "Why is the sky blue? Keep it short.", first_turn=True)
    ids["thinking"] = cid

    # (e) renamed chat (Sidebar ChatItem editChatTitle -> updateChatById {title}) + a tag
    cid, _, _ = await c.turn(None, CHAT_MODEL, None, "Suggest a name for a grey cat.", first_turn=True)
    await c.save_chat(cid, {"title": "Cat names (renamed)"})
    r = await c.http.post(f"/api/v1/chats/{cid}/tags", json={"name": "pets"}, headers=c.h())
    r.raise_for_status()
    ids["renamed"] = cid

    # (f) pinned chat and archived chat
    cid, _, _ = await c.turn(None, CHAT_MODEL, None, "Remind me what HTTP 418 means.", first_turn=True)
    (await c.http.post(f"/api/v1/chats/{cid}/pin", headers=c.h())).raise_for_status()
    ids["pinned"] = cid
    cid, _, _ = await c.turn(None, CHAT_MODEL, None, "Write a haiku about autumn.", first_turn=True)
    (await c.http.post(f"/api/v1/chats/{cid}/archive", headers=c.h())).raise_for_status()
    ids["archived"] = cid

    await c.sio.disconnect()
    (OUT / ".chat-ids.json").write_text(json.dumps(ids, indent=2))
    print(json.dumps(ids, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
