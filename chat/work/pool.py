"""The worker processes and the order they take work in.

Each task runs in a fresh process (pebble's pool, one task per process) forked
from a fork server that preloaded the parsers (`chat.work.preload`): never
forked from the serving process, whose threads (Daphne's, the database's) a
fork would copy in whatever state they were in. At most `processes` run at
once; each owner has a queue, the queues take turns, and at most `per_owner`
of one owner's tasks run at once: a user's seven slow files wait behind each
other, not in front of everyone else's.

A cancelled task's process is killed here, by the pid it reported when it
started (`chat.work.child`), at once. pebble would end it too, but only from
its manager thread, every 0.1 s, when it can take its workers' lock without
waiting, and with a SIGTERM its worker handles in Python (not inside a parser's
C code), waiting 3 s before a SIGKILL: seconds during which that thread ends
no other task. pebble still ends its side of the task (it sees its worker dead).

Per process, not per event loop (its threads serve any loop, and `run_sync`
from worker threads): this module is its one owner.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import multiprocessing
import os
import signal
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import (
    CancelledError,
    Future,
    InvalidStateError,
    ThreadPoolExecutor,
)
from dataclasses import dataclass, field
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from typing import Any, TypeVar

import pebble
from django.utils import translation

from chat.work.budgets import Budget, Exhausted, OutOfMemory, TimedOut
from chat.work.child import call, listen

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The CPU time a task may use past its wall time before the kernel ends it
# (SIGXCPU): the pool's own kill comes first, this is the backstop.
CPU_GRACE_SECONDS = 1.0

# What the fork server imports once, so a task costs a fork: "__main__"
# (Daphne's script, the test runner; else every worker would run it again),
# then Django, the parsers and the readers (`chat.work.preload`).
PRELOAD = ["__main__", "chat.work.preload"]


@dataclass(eq=False)
class _Task:
    owner: str
    func: Callable[..., Any]
    args: tuple[Any, ...]
    budget: Budget
    language: str | None
    result: Future[Any] = field(default_factory=Future)
    running: Future[Any] | None = None  # pebble's, once handed over
    token: int = field(default_factory=itertools.count(1).__next__)
    pid: int | None = None  # the worker's, once it reported


class Pool:
    """Runs tasks in worker processes, fairly between owners."""

    def __init__(self, processes: int, per_owner: int) -> None:
        self.processes = processes
        self.per_owner = per_owner
        self._lock = threading.Lock()
        # Owners with waiting tasks, in the order they take turns.
        self._waiting: OrderedDict[str, deque[_Task]] = OrderedDict()
        self._running: dict[str, int] = {}
        self._busy = 0
        self._started: dict[int, _Task] = {}  # by token
        self._workers: pebble.ProcessPool | None = None
        # Where workers report which task they run (`chat.work.child.listen`).
        self._reports: Connection | None = None
        self._closed = False
        # Tasks are handed to pebble from a thread of the pool's own, never
        # the submitter's: the first hand-over starts the fork server and the
        # worker processes, and waits for them (the preload imports Django:
        # 3.2 s on a loaded 2-core machine), and so does any hand-over while
        # that is under way (`chat.work.warm`'s, at the site's start) or after
        # a broken pool is made again. From `run` that held the event loop
        # and every socket on it (issue 40, finding 8).
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="work-start")

    def submit(
        self, func: Callable[..., T], args: tuple[Any, ...], owner: str, budget: Budget
    ) -> Future[T]:
        """Queue `func(*args)` for `owner`. Cancelling the future takes the task
        out of its queue, or kills its process if it runs."""
        task = _Task(owner, func, args, budget, translation.get_language())
        with self._lock:
            if self._closed:
                raise RuntimeError("the work pool is closed")
            self._waiting.setdefault(owner, deque()).append(task)
        task.result.add_done_callback(lambda _: self._cancelled(task))
        self._dispatch()
        return task.result

    def close(self) -> None:
        """Cancel what waits, kill what runs, and wait for the processes to end."""
        with self._lock:
            self._closed = True
            waiting = [task for queue in self._waiting.values() for task in queue]
            waiting += self._started.values()
            self._waiting.clear()
            workers, self._workers = self._workers, None
        for task in waiting:
            task.result.cancel()
        self._starter.shutdown()  # what it still hands over is cancelled
        if workers is not None:
            workers.stop()  # type: ignore[no-untyped-call]  # (pebble: untyped)
            workers.join()

    def _dispatch(self) -> None:
        started: list[_Task] = []
        with self._lock:
            while self._busy < self.processes and (task := self._next()) is not None:
                self._busy += 1
                self._running[task.owner] = self._running.get(task.owner, 0) + 1
                self._started[task.token] = task
                started.append(task)
        for task in started:
            self._starter.submit(self._start, task)

    def _next(self) -> _Task | None:
        """The next owner's oldest task, among owners under their share; that
        owner goes to the back of the line."""
        for owner, queue in self._waiting.items():
            if self._running.get(owner, 0) >= self.per_owner:
                continue
            task = queue.popleft()
            if queue:
                self._waiting.move_to_end(owner)
            else:
                del self._waiting[owner]
            return task
        return None

    def _start(self, task: _Task) -> None:
        # `task.result` stays pending while it runs: a running future could
        # not be cancelled (`asyncio.wrap_future` passes a cancel on as one).
        if task.result.cancelled():
            self._release(task)
            return
        try:
            running: Future[Any] = self._pebble().schedule(
                call,
                args=(
                    task.token,
                    task.func,
                    task.args,
                    task.language,
                    task.budget.memory_bytes,
                    task.budget.seconds + CPU_GRACE_SECONDS,
                ),
                timeout=task.budget.seconds,
            )
        except Exception as exc:  # a closed or broken pool
            self._release(task)
            task.result.set_exception(exc)
            return
        task.running = running
        running.add_done_callback(lambda done: self._finished(task, done))
        if task.result.cancelled():  # while it was being handed over
            self._cancelled(task)

    def _pebble(self) -> pebble.ProcessPool:
        with self._lock:
            if self._closed:
                raise RuntimeError("the work pool is closed")
            if self._workers is None or not self._workers.active:
                context = multiprocessing.get_context("forkserver")
                # "__main__" (Daphne's script, the test runner) once in the
                # fork server, else every worker would run it again.
                context.set_forkserver_preload(PRELOAD)
                self._reports, reports = context.Pipe(duplex=False)
                self._workers = pebble.ProcessPool(
                    max_workers=self.processes,
                    max_tasks=1,
                    initializer=listen,
                    initargs=(reports,),
                    context=context,
                )
            return self._workers

    def pids(self, owner: str) -> list[int]:
        """The processes running `owner`'s tasks (those that reported yet)."""
        with self._lock:
            self._read_reports()
            return [
                task.pid
                for task in self._started.values()
                if task.owner == owner and task.pid is not None
            ]

    def _read_reports(self) -> None:
        """Note the pids workers reported (under `_lock`). Read at each task's
        end too, so the pipe holds no more than the running tasks' reports."""
        while self._reports is not None and self._reports.poll(0):
            token, pid = self._reports.recv()
            if (task := self._started.get(token)) is not None:
                task.pid = pid

    def _finished(self, task: _Task, done: Future[Any]) -> None:
        with self._lock:
            self._read_reports()
        self._release(task)
        try:
            task.result.set_result(done.result())
        except CancelledError:
            task.result.cancel()
        except InvalidStateError:  # cancelled meanwhile
            pass
        except BaseException as exc:  # noqa: BLE001 (handed to the caller)
            with contextlib.suppress(InvalidStateError):
                task.result.set_exception(_outcome(exc, task.budget))
        self._dispatch()

    def _release(self, task: _Task) -> None:
        with self._lock:
            self._started.pop(task.token, None)
            self._busy -= 1
            left = self._running[task.owner] - 1
            if left:
                self._running[task.owner] = left
            else:
                del self._running[task.owner]

    def _cancelled(self, task: _Task) -> None:
        """`task.result` is done: if that was a cancel, end the task."""
        if not task.result.cancelled():
            return
        if task.running is not None:
            self._kill(task)
            task.running.cancel()
            return
        with self._lock:
            queue = self._waiting.get(task.owner)
            if queue is not None and task in queue:
                queue.remove(task)
                if not queue:
                    del self._waiting[task.owner]

    def _kill(self, task: _Task) -> None:
        """End the process running `task`: SIGTERM, which kills it at once while
        the task runs and waits while it hands a result over
        (`chat.work.child.call`). Only once pebble saw the task start (its
        future running): a worker it finds dead before that is one it cannot
        match to a task, and it would declare the whole pool broken."""
        with self._lock:
            self._read_reports()
            running = task.running
            if task.pid is None or running is None or not running.running():
                return  # pebble ends it when it sees it start
            with contextlib.suppress(ProcessLookupError):
                os.kill(task.pid, signal.SIGTERM)


def _outcome(exc: BaseException, budget: Budget) -> BaseException:
    """What the caller is told of a task that did not return."""
    if isinstance(exc, TimeoutError):  # pebble's kill at the wall time
        return TimedOut(budget)
    if isinstance(exc, MemoryError):
        return OutOfMemory(budget)
    if isinstance(exc, pebble.ProcessExpired):
        if exc.exitcode == -signal.SIGXCPU:
            return TimedOut(budget)
        # A native library that fails an allocation past the address-space
        # limit aborts rather than raising; so does the kernel's OOM killer.
        logger.warning("a worker process died (exit code %s)", exc.exitcode)
        return OutOfMemory(budget)
    return exc


_pool: Pool | None = None
_pool_lock = threading.Lock()


def default() -> Pool:
    """The process's pool, made on first use from the settings."""
    global _pool
    with _pool_lock:
        if _pool is None:
            from django.conf import settings

            _pool = Pool(settings.WORK_PROCESSES, settings.WORK_PER_OWNER)
        return _pool


def close() -> None:
    """End the process's pool (at exit; tests): the next use makes a new one."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.close()


def _forget_in_child() -> None:
    """In a process forked from one whose pool had started (a test's live
    server is forked from the test process): that pool's threads did not come
    along, and multiprocessing's fork server belongs to the parent (its pid is
    no child of ours: every task failed with BrokenProcessPool). Forget both;
    the first task here starts its own."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()
    # multiprocessing keeps one fork server per process in this module-level
    # object and has no public way to start another (Python 3.11's
    # multiprocessing/forkserver.py).
    server: Any = forkserver._forkserver
    if server._forkserver_alive_fd is not None:
        # Our copy of the parent's "alive" pipe would keep its server running.
        with contextlib.suppress(OSError):
            os.close(server._forkserver_alive_fd)
    server._forkserver_address = None
    server._forkserver_alive_fd = None
    server._forkserver_pid = None
    server._lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(close)

__all__ = ["Exhausted", "Pool", "close", "default"]
