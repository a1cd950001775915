"""Where an import's batches are stored (`chat.web.transfer.views._storing`):
on SQLite in the one thread where Channels runs every socket's database
calls, so those queue between batches instead of polling for the file's one
write lock; on PostgreSQL in the request's own thread, so they never wait
for a batch. Marked `smoke`: the SQLite rerun checks the other side.
Channels' `database_sync_to_async` picks its thread as `sync_to_async` does
(it only closes stale connections around the call, which this test, with no
database, must not touch)."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.db import connection

from chat.web.transfer.views import _storing

pytestmark = pytest.mark.smoke


async def test_an_imports_batches_run_where_the_database_wants_them():
    async with ThreadSensitiveContext():  # as Django's ASGI handler runs a request
        storing = await _storing(threading.current_thread)()
        requests_own = await sync_to_async(threading.current_thread)()
    sockets = await sync_to_async(threading.current_thread)()
    # Threads, not their idents: a finished thread's ident is given again.
    assert requests_own is not sockets  # what makes the choice matter
    if connection.vendor == "sqlite":
        assert storing is sockets
    else:
        assert storing is requests_own
