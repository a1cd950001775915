"""The sidebar: its lists a page at a time, pins, the archive, folders.

Lists and filing live in `chat.models.sidebar`; these views read the request
and render partials. Changes are POST only (CSRF from the page's hx-headers);
someone else's conversation or folder is a 404, as in chat.web.conversations.views.
A change that moves an entry answers with out-of-band swaps only
(`chat/_filed.html`): the entry leaves its place, and the sections it may now
be in (Pinned, the folders, the date groups) come back rendered; the page's
static/chat/sidebar.js puts a returning entry in date order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap

from chat.http.requests import SignedInRequest, text_response
from chat.models import Conversation, Folder
from chat.models import sidebar as lists
from chat.models.sidebar import Cursor
from chat.web.sidebar.forms import FolderForm
from chat.web.sidebar.lists import (
    Row,
    current_page_pk,
    more_url,
    page_rows,
    sections,
    sidebar_context,
)


def _after(request: HttpRequest) -> Cursor | None:
    """The `after` cursor of a page request; a 400 for a malformed one."""
    text = request.GET.get("after")
    if text is None:
        return None
    cursor = Cursor.parse(text)
    if cursor is None:
        raise BadCursor
    return cursor


class BadCursor(Exception):
    pass


def _bad_cursor() -> HttpResponse:
    return text_response(_("That list position is not valid: reload the page."), 400)


@login_required
@require_GET
def sidebar_page(request: SignedInRequest) -> HttpResponse:
    """The next page of the date-grouped list (the sentinel at its end asks
    for it when scrolled into view): its rows, then the next sentinel."""
    try:
        after = _after(request)
    except BadCursor:
        return _bad_cursor()
    found = lists.sidebar_page(request.user, after)
    context = {
        "rows": page_rows(found, current_page_pk(request), after),
        "more_url": more_url("sidebar_page", found),
    }
    return render(request, "chat/_sidebar_page.html", context)


def _own_folder(request: SignedInRequest, pk: int) -> Folder:
    return get_object_or_404(Folder, pk=pk, owner=request.user)


@login_required
@require_GET
def folder_page(request: SignedInRequest, pk: int) -> HttpResponse:
    folder = _own_folder(request, pk)
    try:
        after = _after(request)
    except BadCursor:
        return _bad_cursor()
    found = lists.page(lists.in_folder(request.user, folder), after)
    context = {
        "rows": page_rows(found, current_page_pk(request), grouped=False),
        "more_url": more_url("folder_page", found, folder.pk),
    }
    return render(request, "chat/_sidebar_page.html", context)


# Filing: pin, archive, move. The entry leaves its place and comes back where
# it now belongs (see the module's docstring).


def _filed(request: SignedInRequest, conversation: Conversation) -> HttpResponse:
    if not request.htmx:
        back = request.POST.get("next", "")
        if back and url_has_allowed_host_and_scheme(back, allowed_hosts=None):
            return redirect(back)
        return redirect(conversation)
    current = current_page_pk(request)
    dated = (
        conversation.archived_at is None
        and conversation.pinned_at is None
        and conversation.folder_id is None
    )
    context = {
        **sections(request.user, current),
        "item": conversation,
        "row": Row(
            conversation,
            lists.date_group(conversation.updated_at),
            "",
            conversation.pk == current,
        )
        if dated
        else None,
    }
    # Out-of-band swaps only: the element that asked may be among those moved.
    return reswap(render(request, "chat/_filed.html", context), "none")


def _filing(
    request: SignedInRequest,
    pk: int,
    change: Any,
    *args: object,
) -> HttpResponse:
    conversation = change(request.user, pk, *args)
    if conversation is None:
        raise Http404("No such conversation.")
    return _filed(request, conversation)


def _filing_view(
    change: Callable[[Any, int], Conversation | None],
) -> Callable[[SignedInRequest, int], HttpResponse]:
    @login_required
    @require_POST
    def view(request: SignedInRequest, pk: int) -> HttpResponse:
        return _filing(request, pk, change)

    return view


pin_conversation = _filing_view(lists.pin)
unpin_conversation = _filing_view(lists.unpin)
archive_conversation = _filing_view(lists.archive)
restore_conversation = _filing_view(lists.restore)


# The archive: its own page, a page at a time.


@login_required
@require_GET
def archived(request: SignedInRequest) -> HttpResponse:
    try:
        after = _after(request)
    except BadCursor:
        return _bad_cursor()
    found = lists.page(lists.archived(request.user), after, field="archived_at")
    context: dict[str, object] = {
        "archived_rows": found.items,
        "archived_more_url": more_url("archived", found),
    }
    if request.htmx and after is not None:
        return render(request, "chat/_archived_page.html", context)
    context.update(sidebar_context(request))
    return render(request, "chat/archived.html", context)


# Folders: create, rename, delete; move a conversation into one.


def _folder_form(
    request: SignedInRequest, form: FolderForm, status: int = 200
) -> HttpResponse:
    template = "chat/_folder_form.html" if request.htmx else "chat/folder_form.html"
    return render(request, template, {"form": form}, status=status)


def _save_folder(form: FolderForm) -> bool:
    """Save a valid form; False (an error on the form) if the name was taken
    meanwhile (the constraint folder_name_unique_per_owner)."""
    try:
        with transaction.atomic():
            form.save()
    except IntegrityError:
        form.name_taken()
        return False
    return True


def _folders_changed(request: SignedInRequest) -> HttpResponse:
    if not request.htmx:
        return redirect("home")
    context = sections(request.user, current_page_pk(request))
    return reswap(render(request, "chat/_folders_changed.html", context), "none")


def _edit_folder(request: SignedInRequest, folder: Folder) -> HttpResponse:
    """GET: the form; POST: saved (the folders rendered again), or the form
    with its error."""
    form = FolderForm(request.POST or None, instance=folder)
    if request.method != "POST":
        return _folder_form(request, form)
    if form.is_valid() and _save_folder(form):
        return _folders_changed(request)
    return _folder_form(request, form, status=422)


@login_required
@require_http_methods(["GET", "POST"])
def create_folder(request: SignedInRequest) -> HttpResponse:
    return _edit_folder(request, Folder(owner=request.user))


@login_required
@require_http_methods(["GET", "POST"])
def rename_folder(request: SignedInRequest, pk: int) -> HttpResponse:
    return _edit_folder(request, _own_folder(request, pk))


@login_required
@require_POST
def delete_folder(request: SignedInRequest, pk: int) -> HttpResponse:
    """The folder goes; its conversations go back to the list (the foreign
    key sets them free), with the date groups they belong in."""
    folder = _own_folder(request, pk)
    freed = list(lists.in_folder(request.user, folder).values_list("pk", flat=True))
    folder.delete()
    if not request.htmx:
        return redirect("home")
    current = current_page_pk(request)
    context = {
        **sections(request.user, current),
        "freed": [
            Row(c, lists.date_group(c.updated_at), "", c.pk == current)
            for c in lists.dated(request.user).filter(pk__in=freed)
        ],
    }
    return reswap(render(request, "chat/_folders_changed.html", context), "none")


@login_required
@require_http_methods(["GET", "POST"])
def move_conversation(request: SignedInRequest, pk: int) -> HttpResponse:
    """Into a folder (`folder`: one of the owner's, or blank for none), or a
    new one (`name`). GET: the form, in the entry's place."""
    conversation = get_object_or_404(
        Conversation, pk=pk, owner=request.user, listed=True
    )
    folders = Folder.objects.filter(owner=request.user)
    blank = Folder(owner=request.user)
    form = FolderForm(instance=blank)
    error = ""
    if request.method == "POST":
        if request.POST.get("name", "").strip():
            form = FolderForm(request.POST, instance=blank)
            if form.is_valid() and _save_folder(form):
                return _filing(request, pk, lists.move, form.instance)
        else:
            chosen = request.POST.get("folder", "")
            if not chosen:
                return _filing(request, pk, lists.move, None)
            if not (chosen.isascii() and chosen.isdigit() and len(chosen) < 19):
                error = _("Choose one of your folders.")
            else:
                folder = get_object_or_404(folders, pk=int(chosen))
                return _filing(request, pk, lists.move, folder)
    status = 422 if request.method == "POST" else 200
    context = {
        "item": conversation,
        "folders": folders,
        "form": form,
        "error": error,
    }
    template = "chat/_move_form.html" if request.htmx else "chat/move.html"
    return render(request, template, context, status=status)
