#!/usr/bin/env bash
# Prints the directory of a Pyodide release (CPython 3.13 compiled to WebAssembly, with its
# standard library) from the npm registry, fetching it once: the probe tests compile patched
# files with the newest Python the project supports when no native python3.13 is installed.
# Cached outside the checkout, like scripts/venv.sh's venvs (about 6 MB, no install step:
# `npm pack` only downloads the tarball). Runs under the machine's Node.js (20 or later).
set -euo pipefail
version="0.28.3" # Pyodide 0.28.x bundles CPython 3.13.2
dir="${XDG_CACHE_HOME:-$HOME/.cache}/desync/pyodide-$version"
if [ ! -f "$dir/.complete" ]; then
  echo "desync: fetching pyodide $version from npm into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "pyodide@$version" >/dev/null && tar xzf "pyodide-$version.tgz" && rm "pyodide-$version.tgz")
  touch "$dir/.complete"
fi
echo "$dir/package"
