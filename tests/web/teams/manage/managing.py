"""What the team management tests share: a client signed in from a known
address, the management URLs, a membership. The audit log read: audit.py."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from chat.models import Membership, Team

ADDRESS = "203.0.113.20"


def client_of(user) -> Client:
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(user)
    return client


def url(name: str, team: Team, member: Membership | None = None) -> str:
    args = [team.pk] + ([member.pk] if member is not None else [])
    return reverse(name, args=args)


def membership(team: Team, user) -> Membership:
    return Membership.objects.get(team=team, user=user)
