# Sourced by the scripts/ensure-*.sh: how they install a Debian package the
# tests need. Not run on its own.

in_ci() { [[ ${CI:-} =~ ^(1|true|yes|on)$ ]]; }

# use_root WHO HINT...: set SUDO to what runs a command as root (nothing as
# root, `sudo -n` with password-less sudo). Without either, print HINT's lines
# (what to run by hand) and exit: 1 in CI, else 0, so the tests that need the
# package skip locally.
use_root() {
  local who=$1
  shift
  if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    printf '%s\n' "$@" >&2
    in_ci && exit 1
    exit 0
  fi
  echo "$who: installing with apt-get"
  export DEBIAN_FRONTEND=noninteractive
}

# apt_update, then apt_install PACKAGE...: after use_root.
apt_update() { "${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 -q update; }
apt_install() {
  "${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 -q install -y \
    --no-install-recommends "$@"
}

# refuse_service_starts: after use_root, until the script exits, a package
# being installed may not start its service (the tests start their own).
# invoke-rc.d and deb-systemd-invoke ask policy-rc.d; 101 means "do not start".
# Only when the machine has no policy of its own, and removed again after.
refuse_service_starts() {
  local policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
    "${SUDO[@]}" chmod 755 "$policy"
    trap '"${SUDO[@]}" rm -f /usr/sbin/policy-rc.d' EXIT
  fi
}
