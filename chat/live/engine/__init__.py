"""The engine: every answer of this process, from the turn that begins it
(`turn`) through its place in the fair queue (`admission`), its run
(`runner`, `generation`, `relay`, `first_token`, `preload`) and its saves
(`checkpoints`, `finish`, `observers`) to what the pages ask of it
(`control`, `server_status`); what spans processes (the channel layer, other
processes' answers and whether their owners live) is in `processes`. Each
event loop's own state is `loop_state`."""
