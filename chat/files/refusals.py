"""Why an upload is not kept."""

from __future__ import annotations


class Refused(Exception):
    """An upload that is not kept, with the reason for the user and the HTTP
    status that says which kind of refusal it is (413 too large, 415 a type
    not accepted or content that does not match its name, 422 the rest)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __reduce__(self) -> tuple[type[Refused], tuple[str, int]]:
        # Raised in a worker process (`chat.work`), it is pickled back whole.
        return Refused, (self.message, self.status)
