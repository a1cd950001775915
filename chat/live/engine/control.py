"""The engine's front door: what pages and sockets ask of the answers running on
any process, and what they tell a conversation's sockets.

The one module outside the streaming path that may be imported to reach the
engine (`chat.web` never imports the runner or the frames). A request for an
answer this process runs is served here; any other goes to the process that
runs it (`chat.live.engine.processes.remote`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import async_to_sync

from chat.live.engine import loop_state
from chat.live.engine.processes import remote
from chat.live.engine.runner import runner
from chat.live.protocol import frames

if TYPE_CHECKING:
    from chat.live.protocol.channel_events import GenerationApprove
    from chat.models import VersionSwitch


async def request_stop(conversation_id: int) -> None:
    """Stop the conversation's answer wherever it runs."""
    if not runner.stop(conversation_id):
        await remote.ask_stop(loop_state.current().layer, conversation_id)


async def approve(decision: GenerationApprove) -> None:
    """A user's answer to a tool call of the conversation's answer awaiting
    approval (`chat.live.engine.turn.tools`), to the process that runs the
    answer, which checks that the user owns it (`remote.answer_approve`)."""
    generation = runner.generation(decision["conversation_id"])
    if generation is not None and generation.message_id == decision["message_id"]:
        remote.answer_approve(generation, decision)
    else:
        await remote.ask_approve(loop_state.current().layer, decision)


async def request_resume(
    conversation_id: int,
    message_id: int,
    offsets: tuple[int, int],
    reply_to: str,
    steps_version: int = 0,
) -> None:
    """Ask the process running the answer to send the channel `reply_to` the
    text after `offsets` (thinking, content), and a turn's steps the socket
    misses (it has their `steps_version`)."""
    layer = loop_state.current().layer
    await remote.ask_resume(
        layer, conversation_id, message_id, offsets, reply_to, steps_version
    )


async def tell(conversation_id: int, sent: list[frames.ServerFrame]) -> None:
    """Frames from an HTTP request, to every socket of the conversation. A
    process that has not served a socket yet has the channel layer too (its
    loop state's), so other processes' sockets are told too."""
    await runner.broadcast(conversation_id, *sent)


def show_version(
    conversation_id: int, switch: VersionSwitch
) -> list[frames.ServerFrame]:
    """From a page's request (a sync view): the frames that swap in the version
    of a turn `switch` shows and the branch below it, sent to the conversation's
    sockets when it replaced messages; returned for the asking page."""
    sent = frames.version_shown(switch)
    if switch.removed:
        async_to_sync(runner.broadcast)(conversation_id, *sent)
    return sent
