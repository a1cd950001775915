"""Signing in through the login form, and a cache of the test's own for the
sign-in failure counts."""

from __future__ import annotations

import uuid

from django.test import Client


def fresh_cache(settings) -> None:
    """The configured cache (Redis in the suite) under keys of its own: a flush
    would also empty the channel layer, which shares the Redis database."""
    default = {**settings.CACHES["default"], "KEY_PREFIX": uuid.uuid4().hex}
    settings.CACHES = {"default": default}


def sign_in(client: Client, username: str, password: str, path: str = "/login/"):
    return client.post(path, {"username": username, "password": password})
