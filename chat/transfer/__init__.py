"""Taking conversations out and bringing them in: chatsite's own JSON document
(`export_format`), its export as JSON, Markdown or a streamed ZIP (`export`,
`markdown`), and the importer (`imports`, its rows written in bulk by
`bulk_rows`) with a reader per format (`chatsite`, `open_webui`, `chatgpt`)
chosen from the file's content (`detect`)."""
