"""Model discovery in the admin: the "Refresh from the model server" action on
model profiles, and the "Discover models at URL" page."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from chat.models import ModelProfile
from chat.models.profiles import validate_server_url
from chat.ops.discovery import Refreshed, refresh_servers


def report(request: HttpRequest, results: list[Refreshed]) -> None:
    """One admin message per server: what it holds now, or why it was not read."""
    for result in results:
        if result.error is not None:
            messages.error(
                request,
                f"Models at {result.base_url} could not be read, so its profiles "
                f"are unchanged: {result.error.detail}",
            )
        elif not result.profiles:
            messages.warning(
                request, f"The model server at {result.base_url} has no models."
            )
        else:
            tags = ", ".join(profile.tag for profile in result.profiles)
            messages.success(
                request,
                f"Models at {result.base_url}: {len(result.profiles)} profiles "
                f"up to date ({tags}).",
            )


@admin.action(description="Refresh from the model server")
def refresh_from_server(
    modeladmin: admin.ModelAdmin[ModelProfile],
    request: HttpRequest,
    queryset: QuerySet[ModelProfile],
) -> None:
    """Create or update the profiles of every model on the selected profiles'
    servers."""
    servers = queryset.order_by("base_url").values_list("base_url", "backend")
    report(request, refresh_servers(list(servers)))


class DiscoverForm(forms.Form):
    base_url = forms.CharField(
        label="Server URL",
        max_length=500,
        validators=[validate_server_url],
        help_text="e.g. http://gpu-box:11434 (Ollama) or http://gpu-box:8000 "
        "(vLLM, llama.cpp, LM Studio, SGLang; /v1 may be added or left out).",
    )
    backend = forms.ChoiceField(
        choices=ModelProfile.Backend.choices, initial=ModelProfile.Backend.OLLAMA
    )


def discover_view(
    modeladmin: admin.ModelAdmin[ModelProfile], request: HttpRequest
) -> HttpResponse:
    """Read a server's models into profiles; back to the list on success."""
    form = DiscoverForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        base_url = form.cleaned_data["base_url"].rstrip("/")
        results = refresh_servers([(base_url, form.cleaned_data["backend"])])
        report(request, results)
        if results[0].error is None:
            return HttpResponseRedirect(reverse("admin:chat_modelprofile_changelist"))
    context = {
        **modeladmin.admin_site.each_context(request),
        "opts": modeladmin.model._meta,
        "title": "Discover models at URL",
        "form": form,
    }
    return TemplateResponse(request, "admin/chat/modelprofile/discover.html", context)
