#!/usr/bin/env bash
# Builds the torch-desync wheel: the `desync` binary for manylinux2014 (glibc 2.17, x86_64),
# linked through zig and stripped, plus the `desync` Python package (python/desync).
#   scripts/wheel.sh [OUT_DIR]                 # default: <target>/wheels; prints the wheel's path
#   DESYNC_WHEEL_PROFILE=dist scripts/wheel.sh # the smaller, slower build for publishing
# maturin, ziglang and cargo-zigbuild come from PyPI into a cached venv (scripts/venv.sh).
# The binary lands in <target>/x86_64-unknown-linux-gnu/<profile>/desync, which the Python
# tests of scripts/test.sh run. The build is cargo's own incremental one in <target> (CI keeps
# it under ~/.cache/desync/target), so a second run rebuilds only what changed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
out="${1:-$target/wheels}"
profile="${DESYNC_WHEEL_PROFILE:-release}"

tools="$(scripts/venv.sh python/build-requirements.txt)"
export PATH="$tools/bin:$PATH"
mkdir -p "$out"
rm -f "$out"/torch_desync-*.whl
profile_args=(--release)
[ "$profile" = "release" ] || profile_args=(--profile "$profile")
# maturin finds zig through the venv's `python -m ziglang`; --compatibility manylinux2014 makes
# cargo-zigbuild link against glibc 2.17's symbol versions.
maturin build "${profile_args[@]}" --locked --zig --target x86_64-unknown-linux-gnu \
  --compatibility manylinux2014 --strip --out "$out" --target-dir "$target" >&2
ls "$out"/torch_desync-*.whl
