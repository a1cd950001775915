"""Who else hears of an answer this process finished.

The engine knows nothing of its listeners (`chat.live` never imports the
operators' modules): they register here when the app loads (`chat.apps`), and
the runner calls `answer_finished` once per answer, after its final save.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from chat.models import Message

logger = logging.getLogger(__name__)

Observer = Callable[[Message], None]

_observers: list[Observer] = []


def on_answer_finished(observer: Observer) -> None:
    """Call `observer` with each finished answer (saved, on the event loop: it
    must not block). Registering one twice is registering it once."""
    if observer not in _observers:
        _observers.append(observer)


def answer_finished(message: Message) -> None:
    for observer in _observers:
        try:
            observer(message)
        except Exception:  # a listener must never cost an answer
            logger.warning("answer %s: an observer failed", message.pk, exc_info=True)
