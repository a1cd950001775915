"""Export and import pages (`chat.transfer` does the work)."""
