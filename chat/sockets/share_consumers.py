"""The read-only socket of a live shared link: `ws/share/<token>/`.

It hears the conversation like the owner's socket (the runner in this process, the
conversation's group for other processes) and passes its viewer only read-only
frames, with ordinals for message ids and thinking dropped unless the link
includes it (`chat.live.protocol.share_frames`). Its text comes merged to one frame
about
every 50 ms (`chat.live.engine.processes.fanout.Pacer`): a link watched by a crowd must
not slow the
owner's answer, whose relay writes to every socket of the process. A viewer may
only `resume`; any other frame is answered with a `read_only` error frame and
the socket stays open.

It is not an owner's socket: both own a feed (`chat.sockets.feed`), what they
hear of the conversation and how they resume an answer.

Close codes (`chat.sockets.close_codes`):
  CLOSE_SIGNED_OUT  the site requires sign-in for shared links and the viewer
                    is signed out
  CLOSE_NOT_FOUND   no link has this token, or it is a snapshot link (nothing
                    streams)
  CLOSE_GONE        the link was revoked or has expired (on connect, on revoke,
                    on expiry)
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from chat.live.engine.processes import layer
from chat.live.engine.processes.fanout import Pacer
from chat.live.protocol import frames
from chat.live.protocol.channel_events import ShareGone
from chat.live.protocol.share_frames import Ordinals, for_viewer
from chat.models import ShareLink, SiteDefaults
from chat.sockets import client_frames
from chat.sockets.base import LiveSocket
from chat.sockets.close_codes import CLOSE_GONE, CLOSE_NOT_FOUND, CLOSE_SIGNED_OUT
from chat.sockets.feed import Feed
from chat.sockets.ratelimit import FrameLimiter

logger = logging.getLogger(__name__)

GONE_DETAIL = gettext_noop("This link is no longer available.")
DELTAS: Final = ("thinking", "content")


class ShareConsumer(LiveSocket):
    link: ShareLink | None = None
    token: str
    ordinals: Ordinals
    closed: bool = False
    held: list[frames.ServerFrame] | None = None
    expiry: asyncio.TimerHandle | None = None
    expiring: asyncio.Future[None] | None = None
    catching_up: asyncio.Task[None] | None = None
    pacer: Pacer

    async def connect(self) -> None:
        self.token = self.scope["url_route"]["kwargs"]["token"]
        self.limiter = FrameLimiter()
        link, refusal = await _find(self.token, self.scope.get("user"))
        if refusal is not None or link is None:
            # Accept first so the close code reaches the browser.
            await self.accept()
            await self.close(code=refusal or CLOSE_NOT_FOUND)
            return
        self.link = link
        self.pacer = Pacer(self._write)
        # Subscribed before the socket opens: what the conversation sends from
        # here on is held until then, so an open socket has missed nothing since.
        self.held = []
        feed = await self.open_feed(link.conversation_id)
        await layer.join(link.group_name, self.channel_name)
        message_ids = await _message_ids(link)
        self.ordinals = Ordinals(message_ids)
        await self.accept()
        held, self.held = self.held, None
        for frame in held:
            await self.send_frame(frame)
        # Not awaited here: a long conversation's catch-up must stop when the
        # viewer leaves (the disconnect handler runs only after `connect`).
        self.catching_up = asyncio.create_task(
            self.catch_up(feed, message_ids, _seen(self.scope, len(message_ids))),
            name="share-catch-up",
        )
        seconds = link.seconds_left()
        if seconds is not None:
            self.expiry = asyncio.get_running_loop().call_later(seconds, self._expire)

    async def catch_up(self, feed: Feed, message_ids: list[int], seen: int) -> None:
        """Send the messages after the page's first `seen` (they came between the
        page and the socket); a running answer is resumed from its start. The
        socket's own task, cancelled when the viewer leaves."""
        missed = message_ids[seen:]
        sent = 0
        try:
            for message_id in missed:
                if not feed.follows(message_id):
                    # Else it started after we subscribed: all of it was held.
                    await feed.resume(message_id, 0, 0)
                sent += 1
        except asyncio.CancelledError:
            logger.info(
                "catch-up stopped, the viewer left: %d of %d messages sent",
                sent,
                len(missed),
            )
            raise
        except Exception:
            logger.warning("catch-up failed", exc_info=True)

    async def disconnect(self, code: int) -> None:
        if self.link is None:
            return
        if self.catching_up is not None:
            self.catching_up.cancel()
        if self.expiry is not None:
            self.expiry.cancel()
        self.pacer.close()
        await self.leave()  # leaves the link's group too

    async def handle(self, frame: client_frames.ClientFrame) -> None:
        """Only `resume` (by ordinal) is accepted: the link is read-only."""
        if frame["type"] != "resume":
            await self.send_frame(
                frames.error(
                    None, "read_only", _("This shared conversation is read-only.")
                )
            )
            return
        message_id = self.ordinals.message_id(frame["message_id"])
        if message_id is None:
            await self.send_frame(
                frames.error(None, "not_found", _("That message is not in this link."))
            )
            return
        assert self.feed is not None  # set in `connect`, or the socket was closed
        await self.feed.resume(message_id, frame["offset"], frame["thinking_offset"])

    async def send_frame(self, frame: frames.ServerFrame) -> None:
        if self.closed or self.link is None:
            return
        if self.held is not None:
            self.held.append(frame)
            return
        if frame["type"] in DELTAS:
            # The relay may be feeding the owner too: merging and writing the
            # text is left to the viewer's pacer.
            self.pacer.delta(frame)
        else:
            await self.pacer.frame(frame)

    async def _write(self, frame: frames.ServerFrame) -> None:
        if self.closed or self.link is None:
            return
        shown = for_viewer(frame, self.link, self.token, self.ordinals)
        if shown is not None:
            await self.write(shown)

    def _expire(self) -> None:
        self.expiring = asyncio.ensure_future(self.share_gone({"type": "share.gone"}))

    async def share_gone(self, event: ShareGone) -> None:
        """The link was revoked (a `share.gone` event) or expired: cut off."""
        if self.closed:
            return
        await self.send_frame(frames.error(None, "link_gone", _(GONE_DETAIL)))
        self.closed = True
        self.pacer.close()
        if self.feed is not None:
            self.feed.unsubscribe()
        await self.close(code=CLOSE_GONE)


@database_sync_to_async
def _message_ids(link: ShareLink) -> list[int]:
    return list(link.visible_messages().values_list("pk", flat=True))


@database_sync_to_async
def _find(token: str, user: Any) -> tuple[ShareLink | None, int | None]:
    """The link, and the close code for a socket that may not watch it."""
    link = ShareLink.objects.by_token(token).first()
    if link is None or not link.is_live:
        return link, CLOSE_NOT_FOUND
    if not link.is_active:
        return link, CLOSE_GONE
    signed_in = user is not None and user.is_authenticated
    if SiteDefaults.load().share_requires_sign_in and not signed_in:
        return link, CLOSE_SIGNED_OUT
    return link, None


def _seen(scope: Any, default: int) -> int:
    """How many messages the viewer's page shows (`?seen=N`)."""
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("seen")
    if values and values[0].isdigit():
        return min(int(values[0]), default)
    return default
