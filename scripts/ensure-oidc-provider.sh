#!/usr/bin/env bash
# Install the test OpenID provider (the npm `oidc-provider` package, exactly as
# pinned in tests/accounts/oidc_provider/package-lock.json) for the sign-in tests.
#
# Needs node and npm: installs Debian's `nodejs` and `npm` with apt when they are
# missing (as root, or with password-less sudo). oidc-provider 8.x runs on
# Debian 12's node 18 and on newer ones. Runs `npm ci` only when node_modules is
# missing or was made from another package-lock.json. With CI=true any failure fails.
set -euo pipefail
source "$(dirname "$0")/debian.sh"

DIR=$(cd "$(dirname "$0")/../tests/accounts/oidc_provider" && pwd)
STAMP=$DIR/node_modules/.package-lock.sha256

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  use_root ensure-oidc-provider \
    "ensure-oidc-provider: node and npm are missing and installing them needs root:" \
    "  sudo apt-get install --no-install-recommends nodejs npm"
  apt_update
  apt_install nodejs npm
fi

want=$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)
if [[ -f $STAMP && $(cat "$STAMP") == "$want" ]]; then
  exit 0
fi
echo "ensure-oidc-provider: npm ci in $DIR (node $(node --version))"
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" >"$STAMP"
