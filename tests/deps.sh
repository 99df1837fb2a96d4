#!/usr/bin/env bash
# Installs the Debian 12 packages that building, the demo and the test suite need, when missing.
set -euo pipefail
packages=(g++ cmake make pkg-config libhiredis-dev libcli11-dev libfmt-dev libssl-dev libgtest-dev
          bats bats-support bats-assert redis-server redis-sentinel redis-tools python3 python3-redis jq
          openssl git mandoc man-db dpkg-dev lintian cron systemd bash-completion zsh fish)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
