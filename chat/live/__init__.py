"""What runs an answer live, in two layers: the engine (`chat.live.engine`: the
turns, the runner, the relay, admission, persistence, the processes' fan-out)
and below it the wire protocol (`chat.live.protocol`: the frames the server
sends, a shared link's frames, the channel layer's events and group names).
The protocol imports neither the engine nor the sockets; the sockets
(`chat.sockets`) and the API (`chat.api`) call the engine."""
