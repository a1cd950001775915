"""Model discovery in the admin: the "Refresh from the model server" action on
model profiles, and the "Discover models at URL" page."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from chat.models import ModelProfile
from chat.models.profiles import validate_server_url
from chat.ops.discovery import Refreshed, refresh_servers


def report(request: HttpRequest, results: list[Refreshed]) -> None:
    """One admin message per server: what it holds now, or why it was not read."""
    for result in results:
        if result.error is not None:
            messages.error(
                request,
                _(
                    "Models at %(url)s could not be read, so its profiles are "
                    "unchanged: %(error)s"
                )
                % {"url": result.base_url, "error": result.error.detail},
            )
        elif not result.profiles:
            messages.warning(
                request,
                _("The model server at %(url)s has no models.")
                % {"url": result.base_url},
            )
        else:
            tags = ", ".join(profile.tag for profile in result.profiles)
            messages.success(
                request,
                _("Models at %(url)s: %(count)d profiles up to date (%(tags)s).")
                % {"url": result.base_url, "count": len(result.profiles), "tags": tags},
            )


@admin.action(description=_("Refresh from the model server"))
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
        label=_("Server URL"),
        max_length=500,
        validators=[validate_server_url],
        help_text=_(
            "e.g. http://gpu-box:11434 (Ollama) or http://gpu-box:8000 "
            "(vLLM, llama.cpp, LM Studio, SGLang; /v1 may be added or left out)."
        ),
    )
    backend = forms.ChoiceField(
        label=_("Backend"),
        choices=ModelProfile.Backend.choices,
        initial=ModelProfile.Backend.OLLAMA,
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
        "title": _("Discover models at URL"),
        "form": form,
    }
    return TemplateResponse(request, "admin/chat/modelprofile/discover.html", context)
