"""Shared links: the owner's dialog and list, and the viewer's page."""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chat.http.requests import SignedInRequest
from chat.models import (
    Attachment,
    Message,
    SharedMessage,
    ShareLink,
    SiteDefaults,
    Team,
)
from chat.models.attachments import AttachmentView
from chat.models.paging import id_at, numbered_page
from chat.web.conversations.attachments import shared_attachment
from chat.web.conversations.views import _owned
from chat.web.sharing.forms import ShareLinkForm

Response = TypeVar("Response", bound=HttpResponseBase)


def _dialog(
    request: SignedInRequest,
    pk: int,
    form: ShareLinkForm | None = None,
    new: tuple[ShareLink, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    conversation = _owned(request, pk)
    context = {
        "conversation": conversation,
        "links": conversation.share_links.all(),
        "form": form or ShareLinkForm(),
        "new_link": new[0] if new else None,
        "new_url": (
            request.build_absolute_uri(reverse("shared", args=[new[1]]))
            if new is not None
            else ""
        ),
        "teams": Team.objects.of(request.user),
        "shared_team_ids": set(
            conversation.shared_with_teams.values_list("pk", flat=True)
        ),
    }
    return render(request, "chat/_share_dialog.html", context, status=status)


@login_required
@require_GET
def share_dialog(request: SignedInRequest, pk: int) -> HttpResponse:
    return _dialog(request, pk)


@login_required
@require_POST
def create_share_link(request: SignedInRequest, pk: int) -> HttpResponse:
    conversation = _owned(request, pk)
    form = ShareLinkForm(request.POST)
    if not form.is_valid():
        return _dialog(request, pk, form=form, status=422)
    new = ShareLink.create_for(
        conversation,
        mode=form.cleaned_data["mode"],
        include_thinking=form.cleaned_data["include_thinking"],
        include_tool_results=form.cleaned_data["include_tool_results"],
        include_attachments=form.cleaned_data["include_attachments"],
        expires_at=form.expires_at(),
    )
    return _dialog(request, pk, new=new)


def _own_link(request: SignedInRequest, link_pk: int) -> ShareLink:
    # Someone else's link is a 404, like someone else's conversation.
    return get_object_or_404(
        ShareLink.objects.select_related("conversation"),
        pk=link_pk,
        created_by=request.user,
        conversation__owner=request.user,
    )


def _after_change(request: SignedInRequest, link: ShareLink) -> HttpResponse:
    if request.htmx and request.POST.get("from") == "dialog":
        return _dialog(request, link.conversation_id)
    if request.htmx:
        return render(request, "chat/_my_link.html", {"link": link})
    return redirect("my_links")


@login_required
@require_POST
def update_share_link(request: SignedInRequest, link_pk: int) -> HttpResponse:
    link = _own_link(request, link_pk)
    if link.is_live or not link.is_active:
        return HttpResponse(
            _("Only an active snapshot link can be updated."),
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    link.update_snapshot()
    return _after_change(request, link)


@login_required
@require_POST
def revoke_share_link(request: SignedInRequest, link_pk: int) -> HttpResponse:
    link = _own_link(request, link_pk)
    link.revoke()
    return _after_change(request, link)


@login_required
@require_GET
def my_links(request: SignedInRequest) -> HttpResponse:
    links = ShareLink.objects.filter(created_by=request.user).select_related(
        "conversation"
    )
    return render(request, "chat/my_links.html", {"links": links})


@login_required
@require_POST
def share_with_team(request: SignedInRequest, pk: int) -> HttpResponse:
    """Share the conversation with one of the owner's teams, or stop sharing."""
    conversation = _owned(request, pk)
    team_id = request.POST.get("team", "")
    if not team_id.isdigit():
        raise Http404("No such team.")
    team = get_object_or_404(Team.objects.of(request.user), pk=int(team_id))
    if request.POST.get("shared") == "1":
        team.conversations.add(conversation)
    else:
        team.conversations.remove(conversation)
    if request.htmx:
        return _dialog(request, pk)
    return redirect(conversation)


# The viewer's side: no account needed unless the site says so.


def _viewable(request: HttpRequest, token: str) -> ShareLink | HttpResponse:
    link = (
        ShareLink.objects.by_token(token)
        .select_related("conversation", "conversation__owner")
        .first()
    )
    if link is None or not link.matches(token):
        raise Http404("No such link.")
    if not link.is_active:
        return _private(
            render(request, "chat/share_gone.html", {"link": link}, status=410)
        )
    if SiteDefaults.load().share_requires_sign_in and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    return link


def _private(response: Response) -> Response:
    """Shared pages stay out of search engines, caches and Referer headers."""
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


def author_name(user: object) -> str:
    full = getattr(user, "get_full_name", lambda: "")()
    return full or getattr(user, "get_username", lambda: "")()


@require_GET
def shared(request: HttpRequest, token: str) -> HttpResponse:
    found = _viewable(request, token)
    if isinstance(found, HttpResponse):
        return found
    link = found
    conversation = link.conversation
    context = _page(link, token, None)
    # The socket sends what came after the page's newest message (its ordinal).
    seen = context["chat_messages"][-1].ordinal if context["chat_messages"] else 0
    context |= {
        "link": link,
        "title": conversation.display_title,
        "author": author_name(conversation.owner),
        "ws_path": f"/ws/share/{token}/?seen={seen}" if link.is_live else "",
    }
    return _private(render(request, "chat/shared.html", context))


@require_GET
def shared_older_messages(
    request: HttpRequest, token: str, before: int
) -> HttpResponse:
    """The page of messages before the ordinal `before`, as the page shows them."""
    found = _viewable(request, token)
    if isinstance(found, HttpResponse):
        return found
    context = _page(found, token, before)
    return _private(render(request, "chat/_message_page.html", context))


def read_only_page(
    messages: QuerySet[Message],
    before: int | None,
    *,
    key: str | int,
    kind: str,
    include_thinking: bool,
    include_attachments: bool = True,
    include_tool_results: bool = True,
) -> dict[str, Any]:
    """The page of `messages` before the ordinal `before` (the newest if None) as
    a shared (`kind` "shared", `key` the token) or team page ("team", the
    conversation's id) shows it, with the URL of the page before it."""
    page = numbered_page(messages.prefetch_related("attachments"), before)
    if page is None:
        raise Http404("No such message.")
    older = page.older
    return {
        "chat_messages": [
            SharedMessage.of(
                item.message,
                item.ordinal,
                include_thinking=include_thinking,
                include_tool_results=include_tool_results,
                source_url=reverse(f"{kind}_message_source", args=[key, item.ordinal]),
                files=[
                    _file_view(attachment, kind, key)
                    for attachment in item.message.attachments.all()
                ]
                if include_attachments
                else [],
            )
            for item in page.items
        ],
        "older_url": reverse(f"{kind}_older_messages", args=[key, older])
        if older
        else "",
    }


def _file_view(attachment: Attachment, kind: str, key: str | int) -> AttachmentView:
    """A file as a reader opens it: a link's viewer through the link, a team
    member by its own URL (which checks the team)."""
    if kind != "shared":
        return attachment.view()
    args = [key, attachment.public_id]
    return attachment.view(
        url=reverse("shared_file", args=args),
        thumbnail_url=reverse("shared_thumbnail", args=args),
    )


def source_of(messages: QuerySet[Message], ordinal: int) -> HttpResponse:
    """The `ordinal`-th message's markdown as plain text (its copy button)."""
    message_id = id_at(messages, ordinal)
    if message_id is None:
        raise Http404("No such message.")
    return HttpResponse(
        messages.get(pk=message_id).content, content_type="text/plain; charset=utf-8"
    )


def _page(link: ShareLink, token: str, before: int | None) -> dict[str, Any]:
    return read_only_page(
        link.visible_messages(),
        before,
        key=token,
        kind="shared",
        include_thinking=link.include_thinking,
        include_tool_results=link.include_tool_results,
        include_attachments=link.include_attachments,
    )


@require_GET
def shared_message_source(
    request: HttpRequest, token: str, ordinal: int
) -> HttpResponse:
    found = _viewable(request, token)
    if isinstance(found, HttpResponse):
        return found
    return _private(source_of(found.visible_messages(), ordinal))


@require_GET
def shared_file(request: HttpRequest, token: str, public_id: str) -> HttpResponseBase:
    return _shared_file(request, token, public_id, thumbnail=False)


@require_GET
def shared_thumbnail(
    request: HttpRequest, token: str, public_id: str
) -> HttpResponseBase:
    return _shared_file(request, token, public_id, thumbnail=True)


def _shared_file(
    request: HttpRequest, token: str, public_id: str, *, thumbnail: bool
) -> HttpResponseBase:
    found = _viewable(request, token)
    if isinstance(found, HttpResponse):
        if found.status_code == 410:  # a file of a link that is gone: none
            raise Http404(_("No such file."))
        return found
    return _private(shared_attachment(request, found, public_id, thumbnail=thumbnail))
