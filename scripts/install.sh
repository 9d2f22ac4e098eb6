#!/usr/bin/env bash
# Install gridbench into ./.venv on a fresh machine.
#   scripts/install.sh          the package and everything the main job needs
#   scripts/install.sh --3d     plus the 3D frames (MuJoCo, and Mesa's software GL from Debian)
#   scripts/install.sh --test   plus the test tools (pytest, mypy, hypothesis, a headless browser)
#                               and the 3D frames, which the tests draw
set -euo pipefail
cd "$(dirname "$0")/.."
extras="run"
debian=()
case "${1:-}" in
  --test)
    extras="run,test,3d"
    # the browser tests drive Debian's chromium (never Playwright's own download)
    debian=(chromium) ;;
  --3d) extras="run,3d" ;;
esac
if [[ "$extras" == *3d* ]]; then
  # MuJoCo draws headless with Mesa: OSMesa (the default, MUJOCO_GL=osmesa) or EGL (MUJOCO_GL=egl)
  debian+=(libosmesa6 libegl1 libegl-mesa0 libgl1-mesa-dri)
fi
missing=()
for pkg in "${debian[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if (( ${#missing[@]} )); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    # apt's page of progress goes to a log, shown only when it fails
    log=$(mktemp)
    echo "installing ${missing[*]} (Debian) ..."
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } >"$log" 2>&1; then
      tail -n 30 "$log"; echo "install: apt-get install ${missing[*]} failed"; exit 1
    fi
    rm -f "$log"
  else
    echo "install: needs the Debian packages ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
  fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# llama-cpp-python (the server of the bundled CPU model) ships as source only: pip compiles
# llama.cpp, a C++ library of a few hundred files, which takes many minutes on a small machine.
# It goes first, on its own, with its compiler's progress shown every twentieth of the way; the log
# of the build is kept and shown only when it fails. pip's wheel cache makes a reinstall quick.
llama=$(.venv/bin/python - <<'PY'
import tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["run"]
print(next(r for r in extra if r.startswith("llama-cpp-python")))
PY
)
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  echo "building ${llama} from source: it compiles llama.cpp (C++) for the bundled model's server;" \
       "about 5 minutes on 2 cores (more when they are busy), with progress below ..."
  log=$(mktemp)
  started=$SECONDS
  # ninja prints "[done/total] Building ..." per file: one line at each further twentieth
  if ! .venv/bin/python -m pip install -v "${llama}" 2>&1 | tee "$log" | awk '
      match($0, /^\[[0-9]+\/[0-9]+\]/) {
        split(substr($0, 2, RLENGTH - 2), n, "/")
        step = int(20 * n[1] / n[2])
        if (step > shown) { shown = step; printf "  llama.cpp: %d of %d files compiled (%d%%)\n", n[1], n[2], 5 * step; fflush() }
      }'; then
    tail -n 40 "$log"; echo "install: building ${llama} failed (needs a C/C++ compiler: build-essential)"; exit 1
  fi
  rm -f "$log"
  echo "  built ${llama} in $(( (SECONDS - started) / 60 )) min"
fi
echo "installing gridbench[${extras}] and its dependencies (Ray, litellm, pyarrow, ...): a few minutes ..."
# setuptools prints a page about editable installs of several top-level packages (env, agents,
# orchestrator, analysis), which this layout knows and wants: keep the install quiet
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".[${extras}]"
echo "installed gridbench[${extras}] into .venv"
