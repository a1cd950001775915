"""Daphne's WebSocket server (Autobahn) fails a connection by dropping its TCP
connection, so a client sending a message over `--websocket-max-message-size`
(or breaking the protocol) sees 1006, "abnormal closure", as if the network had
failed. Autobahn's `failByDrop` option sends the close frame instead (1009,
"message too big": `chat.sockets.close_codes.CLOSE_TOO_BIG`; 1002, 1007 for
protocol and encoding errors), then closes.
Daphne sets no such option and has no flag for it: its factory is given it
here, before Daphne builds the factory (it imports the application first).
"""

from __future__ import annotations

from typing import Any

from daphne.ws_protocol import WebSocketFactory


def close_with_a_code() -> None:
    reset = WebSocketFactory.resetProtocolOptions
    if getattr(reset, "closes_with_a_code", False):
        return

    def reset_protocol_options(self: Any) -> None:
        reset(self)
        self.failByDrop = False

    reset_protocol_options.closes_with_a_code = True  # type: ignore[attr-defined]
    WebSocketFactory.resetProtocolOptions = reset_protocol_options
