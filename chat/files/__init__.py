"""Uploaded files read and checked before they are kept: the attachments of a
question (`chat.models.attachments`). Knows nothing of the site: it is given
bytes, a name and limits, and gives back what to store, or refuses with a
message for the user (`Refused`, with the HTTP status that fits).

`uploads`: one upload in, what to keep out (`prepare`, `Limits`, `Prepared`);
`images`: Pillow opens, orients, strips, downscales and re-encodes pictures;
`document_text`: text, PDF (pypdf) and DOCX (python-docx) to plain text;
`reading`: where each is read (the costly ones in a worker process, `chat.work`);
`refusals`: `Refused`.

Import from those modules: this one imports none of them, as they import
from it (`from chat.files import document_text`), and a package's `__init__`
importing its own importers is a cycle (tests/test_layers.py).
"""
