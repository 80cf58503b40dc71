#!/usr/bin/env bash
# Runs the real-client LSP tests: a pinned pytest-lsp in a venv under target/, against
# the debug build of `ttnn-analyzer lsp`. Exits non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
venv="$target_dir/pytest-venv"

if [ ! -x "$venv/bin/python" ]; then
  # Debian's python3 ships venv separately; install it when the first attempt fails.
  if ! python3 -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"

(cd "$root" && cargo build --quiet -p cli --bin ttnn-analyzer)

export TTNN_ANALYZER_BIN="$target_dir/debug/ttnn-analyzer"
export TTNN_ANALYZER_LOG="${TTNN_ANALYZER_LOG:-warn}"
cd "$here"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" test_lsp.py
