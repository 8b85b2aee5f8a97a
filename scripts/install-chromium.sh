#!/usr/bin/env bash
# Installs Debian's headless-capable chromium and its chromedriver (for the HTML report's
# browser test) when they are missing. Idempotent and quiet: a second run does nothing.
# Exits non-zero when they cannot be installed, so the test fails instead of skipping.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }
if have chromium && have chromedriver; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  have sudo || { echo "install-chromium: not root and no sudo; install chromium chromium-driver" >&2; exit 1; }
  sudo="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# The package lists may be stale or absent in a fresh container: update first. Output is
# kept for a failure and dropped otherwise.
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-chromium: apt-get failed" >&2
  exit 1
fi
have chromium && have chromedriver || { echo "install-chromium: chromium or chromedriver still missing" >&2; exit 1; }
