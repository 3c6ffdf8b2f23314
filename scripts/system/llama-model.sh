#!/usr/bin/env bash
# Generates (or reuses) the tiny GGUF that llama-server serves in tests:
# ${PYNCHY_SYSTEM_CACHE:-/var/cache/pynchy}/models/tiny.gguf. Needs the sid root (sid-root.sh).
# Prints the model path on the last line.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${PYNCHY_SYSTEM_CACHE:-/var/cache/pynchy}"
ROOT="$CACHE/sid-root"
OUT_DIR="$CACHE/models"
OUT="$OUT_DIR/tiny.gguf"
# A new generator script means a new model: the cache key is the script's hash.
KEY="$(sha256sum "$HERE/llama-model.py" | cut -c1-16)"

[ -x "$ROOT/usr/bin/llama-server" ] || { echo "llama-model: no sid root at $ROOT (run scripts/system/sid-root.sh)" >&2; exit 1; }
mkdir -p "$OUT_DIR"
if [ -f "$OUT" ] && [ "$(cat "$OUT.key" 2>/dev/null)" = "$KEY" ]; then
  echo "llama-model: reusing $OUT"; echo "$OUT"; exit 0
fi
bwrap --ro-bind "$ROOT" / --proc /proc --dev /dev --tmpfs /tmp \
  --bind "$OUT_DIR" /tmp/out --ro-bind "$HERE/llama-model.py" /tmp/gen.py --unshare-all --die-with-parent \
  /usr/bin/env -i PATH=/usr/bin:/bin python3 /tmp/gen.py /tmp/out/tiny.gguf.tmp >/dev/null
mv "$OUT_DIR/tiny.gguf.tmp" "$OUT"
echo "$KEY" >"$OUT.key"
echo "llama-model: wrote $OUT ($(stat -c %s "$OUT") bytes)"
echo "$OUT"
