"""The flush after each transactional test (tests/conftest.py,
`_cheaper_transactional_flush`): every table emptied, the content types and
permissions that migrate made kept."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.models.signals import post_migrate

from tests.support import flushing

KEPT: dict[str, int] = {}


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_leaves_rows_behind(alice, conversation):
    # Runs first (one module goes to one worker whole:
    # tests/support/plugins/scheduling.py).
    KEPT["content_types"] = ContentType.objects.count()
    KEPT["permissions"] = Permission.objects.count()
    assert KEPT["content_types"] > 0 and KEPT["permissions"] > 0
    conversation.messages.create(role="user", content="left behind")


@pytest.mark.django_db(transaction=True)
def test_the_next_one_finds_them_gone_and_the_migrated_rows_kept(django_user_model):
    from chat.models import Conversation, Message, ModelProfile

    assert not django_user_model.objects.exists()
    assert not Conversation.objects.exists()
    assert not Message.objects.exists()
    assert not ModelProfile.objects.exists()
    if KEPT:  # the test above ran first (not under -k, say)
        assert ContentType.objects.count() == KEPT["content_types"]
        assert Permission.objects.count() == KEPT["permissions"]
    assert Permission.objects.filter(codename="change_conversation").exists()


@pytest.mark.django_db(transaction=True)
def test_emptying_the_tables_keeps_only_the_migrated_rows(alice, conversation):
    content_types = ContentType.objects.count()
    flushing.empty_tables(connection)
    assert not type(alice).objects.exists()
    assert not type(conversation).objects.exists()
    assert ContentType.objects.count() == content_types
    assert Permission.objects.filter(codename="add_conversation").exists()


def _another_handler(**kwargs):
    pass


def test_another_post_migrate_handler_brings_back_djangos_flush():
    assert flushing.post_migrate_makes_only_the_kept_rows()
    post_migrate.connect(_another_handler)
    try:
        assert not flushing.post_migrate_makes_only_the_kept_rows()
    finally:
        post_migrate.disconnect(_another_handler)
    assert flushing.post_migrate_makes_only_the_kept_rows()
