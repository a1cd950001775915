"""Attachments: files uploaded with a question, kept through Django's storage
API (`STORAGES["default"]`: a folder on disk, or an S3-compatible store).

An attachment is uploaded on its own (`chat.web.attachments`) before the
question is sent, bound to the question's message when it is
(`Attachment.bind`), and leaves with its conversation: the files of deleted
rows are deleted from storage once the deletion commits. The link is on this
row, so the message table is never altered for it.

What the files put into a prompt: `chat.models.attachment_prompts`; the
refusals before they go: `chat.models.attachment_checks`.
"""

from __future__ import annotations

import base64
import io
import math
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from django.conf import settings
from django.core.cache import caches
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import models, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy
from PIL import Image

from chat.models import attachment_checks as checks
from chat.models.attachment_prompts import cut_to_fit, document_block, image_tokens
from chat.models.messages import Message

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from chat.models.conversations import Conversation
    from chat.models.profiles import ModelProfile

# Safe to show inline: what the site itself re-encoded images to.
INLINE_TYPES = ("image/png", "image/jpeg")


def new_public_id() -> str:
    return secrets.token_urlsafe(18)


@dataclass(frozen=True)
class AttachmentView:
    """One attachment as `chat/_attachments.html` shows it (and a `message`
    frame lists it)."""

    public_id: str
    name: str
    size: int
    kind: str
    tokens: int
    url: str
    thumbnail_url: str
    note: str


class Attachment(models.Model):
    class Kind(models.TextChoices):
        IMAGE = "image", gettext_lazy("Image")
        DOCUMENT = "document", gettext_lazy("Document")

    public_id = models.CharField(
        max_length=32,
        unique=True,
        default=new_public_id,
        verbose_name=gettext_lazy("public id"),
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name=gettext_lazy("owner"),
    )
    conversation = models.ForeignKey(
        "chat.Conversation",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name=gettext_lazy("conversation"),
    )
    message = models.ForeignKey(
        "chat.Message",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name=gettext_lazy("message"),
    )
    storage_name = models.CharField(
        max_length=255, verbose_name=gettext_lazy("storage name")
    )
    thumbnail_name = models.CharField(
        max_length=255, blank=True, verbose_name=gettext_lazy("thumbnail name")
    )
    name = models.CharField(max_length=255, verbose_name=gettext_lazy("name"))
    size = models.PositiveBigIntegerField(verbose_name=gettext_lazy("size"))
    content_type = models.CharField(
        max_length=120, verbose_name=gettext_lazy("content type")
    )
    kind = models.CharField(
        max_length=10, choices=Kind, verbose_name=gettext_lazy("kind")
    )
    text = models.TextField(blank=True, verbose_name=gettext_lazy("text"))
    # Characters of `text` sent when the asker chose to send it truncated.
    sent_chars = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=gettext_lazy("sent chars")
    )
    tokens = models.PositiveIntegerField(default=0, verbose_name=gettext_lazy("tokens"))
    width = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=gettext_lazy("width")
    )
    height = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=gettext_lazy("height")
    )
    sha256 = models.CharField(max_length=64, verbose_name=gettext_lazy("sha256"))
    note = models.CharField(
        max_length=200, blank=True, verbose_name=gettext_lazy("note")
    )
    created_at = models.DateTimeField(
        auto_now_add=True, verbose_name=gettext_lazy("created at")
    )

    class Meta:
        verbose_name = gettext_lazy("attachment")
        verbose_name_plural = gettext_lazy("attachments")
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def store(
        cls,
        owner: User,
        *,
        name: str,
        data: bytes,
        content_type: str,
        kind: str,
        text: str = "",
        note: str = "",
        thumbnail: bytes | None = None,
        sha256: str,
        conversation: Conversation | None = None,
        profile: ModelProfile | None = None,
    ) -> Attachment:
        """Save the file (and its thumbnail) to storage, then its row; the
        files go again if the row cannot be saved."""
        folder = secrets.token_hex(8)
        extension = "png" if content_type == "image/png" else "bin"
        if content_type == "image/jpeg":
            extension = "jpg"
        storage_name = default_storage.save(
            f"{folder}/file.{extension}", ContentFile(data)
        )
        saved = [storage_name]
        try:
            thumbnail_name = ""
            if thumbnail is not None:
                thumbnail_name = default_storage.save(
                    f"{folder}/thumbnail.{extension}", ContentFile(thumbnail)
                )
                saved.append(thumbnail_name)
            attachment = cls(
                owner=owner,
                conversation=conversation,
                storage_name=storage_name,
                thumbnail_name=thumbnail_name,
                name=name,
                size=len(data),
                content_type=content_type,
                kind=kind,
                text=text,
                note=note,
                sha256=sha256,
            )
            if kind == cls.Kind.IMAGE:
                attachment.width, attachment.height = image_size(data)
                caches["prompt_images"].set(
                    storage_name, base64.b64encode(data).decode("ascii")
                )
            attachment.tokens = attachment.estimate_tokens(profile)
            attachment.save()
        except BaseException:
            for stored in saved:
                default_storage.delete(stored)
            raise
        return attachment

    def estimate_tokens(self, profile: ModelProfile | None) -> int:
        if self.kind == Attachment.Kind.IMAGE:
            return image_tokens(self.width or 0, self.height or 0)
        chars_per_token = profile.estimated_chars_per_token if profile else 4.0
        return math.ceil(len(self.block()) / chars_per_token)

    @property
    def is_image(self) -> bool:
        return self.kind == Attachment.Kind.IMAGE

    @property
    def inline(self) -> bool:
        """Whether the browser may show it in the page (else it downloads)."""
        return self.content_type in INLINE_TYPES

    def block(self, limit: int | None = None) -> str:
        """The document as it goes into the question (its first `limit`
        characters, with a line saying the rest was left out)."""
        if limit is None:
            limit = self.sent_chars
        return document_block(self.name, self.text, limit)

    def read(self) -> bytes:
        with default_storage.open(self.storage_name, "rb") as stored:
            data: bytes = stored.read()
        return data

    def base64(self) -> str:
        """The image as a prompt carries it. Kept in this process's
        `prompt_images` cache (chatsite/settings.py), so a conversation's
        earlier images are not fetched again (a round trip to S3 each) before
        every question that carries them: a stored file never changes."""
        images = caches["prompt_images"]
        encoded: str | None = images.get(self.storage_name)
        if encoded is None:
            encoded = base64.b64encode(self.read()).decode("ascii")
            images.set(self.storage_name, encoded)
        return encoded

    def view(self, url: str = "", thumbnail_url: str = "") -> AttachmentView:
        """How it is shown; the owner's URLs unless others are given (a shared
        link's)."""
        if not url:
            url = reverse("attachment", args=[self.public_id])
            if self.thumbnail_name:
                thumbnail_url = reverse("attachment_thumbnail", args=[self.public_id])
        return AttachmentView(
            public_id=self.public_id,
            name=self.name,
            size=self.size,
            kind=self.kind,
            tokens=self.tokens,
            url=url,
            thumbnail_url=thumbnail_url if self.thumbnail_name else "",
            note=self.note,
        )

    def to_dict(self) -> dict[str, Any]:
        """The upload's answer (`POST /attachments/`)."""
        view = self.view()
        return {
            "id": self.public_id,
            "name": self.name,
            "size": self.size,
            "kind": self.kind,
            "tokens": self.tokens,
            "url": view.url,
            "thumbnail_url": view.thumbnail_url or None,
            "note": self.note or None,
        }

    @classmethod
    def bind(
        cls,
        question: Message,
        public_ids: Sequence[str],
        profile: ModelProfile,
        *,
        room_tokens: int,
        truncate: bool,
    ) -> list[Attachment]:
        """Bind the asker's unsent uploads to their question, checked: theirs,
        not sent, not over the count, images only to a vision model, documents
        within `room_tokens` (the context left for them) unless `truncate`.
        Raises AttachmentRefused (the caller's transaction then stores nothing)."""
        conversation = question.conversation
        ids = list(dict.fromkeys(public_ids))
        if not ids:
            return []
        checks.not_too_many(ids)
        found: list[Attachment] = list(
            Attachment.objects.select_for_update()
            .filter(public_id__in=ids, owner_id=conversation.owner_id)
            .filter(models.Q(conversation=None) | models.Q(conversation=conversation))
        )
        attachments = checks.all_found(ids, found)
        checks.none_sent(attachments)
        checks.seen_by(profile, [a for a in attachments if a.is_image])
        documents = [a for a in attachments if not a.is_image]
        for attachment in documents:
            attachment.sent_chars = None
            attachment.tokens = attachment.estimate_tokens(profile)
        wanted = sum(a.tokens for a in documents)
        if documents and wanted > room_tokens:
            if not truncate:
                raise checks.documents_too_large(profile, wanted, room_tokens)
            cut_to_fit(documents, room_tokens, profile.estimated_chars_per_token)
        for attachment in attachments:
            attachment.message = question
            attachment.conversation = conversation
        Attachment.objects.bulk_update(
            attachments, ["message", "conversation", "sent_chars", "tokens"]
        )
        return attachments

    UNSENT_KEPT: ClassVar[timedelta] = timedelta(days=1)

    @classmethod
    def delete_unsent(cls) -> int:
        """Delete uploads never sent with a question, older than UNSENT_KEPT
        (a composer closed with files in it), their stored files with them."""
        cutoff = timezone.now() - cls.UNSENT_KEPT
        deleted, _ = cls.objects.filter(message=None, created_at__lt=cutoff).delete()
        return deleted

    @staticmethod
    def count_for_answers(shown: Sequence[Message]) -> None:
        """Tell each answer among `shown` how many files went with its
        question (its footer says so), in one query."""
        answers = [m for m in shown if m.role == Message.Role.ASSISTANT]
        questions = {a.parent_id for a in answers if a.parent_id is not None}
        if not questions:
            return
        counts = dict(
            Attachment.objects.filter(message_id__in=questions)
            .values("message_id")
            .annotate(count=models.Count("pk"))
            .values_list("message_id", "count")
        )
        for answer in answers:
            answer.files_with_question = counts.get(answer.parent_id or 0, 0)

    @classmethod
    def copy_to(
        cls, question: Message, source: Message, profile: ModelProfile
    ) -> list[Attachment]:
        """The files of `source` (a question asked again) for `question`: rows
        of its own over the same stored files (kept while a row names them).
        Refused (AttachmentRefused) when they hold a picture and the model
        now asked has no vision."""
        if (
            not profile.supports_vision
            and source.attachments.filter(kind=Attachment.Kind.IMAGE).exists()
        ):
            raise checks.picture_unseen(profile)
        copies = []
        for attachment in source.attachments.all():
            attachment.pk = None
            attachment.public_id = new_public_id()
            attachment.message = question
            copies.append(attachment)
        return Attachment.objects.bulk_create(copies)


def image_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return width, height


def files_by_message(conversation_id: int) -> dict[int, list[Attachment]]:
    """A conversation's sent files by their message, in one query (cheaper
    than `prefetch_related` over every message of a long conversation, which
    builds a queryset per message: the history builder runs at every send)."""
    found: dict[int, list[Attachment]] = {}
    rows = Attachment.objects.filter(
        conversation_id=conversation_id, message__isnull=False
    ).order_by("pk")
    for attachment in rows:
        found.setdefault(attachment.message_id or 0, []).append(attachment)
    return found


def delete_files(names: Iterable[str]) -> None:
    """Delete stored files no attachment names any more (a question asked
    again shares its files with the first version)."""
    wanted = [name for name in names if name]
    kept = set(
        Attachment.objects.filter(
            models.Q(storage_name__in=wanted) | models.Q(thumbnail_name__in=wanted)
        ).values_list("storage_name", "thumbnail_name")
    )
    named = {name for pair in kept for name in pair}
    for name in wanted:
        if name not in named:
            default_storage.delete(name)


@receiver(post_delete, sender=Attachment)
def _delete_stored_files(sender: Any, instance: Attachment, **kwargs: Any) -> None:
    # After the commit: a deletion rolled back keeps its files.
    names = [instance.storage_name, instance.thumbnail_name]
    transaction.on_commit(lambda: delete_files(names))
