"""The server processes the tests start and stop: PostgreSQL, Redis, Daphne,
nginx, and what they share (`processes`: a handle, a free port, dying with
the run)."""
