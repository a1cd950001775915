from __future__ import annotations

from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from chat.forms import FirstAdminForm, ThinkingForm
from chat.models import Conversation, ModelProfile


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class SignedInRequest(HtmxHttpRequest):
    """What a @login_required view receives."""

    user: User


def _no_users_yet() -> bool:
    return not get_user_model().objects.exists()


def _owned(request: SignedInRequest, pk: int) -> Conversation:
    # Someone else's conversation is a 404, never a 403: ids reveal nothing.
    return get_object_or_404(
        Conversation.objects.select_related("model_profile"),
        pk=pk,
        owner=request.user,
    )


def _sidebar(request: HttpRequest) -> dict[str, object]:
    return {
        "conversations": Conversation.objects.filter(owner_id=request.user.pk)[:200]
    }


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    if _no_users_yet():
        return redirect("setup")
    if not request.user.is_authenticated:
        return redirect("login")
    context = {**_sidebar(request), "default_model": ModelProfile.objects.default()}
    return render(request, "chat/index.html", context)


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
def new_conversation(request: SignedInRequest) -> HttpResponseRedirect:
    conversation = Conversation.objects.create(
        owner=request.user, model_profile=ModelProfile.objects.default()
    )
    return redirect(conversation)


@login_required
@require_GET
def conversation(request: SignedInRequest, pk: int) -> HttpResponse:
    current = _owned(request, pk)
    context = {
        **_sidebar(request),
        "conversation": current,
        "chat_messages": current.messages.all(),
        "profile": current.model_profile or ModelProfile.objects.default(),
        "thinking_form": ThinkingForm(instance=current),
    }
    return render(request, "chat/conversation.html", context)


@login_required
@require_POST
def set_thinking(request: SignedInRequest, pk: int) -> HttpResponse:
    current = _owned(request, pk)
    form = ThinkingForm(request.POST, instance=current)
    status = 200
    if form.is_valid():
        form.save()
    else:
        status = 400
        current.refresh_from_db()
    if not request.htmx:
        return redirect(current)
    context = {
        "conversation": current,
        "profile": current.model_profile or ModelProfile.objects.default(),
        "thinking_form": form,
    }
    return render(request, "chat/_thinking_toggle.html", context, status=status)
