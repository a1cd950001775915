"""Relay latency: what chatsite adds between the model server and the socket.

The simulator stamps each token's send time (wall clock, right after the write).
Clients record when each token's text arrives, once through chatsite's WebSocket
and once reading the simulator directly (the baseline). Both run in the same
process, in the same run, so "added" is a difference measured under equal load.

`site` starts the simulator and the server, `clients` and `api` read the
answers (over the sockets, the bare relay, the simulator itself and the API),
`run` asks a scenario's questions and turns the arrivals into a row; the
table is printed by `python -m bench` (bench/__main__.py).
"""
