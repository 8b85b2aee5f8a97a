#!/usr/bin/env bash
# Builds desync and runs it on a real example shipped with the repo: a 4-rank Gloo job in
# which one rank stopped early on its own validation loss.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Without the S3/GCS reader (the `remote` feature, 31% of the compile work: docs/install.md,
# "Build time"): the example reads local dumps. `cargo build --release -p desync`, the wheel and
# `cargo install` keep it.
cargo build --release --locked -p desync --no-default-features
example=tests/scenarios/early_stop
set +e
./target/release/desync analyze "$example/dumps" --source-root "$example/src"
status=$?
set -e
# Exit 1 means "a problem was found", which is what this example holds.
[ "$status" -le 1 ] || exit "$status"
echo
echo "desync built at target/release/desync; the run above is the example in $example."
