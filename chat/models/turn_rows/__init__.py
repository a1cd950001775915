"""The rows of a turn: a question and its answer's placeholder, for a sent
question, a regenerate, an edit or an answer asked over the API; and the
versions of a turn shown in its place.

Each begins in two steps, so that the answer's place in line can be decided
between them (`chat.live.engine.turn.beginning`, which owns the admission): `prepare_*`
checks
the turn (its model, whether an answer is running, the quotas, its files) and
returns it `Pending`, its rows not written yet (the answer has no id); then
`Pending.write` writes them and `Pending.close` the conversation's row, in the
caller's transaction. The model server may be asked between the two
(docs/latency.md, rule 8). `begin_turn`, `begin_regenerate` and `begin_edit`
do all three at once, for callers that place the answer in no line.
"""

from __future__ import annotations

from chat.models.turn_rows.api import api_profile, prepare_api_turn
from chat.models.turn_rows.retries import (
    begin_edit,
    begin_regenerate,
    prepare_edit,
    prepare_regenerate,
    show_version,
)
from chat.models.turn_rows.rows import (
    EARLIER,
    TURN_READ,
    Asked,
    ClientTools,
    Pending,
    Retry,
    SentRow,
    Turn,
    begin_turn,
    begin_turn_of,
    lock_when_idle,
    prepare_turn,
    prepare_turn_of,
)

__all__ = [
    "EARLIER",
    "TURN_READ",
    "Asked",
    "ClientTools",
    "Pending",
    "Retry",
    "SentRow",
    "Turn",
    "api_profile",
    "begin_edit",
    "begin_regenerate",
    "begin_turn",
    "begin_turn_of",
    "lock_when_idle",
    "prepare_api_turn",
    "prepare_edit",
    "prepare_regenerate",
    "prepare_turn",
    "prepare_turn_of",
    "show_version",
]
