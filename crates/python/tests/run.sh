#!/usr/bin/env bash
# Builds the ttnn-analyzer wheel in a fresh virtual environment, installs it with pip, runs
# the Python tests and checks the type stubs against the module (mypy's stubtest), then the
# worked Optuna example of docs/tuning.md on a corpus model.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
venv="$target_dir/python-venv"
wheels="$target_dir/wheels"
corpus="${CORPUS:-$root/../shared/corpus}/ttir-models"

rm -rf "$venv" "$wheels"
# Debian's python3 ships venv separately; install it when the first attempt fails.
if ! python3 -m venv "$venv" 2>/dev/null; then
  rm -rf "$venv"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.9,<2" pytest optuna mypy
(cd "$root/crates/python" && "$venv/bin/maturin" build --release --quiet --out "$wheels")
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheels"/ttnn_analyzer-*.whl

# From outside the source tree, so the installed package is what is imported.
(cd "$target_dir" && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here")
# The type stubs must match the native module: every name, signature and class there.
(cd "$target_dir" && "$venv/bin/python" -m mypy.stubtest ttnn_analyzer._native)
# The tuned overrides must be accepted by `optimize` as tt-mlir option syntax.
(cd "$root" && cargo build -q --release -p cli --bin ttnn-analyzer)
"$venv/bin/python" "$root/docs/tuning_optuna.py" "$corpus/llama_attention.mlir" \
  --trials 30 --ops 8 -o "$target_dir/llama_attention.tuned.overrides"
"$target_dir/release/ttnn-analyzer" optimize "$corpus/llama_attention.mlir" \
  --overrides "$target_dir/llama_attention.tuned.overrides" >/dev/null
