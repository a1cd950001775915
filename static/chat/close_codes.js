// The WebSocket close codes the page reacts to: after these it stays closed
// (any other close reconnects). The same names and values as the server's
// constants (chat/live/consumers.py, chat/live/routing.py, chat/live/share_consumers.py).

export const CLOSE_UNAUTHENTICATED = 4401;
export const CLOSE_FORBIDDEN = 4403;
export const CLOSE_NOT_FOUND = 4404;
export const CLOSE_GONE = 4410;
