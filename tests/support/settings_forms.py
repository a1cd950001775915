"""The conversation settings panel's form as a browser posts it."""

from __future__ import annotations

from chat.web.conversations.forms import SettingsForm


def shown(conversation, **changes):
    """The panel's form as the browser posts it: every field with the value it
    was shown with (and that value again as its `initial-` twin), then `changes`."""
    form = SettingsForm(instance=conversation)
    data = {}
    for name in form.fields:
        value = form[name].value()
        value = "" if value is None else str(value)
        data[name] = data[f"initial-{name}"] = value
    data.update({k: "" if v is None else str(v) for k, v in changes.items()})
    return data
