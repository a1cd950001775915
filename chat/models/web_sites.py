"""The sites a team's web search and page fetches may reach (`chat.tools.web`)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.teams import Team


class TeamWebSites(models.Model):
    """A team's allow and deny lists of sites, domains one a line (a domain
    covers its subdomains). They apply to the members on top of the site-wide
    lists (`WEB_SITES_ALLOW`, `WEB_SITES_DENY`), and a member of several teams
    is held to all of their lists (`chat.tools.web.sites`)."""

    team = models.OneToOneField(
        Team,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="web_sites",
        verbose_name=_("team"),
    )
    allow = models.TextField(
        blank=True,
        help_text=_(
            "Domains, one a line: when any are listed, web search and fetches "
            "reach only these sites (and their subdomains)."
        ),
        verbose_name=_("allowed sites"),
    )
    deny = models.TextField(
        blank=True,
        help_text=_(
            "Domains, one a line: web search and fetches never reach these "
            "sites (or their subdomains)."
        ),
        verbose_name=_("denied sites"),
    )

    class Meta:
        verbose_name = _("team's web sites")
        verbose_name_plural = _("teams' web sites")

    def __str__(self) -> str:
        return str(self.team)
