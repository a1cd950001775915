"""Imported once by the fork server the workers are forked from (never by the
serving process): Django set up for translations, and the parsers, so a task
costs a fork, not their imports."""

from __future__ import annotations

import importlib
import logging
import os

# The modules whose functions run here, named rather than imported: the seam
# imports nothing of the packages that call it (tests/test_layers.py).
READERS = (
    "chat.files.reading",
    "chat.transfer.detect",
    "chat.tools.web.extract",
    "chat.tools.mcp.oversize",
)

logger = logging.getLogger(__name__)

try:
    if os.environ.get("DJANGO_SETTINGS_MODULE"):
        import django

        django.setup(set_prefix=False)
    import docx  # noqa: F401
    import pypdf  # noqa: F401
    import trafilatura  # noqa: F401
    from PIL import Image

    Image.init()  # every format plugin, not only the ones loaded lazily
    for name in READERS:
        importlib.import_module(name)
except Exception:  # a task imports what failed here, and reports that
    logger.exception("the work fork server could not preload")
