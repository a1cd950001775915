"""chatsite's export: one conversation as a JSON document, and all of an
owner's as a ZIP (`zip_stream`) written while it is sent: one JSON document
with everything (`chat.transfer.export_format`) and a Markdown file per
conversation. Conversations are read a chunk at a time with their messages, so
the memory an export takes does not grow with the number of conversations."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from collections.abc import Generator, Iterable, Iterator
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from django.utils import timezone
from django.utils.text import slugify

from chat.models import Attachment, Conversation, Folder, Message, SettingsChange
from chat.transfer.export_format import (
    FORMAT,
    VERSION,
    ConversationDoc,
    Document,
    FiguresDoc,
    FolderDoc,
    MessageDoc,
    NoticeDoc,
)
from chat.transfer.markdown import conversation_markdown

# The ZIP's entry with everything (`chat.transfer.detect` looks for it).
DOCUMENT_NAME = "chatsite-conversations.json"
# The conversation keys of conversations written here: a name-based UUID of
# the row and its creation time, so each export of it carries the same one.
KEY_NAMESPACE = uuid.UUID("5f0e3c8e-4a7b-4c55-9a3e-2f1f4d6b8c01")
# Bytes gathered before a piece of the ZIP is sent.
_FLUSH_AT = 64 * 1024


def conversation_key(conversation: Conversation) -> str:
    """The conversation's key in an export: where it was imported from (so a
    copy imported elsewhere is still known as the same conversation), else one
    of its own."""
    if conversation.import_key:
        return conversation.import_key
    name = f"{conversation.pk}:{conversation.created_at.isoformat()}"
    return f"chatsite:{uuid.uuid5(KEY_NAMESPACE, name)}"


def for_export(owner: Any) -> QuerySet[Conversation]:
    """The owner's conversations, oldest first, each with every message (those
    off the shown branch too) and its settings notices. Conversations kept
    only for an API answer's figures (not listed) are not theirs to export."""
    return (
        Conversation.objects.filter(owner=owner, listed=True)
        .select_related("model_profile", "folder")
        .prefetch_related(
            Prefetch(
                "messages",
                queryset=Message.objects.order_by("pk"),
                to_attr="every_message",
            ),
            Prefetch(
                "attachments",
                queryset=Attachment.objects.filter(message__isnull=False).order_by(
                    "pk"
                ),
                to_attr="every_attachment",
            ),
            Prefetch(
                "settings_changes",
                queryset=SettingsChange.objects.order_by("created_at", "pk"),
                to_attr="every_notice",
            ),
        )
        .order_by("pk")
    )


def conversation_doc(conversation: Conversation) -> ConversationDoc:
    """`conversation` (from `for_export`) as the document holds it."""
    messages: list[Message] = getattr(conversation, "every_message")  # noqa: B009
    notices: list[SettingsChange] = getattr(conversation, "every_notice")  # noqa: B009
    numbers = {m.pk: n for n, m in enumerate(messages, start=1)}
    profile = conversation.model_profile
    return {
        "key": conversation_key(conversation),
        # One imported from a chatsite export is simply chatsite's again.
        "imported_from": (
            conversation.imported_from
            if conversation.imported_from not in ("", "chatsite")
            else None
        ),
        "title": conversation.title,
        "created_at": _time(conversation.created_at),
        "updated_at": _time(conversation.updated_at),
        "pinned_at": _time_or_none(conversation.pinned_at),
        "archived_at": _time_or_none(conversation.archived_at),
        "folder": conversation.folder.name if conversation.folder else None,
        "settings": {
            "model": profile.tag if profile is not None else None,
            "thinking": conversation.thinking,
            "system_prompt": conversation.system_prompt,
            "history_policy": conversation.history_policy,
            "history_last_n": conversation.history_last_n,
            "temperature": conversation.temperature,
        },
        "messages": [message_doc(m, numbers) for m in messages],
        "notices": [_notice_doc(n) for n in notices],
    }


def message_doc(message: Message, numbers: dict[int, int]) -> MessageDoc:
    return {
        "number": numbers[message.pk],
        "parent": numbers.get(message.parent_id) if message.parent_id else None,
        "role": "user" if message.role == Message.Role.USER else "assistant",
        "content": message.content,
        "thinking": message.thinking,
        "status": message.status,
        "error_code": message.error_code,
        "error_detail": message.error_detail,
        "client_id": message.client_id,
        "model_tag": message.model_tag,
        "thinking_enabled": message.thinking_enabled,
        "source": message.source,
        "written_by_asker": message.written_by_asker,
        "replaced": message.replaced,
        "shown_at": _time(message.shown_at),
        "created_at": _time(message.created_at),
        "updated_at": _time(message.updated_at),
        "figures": {name: getattr(message, name) for name in FIGURES},  # type: ignore[typeddict-item]
    }


# The keys of `FiguresDoc`, each a field of Message.
FIGURES: tuple[str, ...] = tuple(FiguresDoc.__annotations__)


def _notice_doc(notice: SettingsChange) -> NoticeDoc:
    return {"text": notice.text, "created_at": _time(notice.created_at)}


def folder_docs(folders: Iterable[Folder]) -> list[FolderDoc]:
    return [{"name": f.name, "created_at": _time(f.created_at)} for f in folders]


def _head(owner: Any, folders: list[FolderDoc]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": _time(timezone.now()),
        "owner": owner.get_username(),
        "folders": folders,
    }


def conversation_document(conversation: Conversation) -> Document:
    """One conversation (from `for_export`) as a whole document, its folder
    with it."""
    folders = [conversation.folder] if conversation.folder else []
    head = _head(conversation.owner, folder_docs(folders))
    return {**head, "conversations": [conversation_doc(conversation)]}  # type: ignore[typeddict-item]


def document_pieces(owner: Any) -> Iterator[str]:
    """The owner's whole document as JSON, a conversation at a time."""
    head = json.dumps(
        _head(owner, folder_docs(Folder.objects.filter(owner=owner).order_by("pk"))),
        ensure_ascii=False,
    )
    yield head[:-1] + ', "conversations": ['
    chunk = settings.TRANSFER_EXPORT_CHUNK
    for n, conversation in enumerate(for_export(owner).iterator(chunk_size=chunk)):
        doc = json.dumps(conversation_doc(conversation), ensure_ascii=False)
        yield ("," if n else "") + doc
    yield "]}"


class _Pipe(io.RawIOBase):
    """Where the ZIP writer puts its bytes until the response takes them. It
    cannot seek, so `zipfile` writes each entry's sizes after its data."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[bytes] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        piece = bytes(data)
        self.pieces.append(piece)
        self.size += len(piece)
        return len(piece)

    def take(self) -> bytes:
        taken = b"".join(self.pieces)
        self.pieces.clear()
        self.size = 0
        return taken


def zip_stream(owner: Any) -> Generator[bytes, None, None]:
    """The owner's export ZIP, piece by piece: the JSON document first, then a
    Markdown file per conversation (its shown branch), each named after its
    title, followed by the files sent in it (`attached_files`)."""
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        # force_zip64: the document's size is not known before it is written.
        with archive.open(DOCUMENT_NAME, "w", force_zip64=True) as entry:
            for piece in document_pieces(owner):
                entry.write(piece.encode())
                if pipe.size >= _FLUSH_AT:
                    yield pipe.take()
        yield pipe.take()
        chunk = settings.TRANSFER_EXPORT_CHUNK
        for n, conversation in enumerate(
            for_export(owner).iterator(chunk_size=chunk), start=1
        ):
            name = f"markdown/{n:05d}-{safe_name(conversation.display_title)}.md"
            info = zipfile.ZipInfo(name, _zip_time(conversation.updated_at))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, conversation_markdown(conversation))
            if pipe.size >= _FLUSH_AT:
                yield pipe.take()
            for name, attachment in attached_files(conversation, n):
                info = zipfile.ZipInfo(name, _zip_time(attachment.created_at))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, attachment.read())
                if pipe.size >= _FLUSH_AT:
                    yield pipe.take()
    yield pipe.take()


def attached_files(
    conversation: Conversation, n: int
) -> Iterator[tuple[str, Attachment]]:
    """The files sent in `conversation` (the `n`-th of the export) with their
    names in the ZIP: `files/<n>-<title>/<message number>-<file name>`, the
    message numbered as in the document."""
    messages: list[Message] = getattr(conversation, "every_message")  # noqa: B009
    numbers = {m.pk: number for number, m in enumerate(messages, start=1)}
    folder = f"files/{n:05d}-{safe_name(conversation.display_title)}"
    for attachment in getattr(conversation, "every_attachment"):  # noqa: B009
        number = numbers.get(attachment.message_id or 0, 0)
        stem, dot, extension = attachment.name.rpartition(".")
        name = safe_name(stem) + (f".{safe_name(extension)}" if dot else "")
        yield f"{folder}/{number:05d}-{attachment.public_id[:8]}-{name}", attachment


def safe_name(title: str) -> str:
    """A file name's stem from a title: letters (any script), digits and
    dashes, never a path or a hidden file."""
    return slugify(title, allow_unicode=True)[:60].strip("-_") or "conversation"


def _zip_time(moment: datetime) -> tuple[int, int, int, int, int, int]:
    # ZIP times have no zone and start in 1980.
    t = timezone.localtime(moment)
    return (max(t.year, 1980), t.month, t.day, t.hour, t.minute, t.second)


def _time(moment: datetime) -> str:
    return moment.isoformat()


def _time_or_none(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
