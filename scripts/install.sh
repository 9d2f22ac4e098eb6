#!/usr/bin/env bash
# Install gridbench into ./.venv on a fresh machine.
#   scripts/install.sh          the package and everything the main job needs
#   scripts/install.sh --test   plus the test tools (pytest, hypothesis, a headless browser)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="run"
if [[ "${1:-}" == "--test" ]]; then
  extras="run,test"
  # the browser tests drive Debian's chromium (never Playwright's own download)
  if [[ $(id -u) -eq 0 ]] && ! command -v chromium >/dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
  fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[${extras}]"
echo "installed gridbench[${extras}] into .venv"
