"""Compiles the interface's catalogs, locale/<lang>/LC_MESSAGES/*.po, to the
.mo files Django reads, with Babel (pure Python: no GNU gettext needed to run
the site). Only a .mo older than its .po is written, so it is cheap to run
before every start: `make run` and `make test` do (`make messages`), and so
does a production host after each update (`python -m chatsite.catalogs`, see
the README). Fuzzy entries are left out, as msgfmt does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE = Path(__file__).resolve().parent.parent / "locale"


def compile_stale(locale: Path = LOCALE) -> list[Path]:
    """Writes each .mo that is missing or older than its .po; returns them."""
    written = []
    for po in sorted(locale.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as source:
            catalog = read_po(source, locale=po.parent.parent.name)
        # Written beside, then renamed: a server (or another test worker
        # compiling it too) never reads half a file.
        partial = mo.with_suffix(f".{os.getpid()}.partial")
        with partial.open("wb") as target:
            write_mo(target, catalog)
        os.replace(partial, mo)
        written.append(mo)
    return written


if __name__ == "__main__":
    for mo in compile_stale():
        sys.stderr.write(f"compiled {mo.relative_to(LOCALE.parent)}\n")
