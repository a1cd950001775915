"""Shared links: a conversation readable by anyone holding an unguessable token.

Only the token's SHA-256 is stored: a leaked database opens no link, and a lookup
by digest tells an attacker timing nothing about the token. A **snapshot** link
shows the conversation up to the last message that was finished when it was made
(or last updated); a **live** link follows the conversation, streaming answers to
its viewers (`chat.sockets.share_consumers`).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import models, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from chat.models.conversations import Conversation
from chat.models.messages import Message

logger = logging.getLogger(__name__)

TOKEN_BYTES = 32  # 256 bits


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ShareLinkQuerySet(models.QuerySet["ShareLink"]):
    def by_token(self, token: str) -> ShareLinkQuerySet:
        return self.filter(token_digest=token_digest(token))


class ShareLink(models.Model):
    class Mode(models.TextChoices):
        SNAPSHOT = "snapshot", _("Snapshot")
        LIVE = "live", _("Live")

    class Status(models.TextChoices):
        ACTIVE = "active", _("Active")
        EXPIRED = "expired", _("Expired")
        REVOKED = "revoked", _("Revoked")

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="share_links",
        verbose_name=_("conversation"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="share_links",
        verbose_name=_("created by"),
    )
    token_digest = models.CharField(
        max_length=64, unique=True, editable=False, verbose_name=_("token digest")
    )
    # The token's first characters, so its owner can tell links apart.
    token_hint = models.CharField(
        max_length=8, editable=False, verbose_name=_("token hint")
    )
    mode = models.CharField(
        max_length=10, choices=Mode, default=Mode.SNAPSHOT, verbose_name=_("mode")
    )
    # Snapshot links show the finished messages up to this one (by id).
    snapshot_upto = models.BigIntegerField(
        null=True, blank=True, editable=False, verbose_name=_("snapshot upto")
    )
    include_thinking = models.BooleanField(
        default=False, verbose_name=_("include thinking")
    )
    # Whether viewers see what the tools gave (a turn's tool calls are shown
    # either way: `chat.live.protocol.share_frames`).
    include_tool_results = models.BooleanField(
        default=True, verbose_name=_("include tool results")
    )
    # Whether viewers may open the files attached to the shared questions.
    include_attachments = models.BooleanField(
        default=True, verbose_name=_("include attachments")
    )
    expires_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("expires at")
    )
    revoked_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("revoked at")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = ShareLinkQuerySet.as_manager()

    class Meta:
        verbose_name = _("share link")
        verbose_name_plural = _("share links")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return (
            f"{self.get_mode_display()} link {self.token_hint}… to {self.conversation}"
        )

    @classmethod
    def create_for(
        cls,
        conversation: Conversation,
        *,
        mode: str = Mode.SNAPSHOT,
        include_thinking: bool = False,
        include_tool_results: bool = True,
        include_attachments: bool = True,
        expires_at: datetime | None = None,
    ) -> tuple[ShareLink, str]:
        """A new link and its token (shown once: only its digest is kept)."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        link = cls(
            conversation=conversation,
            created_by=conversation.owner,
            token_digest=token_digest(token),
            token_hint=token[:6],
            mode=mode,
            include_thinking=include_thinking,
            include_tool_results=include_tool_results,
            include_attachments=include_attachments,
            expires_at=expires_at,
        )
        link.snapshot_upto = link.last_finished_id()
        link.save()
        return link, token

    def matches(self, token: str) -> bool:
        return secrets.compare_digest(self.token_digest, token_digest(token))

    @property
    def is_live(self) -> bool:
        return self.mode == ShareLink.Mode.LIVE

    @property
    def group_name(self) -> str:
        """The channel-layer group of this link's open sockets."""
        return f"share.{self.pk}"

    def status_at(self, now: datetime | None = None) -> str:
        if self.revoked_at is not None:
            return ShareLink.Status.REVOKED
        if self.expires_at is not None and self.expires_at <= (now or timezone.now()):
            return ShareLink.Status.EXPIRED
        return ShareLink.Status.ACTIVE

    @property
    def status(self) -> str:
        return self.status_at()

    @property
    def is_active(self) -> bool:
        return self.status == ShareLink.Status.ACTIVE

    def seconds_left(self) -> float | None:
        """Until it expires; None if it never does."""
        if self.expires_at is None:
            return None
        return max(0.0, (self.expires_at - timezone.now()).total_seconds())

    def last_finished_id(self) -> int | None:
        finished = self.conversation.messages.exclude(status=Message.Status.STREAMING)
        return finished.order_by("-pk").values_list("pk", flat=True).first()

    def update_snapshot(self) -> None:
        """Move the snapshot point to the last finished message."""
        self.snapshot_upto = self.last_finished_id()
        self.save(update_fields=["snapshot_upto", "updated_at"])

    def revoke(self) -> None:
        """Revoke the link and close its sockets (`chat.sockets.share_consumers`)."""
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at", "updated_at"])
        transaction.on_commit(self.close_sockets)

    async def aclose_sockets(self) -> None:
        """Tell every open socket of this link, in any process, to close."""
        layer = get_channel_layer()
        if layer is not None:
            await layer.group_send(self.group_name, {"type": "share.gone"})

    def close_sockets(self) -> None:
        try:
            async_to_sync(self.aclose_sockets)()
        except Exception:
            # The link is closed for new viewers either way; open sockets are
            # also closed when their expiry passes or they reconnect.
            logger.warning("closing the sockets of %s failed", self, exc_info=True)

    def visible_messages(self) -> models.QuerySet[Message]:
        """What a viewer sees: everything shown of a live link; a snapshot's
        finished messages on the branch that was shown when it was made or
        updated, up to its point (a version switched to since leaves it be)."""
        messages = self.conversation.messages.order_by("pk")
        if self.is_live:
            return messages
        if self.snapshot_upto is None:
            return messages.none()
        branch = self.conversation.branch_to(self.snapshot_upto)
        return (
            Message.objects.filter(pk__in=branch)
            .exclude(status=Message.Status.STREAMING)
            .order_by("pk")
        )


@receiver(post_delete, sender=ShareLink)
def _close_deleted_links_sockets(sender: Any, instance: ShareLink, **_: Any) -> None:
    """A link deleted (with its conversation, say) leaves no socket open."""
    transaction.on_commit(instance.close_sockets)
