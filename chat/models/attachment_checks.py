"""The refusals of a question's files, before they go with it: too many, not
the asker's (or removed), already sent, a picture to a model without vision,
documents over the context left. Each raises (or gives) an `AttachmentRefused`
with the message the asker reads; `Attachment.bind` and `Attachment.copy_to`
(`chat.models.attachments`) run them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.translation import gettext

from chat.models.messages import spoken_tokens

if TYPE_CHECKING:
    from chat.models.attachments import Attachment
    from chat.models.profiles import ModelProfile


class AttachmentRefused(Exception):
    """A question's attachments cannot go: not the asker's, already sent, too
    many, an image to a model without vision, or a document over the context."""


class DocumentsTooLarge(AttachmentRefused):
    """The documents do not fit the model's context: the asker may send them
    truncated instead (the composer offers it for this refusal's own code)."""


def not_too_many(ids: Sequence[str]) -> None:
    limit = settings.ATTACHMENT_MAX_FILES
    if len(ids) > limit:
        raise AttachmentRefused(
            gettext(
                "%(count)s files are attached; at most %(limit)s can go with "
                "one question."
            )
            % {"count": len(ids), "limit": limit}
        )


def all_found(ids: Sequence[str], found: Sequence[Attachment]) -> list[Attachment]:
    """The attachments of `ids` in their order, from the asker's `found`."""
    by_id = {attachment.public_id: attachment for attachment in found}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise AttachmentRefused(
            gettext(
                "An attached file is no longer available (removed, or not "
                "yours): attach it again."
            )
        )
    return [by_id[i] for i in ids]


def none_sent(attachments: Sequence[Attachment]) -> None:
    sent = [a.name for a in attachments if a.message_id is not None]
    if sent:
        raise AttachmentRefused(
            gettext("%(name)s was already sent with another question: attach it again.")
            % {"name": sent[0]}
        )


def seen_by(profile: ModelProfile, images: Sequence[Attachment]) -> None:
    if images and not profile.supports_vision:
        raise AttachmentRefused(
            gettext(
                "%(model)s cannot see images: %(reason)s Remove the image or "
                "choose a model with vision."
            )
            % {"model": profile.label, "reason": profile.vision_reason()}
        )


def picture_unseen(profile: ModelProfile) -> AttachmentRefused:
    """A question asked again with its picture, of a model without vision."""
    return AttachmentRefused(
        gettext(
            "This question has a picture and %(model)s cannot see "
            "images: %(reason)s Choose a model with vision, or ask again "
            "without the picture."
        )
        % {"model": profile.label, "reason": profile.vision_reason()}
    )


def documents_too_large(
    profile: ModelProfile, wanted: int, room_tokens: int
) -> DocumentsTooLarge:
    return DocumentsTooLarge(
        gettext(
            "The attached documents are ~%(wanted)s tokens; this "
            "model's context is %(context)s (~%(room)s left for them). "
            "Remove some, or send them truncated."
        )
        % {
            "wanted": spoken_tokens(wanted),
            "context": spoken_tokens(profile.context_length),
            "room": spoken_tokens(max(room_tokens, 0)),
        }
    )
