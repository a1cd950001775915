"""A turn with tools: a loop of model calls and tool runs.

The model is called with the turn's tools (`chat.tools.toolbox`); the calls it
writes stream out as they are generated (`tool_call`, `tool_args`: the relay,
through `Generation.apply`). When it ends asking for them, its slot goes back
to the fair queue (`chat.live.engine.turn.slots`), each call runs in turn
(`tool_run`, then `tool_result`; one that needs the user's approval waits for
it first), the results go back to the model as `tool` messages, the slot is
taken again ahead of new answers, and the model is called again (`round`).
Until it answers without calls, or TOOLS_MAX_ROUNDS calls asked for tools:
then it is called once more without tools, and the user is told why.

Whatever goes wrong with a call (an unknown tool, arguments that are not a
JSON object, a tool that fails, hangs or answers too much) is its result: the
model is told and the turn goes on. A stop cancels the running call. An
answer without tools never comes here past its one relay (`converse`), nor
does an API turn: its client runs the calls of the model's one reply
(`Steps.for_client`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Awaitable
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils.translation import gettext as _

from chat.live.engine.generation import Generation, send_all
from chat.live.engine.preload import Tell
from chat.live.engine.relay import relay
from chat.live.engine.turn import slots
from chat.live.engine.turn.steps import CallStep, Steps
from chat.live.protocol import frames, tool_frames
from chat.models import AuditEvent, ModelProfile, quotas
from chat.models.history import count_sent, step_chars, tools_chars
from chat.tools import toolbox
from chat.tools.calls import Outcome, ToolSource, ToolSpec

logger = logging.getLogger(__name__)

# What a source that overruns its own deadline is given beyond it.
DEADLINE_GRACE = 5.0
PREVIEW_CHARS = 300

# The audit log's writes, kept until done (a task nobody holds may vanish).
_recording: set[asyncio.Task[None]] = set()


async def converse(
    generation: Generation,
    profile: ModelProfile,
    history: list[dict[str, Any]],
    tell: Tell,
    ready: Any = None,
    asked: Any = None,
) -> None:
    """The turn's model calls and tool runs, until the model answered (raises
    as `relay` does). `ready` and `asked` are the first call's (`relay`)."""
    steps = generation.steps
    if steps is not None and steps.wanted is not None:
        await _resolve(generation, steps, profile, ready)
    await relay(generation, profile, history, tell, ready, asked)
    if steps is None:
        return
    if not steps.runs_tools:  # an API client's tools: it runs its calls
        steps.handed_over()
        return
    messages = list(history)
    # What one model call may write (the first's `num_predict`, a quota's
    # reservation among them), for the quota's check before each further one.
    per_call = (generation.options or {}).get("num_predict")
    try:
        while steps.offering and steps.this_round():
            if not await _round(generation, profile, messages, tell, per_call):
                break  # a quota ended it: with what it has (its slot: at its end)
    finally:
        _write_audits(generation)  # those not written yet: a stop, an error


async def _round(
    generation: Generation,
    profile: ModelProfile,
    messages: list[dict[str, Any]],
    tell: Tell,
    per_call: Any,
) -> bool:
    """This round's calls run, and the model called again with their results
    (False, and no call, when the owner's quotas leave no room for it).
    Nothing but the quota's check and the slot's take-back (only when it was
    given back) stands between the last result and the next request: the
    audit log is written once that request is out."""
    steps = generation.steps
    assert steps is not None and generation.finished is not None
    calls = steps.this_round()
    added = [_asked(generation, calls)]
    lent = slots.lend(generation.message_id)
    try:
        for step in calls:
            await run_call(generation, step)
            added.append(_result(step))
    finally:
        lent.call_off()
    messages += added
    count_sent(generation.message, step_chars(added), profile.estimated_chars_per_token)
    if steps.round >= settings.TOOLS_MAX_ROUNDS:
        await _limit_reached(generation)
    if not await _quota_allows(generation, profile, per_call):
        await lent.given()  # a give-back under way ends; the slot: at its end
        return False
    if await lent.given():
        await slots.take_back(
            generation.message_id, profile.pk, lambda p: _queued(generation, p)
        )
        generation.queue_position = None
    begun = steps.next_round(
        generation.finished, generation.message_id, generation.lengths()
    )
    generation.finished = None
    await _emit(generation, begun)
    await relay(
        generation, profile, messages, tell, asked=lambda: _write_audits(generation)
    )
    return True


async def _resolve(
    generation: Generation,
    steps: Steps,
    profile: ModelProfile,
    ready: Awaitable[None] | None,
) -> None:
    """The tools the conversation switched on, as their sources offer them
    now (an MCP server lists its tools over the network). A source that
    offers none now (a server down) is left out, and the user told, once the
    turn is announced (`ready`); with no tool left, the turn is one model
    call. What their specs add to the prompt is counted in what was sent."""
    assert steps.wanted is not None
    steps.toolbox = await toolbox.resolve(steps.wanted)
    steps.wanted = None
    steps.offering = bool(steps.toolbox)
    if steps.offering:
        count_sent(
            generation.message,
            tools_chars(steps.toolbox.offered()),
            profile.estimated_chars_per_token,
        )
    if not steps.toolbox.notices:
        return
    detail = _("Some tools are not available now: %(why)s") % {
        "why": "; ".join(steps.toolbox.notices)
    }
    message = generation.message
    message.error_code, message.error_detail = "tools_unavailable", detail
    if ready is not None:
        await ready
    await _emit(
        generation, frames.error(generation.message_id, "tools_unavailable", detail)
    )


async def _quota_allows(
    generation: Generation, profile: ModelProfile, per_call: Any
) -> bool:
    """Whether the owner's quotas leave room for one more model call of the
    turn (`quotas.recheck`): if so, the call may write what they leave (its
    `num_predict`, when there is a token limit); if not, the user is told and
    the turn ends with every step so far."""
    steps = generation.steps
    assert steps is not None
    if steps.owner_id is None:  # no one's quotas (a turn of the tests' own)
        return True
    spent = steps.totals(generation.finished)["output_tokens"]
    if spent is None:  # the server said nothing: the quotas' own estimate
        spent = round(sum(generation.lengths()) / quotas.CHARS_PER_TOKEN)
    wanted = per_call if isinstance(per_call, int) and per_call > 0 else None
    try:
        left = await database_sync_to_async(quotas.recheck)(
            generation.message_id,
            steps.owner_id,
            calls=steps.round,
            spent=spent,
            wanted=wanted,
        )
    except quotas.QuotaReached as reached:
        detail = _("%(quota)s The answer ends with what it has so far.") % {
            "quota": reached
        }
        message = generation.message
        message.error_code, message.error_detail = "quota_reached", detail
        await _emit(
            generation, frames.error(generation.message_id, "quota_reached", detail)
        )
        return False
    if left is not None:
        if generation.options is None:
            generation.options = profile.request_options(generation.think)
        generation.options["num_predict"] = left
    return True


async def run_call(generation: Generation, step: CallStep) -> None:
    """Run one call the model wrote (after the user's approval if its tool
    needs it) and tell its result; whatever fails is the result."""
    steps = generation.steps
    assert steps is not None
    began = time.perf_counter()
    found = steps.toolbox.find(step.name)
    try:
        outcome = _refusal(step, found, [spec.name for spec in steps.toolbox.specs])
        if outcome is None and found is not None and found[0].needs_approval:
            steps.running(step, "awaiting_approval")
            # Waited for before the frame goes out: a decision sent the moment
            # the frame arrives (while it is still being sent to other tabs)
            # must find the call waiting.
            decided = steps.approval(step.id)
            await _emit(generation, _run_frame(generation, step))
            if not await decided:
                outcome = Outcome(
                    text="The user declined this call.",
                    preview=_("Declined."),
                    error="declined",
                )
        steps.running(step, "running")
        await _emit(generation, _run_frame(generation, step))
        if outcome is None and found is not None:
            outcome = await _run(*found, step)
    except asyncio.CancelledError:
        stopped = Outcome(text="", preview=_("Stopped."), error="stopped")
        _ran(generation, step, stopped, began, found)
        raise
    assert outcome is not None
    _ran(generation, step, _cut(outcome), began, found)
    await _emit(generation, step.result_frame(generation.message_id))


def _ran(
    generation: Generation,
    step: CallStep,
    outcome: Outcome,
    began: float,
    found: tuple[ToolSpec, ToolSource] | None,
) -> None:
    assert generation.steps is not None
    ms = round((time.perf_counter() - began) * 1000, 3)
    generation.steps.ran(step, outcome, ms)
    _audit(generation, step, outcome, found)


def _refusal(
    step: CallStep, found: tuple[ToolSpec, ToolSource] | None, names: list[str]
) -> Outcome | None:
    """The result of a call that cannot run, for the model to do better; None
    when it can."""
    if found is None:
        return Outcome(
            text=f"Error: there is no tool named {step.name!r}. "
            f"The tools are: {', '.join(names) or 'none'}.",
            preview=_("No such tool."),
            error="unknown_tool",
        )
    arguments = "".join(step.arguments).strip() or "{}"
    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        parsed, reason = None, str(exc)
    else:
        reason = "not a JSON object"
    if not isinstance(parsed, dict):
        return Outcome(
            text=f"Error: the arguments are not valid ({reason}). Call the tool "
            "again with its arguments as one JSON object.",
            preview=_("The model wrote invalid arguments."),
            error="bad_arguments",
        )
    return None


async def _run(spec: ToolSpec, source: ToolSource, step: CallStep) -> Outcome:
    timeout = float(settings.TOOL_CALL_TIMEOUT)
    try:
        async with asyncio.timeout(timeout + DEADLINE_GRACE):
            return await source.run(spec, step.call(), deadline=timeout)
    except TimeoutError:
        return Outcome(
            text=f"Error: the tool did not answer within {timeout:g} s.",
            preview=_("The tool did not answer in time."),
            error="timeout",
        )
    except Exception as exc:  # a source must not raise: its fault, told
        logger.exception("tool %s (%s) raised", spec.name, spec.source)
        return Outcome(
            text=f"Error: the tool failed: {exc}",
            preview=_("The tool failed."),
            error="failed",
        )


def _cut(outcome: Outcome) -> Outcome:
    """At most TOOL_RESULT_MAX_CHARS for the model (a source cuts its own;
    this is the floor), and a preview for the user."""
    limit = settings.TOOL_RESULT_MAX_CHARS
    outcome.size = max(outcome.size, len(outcome.text))
    if len(outcome.text) > limit:
        note = f"\n[cut: {outcome.size} characters, the first {limit} shown]"
        outcome.text = outcome.text[:limit] + note
        outcome.cut = True
    if not outcome.preview:
        outcome.preview = outcome.text[:PREVIEW_CHARS]
    return outcome


def _asked(generation: Generation, calls: list[CallStep]) -> dict[str, Any]:
    """The model's reply that asked for `calls`, as history (its thinking is
    never sent back)."""
    assert generation.steps is not None
    began = generation.steps.round_began()[1]
    return {
        "role": "assistant",
        "content": generation.tail("content", began, generation.content_len),
        "tool_calls": [
            {
                "id": step.id,
                "type": "function",
                "function": {"name": step.name, "arguments": step.call().arguments},
            }
            for step in calls
        ],
    }


def _result(step: CallStep) -> dict[str, Any]:
    assert step.outcome is not None
    return {
        "role": "tool",
        "tool_call_id": step.id,
        "name": step.name,
        "content": step.outcome.text,
    }


async def _limit_reached(generation: Generation) -> None:
    """The model is asked once more, without tools; the user is told why."""
    assert generation.steps is not None
    generation.steps.offering = False
    generation.steps.limited = True
    detail = _(
        "The model asked for tools %(rounds)d times in this answer, the limit: "
        "it was asked to answer with what it has."
    ) % {"rounds": generation.steps.round}
    message = generation.message
    message.error_code, message.error_detail = "tool_rounds", detail
    await _emit(generation, frames.error(generation.message_id, "tool_rounds", detail))


def _run_frame(generation: Generation, step: CallStep) -> tool_frames.ToolRunFrame:
    state: tool_frames.RunState = (
        "awaiting_approval" if step.state == "awaiting_approval" else "running"
    )
    return tool_frames.tool_run(generation.message_id, step.id, state, step.started)


async def _queued(generation: Generation, position: int) -> None:
    generation.queue_position = position
    await _emit(generation, frames.queued(generation.message_id, position))


async def _emit(generation: Generation, frame: frames.ServerFrame) -> None:
    """A step's frame to the answer's sockets, and other processes' (after
    the text before it: the publisher keeps the order)."""
    await send_all(generation.attached, frame)
    publisher = generation.publisher
    if publisher is not None:
        publisher.add(frame)
        await publisher.flush()  # between model calls its pump does not run


def _audit(
    generation: Generation,
    step: CallStep,
    outcome: Outcome,
    found: tuple[ToolSpec, ToolSource] | None,
) -> None:
    """The call for the audit log (`_write_audits`)."""
    assert generation.steps is not None
    arguments = step.call().arguments.encode("utf-8", "replace")
    detail = {
        "message_id": generation.message_id,
        "source": step.source,
        "tool": found[0].tool if found else step.name,
        "name": step.name,
        "arguments_sha256": hashlib.sha256(arguments).hexdigest(),
        "ms": step.ms,
        "size": outcome.size,
        "outcome": "ok" if outcome.ok else outcome.error,
    }
    generation.steps.unaudited.append(detail)


def _write_audits(generation: Generation) -> None:
    """The calls not yet in the audit log, written beside the turn (never
    waited for): after the next model request is out, or once the turn ends."""
    steps = generation.steps
    if steps is None or not steps.unaudited:
        return
    details, steps.unaudited = steps.unaudited, []
    task = asyncio.get_running_loop().create_task(
        _record(steps.owner_id, details), name="audit tool calls"
    )
    _recording.add(task)
    task.add_done_callback(_recording.discard)


async def _record(owner_id: int | None, details: list[dict[str, Any]]) -> None:
    try:
        await database_sync_to_async(AuditEvent.objects.bulk_create)(
            [
                AuditEvent(
                    kind=AuditEvent.Kind.TOOL_CALL,
                    actor_id=owner_id,
                    subject_id=owner_id,
                    detail=detail,
                )
                for detail in details
            ]
        )
    except Exception:
        logger.warning("tool calls were not audited: %s", details, exc_info=True)
