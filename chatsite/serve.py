"""`python -m chatsite.serve [DAPHNE OPTIONS]`: the site under Daphne, as
`daphne [DAPHNE OPTIONS] chatsite.asgi:application`, with two differences.
`manage.py runsite`, deploy/chatsite.service, the tests and the benches start
the site this way.

uvloop's event loop. Daphne makes its loop when `daphne.server` is imported
(Django's set-up imports it: "daphne" is an installed app), from the loop policy
set at that moment, so the policy is set here before anything else. Twisted's
asyncio reactor, aiohttp and Channels run on it unchanged. Its loop and
transports, written in C, took about a sixth of the CPU per relayed token
(`python -m bench`, 1 stream at 1,000 tok/s). Without uvloop (it is not built
for Windows) the loop is asyncio's own.

The WebSocket size caps. Daphne's defaults would refuse a frame the site takes
(`chat.live.protocol.frames.max_frame_bytes`); they are set unless the options set them.
"""

from __future__ import annotations

import asyncio
import os
import sys

APPLICATION = "chatsite.asgi:application"
SIZE_OPTIONS = ("--websocket-max-message-size", "--websocket-max-frame-size")


def use_uvloop() -> bool:
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def daphne_argv(options: list[str], max_frame_bytes: int) -> list[str]:
    """Daphne's command line: `options`, the size caps they do not set, the site."""
    caps = [
        arg
        for option in SIZE_OPTIONS
        if not any(o == option or o.startswith(option + "=") for o in options)
        for arg in (option, str(max_frame_bytes))
    ]
    return ["daphne", *options, *caps, APPLICATION]


def main() -> None:
    use_uvloop()  # first: see the module's doc
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatsite.settings")
    import django

    django.setup()
    from daphne.cli import CommandLineInterface

    from chat.live.protocol import frames

    sys.argv = daphne_argv(sys.argv[1:], frames.max_frame_bytes())
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
