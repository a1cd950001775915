"""The production storage of static files: WhiteNoise's compressed manifest
storage (hashed names, gzip and Brotli copies), with the imports of the site's
ES modules rewritten to the hashed names too.

Django leaves `import ... from "./x.js"` alone unless asked
(`support_js_module_import_aggregation`), and a module would then load its
dependencies by their bare names: without the long cache lifetime of hashed
files, and stale after a deploy. The modules of static/chat/ import one another
without a cycle, which the manifest's passes need (a cycle never settles on a
hash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.staticfiles.storage import HashedFilesMixin

if TYPE_CHECKING:  # WhiteNoise has no type hints; its class is one of Django's
    from django.contrib.staticfiles.storage import (
        ManifestStaticFilesStorage as CompressedManifestStaticFilesStorage,
    )
else:
    from whitenoise.storage import CompressedManifestStaticFilesStorage

# Django's patterns for `import`/`export ... from` and `import(...)` (private,
# so not in django-stubs), without the file pattern they come with.
_, MODULE_IMPORTS = HashedFilesMixin._js_module_import_aggregation_patterns  # type: ignore[attr-defined]


class ManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
    # For the site's own modules only: other apps' scripts (django_htmx's htmx
    # extensions) are not modules, and the patterns misread them.
    _js_module_import_aggregation_patterns = ("chat/*.js", MODULE_IMPORTS)
    # The web app manifest names its icons: hashed like a stylesheet's url()s.
    patterns = (
        *CompressedManifestStaticFilesStorage.patterns,
        (
            "chat/*.webmanifest",
            ((r"""(?P<matched>"src":\s*"(?P<url>[^"]+)")""", '"src": "%(url)s"'),),
        ),
    )
