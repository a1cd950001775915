"""The sidebar: the pages of conversations (pinned, recent, per folder,
archived), folders, and the search."""
