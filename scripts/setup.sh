#!/usr/bin/env bash
# Builds desync and runs it on a real example shipped with the repo: a 4-rank Gloo job in
# which one rank stopped early on its own validation loss.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --locked -p desync
example=tests/scenarios/early_stop
set +e
./target/release/desync analyze "$example/dumps" --source-root "$example/src"
status=$?
set -e
# Exit 1 means "a problem was found", which is what this example holds.
[ "$status" -le 1 ] || exit "$status"
echo
echo "desync built at target/release/desync; the run above is the example in $example."
