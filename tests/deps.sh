#!/usr/bin/env bash
# Installs the Debian 12 packages that building, the demo and the test suite need, when missing.
set -euo pipefail
packages=(g++ cmake make ninja-build pkg-config libhiredis-dev libcli11-dev libfmt-dev libssl-dev libgtest-dev
          bats bats-support bats-assert redis-server redis-sentinel redis-tools python3 python3-redis jq
          openssl git mandoc man-db dpkg-dev lintian cron systemd bash-completion zsh fish postgresql
          faketime python3-prometheus-client prometheus libcurl4)
missing=()
# A package whose triggers are pending is installed: man-db is so for a moment whenever any package
# with a man page is installed (packaging.bats's dpkg -i, beside another run of the suite).
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
        grep -Eq '^install ok (installed|triggers-pending|triggers-awaited)$' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
# postgresql is there for tests/e2e/fencing.bats, which runs a throwaway server of its own on a
# free port. The package creates and may start a "main" cluster on 5432: stop the one this
# install created (only then), so that no server is left running for nothing.
if [[ " ${missing[*]} " == *" postgresql "* ]] && command -v pg_lsclusters > /dev/null; then
    pg_lsclusters --no-header | while read -r version cluster _port status _; do
        [ "$status" != online ] || $SUDO pg_ctlcluster "$version" "$cluster" stop || true
    done
fi
