"""A quota's window: a UTC day or a UTC month."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import models
from django.utils.translation import gettext_lazy as _


class QuotaPeriod(models.TextChoices):
    """It resets at 00:00 UTC (of the 1st, for a month)."""

    DAY = "day", _("Per day (UTC)")
    MONTH = "month", _("Per month (UTC)")

    def window(self, now: datetime) -> tuple[datetime, datetime]:
        """[start, end) of the period that holds `now` (a field's plain value
        works too: `QuotaPeriod(team.quota_period).window(now)`)."""
        now = now.astimezone(UTC)
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        if self is QuotaPeriod.MONTH:
            start = start.replace(day=1)
            year, month = divmod(start.month, 12)
            return start, start.replace(year=start.year + year, month=month + 1)
        return start, start + timedelta(days=1)
