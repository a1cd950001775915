"""The seam for bounded work (`chat.work`): real worker processes, killed over
their time or memory, or when their requester goes away; one owner's queue
does not hold up another's task."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from django.utils import translation

from chat import work
from tests.support.services.daphnes import ROOT
from tests.support.waiting import until, until_sync
from tests.work import tasks
from tests.work.watching import gone

QUICK = work.Budget(seconds=30, memory_bytes=256 * 1024 * 1024)


@pytest.fixture
def pool() -> Iterator[work.Pool]:
    made = work.Pool(processes=2, per_owner=1)
    yield made
    made.close()


def started_pid(path: Path) -> int:
    return int(until_sync(lambda: path.exists() and path.read_text(), "task started"))


async def test_a_task_runs_in_another_process_in_the_callers_language(
    tmp_path: Path,
) -> None:
    with translation.override("de"):
        found = await work.run(tasks.language, owner="someone", budget=QUICK)
    assert found == "de"
    assert (
        await work.run(tasks.pid, owner="someone", budget=QUICK) != psutil.Process().pid
    )


async def test_a_task_over_its_time_is_killed(pool: work.Pool, tmp_path: Path) -> None:
    started = tmp_path / "started"
    budget = work.Budget(seconds=0.5, memory_bytes=256 * 1024 * 1024)
    with pytest.raises(work.TimedOut) as refused:
        await asyncio.wrap_future(pool.submit(tasks.spin, (str(started),), "a", budget))
    assert "took too long" in refused.value.message
    pid = started_pid(started)
    await until(lambda: gone(pid), "the spinning worker is killed")


async def test_a_task_over_its_memory_is_stopped(
    pool: work.Pool, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    budget = work.Budget(seconds=30, memory_bytes=64 * 1024 * 1024)
    with pytest.raises(work.OutOfMemory) as refused:
        await asyncio.wrap_future(
            pool.submit(tasks.allocate, (str(started), 1024**3), "a", budget)
        )
    assert isinstance(refused.value, work.Exhausted)
    assert "too large" in refused.value.message
    # The same task within its budget runs.
    ok = await asyncio.wrap_future(
        pool.submit(tasks.allocate, (str(started), 16 * 1024 * 1024), "a", budget)
    )
    assert ok == 16 * 1024 * 1024


async def test_a_cancelled_await_kills_the_process(tmp_path: Path) -> None:
    started = tmp_path / "started"
    waiting = asyncio.create_task(
        work.run(
            tasks.wait_for,
            str(started),
            str(tmp_path / "never"),
            owner="gone-away",
            budget=QUICK,
        )
    )
    pid = int(await until(lambda: started.exists() and started.read_text(), "started"))
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await until(lambda: gone(pid), "the abandoned worker is killed")


async def test_a_cancelled_task_inside_c_code_is_killed_at_once(
    pool: work.Pool, tmp_path: Path
) -> None:
    # pebble's own kill is a SIGTERM its worker handles in Python, then a
    # SIGKILL 3 s later: the pool's is at once.
    started = tmp_path / "started"
    running = pool.submit(tasks.hash_for_ages, (str(started),), "c", QUICK)
    pid = started_pid(started)
    assert await until(lambda: pool.pids("c"), "the pool knows its worker") == [pid]
    running.cancel()
    await until(lambda: gone(pid), "the worker is killed", timeout=2)
    assert await asyncio.wrap_future(pool.submit(tasks.pid, (), "c", QUICK))


async def test_an_owners_queue_does_not_hold_up_another_owner(
    pool: work.Pool, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    slow = [
        pool.submit(tasks.wait_for, (str(tmp_path / f"a{n}"), str(release)), "a", QUICK)
        for n in range(4)
    ]
    quick = pool.submit(tasks.pid, (), "b", QUICK)
    try:
        await asyncio.wait_for(asyncio.wrap_future(quick), 60)
        assert not any(future.done() for future in slow)
        # Handed over before B's, but its process may start after B's ended.
        await until(lambda: (tmp_path / "a0").exists(), "A's first task started")
        assert not (tmp_path / "a1").exists()  # A's share: one at a time
    finally:
        release.touch()
    await asyncio.gather(*(asyncio.wrap_future(future) for future in slow))


async def test_a_waiting_task_cancelled_never_runs(
    pool: work.Pool, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    first = pool.submit(
        tasks.wait_for, (str(tmp_path / "a0"), str(release)), "a", QUICK
    )
    second = pool.submit(
        tasks.wait_for, (str(tmp_path / "a1"), str(release)), "a", QUICK
    )
    await until(lambda: (tmp_path / "a0").exists(), "the first started")
    assert second.cancel()
    release.touch()
    await asyncio.wrap_future(first)
    assert await asyncio.wrap_future(pool.submit(tasks.pid, (), "a", QUICK))
    assert not (tmp_path / "a1").exists()


async def test_the_tasks_own_exception_reaches_the_caller() -> None:
    with pytest.raises(ValueError, match="not a document"):
        await work.run(tasks.refuse, "not a document", owner="x", budget=QUICK)


def test_run_sync_waits_in_its_thread() -> None:
    found: list[int] = []
    thread = threading.Thread(
        target=lambda: found.append(work.run_sync(tasks.pid, owner="t", budget=QUICK))
    )
    thread.start()
    thread.join(60)
    assert found and found[0] != psutil.Process().pid


async def test_a_closed_pool_leaves_no_process(tmp_path: Path) -> None:
    made = work.Pool(processes=2, per_owner=2)
    started = [tmp_path / "a", tmp_path / "b"]
    for path in started:
        made.submit(tasks.wait_for, (str(path), str(tmp_path / "never")), "a", QUICK)
    pids = [
        int(await until(lambda p=p: p.exists() and p.read_text(), "started"))
        for p in started
    ]
    made.close()
    await until(lambda: all(gone(pid) for pid in pids), "the workers end")


def test_a_process_forked_after_the_pool_started_runs_tasks_in_its_own(
    tmp_path: Path,
) -> None:
    """A test's live server is forked from a process whose pool had started:
    the parent's pool threads and fork server are not the child's (every task
    there failed with BrokenProcessPool)."""
    assert work.run_sync(tasks.pid, owner="parent", budget=QUICK) != os.getpid()
    found = tmp_path / "found"
    child = os.fork()
    if child == 0:  # pragma: no cover (the forked child reports through `found`)
        signal.alarm(120)  # never outlives the test, whatever happens here
        try:
            found.write_text(str(work.run_sync(tasks.pid, owner="child", budget=QUICK)))
        except BaseException as error:
            found.write_text(f"failed: {error!r}")
        finally:
            os._exit(0)
    until_sync(lambda: found.exists() and found.read_text(), "the child's task")
    os.waitpid(child, 0)
    assert found.read_text().isdigit(), found.read_text()
    assert int(found.read_text()) not in (os.getpid(), child)


# In a process of its own: the fork server is one per process, and this one's
# is up already.
FIRST_SUBMIT = """
import json, os, psutil
from chat import work
from tests.work import tasks
pool = work.Pool(processes=2, per_owner=1)
budget = work.Budget(seconds=60, memory_bytes=256 * 1024 * 1024)
done = pool.submit(tasks.pid, (), "a", budget)
me = psutil.Process()
workers = [p for p in me.children(recursive=True) if p.ppid() != me.pid]
print(json.dumps({"workers": len(workers), "ran_in": done.result(), "me": me.pid}))
pool.close()
"""


def test_the_first_submit_does_not_wait_for_the_worker_processes() -> None:
    """Starting them (the fork server's preload first) takes seconds: from
    `work.run` on the event loop, that held every socket of the process."""
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + FIRST_SUBMIT],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "chatsite.settings"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["workers"] == 0  # submit returned before any was forked
    assert found["ran_in"] != found["me"]
