"""Imported once by the fork server the workers are forked from (never by the
serving process): Django set up for translations, and the parsers, so a task
costs a fork, not their imports."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)

try:
    if os.environ.get("DJANGO_SETTINGS_MODULE"):
        import django

        django.setup(set_prefix=False)
    import docx  # noqa: F401
    import pypdf  # noqa: F401
    from PIL import Image

    Image.init()  # every format plugin, not only the ones loaded lazily

    import chat.files  # noqa: F401
except Exception:  # a task imports what failed here, and reports that
    logger.exception("the work fork server could not preload")
