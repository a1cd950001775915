"""Whether a turn offers the model the tools its conversation switched on
(`chat.tools.toolbox.wanted`: no query), decided while the turn is prepared
(in the database thread, before the answer's row is written:
`beginning.store`). The tools themselves are resolved in the turn, before
its first model call (`chat.live.engine.turn.tools`: an MCP server lists
its tools over the network); a turn without tools switched on is one model
call, as fast as ever.

A model that cannot call tools (`ModelProfile.supports_tools`: Ollama's
capabilities, or the admin's word for an OpenAI-compatible server) is
offered none: its answer is asked as if no tool were on, and says why (a
notice on the answer, `TOOLS_UNSUPPORTED`; the answer is not failed).

A turn that offers tools thinks only where its profile says so
(`ModelProfile.think_with_tools`, off by default: Qwen3 with thinking and
native tool calls on loses calls on Ollama). Off, every model call of the
turn is asked without thinking, the answer's included: which call is the
last is known only once the model answers without calls, and a turn whose
calls switched thinking (and Qwen3's sampling with it) between rounds would
read as two. The answer's `thinking_enabled` says what was asked.

What the tools' specs add to the prompt is counted in what was sent
(`history.count_sent`) once they are resolved, and the steps' messages
round by round, both in `chat.live.engine.turn.tools`.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from chat.live.engine.turn.steps import Steps
from chat.models import Pending, Turn
from chat.tools import toolbox

TOOLS_UNSUPPORTED = "tools_unsupported"


def steps_for(turn: Turn, pending: Pending) -> Steps | None:
    """The steps of a turn with tools, if its conversation switched any on
    that its owner may use and its model can call; None for an answer of one
    model call (told why, when tools were on for a model that cannot)."""
    conversation = turn.question.conversation
    wanted = toolbox.wanted(conversation)
    if wanted is None:
        return None
    profile, answer = turn.profile, turn.answer
    reason = profile.tools_reason()
    if reason:
        answer.error_code = TOOLS_UNSUPPORTED
        answer.error_detail = _(
            "Tools are switched on, but %(model)s cannot call them: %(reason)s "
            "This answer was written without tools."
        ) % {"model": profile.label, "reason": reason}
        return None
    think = profile.think_with(answer.thinking_enabled, tools=True)
    if think != answer.thinking_enabled:
        answer.thinking_enabled = think
        if turn.options is not None:
            # Qwen3's sampling follows the mode; the quota's reservation stays.
            options = conversation.request_options(profile, tools=True)
            if "num_predict" in turn.options:
                options["num_predict"] = turn.options["num_predict"]
            turn.options.clear()
            turn.options.update(options)
    return Steps(toolbox.NO_TOOLS, wanted=wanted, owner_id=pending.owner_id)
