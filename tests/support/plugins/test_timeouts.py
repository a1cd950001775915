"""The per-test timeout (tests/support/plugins/timeouts.py): a hung test fails, named,
with
every thread's and asyncio task's stack, and the run goes on. Each run is a
pytest of its own on tiny tests that hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

HANGING = """
import asyncio
import threading


async def test_hangs_in_an_await():
    never = asyncio.get_running_loop().create_future()

    async def awaits_what_never_comes():
        await never

    await asyncio.create_task(awaits_what_never_comes(), name="the-stuck-task")


def test_hangs_in_a_thread():
    def waits_forever():
        threading.Event().wait()

    worker = threading.Thread(target=waits_forever, name="the-stuck-thread")
    worker.daemon = True
    worker.start()
    worker.join()


async def test_hangs_and_its_task_refuses_to_end():
    async def swallows_its_cancellation():
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass

    asyncio.get_running_loop().create_task(
        swallows_its_cancellation(), name="the-stubborn-task"
    )
    await asyncio.sleep(3600)


def test_the_run_goes_on():
    pass
"""


def run_hanging(tmp_path: Path, *args: str) -> tuple[str, float]:
    """pytest on HANGING with a 2 s timeout: its output, and how long it ran."""
    (tmp_path / "test_hanging.py").write_text(HANGING)
    (tmp_path / "pytest.ini").write_text(
        textwrap.dedent(
            """
            [pytest]
            asyncio_mode = auto
            asyncio_default_fixture_loop_scope = function
            timeout = 2
            timeout_method = signal
            timeout_grace = 2
            addopts = -p no:cacheprovider
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.support.plugins.timeouts",
            "-p",
            "no:cacheprovider",
        ]
        + ["-rA", *args, "test_hanging.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return done.stdout + done.stderr, time.monotonic() - started


def check(output: str) -> None:
    for name in (
        "test_hangs_in_an_await",
        "test_hangs_in_a_thread",
        "test_hangs_and_its_task_refuses_to_end",
    ):
        assert f"Timeout: test_hanging.py::{name} ran past 2 s" in output, output
        assert f"FAILED test_hanging.py::{name}" in output, output
    assert "PASSED test_hanging.py::test_the_run_goes_on" in output, output
    # The thread's stack, where it waits.
    assert "--- thread the-stuck-thread" in output, output
    assert "in waits_forever" in output, output
    # The pending task and the coroutine it is suspended in.
    assert "- task the-stuck-task:" in output, output
    assert "in awaits_what_never_comes" in output, output
    # The clean-up stuck on a task that ignores its cancellation gets the alarm
    # again, with that task's stack.
    assert "still stuck 2 s after its alarm 1 (in its clean-up)" in output, output
    assert "- task the-stubborn-task, cancelling 1:" in output, output
    assert "in swallows_its_cancellation" in output, output


@pytest.mark.timeout(240)
def test_a_hung_test_fails_with_its_stacks_and_the_run_goes_on(tmp_path):
    output, seconds = run_hanging(tmp_path, "-n", "0")
    check(output)
    assert seconds < 120


@pytest.mark.timeout(240)
def test_a_hung_test_on_a_pytest_xdist_worker_too(tmp_path):
    output, seconds = run_hanging(tmp_path, "-n", "2")
    check(output)
    assert seconds < 120
