"""The audit log's staff page: the newest events first, a page at a time,
filtered by kind, by person (who did it, to whom, or the username a failed
sign-in tried) and by address. Linked from the admin index."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from chat.models import AuditEvent

PER_PAGE = 50


class AuditFilter(forms.Form):
    kind = forms.ChoiceField(
        label=_("Kind"),
        choices=[("", _("All kinds")), *AuditEvent.Kind.choices],
        required=False,
    )
    user = forms.CharField(
        label=_("User"),
        required=False,
        max_length=150,
        help_text=_("A username: who did it, to whom, or who tried to sign in."),
    )
    address = forms.CharField(label=_("Address"), required=False, max_length=45)

    def events(self) -> QuerySet[AuditEvent]:
        """The events that match; call after `is_valid()`."""
        events = AuditEvent.objects.select_related("actor", "subject")
        data = self.cleaned_data
        if data.get("kind"):
            events = events.filter(kind=data["kind"])
        if user := (data.get("user") or "").strip():
            events = events.filter(
                Q(username__iexact=user)
                | Q(actor__username__iexact=user)
                | Q(subject__username__iexact=user)
            )
        if address := (data.get("address") or "").strip():
            events = events.filter(address=address)
        return events


@staff_member_required
@require_safe
@never_cache
def audit_log_page(request: HttpRequest) -> HttpResponse:
    form = AuditFilter(request.GET)
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "title": _("Audit log"),
        "form": form,
        "page": None,
    }
    status = 200
    if form.is_valid():
        # A page number past the end or not a number: the nearest real page.
        page = Paginator(form.events(), PER_PAGE).get_page(request.GET.get("page"))
        query = request.GET.copy()
        query.pop("page", None)
        context.update(page=page, query=query.urlencode())
    else:
        status = 400
    return TemplateResponse(
        request, "admin/chat/audit_log.html", context, status=status
    )
