"""The importer: a file read and checked whole first, in a worker process
(`chat.transfer.detect.read_export` under `chat.work`'s budgets: whatever the
file costs is paid there; its conversations come back in a result file),
then its conversations
stored for their owner a batch at a time, each batch in a transaction of its
own with a few queries, not one per message. Short transactions let everyone
else's writes go between them (on SQLite one transaction holds the database's
only write lock: a whole import in one made other users' questions wait
5-8 s, issue 40).

A refusal imports nothing: every conversation is checked before the first is
stored. An import that fails or is cancelled while it is being stored (the
database refused a value, the requester went away) removes what it stored.
Only a process that dies mid-import leaves some of it, and then as whole
conversations (each goes in with all its messages, in one transaction), in
the owner's list like any other; importing the file again adds the rest.

Imported conversations are marked (`Conversation.imported_from`) and keyed
(`import_key`, unique per owner), so importing a file again skips what is
already here. Nothing is sent to a model server: an imported conversation is
asked nothing until its owner continues it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from django.conf import settings
from django.db import (
    DatabaseError,
    transaction,
)
from django.db.models.functions import Lower
from django.utils.translation import gettext

from chat import work
from chat.models import Conversation, Folder, Message, ModelProfile, SettingsChange
from chat.transfer import bulk_rows
from chat.transfer.detect import Parsed, read_export, results
from chat.transfer.incoming import (
    ImportRefused,
    IncomingConversation,
    Summary,
)

# A batch: a transaction of its own, its rows in a few bulk queries. Small:
# on SQLite each of another user's database calls may wait for one batch
# (they share the process's database thread, and SQLite's one write lock). On a loaded
# 2-core machine 50 conversations of ten messages took 210 ms a batch, and a
# question asked meanwhile up to 4 s; 10 take 50 ms, the question up to 1.3 s
# and the whole import no longer (tests/transfer/test_sqlite_import.py).
BATCH = 10
BATCH_MESSAGES = 200
_ROWS = 1000
_DELETE = 200


def import_file(owner: Any, file: IO[bytes], *, limit: int | None = None) -> Summary:
    """Import the export in `file` (any format chatsite reads, found from its
    content) for `owner`; the summary of what was imported. Raises
    ImportRefused, with nothing stored, when the file cannot be imported."""
    with _on_disk(file) as path, Import(owner, path, limit=limit) as job:
        job.read()
        try:
            while job.step():
                pass
        except BaseException:
            job.undo()
            raise
        return job.summary


class Import:
    """One import, a step at a time, for a caller that decides where each
    runs: `read` (the file, no database) and then `step` until it returns
    False (a batch each, in a transaction of its own); `undo` if it does not
    finish (an exception, a requester gone). `chat.web.transfer.views` runs the
    steps one by one, on SQLite in the thread that runs the sockets'
    database calls, so others' calls go between them (its `_storing`)."""

    def __init__(self, owner: Any, path: str, *, limit: int | None = None) -> None:
        self.owner, self.path = owner, path
        self.limit = limit if limit is not None else settings.TRANSFER_IMPORT_MAX_BYTES
        self.folder = tempfile.TemporaryDirectory(prefix="chatsite-import-")
        self.result = os.path.join(self.folder.name, "conversations.pickle")
        self.summary = Summary()
        self._batches: Iterator[list[tuple[str, Any]]] | None = None
        self._importer: _Importer | None = None

    def __enter__(self) -> Import:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self) -> None:
        """Read the file in a worker process, waited for in this thread."""
        args = (self.path, self.result, self.limit)
        try:
            parsed = work.run_sync(read_export, *args, **self._work())
        except work.Exhausted as exhausted:
            raise ImportRefused(exhausted.message) from None
        self._read(parsed)

    async def aread(self) -> None:
        """`read` from an event loop; cancelled, the worker is killed."""
        args = (self.path, self.result, self.limit)
        try:
            parsed = await work.run(read_export, *args, **self._work())
        except work.Exhausted as exhausted:
            raise ImportRefused(exhausted.message) from None
        self._read(parsed)

    def _work(self) -> dict[str, Any]:
        """Whose work it is, and its budget (`chat.work`)."""
        budget = work.Budget(
            seconds=settings.TRANSFER_IMPORT_READ_SECONDS,
            memory_bytes=settings.TRANSFER_IMPORT_READ_MEMORY,
        )
        return {"owner": str(self.owner.pk), "budget": budget}

    def _read(self, parsed: Parsed) -> None:
        self.summary = parsed.summary
        self.summary.source = parsed.source
        self._batches = _batches(results(self.result))

    def step(self) -> bool:
        """Store the next batch; False when there was none left."""
        assert self._batches is not None, "read first"
        batch = next(self._batches, None)
        if batch is None:
            return False
        if self._importer is None:
            self._importer = _Importer(self.owner, self.summary)
        try:
            with transaction.atomic():
                self._importer.add(batch)
        except DatabaseError:
            # A value the database refused (the readers check what they can).
            raise ImportRefused(
                gettext(
                    "The file holds a value this site cannot store; nothing was "
                    "imported."
                )
            ) from None
        self._importer.committed()
        return True

    def undo(self) -> None:
        if self._importer is not None:
            self._importer.undo()

    def close(self) -> None:
        self._batches = None  # the result file closed before it is removed
        self.folder.cleanup()


@contextmanager
def _on_disk(file: IO[bytes]) -> Iterator[str]:
    """The path of `file`'s bytes: its own (an upload's temporary file, a file
    opened by name), or a copy."""
    path = getattr(file, "temporary_file_path", None)
    if callable(path):
        yield str(path())
        return
    name = getattr(file, "name", None)
    if isinstance(name, str) and os.path.isfile(name):
        yield name
        return
    with tempfile.NamedTemporaryFile(prefix="chatsite-import-") as copy:
        shutil.copyfileobj(file, copy)
        copy.flush()
        yield copy.name


def _batches(records: Iterable[tuple[str, Any]]) -> Iterator[list[tuple[str, Any]]]:
    """The records a batch at a time: BATCH conversations, or fewer holding
    BATCH_MESSAGES messages."""
    batch: list[tuple[str, Any]] = []
    conversations = messages = 0
    for kind, value in records:
        batch.append((kind, value))
        if kind == "conversation":
            conversations += 1
            messages += len(value.messages)
            if conversations >= BATCH or messages >= BATCH_MESSAGES:
                yield batch
                batch, conversations, messages = [], 0, 0
    if batch:
        yield batch


class _Importer:
    def __init__(self, owner: Any, summary: Summary) -> None:
        self.owner = owner
        self.summary = summary
        self.folders = {f.name.lower(): f for f in Folder.objects.filter(owner=owner)}
        self.profiles: dict[str, ModelProfile | None] = {}
        self.keys: set[str] = set()  # stored by this import
        # What this import made, to take away again if it cannot finish: the
        # batch's rows once its transaction is committed (a rolled-back id may
        # be someone else's by then).
        self.made_conversations: list[int] = []
        self.made_folders: list[int] = []
        self.batch_conversations: list[int] = []
        self.batch_folders: list[int] = []

    def committed(self) -> None:
        self.made_conversations += self.batch_conversations
        self.made_folders += self.batch_folders
        self.batch_conversations, self.batch_folders = [], []

    def add(self, batch: Sequence[tuple[str, Any]]) -> None:
        for kind, value in batch:
            if kind == "folder":
                self.folder(*value)
        self.store([value for kind, value in batch if kind == "conversation"])

    def undo(self) -> None:
        """Remove what this import stored, a few rows at a time. If the
        database is away, what stays is whole conversations, in the owner's
        list (the module's docstring)."""
        made = self.made_conversations
        try:
            for start in range(0, len(made), _DELETE):
                with transaction.atomic():
                    chunk = made[start : start + _DELETE]
                    mine = Conversation.objects.filter(owner=self.owner)
                    mine.filter(pk__in=chunk).delete()
            Folder.objects.filter(
                owner=self.owner, pk__in=self.made_folders, conversations__isnull=True
            ).delete()
        except DatabaseError:
            pass

    def folder(self, name: str, created_at: Any = None) -> Folder | None:
        name = " ".join(self.summary.text(name).split())[:80]
        if not name:
            return None
        folder = self.folders.get(name.lower())
        if folder is None:
            folder = Folder.objects.create(owner=self.owner, name=name)
            self.batch_folders.append(folder.pk)
            if created_at is not None:
                folder.created_at = self.summary.time(created_at)
                Folder.objects.filter(pk=folder.pk).update(created_at=folder.created_at)
            self.folders[name.lower()] = folder
        return folder

    def profile(self, name: str | None) -> ModelProfile | None:
        """The model profile this owner may use whose tag (or, failing that,
        name shown) is `name`; None (the site default) if there is none."""
        if not name:
            return None
        if name not in self.profiles:
            usable = ModelProfile.objects.usable_by(self.owner).order_by("pk")
            found = (
                usable.filter(tag=name).first()
                or usable.annotate(lower=Lower("tag"))
                .filter(lower=name.lower())
                .first()
                or usable.annotate(lower=Lower("display_name"))
                .filter(lower=name.lower())
                .first()
            )
            self.profiles[name] = found
        found = self.profiles[name]
        if found is None:
            self.summary.warn(
                gettext(
                    "Conversations whose model is not here, set to the default "
                    "(%(model)s)"
                )
                % {"model": name[:60]}
            )
        return found

    def store(self, batch: list[IncomingConversation]) -> None:
        text = self.summary.text
        keys = [text(c.key, 200) for c in batch]
        here = set(
            Conversation.objects.filter(
                owner=self.owner, import_key__in=keys
            ).values_list("import_key", flat=True)
        )
        new: list[tuple[Conversation, IncomingConversation]] = []
        for key, incoming in zip(keys, batch, strict=True):
            if key in here or key in self.keys:
                self.summary.already_imported += 1
                continue
            self.keys.add(key)
            new.append((self._conversation(key, incoming), incoming))
        if not new:
            return
        rows = Conversation.objects.bulk_create([row for row, _ in new])
        self.batch_conversations += [row.pk for row in rows]
        # auto_now_add and auto_now set both times on the way in: put back the
        # file's (bulk_update leaves them as given).
        for row, incoming in zip(rows, (i for _, i in new), strict=True):
            row.created_at = self.summary.time(incoming.created_at)
            row.updated_at = max(self.summary.time(incoming.updated_at), row.created_at)
        bulk_rows.set_columns(Conversation, rows, ["created_at", "updated_at"])
        self._messages(list(zip(rows, (i for _, i in new), strict=True)))
        self._notices(list(zip(rows, (i for _, i in new), strict=True)))
        self.summary.conversations += len(rows)

    def _conversation(self, key: str, incoming: IncomingConversation) -> Conversation:
        text, time = self.summary.text, self.summary.time
        return Conversation(
            owner=self.owner,
            title=text(incoming.title, 200),
            model_profile=self.profile(
                text(incoming.model) if incoming.model else None
            ),
            thinking=incoming.thinking,
            system_prompt=text(incoming.system_prompt),
            history_policy=incoming.history_policy,
            history_last_n=incoming.history_last_n,
            temperature=incoming.temperature,
            pinned_at=time(incoming.pinned_at) if incoming.pinned_at else None,
            archived_at=time(incoming.archived_at) if incoming.archived_at else None,
            folder=self.folder(incoming.folder) if incoming.folder else None,
            imported_from=incoming.imported_from,
            import_key=key,
        )

    def _messages(
        self, stored: list[tuple[Conversation, IncomingConversation]]
    ) -> None:
        """Each conversation's messages in their order, so ids rise as they
        did in the file (a child's above its parent's: `chat.models.messages`);
        each with its parent and the file's times (`bulk_rows.insert_rows`)."""
        text, time = self.summary.text, self.summary.time
        rows: list[Message] = []
        links: list[tuple[Message, int | None, int]] = []  # row, parent, offset
        for conversation, incoming in stored:
            offset = len(rows)
            for m in incoming.messages:
                created = time(m.created_at)
                row = Message(
                    conversation=conversation,
                    role=m.role,
                    content=text(m.content),
                    thinking=text(m.thinking),
                    status=m.status,
                    error_code=text(m.error_code, 40),
                    error_detail=text(m.error_detail),
                    client_id=text(m.client_id, 64),
                    model_tag=text(m.model_tag, 200),
                    thinking_enabled=m.thinking_enabled,
                    source=m.source,
                    written_by_asker=m.written_by_asker,
                    replaced=m.replaced,
                    shown_at=time(m.shown_at) if m.shown_at else created,
                    **{
                        name: text(value, 20) if name == "done_reason" else value
                        for name, value in m.figures.items()
                    },
                )
                row.created_at = created
                row.updated_at = (
                    max(time(m.updated_at), created) if m.updated_at else created
                )
                rows.append(row)
                links.append((row, m.parent, offset))
        # Each row's id is known before it goes in, so its parent's is too:
        # one INSERT per row with everything, no second pass over the indexes.
        ids = bulk_rows.reserve_ids(Message, len(rows))
        for row, pk, (_, parent, offset) in zip(rows, ids, links, strict=True):
            row.pk = pk
            row.parent_id = ids[offset + parent] if parent is not None else None
        bulk_rows.insert_rows(Message, rows)
        self.summary.messages += len(rows)

    def _notices(self, stored: list[tuple[Conversation, IncomingConversation]]) -> None:
        rows, times = [], []
        for conversation, incoming in stored:
            for notice, created_at in incoming.notices:
                rows.append(
                    SettingsChange(
                        conversation=conversation,
                        text=self.summary.text(notice, 1000),
                    )
                )
                times.append(self.summary.time(created_at))
        if not rows:
            return
        SettingsChange.objects.bulk_create(rows, batch_size=_ROWS)
        for row, created_at in zip(rows, times, strict=True):
            row.created_at = created_at
        bulk_rows.set_columns(SettingsChange, rows, ["created_at"])
