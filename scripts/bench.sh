#!/usr/bin/env bash
# Benchmarks desync against torchfrtrace on generated NCCL-format dump sets and writes the
# results into BENCHMARKS.md and bench/results/<date>.json. Arguments go to bench/run.py, e.g.
#   scripts/bench.sh                      # 64, 512, 4096, 16384 ranks (takes hours)
#   scripts/bench.sh --sizes 64,512       # a quick run
#   scripts/bench.sh --sizes 64 --no-write
# Environment: CARGO_TARGET_DIR (build outputs), BENCH_VENV (a venv with torch; default: the
# repo's .venv if it has torchfrtrace, else scripts/venv.sh), BENCH_PYLIB (where `tabulate` is
# installed for torchfrtrace, outside the venv), BENCH_SCRATCH (generated sets, default
# /tmp/desync-bench: needs ~6 GB free at 16,384 ranks), BENCH_REV (build that git revision from a
# `git archive` export instead of the working tree, e.g. BENCH_REV=HEAD while others edit it).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac

scratch="${BENCH_SCRATCH:-/tmp/desync-bench}"
src="$repo"
rev_args=()
if [ -n "${BENCH_REV:-}" ]; then
  sha="$(git rev-parse --verify "$BENCH_REV^{commit}")"
  src="$scratch/src-${sha:0:12}"
  if [ ! -f "$src/Cargo.toml" ]; then
    mkdir -p "$src"
    git archive "$sha" | tar -x -C "$src"
  fi
  rev_args=(--git-rev "${sha:0:12}")
fi
# One target dir for both cases, so the binaries are where they are looked for below (a
# `git archive` export would otherwise build into its own target/).
(cd "$src" && CARGO_TARGET_DIR="$target" cargo build --release --locked -p desync -p desync_synth >&2)

venv="${BENCH_VENV:-}"
if [ -z "$venv" ]; then
  if [ -x "$repo/.venv/bin/torchfrtrace" ]; then venv="$repo/.venv"; else venv="$(scripts/venv.sh)"; fi
fi
# torchfrtrace imports tabulate for its p2p tables; the torch venv does not ship it. Install it
# into a directory of the benchmark's own, put on torchfrtrace's PYTHONPATH only.
pylib="${BENCH_PYLIB:-${XDG_CACHE_HOME:-$HOME/.cache}/desync/bench-pylib}"
if ! PYTHONPATH="$pylib" "$venv/bin/python" -c "import tabulate" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --target "$pylib" tabulate >&2
fi

exec "$venv/bin/python" bench/run.py \
  --desync "$target/release/desync" \
  --synth "$target/release/desync-synth" \
  --torchfrtrace "$venv/bin/torchfrtrace" \
  --frt-python "$venv/bin/python" \
  --pylib "$pylib" \
  --scratch "$scratch" \
  --reproduce "$(echo "${BENCH_REV:+BENCH_REV=$BENCH_REV }scripts/bench.sh $*" | sed "s/ *$//")" \
  "${rev_args[@]}" "$@"
