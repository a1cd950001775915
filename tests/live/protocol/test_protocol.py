"""The socket protocol has three descriptions that must agree: the frame types
(`chat.live.protocol.frames`, the `Literal` of each TypedDict's `type`), the tables
of `docs/protocol.md` ("The WebSocket protocol") and the browser's handlers table
(`static/chat/socket.js`). The channel-layer events
(`chat.live.protocol.channel_events`) are
checked against the consumer methods channels hands them to."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import UnionType
from typing import Any, NotRequired, get_args, get_origin, get_type_hints

import pytest

from chat.live.protocol import channel_events, frames
from chat.live.protocol.share_frames import READ_ONLY_FRAMES, ViewerFrame
from chat.sockets import client_frames
from chat.sockets.consumers import ChatConsumer
from chat.sockets.share_consumers import ShareConsumer

ROOT = Path(__file__).resolve().parents[3]
PROTOCOL = ROOT / "docs" / "protocol.md"
SOCKET_JS = ROOT / "static" / "chat" / "socket.js"

HANDLERS_START = "export const handlers = {"
HANDLERS_END = "};"
# One entry a line: `start: onStart,`, `"start": onStart,` or `start,`.
HANDLER_ENTRY = re.compile(
    r"""^\s*(?:"(?P<quoted>[^"]+)"|(?P<bare>[A-Za-z_$][\w$]*))"""
    r"""(?:\s*:\s*[A-Za-z_$][\w$.]*)?\s*,\s*(?://.*)?$"""
)


def literal_types(union: UnionType | type) -> set[str]:
    """The values of the `type` field over the TypedDicts of `union` (or of
    one TypedDict)."""
    types: set[str] = set()
    for typed_dict in get_args(union) or (union,):
        types.update(get_args(get_type_hints(typed_dict)["type"]))
    return types


def protocol_table_types(heading: str) -> list[str]:
    """The frame types of docs/protocol.md's table right after the line `heading`,
    in the order of its rows."""
    lines = PROTOCOL.read_text(encoding="utf-8").splitlines()
    assert heading in lines, f"docs/protocol.md has no line {heading!r}"
    rows = []
    for line in lines[lines.index(heading) + 1 :]:
        if not line.strip():
            if rows:
                break
            continue
        if not line.startswith("|"):
            break
        rows.append(line)
    types = []
    for row in rows[2:]:  # after the header and its rule
        found = re.match(r'\| `\{"type":"([^"]+)"', row)
        assert found, f"docs/protocol.md: a frame row must start with its JSON: {row!r}"
        types.append(found.group(1))
    return types


# Another module's table spread into it: `...toolHandlers,` (the table
# `export const toolHandlers = {` of a module of static/chat/, same format).
SPREAD_ENTRY = re.compile(r"^\s*\.\.\.(?P<table>[A-Za-z_$][\w$]*)\s*,\s*$")


def spread_table(table: str) -> list[str]:
    """The keys of the table `table` exported by a module of static/chat/."""
    start = f"export const {table} = {{"
    for path in sorted(SOCKET_JS.parent.glob("*.js")):
        source = path.read_text(encoding="utf-8")
        if start in [line.strip() for line in source.splitlines()]:
            return handler_types(source, path.name, start)
    raise ValueError(f"no module of static/chat/ has a line {start!r}")


def handler_types(
    source: str, name: str = "socket.js", opening: str = HANDLERS_START
) -> list[str]:
    """The keys of the handlers table: the lines between `export const handlers
    = {` and `};`, one entry a line (blank lines and // comments allowed), and
    the keys of the tables spread into it."""
    lines = [line.rstrip() for line in source.splitlines()]
    if opening not in [line.strip() for line in lines]:
        raise ValueError(f"{name} has no line {opening!r}")
    start = [line.strip() for line in lines].index(opening)
    keys = []
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        stripped = line.strip()
        if stripped == HANDLERS_END:
            return keys
        if not stripped or stripped.startswith("//"):
            continue
        spread = SPREAD_ENTRY.match(line)
        if spread is not None:
            keys.extend(spread_table(spread.group("table")))
            continue
        entry = HANDLER_ENTRY.match(line)
        if entry is None:
            raise ValueError(
                f"{name}:{number}: {stripped!r} is not one handler entry "
                '(`type: function,` or `"type": function,`, one a line)'
            )
        keys.append(entry.group("quoted") or entry.group("bare"))
    raise ValueError(f"{name}: the handlers table has no closing line {HANDLERS_END!r}")


SERVER_TYPES = literal_types(frames.ServerFrame)


def test_the_server_frame_types_are_the_documented_ones():
    assert {
        "message",
        "start",
        "queued",
        "thinking",
        "content",
        "done",
        "error",
        "conversation",
        "removed",
        "model",
        "tool_call",
        "tool_args",
        "tool_run",
        "tool_result",
        "round",
    } == SERVER_TYPES


def test_the_protocol_tables_list_every_frame_type_once():
    server = protocol_table_types("Server → client:")
    assert sorted(server) == sorted(SERVER_TYPES)
    client = protocol_table_types("Client → server:")
    assert sorted(client) == sorted(literal_types(client_frames.ClientFrame))


def test_the_browser_handles_every_server_frame_type():
    if not SOCKET_JS.exists():
        pytest.fail(
            f"{SOCKET_JS.relative_to(ROOT)} does not exist: the owner's page must "
            f"hold its handlers table there, from a line {HANDLERS_START!r} to a "
            f"line {HANDLERS_END!r}, one `type: function,` entry a line"
        )
    handled = handler_types(SOCKET_JS.read_text(encoding="utf-8"))
    assert len(handled) == len(set(handled)), f"a type handled twice: {handled}"
    assert set(handled) == SERVER_TYPES


def test_the_handlers_parser_reads_the_agreed_format():
    source = """
import { show } from "./live.js";

export const handlers = {
  conversation: onConversation,
  "message": onMessage,
  // the answer's text
  thinking: live.thinking,
  removed,

};
const other = { x: 1 };
"""
    assert handler_types(source) == ["conversation", "message", "thinking", "removed"]


@pytest.mark.parametrize(
    "source",
    [
        "const handlers = {\n  start: onStart,\n};\n",  # not exported
        "export const handlers = {\n  start(frame) {\n  },\n};\n",  # inline
        "export const handlers = {\n  start: onStart,\n",  # never closed
        "export const handlers = {\n  start: onStart, done: onDone,\n};\n",
    ],
)
def test_the_handlers_parser_refuses_anything_else(source):
    with pytest.raises(ValueError):
        handler_types(source)


def test_a_viewer_gets_only_server_frame_types():
    assert READ_ONLY_FRAMES <= SERVER_TYPES
    assert literal_types(ViewerFrame) == SERVER_TYPES


def required_and_optional(typed_dict: Any) -> tuple[set[str], set[str]]:
    # From the hints: with postponed annotations, a TypedDict's own
    # `__optional_keys__` does not see `NotRequired`.
    hints = get_type_hints(typed_dict, include_extras=True)
    optional = {key for key, hint in hints.items() if get_origin(hint) is NotRequired}
    return set(hints) - optional, optional


@pytest.mark.parametrize(
    ("frame", "typed_dict", "wire"),
    [
        (
            frames.start(5, "qwen3:14b", None),
            frames.StartFrame,
            '{"type": "start", "message_id": 5, "model": "qwen3:14b", '
            '"thinking": null}',
        ),
        (
            frames.queued(5, 2),
            frames.QueuedFrame,
            '{"type": "queued", "message_id": 5, "position": 2}',
        ),
        (
            frames.delta("thinking", 5, "hm"),
            frames.DeltaFrame,
            '{"type": "thinking", "message_id": 5, "delta": "hm"}',
        ),
        (
            frames.error(None, "busy", "Wait."),
            frames.ErrorFrame,
            '{"type": "error", "message_id": null, "code": "busy", "detail": "Wait."}',
        ),
        (
            frames.model_state("loading", "m"),
            frames.ModelFrame,
            '{"type": "model", "state": "loading", "model": "m"}',
        ),
        (
            frames.model_state("ready", "m", load_ms=None),
            frames.ModelFrame,
            '{"type": "model", "state": "ready", "model": "m", "load_ms": null}',
        ),
        (
            frames.model_state("error", "m", detail="gone"),
            frames.ModelFrame,
            '{"type": "model", "state": "error", "model": "m", "detail": "gone"}',
        ),
        (
            frames.removed([3, 4]),
            frames.RemovedFrame,
            '{"type": "removed", "message_ids": [3, 4]}',
        ),
    ],
)
def test_a_builder_returns_its_type_as_sent_before(frame, typed_dict, wire):
    required, optional = required_and_optional(typed_dict)
    assert required <= set(frame) <= required | optional
    assert frame["type"] in literal_types(typed_dict)
    assert json.dumps(frame, ensure_ascii=False) == wire


# Channel-layer events: channels hands `a.b` to the consumer's method `a_b`.
DISPATCHED = {
    "chat.frame": (ChatConsumer, ShareConsumer),
    "chat.delta": (ChatConsumer, ShareConsumer),
    "chat.catchup": (ChatConsumer, ShareConsumer),
    "chat.steps": (ChatConsumer, ShareConsumer),
    "session.end": (ChatConsumer,),
    "session.check": (ChatConsumer,),
    "share.gone": (ShareConsumer,),
}
# Read by their receivers directly: the runner's channel, the admission waiter
# and the health check's own channel.
RECEIVED = {
    "generation.stop",
    "generation.resume",
    "generation.approve",
    "admission.wake",
    "health.ping",
}


def test_every_event_type_has_a_receiver():
    assert literal_types(channel_events.ChannelEvent) == set(DISPATCHED) | RECEIVED


@pytest.mark.parametrize(("kind", "consumers"), DISPATCHED.items())
def test_a_consumer_has_a_handler_for_its_events(kind, consumers):
    for consumer in consumers:
        assert callable(getattr(consumer, kind.replace(".", "_"), None)), consumer


def test_the_event_builders_return_their_types():
    frame = frames.removed([1])
    event = channel_events.frame_event("runner-1", frame)
    assert event == {"type": "chat.frame", "origin": "runner-1", "frames": [frame]}
    assert channel_events.ADMISSION_WAKE == {"type": "admission.wake"}
    assert channel_events.conversation_group(7) == "chat.7"
    assert channel_events.generation_group(7) == "generation.7"
    assert channel_events.user_group(7) == "user-7"


CHAT = ROOT / "chat"


def sources(*allowed: str) -> list[tuple[str, str]]:
    """(path, text) of every module of `chat` but the `allowed` ones."""
    return [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
        for path in sorted(CHAT.rglob("*.py"))
        if str(path.relative_to(ROOT)) not in allowed and "migrations" not in path.parts
    ]


def test_server_frames_are_built_only_by_the_protocol_modules():
    types = "|".join(sorted(SERVER_TYPES))
    literal = re.compile(
        rf"""["']type["']\s*:\s*["']({types})["']|type=["']({types})["']"""
    )
    builders = (
        "chat/live/protocol/frames.py",
        "chat/live/protocol/share_frames.py",
        "chat/live/protocol/tool_frames.py",
    )
    found = [path for path, text in sources(*builders) if literal.search(text)]
    assert found == [], "build server frames with chat.live.protocol.frames"


def test_group_names_are_made_only_in_events():
    # The share link's group is named beside the model (models import nothing
    # from chat.live): see chat.live.protocol.channel_events.
    name = re.compile(r"""f["'](chat\.|generation\.|user-|share\.)\{""")
    named = ("chat/live/protocol/channel_events.py", "chat/models/sharing.py")
    found = [path for path, text in sources(*named) if name.search(text)]
    assert found == [], "name channel-layer groups in chat.live.protocol.channel_events"
