#!/usr/bin/env bash
# Prints the path of a Python venv with python/requirements.txt installed, creating it once.
# The venv is cached outside the checkout (keyed by the requirements' hash) so that fresh
# clones and CI runs on the same machine reuse it: torch is a multi-GB install.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$repo/python/requirements.txt"
hash="$(sha256sum "$req" | cut -c1-12)"
venv="${DESYNC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/desync/venv-$hash}"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  echo "desync: creating Python venv with torch at $venv (about a minute)" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
  touch "$venv/.complete"
fi
echo "$venv"
