"""What the tests share: the servers they start (PostgreSQL, Redis, Daphne,
nginx, the simulator), the people, the live server and headless Chromium, the
WebSocket client, waiting without sleeping, the per-test timeout and the
scheduling of modules over the workers.

The pytest plugins among them (servers, fixtures, timeouts, personas,
live_server, chromium) are loaded by name by pyproject.toml's ``addopts``."""
