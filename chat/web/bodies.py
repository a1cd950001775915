"""The pages' request bodies (`chat.http.request_bodies`): the two uploads
take their file's limit plus the form around it, from a signed-in user only;
every other page Django's cap on a form's fields, and no multipart form."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from chat.files.uploads import mebibytes, too_large
from chat.http.request_bodies import Route, json_error, text
from chat.http.uploads import FORM_OVERHEAD
from chat.web.transfer.urls import IMPORT_PATH
from chat.web.transfer.views import too_large_message

ATTACHMENTS_PATH = "/attachments/"


def upload_route(path: str) -> Route | None:
    """The route of the import's upload or an attachment's; None for others."""
    if path == "/" + IMPORT_PATH:
        return Route(
            settings.TRANSFER_IMPORT_MAX_BYTES + FORM_OVERHEAD,
            True,
            text,
            lambda limit: too_large_message(),
            _("Sign in to import conversations."),
        )
    if path == ATTACHMENTS_PATH:
        return Route(
            settings.ATTACHMENT_MAX_BYTES + FORM_OVERHEAD,
            True,
            json_error,
            lambda limit: too_large(settings.ATTACHMENT_MAX_BYTES),
            _("Sign in to attach files."),
        )
    return None


def page_route(path: str) -> Route:
    """Every other path's route."""
    # None: Django sets no cap; the pages' forms still get one.
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
    return Route(limit, False, text, _page_too_large)


def _page_too_large(limit: int) -> str:
    return _("The request is too large: this address takes at most %(limit)s.") % {
        "limit": mebibytes(limit)
    }
