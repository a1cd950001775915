"""Daphne 4.2.3's `WebRequest.process`, copied whole but for its last lines:
the body goes to the application through `feed`, which `BoundedRequest`
(`chat.http.bounded_bodies`) gives its own way. Kept apart so that a new
Daphne's `process` can be compared with it line by line
(tests/http/test_daphne_protocol.py holds the version)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Generator
from typing import IO, Any
from urllib.parse import unquote

from daphne.http_protocol import WebRequest
from daphne.utils import (
    HEADER_NAME_RE,
    INVALID_HEADER_VALUE_BYTES,
    parse_x_forwarded_for,
)
from twisted.internet.defer import inlineCallbacks, maybeDeferred
from twisted.protocols.policies import ProtocolWrapper

logger = logging.getLogger(__name__)


class DaphneRequest(WebRequest):  # type: ignore[misc]
    """Daphne's request, its body handed over by `feed`."""

    path: bytes  # Twisted's, as `process` uses them
    transport: Any

    # Daphne 4.2.3's `WebRequest.process` (tests/http/test_daphne_protocol.py
    # holds the version), but for the body's last lines: `feed`.
    @inlineCallbacks
    def process(self) -> Generator[Any, Any, None]:
        try:
            self.request_start = time.time()

            # Validate header names and values.
            for name, values in self.requestHeaders.getAllRawHeaders():
                if not HEADER_NAME_RE.fullmatch(name):
                    self.basic_error(400, b"Bad Request", "Invalid header name")
                    return
                for value in values:
                    if INVALID_HEADER_VALUE_BYTES.intersection(value):
                        self.basic_error(400, b"Bad Request", "Invalid header value")
                        return

            upgrade_header = None
            if self.requestHeaders.hasHeader(b"Upgrade"):
                upgrade_header = self.requestHeaders.getRawHeaders(b"Upgrade")[0]
            if hasattr(self.client, "host") and hasattr(self.client, "port"):
                self.client_addr = [str(self.client.host), self.client.port]
                self.server_addr = [str(self.host.host), self.host.port]

            self.client_scheme = "https" if self.isSecure() else "http"

            if self.server.proxy_forwarded_address_header:
                self.client_addr, self.client_scheme = parse_x_forwarded_for(
                    self.requestHeaders,
                    self.server.proxy_forwarded_address_header,
                    self.server.proxy_forwarded_port_header,
                    self.server.proxy_forwarded_proto_header,
                    self.client_addr,
                    self.client_scheme,
                )
            try:
                self.path.decode("ascii")
            except UnicodeDecodeError:
                self.path = b"/"
                self.basic_error(400, b"Bad Request", "Invalid characters in path")
                return
            self.query_string = b""
            if b"?" in self.uri:
                self.query_string = self.uri.split(b"?", 1)[1]
                try:
                    self.query_string.decode("ascii")
                except UnicodeDecodeError:
                    self.basic_error(400, b"Bad Request", "Invalid query string")
                    return
            if upgrade_header and upgrade_header.lower() == b"websocket":
                protocol = self.server.ws_factory.buildProtocol(
                    self.transport.getPeer()
                )
                if not protocol:
                    self.setResponseCode(500)
                    logger.warning("Could not make WebSocket protocol")
                    self.finish()
                protocol._raw_query_string = self.query_string
                transport, self.transport = self.transport, None
                if isinstance(transport, ProtocolWrapper):
                    transport.wrappedProtocol = protocol
                else:
                    transport.protocol = protocol
                protocol.makeConnection(transport)
                data = self.method + b" " + self.uri + b" HTTP/1.1\x0d\x0a"
                for h in self.requestHeaders.getAllRawHeaders():
                    data += h[0] + b": " + b",".join(h[1]) + b"\x0d\x0a"
                data += b"\x0d\x0a"
                data += self.content.read()
                protocol.dataReceived(data)
                logger.debug("Upgraded connection %s to WebSocket", self.client_addr)
                self.server.protocol_disconnected(self)
                self.channel._networkProducer.resumeProducing()
            else:
                self.clean_headers = []
                self.root_path = self.server.root_path
                for name, values in self.requestHeaders.getAllRawHeaders():
                    if b"_" in name:  # CVE-2015-0219
                        continue
                    for value in values:
                        if name.lower() == b"daphne-root-path":
                            self.root_path = unquote(value.decode("ascii"))
                        else:
                            self.clean_headers.append((name.lower(), value))
                logger.debug("HTTP %s request for %s", self.method, self.client_addr)
                self.content.seek(0, 0)
                self.application_queue = yield maybeDeferred(
                    self.server.create_application,
                    self,
                    {
                        "type": "http",
                        "http_version": self.clientproto.split(b"/")[-1].decode(
                            "ascii"
                        ),
                        "method": self.method.decode("ascii"),
                        "path": unquote(self.path.decode("ascii")),
                        "raw_path": self.path,
                        "root_path": self.root_path,
                        "scheme": self.client_scheme,
                        "query_string": self.query_string,
                        "headers": self.clean_headers,
                        "client": self.client_addr,
                        "server": self.server_addr,
                    },
                )
                if self.application_queue is None or self.content.closed:
                    return  # abandoned before the application was made
                self.feed(self.application_queue, self.content)
        except Exception:
            logger.exception("Daphne HTTP processing error")
            self.basic_error(
                500, b"Internal Server Error", "Daphne HTTP processing error"
            )

    def feed(self, queue: asyncio.Queue[dict[str, Any]], content: IO[bytes]) -> None:
        raise NotImplementedError
