#!/usr/bin/env bash
# Installs the Debian 12 packages OpenHCCL needs, only those missing (apt-get as root, else sudo).
set -euo pipefail
pkgs=(cmake gcc make pkg-config libcriterion-dev liburing-dev libnuma-dev libibverbs-dev librdmacm-dev libjson-c-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
