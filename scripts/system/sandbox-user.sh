#!/usr/bin/env bash
# The unprivileged host user sandboxes run as when the host runs as root (src/system/sandbox-user.ts).
# Without it they run as nobody (65534), shared with other daemons; a dedicated user is better.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then echo "sandbox user: not root, sandboxes run as the host's own uid"; exit 0; fi
if ! getent passwd pynchy-sandbox >/dev/null; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pynchy-sandbox
fi
echo "sandbox user: $(id pynchy-sandbox)"
