#!/usr/bin/env bash
# Runs every test: Rust unit, property and CLI tests, then the Python tests that run real
# PyTorch jobs (Gloo, CPU) and torchfrtrace against the release binary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${CI:-}" = "true" ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
  # CI clones afresh each run; keep cargo's build outputs between runs on the same machine.
  export CARGO_TARGET_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/desync/target"
fi
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac

venv="$(scripts/venv.sh)"
# Rust tests that compare with real torch (desync_synth vs torchfrtrace) use this Python.
export DESYNC_PYTHON="$venv/bin/python"
export PATH="$venv/bin:$PATH"

cargo build --release --locked -p desync
cargo test --workspace --locked

export DESYNC_BIN="$target/release/desync"
"$venv/bin/python" -m pytest -q python/tests "$@"
