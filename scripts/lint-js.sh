#!/usr/bin/env bash
# The front end's checks (make lint-js, run by make test and make lint): ESLint,
# then TypeScript's type check of the JSDoc types (tsc, nothing emitted), over
# static/chat/*.js; never over static/vendor/. Both configurations are in
# scripts/lint-js/, with the tools pinned in its package-lock.json.
#
# Needs node and npm: installs Debian's `nodejs` and `npm` with apt when they are
# missing (as root, or with password-less sudo; the tools run on Debian 12's
# node 18: ESLint 9, and TypeScript 7's own binary). Runs `npm ci` from the npm
# registry only when scripts/lint-js/node_modules is missing or was made from
# another package-lock.json. Without node and without root the checks are
# skipped with a message, and fail in CI (CI=true), like the scripts/ensure-*.sh.
#
# To upgrade a tool: edit its exact version in scripts/lint-js/package.json, run
# `npm install --package-lock-only --ignore-scripts` there, then this script.
set -euo pipefail
source "$(dirname "$0")/debian.sh"
cd "$(dirname "$0")/.."

DIR=scripts/lint-js
STAMP=$DIR/node_modules/.package-lock.sha256

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  use_root lint-js \
    "lint-js: node and npm are missing, so the front end is not checked; installing them needs root:" \
    "  sudo apt-get install --no-install-recommends nodejs npm"
  apt_update
  apt_install nodejs npm
fi

want=$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)
if [[ ! -f $STAMP || $(cat "$STAMP") != "$want" ]]; then
  echo "lint-js: npm ci in $DIR (node $(node --version))"
  (cd "$DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$want" >"$STAMP"
fi

# A JSDoc `import("./x.js")` is rewritten by the manifest storage like a real
# import (chatsite/storage.py), and a cycle of them fails collectstatic ("Max
# post-process passes exceeded"): shared types are named in $DIR/globals.d.ts.
if grep -n 'import("' static/chat/*.js; then
  echo "lint-js: no import(\"...\") types in static/chat: name the type in $DIR/globals.d.ts" >&2
  exit 1
fi
"$DIR/node_modules/.bin/eslint" --config "$DIR/eslint.config.mjs" --max-warnings 0 static/chat/
"$DIR/node_modules/.bin/tsc" --project "$DIR/tsconfig.json"
