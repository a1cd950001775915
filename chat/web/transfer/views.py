"""Export and import pages (`chat.transfer`): one conversation as Markdown or
JSON from its page, all of one's conversations as a ZIP streamed from the
user's page, and the import there (the upload with its progress is
static/chat/transfer.js; the result is `chat/_import_result.html`). Staff
export a user's conversations from the user admin (`staff_export`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import SyncToAsync, sync_to_async
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from chat.http.requests import SignedInRequest
from chat.http.uploads import LimitedUpload, uploaded_files
from chat.transfer.detect import megabytes
from chat.transfer.export import (
    conversation_document,
    for_export,
    safe_name,
)
from chat.transfer.imports import Import
from chat.transfer.incoming import ImportRefused, Summary
from chat.transfer.markdown import conversation_markdown
from chat.transfer.responses import attachment, zip_response


def too_large_message() -> str:
    limit = settings.TRANSFER_IMPORT_MAX_BYTES
    return _("The file is too large: imports are limited to %(limit)s.") % {
        "limit": megabytes(limit)
    }


@login_required
@require_GET
def export_conversation(request: SignedInRequest, pk: int, kind: str) -> HttpResponse:
    conversation = get_object_or_404(for_export(request.user), pk=pk)
    name = safe_name(conversation.display_title)
    if kind == "md":
        response = HttpResponse(
            conversation_markdown(conversation),
            content_type="text/markdown; charset=utf-8",
        )
        return attachment(response, f"{name}.md")
    if kind == "json":
        document = conversation_document(conversation)
        response = HttpResponse(
            json.dumps(document, ensure_ascii=False, indent=2),
            content_type="application/json; charset=utf-8",
        )
        return attachment(response, f"{name}.json")
    raise Http404("No such export.")


@login_required
@require_GET
def export_all(request: SignedInRequest) -> StreamingHttpResponse:
    return zip_response(request, request.user)


@csrf_exempt  # checked in `_received`, after the upload handler is set
@require_POST
async def import_conversations(request: HttpRequest) -> HttpResponse:
    """The import of an uploaded export. A body over the limit never gets
    here: the server refuses it before it is read (`chat.http.request_bodies`).

    Async: the form is read in a worker thread of its own and the file in a
    worker process under a budget (`chat.transfer.imports`, `chat.work`);
    then it is stored a batch per transaction and a call each, where
    `_storing` says, so others' calls go between. When the requester goes
    away, the import stops after its current batch and removes what it
    stored."""
    user = await request.auser()
    handler = LimitedUpload(request)
    request.upload_handlers = [handler]
    received = await sync_to_async(_received, thread_sensitive=False)(
        request, handler, user
    )
    if isinstance(received, HttpResponse):
        return received
    job = Import(user, received.temporary_file_path())
    try:
        # The file read in a worker process (killed if this is cancelled);
        # then a batch per call, so others' calls go between.
        await job.aread()
        while await _storing(job.step)():
            pass
    except ImportRefused as refusal:
        await _storing(job.undo)()
        error = _("%(reason)s Nothing was imported.") % {"reason": refusal}
        return await sync_to_async(_result)(request, error=error, status=422)
    except BaseException:
        # Cancelled (the requester went away) or failed: after the batch
        # under way, what was stored is removed.
        await asyncio.shield(_storing(job.undo)())
        raise
    finally:
        job.close()
        received.close()
    return await sync_to_async(_result)(request, summary=job.summary)


_T = TypeVar("_T")


def _storing(call: Callable[[], _T]) -> Callable[[], Awaitable[_T]]:
    """`call` (a batch of the import, or its undoing) as a coroutine run in
    the right thread for the database.

    SQLite has one write lock per file. Django runs an async view's
    thread-sensitive calls in a thread of the request's own, not in the one
    thread (asgiref's `single_thread_executor`) where Channels runs every
    socket's database calls; a socket's write then waited for the lock in
    SQLite's busy handler, which polls up to 100 ms apart and lost to the
    import's back-to-back batches for seconds (another user's question
    waited 2.8 s, 80 batches: tests/transfer/test_sqlite_import.py). In that
    one thread the calls queue in order: each of theirs waits for one batch
    at most. PostgreSQL locks rows, not the database: there the request's
    own thread, so theirs never wait for a batch at all."""
    if connection.vendor == "sqlite":
        return sync_to_async(
            call, thread_sensitive=False, executor=SyncToAsync.single_thread_executor
        )
    return sync_to_async(call)


def _received(
    request: HttpRequest, handler: LimitedUpload, user: Any
) -> HttpResponse | TemporaryUploadedFile:
    """The token first, then who is asking (a POST without one is a 403 like
    every other, signed in or not: tests/web/security/test_every_url.py), then
    the file; or the refusal."""
    files = uploaded_files(
        request, lambda message, status: _result(request, error=message, status=status)
    )
    if isinstance(files, HttpResponse):
        return files
    if not user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    upload = files.get("file")
    if handler.too_large:
        return _result(request, error=too_large_message(), status=413)
    if not isinstance(upload, TemporaryUploadedFile):  # LimitedUpload makes one
        return _result(request, error=_("Choose a file to import."), status=422)
    return upload


def _result(
    request: HttpRequest,
    *,
    summary: Summary | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    """The result for the page's script (`chat/_import_result.html`); a form
    sent without it goes back to the user page with the result as a notice."""
    if request.headers.get("X-Requested-With") == "XMLHttpRequest":
        context = {"summary": summary, "error": error}
        return render(request, "chat/_import_result.html", context, status=status)
    if summary is not None:
        messages.success(request, summary_text(summary))
    else:
        messages.error(request, error)
    return redirect("account")


def summary_text(summary: Summary) -> str:
    conversations, count = summary.conversations, summary.messages
    text = _("Imported from %(source)s: %(conversations)s, %(messages)s") % {
        "source": summary.source,
        "conversations": ngettext(
            "%(count)d conversation", "%(count)d conversations", conversations
        )
        % {"count": conversations},
        "messages": ngettext("%(count)d message", "%(count)d messages", count)
        % {"count": count},
    }
    if summary.already_imported:
        text += _("; %(count)d skipped as already imported") % {
            "count": summary.already_imported
        }
    lines = summary.lines()
    warnings = _(" Warnings: %(lines)s.") % {"lines": "; ".join(lines)}
    return text + "." + (warnings if lines else "")


def transfer_section() -> dict[str, object]:
    """The context of the user page's export and import section
    (`chat/_transfer.html`)."""
    limit = settings.TRANSFER_IMPORT_MAX_BYTES
    return {"import_max_bytes": limit, "import_limit": megabytes(limit)}
