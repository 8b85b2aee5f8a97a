#!/usr/bin/env bash
# Runs every test: Rust unit, property and CLI tests (release profile), the torch-desync wheel
# (built, installed into a fresh venv, checked for glibc 2.17), and the Python tests that run
# real PyTorch jobs (Gloo, CPU) and torchfrtrace against the desync binary.
#
# Two compilations in all (docs/install.md, "CI"): `cargo test --release` builds the workspace
# once for the Rust tests (no separate test-profile build), and the wheel's zig build for
# glibc 2.17. The wheel builds while the first Python tests run (they wait on jobs far more
# than they compute) on the binary `cargo test` built; the tests that time a live job, and the
# wheel's own tests, run afterwards, alone, on the binary the wheel ships.
#
# `scripts/test.sh ARGS...` (a file, -k, -x) runs the Rust tests, builds the wheel, then one
# plain pytest run with ARGS on the wheel's binary.
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
python="$venv/bin/python"
# Rust tests that compare with real torch (desync_synth vs torchfrtrace) use this Python.
export DESYNC_PYTHON="$python"
export PATH="$venv/bin:$PATH"
# Built by `cargo test` (its package has integration tests): large generated dump sets.
export DESYNC_SYNTH="$target/release/desync-synth"
wheel_bin="$target/x86_64-unknown-linux-gnu/release/desync"

cargo test --release --workspace --locked
stamp "Rust tests done"

if [ "$#" -gt 0 ]; then
  wheel="$(scripts/wheel.sh)"
  stamp "wheel built: $wheel"
  DESYNC_WHEEL="$wheel" DESYNC_BIN="$wheel_bin" "$python" -m pytest -q python/tests "$@"
  stamp "all tests done"
  exit 0
fi

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
scripts/wheel.sh > "$logs/wheel.path" 2> "$logs/wheel.log" &
wheel_pid=$!

# Two shards side by side on `cargo test`'s binary (default features, the same source);
# scripts/pytest_shards.py says how the files are split (python/tests/durations.txt).
pids=()
for shard in 0 1; do
  mapfile -t files < <("$python" scripts/pytest_shards.py --shard "$shard/2")
  DESYNC_BIN="$target/release/desync" "$python" -m pytest -q -p no:cacheprovider \
    --basetemp "$logs/tmp$shard" "${files[@]}" > "$logs/shard$shard.log" 2>&1 &
  pids+=("$!")
done
failed=0
for shard in 0 1; do
  wait "${pids[$shard]}" || failed=1
  echo "--- python tests, shard $shard of 2:"
  cat "$logs/shard$shard.log"
done
stamp "python shards done"

if ! wait "$wheel_pid"; then
  cat "$logs/wheel.log" >&2
  echo "test.sh: the wheel did not build" >&2
  exit 1
fi
wheel="$(tail -n 1 "$logs/wheel.path")"
stamp "wheel built: $wheel ($(du -k "$wheel" | cut -f1) KiB)"

# The tests that time a live job, alone, and the wheel's tests: on the binary the wheel ships.
mapfile -t files < <("$python" scripts/pytest_shards.py --serial)
echo "--- python tests that time a live job, and the wheel's, alone:"
DESYNC_WHEEL="$wheel" DESYNC_BIN="$wheel_bin" "$python" -m pytest -q -p no:cacheprovider \
  "${files[@]}" || failed=1
stamp "all tests done"
exit "$failed"
