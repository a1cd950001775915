#!/usr/bin/env bash
# Make sure Debian's nginx is installed, for the test of the production recipe
# (tests/live/engine/processes/test_nginx.py starts its own throwaway nginx with deploy/nginx.conf).
#
# As root (or with password-less sudo) installs the package `nginx` with apt,
# with service starts refused while it installs: the tests never use the
# system's nginx, and none is left running. Otherwise explains
# what to do. With CI=true a missing nginx fails.
set -euo pipefail
source "$(dirname "$0")/debian.sh"

NGINX=${NGINX:-/usr/sbin/nginx}

if [[ -x $NGINX ]]; then
  exit 0
fi

use_root ensure-nginx \
  "ensure-nginx: $NGINX is missing and installing it needs root:" \
  "  sudo apt-get install --no-install-recommends nginx" \
  "  (or set NGINX=/path/to/nginx). The nginx test will be skipped."

refuse_service_starts

apt_update
apt_install nginx

if [[ ! -x $NGINX ]]; then
  echo "ensure-nginx: $NGINX still missing after installing it" >&2
  exit 1
fi
echo "ensure-nginx: $("$NGINX" -v 2>&1)"
