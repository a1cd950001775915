"""A turn: how it begins, for the sockets and the API alike (`beginning`), and
its answer asked of the model server before its rows are committed (`early`,
`asking`). A turn of several steps (model calls, tool runs) grows here."""
