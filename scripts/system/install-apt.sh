#!/usr/bin/env bash
# The Debian packages the tests use. Issues that need more add them to PACKAGES.
set -euo pipefail
# keyutils: the sandbox walls test plants a key in the host's session keyring (keyctl).
# chromium (+ a font for readable screenshots): the Control UI test drives it with playwright-core.
# postgresql: the Postgres tests start scratch clusters of their own (test/support/postgres.ts; as
# root they run them as the package's postgres user). The package's own cluster is not used.
# espeak-ng, opus-tools, sox: spoken replies (the built-in synthesizer; Opus encoding; the tests
# decode the audio and read its duration).
PACKAGES=(bubblewrap tmux debootstrap git sqlite3 keyutils chromium fonts-dejavu-core postgresql espeak-ng opus-tools sox)
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "apt: ${PACKAGES[*]} present"
bash "$(dirname "$0")/sandbox-user.sh"
