#!/bin/sh
# Installs the Debian 12 packages BSO needs to build, run and test. Safe to run again:
# apt-get is only called when something is missing.
set -eu
pkgs="build-essential cmake ninja-build pkg-config clang clang-format \
libcmocka-dev libjansson-dev libmicrohttpd-dev libsqlite3-dev libpq-dev \
libcurl4-openssl-dev openssl postgresql python3 python3-yaml python3-numpy python3-torch python3-sklearn \
python3-httpx python3-jsonschema python3-venv python3-pip python3-setuptools python3-wheel \
libmariadb-dev mariadb-server \
chromium"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm installs the dashboard's charting library at build time. A machine that already has a
# node.js with npm (from elsewhere) keeps it: Debian's npm would conflict with it.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing:$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
