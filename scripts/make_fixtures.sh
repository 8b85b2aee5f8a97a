#!/usr/bin/env bash
# Regenerate all scenario fixtures (tests/scenarios/) with real PyTorch jobs.
# Usage: scripts/make_fixtures.sh [SCENARIO ...]   (PYTHON overrides the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" scripts/make_fixtures.py "$@"
