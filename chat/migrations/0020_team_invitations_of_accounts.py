"""A team invitation of an existing account (`Invitation.invitee`), and when
each member joined their team (`Membership.joined_at`): memberships made
before are left blank, so their team keeps counting all their answers, as it
did; only new ones get the time (the default is added after the column)."""

from __future__ import annotations

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0019_settings_change_names"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="invitation",
            name="invitee",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="team_invitations",
                to=settings.AUTH_USER_MODEL,
                verbose_name="invitee",
            ),
        ),
        migrations.AddField(
            model_name="membership",
            name="joined_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="joined at"),
        ),
        migrations.AlterField(
            model_name="membership",
            name="joined_at",
            field=models.DateTimeField(
                blank=True,
                default=django.utils.timezone.now,
                null=True,
                verbose_name="joined at",
            ),
        ),
    ]
