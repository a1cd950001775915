"""Shared links: made, changed and revoked by the conversation's owner, read
by anyone with their token (`views.read_only_page`, also a team's view)."""
