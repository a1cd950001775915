"""The channel layer's messages (Redis between processes) and every group's name.

Channels hands an event to the consumer method named after its type (`chat.frame`
to `chat_frame`); the runner's own channel reads `generation.*` itself.

Groups:
  chat.<conversation id>        every socket of the conversation, on any process
                                (`chat.frame`, `chat.delta`, `chat.steps`)
  generation.<conversation id>  the runner channel of the process that owns the
                                running answer (`generation.stop`,
                                `generation.resume`, `generation.approve`)
  user-<user id>                the owner's sockets of that user, on any process
                                (`session.end`, `session.check`:
                                `chat.sockets.session_sockets`)
  share.<link id>               a shared link's sockets (`share.gone`): named by
                                `ShareLink.group_name`, since revoking a link (a
                                model method) closes them, and models import
                                nothing from here
  admission                     a channel of each answer waiting for a model slot,
                                on any process (`admission.wake`: look again)

Sent to one channel, never to a group: `chat.catchup` (a resume's answer, to the
socket that asked) and `health.ping` (`chat.ops.health`, to a channel of its own).
"""

from __future__ import annotations

from typing import Final, Literal, NotRequired, TypedDict, final

from chat.live.protocol.frames import (
    ErrorFrame,
    Kind,
    QueuedFrame,
    ServerFrame,
    StartFrame,
)

__all__ = [
    "ADMISSION_GROUP",
    "ADMISSION_WAKE",
    "AdmissionWake",
    "Catchup",
    "CatchupEvent",
    "CatchupRefused",
    "ChannelEvent",
    "DeltaEvent",
    "FrameEvent",
    "GenerationApprove",
    "GenerationResume",
    "GenerationStop",
    "HealthPing",
    "SessionCheck",
    "SessionEnd",
    "ShareGone",
    "StepItem",
    "StepsEvent",
    "TextItem",
    "conversation_group",
    "frame_event",
    "generation_group",
    "user_group",
]


def conversation_group(conversation_id: int) -> str:
    return f"chat.{conversation_id}"


def generation_group(conversation_id: int) -> str:
    return f"generation.{conversation_id}"


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


ADMISSION_GROUP: Final = "admission"


# To a conversation's group.


class FrameEvent(TypedDict):
    """Frames, in order, for every socket of the conversation on other
    processes: several when they go together (an answer's end and its stored
    message), in one send (each send is a few trips to Redis)."""

    type: Literal["chat.frame"]
    origin: str  # the sending runner's id: its own process's sockets skip it
    frames: list[ServerFrame]


class DeltaEvent(TypedDict):
    """New text of a running answer, from code point `start` of its kind."""

    type: Literal["chat.delta"]
    origin: str
    message_id: int
    kind: Kind
    start: int
    text: str
    tokens: int  # how many the text holds (the page's live count)


@final
class TextItem(TypedDict):
    """Text of a turn with tools, from code point `start` of its kind (as a
    `DeltaEvent`'s)."""

    kind: Kind
    start: int
    text: str
    tokens: int


@final
class StepItem(TypedDict):
    """A frame of a turn with tools (`chat.live.protocol.tool_frames`, or a
    `queued` or `error` frame between its model calls).

    `version` is the turn's steps version once the frame's change was made
    (`chat.live.engine.turn.steps.Steps.version`; None for a frame that is
    not a change of the steps): a catch-up that covered it had a version at
    least that high. `since` is the version of the step frame published before
    it, and `at` (thinking, content) the text published before it: a viewer
    that has less missed something, and catches up."""

    frame: ServerFrame
    version: int | None
    since: int
    at: tuple[int, int]


class StepsEvent(TypedDict):
    """A turn with tools' frames and the text around them, in the order they
    came (text never overtakes a step: `chat.live.engine.processes.fanout`)."""

    type: Literal["chat.steps"]
    origin: str
    message_id: int
    items: list[TextItem | StepItem]


def frame_event(origin: str, *frames: ServerFrame) -> FrameEvent:
    return FrameEvent(type="chat.frame", origin=origin, frames=list(frames))


# To a generation group (the process running the answer).


class GenerationStop(TypedDict):
    type: Literal["generation.stop"]
    conversation_id: int


class GenerationResume(TypedDict):
    """Send `reply_to` (a socket's channel) the answer from these offsets."""

    type: Literal["generation.resume"]
    conversation_id: int
    message_id: int
    thinking_offset: int
    offset: int
    reply_to: str
    # A turn with tools: the steps version the socket has (its calls changed
    # since are sent again, wherever they began).
    steps_version: NotRequired[int]


class GenerationApprove(TypedDict):
    """A user's answer to a call awaiting approval; the owning process checks
    that `user_id` is the answer's owner."""

    type: Literal["generation.approve"]
    conversation_id: int
    message_id: int
    call_id: str
    allow: bool
    user_id: int


# The answer to a `generation.resume`, to the asking socket's channel.


@final
class Catchup(TypedDict):
    type: Literal["chat.catchup"]
    origin: str
    start: StartFrame
    message_id: int
    thinking: tuple[int, str]  # (from code point, the text from there)
    content: tuple[int, str]
    queued: NotRequired[QueuedFrame]  # while the answer waits for a slot
    # A turn with tools: its text and steps after the offsets, in order
    # (`thinking` and `content` are then empty), and the steps version they
    # cover (`StepItem`).
    steps: NotRequired[list[TextItem | StepItem]]
    steps_version: NotRequired[int]


@final
class CatchupRefused(TypedDict):
    """The offsets were past the text: the socket is sent `refused`."""

    type: Literal["chat.catchup"]
    message_id: int
    refused: ErrorFrame


CatchupEvent = Catchup | CatchupRefused


# To a user's group (`chat.sockets.session_sockets`).


class SessionEnd(TypedDict):
    type: Literal["session.end"]
    session: str | None  # a digest of the session's key; None: every session


class SessionCheck(TypedDict):
    type: Literal["session.check"]


# To a shared link's group (`chat.models.sharing.ShareLink.aclose_sockets`).


class ShareGone(TypedDict):
    type: Literal["share.gone"]


# To the admission group.


class AdmissionWake(TypedDict):
    type: Literal["admission.wake"]


ADMISSION_WAKE: Final[AdmissionWake] = {"type": "admission.wake"}


# To a channel of its own, and back (`chat.ops.health`).


class HealthPing(TypedDict):
    type: Literal["health.ping"]
    nonce: str


ChannelEvent = (
    FrameEvent
    | DeltaEvent
    | StepsEvent
    | GenerationStop
    | GenerationResume
    | GenerationApprove
    | Catchup
    | CatchupRefused
    | SessionEnd
    | SessionCheck
    | ShareGone
    | AdmissionWake
    | HealthPing
)
