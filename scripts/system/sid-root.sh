#!/usr/bin/env bash
# Builds (or reuses) a Debian sid root used through bwrap for real local servers:
# llama.cpp's llama-server (the gateway's upstream in tests) and Synapse (Matrix).
# Idempotent: a root with a matching completion marker is reused as is.
# Usage: scripts/system/sid-root.sh        -> prints the root path on the last line
set -euo pipefail

CACHE="${PYNCHY_SYSTEM_CACHE:-/var/cache/pynchy}"
ROOT="$CACHE/sid-root"
MIRROR="${PYNCHY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES=(matrix-synapse llama.cpp-tools python3-gguf python3-numpy)
# The marker names the package set: adding a package rebuilds nothing, it only installs the new one.
MARKER="$ROOT/.pynchy-complete"
WANT="${PACKAGES[*]}"

mkdir -p "$CACHE"
# One builder at a time (CI and a developer shell may race); the lock lives beside the root.
exec 9>"$CACHE/sid-root.lock"
flock 9

if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$WANT" ]; then
  echo "sid root: reusing $ROOT"
  echo "$ROOT"
  exit 0
fi

need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# A root without usr/bin/apt-get is a half-finished debootstrap: start it again.
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  rm -rf "$ROOT"
  echo "sid root: debootstrap into $ROOT"
  debootstrap --variant=minbase sid "$ROOT" "$MIRROR" >"$CACHE/sid-root.debootstrap.log" 2>&1 || {
    tail -20 "$CACHE/sid-root.debootstrap.log" >&2
    exit 1
  }
fi

cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod +x "$ROOT/usr/sbin/policy-rc.d"

echo "sid root: installing ${PACKAGES[*]}"
bwrap --bind "$ROOT" / --proc /proc --dev /dev --perms 1777 --tmpfs /tmp \
  /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive HOME=/root \
  sh -c "apt-get -qq -o Acquire::Check-Valid-Until=false update &&
         apt-get -qq install -y --no-install-recommends $WANT &&
         apt-get -qq clean"

for bin in /usr/bin/llama-server; do
  [ -x "$ROOT$bin" ] || { echo "sid root: $bin missing after install" >&2; exit 1; }
done
echo "$WANT" >"$MARKER"
echo "sid root: ready at $ROOT"
echo "$ROOT"
