from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chat.http.requests import SignedInRequest, text_response
from chat.live.engine import control
from chat.models import (
    Conversation,
    EffectiveSettings,
    Message,
    ModelProfile,
    SettingsChange,
    quotas,
)
from chat.models import sidebar as lists
from chat.models.turn_rows import show_version as switch_version
from chat.web.conversations.forms import (
    FirstAdminForm,
    FirstQuestionForm,
    RenameForm,
    SettingsForm,
    ThinkingForm,
)
from chat.web.conversations.model_picker import picker_models
from chat.web.conversations.tools_menu import menu_for as tools_menu
from chat.web.sidebar.lists import current_page_pk, sidebar_context


def _no_users_yet() -> bool:
    return not get_user_model().objects.exists()


def _owned(request: SignedInRequest, pk: int) -> Conversation:
    # Someone else's conversation is a 404, never a 403: ids reveal nothing.
    return get_object_or_404(
        Conversation.objects.select_related("model_profile"),
        pk=pk,
        owner=request.user,
    )


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    if _no_users_yet():
        return redirect("setup")
    if not request.user.is_authenticated:
        return redirect("login")
    return _home_page(request, FirstQuestionForm(request.user))


def _home_page(
    request: HttpRequest, form: FirstQuestionForm, status: int = 200
) -> HttpResponse:
    context = {
        **sidebar_context(request),
        "default_model": Conversation.site_model_for(request.user),
        "form": form,
        "max_chars": settings.MESSAGE_MAX_CHARS,
        "picker_models": picker_models(request.user),
    }
    return render(request, "chat/index.html", context, status=status)


@require_http_methods(["GET", "POST"])
def setup(request: HttpRequest) -> HttpResponse:
    if not _no_users_yet():
        return redirect("home")
    form = FirstAdminForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("home")
    return render(request, "chat/setup.html", {"form": form})


@login_required
@require_POST
def new_conversation(request: SignedInRequest) -> HttpResponse:
    """The sidebar's "New conversation" (no question), or the home page's
    composer: the conversation and its first question, which the conversation
    page sends over its socket (`_first_question`), as if typed there."""
    form = FirstQuestionForm(request.user, request.POST)
    if not form.is_valid():
        # The typed question stays in the home page's field.
        return _home_page(request, form, status=422)
    current = lists.fresh_conversation(request.user)
    if form.cleaned_data["model"] is not None:
        current.model_profile = form.cleaned_data["model"]
        current.save(update_fields=["model_profile"])
    content = form.cleaned_data["content"]
    if content.strip():
        request.session[FIRST_QUESTION] = {
            "conversation": current.pk,
            "content": content,
            "client_id": secrets.token_hex(16),
        }
    return redirect(current)


# The home page's question, until the conversation has it: the page carries it
# to static/chat/composer.js (sendFirstQuestion), which sends it with this
# client_id once per tab. A reload before it was stored carries it again; once
# stored (a message with the client_id), never again.
FIRST_QUESTION = "chat.first_question"


def _first_question(
    request: SignedInRequest, current: Conversation
) -> dict[str, str] | None:
    carried = request.session.get(FIRST_QUESTION)
    if not isinstance(carried, dict) or carried.get("conversation") != current.pk:
        return None
    if current.messages.filter(client_id=carried["client_id"]).exists():
        del request.session[FIRST_QUESTION]
        return None
    return carried


@login_required
@require_GET
def conversation(request: SignedInRequest, pk: int) -> HttpResponse:
    current = _owned(request, pk)
    target = _message_id(request.GET.get("message"))
    reading_earlier = False
    if target is None:
        timeline = current.timeline_page()
    else:
        timeline, reading_earlier = current.timeline_around(target)
    context = {
        **sidebar_context(request, current),
        "conversation": current,
        "target_message": target,
        "reading_earlier": reading_earlier,
        "chat_messages": timeline.items,
        "older_url": _older_url(current, timeline.older),
        "thinking_form": ThinkingForm(instance=current),
        "quota_warnings": quotas.warnings(request.user),
        "first_question": _first_question(request, current),
        "picker_models": picker_models(request.user),
        "tool_menu": tools_menu(request.user, current),
        **_settings_context(current, SettingsForm(instance=current)),
    }
    return render(request, "chat/conversation.html", context)


def _message_id(raw: str | None) -> int | None:
    """A message id from the query string (a search hit's link); anything else
    is ignored: the page opens at its newest message."""
    if raw is None or not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        return None
    return int(raw)


@login_required
@require_GET
def quota_line(request: SignedInRequest) -> HttpResponse:
    """The line near the composer, fetched again after each answer."""
    context = {"quota_warnings": quotas.warnings(request.user)}
    return render(request, "chat/_quota_line.html", context)


@login_required
@require_GET
def older_messages(request: SignedInRequest, pk: int, before: int) -> HttpResponse:
    """The page of messages before the message `before` (the list's top when
    scrolled to), with the control that loads the page before it."""
    current = _owned(request, pk)
    timeline = current.timeline_page(before)
    context = {
        "conversation": current,
        "chat_messages": timeline.items,
        "older_url": _older_url(current, timeline.older),
    }
    return render(request, "chat/_message_page.html", context)


def _older_url(conversation: Conversation, cursor: int | None) -> str:
    if cursor is None:
        return ""
    return reverse("older_messages", args=[conversation.pk, cursor])


@login_required
@require_POST
def set_thinking(request: SignedInRequest, pk: int) -> HttpResponse:
    current = _owned(request, pk)
    form = ThinkingForm(request.POST, instance=current)
    status = 200
    notice = None
    if form.is_valid():
        form.save()
        if form.has_changed():
            notice = SettingsChange.record(current, ["thinking"])
    else:
        status = 400
        current.refresh_from_db()
    if not request.htmx:
        return redirect(current)
    context = {
        "conversation": current,
        "profile": _effective_profile(current),
        "thinking_form": form,
        "notice": notice,
    }
    return render(request, "chat/_thinking_toggle.html", context, status=status)


def _effective_profile(conversation: Conversation) -> ModelProfile | None:
    try:
        return conversation.model_for_next_answer()
    except Conversation.NoModel:
        return None


def _settings_context(
    conversation: Conversation, form: SettingsForm
) -> dict[str, object]:
    model_problem = ""
    try:
        effective: EffectiveSettings | None = conversation.effective_settings()
    except Conversation.NoModel as exc:
        effective = None
        if isinstance(exc, Conversation.ModelForbidden):
            # Said on the page, with the models the owner may choose instead.
            model_problem = str(exc)
    return {
        "settings_form": form,
        "effective": effective,
        "profile": effective.model.value if effective else None,
        "model_problem": model_problem,
    }


@login_required
@require_http_methods(["GET", "POST"])
def conversation_settings(request: SignedInRequest, pk: int) -> HttpResponse:
    """The settings panel: model, thinking, history, temperature, system prompt.
    Saved changes apply from the next message and leave a notice in the
    conversation; bad input is shown back with its errors, nothing saved."""
    current = _owned(request, pk)
    form = SettingsForm(request.POST or None, instance=current)
    status, notice = 200, None
    if request.method == "POST":
        if form.is_valid():
            form.save()
            notice = SettingsChange.record(current, form.changes())
            if not request.htmx:
                return redirect(current)
            form = SettingsForm(instance=current)
        else:
            status = 422
            current.refresh_from_db()
    context = {
        "conversation": current,
        "thinking_form": ThinkingForm(instance=current),
        "saved": notice is not None,
        "notice": notice,
        "oob": request.method == "POST",
        **_settings_context(current, form),
        "form": form,
    }
    template = "chat/_settings_panel.html" if request.htmx else "chat/settings.html"
    return render(request, template, context, status=status)


# Sidebar: rename and delete (htmx partials; plain POSTs redirect).


def _is_current_page(request: SignedInRequest, conversation: Conversation) -> bool:
    """Whether the htmx request comes from this conversation's own page."""
    return current_page_pk(request) == conversation.pk


def _item(
    request: SignedInRequest, conversation: Conversation, status: int = 200
) -> HttpResponse:
    context = {
        "item": conversation,
        "is_current": _is_current_page(request, conversation),
    }
    return render(request, "chat/_conversation_item.html", context, status=status)


@login_required
@require_GET
def conversation_item(request: SignedInRequest, pk: int) -> HttpResponse:
    """The sidebar entry (what "cancel" on the rename form swaps back in)."""
    return _item(request, _owned(request, pk))


@login_required
@require_http_methods(["GET", "POST"])
def rename_conversation(request: SignedInRequest, pk: int) -> HttpResponse:
    current = _owned(request, pk)
    form = RenameForm(request.POST or None, instance=current)
    if request.method == "POST" and form.is_valid():
        form.save()
        return _item(request, current) if request.htmx else redirect(current)
    status = 422 if request.method == "POST" else 200
    template = "chat/_rename_form.html" if request.htmx else "chat/rename.html"
    context = {"item": current, "form": form}
    return render(request, template, context, status=status)


@login_required
@require_POST
def delete_conversation(request: SignedInRequest, pk: int) -> HttpResponse:
    current = _owned(request, pk)
    live = current.messages.filter(
        status=Message.Status.STREAMING,
        updated_at__gte=timezone.now() - Message.ORPHAN_AFTER,
    )
    if live.exists():
        return text_response(
            _("An answer is still being written in this conversation: stop it first."),
            status=409,
        )
    was_current = _is_current_page(request, current)
    current.delete()
    if not request.htmx:
        return redirect("home")
    response = HttpResponse("")  # the sidebar entry is swapped for nothing
    if was_current:
        response["HX-Redirect"] = reverse("home")
    return response


@login_required
@require_GET
def message_source(request: SignedInRequest, pk: int, message_id: int) -> HttpResponse:
    """A message's markdown as plain text (the answer's copy button)."""
    message = get_object_or_404(
        Message, pk=message_id, conversation_id=pk, conversation__owner=request.user
    )
    return text_response(message.content)


@login_required
@require_POST
def show_version(request: SignedInRequest, pk: int, message_id: int) -> HttpResponse:
    """Show another version of a shown turn (its answer's "‹ 2 / 3 ›" control),
    the question `message_id`, with the branch last viewed below it: the frames
    that swap them in, which the conversation's other tabs are sent too.
    Refused while an answer is being written."""
    current = _owned(request, pk)
    try:
        switch = switch_version(current, message_id)
    except Conversation.Busy as exc:
        return text_response(str(exc), status=409)
    except Conversation.NotAVersion as exc:
        return text_response(str(exc), status=404)
    sent = control.show_version(current.pk, switch)
    return JsonResponse({"frames": sent})
