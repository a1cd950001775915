#!/usr/bin/env bash
# Make sure Debian's OpenLDAP server (slapd, slapadd) is installed, for the LDAP
# sign-in tests (tests/accounts/ldap_server.py starts its own throwaway one).
#
# As root (or with password-less sudo) installs `slapd` with apt, preseeded to
# skip the package's own directory ("Omit OpenLDAP server configuration"), and
# with service starts refused while it installs: the tests never use a system
# slapd, and none is left running. Otherwise explains what to do. With CI=true
# a missing slapd fails.
set -euo pipefail
source "$(dirname "$0")/debian.sh"

SLAPD=${SLAPD:-/usr/sbin/slapd}

works() { [[ -x $SLAPD && -x $(dirname "$SLAPD")/slapadd ]]; }

if works; then
  exit 0
fi

use_root ensure-slapd \
  "ensure-slapd: $SLAPD is missing and installing it needs root:" \
  "  echo 'slapd slapd/no_configuration boolean true' | sudo debconf-set-selections" \
  "  sudo apt-get install --no-install-recommends slapd" \
  "  (or set SLAPD=/path/to/slapd). The LDAP tests will be skipped."
echo "slapd slapd/no_configuration boolean true" | "${SUDO[@]}" debconf-set-selections

refuse_service_starts

apt_update
apt_install slapd

if ! works; then
  echo "ensure-slapd: $SLAPD still missing after installing it" >&2
  exit 1
fi
echo "ensure-slapd: $("$SLAPD" -VVV 2>&1 | head -n 1)"
