"""What a test that runs past its timeout shows (a pytest plugin, loaded with
``-p tests.support.plugins.timeouts``).

pytest-timeout gives every test a timeout (``timeout`` in pyproject.toml, a
``@pytest.mark.timeout(seconds)`` per test, the per-marker defaults below).
Its own signal handler prints the other threads' stacks and fails the test;
for an async test that says only that the main thread sat in the event loop's
``select``. So the alarm is ours (`pytest_timeout_set_timer`): it prints the
test's name, every thread's stack and every asyncio task of every event loop
in the process (the test's, Playwright's, a server's in a thread) with the
chain of coroutines it is suspended in, live (past the output capture, so a
run killed later still names the test) and in the failure's report. Then it
fails the test, and the run goes on. A test stuck again in its clean-up (an
event loop whose tasks do not end when cancelled, a thread that never
returns) gets the alarm again every ``timeout_grace`` seconds (an ini option
of ours); after `SHOTS` alarms the process exits (pytest-xdist starts another
worker and the run goes on).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

# Seconds a test of this marker may take when the test does not set its own
# (setup, call and clean-up together).
MARKER_TIMEOUTS = {"real": 600.0}
SHOTS = 3
REARM = pytest.StashKey[Callable[[], None]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "timeout_grace",
        "seconds between a test's timeout alarms while it is stuck in its clean-up",
        default="30",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[Any]) -> None:
    """A marker's default timeout, unless the test sets one or timeouts are off
    (``--timeout 0``)."""
    default = getattr(config, "_env_timeout", None)
    if not default:
        return
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        timeouts = [
            seconds
            for name, seconds in MARKER_TIMEOUTS.items()
            if item.get_closest_marker(name) is not None
        ]
        if timeouts:
            item.add_marker(pytest.mark.timeout(max(timeouts)))


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """The signal method in the main thread, with our alarm; anything else is
    left to pytest-timeout."""
    if (
        settings.method != "signal"
        or threading.current_thread() is not threading.main_thread()
    ):
        return None
    from pytest_timeout import is_debugging

    shots = 0
    grace = float(item.config.getini("timeout_grace"))
    deadline = time.monotonic() + settings.timeout

    def alarm(signum: int, frame: FrameType | None) -> None:
        nonlocal shots
        if not settings.disable_debugger_detection and is_debugging():
            return
        shots += 1
        if shots == 1:
            what = f"ran past {settings.timeout:g} s"
        else:
            what = (
                f"still stuck {grace:g} s after its alarm {shots - 1} (in its clean-up)"
            )
        dump = stacks(frame)
        show(item, f"Timeout: {item.nodeid} {what}\n{dump}")
        if shots >= SHOTS:
            show(item, f"Timeout: {item.nodeid} never ended; exiting\n")
            os._exit(1)
        signal.setitimer(signal.ITIMER_REAL, grace)
        pytest.fail(f"Timeout: {what}\n{dump}", pytrace=False)

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    def rearm() -> None:
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), grace))

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's
    item.stash[REARM] = rearm
    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item) -> None:
    """pytest-timeout stops the timer when a test fails (for a debugger's sake,
    `pytest_exception_interact`): the clean-up after a failure, where a hang
    is likeliest, would run without one. Unless a debugger is wanted, it runs
    on what is left of the test's time, and at least the grace."""
    rearm = node.stash.get(REARM, None)
    if rearm is not None and not node.config.getoption("usepdb", False):
        rearm()


def show(item: pytest.Item, text: str) -> None:
    """`text` on the terminal now, past the output capture (a pytest-xdist
    worker's stderr is the run's)."""
    capman = item.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        sys.stderr.write(f"\n{text}\n")
        sys.stderr.flush()


# ---------------------------------------------------------------- the dump


def stacks(current: FrameType | None = None) -> str:
    """Every thread's stack (this one's from `current`), then every task of
    every event loop."""
    return "\n".join([*thread_stacks(current), *task_stacks()])


def thread_stacks(current: FrameType | None = None) -> Iterator[str]:
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    here = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        if ident == here and current is not None:
            frame = current
        name = names.get(ident, "<unknown>")
        yield f"--- thread {name} ({ident})\n" + "".join(traceback.format_stack(frame))


def event_loops() -> list[asyncio.AbstractEventLoop]:
    """Every event loop of the process that is not closed: asyncio knows only
    the running loop of the thread that asks."""
    return [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, asyncio.AbstractEventLoop) and not obj.is_closed()
    ]


def task_stacks() -> Iterator[str]:
    for loop in event_loops():
        tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
        thread = getattr(loop, "_thread_id", None)
        where = f"running in thread {thread}" if thread else "not running"
        yield f"--- event loop {loop!r}, {where}: {len(tasks)} pending tasks"
        for task in tasks:
            yield task_stack(task)


def task_stack(task: asyncio.Task[Any]) -> str:
    """The task and the coroutines it is suspended in, outermost first (a
    task's own `get_stack` has only the outermost)."""
    frames = []
    awaited: Any = task.get_coro()
    for _ in range(1000):
        frame = next(
            (
                getattr(awaited, name)
                for name in ("cr_frame", "gi_frame", "ag_frame")
                if getattr(awaited, name, None) is not None
            ),
            None,
        )
        inner = next(
            (
                getattr(awaited, name)
                for name in ("cr_await", "gi_yieldfrom", "ag_await")
                if getattr(awaited, name, None) is not None
            ),
            None,
        )
        if frame is not None:
            frames.append((frame, frame.f_lineno))
        if inner is None:
            break
        awaited = inner
    cancelling = f", cancelling {task.cancelling()}" if task.cancelling() else ""
    waiter = getattr(task, "_fut_waiter", None)
    text = f"- task {task.get_name()}{cancelling}:\n"
    text += "".join(traceback.StackSummary.extract(iter(frames)).format())
    if waiter is not None:
        text += f"  waiting for {waiter!r}\n"
    return text
