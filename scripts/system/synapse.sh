#!/usr/bin/env bash
# Runs a real Matrix homeserver (Synapse from the Debian sid root of sid-root.sh) under bwrap on
# 127.0.0.1, for tests and benchmarks. Its state lives in DATA (sqlite, keys, logs, media).
#
#   scripts/system/synapse.sh start DATA PORT   -> writes DATA/homeserver.yaml on first use,
#                                                  starts Synapse, waits until it answers, prints its pid
#   scripts/system/synapse.sh stop DATA         -> stops it (SIGTERM to its process group, then SIGKILL)
#   scripts/system/synapse.sh ensure            -> builds the sid root if missing (sid-root.sh)
#
# The registration shared secret is in DATA/shared-secret (the admin register API needs it).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${PYNCHY_SYSTEM_CACHE:-/var/cache/pynchy}"
ROOT="$CACHE/sid-root"

need_root() {
  [ -x "$ROOT/usr/bin/synapse_homeserver" ] || { echo "synapse: no sid root with matrix-synapse at $ROOT (run scripts/system/sid-root.sh)" >&2; exit 1; }
  command -v bwrap >/dev/null || { echo "synapse: bwrap is not installed (apt-get install bubblewrap)" >&2; exit 1; }
}

write_config() {
  local data="$1" port="$2"
  local secret
  [ -f "$data/shared-secret" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$data/shared-secret"
  secret="$(cat "$data/shared-secret")"
  cat >"$data/homeserver.yaml" <<EOF
server_name: "localhost"
pid_file: /tmp/data/homeserver.pid
listeners:
  - port: $port
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: /tmp/data/homeserver.db
log_config: /tmp/data/log.config
media_store_path: /tmp/data/media_store
signing_key_path: /tmp/data/signing.key
registration_shared_secret: "$secret"
macaroon_secret_key: "$secret-macaroon"
form_secret: "$secret-form"
report_stats: false
trusted_key_servers: []
suppress_key_server_warning: true
enable_metrics: false
url_preview_enabled: false
presence:
  enabled: false
bcrypt_rounds: 4
rc_message: { per_second: 1000, burst_count: 1000 }
rc_registration: { per_second: 1000, burst_count: 1000 }
rc_login:
  address: { per_second: 1000, burst_count: 1000 }
  account: { per_second: 1000, burst_count: 1000 }
  failed_attempts: { per_second: 1000, burst_count: 1000 }
rc_joins:
  local: { per_second: 1000, burst_count: 1000 }
  remote: { per_second: 1000, burst_count: 1000 }
rc_invites:
  per_room: { per_second: 1000, burst_count: 1000 }
  per_user: { per_second: 1000, burst_count: 1000 }
rc_room_creation: { per_second: 1000, burst_count: 1000 }
rc_media_create: { per_second: 1000, burst_count: 1000 }
EOF
  cat >"$data/log.config" <<'EOF'
version: 1
formatters:
  precise:
    format: '%(asctime)s - %(name)s - %(lineno)d - %(levelname)s - %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: /tmp/data/homeserver.log
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
EOF
}

# True when the client API answers 200 (plain bash: no curl needed).
answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /_matrix/client/versions HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && head -n1 <&3 | grep -q ' 200') 2>/dev/null
}

sandbox() {
  local data="$1"; shift
  bwrap --ro-bind "$ROOT" / --proc /proc --dev /dev --tmpfs /tmp --bind "$data" /tmp/data \
    --unshare-pid --unshare-ipc --unshare-uts \
    /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp/data "$@"
}

cmd="${1:-}"
case "$cmd" in
  ensure)
    [ -x "$ROOT/usr/bin/synapse_homeserver" ] || bash "$HERE/sid-root.sh"
    need_root
    ;;
  start)
    need_root
    data="$(cd "${2:?usage: synapse.sh start DATA PORT}" && pwd)"
    port="${3:?usage: synapse.sh start DATA PORT}"
    # The port may change between runs (a free port per test file): rewrite the config each start.
    write_config "$data" "$port"
    [ -f "$data/signing.key" ] || sandbox "$data" python3 -m synapse.app.homeserver -c /tmp/data/homeserver.yaml --generate-keys >"$data/generate.log" 2>&1
    # setsid: the daemon gets its own process group (stop kills the group) and outlives this shell.
    setsid nohup bwrap --ro-bind "$ROOT" / --proc /proc --dev /dev --tmpfs /tmp --bind "$data" /tmp/data \
      --unshare-pid --unshare-ipc --unshare-uts \
      /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp/data python3 -m synapse.app.homeserver -c /tmp/data/homeserver.yaml \
      >"$data/stdout.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$data/bwrap.pid"
    for _ in $(seq 1 600); do
      if answers "$port"; then echo "$pid"; exit 0; fi
      kill -0 "$pid" 2>/dev/null || { echo "synapse: exited before answering:" >&2; tail -30 "$data/stdout.log" "$data/homeserver.log" >&2 2>/dev/null || true; exit 1; }
      sleep 0.1
    done
    echo "synapse: no answer on port $port within 60 s" >&2
    kill -KILL -- "-$pid" 2>/dev/null || true
    exit 1
    ;;
  stop)
    data="${2:?usage: synapse.sh stop DATA}"
    [ -f "$data/bwrap.pid" ] || exit 0
    pid="$(cat "$data/bwrap.pid")"
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$data/bwrap.pid"
    ;;
  *)
    echo "usage: synapse.sh start DATA PORT | stop DATA | ensure" >&2
    exit 2
    ;;
esac
