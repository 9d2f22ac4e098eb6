"""What scripts/install.sh does for the bundled model's server: a portable llama.cpp, its compile's
progress read from real pip output, and the self-check that asks the built server for an answer.

``pip_wheel_v_llama_cpp.log`` is the output of the install's real ``pip wheel -v`` build of
llama-cpp-python 0.3.36 on a 2-core x86-64 machine, each line cut at 160 characters (ninja's
lines are whole compiler command lines), and the paths of the machine it ran on (the checkout,
temporary folders, package indexes) replaced.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILTER = ROOT / "scripts" / "build_progress.awk"
CMAKE_ARGS = ROOT / "scripts" / "llama_cmake_args.sh"
REAL_LOG = Path(__file__).with_name("pip_wheel_v_llama_cpp.log")


def progress(text: str) -> list[str]:
    out = subprocess.run(["awk", "-v", "label=llama.cpp", "-f", str(FILTER)], input=text, text=True,
                         capture_output=True, check=True)
    return out.stdout.splitlines()


def test_the_compile_shows_a_line_at_each_twentieth_on_real_pip_output():
    log = REAL_LOG.read_text()
    counted = re.findall(r"^\s*\[(\d+)/(\d+)\]", log, flags=re.M)
    assert len(counted) == 193 and all(line.startswith("  [") for line in log.splitlines() if "/193]" in line[:12])
    lines = progress(log)
    assert len(lines) == 20
    shown = [tuple(map(int, re.fullmatch(r"  llama\.cpp: (\d+) of (\d+) files compiled \((\d+)%\)", s).groups()))
             for s in lines]
    assert [pct for _, _, pct in shown] == list(range(5, 101, 5))
    assert all(total == 193 and 20 * done // total * 5 == pct for done, total, pct in shown)
    assert shown[-1][:2] == (193, 193)
    # pip -v indents the build's lines: a count read only at the start of a line shows nothing
    assert not re.search(r"^\[\d+/\d+\]", log, flags=re.M)


def test_lines_that_are_not_a_count_are_dropped():
    assert progress("  [ 50%] Building C object x.o\n  [0/0] nothing\nBuilding wheel\n") == []


def run_args(tmp_path, flags: str, **env) -> str:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor : 0\nflags : {flags}\n")
    base = {"PATH": "/usr/bin:/bin", "CPUINFO": str(cpuinfo), "ARCH": "x86_64"}
    return subprocess.run(["bash", str(CMAKE_ARGS)], env={**base, **env}, text=True, capture_output=True,
                          check=True).stdout.split()


def test_llama_cpp_is_built_portable_unless_a_native_build_is_asked_for(tmp_path):
    avx512 = "fpu sse4_2 avx f16c fma bmi2 avx2 avx512f avx512bw amx_tile amx_int8"
    assert run_args(tmp_path, avx512) == ["-DGGML_NATIVE=OFF"]
    assert run_args(tmp_path, avx512, GRIDBENCH_LLAMA_NATIVE="1") == ["-DGGML_NATIVE=ON"]
    assert run_args(tmp_path, avx512, CMAKE_ARGS="-DGGML_BLAS=ON") == ["-DGGML_NATIVE=OFF", "-DGGML_BLAS=ON"]
    # a CPU without AVX2 gets none of what the portable set assumes beyond it
    older = run_args(tmp_path, "fpu sse4_2 avx")
    assert older[0] == "-DGGML_NATIVE=OFF" and "-DGGML_AVX2=OFF" in older and "-DGGML_AVX=OFF" not in older
    assert "-DGGML_AVX=OFF" in run_args(tmp_path, "fpu sse4_2")
    assert run_args(tmp_path, "fpu", ARCH="aarch64") == ["-DGGML_NATIVE=OFF"]


@pytest.mark.skipif(os.environ.get("GRIDBENCH_LLAMA_NATIVE") == "1", reason="a native build was asked for")
def test_the_installed_llama_cpp_uses_no_instruction_beyond_the_portable_set():
    """A native build on this machine would enable what its CPU has (AVX-512, AMX, VNNI)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    info = llama_cpp.llama_print_system_info().decode()
    enabled = set(re.findall(r"(\w+) = 1", info))
    portable = {"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2", "LLAMAFILE", "OPENMP", "REPACK",
                "NEON", "ARM_FMA", "FP16_VA", "DOTPROD"}
    assert enabled and enabled <= portable, info


@pytest.mark.slow
def test_the_self_check_gets_an_answer_of_several_tokens_from_the_built_server():
    out = subprocess.run([sys.executable, "-m", "orchestrator.serving.selfcheck"], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    tokens = int(re.search(r"llama\.cpp answers: the bundled model wrote (\d+) tokens", out.stdout).group(1))
    assert tokens >= 2


@pytest.mark.slow
def test_a_server_that_crashes_fails_the_self_check_in_one_line_with_its_cause(monkeypatch):
    from orchestrator.serving import actor, selfcheck

    crash = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
    monkeypatch.setattr(actor, "llama_cpp_command", lambda *a, **k: crash)
    with pytest.raises(selfcheck.SelfCheckError) as err:
        selfcheck.ask_bundled(timeout_s=60)
    message = str(err.value)
    assert "\n" not in message
    assert message == ("the server process was killed by SIGSEGV (a crash: this build of llama.cpp does not "
                       "run on this CPU) while starting")
