"""Uploaded files read and checked before they are kept: the attachments of a
question (`chat.models.attachments`). Knows nothing of the site: it is given
bytes, a name and limits, and gives back what to store, or refuses with a
message for the user (`Refused`, with the HTTP status that fits).

`images`: Pillow opens, orients, strips, downscales and re-encodes pictures;
`document_text`: text, PDF (pypdf) and DOCX (python-docx) to plain text;
`reading`: where each is read (the costly ones in a worker process, `chat.work`).
"""

from __future__ import annotations

from chat.files.reading import read
from chat.files.refusals import Refused
from chat.files.uploads import (
    ACCEPTED_EXTENSIONS,
    IMAGE_EXTENSIONS,
    Limits,
    Prepared,
    clean_name,
    prepare,
    too_large,
)

__all__ = [
    "ACCEPTED_EXTENSIONS",
    "IMAGE_EXTENSIONS",
    "Limits",
    "Prepared",
    "Refused",
    "clean_name",
    "prepare",
    "read",
    "too_large",
]
