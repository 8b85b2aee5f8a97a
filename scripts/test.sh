#!/usr/bin/env bash
# Runs every test: Rust unit, property and CLI tests (release profile), the torch-desync wheel
# (built, installed into a fresh venv, checked for glibc 2.17), then the Python tests that run
# real PyTorch jobs (Gloo, CPU) and torchfrtrace against the binary the wheel ships.
#
# Two compilations in all (docs/install.md, "CI"): `cargo test --release` builds the workspace
# once for the Rust tests (no separate test-profile build), and the wheel's zig build for
# glibc 2.17 is the binary every Python test runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${CI:-}" = "true" ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
  # CI clones afresh each run; keep cargo's build outputs between runs on the same machine.
  export CARGO_TARGET_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/desync/target"
fi
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
started=$SECONDS
stamp() { echo "test.sh: $1 at $((SECONDS - started)) s" >&2; }

venv="$(scripts/venv.sh)"
# Rust tests that compare with real torch (desync_synth vs torchfrtrace) use this Python.
export DESYNC_PYTHON="$venv/bin/python"
export PATH="$venv/bin:$PATH"

cargo test --release --workspace --locked
stamp "Rust tests done"
wheel="$(scripts/wheel.sh)"
stamp "wheel built: $wheel ($(du -k "$wheel" | cut -f1) KiB)"

export DESYNC_WHEEL="$wheel"
export DESYNC_BIN="$target/x86_64-unknown-linux-gnu/release/desync"
# Built by `cargo test` above (its package has integration tests): large generated dump sets.
export DESYNC_SYNTH="$target/release/desync-synth"
"$venv/bin/python" -m pytest -q python/tests "$@"
stamp "all tests done"
