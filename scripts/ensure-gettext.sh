#!/usr/bin/env bash
# Make sure GNU gettext's xgettext and msgmerge are installed, for the test that
# runs Django's makemessages over the code to find strings missing from the
# catalogs (tests/test_translations.py). The site itself does not need them:
# chatsite/catalogs.py compiles the catalogs in Python.
#
# As root (or with password-less sudo) installs the package `gettext` with apt.
# Otherwise explains what to do. With CI=true a missing xgettext fails.
set -euo pipefail
source "$(dirname "$0")/debian.sh"

if command -v xgettext >/dev/null && command -v msgmerge >/dev/null; then
  exit 0
fi

use_root ensure-gettext \
  "ensure-gettext: xgettext is missing and installing it needs root:" \
  "  sudo apt-get install --no-install-recommends gettext" \
  "  The test that the catalogs hold every marked string will be skipped."

apt_update
apt_install gettext

if ! command -v xgettext >/dev/null; then
  echo "ensure-gettext: xgettext still missing after installing gettext" >&2
  exit 1
fi
echo "ensure-gettext: $(xgettext --version | head -1)"
