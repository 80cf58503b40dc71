#!/usr/bin/env bash
# Headless Neovim check of `ttnn-analyzer lsp` with the editor's own LSP client.
# Installs Debian's neovim (0.7.2) if missing, builds the binary, runs check.lua on a copy
# of the sample with one error and an overrides sidecar, and exits non-zero on failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

if ! command -v nvim >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
fi
(cd "$root" && cargo build --quiet -p cli --bin ttnn-analyzer)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# One undefined value, and a sidecar that pins the first matmul (loc "ffn.up").
sed 's/"ttnn.gelu"(%1)/"ttnn.gelu"(%7)/' "$here/../pytest/sample.mlir" > "$work/ffn.mlir"
echo 'override-output-layout=ffn.up=1x1:dram:interleaved:tile:bf16' > "$work/ffn.overrides"

export TTNN_ANALYZER_BIN="$target_dir/debug/ttnn-analyzer"
export TTNN_ANALYZER_LOG="${TTNN_ANALYZER_LOG:-warn}"
export CHECK_DIR="$work"
timeout 120 nvim --headless -u NONE -c "luafile $here/check.lua"
