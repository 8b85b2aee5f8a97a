#!/bin/bash
# Byte-compares every output of two desync binaries on the repository's corpora
# (see scripts/snapshot_outputs.py): exit 0 and "identical" when nothing differs.
#   scripts/snapshot_diff.sh OLD_BIN NEW_BIN [--old-snapshot DIR] [--lint-extra DIR]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/snapshot_outputs.py" --compare "$@"
