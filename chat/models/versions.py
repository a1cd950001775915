"""The versions of a turn: every question and answer a regenerate or an edit
produced at the same place in a conversation, oldest first."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chat.models.messages import Message


@dataclass
class Version:
    question: Message
    answer: Message | None = None

    @property
    def answer_id(self) -> int | None:
        return self.answer.pk if self.answer is not None else None

    @property
    def messages(self) -> list[Message]:
        return [m for m in (self.question, self.answer) if m is not None]

    @property
    def ids(self) -> list[int]:
        return [m.pk for m in self.messages]

    @property
    def shown(self) -> bool:
        return not self.question.replaced


@dataclass(frozen=True)
class Versions:
    """Where a shown answer stands among its turn's versions."""

    question_ids: tuple[int, ...]  # each version's question, oldest first
    index: int  # the shown one's

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def count(self) -> int:
        return len(self.question_ids)

    @property
    def previous_id(self) -> int | None:
        return self.question_ids[self.index - 1] if self.index > 0 else None

    @property
    def next_id(self) -> int | None:
        after = self.index + 1
        return self.question_ids[after] if after < self.count else None


def versions_in(rows: Iterable[Message], first_id: int) -> list[Version]:
    """The versions of the turn whose first question is `first_id`, from the
    conversation's rows (every one, replaced or not) in id order from it on.

    A version is its question and the answer after it: a turn's question and
    answer are stored together (`Conversation.begin_turn`), so the rows up to
    the next question are that version's."""
    versions: list[Version] = []
    current: Version | None = None
    for row in rows:
        if row.role == Message.Role.USER:
            is_version = row.pk == first_id or row.version_of_id == first_id
            current = Version(row) if is_version else None
            if current is not None:
                versions.append(current)
        elif current is not None and current.answer is None:
            current.answer = row
    return versions


def place_of(versions: list[Version], version: Version) -> Versions | None:
    """Where `version` stands among `versions`; None when it is the only one."""
    if len(versions) < 2:
        return None
    return Versions(tuple(v.question.pk for v in versions), versions.index(version))
