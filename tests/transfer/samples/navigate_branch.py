"""Second step: in the branch chat, switch branches with the "<" / ">" arrows as a
person would (Chat.svelte showMessage -> saveChatHandler -> POST /api/v1/chats/{id}
with {models, history, messages: createMessagesList(history, currentId), files}):
first to the original question q2 ("Give me an example."), then back to the edited
one q2b, so the chat ends on q2b's answer and chat.messages is rewritten to that path.

    ~/owui-venv/bin/python navigate_branch.py http://127.0.0.1:8089 OUTDIR
"""

import json
import sys
from pathlib import Path

import httpx

BASE, OUT = sys.argv[1], Path(sys.argv[2])
ids = json.loads((OUT / ".chat-ids.json").read_text())
http = httpx.Client(base_url=BASE, timeout=30)
tok = http.post(
    "/api/v1/auths/signin",
    json={"email": "ada@example.com", "password": "sample-password-123"},
).json()["token"]
H = {"Authorization": f"Bearer {tok}"}
cid = ids["branches"]


def messages_list(history, mid):
    out = []
    while mid is not None and mid in history["messages"]:
        m = history["messages"][mid]
        out.append(m)
        mid = m["parentId"]
    return out[::-1]


def deepest(history, mid):
    seen = {mid}
    kids = history["messages"][mid]["childrenIds"]
    while kids:
        mid = kids[-1]
        if mid in seen:
            break
        seen.add(mid)
        kids = history["messages"][mid]["childrenIds"]
    return mid


def show_message(target_id):
    chat = http.get(f"/api/v1/chats/{cid}", headers=H).json()
    history = chat["chat"]["history"]
    history["currentId"] = deepest(history, target_id)
    body = {
        "chat": {
            "models": chat["chat"]["models"],
            "history": history,
            "messages": messages_list(history, history["currentId"]),
            "files": chat["chat"].get("files", []),
        }
    }
    r = http.post(f"/api/v1/chats/{cid}", json=body, headers=H)
    r.raise_for_status()
    print("currentId ->", r.json()["chat"]["history"]["currentId"])


chat = http.get(f"/api/v1/chats/{cid}", headers=H).json()
msgs = chat["chat"]["history"]["messages"]
# the two user siblings under the second assistant answer of q1
q2, q2b = [m["id"] for m in msgs.values() if m["role"] == "user" and m["parentId"] is not None]
q2, q2b = sorted([q2, q2b], key=lambda i: msgs[msgs[i]["parentId"]]["childrenIds"].index(i))
show_message(q2)
show_message(q2b)
