"""`python -m chatsite.serve`: Daphne's command line on uvloop's event loop, with
the site's WebSocket size caps (chatsite/serve.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chat.live.protocol import frames
from chatsite.serve import APPLICATION, daphne_argv

ROOT = Path(__file__).resolve().parents[2]


def test_the_size_caps_are_added_unless_the_options_set_them():
    size = str(frames.max_frame_bytes())
    assert daphne_argv(["-b", "127.0.0.1", "-p", "8000"], frames.max_frame_bytes()) == [
        "daphne",
        *("-b", "127.0.0.1", "-p", "8000"),
        *("--websocket-max-message-size", size),
        *("--websocket-max-frame-size", size),
        APPLICATION,
    ]
    own = ["--websocket-max-message-size", "5", "--websocket-max-frame-size=6"]
    assert daphne_argv(own, 99) == ["daphne", *own, APPLICATION]


def test_daphnes_loop_is_uvloops():
    """Daphne makes its loop when Django's set-up imports it: the serve module
    must set the policy before that, not after."""
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['chatsite.serve', '--help']\n"
        "try:\n"
        "    runpy.run_module('chatsite.serve', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "import daphne.server\n"
        "print(type(daphne.server.twisted_loop).__module__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "usage: daphne" in done.stdout  # Daphne's own command line ran
    assert done.stdout.splitlines()[-1] == "uvloop"
