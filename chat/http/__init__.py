"""Request plumbing below every front door (the pages, the API, the sockets,
the operators' pages, sign-in): the client's address, the request and upload
limits, responses streamed from a generator, the security headers, and
Daphne's own connections (WebSocket frames and HTTP bodies written through,
request bodies held to their route's limit). Imports nothing of `chat`: the
routes of the request bodies are the front doors' own, given at start-up
(`chat/apps.py`)."""
