"""What a piece of work may spend, and the refusal when it spends more."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _


@dataclass(frozen=True)
class Budget:
    """Wall time from the moment the work starts (not while it waits its turn),
    and the memory it may take on top of the worker it runs in (the worker's
    address space at the start plus this)."""

    seconds: float
    memory_bytes: int


class Exhausted(Exception):
    """The work spent its budget and was stopped (its process killed).
    `message` is for the user, in the language active where it was raised."""

    def __init__(self, message: str, budget: Budget) -> None:
        super().__init__(message)
        self.message = message
        self.budget = budget


class TimedOut(Exhausted):
    def __init__(self, budget: Budget) -> None:
        super().__init__(
            _("It took too long to read: it was stopped after %(seconds)s s.")
            % {"seconds": f"{budget.seconds:.3g}"},
            budget,
        )


class OutOfMemory(Exhausted):
    def __init__(self, budget: Budget) -> None:
        super().__init__(
            _("It is too large to read: it needed more than %(size)s of memory.")
            % {"size": f"{budget.memory_bytes / (1024 * 1024):.0f} MB"},
            budget,
        )
