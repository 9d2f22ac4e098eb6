#!/usr/bin/env bash
# Install gridbench into ./.venv on a fresh machine.
#   scripts/install.sh          the package and everything the main job needs
#   scripts/install.sh --test   plus the test tools (pytest, mypy, hypothesis, a headless browser)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="run"
if [[ "${1:-}" == "--test" ]]; then
  extras="run,test"
  # the browser tests drive Debian's chromium (never Playwright's own download); apt's page of
  # progress goes to a log, shown only when it fails
  if [[ $(id -u) -eq 0 ]] && ! command -v chromium >/dev/null; then
    log=$(mktemp)
    echo "installing chromium (Debian) for the browser tests ..."
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >"$log" 2>&1; then
      tail -n 30 "$log"; echo "install: apt-get install chromium failed"; exit 1
    fi
    rm -f "$log"
  fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# setuptools prints a page about editable installs of several top-level packages (env, agents,
# orchestrator, analysis), which this layout knows and wants: keep the install quiet
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".[${extras}]"
echo "installed gridbench[${extras}] into .venv"
