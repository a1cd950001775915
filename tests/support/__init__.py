"""What the tests share: the servers they start (PostgreSQL, Redis, Daphne,
nginx, the simulator), the WebSocket client, waiting without sleeping, the
per-test timeout and the scheduling of modules over the workers."""
