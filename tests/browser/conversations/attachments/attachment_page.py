"""The composer's attachments in the page: files handed over by a paste, a
drop and the file dialog, their chips, the uploads the page makes."""

from __future__ import annotations

import base64
import hashlib

MB = 1024 * 1024

# A File built in the page from base64 bytes, then handed over as a user's
# paste (a ClipboardEvent carrying it, as a screenshot tool leaves it) or drop
# (dragenter, dragover, then drop with a DataTransfer), at the given element.
HAND_OVER = """
([how, selector, b64, name, type]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type }));
  const target = document.querySelector(selector);
  const init = { bubbles: true, cancelable: true };
  if (how === "paste") {
    const event = new ClipboardEvent("paste", { ...init, clipboardData: data });
    return target.dispatchEvent(event);
  }
  target.dispatchEvent(new DragEvent("dragenter", { ...init, dataTransfer: data }));
  target.dispatchEvent(new DragEvent("dragover", { ...init, dataTransfer: data }));
  const dropping = document.getElementById("chat").dataset.dropping === "1";
  const drop = new DragEvent("drop", { ...init, dataTransfer: data });
  target.dispatchEvent(drop);
  return { dropping, taken: drop.defaultPrevented };
}
"""


def paste(page, raw: bytes, name: str, type: str) -> bool:
    """True when the page took the paste (prevented the default)."""
    payload = ["paste", "#composer-input", base64.b64encode(raw).decode(), name, type]
    return not page.evaluate(HAND_OVER, payload)


def drop(page, raw: bytes, name: str, type: str, on: str = "#messages") -> dict:
    """Whether the conversation showed where the file would land (`dropping`)
    and kept the browser from opening the file in place of the page (`taken`)."""
    payload = ["drop", on, base64.b64encode(raw).decode(), name, type]
    return page.evaluate(HAND_OVER, payload)


def a_file(name: str, type: str, raw: bytes) -> dict:
    return {"name": name, "mimeType": type, "buffer": raw}


def choose(page, *files: dict) -> None:
    """Files chosen in the attach button's dialog."""
    page.set_input_files("#attach-input", files=list(files))


def uploads_to(page) -> list[str]:
    """The methods of the requests the page makes to /attachments/…, as made."""
    made: list[str] = []
    page.on(
        "request",
        lambda request: (
            made.append(request.method) if "/attachments/" in request.url else None
        ),
    )
    return made


def chip(page, name: str):
    return page.locator(".file-chip", has_text=name)


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()
