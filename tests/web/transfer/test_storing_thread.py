"""Where an import's batches are stored (`chat.web.transfer.views._storing`):
on SQLite in the one thread where Channels runs every socket's database
calls, so those queue between batches instead of polling for the file's one
write lock; on PostgreSQL in the request's own thread, so they never wait
for a batch. Marked `smoke`: the SQLite rerun checks the other side."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.db import connection

from chat.web.transfer.views import _storing

pytestmark = pytest.mark.smoke


async def test_an_imports_batches_run_where_the_database_wants_them():
    async with ThreadSensitiveContext():  # as Django's ASGI handler runs a request
        storing = await _storing(threading.get_ident)()
        requests_own = await database_sync_to_async(threading.get_ident)()
    sockets = await database_sync_to_async(threading.get_ident)()
    assert requests_own != sockets  # what makes the choice matter
    if connection.vendor == "sqlite":
        assert storing == sockets
    else:
        assert storing == requests_own
