"""Staff pages in the admin: answer throughput per model, and the model servers'
status. Linked from the admin index (`templates/admin/index.html`)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from chat.live.engine.server_status import server_statuses
from chat.models import Message
from chat.ops import audit_log, throughput, tool_use
from chat.ops.charts import LineChart, line_chart

RANGES = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}


class ThroughputFilter(forms.Form):
    range = forms.ChoiceField(
        label=_("Range"),
        choices=[
            ("24h", _("Last 24 hours")),
            ("7d", _("Last 7 days")),
            ("30d", _("Last 30 days")),
            ("custom", _("Custom")),
        ],
        initial="7d",
        required=False,
    )
    start = forms.DateField(
        label=_("Start"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    end = forms.DateField(
        label=_("End"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=_("Inclusive (UTC days)."),
    )
    user = forms.ModelChoiceField(
        label=_("User"),
        queryset=get_user_model().objects.order_by("username"),
        required=False,
        empty_label=_("All users"),
    )
    model = forms.ChoiceField(label=_("Model"), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tags = (
            Message.objects.answers()
            .exclude(model_tag="")
            .values_list("model_tag", flat=True)
            .distinct()
            .order_by("model_tag")
        )
        model = self.fields["model"]
        assert isinstance(model, forms.ChoiceField)
        model.choices = [("", _("All models"))] + [(t, t) for t in tags]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("range") == "custom":
            start, end = data.get("start"), data.get("end")
            if start is None or end is None:
                raise forms.ValidationError(
                    _("A custom range needs a start and an end.")
                )
            if start > end:
                raise forms.ValidationError(_("The start must not be after the end."))
        return data

    def window(self, now: datetime) -> throughput.Window:
        """The answers to count; call after `is_valid()`."""
        data = self.cleaned_data
        user = data.get("user")
        if data.get("range") == "custom":
            start = datetime.combine(data["start"], time.min, tzinfo=UTC)
            end = datetime.combine(data["end"], time.min, tzinfo=UTC)
            end += timedelta(days=1)
        else:
            end = now
            start = now - RANGES[data.get("range") or "7d"]
        return throughput.Window(
            start=start,
            end=end,
            user_id=user.pk if user is not None else None,
            model_tag=data.get("model") or "",
        )


def _filter(request: HttpRequest) -> ThroughputFilter:
    return ThroughputFilter(request.GET or {"range": "7d"})


@staff_member_required
@require_safe
@never_cache
def throughput_page(request: HttpRequest) -> HttpResponse:
    form = _filter(request)
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "title": _("Throughput per model"),
        "form": form,
    }
    wants_csv = request.GET.get("format") == "csv"
    if form.is_valid():
        window = form.window(timezone.now())
        table = request.GET.get("table", "")
        if wants_csv and table in TABLES:
            return _table_csv(window, table)
        if wants_csv:
            return _csv(window)
        points = throughput.timeline(window)
        csv_query = request.GET.copy()
        csv_query.pop("table", None)
        csv_query["format"] = "csv"
        context.update(
            window=window,
            rows=[_display(row) for row in throughput.summary(window)],
            points=points,
            charts=_charts(window, points),
            csv_query=csv_query.urlencode(),
            usage_users=throughput.usage_by_user(window),
            usage_teams=throughput.usage_by_team(window),
            tools=tool_use.per_tool(window),
        )
    elif wants_csv:
        return HttpResponse(
            _("Bad filter: %(errors)s") % {"errors": "; ".join(_errors(form))},
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    return TemplateResponse(request, "admin/chat/throughput.html", context)


def _charts(
    window: throughput.Window, points: list[throughput.Point]
) -> list[LineChart]:
    series = {
        (_("Decode rate (median)"), "tok/s"): [(p.at, p.decode_tps) for p in points],
        (_("Time to first token (median)"), "ms"): [(p.at, p.ttft_ms) for p in points],
    }
    return [
        line_chart(
            str(title),
            unit,
            values,
            start=window.start,
            end=window.end,
            hourly=window.hourly,
        )
        for (title, unit), values in series.items()
    ]


def _errors(form: forms.Form) -> list[str]:
    return [str(error) for errors in form.errors.values() for error in errors]


def _display(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "thinking": throughput.thinking_label(row["thinking_enabled"])}


def _csv(window: throughput.Window) -> HttpResponse:
    name = f"throughput-{window.start:%Y%m%d%H%M}-{window.end:%Y%m%d%H%M}.csv"
    response = HttpResponse(
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
    writer = csv.writer(response)
    writer.writerow([label for _, label in throughput.CSV_COLUMNS])
    for row in throughput.summary(window):
        row["thinking_enabled"] = throughput.thinking_label(row["thinking_enabled"])
        writer.writerow([_cell(row[key]) for key, _ in throughput.CSV_COLUMNS])
    return response


Rows = Callable[[throughput.Window], list[dict[str, Any]]]

# The page's other tables, each with a CSV of its own (`?table=<name>`): what
# gives their rows, their columns, the file's name.
TABLES: dict[str, tuple[Rows, Sequence[tuple[str, str]], str]] = {
    "users": (
        throughput.usage_by_user,
        throughput.USAGE_CSV_COLUMNS["users"],
        "usage-users",
    ),
    "teams": (
        throughput.usage_by_team,
        throughput.USAGE_CSV_COLUMNS["teams"],
        "usage-teams",
    ),
    "tools": (tool_use.per_tool, tool_use.CSV_COLUMNS, "tools"),
}


def _table_csv(window: throughput.Window, table: str) -> HttpResponse:
    """One of the page's other `TABLES`, as the page shows it."""
    rows, columns, prefix = TABLES[table]
    name = f"{prefix}-{window.start:%Y%m%d%H%M}-{window.end:%Y%m%d%H%M}.csv"
    response = HttpResponse(
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
    writer = csv.writer(response)
    writer.writerow([label for _, label in columns])
    for row in rows(window):
        writer.writerow([_cell(row[key]) for key, _ in columns])
    return response


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return value


@staff_member_required
@require_safe
@never_cache
def model_servers_page(request: HttpRequest) -> HttpResponse:
    context = {**admin.site.each_context(request), "title": _("Model servers")}
    return TemplateResponse(request, "admin/chat/model_servers.html", context)


@staff_member_required
@require_safe
@never_cache
async def model_servers_panel(request: HttpRequest) -> HttpResponse:
    """The panel's content, polled by the page every few seconds."""
    servers = await server_statuses()
    context = {"servers": servers, "checked_at": timezone.now()}
    return render(request, "admin/chat/_model_servers_panel.html", context)


# Included by `chatsite.urls` at "admin/stats/", ahead of the admin's own URLs.
urlpatterns = [
    path("throughput/", throughput_page, name="admin_throughput"),
    path("model-servers/", model_servers_page, name="admin_model_servers"),
    path("model-servers/panel/", model_servers_panel, name="admin_model_servers_panel"),
    path("audit/", audit_log.audit_log_page, name="admin_audit_log"),
]
