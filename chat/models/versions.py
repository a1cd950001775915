"""The versions of a turn, and the branch below one.

A conversation is a tree of messages (`Message.parent`). A turn's versions are
the questions under one parent, oldest first: each edit or regenerate of that
turn added one. Only one of them is on the shown branch at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Versions:
    """Where a shown answer's question stands among its turn's versions."""

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


def siblings_by_parent(
    questions: Iterable[tuple[int, int | None]],
) -> dict[int | None, list[int]]:
    """(question id, parent id) pairs in id order, grouped by parent."""
    groups: dict[int | None, list[int]] = {}
    for pk, parent_id in questions:
        groups.setdefault(parent_id, []).append(pk)
    return groups


def place(question_id: int, siblings: list[int]) -> Versions | None:
    """Where the question stands among its siblings; None when it is alone."""
    if len(siblings) < 2:
        return None
    return Versions(tuple(siblings), siblings.index(question_id))


def branch_below(
    top: int, rows: Iterable[tuple[int, int | None, datetime]]
) -> list[int]:
    """The ids from `top` down to a leaf, choosing at each message the child
    last shown (the newest on a tie): the branch that was on screen below it
    when it was last left, or the newest one. `rows` are (id, parent id,
    shown_at) of the conversation's messages, any order."""
    children: dict[int, list[tuple[datetime, int]]] = {}
    for pk, parent_id, shown_at in rows:
        if parent_id is not None:
            children.setdefault(parent_id, []).append((shown_at, pk))
    path = [top]
    while kids := children.get(path[-1]):
        path.append(max(kids)[1])
    return path


def branch_above(leaf: int, parents: dict[int, int | None]) -> list[int]:
    """The ids from the root down to `leaf`, given each message's parent."""
    path: list[int] = []
    current: int | None = leaf
    while current is not None:
        path.append(current)
        current = parents.get(current)
    return path[::-1]
