"""A Django admin change page's form as a browser would post it back."""

from __future__ import annotations

from typing import Any

from django.forms import MultiWidget


def _put(data: dict[str, Any], name: str, value: Any) -> None:
    if value is None:
        data[name] = ""
    elif isinstance(value, bool):
        if value:
            data[name] = "on"
    elif isinstance(value, list | tuple):
        data[name] = [str(getattr(v, "pk", v)) for v in value]
    else:
        data[name] = str(getattr(value, "pk", value))


def posted(response: Any, **changes: Any) -> dict[str, Any]:
    """The page's form and inline forms with their shown values, then
    `changes` (field name → value; inline fields by their full prefixed name)."""
    context = response.context
    data: dict[str, Any] = {}
    for field in context["adminform"].form:
        widget = field.field.widget
        if isinstance(widget, MultiWidget):  # a date and a time, e.g.
            for i, part in enumerate(widget.decompress(field.value())):
                _put(data, f"{field.html_name}_{i}", part)
        else:
            _put(data, field.html_name, field.value())
    for inline in context["inline_admin_formsets"]:
        formset = inline.formset
        for field in formset.management_form:
            _put(data, field.html_name, field.value())
        for form in formset.forms:
            for field in form:
                _put(data, field.html_name, field.value())
    for name, value in changes.items():
        data.pop(name, None)
        _put(data, name, value)
    return data
