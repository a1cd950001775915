"""Expensive input: one user's stream and small upload while four other users
send the inputs that cost a server most.

`python -m bench.expensive_input [--sqlite] [--seconds 20]` (run by `make
bench`). One Daphne process with production settings on PostgreSQL and Redis
(started like the test suite's, `bench.processes`), or on the SQLite default
with `--sqlite`, and the simulator. The user `bench` streams an answer at 80
tok/s over the conversation's WebSocket and attaches a 12-byte text file once
a second: first alone (the reference), then for `--seconds` while four other
users, each in a loop of one request at a time, send

1. a 50 MB multipart body to `/`, signed out and without a CSRF token;
2. a 50 MB multipart body to the attachment route, signed in;
3. a ~70 kB ZIP of a valid-looking chatsite export whose one answer inflates
   to ~72 MB (deflate's best ratio is about 1,000:1) to the import route;
4. a ~12 kB PDF whose 60 pages share one content stream of 10,000 text
   operators (about 0.3 CPU-seconds per page in pypdf) as an attachment.

Each attack request is given up after `REQUEST_TIMEOUT` s (the server may go
on with it, as it would for a real attacker who leaves), and the attackers run
in a process of their own, so their sending costs the stream's client nothing.

The table: the stream's latency per token (arrival minus the simulator's send
stamp) under attack against the reference, as added p50/p99/max; the 12-byte
upload's time to answer; the serving process's resident memory growth (the
peak, VmHWM after a reset through /proc/<pid>/clear_refs, and VmRSS sampled,
from the memory before the attacks); and each attack's outcomes (status codes,
or how the connection ended) and time to answer. Budgets are printed as
pass/fail, never asserted. Writes bench/results/expensive_input.json.

The package: `inputs` (the four expensive inputs), `attackers` (their process
and its hand-made HTTP client), `phase` (the stream and the small uploads),
`memory` (the serving process's), `run` (the two phases into figures),
`report` (the budgets and the table), `__main__` (the command).
"""
