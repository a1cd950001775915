#!/usr/bin/env bash
# Make sure a Chromium that Playwright can drive is installed (browser tests).
#
# Uses $CHROMIUM (default /usr/bin/chromium, Debian's package). If it does not
# run: as root (or with password-less sudo) installs Debian's `chromium` with
# apt; otherwise explains what to do. Playwright's own browser download
# (`playwright install`) is never used. With CI=true a missing browser fails.
set -euo pipefail
source "$(dirname "$0")/debian.sh"

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

works() {
  # Debian's wrapper prints a harmless "[: ...: unexpected operator" on stderr.
  [[ -x $CHROMIUM ]] && "$CHROMIUM" --version 2>/dev/null | grep -qi chrom
}

if works; then
  exit 0
fi

if [[ $CHROMIUM != /usr/bin/chromium ]]; then
  echo "ensure-chromium: CHROMIUM=$CHROMIUM does not run." >&2
  in_ci && exit 1
  exit 0
fi

use_root ensure-chromium \
  "ensure-chromium: $CHROMIUM is missing and installing it needs root:" \
  "  sudo apt-get install --no-install-recommends chromium fonts-dejavu-core" \
  "  (or set CHROMIUM=/path/to/chromium). Browser tests will be skipped."
apt_update
packages=(chromium fonts-dejavu-core)
# Colour emoji, so pages with emoji render like a desktop's (if the release has it).
if apt-cache show fonts-noto-color-emoji >/dev/null 2>&1; then
  packages+=(fonts-noto-color-emoji)
fi
# A Chinese font: without one the zh-Hans pages (README "Languages";
# bench/screenshots.py) show boxes for every character.
if apt-cache show fonts-wqy-microhei >/dev/null 2>&1; then
  packages+=(fonts-wqy-microhei)
fi
apt_install "${packages[@]}"

if ! works; then
  echo "ensure-chromium: $CHROMIUM still does not run after installing it" >&2
  exit 1
fi
echo "ensure-chromium: $("$CHROMIUM" --version 2>/dev/null)"
