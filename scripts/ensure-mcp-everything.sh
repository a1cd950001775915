#!/usr/bin/env bash
# Install the MCP reference server (the npm `@modelcontextprotocol/server-everything`
# package, exactly as pinned in tests/tools/mcp/everything/package-lock.json) for
# the MCP tool tests, which start it over stdio and Streamable HTTP.
#
# Needs node and npm, like scripts/ensure-oidc-provider.sh (which see): installs
# Debian's `nodejs` and `npm` with apt when they are missing. Runs `npm ci` only
# when node_modules is missing or was made from another package-lock.json.
set -euo pipefail
source "$(dirname "$0")/debian.sh"

DIR=$(cd "$(dirname "$0")/../tests/tools/mcp/everything" && pwd)
STAMP=$DIR/node_modules/.package-lock.sha256

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  use_root ensure-mcp-everything \
    "ensure-mcp-everything: node and npm are missing and installing them needs root:" \
    "  sudo apt-get install --no-install-recommends nodejs npm"
  apt_update
  apt_install nodejs npm
fi

want=$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)
if [[ -f $STAMP && $(cat "$STAMP") == "$want" ]]; then
  exit 0
fi
echo "ensure-mcp-everything: npm ci in $DIR (node $(node --version))"
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" >"$STAMP"
