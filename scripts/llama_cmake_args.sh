#!/usr/bin/env bash
# Prints the CMAKE_ARGS scripts/install.sh builds llama.cpp with (docs/cluster.md, "A portable llama.cpp").
#
# llama.cpp builds for the build machine's own CPU by default (-march=native): such a build can
# crash on another CPU, or even on this one (a native build segfaults on AVX-512 + AMX cloud CPUs),
# and a Ray cluster's nodes need not share the head's CPU. gridbench builds it portable:
# llama.cpp's GGML_NATIVE=OFF instruction set (x86-64: SSE4.2, AVX, AVX2, FMA, F16C, BMI2; arm64:
# the compiler's generic target), less what the build machine itself lacks (an x86-64 CPU without
# AVX2). GRIDBENCH_LLAMA_NATIVE=1 asks for a native build on purpose; CMAKE_ARGS adds flags of
# your own after gridbench's. CPUINFO names the file read for the CPU's flags (tests).
set -euo pipefail
cpuinfo="${CPUINFO:-/proc/cpuinfo}"
args="-DGGML_NATIVE=OFF"
if [[ "${GRIDBENCH_LLAMA_NATIVE:-0}" == 1 ]]; then
  args="-DGGML_NATIVE=ON"
elif [[ "${ARCH:-$(uname -m)}" == x86_64 ]] && ! grep -qw avx2 "$cpuinfo" 2>/dev/null; then
  args+=" -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF"
  grep -qw avx "$cpuinfo" 2>/dev/null || args+=" -DGGML_AVX=OFF"
fi
echo "${args}${CMAKE_ARGS:+ ${CMAKE_ARGS}}"
