"""The management commands (chat/management/commands/)."""
