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
# of the build is kept and shown only when it fails.
llama=$(.venv/bin/python - <<'PY'
import tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["run"]
print(next(r for r in extra if r.startswith("llama-cpp-python")).replace("[server]", ""))
PY
)
# portable, not llama.cpp's default -march=native: what it runs on, and why (docs/cluster.md)
llama_cmake=$(bash scripts/llama_cmake_args.sh)
# pip's wheel cache knows a wheel by its source, not by the flags it was built with (a native wheel
# built before would come back): the wheel is built without it and kept under its flags instead,
# which makes a reinstall quick
key=$(printf '%s\n%s\n%s\n' "$llama" "$llama_cmake" "$(uname -m)" | sha256sum | cut -c1-16)
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/gridbench/llama-wheels/${key}"
if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "building ${llama} from source (${llama_cmake}): it compiles llama.cpp (C++) for the" \
       "bundled model's server; about 5 minutes on 2 cores (more when they are busy), with progress below ..."
  log=$(mktemp)
  started=$SECONDS
  rm -rf "$wheels.partial"; mkdir -p "$wheels.partial"
  if ! CMAKE_ARGS="$llama_cmake" .venv/bin/python -m pip wheel -v --no-deps --no-cache-dir \
        -w "$wheels.partial" "${llama}" 2>&1 | tee "$log" | awk -v label=llama.cpp -f scripts/build_progress.awk \
     || ! ls "$wheels.partial"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    tail -n 40 "$log"; rm -rf "$wheels.partial"
    echo "install: building ${llama} failed (it needs a C/C++ compiler and CMake: build-essential cmake); log above"
    exit 1
  fi
  mv "$log" "$wheels.partial/build.log"  # kept beside the wheel: the flags and compiler it was built with
  rm -rf "$wheels"; mv "$wheels.partial" "$wheels"
  echo "  built ${llama} in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
fi
.venv/bin/python -m pip install -q "$wheels"/llama_cpp_python-*.whl
echo "installing gridbench[${extras}] and its dependencies (Ray, litellm, pyarrow, ...): a few minutes ..."
# setuptools prints a page about editable installs of several top-level packages (env, agents,
# orchestrator, analysis), which this layout knows and wants: keep the install quiet
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".[${extras}]"
# the oracle's and the generator's kernels compile once, here, rather than in the first run (docs/oracle.md)
echo "compiling the oracle's and the generator's kernels (numba, once): about 25 s ..."
.venv/bin/python -m env.jit
# a build is worth nothing until it answers: the bundled model's server is asked for an answer of
# several tokens, so a llama.cpp that cannot run here fails the install, not the first run
if ! .venv/bin/python -m orchestrator.serving.selfcheck; then
  echo "install: the llama.cpp server does not answer (the line above says why); to build it again:" \
       "rm -rf '${wheels}' && scripts/install.sh ${1:-}"
  exit 1
fi
echo "installed gridbench[${extras}] into .venv"
