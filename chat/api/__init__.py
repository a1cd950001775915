"""The API for scripts and tools: OpenAI-compatible (`/v1/`) and
Ollama-compatible (`/api/`) endpoints, with personal keys
(`chat.models.api_keys`). An answer asked here goes through the same
admission, access, quotas, relay and figures as one asked on a socket
(`chat.api.answers`)."""
