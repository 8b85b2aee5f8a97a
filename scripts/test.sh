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
if [ "$#" -gt 0 ]; then
  # Arguments (a file, -k, -x): one plain pytest run, as asked.
  "$venv/bin/python" -m pytest -q python/tests "$@"
  stamp "all tests done"
  exit 0
fi
# Two shards side by side, then the tests that time a live job alone: most of the suite's wall
# time is jobs waiting (step sleeps, process-group timeouts), and scripts/pytest_shards.py says
# how the files are split (python/tests/durations.txt: measured seconds, `serial` marks).
logs="$(mktemp -d)"
pids=()
for shard in 0 1; do
  mapfile -t files < <("$venv/bin/python" scripts/pytest_shards.py --shard "$shard/2")
  "$venv/bin/python" -m pytest -q -p no:cacheprovider --basetemp "$logs/tmp$shard" "${files[@]}" \
    > "$logs/shard$shard.log" 2>&1 &
  pids+=("$!")
done
failed=0
for shard in 0 1; do
  wait "${pids[$shard]}" || failed=1
  echo "--- python tests, shard $shard of 2:"
  cat "$logs/shard$shard.log"
done
stamp "python shards done"
mapfile -t files < <("$venv/bin/python" scripts/pytest_shards.py --serial)
echo "--- python tests that time a live job, alone:"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "${files[@]}" || failed=1
stamp "all tests done"
exit "$failed"
