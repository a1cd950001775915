"""Every WebSocket close code a chatsite socket ends with, in one place.

The 4xxx codes are the application's own (the HTTP status each echoes, plus
4000); the 1xxx codes are the protocol's (RFC 6455, section 7.4.1). The browser
has the same names and values in `static/chat/close_codes.js`, and
tests/sockets/frames/test_close_codes.py keeps the two in step. README.md's
"Limits and close codes" and its shared-link section tell users what each means.
"""

from __future__ import annotations

# No signed-in user: an owner's socket opened without one, a shared link
# requires sign-in (site defaults) and the viewer is signed out, or the
# socket's session ended (signed out, deactivated, deleted, a new password:
# see `chat.sockets.session_sockets`).
CLOSE_SIGNED_OUT = 4401
# The conversation is not the user's (or does not exist: no difference is shown).
CLOSE_FORBIDDEN = 4403
# No such socket path, or no link has the token, or it is a snapshot link
# (a snapshot never streams).
CLOSE_NOT_FOUND = 4404
# The shared link was revoked, has expired or was deleted with its conversation
# (on connect, on revoke or deletion, or when the expiry passes).
CLOSE_GONE = 4410
# The client kept sending frames over the rate (see `chat.sockets.ratelimit`).
CLOSE_RATE_LIMITED = 4429

# Sent by Daphne, not by a consumer: a client frame over
# `--websocket-max-message-size` (see `chat.http.daphne_protocol`).
CLOSE_TOO_BIG = 1009
# A consumer crashed; its clean-up runs with this code (`LiveSocket.__call__`).
CLOSE_SERVER_ERROR = 1011

# The codes after which the page does not reconnect: trying again would only
# be refused again (the user must sign in, or the link is gone).
FINAL = frozenset({CLOSE_SIGNED_OUT, CLOSE_FORBIDDEN, CLOSE_NOT_FOUND, CLOSE_GONE})
