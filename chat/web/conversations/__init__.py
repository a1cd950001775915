"""A conversation's pages: the home page and first question, the conversation
with its settings and model picker, older messages and versions, and its
attachments."""
