"""The tools a model may call in the middle of an answer: what a call and its
outcome are to the engine (`calls`), MCP servers as a source of tools
(`mcp`), and web search with page fetching (`web`)."""
