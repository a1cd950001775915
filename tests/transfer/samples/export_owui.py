"""Third step: export with Open WebUI's own export endpoints, saving bodies byte for byte.

    ~/owui-venv/bin/python export_owui.py http://127.0.0.1:8089 OUTDIR
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


def get_raw(path, accept="application/json"):
    r = http.get(path, headers={**H, "Accept": accept})
    r.raise_for_status()
    print(path, r.status_code, r.headers.get("content-type"), len(r.content))
    return r.content


def js_stringify(value):
    """JSON.stringify as the browser does it (no spaces, non-ASCII kept, 1.0 -> 1)."""

    def norm(v):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return json.dumps(norm(value), ensure_ascii=False, separators=(",", ":"))


# Settings > Data Controls > "Export All Chats": GET /api/v1/chats/all streams NDJSON;
# the frontend (getAllChats) parses each line and saves JSON.stringify(array).
raw = get_raw("/api/v1/chats/all", "application/x-ndjson")
(OUT / "open-webui-all-chats.ndjson").write_bytes(raw)
chats = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
(OUT / "open-webui-all-chats.json").write_text(js_stringify(chats), encoding="utf-8")

# Admin Settings > Database > "Export All Chats (All Users)": GET /api/v1/chats/all/db (JSON array)
(OUT / "open-webui-all-chats-admin-db.json").write_bytes(get_raw("/api/v1/chats/all/db"))

# Settings > Archived Chats > "Export All Archived Chats": GET /api/v1/chats/all/archived
(OUT / "open-webui-archived-chats.json").write_bytes(get_raw("/api/v1/chats/all/archived"))

# Single chat: GET /api/v1/chats/{id}, raw. (The chat menu's "Export chat (.json)"
# saves JSON.stringify([thatObject]), i.e. a one-element array; one example of that too.)
for name, cid in ids.items():
    body = get_raw(f"/api/v1/chats/{cid}")
    (OUT / f"open-webui-chat-{name}.json").write_bytes(body)
    if name == "branches":
        (OUT / f"open-webui-chat-{name}.ui-download.json").write_text(
            js_stringify([json.loads(body)]), encoding="utf-8"
        )
