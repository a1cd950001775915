"""Taking conversations out and bringing them in: chatsite's own JSON document
(`documents`), its export as JSON, Markdown or a streamed ZIP (`export`,
`markdown`), and the importer (`imports`) with a reader per format
(`chatsite`, `open_webui`, `chatgpt`) chosen from the file's content
(`detect`)."""
