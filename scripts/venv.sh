#!/usr/bin/env bash
# Prints the path of a Python venv with python/requirements.txt installed, creating it once.
# The venv is cached outside the checkout (keyed by the requirements' hash) so that fresh
# clones and CI runs on the same machine reuse it: torch is a multi-GB install.
# `scripts/venv.sh python/build-requirements.txt` does the same for the wheel tools.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$(cd "$repo" && realpath "${1:-python/requirements.txt}")"
hash="$(sha256sum "$req" | cut -c1-12)"
if [ -z "${1:-}" ] && [ -n "${DESYNC_VENV:-}" ]; then
  venv="$DESYNC_VENV"
else
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/desync/venv-$hash"
fi
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  echo "desync: creating Python venv for $(basename "$req") at $venv (about a minute)" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
  touch "$venv/.complete"
fi
echo "$venv"
