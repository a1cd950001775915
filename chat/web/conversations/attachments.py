"""Attachments: the upload the composer makes while its user types, the
removal of one not yet sent, and the files themselves, served only to those
who may read their conversation (its owner, its team, a shared link's viewer
when the link includes them): to anyone else a 404, as if it did not exist.

The answers are JSON (`{"error": ...}` when refused), read by the composer's
script; the contract is in the README ("Attachments")."""

from __future__ import annotations

from collections.abc import Iterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    QueryDict,
    StreamingHttpResponse,
)
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chat import work
from chat.files.reading import read
from chat.files.refusals import Refused
from chat.files.uploads import Limits, Prepared
from chat.files.uploads import too_large as file_too_large
from chat.http.requests import SignedInRequest
from chat.http.streamed import streamed
from chat.http.uploads import LimitedUpload, uploaded_files
from chat.models import Attachment, Conversation, ModelProfile, ShareLink
from chat.models.teams import team_conversations

# What one read of a stored file takes: a socket's worth, not the whole file.
FILE_PIECE = 256 * 1024


class AttachmentUpload(LimitedUpload):
    limit_setting = "ATTACHMENT_MAX_BYTES"


def refusal(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def too_large() -> JsonResponse:
    return refusal(file_too_large(settings.ATTACHMENT_MAX_BYTES), 413)


@csrf_exempt  # checked in `_received`, after the upload handler is set
@require_POST
async def upload(request: HttpRequest) -> HttpResponse:
    """One file (`file`), for the conversation `conversation` if given, its
    tokens counted for the model `model` (a profile's id or tag) if given.

    Async: the body is parsed in a worker thread of its own, never in the one
    thread that runs every sync view and database call of the process (the
    sockets' too); the file is read (Pillow, pypdf) in a worker process under
    a budget (`chat.files.reading`), which ends if this request is abandoned.
    A body over the limit, or sent without a session cookie, never gets here:
    the server refuses it before it is read (`chat.http.request_bodies`)."""
    user = await request.auser()
    handler = AttachmentUpload(request)
    request.upload_handlers = [handler]
    received = await sync_to_async(_received, thread_sensitive=False)(request, handler)
    if isinstance(received, HttpResponse):
        return received
    if not isinstance(user, User):
        return refusal(_("Sign in to attach files."), 403)
    found = await sync_to_async(_chosen)(user, request.POST)
    if isinstance(found, HttpResponse):
        return found
    conversation, profile = found
    limits = Limits(
        max_bytes=settings.ATTACHMENT_MAX_BYTES,
        max_pixels=settings.ATTACHMENT_MAX_PIXELS,
        image_max_side=profile.image_max_side if profile else 1568,
        pdf_max_pages=settings.ATTACHMENT_PDF_MAX_PAGES,
        text_max_chars=settings.ATTACHMENT_TEXT_MAX_CHARS,
    )
    try:
        prepared = await read(
            *received,
            limits,
            owner=str(user.pk),
            budget=work.Budget(
                seconds=settings.ATTACHMENT_READ_SECONDS,
                memory_bytes=settings.ATTACHMENT_READ_MEMORY,
            ),
            owner_pixels=settings.ATTACHMENT_USER_PIXELS,
        )
    except Refused as refused:
        return refusal(refused.message, refused.status)
    if (
        prepared.kind == Attachment.Kind.IMAGE
        and profile
        and not profile.supports_vision
    ):
        return refusal(
            _("%(model)s cannot see images: %(reason)s")
            % {"model": profile.label, "reason": profile.vision_reason()},
            422,
        )
    attachment = await sync_to_async(store)(user, prepared, conversation, profile)
    return JsonResponse(attachment.to_dict(), status=201)


def store(
    owner: User,
    prepared: Prepared,
    conversation: Conversation | None,
    profile: ModelProfile | None,
) -> Attachment:
    """Keep a file read by `chat.files` (its storage, then its row)."""
    return Attachment.store(
        owner,
        name=prepared.name,
        data=prepared.data,
        content_type=prepared.content_type,
        kind=prepared.kind,
        text=prepared.text,
        note=prepared.note,
        thumbnail=prepared.thumbnail,
        sha256=prepared.sha256,
        conversation=conversation,
        profile=profile,
    )


def _received(
    request: HttpRequest, handler: AttachmentUpload
) -> HttpResponse | tuple[str, bytes]:
    """The CSRF check (which reads the form), then the file's name and bytes;
    or the refusal. Touches no database."""
    files = uploaded_files(request, refusal)
    if isinstance(files, HttpResponse):
        return files
    upload_file = files.get("file")
    if handler.too_large:
        return too_large()
    if upload_file is None:
        return refusal(_("Choose a file to attach."), 400)
    with upload_file:
        return upload_file.name or "", upload_file.read()


def _chosen(
    user: User, form: QueryDict
) -> HttpResponse | tuple[Conversation | None, ModelProfile | None]:
    """The conversation the file is for (the user's own) and the model its
    tokens are counted for."""
    conversation = None
    asked = str(form.get("conversation", ""))
    if asked:
        conversation = Conversation.objects.filter(
            pk=_number(asked), owner=user
        ).first()
        if conversation is None:
            return refusal(_("That conversation is not yours to attach files to."), 404)
    return conversation, _profile(user, form, conversation)


def _number(value: str) -> int:
    return int(value) if value.isdigit() else 0


def _profile(
    user: User, form: QueryDict, conversation: Conversation | None
) -> ModelProfile | None:
    """The model the composer has chosen, else the conversation's next one."""
    chosen = str(form.get("model", "")).strip()
    usable = ModelProfile.objects.usable_by(user).filter(enabled=True)
    if chosen:
        found = usable.filter(pk=_number(chosen)).first() or (
            usable.filter(tag=chosen).first()
        )
        if found is not None:
            return found
    if conversation is not None:
        try:
            return conversation.model_for_next_answer()
        except Conversation.NoModel:
            return None
    return ModelProfile.objects.default()


@login_required
@require_http_methods(["GET", "HEAD", "DELETE"])
def attachment(request: SignedInRequest, public_id: str) -> HttpResponseBase:
    """The file (GET), or its removal before it was sent (DELETE, the owner's)."""
    if request.method == "DELETE":
        return _remove(request, public_id)
    return serve(request, _readable(request, public_id), thumbnail=False)


@csrf_protect
def _remove(request: SignedInRequest, public_id: str) -> HttpResponse:
    found = get_object_or_404(Attachment, public_id=public_id, owner=request.user)
    if found.message_id is not None:
        return refusal(
            _("This file was sent with a question: it stays with the conversation."),
            409,
        )
    found.delete()
    return HttpResponse(status=204)


@login_required
@require_GET
def thumbnail(request: SignedInRequest, public_id: str) -> StreamingHttpResponse:
    return serve(request, _readable(request, public_id), thumbnail=True)


def _readable(request: SignedInRequest, public_id: str) -> Attachment:
    """The owner's any time; a team's once sent in a conversation shared with
    it. Anyone else: 404."""
    found = get_object_or_404(Attachment, public_id=public_id)
    if found.owner_id == request.user.pk:
        return found
    shared = team_conversations(request.user)
    if found.message_id is not None and (
        shared.filter(pk=found.conversation_id or 0).exists()
    ):
        return found
    raise Http404(_("No such file."))


def shared_attachment(
    request: HttpRequest, link: ShareLink, public_id: str, *, thumbnail: bool
) -> StreamingHttpResponse:
    """A file of a shared link's messages (`chat.web.sharing.views` checks the link)."""
    if not link.include_attachments:
        raise Http404(_("No such file."))
    found = get_object_or_404(
        Attachment,
        public_id=public_id,
        message__in=link.visible_messages(),
    )
    return serve(request, found, thumbnail=thumbnail)


def serve(
    request: HttpRequest, found: Attachment, *, thumbnail: bool
) -> StreamingHttpResponse:
    """The stored file, read a piece at a time outside the database thread
    (`chat.http.streamed`): shown in the page only when it is an image the site
    re-encoded, else downloaded; never sniffed, never cached by others."""
    name = found.thumbnail_name if thumbnail else found.storage_name
    if not name:
        raise Http404(_("No thumbnail."))
    response = StreamingHttpResponse(
        streamed(request, _pieces(name), reads_database=False),
        content_type=found.content_type,
    )
    if not thumbnail:
        response["Content-Length"] = str(found.size)
    response["Content-Disposition"] = (
        content_disposition_header(not found.inline, found.name) or "attachment"
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=3600"
    # Were it ever opened as a page: no scripts, no same-origin rights.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response


def _pieces(name: str) -> Iterator[bytes]:
    with default_storage.open(name, "rb") as handle:
        while piece := handle.read(FILE_PIECE):
            yield piece
