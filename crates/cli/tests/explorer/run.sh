#!/usr/bin/env bash
# Opens the plan explorer (`report --html`) of every corpus model in headless Chromium and
# fails on any console error, missing element or a page interactive after more than 2 s
# (check.py). Keeps a screenshot of resnet_hf, the largest model, in target/explorer/.
# Installs Debian's chromium when it is missing (as root, on a clean machine too).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
corpus="${CORPUS:-$root/../shared/corpus}/ttir-models"
out="$target_dir/explorer"
screenshot="${EXPLORER_SCREENSHOT:-$out/resnet_hf.png}"

if ! command -v chromium >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi

(cd "$root" && cargo build -q --release -p cli --bin ttnn-analyzer)
bin="$target_dir/release/ttnn-analyzer"

rm -rf "$out" && mkdir -p "$out"
pages=()
while IFS= read -r model; do
  name="$(basename "$model" .mlir)"
  page="$out/$name.html"
  # Exit 1 only says a policy introduced a verifier violation (`xtask models --strict`
  # judges those); the page must be written all the same.
  status=0
  "$bin" report --html "$page" "$model" >/dev/null 2>"$out/$name.stderr" || status=$?
  if [ "$status" -gt 1 ] || [ ! -s "$page" ]; then
    echo "report --html failed on $model (exit $status):" >&2
    cat "$out/$name.stderr" >&2
    exit 1
  fi
  pages+=("$page")
done < <(find "$corpus" -name '*.mlir' 2>/dev/null | sort)

if [ "${#pages[@]}" -eq 0 ]; then
  echo "no corpus models under $corpus (set CORPUS to the corpus directory)" >&2
  exit 1
fi
python3 "$here/check.py" --max-ready-ms 2000 --screenshot "$out/resnet_hf.html=$screenshot" "${pages[@]}"
