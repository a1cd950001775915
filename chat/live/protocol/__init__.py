"""The wire protocol: the frames the server sends (`frames`, with the frame
limits of both directions), what a shared link's viewer is sent
(`share_frames`), and the channel layer's events and group names
(`channel_events`). It imports only the models: the engine, the sockets and
the pages build on it. The client's frames are parsed next to the sockets
(`chat.sockets.client_frames`)."""
